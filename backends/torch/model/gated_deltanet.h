// Gated DeltaNet mixer of the Qwen3.5 linear-attention layers (docs/model.md).
#pragma once

#include "catalog/models.h"
#include "model/basic_modules.h"
#include "model/options.h"
#include "model/rms_norm.h"

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>
#include <memory>

namespace recipebench::torch_model {

struct TensorParallel;  // model/tensor_parallel.h

/// How causal_depthwise_conv1d_silu computes: Auto the fused CUDA kernels where they apply, Ops libtorch operations.
enum class ConvSiluImpl { Auto, Ops };

/// Depthwise causal conv1d followed by SiLU (Hugging Face causal_conv1d_fn with activation "silu"):
///   y[t, c] = silu(sum_{j < K} w[c, 0, j] * x[t - (K - 1) + j, c]),  x[t < 0] = 0.
/// x: [batch, seq, channels]; w: [channels, 1, K]. Returns [batch, seq, channels] in x's dtype.
/// `impl` Auto: the fused CUDA kernels (cuda/conv_silu_cuda.h) for BF16 tensors on CUDA with K in 2..4 when they
/// were built, else (and with Ops) libtorch's conv1d and silu (the CPU path and the reference).
torch::Tensor causal_depthwise_conv1d_silu(const torch::Tensor& x, const torch::Tensor& w,
                                           ConvSiluImpl impl = ConvSiluImpl::Auto);

/// L2 normalisation over the last dim as in FLA / Hugging Face: x * rsqrt(sum(x^2) + eps). x: [..., d] -> [..., d].
torch::Tensor l2_normalize(const torch::Tensor& x, double eps = 1e-6);

/// Gated DeltaNet (arXiv 2412.06464; Hugging Face Qwen3_5MoeGatedDeltaNet):
///   [q | k | v] = silu(causal_conv1d(in_proj_qkv(x)));  q, k L2-normalised per head
///   beta = sigmoid(in_proj_b(x)); g = -exp(A_log) * softplus(in_proj_a(x) + dt_bias)   (fp32, fp64 for fp64 x)
///   o = gated delta rule(q * 1/sqrt(k_dim), k, v, g, beta), key heads repeated to the value heads
///   out = out_proj(gated_rms_norm(o, z = in_proj_z(x)))    (per value head, weight [v_dim])
/// Parameters (Hugging Face names under "linear_attn."), no biases:
///   in_proj_qkv.weight [2 * key_dim + value_dim, hidden]   (rows: q heads, k heads, v heads)
///   in_proj_z.weight [value_dim, hidden]; in_proj_b.weight, in_proj_a.weight [v_heads, hidden]
///   conv1d.weight [2 * key_dim + value_dim, 1, kernel]; dt_bias, A_log [v_heads]; norm.weight [v_dim];
///   out_proj.weight [hidden, value_dim]
/// (key_dim = k_heads * k_dim, value_dim = v_heads * v_dim.)
struct GatedDeltaNetImpl : torch::nn::Module {
  /// fused_kernels false: libtorch operations only (KernelOptions::fused_kernels).
  explicit GatedDeltaNetImpl(const ModelConfig& cfg, GdnKernel kernel = GdnKernel::Chunked, bool fused_kernels = true);

  /// x: [batch, seq, hidden] -> [batch, seq, hidden] in x's dtype (no state carried between calls).
  torch::Tensor forward(const torch::Tensor& x);

  /// The gated delta rule of `kernel`: Recurrent = recurrent_gated_delta_rule; Chunked = the CUDA kernels
  /// (cuda/gdn_autograd.h) for bf16 / fp16 CUDA tensors (v's dtype) with head dims 128 and chunk_size 64 when
  /// they were built and fused_kernels is set, else
  /// chunk_gated_delta_rule (libtorch ops). Shapes as in model/gated_delta_rule.h; returns the output.
  torch::Tensor gated_delta_rule(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                 const torch::Tensor& g, const torch::Tensor& beta) const;

  Projection in_proj_qkv{nullptr}, in_proj_z{nullptr}, in_proj_b{nullptr}, in_proj_a{nullptr};
  Projection out_proj{nullptr};
  DepthwiseConvWeight conv1d{nullptr};
  torch::Tensor dt_bias, A_log;
  GatedRMSNorm norm{nullptr};
  int64_t num_k_heads, num_v_heads, head_k_dim, head_v_dim, chunk_size;
  GdnKernel kernel;
  bool fused_kernels;  ///< KernelOptions::fused_kernels: the CUDA kernels where they apply; false: libtorch ops
  /// Tensor parallelism with sequence parallelism (set by shard_tensor_parallel, model/tensor_parallel.h); null
  /// without. With it the input and output are this rank's sequence shard [batch, seq / TP, hidden].
  std::shared_ptr<TensorParallel> tp;
};
TORCH_MODULE(GatedDeltaNet);

}  // namespace recipebench::torch_model
