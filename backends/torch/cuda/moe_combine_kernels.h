// Fused combine of the routed experts (model/moe.h, combine_slots; docs/backends.md, "MoE combine"): each token's
// output is the weighted sum of its k expert rows, read straight from the experts' output in sorted order through
// the inverse permutation, where the libtorch-ops path gathers the rows into a [tokens, k, hidden] copy, multiplies
// it by the weights into another and sums that. The backward writes each expert row's gradient in sorted order and
// each routing weight's gradient (a dot product over hidden) in one pass. No libtorch here.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace recipebench::moe_combine {

/// Slots per token the kernels take (top-k); Qwen3.5's MoE routes to 8 (35B-A3B) or 10 (397B-A17B).
constexpr int kMaxSlots = 16;

/// True when the kernels take `k` slots per token and rows of `hidden` BF16 elements (a multiple of 8: rows move
/// 16 bytes at a time; the caller passes 16-byte aligned, contiguous tensors).
inline bool supports(int64_t k, int64_t hidden) { return k >= 1 && k <= kMaxSlots && hidden > 0 && hidden % 8 == 0; }

/// out[n, :] = bf16(sum_{j < k} w[n, j] ys[inv[n k + j], :]) for n < tokens: ys BF16 [tokens k, hidden] (expert rows
/// in sorted order), inv int64 [tokens k] (a permutation: the sorted position of slot j of token n), w BF16
/// [tokens, k], out BF16 [tokens, hidden]. FP32 products, summed in slot order, one rounding (deterministic). One
/// block per token. Returns the launch's error.
cudaError_t combine_forward(const __nv_bfloat16* ys, const int64_t* inv, const __nv_bfloat16* w, __nv_bfloat16* out,
                            int64_t tokens, int k, int64_t hidden, cudaStream_t stream);

/// The backward of combine_forward for g = d loss / d out (BF16 [tokens, hidden]):
///   grad_ys[inv[n k + j], :] = bf16(w[n, j] g[n, :])   (every row written once: inv is a permutation)
///   grad_w[n, j] = bf16(sum_h g[n, h] ys[inv[n k + j], h])   (FP32, a fixed reduction order: deterministic)
/// grad_ys BF16 [tokens k, hidden], grad_w BF16 [tokens, k]. Returns the launch's error.
cudaError_t combine_backward(const __nv_bfloat16* ys, const int64_t* inv, const __nv_bfloat16* w,
                             const __nv_bfloat16* g, __nv_bfloat16* grad_ys, __nv_bfloat16* grad_w, int64_t tokens,
                             int k, int64_t hidden, cudaStream_t stream);

}  // namespace recipebench::moe_combine
