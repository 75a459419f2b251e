// Adam with decoupled weight decay over low-precision parameters with FP32 master weights and FP32 gradient
// accumulation (the "precision-aware" optimizer of the seed recipes, in its plain form).
#pragma once

#include <torch/types.h>

#include <memory>
#include <vector>

#include "optim/optimizer.h"
#include "recipe/recipe.h"

namespace recipebench::torch_model {
class CudaAdamw;
}

namespace recipebench::train {

/// Holds, per parameter p (any float dtype, e.g. bf16 on GPU, fp32 on CPU): an FP32 master copy (p itself
/// when p is fp32), an FP32 gradient accumulator and the FP32 Adam moments.
/// Use: optim/optimizer.h.
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
  /// The state as options.master_weights / exp_avg_dtype / exp_avg_sq_dtype say (docs/optimizer.md, "Precision-aware
  /// state"): a BF16 parameter's master as an FP32 copy or the parameter + an int16 remainder (optim/master_weights.h);
  /// FP32 parameters are their own masters; the moments in FP32 or BF16. The update computes in FP32 either way.
  /// `groups`: the partial-sum group (the experts' EDP group: the FP32 gradients are all-reduced there before the
  /// norm) and the shard group (the experts' EP group) of the parameters; both null on one rank.
  /// `kernels`: bench.kernels (docs/optimizer.md); either computes the same formula.
  MixedPrecisionAdam(std::vector<torch::Tensor> params, const RecipeOptimizer& options, GradientGroups groups = {},
                     AdamKernels kernels = AdamKernels::kFused);

  /// Each parameter's .grad() (any dtype) into its FP32 accumulator, then .grad() cleared: the first time after
  /// zero_grad() a copy (converted on the fly), afterwards an addition. With the fused kernels one multi-tensor
  /// kernel does it for contiguous BF16 / FP32 gradients, bitwise as libtorch's copy_ / add_ (docs/optimizer.md).
  void accumulate_grads() override;
  /// Starts a step's accumulation: the accumulators are overwritten by the next accumulate_grads(); one whose
  /// parameter got no gradient by the norm is zeroed then (no pass over all of them here).
  void zero_grad() override;
  /// Sums the accumulators over the partial-sum group, then: this rank's sum of squares (FP32 gradients; the
  /// fused kernels sum in FP64 over FP32 chunk partials; synchronises with the device), summed over the shard group.
  double squared_grad_norm() override;
  /// The scale clip / norm when norm > clip (> 0), applied to the gradients in step() (by the fused kernels as they
  /// read them; by libtorch in place here); a later squared_grad_norm() is the scaled gradients'. Once per step:
  /// on the fused path a second call replaces the scale. Returns the scale (<= 1).
  double clip(double norm) override;
  /// One Adam step at learning rate `lr`; then each parameter is the master weight cast to its dtype (with
  /// remainders: the master's BF16 half, optim/master_weights.h split_master).
  /// On CUDA: AdamKernels::kFused one multi-tensor kernel that also writes the BF16 parameters (and remainders);
  /// kOps PyTorch's fused multi-tensor AdamW (libtorch 2.x, compat.h) and a copy per parameter when the state is
  /// plain FP32, else per-tensor ops; on the CPU per-tensor ops.
  void step(double lr) override;

  /// True when step() and the norm run the fused CUDA kernels (cuda/adamw_cuda.h); false: libtorch.
  bool uses_cuda_kernels() const { return cuda_ != nullptr; }
  /// FP32 master weights, in parameter order (tests compare them against references): the state itself, or a new
  /// tensor reconstructed from a BF16 parameter and its remainder.
  std::vector<torch::Tensor> master() const;
  /// FP32 gradient accumulators, in parameter order; one that no accumulate_grads() wrote since zero_grad() holds a
  /// stale value until the norm (tests compare them against references).
  const std::vector<torch::Tensor>& grad_accumulators() const { return grads_; }

 private:
  /// Zeros the accumulators that no accumulate_grads() wrote since zero_grad() (once per step).
  void settle_grads();
  /// True when every master is FP32 (no remainders) and the moments are FP32: PyTorch's fused AdamW applies.
  bool plain_state() const;
  /// step() by PyTorch's fused multi-tensor AdamW over the FP32 state (plain_state, libtorch 2.x on CUDA).
  void fused_ops_step(double lr);
  /// step() of parameter i by adamw_update_ on FP32 working copies of what is stored otherwise.
  void tensor_step(size_t i, double lr);

  /// Per parameter: master_ the FP32 master (undefined with a remainder), remainders_ the int16 remainder
  /// (undefined without), grads_ FP32, exp_avg_ / exp_avg_sq_ in the recipe's moment dtypes.
  std::vector<torch::Tensor> params_, master_, remainders_, grads_, exp_avg_, exp_avg_sq_;
  std::vector<bool> decay_;
  std::vector<bool> written_;  ///< accumulator i holds this step's gradient (set by accumulate_grads)
  bool settled_ = true;        ///< settle_grads() ran since the last zero_grad()
  double grad_scale_ = 1.0;    ///< clip()'s scale, applied by step() on the fused path
  /// The fused kernels' chunk table; null: libtorch. Shared, so that a build without the kernels never names its
  /// destructor.
  std::shared_ptr<torch_model::CudaAdamw> cuda_;
  std::vector<torch::Tensor> steps_;  ///< per-tensor step counts for PyTorch's fused AdamW (AdamKernels::kOps)
  RecipeOptimizer o_;
  GradientGroups groups_;
  int64_t t_ = 0;
};

}  // namespace recipebench::train
