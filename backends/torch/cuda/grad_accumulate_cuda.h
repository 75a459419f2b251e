// libtorch glue of the multi-tensor gradient accumulation kernel (grad_accumulate_kernels.h) for
// MixedPrecisionAdam::accumulate_grads (optim/adam.h). Declared without CUDA headers; built only with the kernels.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace recipebench::torch_model {

/// True when cuda_accumulate_grads takes this pair: `acc` FP32 and contiguous on a CUDA device; `grad` BF16 or FP32,
/// contiguous, of acc's number of elements, on acc's device.
bool cuda_accumulate_supports(const at::Tensor& acc, const at::Tensor& grad);

/// For every i: acc[i] = grads[i] when overwrite[i] (the step's first microbatch), else acc[i] += grads[i], with
/// the gradient widened to FP32 exactly and one FP32 add per element: bitwise what acc.copy_(g) / acc.add_(g) give.
/// One launch per 96 tensors, on the current CUDA stream; nothing is synchronised. The three vectors are of one
/// length. Throws c10::Error when a pair is not supported (cuda_accumulate_supports) or a launch fails.
void cuda_accumulate_grads(const std::vector<at::Tensor>& acc, const std::vector<at::Tensor>& grads,
                           const std::vector<bool>& overwrite);

}  // namespace recipebench::torch_model
