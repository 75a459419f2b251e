// The bad recipes of tests/data/bad: each is a seed recipe with exactly one defect, and `validate` must report
// exactly that one problem, at the right place, with the right field path and a telling message.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "recipe/validate.h"
#include "test_util.h"

namespace fs = std::filesystem;
using recipebench::test::source_path;

namespace {

struct BadRecipe {
  const char* stem;  ///< tests/data/bad/<stem>.yaml
  int line;          ///< where the one error is located (1-based)
  int column;
  const char* path;  ///< its dotted field path ("" for the document itself)
  const char* text;  ///< a distinctive part of its found / expected text
};

// One row per fixture. Locations were read off the fixtures: the offending value, the key for unknown and
// duplicate keys, the key of the mapping that lacks a missing required field, the mapping for layer_split and
// the offending bound for result.window, the parser's position for malformed YAML, 1:1 for an empty file.
const BadRecipe kBadRecipes[] = {
    // Layout arithmetic (docs/layout-arithmetic.md).
    {"cp-not-dividing-row-tokens", 64, 7, "layout.cp", "divisible by 2 x CP = 6"},
    {"world-size-mismatch", 8, 10, "gpu.count", "TP x CP x DP x PP = 2 x 1 x 4 x 6 = 48 GPUs"},
    {"per-node-not-dividing-count", 9, 13, "gpu.per_node", "a divisor of gpu.count 48"},
    {"ep-not-dividing-experts", 65, 7, "layout.ep", "a divisor of the 512 experts"},
    {"expert-grid-not-whole", 65, 7, "layout.ep", "EDP = 48 / (1 x 16 x 6) = 0.5"},
    {"tp-not-dividing-kv-heads", 61, 7, "layout.tp", "TP 4, which does not divide the 2 KV heads"},
    {"moe-tp-without-sequence-parallel", 68, 22, "layout.sequence_parallel",
     "MoE with TP > 1 requires sequence parallel"},
    {"sequence-parallel-with-tp1", 68, 22, "layout.sequence_parallel", "true with TP 1"},
    {"pp-not-dividing-layers", 62, 7, "layout.pp", "PP 7 for 60 layers"},
    {"layer-split-does-not-add-up", 71, 5, "layout.layer_split",
     "first 6 + last 5 of 60 layers leaves 49 for 6 middle stages"},
    {"layer-split-does-not-fit-bench-layers", 30, 16, "layout.layer_split", "first 1 + last 1 of 5 layers leaves 3"},
    {"vpp-not-dividing-stage-layers", 64, 8, "layout.vpp", "(stage 1 has 8)"},
    {"vpp-microbatches-not-multiple-of-pp", 64, 8, "layout.vpp", "20 microbatches per DP rank and PP 8"},
    {"rows-per-microbatch-mismatch", 74, 24, "layout.rows_per_microbatch",
     "2 = max_tokens_per_gpu 16384 / row_tokens 8192"},
    {"microbatches-not-whole", 34, 17, "workload.global_batch", "= 16.5 microbatches per DP rank"},
    {"sequence-parallel-rows-not-divisible-by-tp", 14, 15, "workload.row_tokens",
     "127-token rows, not divisible by TP 2 under sequence parallel"},
    {"vpp-without-pipeline", 23, 8, "layout.vpp", "VPP 2 with PP 1, expected VPP 1, or PP >= 2"},
    // Result consistency (docs/metrics.md) and catalog references.
    {"window-outside-steps", 92, 5, "result.window[1]", "0 <= first <= last <= 19"},
    {"window-tokens-wrong", 93, 18, "result.window_tokens", "15,728,640 = 15 steps x 128 rows x 8192 tokens"},
    {"usd-inconsistent", 83, 27, "result.usd_per_million_tokens", "$3.50, expected $3.21"},
    {"mfu-inconsistent", 85, 8, "result.mfu", "0.0269, expected 0.0537"},
    {"active-params-wrong", 85, 12, "result.active_params.count", "expected 16,331,407,360 active parameters"},
    // The case validate-accepts-impossible-result-fields of 2026-12-02: claims their own figures bound.
    {"measured-not-a-calendar-date", 87, 13, "result.measured", "2026-13-45, expected a real calendar date YYYY-MM-DD"},
    {"gpu-hours-below-window", 95, 14, "result.gpu_hours",
     "0.5, expected >= 4.06 = 48 GPUs x 304.7 s of the timed window / 3600"},
    // The case convergence-pass-contradicts-figures of 2026-12-02: a stated verdict against its own figures.
    {"convergence-pass-with-pointwise-failures", 116, 13, "correctness.convergence.result",
     "pass, expected fail: 15 pointwise failures over 20 steps"},
    {"convergence-pass-low-correlation", 116, 13, "correctness.convergence.result",
     "pass, expected fail: correlation 0.2 of the loss curves, below 0.95 (docs/correctness.md)"},
    {"verified-convergence-fail", 116, 13, "correctness.convergence.result",
     "fail, expected pass: a recipe of status verified carries a passed convergence check"},
    {"convergence-pass-correlation-minus-one", 116, 13, "correctness.convergence.result",
     "pass, expected fail: correlation -1 of the loss curves, below 0.95 (docs/correctness.md)"},
    // Sizes and figures with physical bounds (issue 33 kind 4; recipe/bounds_check.h).
    {"gpu-memory-above-the-gpu", 6, 14, "gpu.memory_gb",
     "2147483648 GB on a B200, expected at most 180 GB, the memory of one B200 (the hardware catalog"},
    {"step-time-cv-beyond-window", 80, 25, "result.step_time_cv_percent",
     "2147483648%, expected at most 387.3% = 100 x sqrt(15 window steps)"},
    {"full-recompute-zero-layers", 74, 17, "layout.recompute.num_layers",
     "0 layers with full recompute, expected at least 1"},
    {"full-recompute-more-layers-than-chunk", 74, 17, "layout.recompute.num_layers",
     "11 layers, expected at most 10, the layers of the largest model chunk (a stage's layers / VPP 1 of 60 layers "
     "over PP 6)"},
    {"recompute-layers-without-full", 73, 5, "layout.recompute.num_layers",
     "num_layers with granularity selective, expected no num_layers (only full recompute chooses layers)"},
    {"unknown-model", 4, 8, "model", "unknown model 'Qwen3-397B-A17B'"},
    {"unknown-instance", 10, 13, "gpu.instance", "unknown instance 'AWS p6-b200.24xlarge'"},
    // Schema.
    {"unquoted-cuda-version", 20, 9, "stack.cuda", "quote it ('12.9')"},
    {"unknown-key-in-layout", 76, 3, "layout.ofload", "'offload' (did you mean it?)"},
    {"unknown-top-level-key", 104, 1, "pacthes", "'patches' (did you mean it?)"},
    {"wrong-type-tp", 61, 7, "layout.tp", "string 'two', expected integer"},
    {"fail-on-sync-not-boolean", 107, 17, "bench.fail_on_sync", "string 'yes', expected boolean"},
    {"overlap-p2p-comm-not-boolean", 107, 21, "bench.overlap_p2p_comm", "string 'yes', expected boolean"},
    {"overlap-param-gather-not-boolean", 107, 25, "bench.overlap_param_gather", "string 'yes', expected boolean"},
    {"overlap-tp-comm-not-boolean", 107, 20, "bench.overlap_tp_comm", "string 'yes', expected boolean"},
    {"ep-dispatch-unknown", 107, 16, "bench.ep_dispatch", "'fixed', expected one of host_splits, fixed_capacity"},
    {"missing-required-field", 31, 1, "workload.precision", "missing required field 'precision'"},
    {"zero-degree", 64, 7, "layout.cp", "0, expected a value >= 1"},
    {"negative-degree", 67, 7, "layout.dp", "-4, expected a value >= 1"},
    {"bad-date", 88, 13, "result.measured", "'2026-10-8', expected a calendar date written YYYY-MM-DD"},
    {"unknown-status", 14, 9, "status", "'verifed', expected one of proposed, measured, verified"},
    // YAML loading.
    {"duplicate-key", 78, 3, "layout.vpp", "duplicate key 'vpp' (first defined at line 63)"},
    {"malformed-yaml-unclosed-bracket", 91, 16, "", "malformed YAML"},
    {"malformed-yaml-bad-indent", 62, 7, "", "malformed YAML"},
    {"empty-file", 1, 1, "", "an empty file"},
};

std::string bad_path(const std::string& stem) { return source_path("tests/data/bad/" + stem + ".yaml"); }

}  // namespace

TEST_CASE("each bad recipe gives exactly its one located error", "[bad]") {
  for (const auto& bad : kBadRecipes) {
    const std::string file = bad_path(bad.stem);
    INFO("fixture " << bad.stem << ".yaml");
    REQUIRE(fs::exists(file));
    const auto v = recipebench::validate_recipe_file(file);
    std::string all;
    for (const auto& d : v.errors) all += d.to_string() + "\n";
    INFO("errors:\n" << all);
    REQUIRE(v.errors.size() == 1);
    const auto& d = v.errors.front();
    CHECK(d.file == file);
    CHECK(d.line == bad.line);
    CHECK(d.column == bad.column);
    CHECK(d.path == bad.path);
    CHECK_THAT(d.to_string(), Catch::Contains(bad.text));
    CHECK_THAT(d.to_string(), Catch::StartsWith(file + ":" + std::to_string(bad.line) + ":" +
                                                std::to_string(bad.column) + ": error: "));
    CHECK(!v.ok());
  }
}

TEST_CASE("every fixture in tests/data/bad is listed in the bad-recipe table, once", "[bad]") {
  std::set<std::string> listed;
  for (const auto& bad : kBadRecipes) {
    INFO("table row " << bad.stem);
    CHECK(listed.insert(bad.stem).second);
  }
  std::set<std::string> on_disk;
  for (const auto& entry : fs::directory_iterator(source_path("tests/data/bad"))) {
    const std::string ext = entry.path().extension().string();
    if (entry.is_regular_file() && (ext == ".yaml" || ext == ".yml")) on_disk.insert(entry.path().stem().string());
  }
  for (const auto& stem : on_disk) {
    INFO("tests/data/bad/" << stem << " has no row in kBadRecipes (tests/test_bad_recipes.cpp)");
    CHECK(listed.count(stem) == 1);
  }
  for (const auto& stem : listed) {
    INFO("kBadRecipes lists " << stem << " but tests/data/bad/" << stem << ".yaml does not exist");
    CHECK(on_disk.count(stem) == 1);
  }
  CHECK(on_disk.size() >= 17);
}

TEST_CASE("the seed recipes the bad recipes are copied from give no error", "[bad][seed]") {
  for (const char* stem :
       {"attune-48gpu-tp2-pp6-ep8", "attune-tp2-pp8-ep8-vpp2-mt8k", "attune-tp2-pp8-ep8-vpp2-mt16k"}) {
    const std::string file = recipebench::test::seed_recipe(stem);
    const auto v = recipebench::validate_recipe_file(file);
    std::string all;
    for (const auto& d : v.errors) all += d.to_string() + "\n";
    INFO(file << "\n" << all);
    CHECK(v.errors.empty());
    CHECK(v.recipe.has_value());
  }
}
