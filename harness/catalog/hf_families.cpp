#include "catalog/hf_families.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "catalog/hf_reader.h"
#include "util/format.h"

namespace recipebench::hf {

namespace {

/// The families, a closed set, one per model_type.
enum class Family { kLlama, kMistral, kMixtral, kQwen2, kQwen3, kQwen3Moe, kDeepseekV3, kGptOss };

/// A family: its model_type and the fields it reads or checks beside the common ones (common_fields).
struct FamilySpec {
  Family family;
  const char* type;
  std::set<std::string> fields;
};

/// The fields of each family's transformers configuration class that set a width or count (or are checked against
/// the one value the formula counts). Source: transformers' Llama/Mistral/Mixtral/Qwen2/Qwen3/Qwen3Moe/DeepseekV3/
/// GptOss configuration and modeling files (docs/hf-config-fields.md, "Other families").
const std::vector<FamilySpec>& specs() {
  static const std::vector<FamilySpec> s = {
      {Family::kLlama, "llama", {"head_dim", "intermediate_size", "attention_bias", "mlp_bias"}},
      {Family::kMistral, "mistral", {"head_dim", "intermediate_size"}},
      {Family::kMixtral, "mixtral", {"head_dim", "intermediate_size", "num_local_experts", "num_experts_per_tok"}},
      {Family::kQwen2, "qwen2", {"intermediate_size"}},
      {Family::kQwen3, "qwen3", {"head_dim", "intermediate_size", "attention_bias"}},
      {Family::kQwen3Moe,
       "qwen3_moe",
       {"head_dim", "intermediate_size", "attention_bias", "num_experts", "num_experts_per_tok",
        "moe_intermediate_size", "mlp_only_layers", "decoder_sparse_step"}},
      {Family::kDeepseekV3,
       "deepseek_v3",
       {"intermediate_size", "moe_intermediate_size", "n_routed_experts", "n_shared_experts", "num_experts_per_tok",
        "first_k_dense_replace", "moe_layer_freq", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
        "qk_rope_head_dim", "v_head_dim", "num_nextn_predict_layers", "attention_bias", "topk_method", "head_dim"}},
      {Family::kGptOss,
       "gpt_oss",
       {"head_dim", "intermediate_size", "num_local_experts", "num_experts_per_tok", "experts_per_token",
        "attention_bias"}},
  };
  return s;
}

/// Read by every family: the widths every count needs.
const std::set<std::string>& common_fields() {
  static const std::set<std::string> s = {"vocab_size",          "hidden_size",         "num_hidden_layers",
                                          "num_attention_heads", "num_key_value_heads", "tie_word_embeddings",
                                          "model_type",          "architectures"};
  return s;
}

/// Fields that change no parameter count: positions, activations, dropout, norms' epsilon, sliding windows and
/// layer types, routing rules and losses, quantisation of the stored checkpoint, inference and bookkeeping.
const std::set<std::string>& not_counted_fields() {
  static const std::set<std::string> s = {"max_position_embeddings",
                                          "rope_theta",
                                          "rope_scaling",
                                          "rope_parameters",
                                          "partial_rotary_factor",
                                          "hidden_act",
                                          "attention_dropout",
                                          "rms_norm_eps",
                                          "initializer_range",
                                          "use_cache",
                                          "pretraining_tp",
                                          "sliding_window",
                                          "use_sliding_window",
                                          "max_window_layers",
                                          "layer_types",
                                          "router_aux_loss_coef",
                                          "output_router_logits",
                                          "router_jitter_noise",
                                          "norm_topk_prob",
                                          "n_group",
                                          "topk_group",
                                          "routed_scaling_factor",
                                          "scoring_func",
                                          "ep_size",
                                          "aux_loss_alpha",
                                          "seq_aux",
                                          "rope_interleave",
                                          "swiglu_limit",
                                          "initial_context_length",
                                          "quantization_config",
                                          "auto_map",
                                          "pad_token_id",
                                          "bos_token_id",
                                          "eos_token_id",
                                          "dtype",
                                          "torch_dtype",
                                          "transformers_version",
                                          "_name_or_path",
                                          "output_attentions",
                                          "output_hidden_states",
                                          "return_dict",
                                          "is_decoder",
                                          "keys_to_ignore_at_inference",
                                          "base_config_key"};
  return s;
}

const FamilySpec& spec_of(const std::string& type) {
  for (const auto& f : specs())
    if (type == f.type) return f;
  throw FieldFault{"model_type", "'" + type + "'", "a counted family"};  // the caller checked the type
}

/// Refuses a field the family does not know: never ignored, since it may change the count.
void check_known(const Reader& r, const FamilySpec& f) {
  for (const auto& [key, value] : r.obj().items())
    if (!common_fields().count(key) && !f.fields.count(key) && !not_counted_fields().count(key))
      r.fail(key, value.dump().substr(0, 60),
             std::string("no such field of a ") + f.type +
                 " config: recipebench counts the fields of docs/hf-config-fields.md (a field that may change the "
                 "count is never ignored)");
}

/// `key` as a boolean, `fallback` when absent or null.
bool boolean(const Reader& r, const std::string& key, bool fallback) {
  if (!r.has(key)) return fallback;
  const Json& v = r.obj()[key];
  if (!v.is_boolean()) r.fail(key, v.dump().substr(0, 60), "true or false");
  return v.get<bool>();
}

/// A field the formula counts with one value only: any other value is refused, saying what is counted.
void must_equal(const Reader& r, const std::string& key, const Json& want, const std::string& why) {
  if (r.has(key) && r.obj()[key] != want)
    r.fail(key, r.obj()[key].dump().substr(0, 60), want.dump() + " (" + why + "; docs/hf-config-fields.md)");
}

/// The widths every family has: vocabulary, hidden size, layers, heads, KV heads (a divisor of the heads), head_dim
/// (`default_head_dim` when absent, 0: hidden_size / heads), untied unless tie_word_embeddings.
void read_common(const Reader& r, ModelConfig& m, int64_t default_head_dim) {
  m.vocab_size = r.integer("vocab_size");
  m.hidden_size = r.integer("hidden_size");
  m.num_layers = r.integer("num_hidden_layers");
  m.num_attention_heads = r.integer("num_attention_heads");
  m.num_kv_heads = r.integer("num_key_value_heads");
  require_kv_divisor(r, m);
  if (default_head_dim == 0 && !r.has("head_dim") && m.hidden_size % m.num_attention_heads != 0)
    r.fail("head_dim",
           "missing, and hidden_size " + std::to_string(m.hidden_size) + " not divisible by " +
               counted(m.num_attention_heads, "head"),
           "an integer >= 1");
  m.head_dim = r.integer_or("head_dim", default_head_dim ? default_head_dim : m.hidden_size / m.num_attention_heads, 1);
  m.tie_word_embeddings = boolean(r, "tie_word_embeddings", false);
  m.rms_norm_eps = r.number("rms_norm_eps", 1e-6, false);
  m.rope_theta = r.number("rope_theta", 1e4, false);
  m.rope_dims = m.head_dim;
}

/// Routed experts: `experts_key` experts, num_experts_per_tok of them per token (at most the experts), each
/// `ffn_key` wide.
void read_experts(const Reader& r, ModelConfig& m, const char* experts_key, const char* ffn_key) {
  m.num_experts = r.integer(experts_key);
  m.top_k = r.integer("num_experts_per_tok");
  m.expert_ffn = r.integer(ffn_key);
  if (m.top_k > m.num_experts)
    r.fail("num_experts_per_tok", std::to_string(m.top_k),
           std::string("at most ") + experts_key + " (" + std::to_string(m.num_experts) + ")");
  m.dense_layers = 0;
}

/// A dense model (Llama, Mistral, Qwen2, Qwen3): every layer a SwiGLU MLP of intermediate_size.
void read_dense(const Reader& r, ModelConfig& m) {
  m.intermediate_size = r.integer("intermediate_size");
  m.dense_layers = m.num_layers;
}

/// DeepSeek-V3: MLA widths, shared experts (no gate), the leading dense layers, the MTP layers (not counted).
void read_deepseek(const Reader& r, ModelConfig& m) {
  m.attention = AttentionKind::kMla;
  m.q_lora_rank = r.integer_or("q_lora_rank", 0, 0);
  m.kv_lora_rank = r.integer("kv_lora_rank");
  m.qk_nope_head_dim = r.integer("qk_nope_head_dim");
  m.qk_rope_head_dim = r.integer("qk_rope_head_dim");
  m.v_head_dim = r.integer("v_head_dim");
  m.head_dim = m.qk_nope_head_dim + m.qk_rope_head_dim;
  m.rope_dims = m.qk_rope_head_dim;
  m.intermediate_size = r.integer("intermediate_size");
  read_experts(r, m, "n_routed_experts", "moe_intermediate_size");
  m.shared_expert_ffn = r.integer_or("n_shared_experts", 0, 0) * m.expert_ffn;
  m.shared_expert_gate = false;
  m.router_score_bias = true;  // e_score_correction_bias, one per routed expert (noaux_tc routing)
  m.dense_layers = r.integer_or("first_k_dense_replace", 0, 0);
  if (m.dense_layers > m.num_layers)
    r.fail("first_k_dense_replace", std::to_string(m.dense_layers),
           "at most num_hidden_layers (" + std::to_string(m.num_layers) + ")");
  must_equal(r, "moe_layer_freq", 1, "every layer after the first_k_dense_replace dense ones is an MoE layer");
  must_equal(r, "attention_bias", false, "the MLA projections have no bias");
  must_equal(r, "topk_method", "noaux_tc", "routing with the e_score_correction_bias counted");
  m.mtp_layers = r.integer_or("num_nextn_predict_layers", 0, 0);
}

/// GPT-OSS: attention with biases and sinks, MoE with router and expert biases, experts_per_token = top-k.
void read_gpt_oss(const Reader& r, ModelConfig& m) {
  const bool bias = boolean(r, "attention_bias", true);
  m.qkv_bias = m.o_bias = bias;
  m.attention_sinks = true;
  read_experts(r, m, "num_local_experts", "intermediate_size");
  if (r.has("experts_per_token") && r.integer("experts_per_token") != m.top_k)
    r.fail("experts_per_token", r.obj()["experts_per_token"].dump(),
           std::to_string(m.top_k) + ", the value of num_experts_per_tok (both are read; they must agree)");
  m.expert_bias = m.router_bias = true;
}

/// The family's own fields (read_common done).
void read_family(const Reader& r, Family family, ModelConfig& m) {
  switch (family) {
    case Family::kLlama:
      read_dense(r, m);
      m.qkv_bias = m.o_bias = boolean(r, "attention_bias", false);
      m.mlp_bias = boolean(r, "mlp_bias", false);
      return;
    case Family::kMistral:
      return read_dense(r, m);
    case Family::kQwen2:
      read_dense(r, m);
      m.qkv_bias = true;  // Qwen2Attention: q/k/v_proj with bias, o_proj without
      return;
    case Family::kQwen3:
      read_dense(r, m);
      m.qk_norm = true;
      m.qkv_bias = m.o_bias = boolean(r, "attention_bias", false);
      return;
    case Family::kMixtral:
      return read_experts(r, m, "num_local_experts", "intermediate_size");
    case Family::kQwen3Moe:
      read_experts(r, m, "num_experts", "moe_intermediate_size");
      m.qk_norm = true;
      m.qkv_bias = m.o_bias = boolean(r, "attention_bias", false);
      if (r.has("mlp_only_layers") && !(r.obj()["mlp_only_layers"].is_array() && r.obj()["mlp_only_layers"].empty()))
        r.fail("mlp_only_layers", r.obj()["mlp_only_layers"].dump().substr(0, 60),
               "[] (recipebench counts qwen3_moe with every layer sparse; docs/hf-config-fields.md)");
      must_equal(r, "decoder_sparse_step", 1, "recipebench counts qwen3_moe with every layer sparse");
      return;
    case Family::kDeepseekV3:
      return read_deepseek(r, m);
    case Family::kGptOss:
      return read_gpt_oss(r, m);
  }
}

/// head_dim when the config leaves it out: transformers' default for Qwen3 / Qwen3-MoE (128) and GPT-OSS (64);
/// 0 for hidden_size / heads.
int64_t default_head_dim(Family f) {
  if (f == Family::kQwen3 || f == Family::kQwen3Moe) return 128;
  return f == Family::kGptOss ? 64 : 0;
}

}  // namespace

const std::vector<std::string>& transformer_model_types() {
  static const std::vector<std::string> types = [] {
    std::vector<std::string> t;
    for (const auto& f : specs()) t.push_back(f.type);
    return t;
  }();
  return types;
}

ModelConfig read_transformer_model(const Json& config, const std::string& name) {
  const Reader r(config, "");
  const FamilySpec& spec = spec_of(config["model_type"].get<std::string>());
  check_known(r, spec);
  ModelConfig m;
  m.name = name;
  m.family = ModelFamily::kTransformer;
  m.model_type = spec.type;
  m.mtp_layers = 0;
  m.full_attention_interval = 1;  // every layer's mixer is attention
  read_common(r, m, default_head_dim(spec.family));
  read_family(r, spec.family, m);
  require_countable(r, m);
  return m;
}

}  // namespace recipebench::hf
