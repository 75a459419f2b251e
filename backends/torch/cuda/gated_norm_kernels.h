// Fused gated RMSNorm of the Gated DeltaNet mixer's output (model/rms_norm.h, gated_rms_norm; docs/gdn-kernels.md,
// "Gated norm kernels"): y = x rsqrt(mean(x^2) + eps) w silu(z) per row, forward in one pass over x and z, backward in
// one pass over x, z and dy, where the libtorch-ops path makes about ten FP32 temporaries. No libtorch here.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace recipebench::gnorm {

/// Rows a warp takes in turn; the backward's weight-gradient partials have one row per warp of the grid:
/// gated_norm_backward needs `dw_partial` of gated_norm_warps(rows) x dim floats.
int64_t gated_norm_warps(int64_t rows);

/// True for the row widths the kernels are compiled for (64, 128, 256; Qwen3.5's linear_value_head_dim is 128).
inline bool gated_norm_supports_dim(int64_t dim) { return dim == 64 || dim == 128 || dim == 256; }

/// Per row r of x, z [rows, dim] (BF16, row-major): y[r, d] = x[r, d] rho_r w[d] silu(z[r, d]) with
/// rho_r = 1 / sqrt(mean_d x[r, d]^2 + eps), w BF16 [dim]. One warp per row, FP32 throughout, one BF16 rounding.
/// Deterministic. Returns the launch's error.
cudaError_t gated_norm_forward(const __nv_bfloat16* x, const __nv_bfloat16* z, const __nv_bfloat16* w, __nv_bfloat16* y,
                               int64_t rows, int64_t dim, float eps, cudaStream_t stream);

/// The backward of gated_norm_forward for dy (BF16 [rows, dim]), with a = x rho, s = silu(z), da = dy w s:
///   dx = rho (da - a mean_d(da a)),  dz = dy a w silu'(z),  silu'(z) = sigmoid(z) (1 + z (1 - sigmoid(z))),
///   dw_partial[warp, d] = sum over the warp's rows of dy a s (FP32); dw is its sum over the warps, which the caller
///   takes in a fixed order (deterministic). dx, dz BF16, rounded once.
cudaError_t gated_norm_backward(const __nv_bfloat16* x, const __nv_bfloat16* z, const __nv_bfloat16* w,
                                const __nv_bfloat16* dy, __nv_bfloat16* dx, __nv_bfloat16* dz, float* dw_partial,
                                int64_t rows, int64_t dim, float eps, cudaStream_t stream);

}  // namespace recipebench::gnorm
