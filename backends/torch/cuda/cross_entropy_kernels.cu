// Fused softmax cross-entropy passes (cross_entropy_kernels.h).
#include <cuda_bf16.h>

#include <cfloat>
#include <cstdint>

#include "cross_entropy_kernels.h"

namespace recipebench::xent {
namespace {

constexpr int kThreads = 512;  ///< threads per block (one block per row)
constexpr int kVec = 8;        ///< BF16 values per 16-byte load

/// A running softmax normaliser: the maximum seen and the sum of exp(x - max) over what was seen.
struct MaxSum {
  float m, s;
};

__device__ __forceinline__ MaxSum combine(MaxSum a, MaxSum b) {
  const float m = fmaxf(a.m, b.m);
  if (m == -FLT_MAX) return {m, 0.f};  // both empty
  return {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}

__device__ __forceinline__ MaxSum push(MaxSum a, float x) {
  if (x > a.m) return {x, a.s * expf(a.m - x) + 1.f};
  return {a.m, a.s + expf(x - a.m)};
}

/// Block-wide combine in a fixed order (warp shuffles, then warp 0 over the warps). Result in thread 0.
__device__ MaxSum block_combine(MaxSum v) {
  __shared__ MaxSum warp_part[kThreads / 32];
#pragma unroll
  for (int o = 16; o > 0; o /= 2) {
    const MaxSum other{__shfl_down_sync(0xffffffffu, v.m, o), __shfl_down_sync(0xffffffffu, v.s, o)};
    v = combine(v, other);
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) warp_part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kThreads / 32 ? warp_part[lane] : MaxSum{-FLT_MAX, 0.f};
#pragma unroll
    for (int o = 16; o > 0; o /= 2) {
      const MaxSum other{__shfl_down_sync(0xffffffffu, v.m, o), __shfl_down_sync(0xffffffffu, v.s, o)};
      v = combine(v, other);
    }
  }
  return v;
}

__global__ void __launch_bounds__(kThreads)
    row_stats_kernel(const __nv_bfloat16* logits, int64_t vocab, const int64_t* target, const bool* held,
                     float* row_max, float* sum_exp, float* target_logit) {
  const int64_t r = blockIdx.x;
  const __nv_bfloat16* row = logits + r * vocab;
  MaxSum v{-FLT_MAX, 0.f};
  const bool vec = vocab % kVec == 0;  // rows then start 16-byte aligned (the allocation is)
  const int64_t nvec = vec ? vocab / kVec : 0;
  for (int64_t i = threadIdx.x; i < nvec; i += kThreads) {
    const uint4 raw = reinterpret_cast<const uint4*>(row)[i];
    const __nv_bfloat16* x = reinterpret_cast<const __nv_bfloat16*>(&raw);
#pragma unroll
    for (int j = 0; j < kVec; ++j) v = push(v, __bfloat162float(x[j]));
  }
  for (int64_t i = nvec * kVec + threadIdx.x; i < vocab; i += kThreads) v = push(v, __bfloat162float(row[i]));
  v = block_combine(v);
  if (threadIdx.x == 0) {
    row_max[r] = v.m;
    sum_exp[r] = v.s;
    target_logit[r] = held[r] ? __bfloat162float(row[target[r]]) : 0.f;
  }
}

__global__ void __launch_bounds__(kThreads)
    logit_grad_kernel(__nv_bfloat16* logits, int64_t vocab, const int64_t* target, const bool* held,
                      const float* row_max, const float* sum_exp, const float* scale) {
  const int64_t r = blockIdx.x;
  __nv_bfloat16* row = logits + r * vocab;
  const float m = row_max[r], k = scale[r] / sum_exp[r];
  const int64_t t = held[r] ? target[r] : -1;
  const float one_hot = scale[r];
  auto grad = [&](float x, int64_t j) { return k * expf(x - m) - (j == t ? one_hot : 0.f); };
  const bool vec = vocab % kVec == 0;
  const int64_t nvec = vec ? vocab / kVec : 0;
  for (int64_t i = threadIdx.x; i < nvec; i += kThreads) {
    uint4 raw = reinterpret_cast<uint4*>(row)[i];
    __nv_bfloat16* x = reinterpret_cast<__nv_bfloat16*>(&raw);
#pragma unroll
    for (int j = 0; j < kVec; ++j) x[j] = __float2bfloat16(grad(__bfloat162float(x[j]), i * kVec + j));
    reinterpret_cast<uint4*>(row)[i] = raw;
  }
  for (int64_t i = nvec * kVec + threadIdx.x; i < vocab; i += kThreads)
    row[i] = __float2bfloat16(grad(__bfloat162float(row[i]), i));
}

}  // namespace

cudaError_t row_stats(const __nv_bfloat16* logits, int64_t rows, int64_t vocab, const int64_t* target, const bool* held,
                      float* row_max, float* sum_exp, float* target_logit, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  row_stats_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(logits, vocab, target, held, row_max, sum_exp,
                                                                         target_logit);
  return cudaGetLastError();
}

cudaError_t logit_grad(__nv_bfloat16* logits, int64_t rows, int64_t vocab, const int64_t* target, const bool* held,
                       const float* row_max, const float* sum_exp, const float* scale, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  logit_grad_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(logits, vocab, target, held, row_max, sum_exp,
                                                                          scale);
  return cudaGetLastError();
}

}  // namespace recipebench::xent
