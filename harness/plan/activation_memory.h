// Activation memory of the torch backend's model per microbatch: what autograd keeps between a layer's forward and
// its backward pass, derived from the backend's code (formulas and sources: docs/memory-plan.md). No libtorch here.
#pragma once

#include <cstdint>
#include <string>

#include <vector>

#include "catalog/models.h"
#include "recipe/enums.h"

namespace recipebench {

/// Bytes of one FP32 value: the backend's compute dtype for norms, softmax and the delta rule, and of master
/// weights and gradients.
constexpr double kF32 = 4;

/// The torch backend's implementations that decide its memory, as they changed over its history, so that a run
/// record is planned with the code that measured it (docs/memory-plan.md, "Five implementations").
enum class TorchMemoryImpl {
  /// Before main's merge b44795b (2026-11-30, commits 58aa5da, 7dee485, 8819ab2): the loss over the whole row's
  /// logits (log_softmax, or VocabParallelCrossEntropy with TP), the chunked delta rule in libtorch ops, and an
  /// FP32 copy of each gradient when it is accumulated.
  kFullLogits,
  /// Since: the chunked LM loss (model/chunked_lm_loss.h), the GDN CUDA kernels for BF16 on CUDA
  /// (cuda/gdn_autograd.h; libtorch ops on CPU and for FP32), gradients added into FP32 without a copy.
  kChunkedLoss,
  /// Since commit f2976a7 (2026-11-30): as kChunkedLoss, and on CUDA with BF16 the chunk's softmax and logit
  /// gradient computed in place over its BF16 logits by the fused cross-entropy kernels
  /// (cuda/cross_entropy_kernels.h): no FP32 copy of the chunk's logits.
  kFusedLoss,
  /// Since 2026-12-01 (docs/memory-plan.md's table names the commit): as kFusedLoss, and the GDN CUDA kernels keep
  /// their forward's intermediates for the backward (cuda/gdn_kernels.h saved_bytes: the cumulative gates, T, W,
  /// v_new and the BF16 chunk states) instead of recomputing them.
  kGdnSaved,
  /// Since commit 1eca4b9 (2026-12-01): as kGdnSaved, and the fused loss adds each chunk's output-weight gradient
  /// into the FP32 buffer with one cuBLAS GEMM (cuda/gemm_accumulate_cuda.h): no BF16 [vocabulary / TP, hidden]
  /// product per chunk. The current code.
  kGemmAccumulate,
};

/// The implementation of the current code: what `run --dry-run`, `validate` and the run's memory check plan.
constexpr TorchMemoryImpl kCurrentTorchMemoryImpl = TorchMemoryImpl::kGemmAccumulate;

/// The shapes one microbatch runs with on one rank.
struct MicrobatchShape {
  int64_t tokens = 0;      ///< tokens of the microbatch's full sequence(s): rows x row_tokens
  int64_t rows = 1;        ///< rows of the microbatch
  int tp = 1;              ///< tensor-parallel degree (sequence parallel when > 1)
  double param_bytes = 2;  ///< bytes of the parameters' dtype (BF16 = 2 on GPU, FP32 = 4 on CPU)
  bool sdpa = true;        ///< fused attention (libtorch 2.x on CUDA); false: the explicit [seq, seq] softmax
  TorchMemoryImpl impl = kCurrentTorchMemoryImpl;  ///< the backend's code the plan models
  bool fused_kernels = true;  ///< bench.kernels: fused; false (ops): libtorch operations everywhere
  /// bench.ep_dispatch fixed_capacity with EP > 1: the rows each MoE layer's local experts run on and keep for the
  /// backward, the P blocks of C received (EP x max_tokens_per_gpu / TP x top_k, padding included); 0: the mean
  /// load, top_k x the rank's tokens (host_splits, or EP 1).
  int64_t ep_capacity_rows = 0;
  /// True when the modelled code is `v` or later (the values are in the order of the code's history).
  bool since(TorchMemoryImpl v) const { return impl >= v; }
  /// True when the fused CUDA kernels run: on CUDA (sdpa) with BF16 parameters and bench.kernels fused.
  bool cuda_kernels() const { return sdpa && param_bytes == 2 && fused_kernels; }
  /// True when the delta rule runs in the GDN CUDA kernels: since kChunkedLoss, with cuda_kernels().
  bool gdn_kernels() const { return since(TorchMemoryImpl::kChunkedLoss) && cuda_kernels(); }
  /// True when the loss runs the fused cross-entropy kernels: since kFusedLoss, with cuda_kernels().
  bool fused_loss() const { return since(TorchMemoryImpl::kFusedLoss) && cuda_kernels(); }
  /// True when the GDN CUDA kernels keep their forward's intermediates: since kGdnSaved, with cuda_kernels().
  bool gdn_saved() const { return since(TorchMemoryImpl::kGdnSaved) && cuda_kernels(); }
  /// True when the fused loss adds its weight gradient by cuBLAS (no BF16 product): since kGemmAccumulate, with
  /// cuda_kernels().
  bool loss_weight_gemm() const { return since(TorchMemoryImpl::kGemmAccumulate) && cuda_kernels(); }
};

/// Tokens per chunk of the torch backend's chunked LM loss (backends/torch/model/chunked_lm_loss.h lm_loss_sum reads
/// it from here; the memory plan sizes the loss's transients by it). Per chunk the transient memory is chunk x vocab
/// x (4 B FP32 probabilities + 2 B compute-dtype logits or gradient): 6 GB at 4,096 tokens and vocab 248,320 (against
/// 16 GB of FP32 logits plus their log-softmax per 8,192-token row on the unchunked path). Each chunk adds one pass
/// over the FP32 weight-gradient accumulator (vocab x hidden x 4 B read + write, plus the chunk's BF16 product: about
/// 6 GB, ~1.3 ms on an H200); 4,096 keeps that under 5 ms for 16,384 tokens while the chunk's GEMMs ([4,096 x
/// hidden] x [hidden x vocab]) stay large enough to run at full tensor-core rate.
constexpr int64_t kLmLossChunkTokens = 4096;

/// Bytes one decoder layer keeps for its backward pass without recompute (mixer, both RMSNorms, MoE block): the
/// torch backend's code for Qwen3.5, transformer_layer_activation_bytes for a config.json family.
double layer_activation_bytes(const ModelConfig& m, int64_t layer, const MicrobatchShape& s);

/// Bytes of layer `layer`'s activations that selective recompute (Megatron-LM's --recompute-granularity selective,
/// its default module core_attn) frees: the attention core's own tensors, kept again by recomputing the core from
/// its inputs in the backward pass. Per full-attention layer: the query, key and value heads repeated to the query
/// heads and the attention's output (4 x [T x heads / TP x head_dim] in the dtype; Qwen3.5), or the core's output
/// and its log-sum-exp (a config.json transformer), plus the explicit [seq, seq] softmax where no fused attention
/// runs. 0 for a Gated DeltaNet layer (no attention core). Bytes; docs/memory-plan.md, "Recompute".
double attention_core_activation_bytes(const ModelConfig& m, int64_t layer, const MicrobatchShape& s);
/// Bytes of layer `layer`'s activations that selective recompute of `modules` (layout.recompute.modules,
/// Megatron-Core's --recompute-modules) frees, each freed tensor coming back in the backward pass
/// (docs/memory-plan.md, "Analytical plan"):
///   core_attn  attention_core_activation_bytes (every family);
///   layernorm  a config.json family's MoE layer: the pre-MLP norm's output, the MoE block's input (p h per token /
///              TP): Megatron-Core checkpoints the norms that are separate modules and frees their outputs; the
///              attention's norm and a dense MLP's are fused into the following linear (Transformer Engine's
///              LayerNormLinear) and keep theirs;
///   moe_act    a config.json family's MoE layer: each routed slot's activation output, fc2's input (k p F per token
///              / TP; Megatron-Core's experts.py, activation_recompute).
/// Other modules free nothing here (the plan names them not modelled), and layernorm / moe_act free nothing on the
/// torch backend's Qwen3.5, which does not run them.
double selective_recompute_freed_bytes(const ModelConfig& m, int64_t layer, const MicrobatchShape& s,
                                       const std::vector<RecomputeModule>& modules);
/// True when selective_recompute_freed_bytes prices module `r` for a model of `family` (core_attn always;
/// layernorm and moe_act for a config.json family).
bool recompute_module_priced(ModelFamily family, RecomputeModule r);
/// A config.json family's decoder layer (ModelFamily::kTransformer), which no recipebench backend runs: the
/// standard per-layer count of Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
/// Models" (arXiv 2205.05198, section 4: 34 s b h + 5 a s^2 b bytes per layer, / t with tensor and sequence
/// parallelism), term by term for the layer's kinds, with p = s.param_bytes per element, per token and / TP:
///   norms      2 p h (the two RMSNorms' inputs; Korthikanti's 4 s b h)
///   GQA        p h + p (q + 2 kv) + p q + 4 Hq (the projections' input, Q K V, the attention output = o_proj's
///              input, the fused kernel's FP32 log-sum-exp per head; no [s x s] scores: fused attention)
///   MLA        p h + 2 p q_lora + p (2 kv_lora + rope) + p Hq (2 d_qk + 2 d_v) + 4 Hq (the input, the latent q and
///              its norm, the latent kv with its rope part and norm, Q K V, the output, the log-sum-exp)
///   dense MLP  p h + 3 p I (the input, the gate and up outputs, their product = down_proj's input)
///   MoE        p h + 4 E + k (p h + 3 p F) + 3 p Fs (the input, the FP32 router probabilities, per routed slot
///              the dispatched row = fc1's input, fc1's gate and up outputs and the activation's output = fc2's
///              input; the shared expert's three). No per-slot output: Megatron-Core (since 0.13) multiplies the
///              routing probabilities inside the experts' activation, so the combine keeps no expert output
///              (docs/memory-plan.md, "Analytical plan")
/// Assumed: no dropout (Korthikanti's 1-byte masks and the 5 a s / h score terms are gone with fused attention),
/// balanced routing (each rank's experts receive k x its tokens), every layer kept (no recompute; the plan's
/// recompute settings apply on top as for the torch backend).
double transformer_layer_activation_bytes(const ModelConfig& m, int64_t layer, const MicrobatchShape& s);
/// Bytes of the Gated DeltaNet mixer alone (inputs, projections, conv, chunked delta rule, gated norm).
double gdn_activation_bytes(const ModelConfig& m, const MicrobatchShape& s);
/// Bytes of the gated attention mixer alone.
double attention_activation_bytes(const ModelConfig& m, const MicrobatchShape& s);
/// Bytes of the MoE block (router, routed experts at the mean load of top_k x tokens, or on s.ep_capacity_rows rows
/// with the fixed-capacity dispatcher, shared expert).
double moe_activation_bytes(const ModelConfig& m, const MicrobatchShape& s);

/// The output layer's loss, transient: bytes alive at the peak of the loss's forward (`forward`) or at the start
/// of its backward (`backward`), beyond the saved activations. kChunkedLoss: the gathered input and the gradients
/// formed in the forward (d hidden [T x h], d weight [V / TP x h] FP32) plus one chunk's logits, FP32
/// probabilities and their gradient; kFullLogits: the logits of this rank's vocabulary slice (the parameters'
/// dtype) and their FP32 copies, log-softmax (TP 1) or the vocab-parallel softmax (TP > 1).
struct LossMemory {
  double forward = 0;
  double backward = 0;
  std::string forward_term, backward_term;  ///< what they are, e.g. "loss forward (one 4,096-token chunk ...)"
};
LossMemory loss_memory(const ModelConfig& m, const MicrobatchShape& s);

/// Bytes the last stage keeps for the output layer: the final RMSNorm (sequence shard) and, kFullLogits only,
/// lm_head's input (the gathered sequence; the chunked loss forms its gradients in the forward instead).
double output_layer_activation_bytes(const ModelConfig& m, const MicrobatchShape& s);

/// Bytes a recomputed unit keeps in the forward pass: its input hidden states (the sequence shard).
double recompute_input_bytes(const ModelConfig& m, const MicrobatchShape& s);

}  // namespace recipebench
