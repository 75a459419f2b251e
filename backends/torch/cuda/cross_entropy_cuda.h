// libtorch glue of the fused cross-entropy kernels (cross_entropy_kernels.h) for the chunked LM loss
// (model/chunked_lm_loss.cpp). Declared without CUDA headers; built only when the kernels are.
#pragma once

#include <ATen/core/Tensor.h>

namespace recipebench::torch_model {

/// Per-row softmax statistics of one chunk of logits.
struct RowStats {
  at::Tensor row_max;       ///< FP32 [rows]: the row's maximum logit
  at::Tensor sum_exp;       ///< FP32 [rows]: sum over the row of exp(logit - row_max)
  at::Tensor target_logit;  ///< FP32 [rows]: the target's logit where held, else 0
};

/// logits: BF16 [rows, vocab] contiguous, on CUDA; local_target: int64 [rows] (the target's column; any value where
/// !held); held: bool [rows]. One read of the logits. Throws c10::Error on a wrong dtype, device or shape.
RowStats cuda_row_stats(const at::Tensor& logits, const at::Tensor& local_target, const at::Tensor& held);

/// Overwrites logits (BF16 [rows, vocab], contiguous, CUDA) with d loss / d logits:
/// scale * softmax(logits) - scale * one-hot(target) where held (softmax from the given row_max and sum_exp, FP32
/// [rows]; scale FP32 [rows]). One read and one write of the logits. Throws c10::Error on wrong inputs.
void cuda_logit_grad_(at::Tensor& logits, const at::Tensor& local_target, const at::Tensor& held,
                      const at::Tensor& row_max, const at::Tensor& sum_exp, const at::Tensor& scale);

}  // namespace recipebench::torch_model
