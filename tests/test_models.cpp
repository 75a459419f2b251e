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
                    "cfg.json: text_config.num_experts: missing, expected an integer >= 1");
  c = qwen35_397b_hf_config();
  c["text_config"]["hidden_size"] = "4096";
  CHECK_THROWS_WITH(model_config_from_hf(c, "cfg.json", "x"), Catch::Contains("text_config.hidden_size: \"4096\""));
  c = qwen35_397b_hf_config();
  c["text_config"]["layer_types"][5] = "full_attention";
  CHECK_THROWS_WITH(model_config_from_hf(c, "cfg.json", "x"), Catch::Contains("text_config.layer_types[5]"));
  CHECK_THROWS_WITH(load_hf_config("/nonexistent/config.json"), Catch::Contains("cannot read"));
}
