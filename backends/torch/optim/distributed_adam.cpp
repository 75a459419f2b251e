#include "optim/distributed_adam.h"

#include "dist/comm_clock.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/types.h>
#include <torch/utils.h>
#include <torch/autograd.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "model/compat.h"
#include "optim/adam.h"
#include "optim/master_weights.h"

namespace recipebench::train {

/// A post hook of a parameter's gradient accumulator (the AccumulateGrad node of the autograd graph, which adds each
/// backward pass's gradient into .grad()): runs right after the accumulation, on the autograd engine's thread.
/// Megatron-LM's distributed data parallel hooks the same node.
struct DistributedAdam::GradHook : torch::autograd::FunctionPostHook {
  GradHook(std::shared_ptr<DistributedAdam*> owner, size_t i) : owner_(std::move(owner)), i_(i) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list& /*inputs*/) override {
    if (DistributedAdam* o = *owner_) o->on_grad_accumulated(i_);
    return outputs;
  }
  std::shared_ptr<DistributedAdam*> owner_;
  size_t i_;
};

DistributedAdam::DistributedAdam(std::vector<torch::Tensor> params, const RecipeOptimizer& options,
                                 dist::ProcessGroup& group, GradientGroups groups, GradReduceOverlap overlap,
                                 ParamGatherOverlap gather)
    : params_(std::move(params)),
      group_(group),
      groups_(groups),
      o_(options),
      overlap_(std::move(overlap)),
      gather_(std::move(gather)) {
  if (overlap_.group) {
    if (overlap_.group->size() != group_.size() || overlap_.group->rank() != group_.rank())
      throw std::invalid_argument("distributed optimizer: the overlap group is rank " +
                                  std::to_string(overlap_.group->rank()) + " of " +
                                  std::to_string(overlap_.group->size()) + ", the DP group rank " +
                                  std::to_string(group_.rank()) + " of " + std::to_string(group_.size()));
    if (overlap_.bucket_elements <= 0 || !overlap_.order)
      throw std::invalid_argument("distributed optimizer: overlap needs a bucket size > 0 and a launch order");
  }
  std::vector<int64_t> numels;
  for (const auto& p : params_) numels.push_back(p.numel());
  layout_ = make_grad_bucket_layout(numels, group_.size(), overlap_.group ? overlap_.bucket_elements : 0);
  if (gather_.order && !gather_.position.empty() && gather_.position.size() != params_.size())
    throw std::invalid_argument("distributed optimizer: " + std::to_string(gather_.position.size()) +
                                " gather positions for " + std::to_string(params_.size()) + " parameters");
  init_shard();
  if (overlap_.group) install_hooks();
  if (gather_.order) register_gathers();
}

DistributedAdam::~DistributedAdam() {
  if (self_) *self_ = nullptr;  // a graph still holding an accumulator must not call back into a dead optimizer
}

void DistributedAdam::init_shard() {
  torch::NoGradGuard no_grad;
  const int world = group_.size();
  const auto device = params_.empty() ? torch::Device(torch::kCPU) : params_[0].device();
  // The all-gather moves the updated weights in the parameters' dtype (BF16 on GPU: half the bytes of FP32);
  // FP32 when the parameters' dtypes differ.
  auto gather_dtype = params_.empty() ? torch::kFloat32 : params_[0].scalar_type();
  for (const auto& p : params_)
    if (p.scalar_type() != gather_dtype) gather_dtype = torch::kFloat32;
  // The gradient buffers, their reductions, the masters and the update: FP32, FP64 when the parameters are FP64.
  const auto work = torch::TensorOptions().dtype(optimizer_float_type(gather_dtype)).device(device);
  grad_flat_ = torch::zeros({layout_.flat_numel}, work);
  param_flat_ = torch::zeros({layout_.flat_numel}, work.dtype(gather_dtype));
  // The master weights of the shard: FP32 (FP64), or with optimizer.master_weights bf16_remainder and BF16 parameters
  // the shard's BF16 half is its part of param_flat_ (what it sent in the last all-gather) + an int16 remainder.
  const bool remainder = gather_dtype == torch::kBFloat16 && o_.master_weights == MasterWeights::kBf16Remainder;
  if (remainder) remainder_ = torch::zeros({layout_.shard_numel}, work.dtype(torch::kInt16));
  else master_ = torch::zeros({layout_.shard_numel}, work);
  std::vector<int64_t> numels;
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto& p = params_[i];
    numels.push_back(p.numel());
    grad_views_.push_back(grad_flat_.narrow(0, layout_.param_offset[i], p.numel()).view(p.sizes()));
    if (remainder) param_flat_.narrow(0, layout_.param_offset[i], p.numel()).copy_(p.detach().reshape({-1}));
  }
  for (const ShardSegment& s : shard_segments(layout_, numels, group_.rank(), world)) {
    const auto& p = params_[s.param];
    segments_.push_back(Segment{s.shard_offset, s.n, p.dim() >= 2});
    if (!remainder) master_.narrow(0, s.shard_offset, s.n).copy_(p.detach().reshape({-1}).narrow(0, s.param_offset, s.n));
  }
  grad_shard_ = torch::zeros({layout_.shard_numel}, work);
  exp_avg_ = torch::zeros({layout_.shard_numel}, work.dtype(state_scalar_type(o_.exp_avg_dtype, gather_dtype)));
  exp_avg_sq_ = torch::zeros({layout_.shard_numel}, work.dtype(state_scalar_type(o_.exp_avg_sq_dtype, gather_dtype)));
}

void DistributedAdam::install_hooks() {
  self_ = std::make_shared<DistributedAdam*>(this);
  armed_.assign(params_.size(), 0);
  ready_.assign(params_.size(), 0);
  pending_.assign(layout_.buckets.size(), 0);
  works_.resize(layout_.buckets.size());
  for (size_t b = 0; b < layout_.buckets.size(); ++b) {
    // The bucket is complete when the backward pass reaches its earliest parameter (in the stage's order).
    int64_t key = std::numeric_limits<int64_t>::max();
    for (size_t i : layout_.buckets[b].params)
      key = std::min(key, overlap_.position.empty() ? static_cast<int64_t>(i) : overlap_.position[i]);
    pending_[b] = static_cast<int64_t>(layout_.buckets[b].params.size());
    overlap_.order->add(this, b, key);
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].requires_grad()) continue;  // never gets a gradient: made final by accumulate_grads()
    auto acc = torch::autograd::impl::grad_accumulator(params_[i]);
    if (!acc) continue;
    acc->add_post_hook(std::make_unique<GradHook>(self_, i));
    accumulators_.push_back(std::move(acc));
  }
}

void DistributedAdam::register_gathers() {
  gathers_.resize(layout_.buckets.size());
  for (size_t b = 0; b < layout_.buckets.size(); ++b) {
    // The forward passes first need the bucket at its earliest parameter (in the stage's order).
    int64_t key = std::numeric_limits<int64_t>::max();
    for (size_t i : layout_.buckets[b].params)
      key = std::min(key, gather_.position.empty() ? static_cast<int64_t>(i) : gather_.position[i]);
    gather_.order->add(this, b, key);
  }
}

void DistributedAdam::fold(size_t i) {
  auto& g = params_[i].mutable_grad();
  if (!g.defined()) return;
  if (!ready_.empty() && ready_[i])
    throw std::logic_error("distributed optimizer: parameter " + std::to_string(i) +
                           " got a gradient after its bucket's reduce-scatter was launched");
  grad_views_[i].add_(g);  // FP32 (FP64) += any float dtype, converted on the fly (no FP32 copy of g)
  g = torch::Tensor();
}

void DistributedAdam::mark_ready(size_t i) {
  ready_[i] = 1;
  const size_t b = layout_.param_bucket[i];
  if (--pending_[b] == 0) overlap_.order->ready(this, b);
}

void DistributedAdam::on_grad_accumulated(size_t i) {
  if (!armed_[i]) return;  // not the parameter's last backward pass: accumulate_grads() adds it
  torch::NoGradGuard no_grad;
  fold(i);
  mark_ready(i);
}

void DistributedAdam::accumulate_grads() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    fold(i);
    if (overlapped() && armed_[i] && !ready_[i]) mark_ready(i);  // no gradient in its last backward pass
  }
}

void DistributedAdam::begin_last_backward(int chunk) {
  if (!overlapped()) return;
  for (size_t i = 0; i < params_.size(); ++i)
    if ((overlap_.chunk.empty() ? 0 : overlap_.chunk[i]) == chunk) armed_[i] = 1;
}

void DistributedAdam::launch_bucket(size_t bucket) {
  const GradBucket& b = layout_.buckets[bucket];
  works_[bucket] = overlap_.group->ireduce_scatter_sum(grad_flat_.narrow(0, b.offset, b.numel),
                                                       grad_shard_.narrow(0, b.shard_offset, b.numel / group_.size()));
}

void DistributedAdam::zero_grad() {
  grad_flat_.zero_();
  for (auto& p : params_) p.mutable_grad() = torch::Tensor();
  if (!overlapped()) return;
  std::fill(armed_.begin(), armed_.end(), 0);
  std::fill(ready_.begin(), ready_.end(), 0);
  for (size_t b = 0; b < layout_.buckets.size(); ++b)
    pending_[b] = static_cast<int64_t>(layout_.buckets[b].params.size());
  overlap_.order->reset();
}

void DistributedAdam::reduce_grads() {
  const dist::CommWait wait(dist::CommKind::kDataParallel);
  if (overlapped()) {
    overlap_.order->flush();  // the buckets not launched during the backward pass, in the order's turn
    for (auto& w : works_)
      if (w) {
        w->wait();
        w.reset();
      }
    if (groups_.partial_sums) groups_.partial_sums->all_reduce_sum(grad_shard_);
  } else {
    if (groups_.partial_sums) groups_.partial_sums->all_reduce_sum(grad_flat_);
    group_.reduce_scatter_sum(grad_flat_, grad_shard_);
  }
}

double DistributedAdam::squared_grad_norm() {
  torch::NoGradGuard no_grad;
  reduce_grads();
  auto sq = grad_shard_.pow(2).sum().to(torch::kFloat64).cpu();
  {
    const dist::CommWait wait(dist::CommKind::kDataParallel);
    group_.all_reduce_sum(sq);
  }
  return sum_of_squares(groups_.shards, std::sqrt(sq.item<double>()));
}

double DistributedAdam::clip(double norm) {
  const double scale = clip_scale(norm, o_);
  if (scale == 1.0) return 1.0;
  torch::NoGradGuard no_grad;
  grad_shard_.mul_(scale);
  return scale;
}

void DistributedAdam::step(double lr) {
  torch::NoGradGuard no_grad;
  // The gathers of the last update read gather_shard_ and write param_flat_: done before the update (a no-op when
  // the forward passes waited for every bucket, as they do).
  if (gather_deferred()) gather_.order->finish(this);
  ++t_;
  const auto shard = plain_state() ? plain_update(lr) : precision_aware_update(lr);
  if (gather_deferred()) {  // the next step's forward passes gather (docs/distributed.md, "Overlap")
    gather_shard_ = shard;
    gather_.order->defer(this);
    return;
  }
  const dist::CommWait wait(dist::CommKind::kDataParallel);
  for (const GradBucket& b : layout_.buckets) {  // one bucket without overlap: the whole buffer at once
    auto full = param_flat_.narrow(0, b.offset, b.numel);
    group_.all_gather(shard.narrow(0, b.shard_offset, b.numel / group_.size()), full);
  }
  for (size_t i = 0; i < params_.size(); ++i)
    params_[i].copy_(param_flat_.narrow(0, layout_.param_offset[i], params_[i].numel()).view(params_[i].sizes()));
}

bool DistributedAdam::plain_state() const {
  return !remainder_.defined() && exp_avg_.scalar_type() == grad_shard_.scalar_type() &&
         exp_avg_sq_.scalar_type() == grad_shard_.scalar_type();
}

torch::Tensor DistributedAdam::plain_update(double lr) {
  // The update is element-wise, so one pass over the shard computes what MixedPrecisionAdam computes per tensor;
  // weight decay (only on the segments of matrices) goes first, as in adamw_update_.
  if (torch_model::compat::fused_adamw_usable(master_)) {
    // CUDA, libtorch 2.x: PyTorch's fused multi-tensor AdamW over the shard's segments (views), decayed and not
    // decayed in two calls: one read and one write of each array, the formula of MixedPrecisionAdam's fused path.
    std::vector<torch::Tensor> w[2], g[2], m[2], v[2], steps[2];  // [0]: no weight decay, [1]: weight decay
    const auto t = torch::full({}, static_cast<double>(t_), master_.options());
    for (const auto& s : segments_) {
      const int d = s.decay ? 1 : 0;
      w[d].push_back(master_.narrow(0, s.shard_offset, s.n));
      g[d].push_back(grad_shard_.narrow(0, s.shard_offset, s.n));
      m[d].push_back(exp_avg_.narrow(0, s.shard_offset, s.n));
      v[d].push_back(exp_avg_sq_.narrow(0, s.shard_offset, s.n));
      steps[d].push_back(t.clone());
    }
    for (int d = 0; d < 2; ++d)
      if (!w[d].empty())
        torch_model::compat::fused_adamw(w[d], g[d], m[d], v[d], steps[d], lr, o_.adam_beta1, o_.adam_beta2,
                                         d ? o_.weight_decay : 0.0, o_.adam_eps);
  } else {
    decay_and_update(master_, exp_avg_, exp_avg_sq_, lr);
  }
  return master_.to(param_flat_.scalar_type());
}

torch::Tensor DistributedAdam::precision_aware_update(double lr) {
  // FP32 (FP64) working copies of what is stored otherwise (the memory plan's "optimizer step" transient).
  auto w = remainder_.defined() ? reconstruct_master(own_param_shard(), remainder_) : master_;
  const auto work = grad_shard_.scalar_type();
  const bool m_own = exp_avg_.scalar_type() == work, v_own = exp_avg_sq_.scalar_type() == work;
  auto m = m_own ? exp_avg_ : exp_avg_.to(work);
  auto v = v_own ? exp_avg_sq_ : exp_avg_sq_.to(work);
  decay_and_update(w, m, v, lr);
  if (!m_own) exp_avg_.copy_(m);  // rounded to nearest even
  if (!v_own) exp_avg_sq_.copy_(v);
  if (!remainder_.defined()) return master_.to(param_flat_.scalar_type());
  auto shard = torch::empty_like(w, w.options().dtype(torch::kBFloat16));
  split_master(w, shard, remainder_);
  return shard;
}

void DistributedAdam::decay_and_update(torch::Tensor& w, torch::Tensor& m, torch::Tensor& v, double lr) {
  if (o_.weight_decay > 0)
    for (const auto& s : segments_)
      if (s.decay) w.narrow(0, s.shard_offset, s.n).mul_(1.0 - lr * o_.weight_decay);
  adamw_update_(w, grad_shard_, m, v, lr, t_, o_, /*decay=*/false);
}

torch::Tensor DistributedAdam::own_param_shard() const {
  auto shard = torch::empty({layout_.shard_numel}, param_flat_.options());
  const int64_t rank = group_.rank(), world = group_.size();
  for (const GradBucket& b : layout_.buckets) {
    const int64_t per_rank = b.numel / world;
    shard.narrow(0, b.shard_offset, per_rank).copy_(param_flat_.narrow(0, b.offset + rank * per_rank, per_rank));
  }
  return shard;
}

void DistributedAdam::start_param_gather() {
  if (gather_deferred()) gather_.order->launch();
}

void DistributedAdam::finish_param_gather() {
  if (gather_deferred()) gather_.order->finish();
}

void DistributedAdam::launch_gather(size_t bucket) {
  const GradBucket& b = layout_.buckets[bucket];
  gathers_[bucket] = group_.iall_gather(gather_shard_.narrow(0, b.shard_offset, b.numel / group_.size()),
                                        param_flat_.narrow(0, b.offset, b.numel));
}

void DistributedAdam::finish_gather(size_t bucket) {
  if (!gathers_[bucket])
    throw std::logic_error("distributed optimizer: bucket " + std::to_string(bucket) +
                           " finished without an all-gather in flight");
  {
    const dist::CommWait wait(dist::CommKind::kDataParallel);
    gathers_[bucket]->wait();
  }
  gathers_[bucket].reset();
  copy_gathered(layout_.buckets[bucket]);
}

void DistributedAdam::copy_gathered(const GradBucket& bucket) {
  torch::NoGradGuard no_grad;
  for (size_t i : bucket.params)
    params_[i].copy_(param_flat_.narrow(0, layout_.param_offset[i], params_[i].numel()).view(params_[i].sizes()));
}

}  // namespace recipebench::train
