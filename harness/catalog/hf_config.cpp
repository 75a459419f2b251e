#include "catalog/hf_config.h"

#include <set>
#include <stdexcept>

#include "util/input_file.h"

namespace recipebench {

namespace {

class Reader {
 public:
  Reader(const Json& obj, std::string file, std::string prefix)
      : obj_(obj), file_(std::move(file)), prefix_(std::move(prefix)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& found, const std::string& expected) const {
    throw std::invalid_argument(file_ + ": " + prefix_ + key + ": " + found + ", expected " + expected);
  }

  int64_t integer(const std::string& key, int64_t min = 1) const {
    if (!obj_.contains(key)) fail(key, "missing", "an integer >= " + std::to_string(min));
    const Json& v = obj_[key];
    if (!v.is_number_integer()) fail(key, v.dump(), "an integer >= " + std::to_string(min));
    const int64_t x = v.get<int64_t>();
    if (x < min) fail(key, std::to_string(x), "an integer >= " + std::to_string(min));
    return x;
  }

  double number(const std::string& key, double fallback, bool required) const {
    if (!obj_.contains(key) || obj_[key].is_null()) {
      if (required) fail(key, "missing", "a number");
      return fallback;
    }
    if (!obj_[key].is_number()) fail(key, obj_[key].dump(), "a number");
    return obj_[key].get<double>();
  }

  const Json& obj() const { return obj_; }

 private:
  const Json& obj_;
  std::string file_, prefix_;
};

/// How recipebench treats each field of a Qwen3.5 MoE / Qwen3-Next config.json (docs/hf-config-fields.md).
/// kRead: read into ModelConfig. kIrrelevant: does not change the trained model's shape or maths (inference,
/// initialisation, tokenizer ids, bookkeeping). A field in neither set, or a shape-changing field with a value
/// other than the one recipebench builds (checked in check_refused), is refused: never ignored silently.
const std::set<std::string>& read_fields() {
  static const std::set<std::string> s = {
      "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
      "rms_norm_eps", "rope_theta", "rope_parameters", "partial_rotary_factor", "linear_num_key_heads",
      "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel_dim", "num_experts",
      "num_experts_per_tok", "moe_intermediate_size", "shared_expert_intermediate_size", "layer_types",
      "full_attention_interval", "mtp_num_hidden_layers", "model_type", "architectures",
      // Checked against the one value recipebench builds (check_refused):
      "mlp_only_layers", "decoder_sparse_step", "attention_bias", "tie_word_embeddings", "hidden_act", "norm_topk_prob",
      "rope_scaling", "attn_output_gate", "attention_dropout", "output_router_logits", "use_sliding_window",
      "intermediate_size"};
  return s;
}

const std::set<std::string>& irrelevant_fields() {
  static const std::set<std::string> s = {
      "max_position_embeddings", "initializer_range", "use_cache", "router_aux_loss_coef", "pad_token_id",
      "bos_token_id", "eos_token_id", "dtype", "torch_dtype", "transformers_version", "_name_or_path",
      "mtp_use_dedicated_embeddings", "output_attentions", "output_hidden_states", "return_dict", "is_decoder",
      "sliding_window", "max_window_layers", "base_config_key", "keys_to_ignore_at_inference",
      // The multimodal wrapper's own fields (the vision tower is not trained by recipebench):
      "text_config", "vision_config", "image_token_id", "video_token_id", "vision_start_token_id",
      "vision_end_token_id"};
  return s;
}

/// Refuses a field that changes the model unless it has the value recipebench builds: every decoder layer a
/// sparse MoE block, no attention bias, untied embeddings, SiLU, normalised top-k, plain RoPE, gated attention.
void check_refused(const Reader& r) {
  const Json& c = r.obj();
  auto has = [&](const char* k) { return c.contains(k) && !c[k].is_null(); };
  auto must_equal = [&](const char* key, const Json& want, const std::string& why) {
    if (has(key) && c[key] != want)
      r.fail(key, c[key].dump(), want.dump() + " (" + why + "; docs/hf-config-fields.md)");
  };
  const std::string moe = "recipebench builds every decoder layer as a sparse MoE block";
  if (has("mlp_only_layers") && !(c["mlp_only_layers"].is_array() && c["mlp_only_layers"].empty()))
    r.fail("mlp_only_layers", c["mlp_only_layers"].dump(),
           "[] (" + moe +
               "; dense MLP layers are not supported; "
               "docs/hf-config-fields.md)");
  must_equal("decoder_sparse_step", 1, moe);
  must_equal("attention_bias", false, "the projections have no bias");
  must_equal("tie_word_embeddings", false, "the output layer is its own matrix");
  must_equal("hidden_act", "silu", "the experts are SwiGLU");
  must_equal("norm_topk_prob", true, "the router renormalises its top-k weights");
  must_equal("attn_output_gate", true, "full attention has an output gate");
  must_equal("attention_dropout", 0, "no dropout in training");
  must_equal("output_router_logits", false, "no router auxiliary loss is trained");
  must_equal("use_sliding_window", false, "full attention spans the whole row");
  if (has("rope_scaling"))
    r.fail("rope_scaling", c["rope_scaling"].dump(), "null (plain RoPE; docs/hf-config-fields.md)");
  if (has("rope_parameters") && c["rope_parameters"].is_object() && c["rope_parameters"].contains("rope_type") &&
      c["rope_parameters"]["rope_type"] != "default")
    r.fail("rope_parameters.rope_type", c["rope_parameters"]["rope_type"].dump(),
           "\"default\" (plain RoPE; docs/hf-config-fields.md)");
}

/// Refuses fields recipebench does not know: a config field is read, checked, or known to be irrelevant.
void check_known(const Reader& r) {
  for (const auto& [key, value] : r.obj().items())
    if (!read_fields().count(key) && !irrelevant_fields().count(key))
      r.fail(key, value.dump().substr(0, 60),
             "no such field: recipebench knows the fields of docs/hf-config-fields.md "
             "(a field that may change the model is never ignored)");
}

}  // namespace

std::string model_name_from_hf(const Json& config) {
  if (config.is_object()) {
    if (config.contains("architectures") && config["architectures"].is_array() && !config["architectures"].empty() &&
        config["architectures"][0].is_string())
      return config["architectures"][0].get<std::string>();
    if (config.contains("model_type") && config["model_type"].is_string())
      return config["model_type"].get<std::string>();
  }
  return "model of a config.json";
}

namespace {

/// A config whose model sits under text_config: beside it only the fields that do not change the model.
void check_beside_text_config(const Json& config, const std::string& file) {
  const Reader top(config, file, "");
  for (const auto& [key, value] : config.items())
    if (!irrelevant_fields().count(key) && key != "architectures" && key != "model_type" &&
        key != "tie_word_embeddings")
      top.fail(key, value.dump().substr(0, 60), "no such field beside text_config (docs/hf-config-fields.md)");
  check_refused(top);
}

/// rope_theta (or rope_parameters.rope_theta) and the rotary dims from partial_rotary_factor (m.head_dim set).
void read_rope(const Reader& r, const Json& text, const std::string& file, const std::string& prefix, ModelConfig& m) {
  double theta = r.number("rope_theta", 0, false);
  if (theta == 0 && text.contains("rope_parameters") && text["rope_parameters"].is_object())
    theta = Reader(text["rope_parameters"], file, prefix + "rope_parameters.").number("rope_theta", 0, true);
  if (theta <= 0) r.fail("rope_theta", "missing", "a positive number (or rope_parameters.rope_theta)");
  m.rope_theta = theta;
  const double partial = r.number("partial_rotary_factor", 1.0, false);
  m.rope_dims = static_cast<int64_t>(partial * static_cast<double>(m.head_dim) + 0.5);
  if (m.rope_dims < 2 || m.rope_dims % 2 != 0 || m.rope_dims > m.head_dim)
    r.fail("partial_rotary_factor", std::to_string(partial),
           "a fraction giving an even number of RoPE dims <= head_dim");
}

/// The Gated DeltaNet and MoE widths, checked against each other.
void read_linear_and_moe(const Reader& r, ModelConfig& m) {
  m.linear_num_key_heads = r.integer("linear_num_key_heads");
  m.linear_num_value_heads = r.integer("linear_num_value_heads");
  m.linear_key_head_dim = r.integer("linear_key_head_dim");
  m.linear_value_head_dim = r.integer("linear_value_head_dim");
  m.linear_conv_kernel = r.integer("linear_conv_kernel_dim");
  m.num_experts = r.integer("num_experts");
  m.top_k = r.integer("num_experts_per_tok");
  m.expert_ffn = r.integer("moe_intermediate_size");
  m.shared_expert_ffn = r.integer("shared_expert_intermediate_size");
  if (m.top_k > m.num_experts)
    r.fail("num_experts_per_tok", std::to_string(m.top_k),
           "at most num_experts (" + std::to_string(m.num_experts) + ")");
  if (m.linear_num_value_heads % m.linear_num_key_heads != 0)
    r.fail("linear_num_value_heads", std::to_string(m.linear_num_value_heads),
           "a multiple of linear_num_key_heads (" + std::to_string(m.linear_num_key_heads) + ")");
}

/// The attention pattern: layer_types (full attention every N-th layer, checked layer by layer) or
/// full_attention_interval (m.num_layers set).
void read_attention_pattern(const Reader& r, const Json& text, ModelConfig& m) {
  if (!text.contains("layer_types")) {
    m.full_attention_interval = r.integer("full_attention_interval");
    return;
  }
  const Json& types = text["layer_types"];
  if (!types.is_array() || static_cast<int64_t>(types.size()) != m.num_layers)
    r.fail("layer_types", types.is_array() ? std::to_string(types.size()) + " entries" : types.dump(),
           "a list of num_hidden_layers (" + std::to_string(m.num_layers) + ") layer types");
  int64_t interval = 0;
  for (size_t i = 0; i < types.size() && interval == 0; ++i)
    if (types[i] == "full_attention") interval = static_cast<int64_t>(i) + 1;
  if (interval == 0) r.fail("layer_types", "no full_attention layer", "full attention every N-th layer");
  m.full_attention_interval = interval;
  for (size_t i = 0; i < types.size(); ++i) {
    const std::string want = m.is_full_attention(static_cast<int64_t>(i)) ? "full_attention" : "linear_attention";
    if (types[i] != want)
      r.fail("layer_types[" + std::to_string(i) + "]", types[i].dump(),
             "'" + want + "' (full attention every " + std::to_string(interval) + "th layer)");
  }
}

}  // namespace

ModelConfig model_config_from_hf(const Json& config, const std::string& file, const std::string& name) {
  if (!config.is_object())
    throw std::invalid_argument(file + ": a " + std::string(config.type_name()) + ", expected a JSON object");
  const bool nested = config.contains("text_config") && config["text_config"].is_object();
  const Json& text = nested ? config["text_config"] : config;
  const std::string prefix = nested ? "text_config." : "";
  const Reader r(text, file, prefix);
  if (nested) check_beside_text_config(config, file);
  check_known(r);
  check_refused(r);
  ModelConfig m;
  m.name = name;
  m.vocab_size = r.integer("vocab_size");
  m.hidden_size = r.integer("hidden_size");
  m.num_layers = r.integer("num_hidden_layers");
  m.num_attention_heads = r.integer("num_attention_heads");
  m.num_kv_heads = r.integer("num_key_value_heads");
  m.head_dim = r.integer("head_dim");
  m.rms_norm_eps = r.number("rms_norm_eps", 1e-6, false);
  read_rope(r, text, file, prefix, m);
  read_linear_and_moe(r, m);
  m.mtp_layers = text.value("mtp_num_hidden_layers", int64_t{0});
  read_attention_pattern(r, text, m);
  return m;
}

ModelConfig load_hf_config(const std::string& path) {
  std::string text;
  try {
    text = read_input_file(path);
  } catch (const InputFileError& e) {
    throw std::invalid_argument(path + ": cannot read the model config: " + e.what());
  }
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw std::invalid_argument(path + ": invalid JSON (" + std::string(e.what()) + ")");
  }
  return model_config_from_hf(j, path, model_name_from_hf(j));
}

}  // namespace recipebench
