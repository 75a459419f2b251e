#include "train/adam.h"

#include <torch/torch.h>

#include <cmath>

#include "compat.h"

namespace recipebench::train {

MixedPrecisionAdam::MixedPrecisionAdam(std::vector<torch::Tensor> params, const RecipeOptimizer& options)
    : params_(std::move(params)), o_(options) {
  torch::NoGradGuard no_grad;
  for (const auto& p : params_) {
    master_.push_back(p.scalar_type() == torch::kFloat32 ? p.detach() : p.detach().to(torch::kFloat32));
    grads_.push_back(torch::zeros_like(master_.back()));
    exp_avg_.push_back(torch::zeros_like(master_.back()));
    exp_avg_sq_.push_back(torch::zeros_like(master_.back()));
    decay_.push_back(p.dim() >= 2);
  }
}

void MixedPrecisionAdam::accumulate_grads() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    auto& g = params_[i].mutable_grad();
    if (!g.defined()) continue;
    grads_[i].add_(g.to(torch::kFloat32));
    g = torch::Tensor();
  }
}

void MixedPrecisionAdam::zero_grad() {
  for (auto& g : grads_) g.zero_();
  for (auto& p : params_) p.mutable_grad() = torch::Tensor();
}

double MixedPrecisionAdam::grad_norm() {
  torch::NoGradGuard no_grad;
  if (grads_.empty()) return 0.0;
  std::vector<torch::Tensor> sq;
  sq.reserve(grads_.size());
  for (const auto& g : grads_) sq.push_back(g.pow(2).sum());
  return torch::stack(sq).sum().sqrt().item<double>();
}

double MixedPrecisionAdam::clip(double norm) {
  if (o_.clip_grad <= 0 || norm <= o_.clip_grad) return 1.0;
  const double scale = o_.clip_grad / (norm + 1e-6);
  torch::NoGradGuard no_grad;
  for (auto& g : grads_) g.mul_(scale);
  return scale;
}

void MixedPrecisionAdam::step(double lr) {
  torch::NoGradGuard no_grad;
  ++t_;
  if (!master_.empty() && torch_model::compat::fused_adamw_usable(master_[0])) {
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
    for (auto& t : steps_) t.add_(1);
    for (int d = 0; d < 2; ++d)
      if (!w[d].empty())
        torch_model::compat::fused_adamw(w[d], g[d], m[d], v[d], s[d], lr, o_.adam_beta1, o_.adam_beta2,
                                         d ? o_.weight_decay : 0.0, o_.adam_eps);
    for (size_t i = 0; i < params_.size(); ++i)
      if (params_[i].scalar_type() != torch::kFloat32) params_[i].copy_(master_[i]);
    return;
  }
  const double b1 = o_.adam_beta1, b2 = o_.adam_beta2;
  const double bc1 = 1.0 - std::pow(b1, static_cast<double>(t_));
  const double bc2 = 1.0 - std::pow(b2, static_cast<double>(t_));
  for (size_t i = 0; i < params_.size(); ++i) {
    auto& w = master_[i];
    exp_avg_[i].mul_(b1).add_(grads_[i], 1.0 - b1);
    exp_avg_sq_[i].mul_(b2).addcmul_(grads_[i], grads_[i], 1.0 - b2);
    if (decay_[i] && o_.weight_decay > 0) w.mul_(1.0 - lr * o_.weight_decay);
    const auto denom = (exp_avg_sq_[i] / bc2).sqrt_().add_(o_.adam_eps);
    w.addcdiv_(exp_avg_[i], denom, -lr / bc1);
    if (params_[i].scalar_type() != torch::kFloat32) params_[i].copy_(w);
  }
}

}  // namespace recipebench::train
