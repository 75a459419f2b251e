// Multi-tensor gradient accumulation (grad_accumulate_kernels.h). A block owns kBlockElements consecutive elements
// of one tensor; 8 elements per thread and pass where the tensor's arrays are aligned.
#include "grad_accumulate_kernels.h"

namespace recipebench::grad_accumulate {

namespace {

constexpr int kThreads = 256;

/// The tensor that block b belongs to: the last i with first_block[i] <= b (at most kMaxTensors steps).
__device__ __forceinline__ int tensor_of(const Batch& batch, int b) {
  int i = 0;
  while (i + 1 < batch.count && batch.first_block[i + 1] <= b) ++i;
  return i;
}

__device__ __forceinline__ float widen(const void* g, int64_t i, bool bf16) {
  return bf16 ? __bfloat162float(static_cast<const __nv_bfloat16*>(g)[i]) : static_cast<const float*>(g)[i];
}

/// Eight gradient elements [8 q, 8 q + 8) as FP32.
__device__ __forceinline__ void load8(const void* g, int64_t q, bool bf16, float (&x)[8]) {
  if (bf16) {
    const uint4 raw = reinterpret_cast<const uint4*>(g)[q];
    const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float2 f = __bfloat1622float2(h[j]);
      x[2 * j] = f.x;
      x[2 * j + 1] = f.y;
    }
  } else {
    const float4 a = reinterpret_cast<const float4*>(g)[2 * q], b = reinterpret_cast<const float4*>(g)[2 * q + 1];
    x[0] = a.x, x[1] = a.y, x[2] = a.z, x[3] = a.w, x[4] = b.x, x[5] = b.y, x[6] = b.z, x[7] = b.w;
  }
}

__global__ void __launch_bounds__(kThreads) accumulate_kernel(Batch batch) {
  const int t = tensor_of(batch, blockIdx.x);
  const int64_t begin = static_cast<int64_t>(blockIdx.x - batch.first_block[t]) * kBlockElements;
  const int64_t end = min(begin + kBlockElements, batch.n[t]);
  float* acc = batch.acc[t];
  const void* g = batch.grad[t];
  const bool bf16 = batch.bf16[t] != 0, overwrite = batch.overwrite[t] != 0;
  int64_t i0 = begin;
  if (batch.vectorized[t]) {  // begin is a multiple of 8; so is every vector's start
    const int64_t vectors = (end - begin) / 8;
    for (int64_t v = threadIdx.x; v < vectors; v += kThreads) {
      const int64_t q = begin / 8 + v;
      float x[8];
      load8(g, q, bf16, x);
      float4* a = reinterpret_cast<float4*>(acc) + 2 * q;
      if (overwrite) {  // stored as is, not 0 + x: a gradient of -0 stays -0, as copy_ keeps it
        a[0] = make_float4(x[0], x[1], x[2], x[3]);
        a[1] = make_float4(x[4], x[5], x[6], x[7]);
      } else {
        const float4 lo = a[0], hi = a[1];
        a[0] = make_float4(lo.x + x[0], lo.y + x[1], lo.z + x[2], lo.w + x[3]);
        a[1] = make_float4(hi.x + x[4], hi.y + x[5], hi.z + x[6], hi.w + x[7]);
      }
    }
    i0 = begin + vectors * 8;
  }
  for (int64_t i = i0 + threadIdx.x; i < end; i += kThreads) {
    const float x = widen(g, i, bf16);
    acc[i] = overwrite ? x : acc[i] + x;
  }
}

}  // namespace

cudaError_t accumulate(const Batch& batch, cudaStream_t stream) {
  if (batch.count <= 0 || batch.first_block[batch.count] <= 0) return cudaSuccess;
  accumulate_kernel<<<batch.first_block[batch.count], kThreads, 0, stream>>>(batch);
  return cudaGetLastError();
}

}  // namespace recipebench::grad_accumulate
