// Fused causal depthwise conv1d + SiLU (conv_silu_kernels.h). One thread per (batch, channel, time tile): it walks
// its kTimeTile steps keeping the last K inputs (and, backward, the last K gradients) in registers, so each element
// of x, dy, y and dx is read or written once per tile; a warp's 32 threads touch 32 neighbouring channels.
#include <cuda_bf16.h>

#include <cstdint>

#include "conv_silu_kernels.h"

namespace recipebench::conv {
namespace {

constexpr int kThreads = 128;  ///< channels per block

__device__ __forceinline__ float load(const __nv_bfloat16* p) { return __bfloat162float(*p); }

__device__ __forceinline__ float sigmoid(float z) { return 1.0f / (1.0f + __expf(-z)); }

/// Shifts `win` one step to the left and puts `v` last (win[j] then holds the value of step u - K + 1 + j).
template <int K>
__device__ __forceinline__ void push(float (&win)[K], float v) {
#pragma unroll
  for (int j = 0; j + 1 < K; ++j) win[j] = win[j + 1];
  win[K - 1] = v;
}

/// The thread's place: channel c (>= channels: no work), batch b and its tile [t0, t1).
struct Place {
  int64_t c, b, t0, t1;
};

__device__ __forceinline__ Place place(int64_t seq) {
  Place p;
  p.c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  p.b = blockIdx.z;
  p.t0 = static_cast<int64_t>(blockIdx.y) * kTimeTile;
  p.t1 = min(seq, p.t0 + kTimeTile);
  return p;
}

/// The weights of channel c and the inputs x[t0 - K + 1 .. t0 - 1] (zero before the sequence) in win[1..K-1].
template <int K>
__device__ __forceinline__ void start(const __nv_bfloat16* x, const __nv_bfloat16* w, const Place& p, int64_t channels,
                                      float (&wk)[K], float (&win)[K]) {
#pragma unroll
  for (int j = 0; j < K; ++j) wk[j] = load(w + p.c * K + j);
  win[0] = 0.0f;
#pragma unroll
  for (int j = 1; j < K; ++j) {
    const int64_t t = p.t0 - K + j;
    win[j] = t >= 0 ? load(x + t * channels) : 0.0f;
  }
}

template <int K>
__device__ __forceinline__ float dot(const float (&a)[K], const float (&b)[K]) {
  float s = 0.0f;
#pragma unroll
  for (int j = 0; j < K; ++j) s = fmaf(a[j], b[j], s);
  return s;
}

template <int K>
__global__ void __launch_bounds__(kThreads)
    forward_kernel(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* y, int64_t seq, int64_t channels) {
  const Place p = place(seq);
  if (p.c >= channels) return;
  const int64_t base = p.b * seq * channels + p.c;  // x[b, 0, c]
  float wk[K], win[K];
  start<K>(x + base, w, p, channels, wk, win);
  for (int64_t t = p.t0; t < p.t1; ++t) {
    push<K>(win, load(x + base + t * channels));
    const float z = dot<K>(wk, win);
    y[base + t * channels] = __float2bfloat16(z * sigmoid(z));
  }
}

/// Walks u = t0 .. t1 + K - 2: recomputes the pre-activation at u, its gradient g(u) (zero past the sequence), adds
/// g(u) x[u - K + 1 + j] to the weight gradient for u inside the tile, and writes dx[t] for t = u - K + 1 once its K
/// gradients g(t .. t + K - 1) are known.
template <int K>
__global__ void __launch_bounds__(kThreads)
    backward_kernel(const __nv_bfloat16* x, const __nv_bfloat16* w, const __nv_bfloat16* dy, __nv_bfloat16* dx,
                    float* dw_partial, int64_t seq, int64_t channels) {
  const Place p = place(seq);
  if (p.c >= channels) return;
  const int64_t base = p.b * seq * channels + p.c;
  float wk[K], xw[K], gw[K] = {}, dw[K] = {}, wr[K];
  start<K>(x + base, w, p, channels, wk, xw);
#pragma unroll
  for (int j = 0; j < K; ++j) wr[j] = wk[K - 1 - j];  // dx[t] = sum_j w[K - 1 - j] g[t + j]
  for (int64_t u = p.t0; u < p.t1 + K - 1; ++u) {
    float g = 0.0f;
    if (u < seq) {
      push<K>(xw, load(x + base + u * channels));
      const float z = dot<K>(wk, xw), s = sigmoid(z);
      g = load(dy + base + u * channels) * s * (1.0f + z * (1.0f - s));
      if (u < p.t1) {
#pragma unroll
        for (int j = 0; j < K; ++j) dw[j] = fmaf(g, xw[j], dw[j]);
      }
    }
    push<K>(gw, g);
    const int64_t t = u - K + 1;
    if (t >= p.t0 && t < p.t1) dx[base + t * channels] = __float2bfloat16(dot<K>(wr, gw));
  }
  const int64_t tile = static_cast<int64_t>(blockIdx.z) * gridDim.y + blockIdx.y;
#pragma unroll
  for (int j = 0; j < K; ++j) dw_partial[(tile * channels + p.c) * K + j] = dw[j];
}

dim3 grid(int64_t batch, int64_t seq, int64_t channels) {
  return dim3(static_cast<unsigned>((channels + kThreads - 1) / kThreads),
              static_cast<unsigned>((seq + kTimeTile - 1) / kTimeTile), static_cast<unsigned>(batch));
}

}  // namespace

cudaError_t conv_silu_forward(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* y, int64_t batch,
                              int64_t seq, int64_t channels, int64_t k, cudaStream_t stream) {
  if (batch == 0 || seq == 0 || channels == 0) return cudaSuccess;
  const dim3 g = grid(batch, seq, channels);
  switch (k) {
    case 2:
      forward_kernel<2><<<g, kThreads, 0, stream>>>(x, w, y, seq, channels);
      break;
    case 3:
      forward_kernel<3><<<g, kThreads, 0, stream>>>(x, w, y, seq, channels);
      break;
    case 4:
      forward_kernel<4><<<g, kThreads, 0, stream>>>(x, w, y, seq, channels);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t conv_silu_backward(const __nv_bfloat16* x, const __nv_bfloat16* w, const __nv_bfloat16* dy,
                               __nv_bfloat16* dx, float* dw_partial, int64_t batch, int64_t seq, int64_t channels,
                               int64_t k, cudaStream_t stream) {
  if (batch == 0 || seq == 0 || channels == 0) return cudaSuccess;
  const dim3 g = grid(batch, seq, channels);
  switch (k) {
    case 2:
      backward_kernel<2><<<g, kThreads, 0, stream>>>(x, w, dy, dx, dw_partial, seq, channels);
      break;
    case 3:
      backward_kernel<3><<<g, kThreads, 0, stream>>>(x, w, dy, dx, dw_partial, seq, channels);
      break;
    case 4:
      backward_kernel<4><<<g, kThreads, 0, stream>>>(x, w, dy, dx, dw_partial, seq, channels);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace recipebench::conv
