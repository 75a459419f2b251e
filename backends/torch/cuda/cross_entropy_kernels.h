// Fused softmax cross-entropy passes over one chunk of BF16 logits (docs/gdn-kernels.md, "Cross-entropy
// kernels"): the chunked LM loss (model/chunked_lm_loss.h) runs them on CUDA instead of its libtorch-ops path, so a
// chunk's logits are read twice and written once in BF16 instead of being copied to FP32 and passed over six times.
// No libtorch here.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace recipebench::xent {

/// Per row r of logits [rows, vocab] (BF16, row-major, row stride `vocab` elements):
///   row_max[r] = max_j logits[r, j], sum_exp[r] = sum_j exp(logits[r, j] - row_max[r]) (FP32), and
///   target_logit[r] = logits[r, target[r]] where held[r], else 0.
/// `target`: int64 [rows], the target's column in this block of the vocabulary (any value where !held);
/// `held`: bool [rows] (1 byte each), true where the row is supervised and its target lies in this block.
/// One block per row; each thread keeps a running (max, sum) pair (Milakov & Gimelshein 2018, "Online normalizer
/// calculation for softmax", arXiv 1805.02867) and the pairs are combined in a fixed tree order: deterministic.
cudaError_t row_stats(const __nv_bfloat16* logits, int64_t rows, int64_t vocab, const int64_t* target, const bool* held,
                      float* row_max, float* sum_exp, float* target_logit, cudaStream_t stream);

/// In place over logits [rows, vocab] (BF16): the gradient of sum_r mask[r] * nll[r] with respect to the logits,
///   d[r, j] = scale[r] * exp(logits[r, j] - row_max[r]) / sum_exp[r] - (held[r] and j == target[r] ? scale[r] : 0),
/// computed in FP32 and rounded once to BF16. row_max / sum_exp: the (all-reduced, with TP) statistics of the whole
/// vocabulary; scale: FP32 [rows] (the supervised mask as 0 / 1). Deterministic (no reductions).
cudaError_t logit_grad(__nv_bfloat16* logits, int64_t rows, int64_t vocab, const int64_t* target, const bool* held,
                       const float* row_max, const float* sum_exp, const float* scale, cudaStream_t stream);

}  // namespace recipebench::xent
