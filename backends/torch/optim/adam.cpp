#include "optim/adam.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <ATen/ops/_foreach_add.h>
#include <ATen/ops/_foreach_mul.h>

#include <cmath>
#include <iostream>

#include "dist/comm_clock.h"
#include "dist/process_group.h"
#include "model/compat.h"
#include "optim/master_weights.h"
#ifdef RECIPEBENCH_GDN_CUDA
#include "cuda/adamw_cuda.h"
#include "cuda/grad_accumulate_cuda.h"
#endif

namespace recipebench::train {

void adamw_update_(torch::Tensor& w, const torch::Tensor& g, torch::Tensor& m, torch::Tensor& v, double lr, int64_t t,
                   const RecipeOptimizer& o, bool decay) {
  const double b1 = o.adam_beta1, b2 = o.adam_beta2;
  const double bc1 = 1.0 - std::pow(b1, static_cast<double>(t));
  const double bc2 = 1.0 - std::pow(b2, static_cast<double>(t));
  m.mul_(b1).add_(g, 1.0 - b1);
  v.mul_(b2).addcmul_(g, g, 1.0 - b2);
  if (decay && o.weight_decay > 0) w.mul_(1.0 - lr * o.weight_decay);
  const auto denom = (v / bc2).sqrt_().add_(o.adam_eps);
  w.addcdiv_(m, denom, -lr / bc1);
}

double clip_scale(double norm, const RecipeOptimizer& o) {
  return (o.clip_grad <= 0 || norm <= o.clip_grad) ? 1.0 : o.clip_grad / (norm + 1e-6);
}

namespace {

/// The fused kernels' chunk table over the optimizer's arrays, or null where they do not apply (CPU, bench.kernels:
/// ops, kernels not built, parameters neither BF16 nor FP32 or not contiguous); on CUDA with kFused the run says
/// so on stderr (the setting is never dropped silently).
std::shared_ptr<torch_model::CudaAdamw> make_cuda_adamw(const std::vector<torch::Tensor>& params,
                                                        const std::vector<torch::Tensor>& master,
                                                        const std::vector<torch::Tensor>& remainders,
                                                        const std::vector<torch::Tensor>& grads,
                                                        const std::vector<torch::Tensor>& m,
                                                        const std::vector<torch::Tensor>& v,
                                                        const std::vector<bool>& decay, AdamKernels kernels) {
  if (kernels != AdamKernels::kFused || params.empty() || !params[0].is_cuda()) return nullptr;
#ifdef RECIPEBENCH_GDN_CUDA
  std::vector<torch_model::AdamwArrays> arrays;
  for (size_t i = 0; i < params.size(); ++i) {
    const bool own_master = params[i].scalar_type() != torch::kFloat32;
    arrays.push_back({master[i], grads[i], m[i], v[i], own_master ? params[i].detach() : torch::Tensor(), decay[i],
                      remainders[i]});
  }
  if (torch_model::cuda_adamw_supports(arrays)) return std::make_shared<torch_model::CudaAdamw>(std::move(arrays));
  std::cerr << "recipebench: warning: bench.kernels fused: the AdamW kernels take contiguous BF16 or FP32 parameters "
               "on one GPU; this optimizer's are not: libtorch's AdamW runs\n";
#else
  (void)master, (void)remainders, (void)grads, (void)m, (void)v, (void)decay;
  std::cerr << "recipebench: warning: bench.kernels fused: this build has no CUDA kernels (no nvcc found): "
               "libtorch's AdamW runs\n";
#endif
  return nullptr;
}

}  // namespace

MixedPrecisionAdam::MixedPrecisionAdam(std::vector<torch::Tensor> params, const RecipeOptimizer& options,
                                       GradientGroups groups, AdamKernels kernels)
    : params_(std::move(params)), o_(options), groups_(groups) {
  torch::NoGradGuard no_grad;
  for (const auto& p : params_) {
    const bool remainder = p.scalar_type() == torch::kBFloat16 && o_.master_weights == MasterWeights::kBf16Remainder;
    const auto work = p.options().dtype(optimizer_float_type(p.scalar_type()));  // FP32, FP64 for FP64 parameters
    // The master: the parameter itself (FP32 or FP64), an FP32 copy, or the BF16 parameter + a remainder of zeros (a
    // BF16 value's FP32 bits end in 16 zeros).
    master_.push_back(p.scalar_type() == work.dtype() ? p.detach()
                      : remainder                      ? torch::Tensor()
                                                       : p.detach().to(work.dtype()));
    remainders_.push_back(remainder ? torch::zeros(p.sizes(), p.options().dtype(torch::kInt16)) : torch::Tensor());
    grads_.push_back(torch::zeros(p.sizes(), work));
    exp_avg_.push_back(torch::zeros(p.sizes(), work.dtype(state_scalar_type(o_.exp_avg_dtype, p.scalar_type()))));
    exp_avg_sq_.push_back(torch::zeros(p.sizes(), work.dtype(state_scalar_type(o_.exp_avg_sq_dtype, p.scalar_type()))));
    decay_.push_back(p.dim() >= 2);
  }
  written_.assign(params_.size(), true);  // the accumulators start at zero
  cuda_ = make_cuda_adamw(params_, master_, remainders_, grads_, exp_avg_, exp_avg_sq_, decay_, kernels);
}

std::vector<torch::Tensor> MixedPrecisionAdam::master() const {
  std::vector<torch::Tensor> out;
  for (size_t i = 0; i < params_.size(); ++i)
    out.push_back(remainders_[i].defined() ? reconstruct_master(params_[i].detach(), remainders_[i]) : master_[i]);
  return out;
}

bool MixedPrecisionAdam::plain_state() const {
  if (o_.exp_avg_dtype != StateDtype::kFp32 || o_.exp_avg_sq_dtype != StateDtype::kFp32) return false;
  for (const auto& r : remainders_)
    if (r.defined()) return false;
  return true;
}

void MixedPrecisionAdam::accumulate_grads() {
  torch::NoGradGuard no_grad;
  // With the fused kernels: one multi-tensor kernel for every pair it takes (the same bits as add_ / copy_, in one
  // pass instead of libtorch's mixed-dtype elementwise kernel per tensor); the rest below.
  std::vector<torch::Tensor> acc, grads;
  std::vector<bool> overwrite;
  for (size_t i = 0; i < params_.size(); ++i) {
    auto& g = params_[i].mutable_grad();
    if (!g.defined()) continue;
    bool batched = false;
#ifdef RECIPEBENCH_GDN_CUDA
    batched = cuda_ && torch_model::cuda_accumulate_supports(grads_[i], g);
#endif
    if (batched) {
      acc.push_back(grads_[i]);
      grads.push_back(g);
      overwrite.push_back(!written_[i]);
    } else if (written_[i]) {
      grads_[i].add_(g);  // FP32 (FP64) += any float dtype, converted on the fly (no FP32 copy of g)
    } else {
      grads_[i].copy_(g);  // the step's first gradient: no zeroing pass before it
    }
    written_[i] = true;
    g = torch::Tensor();
  }
#ifdef RECIPEBENCH_GDN_CUDA
  torch_model::cuda_accumulate_grads(acc, grads, overwrite);  // stream-ordered: the released gradients stay valid
#endif
}

void MixedPrecisionAdam::zero_grad() {
  written_.assign(params_.size(), false);
  settled_ = false;
  grad_scale_ = 1.0;
  for (auto& p : params_) p.mutable_grad() = torch::Tensor();
}

void MixedPrecisionAdam::settle_grads() {
  if (settled_) return;
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < grads_.size(); ++i)
    if (!written_[i]) grads_[i].zero_(), written_[i] = true;
  settled_ = true;
}

double MixedPrecisionAdam::squared_grad_norm() {
  torch::NoGradGuard no_grad;
  settle_grads();
  if (groups_.partial_sums) {
    const dist::CommWait wait(dist::CommKind::kDataParallel);
    for (auto& g : grads_) groups_.partial_sums->all_reduce_sum(g);
  }
  double local = 0.0;  // this rank's L2 norm
#ifdef RECIPEBENCH_GDN_CUDA
  if (cuda_) local = std::sqrt(cuda_->sum_of_squares()) * grad_scale_;  // after clip(): the scaled gradients' norm
#endif
  if (!cuda_ && !grads_.empty()) {
    std::vector<torch::Tensor> sq;
    sq.reserve(grads_.size());
    for (const auto& g : grads_) sq.push_back(g.pow(2).sum());
    local = torch::stack(sq).sum().sqrt().item<double>();
  }
  return sum_of_squares(groups_.shards, local);
}

double sum_of_squares(dist::ProcessGroup* group, double local) {
  if (!group) return local * local;
  auto sq = torch::tensor({local * local}, torch::kFloat64);
  const dist::CommWait wait(dist::CommKind::kDataParallel);
  group->all_reduce_sum(sq);
  return sq.item<double>();
}

double MixedPrecisionAdam::clip(double norm) {
  const double scale = clip_scale(norm, o_);
  if (scale == 1.0) return 1.0;
  settle_grads();
  if (cuda_) {
    grad_scale_ = scale;  // applied by the step kernel as it reads the gradients
    return scale;
  }
  torch::NoGradGuard no_grad;
  if (!grads_.empty()) at::_foreach_mul_(grads_, scale);
  return scale;
}

void MixedPrecisionAdam::step(double lr) {
  torch::NoGradGuard no_grad;
  settle_grads();
  ++t_;
#ifdef RECIPEBENCH_GDN_CUDA
  if (cuda_) {
    cuda_->step(lr, t_, o_.adam_beta1, o_.adam_beta2, o_.adam_eps, o_.weight_decay, grad_scale_);
    grad_scale_ = 1.0;
    return;
  }
#endif
  if (plain_state() && !master_.empty() && torch_model::compat::fused_adamw_usable(master_[0])) return fused_ops_step(lr);
  for (size_t i = 0; i < params_.size(); ++i) tensor_step(i, lr);
}

void MixedPrecisionAdam::fused_ops_step(double lr) {
  if (steps_.empty())
    for (const auto& w : master_) steps_.push_back(torch::zeros({}, w.options()));
  std::vector<torch::Tensor> w[2], g[2], m[2], v[2], s[2];  // [0]: no weight decay, [1]: weight decay
  for (size_t i = 0; i < master_.size(); ++i) {
    const int d = decay_[i] ? 1 : 0;
    w[d].push_back(master_[i]);
    g[d].push_back(grads_[i]);
    m[d].push_back(exp_avg_[i]);
    v[d].push_back(exp_avg_sq_[i]);
    s[d].push_back(steps_[i]);
  }
  at::_foreach_add_(steps_, 1);
  for (int d = 0; d < 2; ++d)
    if (!w[d].empty())
      torch_model::compat::fused_adamw(w[d], g[d], m[d], v[d], s[d], lr, o_.adam_beta1, o_.adam_beta2,
                                       d ? o_.weight_decay : 0.0, o_.adam_eps);
  for (size_t i = 0; i < params_.size(); ++i)
    if (params_[i].scalar_type() != master_[i].scalar_type()) params_[i].copy_(master_[i]);
}

void MixedPrecisionAdam::tensor_step(size_t i, double lr) {
  const bool remainder = remainders_[i].defined();
  auto w = remainder ? reconstruct_master(params_[i].detach(), remainders_[i]) : master_[i];
  const auto work = w.scalar_type();  // FP32, FP64 for an FP64 parameter (optimizer_float_type)
  const bool m_own = exp_avg_[i].scalar_type() == work, v_own = exp_avg_sq_[i].scalar_type() == work;
  auto m = m_own ? exp_avg_[i] : exp_avg_[i].to(work);
  auto v = v_own ? exp_avg_sq_[i] : exp_avg_sq_[i].to(work);
  adamw_update_(w, grads_[i], m, v, lr, t_, o_, decay_[i]);
  if (!m_own) exp_avg_[i].copy_(m);  // rounded to nearest even
  if (!v_own) exp_avg_sq_[i].copy_(v);
  if (remainder) {
    auto p = params_[i].detach();
    split_master(w, p, remainders_[i]);
  } else if (params_[i].scalar_type() != master_[i].scalar_type()) {
    params_[i].copy_(master_[i]);
  }
}

}  // namespace recipebench::train
