#include "train/distributed_adam.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

#include "compat.h"
#include "dist/process_group.h"
#include "train/adam.h"

namespace recipebench::train {

DistributedAdam::DistributedAdam(std::vector<torch::Tensor> params, const RecipeOptimizer& options,
                                 dist::ProcessGroup& group, GradientGroups groups)
    : params_(std::move(params)), group_(group), groups_(groups), o_(options) {
  torch::NoGradGuard no_grad;
  int64_t total = 0;
  for (const auto& p : params_) {
    offsets_.push_back(total);
    total += p.numel();
  }
  const int64_t world = group_.size();
  shard_n_ = (total + world - 1) / world;  // the flat buffer is padded to world x shard_n_
  shard_lo_ = group_.rank() * shard_n_;
  const auto device = params_.empty() ? torch::Device(torch::kCPU) : params_[0].device();
  // The all-gather moves the updated weights in the parameters' dtype (BF16 on GPU: half the bytes of FP32);
  // FP32 when the parameters' dtypes differ.
  auto gather_dtype = params_.empty() ? torch::kFloat32 : params_[0].scalar_type();
  for (const auto& p : params_)
    if (p.scalar_type() != gather_dtype) gather_dtype = torch::kFloat32;
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(device);
  grad_flat_ = torch::zeros({world * shard_n_}, f32);
  param_flat_ = torch::zeros({world * shard_n_}, f32.dtype(gather_dtype));
  master_ = torch::zeros({shard_n_}, f32);
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto& p = params_[i];
    grad_views_.push_back(grad_flat_.narrow(0, offsets_[i], p.numel()).view(p.sizes()));
    // The part of parameter i inside [shard_lo_, shard_lo_ + shard_n_): its FP32 master weights.
    const int64_t lo = std::max(offsets_[i], shard_lo_);
    const int64_t hi = std::min(offsets_[i] + p.numel(), shard_lo_ + shard_n_);
    if (hi <= lo) continue;
    segments_.push_back(Segment{lo - shard_lo_, hi - lo, p.dim() >= 2});
    master_.narrow(0, lo - shard_lo_, hi - lo)
        .copy_(p.detach().reshape({-1}).narrow(0, lo - offsets_[i], hi - lo).to(torch::kFloat32));
  }
  grad_shard_ = torch::zeros({shard_n_}, f32);
  exp_avg_ = torch::zeros({shard_n_}, f32);
  exp_avg_sq_ = torch::zeros({shard_n_}, f32);
}

void DistributedAdam::accumulate_grads() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    auto& g = params_[i].mutable_grad();
    if (!g.defined()) continue;
    grad_views_[i].add_(g);  // FP32 += any float dtype, converted on the fly (no FP32 copy of g)
    g = torch::Tensor();
  }
}

void DistributedAdam::zero_grad() {
  grad_flat_.zero_();
  for (auto& p : params_) p.mutable_grad() = torch::Tensor();
}

double DistributedAdam::squared_grad_norm() {
  torch::NoGradGuard no_grad;
  if (groups_.partial_sums) groups_.partial_sums->all_reduce_sum(grad_flat_);
  group_.reduce_scatter_sum(grad_flat_, grad_shard_);
  auto sq = grad_shard_.pow(2).sum().to(torch::kFloat64).cpu();
  group_.all_reduce_sum(sq);
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
  ++t_;
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
    if (o_.weight_decay > 0)
      for (const auto& s : segments_)
        if (s.decay) master_.narrow(0, s.shard_offset, s.n).mul_(1.0 - lr * o_.weight_decay);
    adamw_update_(master_, grad_shard_, exp_avg_, exp_avg_sq_, lr, t_, o_, /*decay=*/false);
  }
  const auto shard = master_.to(param_flat_.scalar_type());
  group_.all_gather(shard, param_flat_);
  for (size_t i = 0; i < params_.size(); ++i)
    params_[i].copy_(param_flat_.narrow(0, offsets_[i], params_[i].numel()).view(params_[i].sizes()));
}

}  // namespace recipebench::train
