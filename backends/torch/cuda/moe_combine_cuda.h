// libtorch glue of the fused MoE combine kernels (moe_combine_kernels.h) for the routed experts (model/moe.cpp,
// combine_slots). Declared without CUDA headers; built only when the kernels are.
#pragma once

#include <ATen/core/Tensor.h>

namespace recipebench::torch_model {

/// True when the fused kernels take these tensors: ys BF16 [tokens k, hidden] (hidden a multiple of 8), inv int64
/// [tokens k], weights BF16 [tokens, k] with k <= 16, all on one CUDA device.
bool cuda_moe_combine_supports(const at::Tensor& ys, const at::Tensor& inv, const at::Tensor& weights);

/// combine_slots (model/moe.h) on the fused kernels, differentiable in ys and weights: out[n] = sum_j weights[n, j]
/// ys[inv[n k + j]], BF16 [tokens, hidden]. FP32 products summed in slot order, one BF16 rounding; the backward's
/// ys gradient is bf16(w g) (the ops path's bits) and the weights' gradient an FP32 dot product in a fixed order,
/// rounded once. Deterministic. Throws c10::Error when cuda_moe_combine_supports is false or a launch fails.
at::Tensor cuda_moe_combine(const at::Tensor& ys, const at::Tensor& inv, const at::Tensor& weights);

}  // namespace recipebench::torch_model
