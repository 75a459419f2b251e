// The recipe's run command against its own fields (recipe/launch_check.h, docs/launch-check.md): the flags read as
// a shell would split them, the seed's command agreeing with the seed, and each kind of disagreement located at
// the recipe's field with the flag's file line.
#include <catch2/catch.hpp>

#include <string>

#include "recipe/launch_check.h"
#include "recipe/validate.h"
#include "test_util.h"

using namespace recipebench;

namespace {

const std::string kSeed = "attune-tp2-pp8-ep8-vpp2-mt16k";

/// The seed recipe's text with `from` replaced by `to` (once; `from` must be there).
std::string seed_with(const std::string& from, const std::string& to) {
  std::string text = test::read_file(test::seed_recipe(kSeed));
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

/// The run command's disagreements with fields the recipe writes (warnings; validate --strict fails on them).
Diagnostics errors_of(const std::string& text) {
  const ValidatedRecipe v = validate_recipe_text(text, "seed.yaml");
  for (const Diagnostic& d : v.launch) CHECK(d.severity == "warning");
  return v.launch;
}

/// The warnings of validate (with the disagreements on fields the recipe leaves to their defaults).
Diagnostics warnings_of(const std::string& text) { return validate_recipe_text(text, "seed.yaml").warnings; }

}  // namespace

TEST_CASE("launch flags: continuations, '=' values, switches, comments and shell expansions", "[launch]") {
  const auto flags = launch_flags(
      "python3 -m train --async \\\n  --tensor-model-parallel-size 2 \\\n  --lr=1e-5 --sequence-parallel\n"
      "  # --pipeline-model-parallel-size 4\n  --context-parallel-size $CP --seq-length \"8192\" ${ARGS[@]}\n");
  REQUIRE(flags.size() == 6);
  CHECK(flags[0].name == "--async");
  CHECK(flags[0].value.empty());
  CHECK(flags[1].name == "--tensor-model-parallel-size");
  CHECK(flags[1].value == "2");
  CHECK(flags[1].line == 2);
  CHECK(flags[2].name == "--lr");
  CHECK(flags[2].value == "1e-5");
  CHECK(flags[3].name == "--sequence-parallel");
  CHECK(flags[3].value.empty());
  CHECK(flags[3].line == 3);
  CHECK(flags[4].name == "--context-parallel-size");  // the commented flag on line 4 is not read
  CHECK(flags[4].line == 5);
  CHECK_FALSE(flags[4].literal);
  CHECK_FALSE(flags[5].literal);  // "8192" quoted
}

TEST_CASE("launch check: every committed recipe's run command agrees with its fields", "[launch]") {
  for (const std::string& stem :
       {kSeed, std::string("attune-tp2-pp8-ep8-vpp2-mt8k"), std::string("attune-48gpu-tp2-pp6-ep8")}) {
    INFO(stem);
    const ValidatedRecipe v = validate_recipe_file(test::seed_recipe(stem));
    CHECK(v.ok());
    REQUIRE(v.source);
    const LaunchCheck c = check_launch_command(*v.recipe, *v.source);
    CHECK(c.stated.empty());
    CHECK(c.unstated.empty());
  }
}

TEST_CASE("launch check: a parallel size that disagrees is located at the field, naming the flag's line", "[launch]") {
  const Diagnostics e = errors_of(seed_with("--pipeline-model-parallel-size 8 ", "--pipeline-model-parallel-size 4 "));
  REQUIRE(e.size() == 1);
  CHECK(e[0].line == 62);
  CHECK(e[0].column == 7);
  CHECK(e[0].path == "layout.pp");
  CHECK(e[0].found == "8, but the run command passes --pipeline-model-parallel-size 4 (line 170)");
  CHECK(e[0].expected == "layout.pp as the command ran it, or a run command that matches the recipe");
}

TEST_CASE("launch check: the optimizer's numbers, the precision-aware state and the nodes", "[launch]") {
  // --lr 2e-5 against the recipe's 1e-5; the same value written another way agrees.
  const Diagnostics lr = errors_of(seed_with("--lr 1e-5 ", "--lr 2e-5 "));
  REQUIRE(lr.size() == 1);
  CHECK(lr[0].path == "optimizer.lr");
  CHECK(lr[0].found == "1e-05, but the run command passes --lr 2e-5 (line 183)");
  CHECK(errors_of(seed_with("--lr 1e-5 ", "--lr=0.00001 ")).empty());
  // --use-precision-aware-optimizer keeps the masters as BF16 + remainder: a recipe of FP32 masters disagrees.
  const Diagnostics masters = errors_of(seed_with("master_weights: bf16_remainder", "master_weights: fp32"));
  REQUIRE(masters.size() == 1);
  CHECK(masters[0].path == "optimizer.master_weights");
  CHECK_THAT(masters[0].found, Catch::StartsWith("fp32, but the run command passes --use-precision-aware-optimizer "
                                                 "(bf16_remainder masters)"));
  // ... unless the command keeps no remainders.
  const Diagnostics kept = errors_of(seed_with("    --use-precision-aware-optimizer \\\n",
                                               "    --use-precision-aware-optimizer --no-store-param-remainders \\\n"));
  REQUIRE(kept.size() == 1);
  CHECK_THAT(
      kept[0].found,
      Catch::StartsWith("bf16_remainder, but the run command passes --use-precision-aware-optimizer (fp32 masters)"));
  // slime's nodes: 4 nodes of 8 GPUs are not the recipe's 64.
  const Diagnostics nodes = errors_of(seed_with("--actor-num-nodes 8 ", "--actor-num-nodes 4 "));
  REQUIRE(nodes.size() == 1);
  CHECK(nodes[0].path == "gpu.count");
  CHECK(nodes[0].line == 7);
  CHECK(nodes[0].found == "64 GPUs (8 per node), but the run command passes --actor-num-nodes 4 (line 153)");
}

TEST_CASE("launch check: a field the recipe leaves out, a switch, and values the shell would expand", "[launch]") {
  // The layer split absent from the recipe while the command splits the first and last stages: the recipe does not
  // contradict itself, it leaves the field out: a warning, also under --strict.
  std::string text = seed_with("  layer_split:\n    first: 6\n    last: 6\n", "");
  CHECK(errors_of(text).empty());
  const Diagnostics split = warnings_of(text);
  REQUIRE(split.size() == 2);
  CHECK(split[0].found.rfind("absent, but the run command passes --decoder-first-pipeline-num-layers 6", 0) == 0);
  CHECK(split[1].found.rfind("absent, but the run command passes --decoder-last-pipeline-num-layers 6", 0) == 0);
  // --sequence-parallel with sequence_parallel false (the layout's own rule fails too: MoE with TP 2 needs it).
  const Diagnostics sp = errors_of(seed_with("sequence_parallel: true", "sequence_parallel: false"));
  bool flagged = false;
  for (const Diagnostic& d : sp)
    flagged = flagged || d.found == "false, but the run command passes --sequence-parallel (line 176)";
  CHECK(flagged);
  // An optimizer block written before the precision-aware fields (the 2026-12-02 cases' seed copies): the default
  // FP32 masters against --use-precision-aware-optimizer, a warning naming the default.
  const Diagnostics old = warnings_of(seed_with("  master_weights: bf16_remainder\n", ""));
  REQUIRE(old.size() == 1);
  CHECK(old[0].path == "optimizer.master_weights");
  CHECK(old[0].line == 83);  // the optimizer block (its nearest written ancestor) where its value starts
  CHECK_THAT(old[0].found, Catch::StartsWith("fp32 (not stated: the default), but the run command passes "
                                             "--use-precision-aware-optimizer (bf16_remainder masters)"));
  CHECK(old[0].expected == "optimizer.master_weights stated as the command ran it");
  // A value the shell expands is not compared.
  CHECK(errors_of(seed_with("--pipeline-model-parallel-size 8 ", "--pipeline-model-parallel-size $PP ")).empty());
}
