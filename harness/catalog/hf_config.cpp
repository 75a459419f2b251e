#include "catalog/hf_config.h"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include "catalog/hf_families.h"
#include "catalog/hf_reader.h"
#include "util/input_file.h"
#include "util/json_text.h"

namespace recipebench {

using hf::FieldFault;
using hf::Reader;

namespace {

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

const std::vector<std::string>& hf_model_types() {
  static const std::vector<std::string> types = {"qwen3_5_moe", "qwen3_5_moe_text", "qwen3_next"};
  return types;
}

const std::vector<std::string>& hf_counted_model_types() { return hf::transformer_model_types(); }

namespace {

/// "qwen3_5_moe, qwen3_5_moe_text or qwen3_next (...); llama, ... or gpt_oss (...)": the model_types the reader
/// knows, for the model_type error.
std::string known_model_types() {
  auto join = [](const std::vector<std::string>& v) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) out += (i == 0 ? "" : i + 1 == v.size() ? " or " : ", ") + v[i];
    return out;
  };
  return join(hf_model_types()) + " (built and counted) or " + join(hf_counted_model_types()) +
         " (counted by formula; docs/hf-config-fields.md)";
}

bool counted_only(const Json& type) {
  const auto& t = hf_counted_model_types();
  return type.is_string() && std::find(t.begin(), t.end(), type.get<std::string>()) != t.end();
}

/// The model_type check, before any other field: a family the reader does not know (or a config without
/// model_type) is refused by name, never read as Qwen3.5. The multimodal form's text_config, when it names its own
/// model_type, must name the text model (qwen3_5_moe_text).
void check_model_type(const Json& config, bool nested) {
  const Reader top(config, "");
  if (!top.has("model_type")) top.fail("model_type", "missing", known_model_types());
  const Json& type = config["model_type"];
  const bool listed = type.is_string() && std::find(hf_model_types().begin(), hf_model_types().end(),
                                                    type.get<std::string>()) != hf_model_types().end();
  if (!listed && !counted_only(type))
    top.fail("model_type", type.is_string() ? "'" + type.get<std::string>() + "'" : type.dump(), known_model_types());
  if (!nested) return;
  const Reader text(config["text_config"], "text_config.");
  const Json& inner = config["text_config"].value("model_type", Json());
  if (!inner.is_null() && inner != "qwen3_5_moe_text")
    text.fail("model_type", inner.is_string() ? "'" + inner.get<std::string>() + "'" : inner.dump(),
              "'qwen3_5_moe_text' (the text model of qwen3_5_moe; docs/hf-config-fields.md)");
}

/// A config whose model sits under text_config: beside it only the fields that do not change the model.
void check_beside_text_config(const Json& config) {
  const Reader top(config, "");
  for (const auto& [key, value] : config.items())
    if (!irrelevant_fields().count(key) && key != "architectures" && key != "model_type" &&
        key != "tie_word_embeddings")
      top.fail(key, value.dump().substr(0, 60), "no such field beside text_config (docs/hf-config-fields.md)");
  check_refused(top);
}

/// One RoPE field that may sit at the model's level or under rope_parameters (transformers writes either): the one
/// value, `fallback` when neither holds it. Both present and different is refused at rope_parameters.<key>.
double rope_field(const Reader& r, const std::string& key, double fallback) {
  const Json& text = r.obj();
  const bool in_params = text.contains("rope_parameters") && text["rope_parameters"].is_object();
  const Reader params(in_params ? text["rope_parameters"] : text, r.prefix() + "rope_parameters.");
  const bool top = r.has(key), nested = in_params && params.has(key);
  const double at_top = r.number(key, fallback, false);
  if (!nested) return at_top;
  const double under = params.number(key, fallback, false);
  if (top && under != at_top)
    params.fail(key, text["rope_parameters"][key].dump(),
                text[key].dump() + ", the value of " + r.prefix() + key +
                    " (the field is read at both places; they must agree)");
  return under;
}

/// rope_parameters' own fields: rope_type "default" (check_refused), rope_theta and partial_rotary_factor (read),
/// mrope_section and mrope_interleaved (irrelevant: text-only positions); any other is refused.
void check_rope_parameters(const Reader& r) {
  if (!r.has("rope_parameters")) return;
  const Json& p = r.obj()["rope_parameters"];
  if (!p.is_object()) r.fail("rope_parameters", p.dump().substr(0, 60), "an object");
  static const std::set<std::string> known = {"rope_type", "rope_theta", "partial_rotary_factor", "mrope_section",
                                              "mrope_interleaved"};
  const Reader params(p, r.prefix() + "rope_parameters.");
  for (const auto& [key, value] : p.items())
    if (!known.count(key))
      params.fail(key, value.dump().substr(0, 60),
                  "no such field: rope_parameters holds rope_type, rope_theta, partial_rotary_factor, mrope_section "
                  "and mrope_interleaved (docs/hf-config-fields.md)");
}

/// rope_theta and the rotary dims from partial_rotary_factor, each at the model's level or under rope_parameters
/// (m.head_dim set).
void read_rope(const Reader& r, ModelConfig& m) {
  check_rope_parameters(r);
  const double theta = rope_field(r, "rope_theta", 0);
  if (theta <= 0) {
    const bool given =
        r.has("rope_theta") || (r.has("rope_parameters") && Reader(r.obj()["rope_parameters"], "").has("rope_theta"));
    r.fail("rope_theta", given ? std::to_string(theta) : "missing",
           "a positive number (here or as rope_parameters.rope_theta)");
  }
  m.rope_theta = theta;
  const double partial = rope_field(r, "partial_rotary_factor", 1.0);
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

/// The attention pattern: layer_types (full attention every N-th layer, checked layer by layer; full_attention_interval
/// beside it must agree) or full_attention_interval (m.num_layers set).
void read_attention_pattern(const Reader& r, ModelConfig& m) {
  const Json& text = r.obj();
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
  if (r.has("full_attention_interval") && r.integer("full_attention_interval") != interval)
    r.fail("full_attention_interval", text["full_attention_interval"].dump(),
           std::to_string(interval) + ", the interval layer_types gives (both are read; they must agree)");
}

/// `architectures`, when given: a list of names, each printable text (the first names the model in tables and run
/// records: an ESC or U+202E there would reach the terminal).
void check_architectures(const Json& config) {
  if (!config.contains("architectures")) return;
  const Reader top(config, "");
  const Json& a = config["architectures"];
  if (!a.is_array()) top.fail("architectures", a.dump().substr(0, 60), "a list of model class names");
  for (size_t i = 0; i < a.size(); ++i) {
    const std::string key = "architectures[" + std::to_string(i) + "]";
    const std::string type = a[i].type_name();
    if (!a[i].is_string())
      top.fail(key, (type == "object" || type == "array" ? "an " : "a ") + type, "a string (a model class name)");
    const std::string& s = a[i].get_ref<const std::string&>();
    if (s.empty() || escape_controls(s) != s)
      top.fail(key, "'" + escape_controls(s) + "'",
               "a name of printable text (no control, invisible or reordering character)");
  }
}

/// The model of a config, every fault thrown as a FieldFault.
ModelConfig read_model(const Json& config, const std::string& name) {
  const bool nested = config.contains("text_config") && config["text_config"].is_object();
  check_model_type(config, nested);
  check_architectures(config);
  if (counted_only(config["model_type"])) return hf::read_transformer_model(config, name);
  const Json& text = nested ? config["text_config"] : config;
  const Reader r(text, nested ? "text_config." : "");
  if (nested) check_beside_text_config(config);
  check_known(r);
  check_refused(r);
  ModelConfig m;
  m.name = name;
  m.vocab_size = r.integer("vocab_size");
  m.hidden_size = r.integer("hidden_size");
  m.num_layers = r.integer("num_hidden_layers");
  m.num_attention_heads = r.integer("num_attention_heads");
  m.num_kv_heads = r.integer("num_key_value_heads");
  require_kv_divisor(r, m);
  m.head_dim = r.integer("head_dim");
  m.rms_norm_eps = r.number("rms_norm_eps", 1e-6, false);
  if (!(m.rms_norm_eps > 0)) r.fail("rms_norm_eps", text["rms_norm_eps"].dump(), "a positive number");
  read_rope(r, m);
  read_linear_and_moe(r, m);
  m.mtp_layers = r.integer_or("mtp_num_hidden_layers", 0, 0);
  read_attention_pattern(r, m);
  require_countable(r, m);
  return m;
}

/// The text of one path component: a key, or "[i]".
struct PathStep {
  std::string key;
  long index = -1;
};

std::vector<PathStep> split_path(const std::string& path) {
  std::vector<PathStep> steps;
  std::string key;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '.' || path[i] == '[') {
      if (!key.empty()) steps.push_back({key, -1});
      key.clear();
      if (path[i] == '[') {
        const size_t close = path.find(']', i);
        if (close == std::string::npos) break;
        steps.push_back({"", std::stol(path.substr(i + 1, close - i - 1))});
        i = close;
      }
    } else {
      key += path[i];
    }
  }
  if (!key.empty()) steps.push_back({key, -1});
  return steps;
}

/// Where the value at a dotted path (`text_config.layer_types[5]`) starts in a valid JSON text, as a byte offset: the
/// deepest node of the path that exists (the enclosing object of a missing field).
class JsonLocator {
 public:
  explicit JsonLocator(const std::string& s) : s_(s) {}

  size_t find(const std::string& path) {
    i_ = 0;
    space();
    size_t at = i_;
    for (const PathStep& step : split_path(path)) {
      if (!enter(step)) break;
      at = i_;
    }
    return at;
  }

 private:
  void space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) ++i_;
  }
  std::string string() {  // at '"': the string's raw text (escapes kept), past its closing quote
    std::string out;
    for (++i_; i_ < s_.size() && s_[i_] != '"'; ++i_) {
      if (s_[i_] == '\\' && i_ + 1 < s_.size()) out += s_[i_++];
      out += s_[i_];
    }
    ++i_;
    return out;
  }
  void skip() {  // past one value
    if (i_ >= s_.size()) return;
    if (s_[i_] == '"') {
      string();
    } else if (s_[i_] == '{' || s_[i_] == '[') {
      int depth = 0;
      for (; i_ < s_.size(); ++i_) {
        if (s_[i_] == '"') {
          string();
          --i_;
        } else if (s_[i_] == '{' || s_[i_] == '[') {
          ++depth;
        } else if ((s_[i_] == '}' || s_[i_] == ']') && --depth == 0) {
          ++i_;
          return;
        }
      }
    } else {
      while (i_ < s_.size() && s_[i_] != ',' && s_[i_] != '}' && s_[i_] != ']' && s_[i_] != ' ' && s_[i_] != '\n' &&
             s_[i_] != '\r' && s_[i_] != '\t')
        ++i_;
    }
  }
  /// From the value at i_, moves to the start of its member or element `step`; false (i_ kept) when there is none.
  bool enter(const PathStep& step) {
    const size_t from = i_;
    const char open = step.index < 0 ? '{' : '[';
    if (i_ >= s_.size() || s_[i_] != open) return false;
    ++i_;
    for (long n = 0;; ++n) {
      space();
      if (i_ >= s_.size() || s_[i_] == '}' || s_[i_] == ']') break;
      if (step.index < 0) {
        const std::string key = string();
        space();
        ++i_;  // ':'
        space();
        if (key == step.key) return true;
      } else if (n == step.index) {
        return true;
      }
      skip();
      space();
      if (i_ < s_.size() && s_[i_] == ',') ++i_;
    }
    i_ = from;
    return false;
  }

  const std::string& s_;
  size_t i_ = 0;
};

/// The 1-based line and column of the value at `path` in the JSON `text` (JsonLocator).
std::pair<int, int> json_line_column(const std::string& text, const std::string& path) {
  const size_t at = JsonLocator(text).find(path);
  int line = 1, column = 1;
  for (size_t i = 0; i < at && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

}  // namespace

ModelConfig model_config_from_hf(const Json& config, const std::string& file, const std::string& name) {
  if (!config.is_object())
    throw std::invalid_argument(file + ": a " + std::string(config.type_name()) + ", expected a JSON object");
  try {
    return read_model(config, name);
  } catch (const FieldFault& f) {
    throw std::invalid_argument(file + ": " + f.path + ": " + escape_controls(f.found) + ", expected " + f.expected);
  }
}

ModelConfig load_hf_config(const std::string& path) {
  std::string text;
  try {
    text = read_input_file(path);
  } catch (const InputFileError& e) {
    throw std::invalid_argument(path + ": error: cannot read the model config: " + e.what());
  }
  Json j;
  try {
    j = parse_json_text(text);
  } catch (const JsonTextError& e) {
    throw std::invalid_argument(path + ":" + std::to_string(e.line) + ":" + std::to_string(e.column) +
                                ": error: " + e.what());
  }
  if (!j.is_object())
    throw std::invalid_argument(path + ":1:1: error: a " + std::string(j.type_name()) +
                                ", expected a JSON object (a Hugging Face config.json)");
  try {
    return read_model(j, model_name_from_hf(j));
  } catch (const FieldFault& f) {
    const auto [line, column] = json_line_column(text, f.path);
    throw std::invalid_argument(path + ":" + std::to_string(line) + ":" + std::to_string(column) +
                                ": error: " + f.path + ": " + escape_controls(f.found) + ", expected " + f.expected);
  }
}

void hf::require_kv_divisor(const hf::Reader& r, const ModelConfig& m) {
  if (m.num_kv_heads > 0 && m.num_attention_heads % m.num_kv_heads != 0)
    r.fail("num_key_value_heads", std::to_string(m.num_kv_heads),
           "a divisor of num_attention_heads (" + std::to_string(m.num_attention_heads) + ")");
}

void hf::require_countable(const hf::Reader& r, const ModelConfig& m) {
  try {
    (void)count_params(m);
  } catch (const std::overflow_error&) {
    r.fail("hidden_size", std::to_string(m.hidden_size) + " with the other widths (a parameter count beyond 2^63)",
           "widths whose parameter count fits 64 bits");
  }
}

}  // namespace recipebench
