// Fused MoE combine kernels (moe_combine_kernels.h).
#include "moe_combine_kernels.h"

namespace recipebench::moe_combine {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

/// 8 BF16 of a 16-byte vector as floats.
__device__ __forceinline__ void unpack8(const uint4& v, float (&f)[8]) {
  const __nv_bfloat162* p = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 x = __bfloat1622float2(p[i]);
    f[2 * i] = x.x;
    f[2 * i + 1] = x.y;
  }
}

/// 8 floats rounded to BF16 (nearest even) as a 16-byte vector.
__device__ __forceinline__ uint4 pack8(const float (&f)[8]) {
  uint4 v;
  __nv_bfloat162* p = reinterpret_cast<__nv_bfloat162*>(&v);
#pragma unroll
  for (int i = 0; i < 4; ++i) p[i] = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
  return v;
}

/// The token's k sorted positions and weights into shared memory (threads 0..k-1); caller synchronises.
__device__ __forceinline__ void load_slots(const int64_t* inv, const __nv_bfloat16* w, int64_t n, int k,
                                           int64_t* rows, float* weights) {
  if (threadIdx.x < k) {
    rows[threadIdx.x] = inv[n * k + threadIdx.x];
    weights[threadIdx.x] = __bfloat162float(w[n * k + threadIdx.x]);
  }
}

__global__ void __launch_bounds__(kThreads)
    forward_kernel(const __nv_bfloat16* ys, const int64_t* inv, const __nv_bfloat16* w, __nv_bfloat16* out, int k,
                   int64_t hidden) {
  __shared__ int64_t rows[kMaxSlots];
  __shared__ float weights[kMaxSlots];
  const int64_t n = blockIdx.x, vecs = hidden / 8;
  load_slots(inv, w, n, k, rows, weights);
  __syncthreads();
  for (int64_t v = threadIdx.x; v < vecs; v += kThreads) {
    float acc[8] = {};
    for (int j = 0; j < k; ++j) {  // slot order
      float y[8];
      unpack8(reinterpret_cast<const uint4*>(ys + rows[j] * hidden)[v], y);
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[e] += weights[j] * y[e];
    }
    reinterpret_cast<uint4*>(out + n * hidden)[v] = pack8(acc);
  }
}

__global__ void __launch_bounds__(kThreads)
    backward_kernel(const __nv_bfloat16* ys, const int64_t* inv, const __nv_bfloat16* w, const __nv_bfloat16* g,
                    __nv_bfloat16* grad_ys, __nv_bfloat16* grad_w, int k, int64_t hidden) {
  __shared__ int64_t rows[kMaxSlots];
  __shared__ float weights[kMaxSlots];
  __shared__ float partial[kWarps][kMaxSlots];
  const int64_t n = blockIdx.x, vecs = hidden / 8;
  load_slots(inv, w, n, k, rows, weights);
  __syncthreads();
  float dot[kMaxSlots] = {};
  for (int64_t v = threadIdx.x; v < vecs; v += kThreads) {
    float gv[8];
    unpack8(reinterpret_cast<const uint4*>(g + n * hidden)[v], gv);
#pragma unroll
    for (int j = 0; j < kMaxSlots; ++j) {
      if (j >= k) break;
      float y[8], d[8];
      unpack8(reinterpret_cast<const uint4*>(ys + rows[j] * hidden)[v], y);
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        dot[j] += gv[e] * y[e];
        d[e] = weights[j] * gv[e];
      }
      reinterpret_cast<uint4*>(grad_ys + rows[j] * hidden)[v] = pack8(d);
    }
  }
  // Each slot's dot product: a butterfly over the warp, then the warps' sums in warp order (fixed: deterministic).
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int j = 0; j < kMaxSlots; ++j) {
    if (j >= k) break;
    float x = dot[j];
#pragma unroll
    for (int o = 16; o > 0; o /= 2) x += __shfl_xor_sync(0xffffffffu, x, o);
    if (lane == 0) partial[warp][j] = x;
  }
  __syncthreads();
  if (threadIdx.x < k) {
    float s = 0.f;
#pragma unroll
    for (int q = 0; q < kWarps; ++q) s += partial[q][threadIdx.x];
    grad_w[n * k + threadIdx.x] = __float2bfloat16(s);
  }
}

}  // namespace

cudaError_t combine_forward(const __nv_bfloat16* ys, const int64_t* inv, const __nv_bfloat16* w, __nv_bfloat16* out,
                            int64_t tokens, int k, int64_t hidden, cudaStream_t stream) {
  if (!supports(k, hidden)) return cudaErrorInvalidValue;
  if (tokens == 0) return cudaSuccess;
  forward_kernel<<<static_cast<unsigned>(tokens), kThreads, 0, stream>>>(ys, inv, w, out, k, hidden);
  return cudaGetLastError();
}

cudaError_t combine_backward(const __nv_bfloat16* ys, const int64_t* inv, const __nv_bfloat16* w,
                             const __nv_bfloat16* g, __nv_bfloat16* grad_ys, __nv_bfloat16* grad_w, int64_t tokens,
                             int k, int64_t hidden, cudaStream_t stream) {
  if (!supports(k, hidden)) return cudaErrorInvalidValue;
  if (tokens == 0) return cudaSuccess;
  backward_kernel<<<static_cast<unsigned>(tokens), kThreads, 0, stream>>>(ys, inv, w, g, grad_ys, grad_w, k, hidden);
  return cudaGetLastError();
}

}  // namespace recipebench::moe_combine
