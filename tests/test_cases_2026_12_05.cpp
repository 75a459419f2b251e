// The field cases of 2026-12-05 (issue 48; tests/data/cases/<case>/, copied from the cases' inputs): each input with
// the result its expect.txt names, and the variants of the same kind of fault.
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "catalog/hardware.h"
#include "catalog/models.h"
#include "console/emulation_table.h"
#include "harness/cli/subcommand_hint.h"
#include "metrics/metrics.h"
#include "plan/collective_time.h"
#include "plan/memory_check.h"
#include "recipe/source_doc.h"
#include "recipe/validate.h"
#include "record/run_record.h"
#include "record/run_record_check.h"
#include "report/compare.h"
#include "report/report_inputs.h"
#include "test_util.h"
#include "util/atomic_file.h"
#include "util/format.h"

using namespace recipebench;
using recipebench::test::case_path;
using recipebench::test::recipe_file_errors;
using recipebench::test::source_path;

namespace {

/// Every error of a validation, one line each, joined by newlines (for Contains checks).
std::string all_errors(const ValidatedRecipe& v) {
  std::string out;
  for (const auto& d : v.errors) out += d.to_string() + "\n";
  return out;
}

/// `text` with the first `from` replaced by `to`; fails the test when `from` is not there.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

const std::string kDense = "dense-model-recipe-friction/";

}  // namespace

TEST_CASE("report-reads-config-json-as-run-record: each file report walks into is classified first",
          "[cases][report]") {
  CHECK(classify_yaml(Json{{"schema_version", 1}}) == YamlKind::kRecipe);
  CHECK(classify_yaml(Json{{"model", "x"}, {"layout", Json::object()}}) == YamlKind::kRecipe);  // schema_version lost
  CHECK(classify_yaml(Json{{"gpus", Json::array()}, {"x-note", "mine"}}) == YamlKind::kCatalog);
  CHECK(classify_yaml(Json{{"model", "x"}, {"lr", 1e-4}}) == YamlKind::kOther);  // a training config, say
  CHECK(classify_yaml(Json::array()) == YamlKind::kOther);
  const std::string dir = case_path("report-reads-config-json-as-run-record/");
  CHECK(classify_yaml(load_yaml_file(dir + "my-catalog.yaml").value) == YamlKind::kCatalog);
  const std::string recipe = dir + "recipes/deepseek-v3/h800/dsv3-pp16-ep64-dp128.yaml";
  CHECK(classify_yaml(load_yaml_file(recipe).value) == YamlKind::kRecipe);

  const std::string config = dir + "recipes/deepseek-v3/h800/config.json";
  CHECK(classify_json(read_json_file(config)) == JsonKind::kOtherDocument);  // a Hugging Face config: no "schema"
  CHECK(classify_json(Json{{"schema", "recipebench-run-record/1"}}) == JsonKind::kRunRecord);
  CHECK(classify_json(Json{{"schema", "recipebench-run-record/2"}}) == JsonKind::kRunRecord);  // refused when read
  CHECK(classify_json(Json{{"schema", "recipebench-leaderboard/1"}}) == JsonKind::kEarlierReport);
  CHECK(classify_json(Json{{"schema", "recipebench-prediction/1"}}) == JsonKind::kOtherDocument);
  CHECK(classify_json(Json::array()) == JsonKind::kOtherDocument);

  // The recipe names its config.json relative to its folder; the same file given another way is the same path.
  const auto named = files_named_by_recipe(load_yaml_file(recipe).value, recipe);
  REQUIRE(named.size() == 1);
  CHECK(named[0] == canonical_path(dir + "recipes/deepseek-v3/../deepseek-v3/h800/config.json"));
  CHECK(files_named_by_recipe(Json{{"model_params", Json{{"config", 7}}}}, recipe).empty());
  CHECK(files_named_by_recipe(Json{{"model_params", Json{{"config", "hf/c.json"}}}}, "/r/a.yaml") ==
        std::vector<std::string>{canonical_path("/r/hf/c.json")});
}

TEST_CASE("dense-model-recipe-friction: the dense recipe as first written passes, every step after it too", "[cases]") {
  const ValidatedRecipe v = validate_recipe_file(case_path(kDense + "step1-as-written.yaml"));
  INFO(all_errors(v));
  REQUIRE(v.ok());
  CHECK(v.recipe->gpu.type == "A100 80GB");  // gpu.type A100 + memory_gb 80: the one A100 of 80 GB
  CHECK(v.recipe->gpu.type_written == "A100");
  CHECK_FALSE(v.recipe->layout.dispatcher_stated);
  CHECK_FALSE(v.recipe->result->window_tokens_stated);
  CHECK(v.recipe->result->window_tokens == 94371840);  // 90 steps (10..99) x 128 rows x 8192 tokens
  bool resolved_note = false;
  for (const auto& w : v.warnings)
    resolved_note = resolved_note || (w.path == "gpu.type" && w.severity == "warning" &&
                                      w.found == "A100 with memory_gb 80, read as A100 80GB");
  CHECK(resolved_note);
  for (const char* step : {"step2-dispatcher-null.yaml", "step3-dispatcher-alltoall.yaml", "step4-a100-80gb.yaml"}) {
    const ValidatedRecipe s = validate_recipe_file(case_path(kDense + step));
    INFO(step << "\n" << all_errors(s));
    CHECK(s.ok());
  }
}

TEST_CASE("dense-model-recipe-friction variants: what is still refused, and all in one pass", "[cases]") {
  const std::string file = case_path(kDense + "variant.yaml");  // beside the config.json the recipe names
  const std::string step1 = test::read_file(case_path(kDense + "step1-as-written.yaml"));

  // A family the memory does not single out: its members named.
  ValidatedRecipe v = validate_recipe_text(replaced(step1, "memory_gb: 80", "memory_gb: 60"), file);
  CHECK_THAT(all_errors(v), Catch::Contains(":6:9: error: gpu.type: 'A100' with memory_gb 60, which is not one of "
                                            "A100 40GB, A100 80GB, expected one of A100 40GB, A100 80GB"));
  v = validate_recipe_text(replaced(step1, "memory_gb: 80", "memory_gb: 40"), file);
  INFO(all_errors(v));
  CHECK(v.ok());
  CHECK(v.recipe->gpu.type == "A100 40GB");
  CHECK(resolve_gpu("a100", 74.5) == find_gpu("A100 80GB"));  // its 80 GB written in GiB
  CHECK(resolve_gpu("H100", 94) == find_gpu("H100"));         // a name is a name: memory not consulted
  CHECK(resolve_gpu("A10", 80) == nullptr);                   // no family: "A100 80GB" does not begin "A10 "

  // A stated window_tokens is still checked.
  v = validate_recipe_text(replaced(step1, "  runs: 1", "  window_tokens: 94371841\n  runs: 1"), file);
  CHECK_THAT(all_errors(v), Catch::Contains("error: result.window_tokens: 94,371,841, expected 94,371,840 = 90 steps "
                                            "x 128 rows x 8192 tokens"));
  // ep may be left out for a dense model; ep 2 is refused.
  v = validate_recipe_text(replaced(step1, "  ep: 1\n", ""), file);
  CHECK(v.ok());
  v = validate_recipe_text(replaced(step1, "  ep: 1\n", "  ep: 2\n"), file);
  CHECK_THAT(all_errors(v), Catch::Contains("layout.ep: EP 2 on Llama-3.1-8B, a dense model (no experts)"));

  // A model with experts still names its dispatcher; absent or null is refused, naming why.
  const std::string seed = test::read_file(test::seed_recipe("attune-48gpu-tp2-pp6-ep8"));
  const std::string seed_file = test::seed_recipe("attune-48gpu-tp2-pp6-ep8");
  for (const char* to : {"", "  dispatcher: null\n"}) {
    v = validate_recipe_text(replaced(seed, "  dispatcher: alltoall\n", to), seed_file);
    CHECK_THAT(all_errors(v), Catch::Contains("error: layout.dispatcher: missing (Qwen3.5-397B-A17B has 512 experts), "
                                              "expected one of alltoall, allgather, flex or deepep (the MoE token "
                                              "dispatcher; a dense model needs none)"));
  }

  // One pass: a schema error and an unknown GPU type are reported together.
  v = validate_recipe_text(replaced(replaced(step1, "type: A100", "type: A1000"), "  rows: pretraining text",
                                    "  rows: pretraining text\n  seq_length: 8192"),
                           file);
  const std::string errors = all_errors(v);
  CHECK_THAT(errors, Catch::Contains("error: gpu.type: unknown GPU 'A1000'"));
  CHECK_THAT(errors, Catch::Contains("workload.seq_length"));
  CHECK(v.errors.size() == 2);
  CHECK(v.errors[0].path == "gpu.type");  // in the order of the file
}

TEST_CASE("plan-search-space-and-cli: an unknown option is named with the option it most likely means",
          "[cases][cli]") {
  const std::map<std::string, std::vector<cli::OptionSpec>> options{
      {"plan", {{"--model", true}, {"--gpu", true}, {"--count", true}, {"--row-tokens", true}, {"--help", false}}},
      {"converge", {{"--note", true}, {"--format", true}}},
      {"run", {{"--emulate-rank", true}, {"--dry-run", false}}}};
  using cli::unknown_option_message;
  CHECK(unknown_option_message("plan", {"--model", "X", "--gpus", "8"}, options) ==
        "<command line>: error: plan: unknown option '--gpus' (did you mean '--count'?); its options: --model, --gpu, --count, "
        "--row-tokens, --help (recipebench help plan)");
  CHECK_THAT(*unknown_option_message("plan", {"--seq-length=8192"}, options),
             Catch::StartsWith("<command line>: error: plan: unknown option '--seq-length' (did you mean '--row-tokens'?)"));
  CHECK_THAT(*unknown_option_message("plan", {"--modle", "X"}, options),
             Catch::StartsWith("<command line>: error: plan: unknown option '--modle' (did you mean '--model'?)"));
  CHECK_THAT(*unknown_option_message("plan", {"--dry-run"}, options),
             Catch::StartsWith("<command line>: error: plan: unknown option '--dry-run' (an option of run, not of plan)"));
  CHECK_THAT(*unknown_option_message("plan", {"--zzzzzz"}, options),
             Catch::StartsWith("<command line>: error: plan: unknown option '--zzzzzz'; its options:"));
  // A value that looks like an option is the value of the option before it; nothing after `--` is read.
  CHECK_FALSE(unknown_option_message("converge", {"a.json", "--note", "--not-an-option"}, options));
  CHECK_FALSE(unknown_option_message("plan", {"--count", "8", "--", "--gpus"}, options));
  CHECK_FALSE(unknown_option_message("plan", {"--count=8", "-h"}, options));
}

TEST_CASE("cosmetic-output: figures below the printed precision keep two significant digits", "[cases]") {
  CHECK(fixed_significant(0.039, 2, 2) == "0.039");
  CHECK(fixed_significant(0.0016, 2, 2) == "0.0016");
  CHECK(fixed_significant(1.77, 2, 2) == "1.77");
  CHECK(fixed_significant(1232.53, 2, 2) == "1232.53");
  CHECK(fixed_significant(0, 2, 2) == "0.00");
  CHECK(fixed_significant(1e-12, 2, 2) == "0.00000000");  // at most 8 decimals
}

TEST_CASE("cosmetic-output: the scale-up link is named as the catalog names it", "[cases]") {
  REQUIRE(find_gpu("MI300X") != nullptr);
  CHECK(scale_up_name(*find_gpu("MI300X")) == "Infinity Fabric");
  CHECK(scale_up_name(*find_gpu("H100")) == "NVLink 4");
  GpuSpec own;
  CHECK(scale_up_name(own) == "scale-up link");
}

TEST_CASE("cosmetic-output: validate's note on a config.json model says how it is counted", "[cases]") {
  const std::string file = case_path("cosmetic-output/llama31-8b-a100-tp1-dp8.yaml");
  const ValidatedRecipe v = validate_recipe_file(file);
  REQUIRE(v.ok());
  // A Llama: its analytical plan does not fit, and the warning says how the model is counted.
  const auto d = check_memory_fits(*v.recipe, file, false);
  REQUIRE(d);
  CHECK_THAT(d->found, Catch::Contains("(counted by the llama formula from " +
                                       case_path("cosmetic-output/llama31-8b-config.json") + ")"));
}

TEST_CASE("cosmetic-output: a file compared with itself is named", "[cases][report]") {
  const std::string dir = case_path("leaderboard-repeated-runs-mixed-commits/");
  const std::string a = dir + "proxy4l-2gpu-dp2-bf16-20261130T000607Z.json";
  const std::string b = dir + "proxy4l-2gpu-dp2-bf16-20261130T210302Z.json";
  CHECK(same_input_warning(a, a) ==
        "A and B are the same file (" + a + "): an input compared with itself agrees by construction");
  CHECK(same_input_warning(
      a, dir + "../leaderboard-repeated-runs-mixed-commits/" + "proxy4l-2gpu-dp2-bf16-20261130T000607Z.json"));
  CHECK_FALSE(same_input_warning(a, b));
  const auto copy = std::filesystem::temp_directory_path() / "recipebench-same-input-copy.json";
  write_file_atomic(copy.string(), test::read_file(a));
  CHECK_THAT(*same_input_warning(a, copy.string()), Catch::StartsWith("A and B are identical files ("));
  std::filesystem::remove(copy);
}

TEST_CASE("mfu-differs-from-framework-mfu: a result.mfu is checked by the convention the recipe states", "[cases]") {
  const std::string file = case_path("mfu-differs-from-framework-mfu/llama31-8b-a100-titan-mfu.yaml");
  const std::string text = test::read_file(file);
  // As written (TorchTitan's 0.5754, no convention stated): checked as 6N, refused with the 6N figure.
  ValidatedRecipe v = validate_recipe_text(text, file);
  CHECK_THAT(all_errors(v), Catch::Contains("error: result.mfu: 0.5754, expected 0.4474 = 6 x 7,504,658,432"));
  // Stated: (6 x 7,504,658,432 + 12 x 32 x 32 x 128 x 8192) x 3100 / 312e12 = 0.5754.
  v = validate_recipe_text(replaced(text, "  mfu: 0.5754\n", "  mfu: 0.5754\n  mfu_convention: 6N+attention\n"), file);
  INFO(all_errors(v));
  CHECK(v.ok());
  CHECK(v.recipe->result->mfu_convention == MfuConvention::k6NAttention);
  // The 6N figure under the attention convention is refused, naming the attention FLOPs.
  v = validate_recipe_text(replaced(text, "  mfu: 0.5754\n", "  mfu: 0.4474\n  mfu_convention: 6N+attention\n"), file);
  CHECK_THAT(all_errors(v), Catch::Contains("error: result.mfu: 0.4474 (6N+attention), expected 0.5754 = (6 x "
                                            "7,504,658,432 + 12,884,901,888 attention FLOPs per token of 8192-token "
                                            "rows)"));
  v = validate_recipe_text(replaced(text, "  mfu: 0.5754\n", "  mfu: 0.4474\n  mfu_convention: 6N\n"), file);
  CHECK(v.ok());
  // The formula: PaLM's 12·L·H·Q·T when d_qk = d_v = Q; MLA's two dims (DeepSeek-V3: 192 and 128).
  CHECK(attention_flops_per_token(32, 32, 128, 128, 8192) == 12.0 * 32 * 32 * 128 * 8192);
  CHECK(attention_flops_per_token(61, 128, 192, 128, 4096) == 6.0 * 61 * 128 * 4096 * (192 + 128));
}

TEST_CASE("cosmetic-output: an emulated rank's peak over its plan reads as a ratio, with the CPU's caveat", "[cases]") {
  // The committed H200 emulation of the mt16k seed's middle stage: peak / plan 0.9803.
  const std::string file = source_path(
      "reports/bench/h200-2026-12-02-emulate/call1/attune-tp2-pp8-ep8-vpp2-mt16k-middle/"
      "attune-tp2-pp8-ep8-vpp2-mt16k-20261202T072324Z.json");
  RunRecord r = RunRecord::from_json(read_json_file(file), file);
  REQUIRE(r.options.settings.device == Device::kCuda);
  std::string text = format_emulation(r);
  CHECK_THAT(text, Catch::Contains("for this rank (0.98x the plan)\n"));
  r.options.settings.device = Device::kCpu;  // on the CPU the peak is the process's RSS: said so
  text = format_emulation(r);
  CHECK_THAT(text, Catch::Contains("(0.98x the plan; on the CPU the peak is the whole process's resident memory, "
                                   "libtorch's own included, which the plan does not count"));
}
