// One pipeline rank's part of the Qwen3.5 MoE causal LM (pipeline parallelism): the embedding on the first
// pipeline rank, the decoder layers of each of its model chunks (virtual stages), the final norm, output layer and
// loss on the last pipeline rank.
#pragma once

#include "model/qwen35_moe.h"

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace recipebench::torch_model {

/// Decoder layers [first, first + count) of one model chunk.
struct ChunkLayers {
  int64_t first = 0;
  int64_t count = 0;
};

/// A pipeline rank's modules, shared with (not copied from) the one-rank model they were taken from, so they start
/// with its initial values. Chunk v of pipeline rank p is global stage v x PP + p (Megatron-LM's virtual pipeline
/// order); the embedding belongs to chunk 0 of the first rank, the final norm and lm_head to chunk VPP-1 of the last.
/// parameters() lists the stage's parameters in the one-rank model's parameters() order (embedding, layers in
/// increasing index, norm, lm_head). With PP = 1 and one chunk of all layers it computes what the model computes.
struct PipelineStageImpl : torch::nn::Module {
  /// chunks: the layers of each model chunk of this rank (layout/rank_map.h's LayerRange, in virtual-stage order);
  /// first / last: this is the first / last pipeline rank. Throws c10::Error when a chunk's layers are outside the
  /// model or no chunk is given.
  PipelineStageImpl(const Qwen35MoeForCausalLM& full, const std::vector<ChunkLayers>& chunks, bool first, bool last);

  int num_chunks() const { return static_cast<int>(chunk_layers.size()); }
  /// The chunk takes token ids (the embedding is on it): chunk 0 of the first pipeline rank.
  bool takes_ids(int chunk) const { return chunk == 0 && !embed_tokens.is_empty(); }
  /// The chunk ends with the final norm, lm_head and loss: chunk VPP-1 of the last pipeline rank.
  bool has_head(int chunk) const { return chunk == num_chunks() - 1 && !lm_head.is_empty(); }

  /// The parameters model chunk `chunk`'s passes use: its decoder layers', the embedding's on the ids chunk, the
  /// final norm's and lm_head's on the head chunk. Each of parameters() is in exactly one chunk's list.
  std::vector<torch::Tensor> chunk_parameters(int chunk) const;

  /// The chunk's decoder layers (under `recompute`, per chunk): input is int64 ids [rows, seq] when
  /// takes_ids(chunk), else the previous stage's hidden states [rows, seq, hidden]; returns the hidden states
  /// [rows, seq, hidden] after the chunk's last layer (before the final norm), dtype of the parameters. With
  /// tensor parallel the hidden states are [rows, seq / TP, hidden] (sequence parallel).
  torch::Tensor forward(int chunk, const torch::Tensor& input, const torch::Tensor& positions = {});

  /// Final norm, lm_head and the next-token SFT loss sum of the rows (as Qwen35MoeForCausalLM::sft_loss_sum):
  /// hidden [rows, seq, hidden] from forward(last chunk); ids int64 [rows, seq]; loss_mask [rows, seq] bool or 0/1.
  /// Only on the last pipeline rank (throws c10::Error elsewhere).
  SftLossSum loss_sum(const torch::Tensor& hidden, const torch::Tensor& ids, const torch::Tensor& loss_mask);

  RecomputeOptions recompute;  ///< from the model's TextModel
  /// Called with the embedding, each decoder layer, the final norm and lm_head right before their forward reads
  /// their parameters (bench.overlap_param_gather: the wait for their all-gathers, optim/optimizer_builder.h
  /// wait_for_param_gathers); empty: nothing.
  BeforeForward before_forward;
  int64_t hidden_size = 0;     ///< width of the hidden states passed between stages
  bool fused_kernels = true;   ///< the full model's KernelOptions::fused_kernels (the LM loss)
  /// The model's tensor-parallel group (null without TP): the stage's layers are the model's TP shards, the
  /// hidden states between stages are this rank's sequence shard [rows, seq / TP, hidden] (sequence parallel),
  /// the embedding and output layer vocab-parallel.
  std::shared_ptr<TensorParallel> tp;
  TokenEmbedding embed_tokens{nullptr};
  std::vector<std::vector<DecoderLayer>> chunk_layers;
  RMSNorm norm{nullptr};
  Projection lm_head{nullptr};
};
TORCH_MODULE(PipelineStage);

}  // namespace recipebench::torch_model
