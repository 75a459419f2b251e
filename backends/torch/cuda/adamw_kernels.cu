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

// Loads and stores of one element or four (aligned: 16 bytes for FP32, 8 for 16-bit), computing in FP32.
__device__ __forceinline__ float load1(const float* p) { return *p; }
__device__ __forceinline__ float load1(const __nv_bfloat16* p) { return __bfloat162float(*p); }
__device__ __forceinline__ void store1(float* p, float x) { *p = x; }
__device__ __forceinline__ void store1(__nv_bfloat16* p, float x) { *p = __float2bfloat16_rn(x); }

__device__ __forceinline__ void load4(const float* p, float x[4]) {
  const float4 f = *reinterpret_cast<const float4*>(p);
  x[0] = f.x, x[1] = f.y, x[2] = f.z, x[3] = f.w;
}
__device__ __forceinline__ void load4(const __nv_bfloat16* p, float x[4]) {
  const uint2 raw = *reinterpret_cast<const uint2*>(p);
  const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.x));
  const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.y));
  x[0] = a.x, x[1] = a.y, x[2] = b.x, x[3] = b.y;
}
__device__ __forceinline__ void store4(float* p, const float x[4]) {
  *reinterpret_cast<float4*>(p) = make_float4(x[0], x[1], x[2], x[3]);
}
__device__ __forceinline__ void store4(__nv_bfloat16* p, const float x[4]) {
  const __nv_bfloat162 a = __floats2bfloat162_rn(x[0], x[1]), b = __floats2bfloat162_rn(x[2], x[3]);
  uint2 raw;
  raw.x = *reinterpret_cast<const unsigned*>(&a);
  raw.y = *reinterpret_cast<const unsigned*>(&b);
  *reinterpret_cast<uint2*>(p) = raw;
}

/// The FP32 master of BF16 bits `hi` and remainder `rem` (TensorSlot::remainder).
__device__ __forceinline__ float join(unsigned short hi, short rem) {
  const unsigned short h = static_cast<unsigned short>(hi - (rem < 0 ? 1 : 0));
  return __uint_as_float((static_cast<unsigned>(h) << 16) | static_cast<unsigned short>(rem));
}
/// `w` split into BF16 bits (rounded half away from zero) and the remainder: join(hi, rem) == w bit for bit.
__device__ __forceinline__ void split(float w, unsigned short& hi, short& rem) {
  const unsigned u = __float_as_uint(w);
  const unsigned short low = static_cast<unsigned short>(u & 0xFFFFu);
  hi = static_cast<unsigned short>((u >> 16) + (low >= 0x8000u ? 1u : 0u));
  rem = static_cast<short>(low);
}

/// Four masters from param + remainder (8-byte aligned each), and back.
__device__ __forceinline__ void load_joined4(const __nv_bfloat16* p, const int16_t* r, float w[4]) {
  const uint2 hp = *reinterpret_cast<const uint2*>(p), rp = *reinterpret_cast<const uint2*>(r);
  const unsigned hs[4] = {hp.x & 0xFFFFu, hp.x >> 16, hp.y & 0xFFFFu, hp.y >> 16};
  const unsigned rs[4] = {rp.x & 0xFFFFu, rp.x >> 16, rp.y & 0xFFFFu, rp.y >> 16};
#pragma unroll
  for (int k = 0; k < 4; ++k) w[k] = join(static_cast<unsigned short>(hs[k]), static_cast<short>(rs[k]));
}
__device__ __forceinline__ void store_split4(const float w[4], __nv_bfloat16* p, int16_t* r) {
  unsigned short h[4];
  short rem[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) split(w[k], h[k], rem[k]);
  uint2 hp, rp;
  hp.x = h[0] | (static_cast<unsigned>(h[1]) << 16), hp.y = h[2] | (static_cast<unsigned>(h[3]) << 16);
  rp.x = static_cast<unsigned short>(rem[0]) | (static_cast<unsigned>(static_cast<unsigned short>(rem[1])) << 16);
  rp.y = static_cast<unsigned short>(rem[2]) | (static_cast<unsigned>(static_cast<unsigned short>(rem[3])) << 16);
  *reinterpret_cast<uint2*>(p) = hp;
  *reinterpret_cast<uint2*>(r) = rp;
}

/// Elements [e, e + 4) of slot `s` (vectorized) updated.
template <bool kRemainder, typename MT, typename VT>
__device__ __forceinline__ void update4(const TensorSlot& s, int64_t e, const Hyper& h, bool decay) {
  float w[4], g[4], m[4], v[4];
  load4(s.grad + e, g);
  load4(static_cast<const MT*>(s.exp_avg) + e, m);
  load4(static_cast<const VT*>(s.exp_avg_sq) + e, v);
  if (kRemainder) load_joined4(s.param + e, s.remainder + e, w);
  else load4(s.master + e, w);
#pragma unroll
  for (int k = 0; k < 4; ++k) w[k] = update(w[k], g[k], m[k], v[k], h, decay);
  store4(static_cast<MT*>(s.exp_avg) + e, m);
  store4(static_cast<VT*>(s.exp_avg_sq) + e, v);
  if (kRemainder) {
    store_split4(w, s.param + e, s.remainder + e);
  } else {
    store4(s.master + e, w);
    if (s.param) store4(s.param + e, w);
  }
}

/// Element e of slot `s` updated.
template <bool kRemainder, typename MT, typename VT>
__device__ __forceinline__ void update1(const TensorSlot& s, int64_t e, const Hyper& h, bool decay) {
  MT* mp = static_cast<MT*>(s.exp_avg) + e;
  VT* vp = static_cast<VT*>(s.exp_avg_sq) + e;
  float m = load1(mp), v = load1(vp);
  const float w0 = kRemainder ? join(__bfloat16_as_ushort(s.param[e]), s.remainder[e]) : s.master[e];
  const float w = update(w0, s.grad[e], m, v, h, decay);
  store1(mp, m);
  store1(vp, v);
  if (kRemainder) {
    unsigned short hi;
    short rem;
    split(w, hi, rem);
    s.param[e] = __ushort_as_bfloat16(hi);
    s.remainder[e] = rem;
  } else {
    s.master[e] = w;
    if (s.param) s.param[e] = __float2bfloat16_rn(w);
  }
}

/// One chunk of slot `s`: four elements at a time where the slot is vectorized (chunk starts are multiples of
/// kChunkElements: aligned when the bases are), then one at a time.
template <bool kRemainder, typename MT, typename VT>
__device__ void update_chunk(const TensorSlot& s, const Chunk& ch, const Hyper& h) {
  const bool decay = s.decay != 0;
  int start = 0;
  if (s.vectorized) {
    const int quads = ch.count / 4;
    for (int q = threadIdx.x; q < quads; q += kThreads) update4<kRemainder, MT, VT>(s, ch.begin + 4 * q, h, decay);
    start = quads * 4;
  }
  for (int i = start + threadIdx.x; i < ch.count; i += kThreads) update1<kRemainder, MT, VT>(s, ch.begin + i, h, decay);
}

/// update_chunk for the slot's storage: remainder or not, each moment FP32 or BF16.
template <bool kRemainder>
__device__ void update_chunk_by_moments(const TensorSlot& s, const Chunk& ch, const Hyper& h) {
  using bf16 = __nv_bfloat16;
  if (s.exp_avg_bf16 && s.exp_avg_sq_bf16) update_chunk<kRemainder, bf16, bf16>(s, ch, h);
  else if (s.exp_avg_bf16) update_chunk<kRemainder, bf16, float>(s, ch, h);
  else if (s.exp_avg_sq_bf16) update_chunk<kRemainder, float, bf16>(s, ch, h);
  else update_chunk<kRemainder, float, float>(s, ch, h);
}

__global__ void adamw_chunks(const TensorSlot* slots, const Chunk* chunks, int64_t num_chunks, Hyper h) {
  const int64_t c = chunk_index();
  if (c >= num_chunks) return;
  const Chunk ch = chunks[c];
  const TensorSlot s = slots[ch.slot];
  if (s.remainder) update_chunk_by_moments<true>(s, ch, h);
  else update_chunk_by_moments<false>(s, ch, h);
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
