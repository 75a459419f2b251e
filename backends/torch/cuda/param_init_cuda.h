// libtorch glue of the CUDA parameter fill (param_init_kernels.h) for model/param_init.cpp's init_shard. Declared
// without CUDA headers; built only when the kernels are.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "model/init_draw.h"

namespace recipebench::torch_model {

/// Fills `local` (CUDA, contiguous, 1..4-D, any floating dtype) with its initial values on its device: element
/// (i_0, ..., i_{n-1}) gets draw(kind, a, b, key, counter) (model/init_draw.h) for the global offset
/// sum_d global_index[d][i_d] * global_stride[d], computed in float64 and rounded to float32, then to local's dtype,
/// in blocks of at most 64M elements (one float32 block on the device). per_expert: as model/param_init.h's
/// InitRule. Throws c10::Error for a shape it does not take or a failed launch.
void cuda_init_shard(at::Tensor& local, const std::vector<std::vector<int64_t>>& global_index,
                     const std::vector<int64_t>& global_stride, init::DrawKind kind, double a, double b,
                     bool per_expert, uint64_t seed, uint64_t name_hash);

}  // namespace recipebench::torch_model
