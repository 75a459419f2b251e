// The CUDA fill of a rank's parameter shard with its initial values (model/param_init.h, init_shard;
// docs/initialization.md): each thread computes one element from its global index by the arithmetic of
// model/init_draw.h, the same steps as the CPU fill. No libtorch here.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "model/init_draw.h"

namespace recipebench::init {

/// Dimensions a shard may have (parameters are 1- to 3-D).
constexpr int kMaxInitDims = 4;

/// Where a shard's elements lie in the global parameter, and their distribution.
struct ShardFill {
  int dims = 0;                                    ///< 1..kMaxInitDims
  int64_t local_size[kMaxInitDims] = {};           ///< the shard's shape (row-major, contiguous)
  int64_t global_stride[kMaxInitDims] = {};        ///< the global tensor's row-major strides, elements
  const int64_t* global_index[kMaxInitDims] = {};  ///< device arrays: the global index of each local index, per dim
  DrawKind kind = DrawKind::Constant;
  double a = 0, b = 0;
  bool per_expert = false;  ///< dim 0 indexes experts: one stream per expert, counters within the expert
  uint64_t seed = 0, name_hash = 0;
};

/// out[i] = the value of the shard's element first + i (row-major local index) for i < count, float32 on the device.
/// Returns the launch's error.
cudaError_t fill_shard_values(float* out, int64_t first, int64_t count, const ShardFill& fill, cudaStream_t stream);

}  // namespace recipebench::init
