// The Qwen3.5 MoE text model (docs/model.md) and the SFT loss.
#pragma once

#include "catalog/models.h"
#include "model/basic_modules.h"
#include "model/decoder_layer.h"
#include "model/options.h"
#include "model/rms_norm.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <functional>
#include <memory>
#include <vector>

namespace recipebench::torch_model {

struct TensorParallel;  // model/tensor_parallel.h

/// Sum and count of the SFT loss, kept apart so that microbatches and data-parallel ranks can be reduced
/// before the division (the loss of a step is normalised by all its supervised tokens).
struct SftLossSum {
  torch::Tensor sum;    ///< scalar, fp32 (fp64 for fp64 logits): sum of -log p(target) over supervised tokens
  torch::Tensor count;  ///< scalar int64: number of supervised tokens
};

/// Per-token cross-entropy summed over supervised tokens. The log-softmax is computed in fp32 (fp64 for fp64).
/// logits: [batch, seq, vocab]; targets: int64 [batch, seq] (the token each position must predict; any value,
/// e.g. -100, where unsupervised); loss_mask: [batch, seq], bool or 0/1, true where the target is supervised.
SftLossSum sft_loss_sum(const torch::Tensor& logits, const torch::Tensor& targets, const torch::Tensor& loss_mask);

/// sft_loss_sum(...).sum / count: mean cross-entropy over supervised tokens (0 when there are none). Scalar.
torch::Tensor sft_loss(const torch::Tensor& logits, const torch::Tensor& targets, const torch::Tensor& loss_mask);

/// Called with a module right before its forward first reads its parameters (not again when a recomputed unit
/// runs it in the backward pass): bench.overlap_param_gather waits there for the module's parameter all-gathers
/// (docs/distributed.md, "Overlap"). Empty: nothing to wait for.
using BeforeForward = std::function<void(const torch::nn::Module&)>;

/// Runs `layers` in order on h: [batch, seq, hidden] -> [batch, seq, hidden], under `recompute` (model/recompute.h):
/// Uniform recomputes groups of num_layers consecutive layers of `layers` as units, Block the first num_layers of
/// them, each on its own. A pipeline stage calls it per model chunk (Megatron-LM applies recompute per chunk).
/// positions: as DecoderLayer::forward. `before`, when set, is called with each layer before it runs (before a
/// recomputed unit: with each of its layers). Throws c10::Error when recompute.num_layers < 1 with a method set.
torch::Tensor run_decoder_layers(const std::vector<DecoderLayer>& layers, torch::Tensor h,
                                 const torch::Tensor& positions, const RecomputeOptions& recompute,
                                 const BeforeForward& before = {});

/// The hidden states of the embedding: input_ids int64 [batch, seq] -> [batch, seq, hidden]; with tensor parallel
/// (tp not null) a vocab-parallel lookup of this rank's vocabulary slice, reduce-scattered to its sequence shard
/// [batch, seq / TP, hidden] (model/tensor_parallel.h). Throws c10::Error for ids that are not 2-D.
torch::Tensor embed_hidden(TokenEmbedding embed_tokens, const torch::Tensor& input_ids, TensorParallel* tp);

/// The output layer and the next-token SFT loss of rows from their final-normed hidden states `normed`
/// ([batch, seq, hidden], or this rank's sequence shard [batch, seq / TP, hidden] with tensor parallel, where the
/// output layer is vocab-parallel and the cross-entropy too: the full logits are never gathered). The output layer
/// and the loss run in chunks of tokens with their gradients formed in the same pass (lm_loss_sum,
/// model/chunked_lm_loss.h): no chunk holds more than kLmLossChunkTokens rows of logits. Same semantics as
/// sft_loss_sum on the logits. input_ids int64 [batch, seq]; loss_mask [batch, seq] bool or 0/1. Throws c10::Error
/// for mismatched shapes or seq < 2. fused_kernels false: the cross-entropy in libtorch ops (LmLossImpl::Ops).
SftLossSum head_loss_sum(Projection lm_head, const torch::Tensor& normed, const torch::Tensor& input_ids,
                         const torch::Tensor& loss_mask, TensorParallel* tp, bool fused_kernels = true);

/// Decoder stack (Hugging Face Qwen3_5MoeTextModel): embed_tokens.weight [vocab, hidden], layers.<i>.*,
/// norm.weight [hidden] (zero-centred final RMSNorm).
struct TextModelImpl : torch::nn::Module {
  explicit TextModelImpl(const ModelConfig& cfg, const KernelOptions& opt = {});

  /// input_ids: int64 [batch, seq] -> final-normed hidden states [batch, seq, hidden] (dtype of the parameters);
  /// positions: int64 [seq] or [batch, seq], default 0..seq-1. Layers run under `recompute` (model/recompute.h).
  torch::Tensor forward(const torch::Tensor& input_ids, const torch::Tensor& positions = {});

  /// Activation recompute of the decoder layers (from KernelOptions::recompute; may be changed between steps).
  RecomputeOptions recompute;

  TokenEmbedding embed_tokens{nullptr};
  torch::nn::ModuleList layers{nullptr};
  std::vector<DecoderLayer> decoder_layers;  ///< the same modules as `layers`, typed
  RMSNorm norm{nullptr};
  /// Tensor parallelism with sequence parallelism (model/tensor_parallel.h); null without. With it the embedding is
  /// vocab-parallel and forward returns this rank's sequence shard [batch, seq / TP, hidden].
  std::shared_ptr<TensorParallel> tp;
};
TORCH_MODULE(TextModel);

/// Qwen3.5 MoE causal LM with an untied output layer (Hugging Face Qwen3_5MoeForCausalLM):
/// named_parameters() gives Hugging Face's names, e.g. "model.embed_tokens.weight",
/// "model.layers.0.linear_attn.in_proj_qkv.weight", "model.layers.3.self_attn.q_proj.weight",
/// "model.layers.0.mlp.experts.gate_up_proj", "model.norm.weight", "lm_head.weight".
/// (The multimodal checkpoints prefix the text model with "model.language_model."; MTP layers are not built.)
/// Parameters are created in fp32 on the CPU (on the meta device under MetaParams, model/param_factory.h); use
/// ->to(device, dtype) afterwards.
struct Qwen35MoeForCausalLMImpl : torch::nn::Module {
  explicit Qwen35MoeForCausalLMImpl(const ModelConfig& cfg, const KernelOptions& opt = {});

  /// input_ids: int64 [batch, seq] -> logits [batch, seq, vocab] (dtype of the parameters).
  torch::Tensor forward(const torch::Tensor& input_ids, const torch::Tensor& positions = {});

  /// Next-token SFT loss of rows: position t predicts input_ids[:, t + 1], counted where loss_mask[:, t + 1]
  /// is set (loss_mask marks the supervised tokens of the row, e.g. the response; loss_mask[:, 0] is unused).
  /// input_ids: int64 [batch, seq]; loss_mask: [batch, seq] bool or 0/1.
  SftLossSum sft_loss_sum(const torch::Tensor& input_ids, const torch::Tensor& loss_mask);
  /// sft_loss_sum's sum / count (scalar).
  torch::Tensor sft_loss(const torch::Tensor& input_ids, const torch::Tensor& loss_mask);

  TextModel model{nullptr};
  Projection lm_head{nullptr};
  ModelConfig cfg;
  /// Tensor parallelism with sequence parallelism (model/tensor_parallel.h); null without. With it lm_head holds
  /// this rank's vocabulary rows, forward returns the logits of that slice [batch, seq, vocab / TP], and
  /// sft_loss_sum uses the vocab-parallel cross-entropy (the same loss on every TP rank).
  std::shared_ptr<TensorParallel> tp;
  bool fused_kernels = true;  ///< KernelOptions::fused_kernels, for the LM loss (head_loss_sum)
};
TORCH_MODULE(Qwen35MoeForCausalLM);

}  // namespace recipebench::torch_model
