// A weight gradient accumulated straight into an FP32 buffer by cuBLAS (BF16 inputs, FP32 accumulate, beta = 1),
// for the chunked LM loss's output-layer gradient (model/chunked_lm_loss.cpp; docs/backends.md, "Output layer +
// loss"): no BF16 product of the whole [vocabulary, hidden] matrix per chunk and no separate FP32 add over it
// (Megatron-LM's gradient-accumulation fusion does the same for its linear layers). Declared without CUDA headers;
// built only when the kernels are.
#pragma once

#include <ATen/core/Tensor.h>

namespace recipebench::torch_model {

/// True when cuda_accumulate_tn_ takes these tensors: acc FP32 [M, N], x BF16 [K, M], y BF16 [K, N], all contiguous
/// on one CUDA device, each dimension below 2^31.
bool cuda_accumulate_tn_supports(const at::Tensor& acc, const at::Tensor& x, const at::Tensor& y);

/// acc += x^T y (acc FP32 [M, N]; x BF16 [K, M]; y BF16 [K, N]) with one cuBLAS GEMM (cublasGemmEx, FP32 compute and
/// output, beta = 1) on the current stream: each product exact in FP32, the K sums in FP32, added to acc once.
/// Deterministic under cuBLAS's reproducible workspace setting (model/determinism.h). Throws c10::Error when
/// cuda_accumulate_tn_supports is false or cuBLAS fails.
void cuda_accumulate_tn_(at::Tensor& acc, const at::Tensor& x, const at::Tensor& y);

}  // namespace recipebench::torch_model
