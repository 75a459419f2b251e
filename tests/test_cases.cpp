// The field cases of 2026-11-30 (tests/data/cases/<case>/, copied from the cases' inputs): each input with the
// result its expect.txt names: exit status, and for errors the exact located line.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "catalog/hf_config.h"
#include "metrics/derive.h"
#include "plan/memory_check.h"
#include "recipe/source_doc.h"
#include "recipe/validate.h"
#include "record/run_record.h"
#include "report/leaderboard.h"
#include "test_util.h"
#include "util/input_file.h"

using namespace recipebench;
using recipebench::test::case_path;
using recipebench::test::recipe_file_errors;
using recipebench::test::source_path;

TEST_CASE("proxy-mfu-depth: a proxy recipe's N and MFU are those of the 4 layers that ran", "[cases]") {
  // N_active of the 4-layer Qwen3.5-35B-A3B = 752,328,704; MFU = 6 x N x 18871.26 / 989.4e12 = 0.0861.
  CHECK(recipe_file_errors(case_path("proxy-mfu-depth/proxy4l-result-proxy-count.yaml")).empty());
  const std::string full = case_path("proxy-mfu-depth/proxy4l-result-full-count.yaml");
  const auto errors = recipe_file_errors(full);
  REQUIRE(errors.size() == 2);
  CHECK(errors[0] == full +
                         ":46:8: error: result.mfu: 0.3372, expected 0.0861 = 6 x 752,328,704 (4-layer "
                         "Qwen3.5-35B-A3B) x 18871.26 / 9.894e+14 (H200 dense BF16 FLOP/s), to the printed "
                         "precision");
  CHECK(errors[1] == full +
                         ":48:12: error: result.active_params.count: 2,946,252,800, expected 752,328,704 active "
                         "parameters of the 4-layer Qwen3.5-35B-A3B that ran (docs/metrics.md: N_active of the "
                         "layers and widths that ran)");
}

TEST_CASE("the leaderboard's MFU of a run is the run record's, from the N the record holds", "[cases][report]") {
  // A run of a model given by --model-config: its N (here the 170,688 of hf-mlp-only-layers' config with layer
  // 0 dense) is not the registry model's; the leaderboard must not recompute it from registry widths.
  const ValidatedRecipe v = validate_recipe_file(case_path("proxy-mfu-depth/proxy4l-result-proxy-count.yaml"));
  REQUIRE(v.ok());
  RunRecord rec;
  rec.recipe_path = v.file;
  rec.recipe = v.recipe->doc;
  rec.options.settings.device = Device::kCuda;
  rec.model_name = "tiny-config";
  rec.model_layers = rec.model_layers_full = 4;
  rec.status = RunStatus::kComplete;
  rec.environment.device = BackendEnvironment{"NVIDIA H200", 1, 0, "", "", "", ""};
  rec.environment.build_type = "Release";
  RunMetrics m;
  m.window.window = StepWindow{5, 19};
  m.window.tokens = 245760;
  m.window.seconds = 245760.0 / 18871.26;
  m.window.tokens_per_s_per_gpu = 18871.26;
  m.active_params = 170688;
  m.peak_flops = 989.4e12;
  m.mfu = 6.0 * 170688 * 18871.26 / 989.4e12;
  rec.metrics = m;
  const Leaderboard board = build_leaderboard({}, ReportOptions{}, {RunRecordInput{"r.json", rec}});
  REQUIRE(board.groups.size() == 1);
  const LeaderboardEntry& e = board.groups[0].entries.at(0);
  CHECK(e.active_params == 170688);
  REQUIRE(e.mfu);
  CHECK(*e.mfu == Approx(*m.mfu).epsilon(1e-12));
}

TEST_CASE("sp-row-tokens-tp: rows not divisible by TP under sequence parallel fail validate at row_tokens", "[cases]") {
  const std::string tiny = case_path("sp-row-tokens-tp/tiny-tp2-row127.yaml");
  const std::string stage = case_path("sp-row-tokens-tp/stage-tp2-row8191.yaml");
  const std::string tail =
      ", expected row_tokens divisible by TP = 2 (sequence parallel splits every row's sequence "
      "over the TP ranks)";
  CHECK(recipe_file_errors(tiny) ==
        std::vector<std::string>{tiny +
                                 ":16:15: error: workload.row_tokens: 127-token rows, not divisible by TP 2 "
                                 "under sequence parallel" +
                                 tail});
  CHECK(recipe_file_errors(stage) ==
        std::vector<std::string>{stage +
                                 ":20:15: error: workload.row_tokens: 8191-token rows, not divisible by TP 2 "
                                 "under sequence parallel" +
                                 tail});
}

TEST_CASE("yaml-merge-key: '<<: *defaults' is merged, and equals the recipe written out", "[cases][yaml]") {
  const ValidatedRecipe merged = validate_recipe_file(case_path("yaml-merge-key/tiny-dp2-merge.yaml"));
  const ValidatedRecipe plain = validate_recipe_file(source_path("tests/data/dist/tiny-dp2.yaml"));
  const ValidatedRecipe control = validate_recipe_file(case_path("yaml-merge-key/tiny-dp2-alias-control.yaml"));
  REQUIRE(merged.ok());
  REQUIRE(plain.ok());
  CHECK(control.ok());
  Json doc = merged.recipe->doc;
  doc.erase("x-layout-defaults");
  CHECK(doc == plain.recipe->doc);
  // Locations of merged fields point at the merged source: layout.tp is written at line 19 (the anchor's block).
  const SourceDoc src = load_yaml_file(case_path("yaml-merge-key/tiny-dp2-merge.yaml"));
  CHECK(src.mark("/layout/tp").line == 19);
  CHECK(src.mark("/layout/label").line == 36);
  // The mapping's own keys win over merged ones, whatever their order.
  const SourceDoc own = parse_yaml("d: &d {a: 1, b: 2}\nm:\n  b: 3\n  <<: *d\n", "m.yaml");
  CHECK(own.value["m"].size() == 2);
  CHECK(own.value["m"]["a"] == 1);
  CHECK(own.value["m"]["b"] == 3);
  CHECK_THROWS_WITH(parse_yaml("m:\n  <<: 5\n", "m.yaml"),
                    "m.yaml:2:3: error: m.<<: a merge key '<<' whose value is not a mapping, expected an alias of a "
                    "mapping (<<: *name) or a list of them");
}

TEST_CASE("single-step-window-cv: a one-step window is refused by validate as by run", "[cases]") {
  const std::string f = case_path("single-step-window-cv/attune-window-19-19.yaml");
  CHECK(recipe_file_errors(f) == std::vector<std::string>{
                            f + ":92:3: error: result.window: window 19..19 holds 1 step, expected at least 2 (the "
                                "step-time CV is a sample standard deviation: n - 1 >= 1)"});
  CHECK(window_problem(StepWindow{19, 19}, 20) ==
        "window 19..19 holds 1 step, expected at least 2 (the step-time CV "
        "is a sample standard deviation: n - 1 >= 1)");
  CHECK(window_problem(StepWindow{18, 19}, 20).empty());
}

TEST_CASE("fuzz inputs: every one ends in one located error, none crashes", "[cases][fuzz]") {
  struct Case {
    const char* file;
    const char* error;
  };
  const Case cases[] = {
      {"fpe-tp.yaml", ":60:7: error: layout.tp: 4294967296, expected a value <= 32768"},
      {"narrow-tp.yaml", ":60:7: error: layout.tp: 4294967298, expected a value <= 32768"},
      {"e309.yaml", ":1:4: error: a: number 1e309 out of range, expected a number within +-1.8e308"},
      {"alias-self.yaml",
       ":1:4: error: a[0]: a recursive alias (the value contains itself), expected an alias of a "
       "complete value"},
      {"badutf8.yaml", ":1:9: error: byte 0xFF that is not UTF-8, expected UTF-8 text"},
  };
  for (const auto& c : cases) {
    const std::string f = case_path(std::string("fuzz/") + c.file);
    INFO(c.file);
    CHECK(recipe_file_errors(f) == std::vector<std::string>{f + c.error});
  }
}

TEST_CASE("a billion-laughs document fails fast with a located error", "[cases][fuzz][yaml]") {
  std::string text = "x-l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i <= 9; ++i) {
    text += "x-l" + std::to_string(i) + ": &l" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) text += (k ? ", *l" : "*l") + std::to_string(i - 1);
    text += "]\n";
  }
  const auto start = std::chrono::steady_clock::now();
  const ValidatedRecipe v = validate_recipe_text(text, "laughs.yaml");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(seconds < 1.0);
  REQUIRE(v.errors.size() == 1);
  CHECK_THAT(v.errors[0].to_string(),
             Catch::StartsWith("laughs.yaml:") && Catch::Contains("a document that expands to more than 10000 values"));
}

TEST_CASE("numbers beyond their type and control characters give located errors", "[cases][fuzz][yaml]") {
  CHECK_THROWS_WITH(parse_yaml("a: 9223372036854775808\n", "n.yaml"),
                    "n.yaml:1:4: error: a: integer 9223372036854775808 out of range, expected an integer within "
                    "+-9,223,372,036,854,775,807");
  CHECK_THROWS_WITH(parse_yaml("a: 1\nb: x\x01y\n", "c.yaml"),
                    Catch::StartsWith("c.yaml:2:5: error: control character 0x01"));
  CHECK_THROWS_WITH(parse_yaml(std::string("a: 1\0\n", 6), "z.yaml"),
                    Catch::StartsWith("z.yaml:1:5: error: control character 0x00"));
  // A value with an escaped newline cannot forge a second diagnostic line.
  std::string recipe = test::read_file(source_path("tests/data/dist/tiny-dp2.yaml"));
  const std::string model = "model: Qwen3.5-tiny";
  recipe.replace(recipe.find(model), model.size(), "model: \"x\\nforged.yaml:1:1: error: forged\"");
  const ValidatedRecipe v = validate_recipe_text(recipe, "f.yaml");
  REQUIRE(v.errors.size() == 1);
  CHECK(v.errors[0].to_string() ==
        "f.yaml:4:8: error: model: unknown model 'x\\nforged.yaml:1:1: error: forged', expected a registry model "
        "(Qwen3.5-397B-A17B, Qwen3.5-122B-A10B, Qwen3.5-35B-A3B, Qwen3.5-tiny), or the model's parameter counts: "
        "model_params.config (a Hugging Face config.json), or stated counts with their source (model_params.active "
        "and source, or result.active_params count and source; docs/metrics.md)");
  CHECK(escape_controls("a\nb\x01\xff") == "a\\nb\\x01\\xff");
  CHECK(escape_controls("caf\xc3\xa9") == "caf\xc3\xa9");
  // Invisible, space-like, line-breaking and reordering characters are named (the fuzz bench's key "\_00").
  CHECK(escape_controls("\xc2\xa0"
                        "00") == "\\u00a000");
  CHECK(escape_controls("a\xc2\x85"
                        "b\xe2\x80\xa8"
                        "c\xe2\x80\xae"
                        "d\xef\xbb\xbf"
                        "e\xe2\x80\x8b") == "a\\u0085b\\u2028c\\u202ed\\ufeffe\\u200b");
  CHECK(escape_controls("\xe2\x80\x94 \xc2\xb5s \xe2\x80\x99") ==
        "\xe2\x80\x94 \xc2\xb5s \xe2\x80\x99");  // em dash, micro, quote
}

TEST_CASE("hf-mlp-only-layers: a config.json field that changes the model is refused, naming it", "[cases][hf]") {
  const std::string f = case_path("hf-mlp-only-layers/config-mlp-only-layer0.json");
  CHECK_THROWS_WITH(load_hf_config(f), f + ":43:22: error: mlp_only_layers: [0], expected [] (recipebench builds "
                                           "every decoder layer as a sparse MoE block; dense MLP layers are not "
                                           "supported; docs/hf-config-fields.md)");
  // The same config without the dense layer is the tiny model: all-MoE N = 177,408, named from the config.
  Json c = Json::parse(test::read_file(f));
  c["mlp_only_layers"] = Json::array();
  const ModelConfig m = model_config_from_hf(c, "c.json", model_name_from_hf(c));
  CHECK(m.name == "Qwen3NextForCausalLM");
  CHECK(count_params(m).active == 177408);
  CHECK(count_params(m).active == count_params(*find_model("Qwen3.5-tiny")).active);
  c["decoder_sparse_step"] = 2;
  CHECK_THROWS_WITH(model_config_from_hf(c, "c.json", "x"),
                    Catch::StartsWith("c.json: decoder_sparse_step: 2, expected 1"));
  c["decoder_sparse_step"] = 1;
  c["some_new_field"] = true;
  CHECK_THROWS_WITH(model_config_from_hf(c, "c.json", "x"),
                    Catch::StartsWith("c.json: some_new_field: true, expected no such field"));
}

TEST_CASE("convergence-pass-contradicts-figures (2026-12-02): a pass beside failing figures is refused at the verdict",
          "[cases]") {
  const std::string file = case_path("convergence-pass-contradicts-figures/attune-48gpu-claims-pass-corr0.2.yaml");
  const auto errors = recipe_file_errors(file);
  REQUIRE(errors.size() == 2);
  CHECK(errors[0] == file +
                         ":116:13: error: correctness.convergence.result: pass, expected fail: 15 pointwise "
                         "failures over 20 steps");
  CHECK(errors[1] == file +
                         ":116:13: error: correctness.convergence.result: pass, expected fail: correlation 0.2 of "
                         "the loss curves, below 0.95 (docs/correctness.md)");
}

TEST_CASE(
    "hf-config-unsupported-family (2026-12-02): each family's config.json counted by its model_type, a Qwen3.5-shaped "
    "qwen3_moe refused at its first Qwen3.5 field",
    "[cases][hf]") {
  // Counted by their family's formula (docs/metrics.md, "Parameter counts by family"; tests/test_model_families.cpp).
  CHECK(count_params(load_hf_config(case_path("hf-config-unsupported-family/qwen3-30b-a3b.json"))).total ==
        30532122624);
  CHECK(count_params(load_hf_config(case_path("hf-config-unsupported-family/mixtral-8x7b.json"))).total ==
        46702792704);
  CHECK(count_params(load_hf_config(case_path("hf-config-unsupported-family/llama-3.1-8b.json"))).total == 8030261248);
  // Qwen3.5's fields under qwen3_moe: read as qwen3_moe, whose fields they are not; never counted as Qwen3.5.
  const std::string f = case_path("hf-config-unsupported-family/tiny-wrong-model-type.json");
  CHECK_THROWS_WITH(load_hf_config(f), f + ":15:29: error: full_attention_interval: 4, expected no such field of a "
                                           "qwen3_moe config: recipebench counts the fields of docs/hf-config-fields.md "
                                           "(a field that may change the count is never ignored)");
  // The same tiny config named as Qwen3.5's text model is read: 177,408 active parameters.
  Json j = Json::parse(test::read_file(case_path("hf-config-unsupported-family/tiny-wrong-model-type.json")));
  j["model_type"] = "qwen3_5_moe_text";
  CHECK(count_params(model_config_from_hf(j, "c.json", model_name_from_hf(j))).active == 177408);
  // Any field fault of a file is located at its value; a missing field at the object that should hold it.
  Json mm = Json{{"model_type", "qwen3_5_moe"}, {"text_config", j}};
  mm["text_config"].erase("model_type");
  mm["text_config"]["layer_types"][1] = "sliding_attention";
  const std::string tmp = (std::filesystem::temp_directory_path() / "recipebench-hf-located.json").string();
  std::ofstream(tmp) << mm.dump(1);  // one space a level: layer_types[1] is line 12, column 4
  CHECK_THROWS_WITH(load_hf_config(tmp), tmp +
                                             ":12:4: error: text_config.layer_types[1]: \"sliding_attention\", "
                                             "expected 'linear_attention' (full attention every 4th layer)");
  mm["text_config"]["layer_types"][1] = "linear_attention";
  mm["text_config"].erase("num_experts");
  std::ofstream(tmp) << mm.dump(1);
  CHECK_THROWS_WITH(load_hf_config(tmp), tmp +
                                             ":3:17: error: text_config.num_experts: missing, expected an "
                                             "integer from 1 to 1048576");
  std::filesystem::remove(tmp);
}

TEST_CASE(
    "strict-fails-verified-seed (2026-12-02): a verified seed of another stack stays a warning under --strict, "
    "located at the field that fixes its largest term",
    "[cases][strict]") {
  const std::string dir = case_path("strict-fails-verified-seed/recipes/qwen3.5-397b-a17b/");
  const std::string b200 = dir + "b200/attune-48gpu-tp2-pp6-ep8.yaml";
  const ValidatedRecipe seed = validate_recipe_file(b200);
  REQUIRE(seed.ok());
  const std::optional<Diagnostic> strict = check_memory_fits(*seed.recipe, b200, true);
  REQUIRE(strict);
  CHECK(strict->severity == "warning");
  CHECK_THAT(strict->to_string(),
             Catch::StartsWith(b200 + ":61:7: warning: layout.pp: the memory plan of recipebench's torch backend does "
                                      "not fit: the first stage (pipeline rank 0) needs 180.2 GB") &&
                 Catch::Contains("layout.pp 10 (80 GPUs): the worst rank needs 112.2 GB") &&
                 Catch::EndsWith("measured with slime with local patches, not pinned (stack.framework), whose memory "
                                 "it does not model: a warning, also with --strict"));
  // The user's 32 x H100 copy: no one-field change fits 80 GB; located at layout.pp, not at max_tokens_per_gpu (69).
  const std::string h100 = dir + "h100/my-32gpu-tp2-pp4-ep8.yaml";
  const ValidatedRecipe copy = validate_recipe_file(h100);
  REQUIRE(copy.ok());
  const std::optional<Diagnostic> d = check_memory_fits(*copy.recipe, h100, false);
  REQUIRE(d);
  CHECK(d->line == 61);
  CHECK(d->path == "layout.pp");
  CHECK_THAT(d->found, Catch::Contains("needs 265.2 GB at its peak, more than the H100's 80.0 GB; largest term: "
                                       "optimizer state (FP32 masters and Adam moments) (152.5 GB)"));
  CHECK_THAT(d->expected, Catch::StartsWith("a peak and reserve within the H100's 80.0 GB, which no change of one field gives "
                                            "(layout.pp 6 (48 GPUs): the worst rank needs 180.2 GB; layout.dp 8 (64 "
                                            "GPUs): the worst rank needs 237.5 GB)"));
}
