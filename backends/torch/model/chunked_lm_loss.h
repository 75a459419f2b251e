// The output layer and the next-token cross-entropy in one pass over chunks of tokens, so that the logits of a whole
// row (vocab 248,320: 8 GB in FP32 per 8,192-token row) never exist at once (the approach of Liger Kernel's fused
// linear cross-entropy, Hsu et al. 2024, arXiv 2410.10989, written for libtorch ops).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include "plan/activation_memory.h"

namespace recipebench::torch_model {

struct TensorParallel;  // model/tensor_parallel.h

// Default tokens per chunk of lm_loss_sum(): kLmLossChunkTokens, defined once in the harness's memory plan
// (harness/plan/activation_memory.h), which sizes the loss's transients by it.

/// How a chunk's softmax, loss and logit gradient are computed.
enum class LmLossImpl {
  Auto,  ///< Fused on CUDA for BF16 (the cross-entropy kernels of cuda/cross_entropy_kernels.h, when built), else Ops
  Ops,   ///< libtorch ops: the chunk's logits copied to the FP32 compute dtype and passed over element-wise
};

/// Sum and count of the per-token next-token loss (the parts of SftLossSum, model/qwen35_moe.h).
struct LmLossSum {
  at::Tensor sum;    ///< scalar, FP32 (FP64 for FP64 hidden states): sum of -log p(target) over supervised tokens
  at::Tensor count;  ///< scalar int64: number of supervised tokens
};

/// sum over supervised tokens n of -log softmax(hidden[n] weight^T)[targets[n]], computed chunk by chunk.
///
/// hidden: [N, H] (e.g. BF16, the compute dtype of the output layer); weight: [V_local, H], the same dtype: the whole
/// output layer, or with tensor parallelism (tp not null) this rank's vocabulary rows [vocab_start, vocab_start +
/// V_local) (Megatron-LM's vocab-parallel cross-entropy, Shoeybi et al. 2019, arXiv 1909.08053, section 3: per token
/// the maximum logit and the sum of exponentials are all-reduced over TP, two collectives per chunk, the same on every
/// TP rank; hidden must then be the full sequence, the same on every rank). targets: int64 [N], full-vocabulary ids;
/// any value (e.g. -100) where mask is false. mask: [N], bool or 0/1, true where the token is supervised.
/// The log-sum-exp, the loss and the softmax are computed in FP32 (FP64 for FP64); logits and the GEMMs in the dtype
/// of hidden.
///
/// Gradient: each chunk's logit gradient (softmax - one-hot, zero on unsupervised rows) is formed right after its
/// loss and multiplied into d hidden (the chunk's rows) and d weight (accumulated in FP32 over chunks) in the same
/// forward pass; the backward only scales them by the incoming gradient. This keeps N x H (compute dtype) and
/// V_local x H (FP32) until the backward, and costs no extra GEMM; recomputing the logits in the backward instead
/// would keep only the N log-sum-exps but add a fourth [N x H x V] GEMM (~21 ms for 16,384 tokens at 35B widths on an
/// H200). With tp, d hidden is this rank's partial sum (the backward of the sequence all-gather sums it over TP).
/// The gradients are formed only when grad mode is on and hidden or weight requires a gradient; the backward may run
/// once (it is not differentiable again).
///
/// chunk_tokens: tokens per chunk (>= 1; see kLmLossChunkTokens). impl: see LmLossImpl; the fused kernels read the
/// chunk's BF16 logits twice and write them once (the gradient, in place) where the Ops path makes an FP32 copy and
/// passes over it about six times (docs/gdn-kernels.md, "Cross-entropy kernels"); both use FP32 arithmetic and round
/// the logit gradient to BF16 once. Deterministic: no atomics, chunk results combined in a fixed order. Throws
/// c10::Error for mismatched shapes or dtypes.
LmLossSum lm_loss_sum(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& targets,
                      const at::Tensor& mask, TensorParallel* tp = nullptr, int64_t vocab_start = 0,
                      int64_t chunk_tokens = kLmLossChunkTokens, LmLossImpl impl = LmLossImpl::Auto);

}  // namespace recipebench::torch_model
