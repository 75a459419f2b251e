// libtorch glue of the fused gated RMSNorm kernels (gated_norm_kernels.h) for the Gated DeltaNet mixer
// (model/rms_norm.cpp, gated_rms_norm). Declared without CUDA headers; built only when the kernels are.
#pragma once

#include <ATen/core/Tensor.h>

namespace recipebench::torch_model {

/// True when the fused kernels take these tensors: x, z BF16 [..., dim] of the same shape and w BF16 [dim] on one
/// CUDA device, dim in {64, 128, 256}.
bool cuda_gated_norm_supports(const at::Tensor& x, const at::Tensor& z, const at::Tensor& w);

/// gated_rms_norm (model/rms_norm.h) on the fused kernels, differentiable in x, z and w: x, z BF16 [..., dim], w BF16
/// [dim] -> BF16 [..., dim]. FP32 arithmetic, one BF16 rounding of the output and of each input gradient; the weight
/// gradient is summed in FP32 over fixed per-warp partials, then rounded to w's dtype (deterministic). Throws
/// c10::Error when cuda_gated_norm_supports is false or a launch fails.
at::Tensor cuda_gated_norm(const at::Tensor& x, const at::Tensor& z, const at::Tensor& w, double eps);

}  // namespace recipebench::torch_model
