// One Qwen3.5 MoE decoder layer (docs/model.md).
#pragma once

#include "catalog/models.h"
#include "model/gated_attention.h"
#include "model/gated_deltanet.h"
#include "model/moe.h"
#include "model/options.h"
#include "model/rms_norm.h"

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>

namespace recipebench::torch_model {

/// Pre-norm decoder layer (Hugging Face Qwen3_5MoeDecoderLayer):
///   h = x + Mixer(input_layernorm(x));  out = h + mlp(post_attention_layernorm(h))
/// Mixer is GatedAttention ("self_attn") when cfg.is_full_attention(layer_index), else GatedDeltaNet
/// ("linear_attn"); the other handle is empty. Norms are zero-centred RMSNorms [hidden]; mlp is a SparseMoeBlock.
struct DecoderLayerImpl : torch::nn::Module {
  DecoderLayerImpl(const ModelConfig& cfg, int64_t layer_index, const KernelOptions& opt = {});

  /// x: [batch, seq, hidden] -> [batch, seq, hidden]; positions (attention layers only): int64 [seq] or
  /// [batch, seq], default 0..seq-1.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& positions = {});

  bool is_full_attention() const { return !self_attn.is_empty(); }

  RMSNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr};
  GatedAttention self_attn{nullptr};
  GatedDeltaNet linear_attn{nullptr};
  SparseMoeBlock mlp{nullptr};
  int64_t layer_index;
};
TORCH_MODULE(DecoderLayer);

}  // namespace recipebench::torch_model
