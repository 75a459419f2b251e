// RMSNorm variants of Qwen3.5 (docs/model.md).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>

namespace recipebench::torch_model {

/// Zero-centred RMSNorm (Hugging Face Qwen3_5MoeRMSNorm, "apply-layernorm-1p" in Megatron):
///   y = x * rsqrt(mean(x^2 over the last dim) + eps) * (1 + w)
/// computed in fp32 (fp64 for fp64 inputs) and cast back to the dtype of x.
/// x: [..., dim] -> [..., dim]; w: [dim].
torch::Tensor zero_centred_rms_norm(const torch::Tensor& x, const torch::Tensor& w, double eps);

/// How gated_rms_norm computes: Auto the fused CUDA kernels where they apply, Ops libtorch operations.
enum class GatedNormImpl { Auto, Ops };

/// Gated RMSNorm of the Gated DeltaNet output (Hugging Face Qwen3_5MoeRMSNormGated, FLA FusedRMSNormGated):
///   y = (x * rsqrt(mean(x^2) + eps)) * w * silu(z)        -- a plain RMSNorm (weight init 1), not zero-centred
/// normalised in fp32 (fp64 for fp64 inputs), cast to the dtype of x before the weight, gated in fp32.
/// x, z: [..., dim] -> [..., dim] in the dtype of x; w: [dim].
/// `impl` Auto: the fused CUDA kernels (cuda/gated_norm_cuda.h: all in FP32, one BF16 rounding) for BF16 tensors on
/// CUDA with dim 64, 128 or 256 when they were built; else (and with Ops) the libtorch ops above, the reference.
torch::Tensor gated_rms_norm(const torch::Tensor& x, const torch::Tensor& z, const torch::Tensor& w, double eps,
                             GatedNormImpl impl = GatedNormImpl::Auto);

/// Module form of zero_centred_rms_norm. Parameter "weight" [dim], initialised to 0 (the identity scale).
struct RMSNormImpl : torch::nn::Module {
  explicit RMSNormImpl(int64_t dim, double eps = 1e-6);
  /// x: [..., dim] -> [..., dim], same dtype.
  torch::Tensor forward(const torch::Tensor& x);

  torch::Tensor weight;
  int64_t dim;
  double eps;
};
TORCH_MODULE(RMSNorm);

/// Module form of gated_rms_norm (with `impl`). Parameter "weight" [dim], initialised to 1.
struct GatedRMSNormImpl : torch::nn::Module {
  explicit GatedRMSNormImpl(int64_t dim, double eps = 1e-6, GatedNormImpl impl = GatedNormImpl::Auto);
  /// x, z: [..., dim] -> [..., dim] in the dtype of x.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& z);

  torch::Tensor weight;
  int64_t dim;
  double eps;
  GatedNormImpl impl;
};
TORCH_MODULE(GatedRMSNorm);

}  // namespace recipebench::torch_model
