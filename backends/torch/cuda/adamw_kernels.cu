// Multi-tensor AdamW and gradient sum of squares (adamw_kernels.h). A block owns one chunk of one tensor; its
// threads stride through it, four elements at a time where the slot's arrays are aligned.
#include "adamw_kernels.h"

namespace recipebench::adamw {

namespace {

constexpr int kThreads = 256;

/// The block's chunk: a 1-D grid of one block per chunk (gridDim.x allows 2^31 - 1).
__device__ __forceinline__ int64_t chunk_index() { return blockIdx.x; }

/// Sum of `v` over the block in a fixed tree; the result in thread 0.
__device__ double block_sum(double v) {
  __shared__ double lanes[kThreads];
  lanes[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) lanes[threadIdx.x] += lanes[threadIdx.x + s];
    __syncthreads();
  }
  return lanes[0];
}

__global__ void chunk_squares(const TensorSlot* slots, const Chunk* chunks, int64_t num_chunks, double* partial) {
  const int64_t c = chunk_index();
  if (c >= num_chunks) return;
  const Chunk ch = chunks[c];
  const float* g = slots[ch.slot].grad + ch.begin;
  float acc = 0.0f;
  for (int i = threadIdx.x; i < ch.count; i += kThreads) acc = fmaf(g[i], g[i], acc);
  const double total = block_sum(static_cast<double>(acc));
  if (threadIdx.x == 0) partial[c] = total;
}

__global__ void sum_partials(const double* partial, int64_t n, double* total) {
  double acc = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) acc += partial[i];
  const double s = block_sum(acc);
  if (threadIdx.x == 0) *total = s;
}

/// One element's update; returns the new master weight.
__device__ __forceinline__ float update(float w, float g, float& m, float& v, const Hyper& h, bool decay) {
  g *= h.grad_scale;
  m = h.beta1 * m + h.one_minus_beta1 * g;
  v = h.beta2 * v + h.one_minus_beta2 * (g * g);
  if (decay) w *= h.decay_factor;
  const float denom = sqrtf(v / h.bias_correction2) + h.eps;
  return w - h.step_size * (m / denom);
}

__global__ void adamw_chunks(const TensorSlot* slots, const Chunk* chunks, int64_t num_chunks, Hyper h) {
  const int64_t c = chunk_index();
  if (c >= num_chunks) return;
  const Chunk ch = chunks[c];
  const TensorSlot s = slots[ch.slot];
  const bool decay = s.decay != 0;
  float* w = s.master + ch.begin;
  const float* g = s.grad + ch.begin;
  float* m = s.exp_avg + ch.begin;
  float* v = s.exp_avg_sq + ch.begin;
  __nv_bfloat16* p = s.param ? s.param + ch.begin : nullptr;
  int start = 0;
  if (s.vectorized) {  // chunk starts are multiples of kChunkElements: aligned when the bases are
    const int quads = ch.count / 4;
    for (int q = threadIdx.x; q < quads; q += kThreads) {
      float4 w4 = reinterpret_cast<float4*>(w)[q];
      const float4 g4 = reinterpret_cast<const float4*>(g)[q];
      float4 m4 = reinterpret_cast<float4*>(m)[q];
      float4 v4 = reinterpret_cast<float4*>(v)[q];
      w4.x = update(w4.x, g4.x, m4.x, v4.x, h, decay);
      w4.y = update(w4.y, g4.y, m4.y, v4.y, h, decay);
      w4.z = update(w4.z, g4.z, m4.z, v4.z, h, decay);
      w4.w = update(w4.w, g4.w, m4.w, v4.w, h, decay);
      reinterpret_cast<float4*>(w)[q] = w4;
      reinterpret_cast<float4*>(m)[q] = m4;
      reinterpret_cast<float4*>(v)[q] = v4;
      if (p) {
        const __nv_bfloat162 lo = __floats2bfloat162_rn(w4.x, w4.y), hi = __floats2bfloat162_rn(w4.z, w4.w);
        reinterpret_cast<__nv_bfloat162*>(p)[2 * q] = lo;
        reinterpret_cast<__nv_bfloat162*>(p)[2 * q + 1] = hi;
      }
    }
    start = quads * 4;
  }
  for (int i = start + threadIdx.x; i < ch.count; i += kThreads) {
    float mi = m[i], vi = v[i];
    const float wi = update(w[i], g[i], mi, vi, h, decay);
    w[i] = wi;
    m[i] = mi;
    v[i] = vi;
    if (p) p[i] = __float2bfloat16_rn(wi);
  }
}

dim3 grid_for(int64_t num_chunks) { return dim3(static_cast<unsigned>(num_chunks)); }

}  // namespace

cudaError_t sum_of_squares(const TensorSlot* slots, const Chunk* chunks, int64_t num_chunks, double* partial,
                           double* total, cudaStream_t stream) {
  if (num_chunks > 0) chunk_squares<<<grid_for(num_chunks), kThreads, 0, stream>>>(slots, chunks, num_chunks, partial);
  sum_partials<<<1, kThreads, 0, stream>>>(partial, num_chunks, total);
  return cudaGetLastError();
}

cudaError_t adamw_step(const TensorSlot* slots, const Chunk* chunks, int64_t num_chunks, const Hyper& h,
                       cudaStream_t stream) {
  if (num_chunks == 0) return cudaSuccess;
  adamw_chunks<<<grid_for(num_chunks), kThreads, 0, stream>>>(slots, chunks, num_chunks, h);
  return cudaGetLastError();
}

}  // namespace recipebench::adamw
