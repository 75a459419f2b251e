// Fused causal depthwise conv1d + SiLU of the Gated DeltaNet mixer (model/gated_deltanet.h,
// causal_depthwise_conv1d_silu; docs/gdn-kernels.md, "Convolution kernels"): one pass over x forward and one pass
// over x and dy backward, in the model's [batch, seq, channels] layout, where the libtorch-ops path transposes to
// [batch, channels, seq], pads, convolves, narrows, applies SiLU and transposes back. No libtorch here.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace recipebench::conv {

/// Time steps one thread walks in both kernels (its tile); the backward's weight-gradient partials have one row per
/// tile: conv_silu_backward needs `dw_partial` of conv_silu_tiles(batch, seq) x channels x K floats.
constexpr int64_t kTimeTile = 64;

/// batch x ceil(seq / kTimeTile): the rows of the backward's weight-gradient partials.
inline int64_t conv_silu_tiles(int64_t batch, int64_t seq) { return batch * ((seq + kTimeTile - 1) / kTimeTile); }

/// True for the kernel widths the kernels are compiled for (2, 3 and 4; Qwen3.5's linear_conv_kernel is 4).
inline bool conv_silu_supports_width(int64_t k) { return k >= 2 && k <= 4; }

/// y[b, t, c] = silu(sum_{j < K} w[c, j] * x[b, t - K + 1 + j, c]) with x[b, t < 0, c] = 0, i.e. PyTorch's
/// conv1d(groups = channels, padding = K - 1) narrowed to the first seq outputs, then SiLU.
/// x, y: BF16 [batch, seq, channels] row-major; w: BF16 [channels, K]. Accumulates in FP32 and rounds y once.
/// Deterministic (no reductions across threads). Returns the launch's error.
cudaError_t conv_silu_forward(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* y, int64_t batch,
                              int64_t seq, int64_t channels, int64_t k, cudaStream_t stream);

/// The backward of conv_silu_forward for an incoming gradient dy (BF16 [batch, seq, channels]):
///   g[b, u, c] = dy[b, u, c] * silu'(pre[b, u, c]),  silu'(z) = s (1 + z (1 - s)), s = sigmoid(z)  (pre recomputed),
///   dx[b, t, c] = sum_{j < K} w[c, K - 1 - j] * g[b, t + j, c]  (g[b, u >= seq, c] = 0), BF16, rounded once;
///   dw_partial[tile, c, j] = sum over the tile's steps u of g[b, u, c] * x[b, u - K + 1 + j, c] (FP32): the weight
///   gradient is its sum over the tiles, which the caller takes in a fixed order (deterministic).
cudaError_t conv_silu_backward(const __nv_bfloat16* x, const __nv_bfloat16* w, const __nv_bfloat16* dy,
                               __nv_bfloat16* dx, float* dw_partial, int64_t batch, int64_t seq, int64_t channels,
                               int64_t k, cudaStream_t stream);

}  // namespace recipebench::conv
