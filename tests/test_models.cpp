// Model registry parameter counts by the convention of docs/metrics.md.
#include <catch2/catch.hpp>

#include "catalog/hardware.h"
#include "catalog/models.h"

using namespace recipebench;

TEST_CASE("Qwen3.5-397B-A17B has exactly 16,331,407,360 active parameters", "[models]") {
  const ModelConfig* m = find_model("Qwen3.5-397B-A17B");
  REQUIRE(m);
  const ParamCounts c = count_params(*m);
  CHECK(c.active == 16331407360LL);
  // Pieces, each by hand: output layer 4096 x 248320; MoE 10 experts x 3 x 4096 x 1024 + shared + gate + router.
  CHECK(c.output_layer == 4096LL * 248320);
  CHECK(c.moe_layer_active == 10LL * 3 * 4096 * 1024 + 3LL * 4096 * 1024 + 4096 + 4096LL * 512);
  CHECK(c.attention_layer == 4096LL * 16384 + 2 * 4096LL * 512 + 8192LL * 4096);
  CHECK(c.gdn_layer == 4096LL * 12288 + 4096LL * 8192 + 2 * 4096LL * 64 + 12288LL * 4 + 8192LL * 4096);
  CHECK(m->num_full_attention_layers() == 15);
  CHECK(m->num_linear_attention_layers() == 45);
  // The total is the model's name: 397B with the MTP layer, 396.3B without it.
  CHECK(c.total > 396e9);
  CHECK(c.total < 397e9);
}

// The proxy of docs/reference-measurement.md (the peer measurement on one H200).
TEST_CASE("the 4-layer Qwen3.5-35B-A3B reference proxy has 752,328,704 active parameters", "[models]") {
  const ModelConfig m = find_model("Qwen3.5-35B-A3B")->with_layers(4);
  CHECK(m.num_linear_attention_layers() == 3);
  CHECK(m.num_full_attention_layers() == 1);
  CHECK(count_params(m).active == 752328704LL);
}

TEST_CASE("registry names and sizes", "[models]") {
  CHECK(find_model("qwen3.5-122b-a10b") != nullptr);  // case-insensitive
  CHECK(find_model("Llama-3-70B") == nullptr);
  const ParamCounts c122 = count_params(*find_model("Qwen3.5-122B-A10B"));
  CHECK(c122.total > 121.5e9);
  CHECK(c122.total < 122.5e9);
  const ParamCounts c35 = count_params(*find_model("Qwen3.5-35B-A3B"));
  CHECK(c35.total > 34e9);
  CHECK(c35.total < 36e9);
  CHECK(c35.active > 2.5e9);
  CHECK(c35.active < 3.5e9);
}

TEST_CASE("GPU and instance catalog", "[catalog]") {
  CHECK(find_gpu("B200")->peak_bf16_flops == 2.25e15);
  CHECK(find_gpu("H200")->peak_bf16_flops == 989.4e12);
  CHECK(find_gpu("H100 SXM")->peak_bf16_flops == 989.4e12);
  CHECK(find_gpu("H200")->memory_bytes == 141e9);
  CHECK(find_instance("p5en.48xlarge")->usd_per_gpu_hour() == Approx(63.296 / 8));
  CHECK(default_instance_for_gpu("H100")->name == "p5.48xlarge");
  CHECK(find_instance("AWS p9.48xlarge") == nullptr);
}

#include "catalog/hf_config.h"

namespace {
/// The Qwen3.5-397B-A17B text config in Hugging Face's multimodal form (values of the public config.json).
Json qwen35_397b_hf_config() {
  Json types = Json::array();
  for (int i = 0; i < 60; ++i) types.push_back((i + 1) % 4 == 0 ? "full_attention" : "linear_attention");
  return Json{{"model_type", "qwen3_5_moe"},
              {"text_config", Json{{"vocab_size", 248320},
                                   {"hidden_size", 4096},
                                   {"num_hidden_layers", 60},
                                   {"num_attention_heads", 32},
                                   {"num_key_value_heads", 2},
                                   {"head_dim", 256},
                                   {"rms_norm_eps", 1e-6},
                                   {"rope_parameters", Json{{"rope_theta", 10000000}}},
                                   {"partial_rotary_factor", 0.25},
                                   {"linear_num_key_heads", 16},
                                   {"linear_num_value_heads", 64},
                                   {"linear_key_head_dim", 128},
                                   {"linear_value_head_dim", 128},
                                   {"linear_conv_kernel_dim", 4},
                                   {"num_experts", 512},
                                   {"num_experts_per_tok", 10},
                                   {"moe_intermediate_size", 1024},
                                   {"shared_expert_intermediate_size", 1024},
                                   {"mtp_num_hidden_layers", 1},
                                   {"layer_types", types}}}};
}
}  // namespace

TEST_CASE("a Hugging Face config.json gives the registry's model and counts", "[models][hf]") {
  const ModelConfig m = model_config_from_hf(qwen35_397b_hf_config(), "config.json", "Qwen3.5-397B-A17B");
  const ModelConfig& reg = *find_model("Qwen3.5-397B-A17B");
  CHECK(m.rope_dims == 64);
  CHECK(m.rope_theta == 1e7);
  CHECK(m.full_attention_interval == 4);
  CHECK(m.num_full_attention_layers() == 15);
  CHECK(count_params(m).active == 16331407360LL);
  CHECK(count_params(m).total == count_params(reg).total);
}

TEST_CASE("a config.json with a missing or wrong field is rejected with its path", "[models][hf]") {
  Json c = qwen35_397b_hf_config();
  c["text_config"].erase("num_experts");
  CHECK_THROWS_WITH(model_config_from_hf(c, "cfg.json", "x"),
                    "cfg.json: text_config.num_experts: missing, expected an integer from 1 to 1048576");
  c = qwen35_397b_hf_config();
  c["text_config"]["hidden_size"] = "4096";
  CHECK_THROWS_WITH(model_config_from_hf(c, "cfg.json", "x"), Catch::Contains("text_config.hidden_size: \"4096\""));
  c = qwen35_397b_hf_config();
  c["text_config"]["layer_types"][5] = "full_attention";
  CHECK_THROWS_WITH(model_config_from_hf(c, "cfg.json", "x"), Catch::Contains("text_config.layer_types[5]"));
  CHECK_THROWS_WITH(load_hf_config("/nonexistent/config.json"), Catch::Contains("cannot read"));
}

#include <functional>
#include <regex>
#include <set>

#include "test_util.h"

namespace {

/// The tiny Qwen3.5 text config (tests/data/hf-parity/config.json) with every field at one place: rope_theta and
/// partial_rotary_factor beside the widths (not under rope_parameters), layer_types without full_attention_interval.
Json tiny_text_config() {
  Json c =
      Json::parse(recipebench::test::read_file(recipebench::test::source_path("tests/data/hf-parity/config.json")));
  c["rope_parameters"].erase("rope_theta");
  c["rope_parameters"].erase("partial_rotary_factor");
  c["rope_theta"] = 10000000.0;
  c.erase("full_attention_interval");
  return c;
}

/// The same text model in the multimodal form: the widths under text_config.
Json multimodal(const Json& text) {
  Json inner = text;
  inner.erase("architectures");
  inner["model_type"] = "qwen3_5_moe_text";
  return Json{{"architectures", text["architectures"]}, {"model_type", "qwen3_5_moe"}, {"text_config", inner}};
}

/// Sets the value at a dotted key path ("rope_parameters.rope_theta") of `o`.
void set_at(Json& o, const std::string& path, const Json& value) {
  const size_t dot = path.find('.');
  if (dot == std::string::npos) {
    o[path] = value;
    return;
  }
  set_at(o[path.substr(0, dot)], path.substr(dot + 1), value);
}

/// A row of docs/hf-config-fields.md marked "read", at one of its places: the key path in the text model's object,
/// a new value, what the model shows of it, and that figure before and after.
struct ReadField {
  std::string doc_name;  ///< as the table names it
  std::string path;      ///< key path within the text model's object
  Json value;
  std::function<Json(const ModelConfig&)> shown;
  Json before, after;
  bool text_form_only = false;  ///< a field of the config's top level in either form (the model's name)
};

std::vector<ReadField> read_fields_table() {
  auto i64 = [](int64_t ModelConfig::*f) { return [f](const ModelConfig& m) { return Json(m.*f); }; };
  auto dbl = [](double ModelConfig::*f) { return [f](const ModelConfig& m) { return Json(m.*f); }; };
  auto name = [](const ModelConfig& m) { return Json(m.name); };
  return {
      {"vocab_size", "vocab_size", 1024, i64(&ModelConfig::vocab_size), 512, 1024},
      {"hidden_size", "hidden_size", 128, i64(&ModelConfig::hidden_size), 64, 128},
      {"num_hidden_layers", "num_hidden_layers", 8, i64(&ModelConfig::num_layers), 4, 8},
      {"num_attention_heads", "num_attention_heads", 8, i64(&ModelConfig::num_attention_heads), 4, 8},
      {"num_key_value_heads", "num_key_value_heads", 4, i64(&ModelConfig::num_kv_heads), 2, 4},
      {"head_dim", "head_dim", 32, i64(&ModelConfig::head_dim), 16, 32},
      {"rms_norm_eps", "rms_norm_eps", 1e-5, dbl(&ModelConfig::rms_norm_eps), 1e-6, 1e-5},
      {"rope_theta", "rope_theta", 500000.0, dbl(&ModelConfig::rope_theta), 1e7, 5e5},
      {"rope_parameters.rope_theta", "rope_parameters.rope_theta", 500000.0, dbl(&ModelConfig::rope_theta), 1e7, 5e5},
      {"partial_rotary_factor", "partial_rotary_factor", 0.25, i64(&ModelConfig::rope_dims), 8, 4},
      {"rope_parameters.partial_rotary_factor", "rope_parameters.partial_rotary_factor", 0.25,
       i64(&ModelConfig::rope_dims), 8, 4},
      {"linear_num_key_heads", "linear_num_key_heads", 4, i64(&ModelConfig::linear_num_key_heads), 2, 4},
      {"linear_num_value_heads", "linear_num_value_heads", 8, i64(&ModelConfig::linear_num_value_heads), 4, 8},
      {"linear_key_head_dim", "linear_key_head_dim", 32, i64(&ModelConfig::linear_key_head_dim), 16, 32},
      {"linear_value_head_dim", "linear_value_head_dim", 32, i64(&ModelConfig::linear_value_head_dim), 16, 32},
      {"linear_conv_kernel_dim", "linear_conv_kernel_dim", 2, i64(&ModelConfig::linear_conv_kernel), 4, 2},
      {"num_experts", "num_experts", 16, i64(&ModelConfig::num_experts), 8, 16},
      {"num_experts_per_tok", "num_experts_per_tok", 4, i64(&ModelConfig::top_k), 2, 4},
      {"moe_intermediate_size", "moe_intermediate_size", 48, i64(&ModelConfig::expert_ffn), 32, 48},
      {"shared_expert_intermediate_size", "shared_expert_intermediate_size", 64, i64(&ModelConfig::shared_expert_ffn),
       32, 64},
      {"layer_types", "layer_types", Json{"linear_attention", "full_attention", "linear_attention", "full_attention"},
       i64(&ModelConfig::full_attention_interval), 4, 2},
      {"full_attention_interval", "full_attention_interval", 2, i64(&ModelConfig::full_attention_interval), 4, 2},
      {"mtp_num_hidden_layers", "mtp_num_hidden_layers", 1, i64(&ModelConfig::mtp_layers), 0, 1},
      {"architectures", "architectures", Json{"Qwen3NextForCausalLM"}, name, "Qwen3_5MoeForCausalLM",
       "Qwen3NextForCausalLM", true},
      {"model_type", "model_type", "qwen3_next", name, "qwen3_5_moe_text", "qwen3_next", true},
  };
}

/// The text model's object of a config (the config itself, or its text_config).
Json& text_of(Json& c) { return c.contains("text_config") ? c["text_config"] : c; }

/// The base config of one row at one place: the field moved to the row's place (a rope_parameters field out of the
/// widths' level; full_attention_interval instead of layer_types, whose length is the layer count, for the interval
/// and layer-count rows; no architectures for the model_type row).
Json base_for(const ReadField& f, bool nested) {
  Json c = tiny_text_config();
  if (f.path.rfind("rope_parameters.", 0) == 0) {
    const std::string key = f.path.substr(16);
    c["rope_parameters"][key] = c.value(key, Json(0.5));
    c.erase(key);
  }
  if (f.path == "full_attention_interval" || f.path == "num_hidden_layers") {  // layer_types lists every layer
    c.erase("layer_types");
    c["full_attention_interval"] = 4;
  }
  if (f.path == "model_type") c.erase("architectures");
  return nested ? multimodal(c) : c;
}

}  // namespace

TEST_CASE("every config.json field the docs call read changes the model, at every place it may sit", "[models][hf]") {
  for (const ReadField& f : read_fields_table()) {
    for (const bool nested : {false, true}) {
      if (nested && f.text_form_only) continue;
      INFO(f.doc_name << (nested ? " under text_config" : " at the top level"));
      Json c = base_for(f, nested);
      const ModelConfig before = model_config_from_hf(c, "c.json", model_name_from_hf(c));
      CHECK(f.shown(before) == f.before);
      set_at(f.text_form_only ? c : text_of(c), f.path, f.value);
      const ModelConfig after = model_config_from_hf(c, "c.json", model_name_from_hf(c));
      CHECK(f.shown(after) == f.after);
    }
  }
  // The multimodal form reads the same model from text_config as the text form from its top level.
  const Json text = tiny_text_config();
  const ModelConfig flat = model_config_from_hf(text, "t.json", "m");
  const ModelConfig under = model_config_from_hf(multimodal(text), "t.json", "m");
  CHECK(count_params(flat).total == count_params(under).total);
  CHECK(count_params(flat).active == 177408);
  CHECK(flat.rope_dims == under.rope_dims);
}

TEST_CASE("each row docs/hf-config-fields.md marks read has its test", "[models][hf][docs]") {
  std::set<std::string> tested = {"text_config"};  // the multimodal place of every row above
  for (const ReadField& f : read_fields_table()) tested.insert(f.doc_name);
  const std::string doc = recipebench::test::read_file(recipebench::test::source_path("docs/hf-config-fields.md"));
  const std::regex row(R"(\n\| ([^|\n]*) \| read \|)");
  const std::regex name("`([^`]+)`");
  int rows = 0;
  for (auto r = std::sregex_iterator(doc.begin(), doc.end(), row); r != std::sregex_iterator(); ++r) {
    ++rows;
    const std::string cell = (*r)[1];
    for (auto n = std::sregex_iterator(cell.begin(), cell.end(), name); n != std::sregex_iterator(); ++n) {
      INFO("docs/hf-config-fields.md row: " << cell);
      CHECK(tested.count((*n)[1]) == 1);
    }
  }
  CHECK(rows >= 15);
}

TEST_CASE("rope_theta and partial_rotary_factor are read under rope_parameters and must agree at both places",
          "[models][hf]") {
  Json c = tiny_text_config();
  c.erase("partial_rotary_factor");
  c["rope_parameters"]["partial_rotary_factor"] = 0.25;  // Qwen3.5's own form: the factor only in rope_parameters
  CHECK(model_config_from_hf(c, "c.json", "m").rope_dims == 4);
  c["partial_rotary_factor"] = 0.25;  // both places, the same value
  CHECK(model_config_from_hf(c, "c.json", "m").rope_dims == 4);
  c["partial_rotary_factor"] = 0.5;
  CHECK_THROWS_WITH(model_config_from_hf(c, "c.json", "m"),
                    "c.json: rope_parameters.partial_rotary_factor: 0.25, expected 0.5, the value of "
                    "partial_rotary_factor (the field is read at both places; they must agree)");
  c = multimodal(tiny_text_config());
  c["text_config"]["rope_parameters"]["rope_theta"] = 5e5;
  CHECK_THROWS_WITH(model_config_from_hf(c, "c.json", "m"),
                    "c.json: text_config.rope_parameters.rope_theta: 500000.0, expected 10000000.0, the value of "
                    "text_config.rope_theta (the field is read at both places; they must agree)");
  c = tiny_text_config();
  c["rope_parameters"]["factor"] = 4.0;
  CHECK_THROWS_WITH(model_config_from_hf(c, "c.json", "m"),
                    Catch::StartsWith("c.json: rope_parameters.factor: 4.0, expected no such field"));
  c = tiny_text_config();
  c["full_attention_interval"] = 2;  // beside layer_types (every 4th): refused, never one of them ignored
  CHECK_THROWS_WITH(model_config_from_hf(c, "c.json", "m"),
                    "c.json: full_attention_interval: 2, expected 4, the interval layer_types gives (both are read; "
                    "they must agree)");
}

TEST_CASE("a config.json of a family the reader does not know is refused by its model_type first", "[models][hf]") {
  const std::string known =
      "expected qwen3_5_moe, qwen3_5_moe_text or qwen3_next (built and counted) or llama, mistral, mixtral, qwen2, "
      "qwen3, qwen3_moe, deepseek_v3 or gpt_oss (counted by formula; docs/hf-config-fields.md)";
  for (const char* family : {"qwen2_moe", "qwen3_vl_moe", "deepseek_v2"}) {
    Json c = tiny_text_config();  // Qwen3.5's fields, an unknown family's name: never counted as Qwen3.5
    c["model_type"] = family;
    CHECK_THROWS_WITH(model_config_from_hf(c, "c.json", "m"),
                      std::string("c.json: model_type: '") + family + "', " + known);
  }
  // Qwen3.5's fields under a counted family's name: read as that family, whose fields they are not.
  for (const char* family : {"qwen3_moe", "llama", "mixtral", "deepseek_v3"}) {
    Json c = tiny_text_config();
    c["model_type"] = family;
    CHECK_THROWS_WITH(model_config_from_hf(c, "c.json", "m"),
                      Catch::Contains(std::string("expected no such field of a ") + family + " config"));
  }
  Json c = tiny_text_config();
  c.erase("model_type");
  CHECK_THROWS_WITH(model_config_from_hf(c, "c.json", "m"), "c.json: model_type: missing, " + known);
  c["model_type"] = 7;
  CHECK_THROWS_WITH(model_config_from_hf(c, "c.json", "m"), "c.json: model_type: 7, " + known);
  // Checked before anything else: an unknown family with unknown fields names the family, not a field.
  c = Json{{"model_type", "gpt2"}, {"n_embd", 768}};
  CHECK_THROWS_WITH(model_config_from_hf(c, "c.json", "m"), "c.json: model_type: 'gpt2', " + known);
  c = multimodal(tiny_text_config());
  c["model_type"] = "qwen3_vl_moe";
  CHECK_THROWS_WITH(model_config_from_hf(c, "c.json", "m"), "c.json: model_type: 'qwen3_vl_moe', " + known);
  c = multimodal(tiny_text_config());
  c["text_config"]["model_type"] = "qwen3_moe";
  CHECK_THROWS_WITH(model_config_from_hf(c, "c.json", "m"),
                    "c.json: text_config.model_type: 'qwen3_moe', expected 'qwen3_5_moe_text' (the text model of "
                    "qwen3_5_moe; docs/hf-config-fields.md)");
  for (const std::string& t : hf_model_types()) {
    c = tiny_text_config();
    c["model_type"] = t;
    CHECK(count_params(model_config_from_hf(c, "c.json", "m")).active == 177408);
  }
}
