// Fused gated RMSNorm (gated_norm_kernels.h). A warp owns a row: each lane holds dim / 32 neighbouring columns in
// registers, the row's sums are warp shuffles in a fixed butterfly order, and a warp walks the rows warp_id,
// warp_id + warps, ... so the backward's weight gradient is summed in registers and written once per warp.
#include <cuda_bf16.h>

#include <cstdint>

#include "gated_norm_kernels.h"

namespace recipebench::gnorm {
namespace {

constexpr int kWarpsPerBlock = 8;
constexpr int kMaxBlocks = 1024;  ///< 8,192 warps: enough to fill an H200 (132 SMs) several times over

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float sigmoid(float v) { return 1.0f / (1.0f + __expf(-v)); }

/// Loads V neighbouring BF16 values of row `row` starting at column lane * V as FP32.
template <int V>
__device__ __forceinline__ void load_row(const __nv_bfloat16* p, int64_t row, int lane, float (&out)[V]) {
  const __nv_bfloat16* q = p + row * (32 * V) + lane * V;
#pragma unroll
  for (int i = 0; i < V; ++i) out[i] = __bfloat162float(q[i]);
}

template <int V>
__device__ __forceinline__ void store_row(__nv_bfloat16* p, int64_t row, int lane, const float (&v)[V]) {
  __nv_bfloat16* q = p + row * (32 * V) + lane * V;
#pragma unroll
  for (int i = 0; i < V; ++i) q[i] = __float2bfloat16(v[i]);
}

/// 1 / sqrt(mean(x^2) + eps) of the row whose lane values are `x` (dim = 32 V).
template <int V>
__device__ __forceinline__ float inv_rms(const float (&x)[V], float eps) {
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < V; ++i) s = fmaf(x[i], x[i], s);
  return rsqrtf(warp_sum(s) / (32.0f * V) + eps);
}

__device__ __forceinline__ int64_t warp_id() {
  return static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
}

template <int V>
__global__ void __launch_bounds__(32 * kWarpsPerBlock)
    forward_kernel(const __nv_bfloat16* x, const __nv_bfloat16* z, const __nv_bfloat16* w, __nv_bfloat16* y,
                   int64_t rows, float eps) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  float wv[V];
  load_row<V>(w, 0, lane, wv);
  for (int64_t r = warp_id(); r < rows; r += warps) {
    float xv[V], zv[V], out[V];
    load_row<V>(x, r, lane, xv);
    load_row<V>(z, r, lane, zv);
    const float rho = inv_rms<V>(xv, eps);
#pragma unroll
    for (int i = 0; i < V; ++i) out[i] = xv[i] * rho * wv[i] * (zv[i] * sigmoid(zv[i]));
    store_row<V>(y, r, lane, out);
  }
}

template <int V>
__global__ void __launch_bounds__(32 * kWarpsPerBlock)
    backward_kernel(const __nv_bfloat16* x, const __nv_bfloat16* z, const __nv_bfloat16* w, const __nv_bfloat16* dy,
                    __nv_bfloat16* dx, __nv_bfloat16* dz, float* dw_partial, int64_t rows, float eps) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  float wv[V], dw[V] = {};
  load_row<V>(w, 0, lane, wv);
  for (int64_t r = warp_id(); r < rows; r += warps) {
    float xv[V], zv[V], gv[V], a[V], da[V], dzv[V];
    load_row<V>(x, r, lane, xv);
    load_row<V>(z, r, lane, zv);
    load_row<V>(dy, r, lane, gv);
    const float rho = inv_rms<V>(xv, eps);
    float dot = 0.0f;
#pragma unroll
    for (int i = 0; i < V; ++i) {
      const float sg = sigmoid(zv[i]), s = zv[i] * sg;
      a[i] = xv[i] * rho;
      da[i] = gv[i] * wv[i] * s;
      dzv[i] = gv[i] * a[i] * wv[i] * sg * (1.0f + zv[i] * (1.0f - sg));
      dw[i] = fmaf(gv[i] * a[i], s, dw[i]);
      dot = fmaf(da[i], a[i], dot);
    }
    const float mean = warp_sum(dot) / (32.0f * V);
#pragma unroll
    for (int i = 0; i < V; ++i) da[i] = rho * (da[i] - a[i] * mean);  // now dx
    store_row<V>(dx, r, lane, da);
    store_row<V>(dz, r, lane, dzv);
  }
#pragma unroll
  for (int i = 0; i < V; ++i) dw_partial[warp_id() * (32 * V) + lane * V + i] = dw[i];
}

int blocks(int64_t rows) {
  const int64_t need = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  return static_cast<int>(need < kMaxBlocks ? (need > 0 ? need : 1) : kMaxBlocks);
}

}  // namespace

int64_t gated_norm_warps(int64_t rows) { return static_cast<int64_t>(blocks(rows)) * kWarpsPerBlock; }

cudaError_t gated_norm_forward(const __nv_bfloat16* x, const __nv_bfloat16* z, const __nv_bfloat16* w, __nv_bfloat16* y,
                               int64_t rows, int64_t dim, float eps, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  const int b = blocks(rows), t = 32 * kWarpsPerBlock;
  switch (dim) {
    case 64:
      forward_kernel<2><<<b, t, 0, stream>>>(x, z, w, y, rows, eps);
      break;
    case 128:
      forward_kernel<4><<<b, t, 0, stream>>>(x, z, w, y, rows, eps);
      break;
    case 256:
      forward_kernel<8><<<b, t, 0, stream>>>(x, z, w, y, rows, eps);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t gated_norm_backward(const __nv_bfloat16* x, const __nv_bfloat16* z, const __nv_bfloat16* w,
                                const __nv_bfloat16* dy, __nv_bfloat16* dx, __nv_bfloat16* dz, float* dw_partial,
                                int64_t rows, int64_t dim, float eps, cudaStream_t stream) {
  const int b = blocks(rows), t = 32 * kWarpsPerBlock;
  switch (dim) {
    case 64:
      backward_kernel<2><<<b, t, 0, stream>>>(x, z, w, dy, dx, dz, dw_partial, rows, eps);
      break;
    case 128:
      backward_kernel<4><<<b, t, 0, stream>>>(x, z, w, dy, dx, dz, dw_partial, rows, eps);
      break;
    case 256:
      backward_kernel<8><<<b, t, 0, stream>>>(x, z, w, dy, dx, dz, dw_partial, rows, eps);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace recipebench::gnorm
