#include "catalog/hf_config.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace recipebench {

namespace {

class Reader {
 public:
  Reader(const Json& obj, std::string file, std::string prefix) : obj_(obj), file_(std::move(file)), prefix_(std::move(prefix)) {}

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

}  // namespace

ModelConfig model_config_from_hf(const Json& config, const std::string& file, const std::string& name) {
  if (!config.is_object()) throw std::invalid_argument(file + ": a " + std::string(config.type_name()) + ", expected a JSON object");
  const bool nested = config.contains("text_config") && config["text_config"].is_object();
  const Json& text = nested ? config["text_config"] : config;
  const Reader r(text, file, nested ? "text_config." : "");

  ModelConfig m;
  m.name = name;
  m.vocab_size = r.integer("vocab_size");
  m.hidden_size = r.integer("hidden_size");
  m.num_layers = r.integer("num_hidden_layers");
  m.num_attention_heads = r.integer("num_attention_heads");
  m.num_kv_heads = r.integer("num_key_value_heads");
  m.head_dim = r.integer("head_dim");
  m.rms_norm_eps = r.number("rms_norm_eps", 1e-6, false);
  double theta = r.number("rope_theta", 0, false);
  if (theta == 0 && text.contains("rope_parameters") && text["rope_parameters"].is_object())
    theta = Reader(text["rope_parameters"], file, std::string(nested ? "text_config." : "") + "rope_parameters.")
                .number("rope_theta", 0, true);
  if (theta <= 0) r.fail("rope_theta", "missing", "a positive number (or rope_parameters.rope_theta)");
  m.rope_theta = theta;
  const double partial = r.number("partial_rotary_factor", 1.0, false);
  m.rope_dims = static_cast<int64_t>(partial * static_cast<double>(m.head_dim) + 0.5);
  if (m.rope_dims < 2 || m.rope_dims % 2 != 0 || m.rope_dims > m.head_dim)
    r.fail("partial_rotary_factor", std::to_string(partial), "a fraction giving an even number of RoPE dims <= head_dim");
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
    r.fail("num_experts_per_tok", std::to_string(m.top_k), "at most num_experts (" + std::to_string(m.num_experts) + ")");
  if (m.linear_num_value_heads % m.linear_num_key_heads != 0)
    r.fail("linear_num_value_heads", std::to_string(m.linear_num_value_heads),
           "a multiple of linear_num_key_heads (" + std::to_string(m.linear_num_key_heads) + ")");
  m.mtp_layers = text.value("mtp_num_hidden_layers", int64_t{0});

  if (text.contains("layer_types")) {
    const Json& types = text["layer_types"];
    if (!types.is_array() || static_cast<int64_t>(types.size()) != m.num_layers)
      r.fail("layer_types", types.is_array() ? std::to_string(types.size()) + " entries" : types.dump(),
             "a list of num_hidden_layers (" + std::to_string(m.num_layers) + ") layer types");
    int64_t interval = 0;
    for (size_t i = 0; i < types.size(); ++i)
      if (types[i] == "full_attention") {
        interval = static_cast<int64_t>(i) + 1;
        break;
      }
    if (interval == 0) r.fail("layer_types", "no full_attention layer", "full attention every N-th layer");
    m.full_attention_interval = interval;
    for (size_t i = 0; i < types.size(); ++i) {
      const std::string want = m.is_full_attention(static_cast<int64_t>(i)) ? "full_attention" : "linear_attention";
      if (types[i] != want)
        r.fail("layer_types[" + std::to_string(i) + "]", types[i].dump(),
               "'" + want + "' (full attention every " + std::to_string(interval) + "th layer)");
    }
  } else {
    m.full_attention_interval = r.integer("full_attention_interval");
  }
  return m;
}

ModelConfig load_hf_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(path + ": cannot read the model config");
  Json j;
  try {
    j = Json::parse(in);
  } catch (const Json::parse_error& e) {
    throw std::invalid_argument(path + ": invalid JSON (" + std::string(e.what()) + ")");
  }
  const std::filesystem::path p(path);
  const std::string folder = p.parent_path().filename().string();
  return model_config_from_hf(j, path, folder.empty() ? p.stem().string() : folder);
}

}  // namespace recipebench
