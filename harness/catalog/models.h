// Model registry: the Qwen3.5 MoE text-model family (docs/model.md) and its parameter counts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace recipebench {

/// Architecture of one Qwen3.5 MoE text model. All sizes are element counts (not bytes).
/// Layer i is full (gated) attention when (i + 1) % full_attention_interval == 0, otherwise Gated DeltaNet.
/// Source: Hugging Face transformers `models/qwen3_5_moe` configuration and the model cards.
struct ModelConfig {
  std::string name;         ///< registry name, e.g. "Qwen3.5-397B-A17B"
  int64_t hidden_size = 0;  ///< d_model
  int64_t num_layers = 0;   ///< decoder layers (MTP layer not included)
  int64_t full_attention_interval = 4;
  int64_t vocab_size = 248320;
  double rms_norm_eps = 1e-6;
  // Gated attention (query + output gate per head, q/k RMSNorm, partial RoPE).
  int64_t num_attention_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 256;
  int64_t rope_dims = 64;  ///< RoPE applied to the first rope_dims of head_dim
  double rope_theta = 1e7;
  // Gated DeltaNet.
  int64_t linear_num_key_heads = 0;
  int64_t linear_num_value_heads = 0;
  int64_t linear_key_head_dim = 128;
  int64_t linear_value_head_dim = 128;
  int64_t linear_conv_kernel = 4;
  int64_t gdn_chunk_size = 64;
  // Sparse MoE (every layer): routed SwiGLU experts + one sigmoid-gated shared SwiGLU expert.
  int64_t num_experts = 0;
  int64_t top_k = 0;
  int64_t expert_ffn = 0;         ///< intermediate size of a routed expert
  int64_t shared_expert_ffn = 0;  ///< intermediate size of the shared expert
  int64_t mtp_layers = 1;         ///< multi-token-prediction layers in the checkpoint (not trained, not counted)

  /// True when decoder layer `i` (0-based) is full attention.
  bool is_full_attention(int64_t i) const { return (i + 1) % full_attention_interval == 0; }
  int64_t num_full_attention_layers() const;
  int64_t num_linear_attention_layers() const { return num_layers - num_full_attention_layers(); }
  int64_t linear_key_dim() const { return linear_num_key_heads * linear_key_head_dim; }
  int64_t linear_value_dim() const { return linear_num_value_heads * linear_value_head_dim; }
  /// The same model with `layers` decoder layers (proxy runs); the attention pattern keeps its rule.
  ModelConfig with_layers(int64_t layers) const;
};

/// Parameter counts of a model, in parameters (elements).
/// `active` follows docs/metrics.md: the weight matrices one token passes through — top_k routed
/// experts, the shared expert and its gate, the router, every attention / Gated DeltaNet projection,
/// the conv1d weights and the output layer — and not the input embedding, norms or per-head scalars
/// (A_log, dt_bias). `total` counts every parameter of the decoder, embeddings and output layer
/// (all experts, norms and scalars), without the MTP layer.
struct ParamCounts {
  int64_t total = 0;
  int64_t active = 0;
  int64_t embedding = 0;
  int64_t output_layer = 0;
  int64_t attention_layer = 0;   ///< active weights of one full-attention mixer
  int64_t gdn_layer = 0;         ///< active weights of one Gated DeltaNet mixer
  int64_t moe_layer_active = 0;  ///< active weights of one MoE block (top_k experts + shared + gates)
  int64_t moe_layer_total = 0;   ///< all weights of one MoE block (all experts)
};

/// Counts parameters of `m` (see ParamCounts). For Qwen3.5-397B-A17B, active == 16,331,407,360. Throws
/// std::overflow_error when a sum or product would pass 2^63 - 1 (never a negative or wrapped count).
ParamCounts count_params(const ModelConfig& m);

/// The registry: Qwen3.5-397B-A17B, -122B-A10B, -35B-A3B and the tiny CPU test member.
const std::vector<ModelConfig>& model_registry();

/// Looks up a model by registry name (exact, case-insensitive). Returns nullptr when unknown.
const ModelConfig* find_model(const std::string& name);

}  // namespace recipebench
