// Model registry: the Qwen3.5 MoE text-model family (docs/model.md) and its parameter counts; the other families a
// config.json may describe (Llama, Mistral, Mixtral, Qwen2, Qwen3, Qwen3-MoE, DeepSeek-V3, GPT-OSS), counted by
// formula (docs/metrics.md, "Parameter counts by family"), and a model known only by its stated counts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace recipebench {

/// The architecture family of a ModelConfig, a closed set. kQwen35 is the family recipebench's torch backend builds
/// (Qwen3.5 MoE and Qwen3-Next: gated attention every N-th layer, Gated DeltaNet otherwise, every layer a sparse MoE
/// block with a gated shared expert). kTransformer is every other family a config.json gives (model_type in
/// ModelConfig::model_type): GQA or MLA attention, dense SwiGLU or MoE feed-forward, counted by formula only.
/// kStated is a model outside the registry known only by the counts its recipe states (no architecture).
enum class ModelFamily { kQwen35, kTransformer, kStated };

/// The attention of a kTransformer model: grouped-query (Llama, Mistral, Mixtral, Qwen2/3, GPT-OSS) or DeepSeek's
/// multi-head latent attention (q_lora_rank, kv_lora_rank, qk_nope / qk_rope / v head dims).
enum class AttentionKind { kGqa, kMla };

/// Architecture of one model: a Qwen3.5 MoE text model (family kQwen35, the fields up to mtp_layers), another
/// config.json family (kTransformer, the fields after them) or stated counts only (kStated). All sizes are element
/// counts (not bytes).
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

  // Other families (family kTransformer; unused by kQwen35). Source: each family's Hugging Face configuration and
  // modeling file (docs/metrics.md, "Parameter counts by family").
  ModelFamily family = ModelFamily::kQwen35;
  std::string model_type;  ///< the config.json's model_type ("llama", "deepseek_v3", ...); empty for the registry
  AttentionKind attention = AttentionKind::kGqa;
  bool qkv_bias = false;         ///< q/k/v projections carry a bias (Qwen2; attention_bias of Llama, Qwen3, GPT-OSS)
  bool o_bias = false;           ///< o_proj carries a bias (attention_bias of Llama, Qwen3, GPT-OSS)
  bool qk_norm = false;          ///< per-head RMSNorm of q and k (Qwen3, Qwen3-MoE): head_dim weights each
  bool attention_sinks = false;  ///< one learned sink logit per head (GPT-OSS)
  bool tie_word_embeddings = false;  ///< the output layer is the embedding matrix (counted once in total)
  int64_t intermediate_size = 0;     ///< dense SwiGLU MLP width (dense layers)
  bool mlp_bias = false;             ///< the dense MLP's projections carry biases (Llama mlp_bias)
  int64_t dense_layers = 0;          ///< leading layers with a dense MLP (all of a dense model; DeepSeek's first_k)
  bool shared_expert_gate = true;    ///< a sigmoid gate (h weights) on the shared expert (Qwen3.5); DeepSeek has none
  bool expert_bias = false;          ///< expert gate_up / down biases (GPT-OSS)
  bool router_bias = false;          ///< the router's linear bias (GPT-OSS)
  bool router_score_bias = false;    ///< DeepSeek-V3's e_score_correction_bias (one per expert; total only)
  // Multi-head latent attention (AttentionKind::kMla). q_lora_rank 0: q projected directly from the hidden state.
  int64_t q_lora_rank = 0, kv_lora_rank = 0, qk_nope_head_dim = 0, qk_rope_head_dim = 0, v_head_dim = 0;
  // Stated counts (family kStated): the recipe's figures; a formula gives them otherwise.
  int64_t stated_active = 0, stated_total = 0;  ///< stated_total 0: not stated

  /// True when decoder layer `i` (0-based) is full attention.
  bool is_full_attention(int64_t i) const { return (i + 1) % full_attention_interval == 0; }
  int64_t num_full_attention_layers() const;
  int64_t num_linear_attention_layers() const { return num_layers - num_full_attention_layers(); }
  int64_t linear_key_dim() const { return linear_num_key_heads * linear_key_head_dim; }
  int64_t linear_value_dim() const { return linear_num_value_heads * linear_value_head_dim; }
  /// The same model with `layers` decoder layers (proxy runs); the attention pattern keeps its rule (a
  /// kTransformer model keeps its leading dense layers, at most `layers`).
  ModelConfig with_layers(int64_t layers) const;
  /// True when the widths, layers and heads are known (not kStated): the layout arithmetic on heads, experts and
  /// layers can be checked.
  bool architecture_known() const { return family != ModelFamily::kStated; }
};

/// "Qwen3.5 MoE / Qwen3-Next", "llama", ..., "stated counts": what a model is, for messages.
std::string family_label(const ModelConfig& m);

/// What a model is, as a clause after its name: "is a llama model", "is a Qwen3.5 MoE / Qwen3-Next model", "is known
/// by its stated counts only".
std::string family_clause(const ModelConfig& m);

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
  int64_t dense_mlp_layer = 0;   ///< weights of one dense MLP block (kTransformer dense layers)
  /// Every weight of one attention mixer with its norms and per-head scalars (kTransformer: GQA's q/k norms and
  /// sinks, MLA's two latent norms); attention_layer otherwise.
  int64_t attention_layer_total = 0;
};

/// Counts parameters of `m` (see ParamCounts). For Qwen3.5-397B-A17B, active == 16,331,407,360. A kTransformer
/// model is counted by count_transformer_params, a kStated one gives its stated counts (total 0 when not stated).
/// Throws std::overflow_error when a sum or product would pass 2^63 - 1 (never a negative or wrapped count).
ParamCounts count_params(const ModelConfig& m);

/// The parameter counts of a kTransformer model by the convention of ParamCounts (docs/metrics.md, "Parameter counts
/// by family"): per layer GQA attention (q, k, v, o and their biases; q/k norms and sinks in total only) or MLA
/// (q_a, q_b or q, kv_a, kv_b, o; their norms in total only), a dense SwiGLU MLP on the leading dense_layers and an
/// MoE block (router with its bias, top_k routed experts with their biases, the shared expert) on the rest; the
/// output layer in active (also when tied), the embedding and every norm in total only. Throws std::overflow_error
/// as count_params.
ParamCounts count_transformer_params(const ModelConfig& m);

/// The attention FLOPs per token of `m` on `row_tokens`-token rows (attention_flops_per_token, metrics/metrics.h):
/// its softmax-attention layers (every layer of a config.json family; the full-attention layers of Qwen3.5, whose
/// Gated DeltaNet layers add none), their query heads and head dims (MLA: qk_nope + qk_rope for the scores,
/// v_head_dim for the values). 0 for a model of stated counts (its layers are not known).
double attention_flops_per_token(const ModelConfig& m, int64_t row_tokens);

/// The head widths of `m`'s softmax attention: the scores' (query and key: qk_nope + qk_rope for MLA, head_dim
/// otherwise) and the values' (v_head_dim for MLA, head_dim otherwise), elements.
struct AttentionHeadDims {
  double qk = 0, v = 0;
};
AttentionHeadDims attention_head_dims(const ModelConfig& m);

/// The registry: Qwen3.5-397B-A17B, -122B-A10B, -35B-A3B and the tiny CPU test member.
const std::vector<ModelConfig>& model_registry();

/// Looks up a model by registry name (exact, case-insensitive). Returns nullptr when unknown.
const ModelConfig* find_model(const std::string& name);

}  // namespace recipebench
