// libtorch glue of the fused causal depthwise conv1d + SiLU kernels (conv_silu_kernels.h) for the Gated DeltaNet
// mixer (model/gated_deltanet.cpp). Declared without CUDA headers; built only when the kernels are.
#pragma once

#include <ATen/core/Tensor.h>

namespace recipebench::torch_model {

/// True when the fused kernels take these tensors: x BF16 [batch, seq, channels] and w BF16 [channels, 1, K] on the
/// same CUDA device, K in 2..4.
bool cuda_conv_silu_supports(const at::Tensor& x, const at::Tensor& w);

/// causal_depthwise_conv1d_silu (model/gated_deltanet.h) on the fused kernels, differentiable in x and w: x BF16
/// [batch, seq, channels], w BF16 [channels, 1, K] -> BF16 [batch, seq, channels]. FP32 accumulation, one BF16
/// rounding of each output and input gradient; the weight gradient is summed in FP32 over fixed tiles, then rounded
/// to w's dtype (deterministic). Throws c10::Error when cuda_conv_silu_supports is false or a launch fails.
at::Tensor cuda_conv_silu(const at::Tensor& x, const at::Tensor& w);

}  // namespace recipebench::torch_model
