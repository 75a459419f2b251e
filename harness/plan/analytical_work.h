// What the analytical mode (docs/step-time.md, "Analytical mode") prices beside each component's matrix work: the
// bytes its memory-bound kernels move (norms, residual adds, the dispatch's permutations, activations, gates) and
// the kernels it launches per layer, each at a measured host cost. Hand-worked counts of a stack of fused kernels
// (Megatron-LM with Transformer Engine, as the seed's measured rows ran); pure arithmetic, no libtorch.
#pragma once

#include "catalog/models.h"
#include "plan/compute_profile.h"

namespace recipebench {

/// Seconds of host time a kernel launch costs where the GPU waits for it: 15.7 us, measured on recipebench's torch
/// backend on one H200 (the committed seed profiles of reports/bench/h200-2026-12-02-emulate-profile and
/// h200-2026-12-03-predict/call2): the `other` component's forward time per layer that does not grow with the
/// tokens (0.345 ms, least squares over the six ranks' 384 forward passes at 4,096 and 8,192 tokens per rank) over
/// the 22 kernels that pass launches per layer (two RMSNorms of 10 eager kernels each, two residual adds). Measured
/// under --profile, which synchronises at every component's boundary: the launch cost where the GPU waits for the
/// host, so an upper figure for a stack whose host runs ahead; host time, the same on every GPU.
constexpr double kSecondsPerKernelLaunch = 0.345e-3 / 22;

/// Bytes the memory-bound kernels of component `c` move in one forward pass of chunk `s` (BF16, 2 bytes an
/// element; t = T / TP tokens of the rank; each kernel's reads and writes once, as a fused kernel moves them):
///   embedding    4 h t (a row read, written)                      other  20 h L t (two norms 4 h, two adds 6 h)
///   moe_dispatch 8 k h M t (the rows permuted to their experts' order, then sorted by local expert after the
///                exchange: each a read and a write of k h)
///   moe_combine  (6 k h + 2 h) M t (sorted back; the k slots weighted and summed: k h read, h written)
///   moe_rest     10 h M t with a gated shared expert (gate scaling 4 h, the sum 6 h), 6 h without the gate, 0
///                without a shared expert
///   moe_router   12 E M t (softmax read and written, top-k read, in FP32)
///   moe_experts  6 F k M t; moe_shared_expert 6 Fs M t; dense_mlp 6 I D t (SwiGLU: gate and up read, product
///                written)
///   gdn          2 (2 conv + 4 Dk + 3 Dv) G t (the short convolution over conv = 2 Dk + Dv channels, the L2 norms
///                of q and k, the gated norm of the output; Dk, Dv the key and value widths)
///   attention    2 (4 (Hq + Hkv) d + 3 Hq d) A t for Qwen3.5's gated attention (q / k norms and rotary, the
///                output gate), 2 (2 (Hq + Hkv) d) A t otherwise (rotary)
///   lm_head_loss 4 V t (the logits written and read by the loss)
/// For the memory-bound components (work_kind kMemory) this is their whole cost; for the matrix ones it is priced
/// beside their FLOP. 0 where the chunk has no such component.
double analytical_memory_bytes(ProfileComponent c, const ModelConfig& m, const ChunkShape& s);

/// Kernels one forward pass of component `c` launches per layer that runs it (per pass for the embedding and the
/// LM head), in a stack of fused kernels: other 4 (two norms, two residual adds), embedding 1, lm_head_loss 3 (the
/// GEMM and the fused loss's two), gdn 14 (two input projections, the convolution, two L2 norms, the gates, the
/// chunked delta rule's six, the gated norm, the output projection), attention 8 (QKV, two norms, two rotaries,
/// the fused attention, the gate, the output), moe_router 4, moe_shared_expert 5 (4 without its gate), moe_dispatch
/// 6 (counts, their all-to-all, the splits' copy to the host, the permutation's index and gather, the sort by local
/// expert), moe_experts 3 (two grouped GEMMs, SwiGLU), moe_combine 3, moe_rest 2, dense_mlp 3. A backward pass
/// launches twice its forward's (the inputs' and the weights' gradients).
int forward_kernels(ProfileComponent c, const ModelConfig& m);

}  // namespace recipebench
