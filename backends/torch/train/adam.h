// Adam with decoupled weight decay over low-precision parameters with FP32 master weights and FP32 gradient
// accumulation (the "precision-aware" optimizer of the seed recipes, in its plain form).
#pragma once

#include <torch/types.h>

#include <vector>

#include "recipe/recipe.h"
#include "train/optimizer.h"

namespace recipebench::train {

/// Holds, per parameter p (any float dtype, e.g. bf16 on GPU, fp32 on CPU): an FP32 master copy (p itself
/// when p is fp32), an FP32 gradient accumulator and the FP32 Adam moments.
/// Use: train/optimizer.h.
/// Update (Loshchilov & Hutter, arXiv 1711.05101; Kingma & Ba, arXiv 1412.6980):
///   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;  w -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) + lr wd
///   w
/// with weight decay only on matrices (dim >= 2), not on norms, biases or per-head scalars (as Megatron-LM).
/// One AdamW step on FP32 tensors in place (the formula of MixedPrecisionAdam below), step count t >= 1:
/// m, v updated from g; w scaled by (1 - lr wd) when `decay`; w -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps).
/// w, g, m, v: the same shape, FP32.
void adamw_update_(torch::Tensor& w, const torch::Tensor& g, torch::Tensor& m, torch::Tensor& v, double lr, int64_t t,
                   const RecipeOptimizer& o, bool decay);

/// Gradient-clipping scale for a global norm: clip_grad / (norm + 1e-6) when norm > clip_grad > 0, else 1.
double clip_scale(double norm, const RecipeOptimizer& o);

class MixedPrecisionAdam : public Optimizer {
 public:
  /// `groups`: the partial-sum group (the experts' EDP group: the FP32 gradients are all-reduced there before the
  /// norm) and the shard group (the experts' EP group) of the parameters; both null on one rank.
  MixedPrecisionAdam(std::vector<torch::Tensor> params, const RecipeOptimizer& options, GradientGroups groups = {});

  /// Adds every parameter's .grad() (any dtype) into its FP32 accumulator and clears .grad().
  void accumulate_grads() override;
  /// Zeros the FP32 accumulators.
  void zero_grad() override;
  /// Sums the accumulators over the partial-sum group, then: this rank's L2 norm (FP32; synchronises with the
  /// device) squared, summed over the shard group.
  double squared_grad_norm() override;
  /// Scales the accumulated gradients by clip / norm when norm > clip (> 0). Returns the scale applied (<= 1).
  double clip(double norm) override;
  /// One Adam step at learning rate `lr`; then each parameter is the master weight cast to its dtype.
  /// On CUDA with libtorch 2.x the update runs as PyTorch's fused multi-tensor AdamW kernel (compat.h),
  /// elsewhere as per-tensor ops; both compute the same formula.
  void step(double lr) override;

  /// FP32 master weights, in parameter order (tests compare them against references).
  const std::vector<torch::Tensor>& master() const { return master_; }

 private:
  std::vector<torch::Tensor> params_, master_, grads_, exp_avg_, exp_avg_sq_;
  std::vector<bool> decay_;
  std::vector<torch::Tensor> steps_;  ///< per-tensor step counts for the fused CUDA kernel
  RecipeOptimizer o_;
  GradientGroups groups_;
  int64_t t_ = 0;
};

}  // namespace recipebench::train
