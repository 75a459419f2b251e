#include "cuda/param_init_kernels.h"

namespace recipebench::init {

namespace {

__global__ void fill_kernel(float* out, int64_t first, int64_t count, ShardFill f) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x) {
    int64_t rest = first + i, base = 0, index0 = 0;
    for (int d = f.dims - 1; d >= 0; --d) {  // local multi-index -> global offset
      const int64_t local = rest % f.local_size[d];
      rest /= f.local_size[d];
      base += f.global_index[d][local] * f.global_stride[d];
      if (d == 0) index0 = local;
    }
    const int64_t expert = f.dims >= 2 ? f.global_index[0][index0] : 0;
    const ElementStream s = element_stream(f.seed, f.name_hash, f.per_expert, base, expert, f.global_stride[0]);
    out[i] = draw(f.kind, f.a, f.b, s.key, s.counter);
  }
}

}  // namespace

cudaError_t fill_shard_values(float* out, int64_t first, int64_t count, const ShardFill& fill, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  fill_kernel<<<static_cast<unsigned>(blocks < 65536 ? blocks : 65536), kThreads, 0, stream>>>(out, first, count, fill);
  return cudaGetLastError();
}

}  // namespace recipebench::init
