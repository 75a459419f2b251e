// Activation memory of the torch backend's model per microbatch: what autograd keeps between a layer's forward and
// its backward pass, derived from the backend's code (formulas and sources: docs/memory-plan.md). No libtorch here.
#pragma once

#include <cstdint>

#include "catalog/models.h"

namespace recipebench {

/// The shapes one microbatch runs with on one rank.
struct MicrobatchShape {
  int64_t tokens = 0;      ///< tokens of the microbatch's full sequence(s): rows x row_tokens
  int64_t rows = 1;        ///< rows of the microbatch
  int tp = 1;              ///< tensor-parallel degree (sequence parallel when > 1)
  double param_bytes = 2;  ///< bytes of the parameters' dtype (BF16 = 2 on GPU, FP32 = 4 on CPU)
  bool sdpa = true;        ///< fused attention (libtorch 2.x on CUDA); false: the explicit [seq, seq] softmax
};

/// Bytes one decoder layer keeps for its backward pass without recompute (mixer, both RMSNorms, MoE block).
double layer_activation_bytes(const ModelConfig& m, int64_t layer, const MicrobatchShape& s);
/// Bytes of the Gated DeltaNet mixer alone (inputs, projections, conv, chunked delta rule, gated norm).
double gdn_activation_bytes(const ModelConfig& m, const MicrobatchShape& s);
/// Bytes of the gated attention mixer alone.
double attention_activation_bytes(const ModelConfig& m, const MicrobatchShape& s);
/// Bytes of the MoE block (router, routed experts at the mean load of top_k x tokens, shared expert).
double moe_activation_bytes(const ModelConfig& m, const MicrobatchShape& s);

/// The output layer's loss, transient: bytes alive at the peak of the loss's forward (`forward`) or at the start
/// of its backward (`backward`), beyond the saved activations: the logits of this rank's vocabulary slice (the
/// parameters' dtype) and their FP32 copies, log-softmax (TP 1) or the vocab-parallel softmax (TP > 1).
struct LossMemory {
  double forward = 0;
  double backward = 0;
};
LossMemory loss_memory(const ModelConfig& m, const MicrobatchShape& s);

/// Bytes the last stage keeps for the output layer: the final RMSNorm (sequence shard) and lm_head's input
/// (the gathered sequence).
double output_layer_activation_bytes(const ModelConfig& m, const MicrobatchShape& s);

/// Bytes a recomputed unit keeps in the forward pass: its input hidden states (the sequence shard).
double recompute_input_bytes(const ModelConfig& m, const MicrobatchShape& s);

}  // namespace recipebench
