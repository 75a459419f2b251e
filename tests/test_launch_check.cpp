// The recipe's run command against its own fields (recipe/launch_check.h, docs/launch-check.md): the flags read as
// a shell would split them, the seed's command agreeing with the seed, and each kind of disagreement located at
// the recipe's field with the flag's file line.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "recipe/launch_check.h"
#include "recipe/scalar_source.h"
#include "recipe/source_doc.h"
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
      "python3 -m train --async \\\n  --tensor-model-parallel-size 2 \\\n  --lr=1e-5 --sequence-parallel \\\n"
      "  --context-parallel-size $CP --seq-length \"8192\" ${ARGS[@]} # --pipeline-model-parallel-size 4\n");
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
  CHECK(flags[4].name == "--context-parallel-size");  // the commented flag after it is not read
  CHECK(flags[4].line == 4);
  CHECK_FALSE(flags[4].literal);  // $CP: the shell's value, unknown
  CHECK(flags[5].name == "--seq-length");
  CHECK(flags[5].value == "8192");  // "8192": the quotes removed, as the program receives it
  CHECK(flags[5].literal);
  CHECK(flags.size() == 6);
}

TEST_CASE("launch flags: quoted text, here-documents, redirections and other commands' words are not flags",
          "[launch]") {
  const auto flags = launch_flags(
      "echo usage: --lr 1\n"
      "cat > /tmp/old.txt <<'EOF'\n--lr 2\n--tensor-model-parallel-size 16\nEOF\n"
      "cat <<-END\n\t--lr 5\n\tEND\n"
      "export X=\"--lr 6\"; printf '%s' --lr 7 | tee --append log\n"
      "OMP=1 nohup python3 t.py --wandb-group \"tp --lr 3 run\" --lr \"4\" 2>&1 --tp=$TP <<< --lr \\\n"
      "  --name 'a b'\\ c --json \"$(cat x.json | grep \"--lr 8\")\" > out.log &\n");
  REQUIRE(flags.size() == 5);
  CHECK(flags[0].name == "--wandb-group");
  CHECK(flags[0].value == "tp --lr 3 run");  // one quoted word: the value, not a flag
  CHECK(flags[1].name == "--lr");
  CHECK(flags[1].value == "4");
  CHECK(flags[1].literal);
  CHECK(flags[1].line == 10);
  CHECK(flags[2].name == "--tp");
  CHECK_FALSE(flags[2].literal);
  CHECK(flags[3].name == "--name");  // the here-string's word (--lr) is data
  CHECK(flags[3].value == "a b c");
  CHECK(flags[3].line == 11);
  CHECK(flags[4].name == "--json");
  CHECK_FALSE(flags[4].literal);  // a command substitution: its words are not flags either
  // Integers as argparse's int() reads them; a flag given twice: the last is what the program keeps.
  const auto twice =
      launch_flags("torchrun --nnodes 2 t.py --tensor-model-parallel-size 4 --tensor-model-parallel-size +2\n");
  REQUIRE(twice.size() == 3);
  CHECK(twice[1].command == twice[2].command);
}

TEST_CASE("launch flags: the elements of a bash array assignment are arguments a later command passes", "[launch]") {
  // Megatron-LM's example scripts (and the case launch-check-misses-megatron-flags/arrays.yaml): flags collected in
  // NAME=( ... ) over several lines, a comment inside, then torchrun ... ${NAME[@]}.
  const auto flags = launch_flags(
      "GPUS_PER_NODE=8\n"
      "MODEL_PARALLEL_ARGS=(\n"
      "    --tensor-model-parallel-size 4   # four-way\n"
      "    --sequence-parallel\n"
      ")\n"
      "TRAINING_ARGS=(--micro-batch-size 1 --lr \"1.0e-4\")\n"
      "echo ARGS=(--lr 9)\n"
      "torchrun --nproc_per_node $GPUS_PER_NODE pretrain_gpt.py ${MODEL_PARALLEL_ARGS[@]} --seq-length 4096\n");
  REQUIRE(flags.size() == 6);
  CHECK(flags[0].name == "--tensor-model-parallel-size");
  CHECK(flags[0].value == "4");
  CHECK(flags[0].line == 3);
  CHECK(flags[1].name == "--sequence-parallel");
  CHECK(flags[1].value.empty());  // the array's ')' ends it: no value
  CHECK(flags[1].line == 4);
  CHECK(flags[2].name == "--micro-batch-size");
  CHECK(flags[3].name == "--lr");
  CHECK(flags[3].value == "1.0e-4");
  CHECK(flags[3].line == 6);
  CHECK(flags[4].name == "--nproc_per_node");  // echo's words (line 7) are data, never read
  CHECK(flags[5].name == "--seq-length");
  CHECK(flags[5].line == 8);
}

TEST_CASE("launch flags: the block's variables resolved, a shell's -c string read, each flag at its line", "[launch]") {
  const auto flags = launch_flags(
      "A=2\nexport B=3; python3 t.py --pp ${B} --cp $C --tp=$A$A\n"
      "srun --nodes=2 bash -c \"torchrun --nnodes=1:2 \\\n  x.py --tensor-model-parallel-size $A\"\nA=5\n");
  REQUIRE(flags.size() == 6);
  CHECK(flags[0].name == "--pp");
  CHECK(flags[0].value == "3");  // export B=3 earlier on the line
  CHECK(flags[0].written == "${B}");
  CHECK(flags[0].literal);
  CHECK(flags[1].name == "--cp");
  CHECK_FALSE(flags[1].literal);  // $C: set nowhere in the block
  CHECK(flags[2].value == "22");
  CHECK(flags[3].name == "--nodes");
  CHECK(flags[4].name == "--nnodes");  // inside the -c string
  CHECK(flags[4].value == "1:2");
  CHECK(flags[4].line == 3);
  CHECK(flags[5].name == "--tensor-model-parallel-size");
  CHECK(flags[5].value == "2");  // A=5 comes after: not what the command saw
  CHECK(flags[5].line == 4);
  CHECK(flags[5].offset == std::string("A=2\nexport B=3; python3 t.py --pp ${B} --cp $C --tp=$A$A\nsrun --nodes=2 "
                                       "bash -c \"torchrun --nnodes=1:2 \\\n  x.py ")
                               .size());
  // Many assignments and uses stay linear: 20,000 of each, the last flag resolved at its line.
  std::string big;
  for (int i = 0; i < 20000; ++i) big += "V" + std::to_string(i) + "=" + std::to_string(i) + "\n";
  big += "torchrun x.py";
  for (int i = 0; i < 20000; ++i) big += " --f" + std::to_string(i) + " $V" + std::to_string(i);
  const auto many = launch_flags(big);
  REQUIRE(many.size() == 20000);
  CHECK(many.back().value == "19999");
  CHECK(many.back().line == 20001);
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

namespace {

/// The seed recipe with selective recompute of `modules` (YAML flow list, or "" for the field left out) and a run
/// command passing `--recompute-granularity selective` and `flag` in place of the full-recompute flags.
std::string seed_selective(const std::string& modules, const std::string& flag) {
  const std::string listed = modules.empty() ? "" : "    modules: " + modules + "\n";
  std::string text =
      seed_with("    granularity: full\n    method: uniform\n    num_layers: 1\n", "    granularity: selective\n" + listed);
  const std::string from = "--recompute-granularity full \\\n    --recompute-method uniform \\\n"
                           "    --recompute-num-layers 1 \\\n";
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), "--recompute-granularity selective \\\n    " + flag + " \\\n");
}

}  // namespace

TEST_CASE("launch check: --recompute-modules, several values, against layout.recompute.modules as a set",
          "[launch]") {
  // The same set in another order, and Megatron-LM's default (core_attn) on both sides, agree.
  CHECK(errors_of(seed_selective("[core_attn, layernorm]", "--recompute-modules layernorm core_attn")).empty());
  CHECK(warnings_of(seed_selective("", "--recompute-modules core_attn")).empty());
  const Diagnostics e = errors_of(seed_selective("[core_attn, layernorm]", "--recompute-modules core_attn moe_act"));
  REQUIRE(e.size() == 1);
  CHECK(e[0].path == "layout.recompute.modules");
  CHECK(e[0].found ==
        "[core_attn, layernorm], but the run command passes --recompute-modules core_attn moe_act (line 177)");
  // Left out of the recipe: its default core_attn against the command's set, a warning of the default.
  const Diagnostics w = warnings_of(seed_selective("", "--recompute-modules moe_act layernorm"));
  REQUIRE(w.size() == 1);
  CHECK(w[0].path == "layout.recompute.modules");
  CHECK_THAT(w[0].found, Catch::StartsWith("[core_attn] (not stated: the default), but the run command passes "
                                           "--recompute-modules moe_act layernorm"));
  // A value the shell expands is not compared, and said.
  const Diagnostics v = warnings_of(seed_selective("[core_attn]", "--recompute-modules $MODULES"));
  REQUIRE(v.size() == 1);
  CHECK_THAT(v[0].found, Catch::StartsWith("not compared: the run command passes --recompute-modules $MODULES"));
  // Full recompute: Megatron-LM reads no modules, so none are compared.
  CHECK(errors_of(seed_with("--recompute-granularity full \\\n", "--recompute-granularity full \\\n"
                                                                 "    --recompute-modules moe_act \\\n"))
            .empty());
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

namespace {

const std::string kCases = "tests/data/cases/hostile-2026-12-05/";

/// The launch disagreements (errors and warnings) of the recipe file `rel`.
std::vector<std::string> launch_found(const std::string& rel) {
  const ValidatedRecipe v = validate_recipe_file(test::source_path(rel));
  std::vector<std::string> out;
  for (const Diagnostic& d : v.launch) out.push_back(d.path + ": " + d.found);
  for (const Diagnostic& d : v.warnings)
    if (d.found.find("the run command passes") != std::string::npos) out.push_back(d.path + ": " + d.found);
  return out;
}

/// The seed with its run: command replaced by `run` (the YAML text from "run:" to the line end before "notes:").
std::string seed_with_run(const std::string& run) {
  std::string text = test::read_file(test::seed_recipe(kSeed));
  const size_t from = text.find("\nrun: |\n") + 1, to = text.find("\nnotes: |\n") + 1;
  REQUIRE(from > 0);
  REQUIRE(to > from);
  return text.replace(from, to - from, run);
}

/// The one disagreement of `text` (the seed with an edited run:) with a flag the command passes, as found (a
/// short run: leaves out the seed's --sequence-parallel and --use-precision-aware-optimizer: disagreements too, of
/// the switches left out, tested below).
std::string only_found(const std::string& text) {
  Diagnostics e = errors_of(text);
  e.erase(std::remove_if(
              e.begin(), e.end(),
              [](const Diagnostic& d) { return d.found.find("the run command does not pass") != std::string::npos; }),
          e.end());
  REQUIRE(e.size() == 1);
  return e[0].found;
}

}  // namespace

TEST_CASE("hostile launch check: quoted, here-document, echo, repeated and signed flags agree", "[launch][hostile]") {
  // Each case file is the seed with one edit to its run: that does not change what the launcher receives.
  for (const char* f : {"in-string", "heredoc", "echo", "repeat-last-wins", "plus-sign"}) {
    INFO(f);
    CHECK(launch_found(kCases + "launch-quoted/" + f + ".yaml").empty());
  }
  // The last of a repeated flag is compared: 2 then 4 is 4, at the second flag's line.
  CHECK(only_found(seed_with("    --tensor-model-parallel-size 2 \\\n",
                             "    --tensor-model-parallel-size 2 \\\n    --tensor-model-parallel-size 4 \\\n")) ==
        "2, but the run command passes --tensor-model-parallel-size 4 (line 170)");
  CHECK(only_found(seed_with("--tensor-model-parallel-size 2 ", "--tensor-model-parallel-size +4 ")) ==
        "2, but the run command passes --tensor-model-parallel-size +4 (line 169)");
  CHECK(errors_of(seed_with("--tensor-model-parallel-size 2 ", "--tensor-model-parallel-size=\"2\" ")).empty());
}

TEST_CASE("hostile launch check: the flag's file line through every scalar style", "[launch][hostile]") {
  // The case files: a folded block (the flag on line 169) and one double-quoted scalar on line 146.
  CHECK(launch_found(kCases + "launch-lines/folded.yaml") ==
        std::vector<std::string>{"layout.tp: 2, but the run command passes --tensor-model-parallel-size 4 (line 169)"});
  CHECK(launch_found(kCases + "launch-lines/double-quoted.yaml") ==
        std::vector<std::string>{"layout.tp: 2, but the run command passes --tensor-model-parallel-size 4 (line 146)"});
  // Variants: the run: key on line 146, the flag on line 148 in each style.
  const std::string want = "2, but the run command passes --tensor-model-parallel-size 4 (line 148)";
  CHECK(only_found(seed_with_run("run: |-\n  python3 t.py \\\n    --tensor-model-parallel-size 4\n")) == want);
  CHECK(only_found(seed_with_run("run: >2\n  python3 t.py\n  --tensor-model-parallel-size 4\n")) == want);
  CHECK(only_found(seed_with_run("run: 'python3 t.py ''a''\n  --lr 1e-5\n     --tensor-model-parallel-size 4'\n")) ==
        want);
  CHECK(only_found(seed_with_run("run: \"python3 \\x74.py \\\n  --lr 1e-5 \\\n  --tensor-model-parallel-size 4\"\n")) ==
        want);
  CHECK(only_found(seed_with_run("run: python3 t.py\n  --lr 1e-5\n  --tensor-model-parallel-size 4\n")) == want);
  CHECK(only_found(seed_with_run("run:\n  python3 t.py\n  --lr 1e-5\n  --tensor-model-parallel-size 4  # note\n")) ==
        "2, but the run command passes --tensor-model-parallel-size 4 (line 149)");
}

TEST_CASE("scalar source: every byte of a scalar's value at its file line and column", "[launch]") {
  // A folded block: lines folded to spaces, an empty line kept as a break, a more-indented line with its breaks.
  const SourceDoc doc = parse_yaml(
      "a: >\n  one\n  two\n\n  three\n    more\n  four\n"
      "b: 'it''s\n  here'\n"
      "c: \"t\\x41b\\\n   end\"\n"
      "d: plain\n  words\n",
      "s.yaml");
  REQUIRE(doc.value["a"] == "one two\nthree\n  more\nfour\n");
  const std::vector<SourceMark> a = scalar_source_marks(doc, "/a");
  REQUIRE(a.size() == doc.value["a"].get<std::string>().size());
  CHECK(a[4].line == 3);  // the 't' of "two"
  CHECK(a[4].column == 3);
  CHECK(a[3].line == 2);  // the space a folded break became: at the end of line 2
  const size_t more = doc.value["a"].get<std::string>().find("more");
  CHECK(a[more].line == 6);
  CHECK(a[more].column == 5);
  REQUIRE(doc.value["b"] == "it's here");
  const std::vector<SourceMark> b = scalar_source_marks(doc, "/b");
  REQUIRE(b.size() == 9);
  CHECK(b[5].line == 9);  // "here" on the continuation line
  CHECK(b[5].column == 3);
  REQUIRE(doc.value["c"] == "tAbend");
  const std::vector<SourceMark> c = scalar_source_marks(doc, "/c");
  REQUIRE(c.size() == 6);
  CHECK(c[1].column == 6);  // 'A' from the escape \x41 at its backslash
  CHECK(c[3].line == 11);   // "end" after an escaped line break
  REQUIRE(doc.value["d"] == "plain words");
  const std::vector<SourceMark> d = scalar_source_marks(doc, "/d");
  REQUIRE(d.size() == 11);
  CHECK(d[6].line == 13);
  // Not a string, or not there: nothing.
  CHECK(scalar_source_marks(doc, "/nosuch").empty());
}

namespace {

const std::string kMegatron = "launch-check-misses-megatron-flags/";

/// The text of the case's input `name` (a Mixtral-8x7B recipe: TP2 EP8 DP8 on 16 H100, 4,096-token rows, 1 row per
/// microbatch, global batch 256, sequence parallel; mixtral-config.json: 32 layers, 8 experts, top-2).
std::string megatron_case(const std::string& name) { return test::read_file(test::case_path(kMegatron + name)); }

/// `text` with `from` replaced by `to` (once; `from` must be there).
std::string edited(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

/// The launch check's diagnostics of recipe text `text` (validated as the case folder's file `name`, so its
/// model_params.config resolves), "line:col path: found": first those validate --strict fails on, then the others.
std::vector<std::string> launch_said(const std::string& text, const std::string& name = "v.yaml") {
  const ValidatedRecipe v = validate_recipe_text(text, test::case_path(kMegatron + name));
  std::vector<std::string> out;
  auto add = [&](const Diagnostic& d, const char* tag) {
    out.push_back(std::string(tag) + std::to_string(d.line) + ":" + std::to_string(d.column) + " " + d.path + ": " +
                  d.found);
  };
  for (const Diagnostic& d : v.launch) add(d, "");
  for (const Diagnostic& d : v.warnings)
    if (d.found.find("the run command") != std::string::npos) add(d, "(not strict) ");
  return out;
}

std::vector<std::string> case_said(const std::string& name) { return launch_said(megatron_case(name), name); }

}  // namespace

TEST_CASE("launch case megatron flags: each input's warnings, exactly", "[launch]") {
  using V = std::vector<std::string>;
  // What was caught before stays caught: flags inside bash arrays, $NAME of the block's own assignments resolved.
  CHECK(case_said("arrays.yaml") ==
        V{"23:7 layout.tp: 2, but the run command passes --tensor-model-parallel-size 4 (line 48)",
          "(not strict) 1:1 optimizer.lr: 1e-05 (not stated: the default), but the run command passes --lr 1.0e-4 "
          "(line 57)"});
  // No --use-dynamic-batch-size: --seq-length and --micro-batch-size are the row length and the rows per
  // microbatch; the model's shape flags against mixtral-config.json (32 layers, 8 experts, top-2).
  CHECK(case_said("mbs-seqlen.yaml") ==
        V{"32:24 layout.rows_per_microbatch: 1, but the run command passes --micro-batch-size 4 (line 41)",
          "17:15 workload.row_tokens: 4096, but the run command passes --seq-length 2048 (line 42)",
          "4:11 model_params.config: the model's num_layers 32, but the run command passes --num-layers 16 (line 44)",
          "4:11 model_params.config: the model's num_experts 8, but the run command passes --num-experts 4 (line 45)",
          "4:11 model_params.config: the model's top_k (experts per token) 2, but the run command passes "
          "--moe-router-topk 1 (line 46)"});
  CHECK(case_said("switch-absent.yaml") ==
        V{"30:22 layout.sequence_parallel: true, but the run command does not pass --sequence-parallel (Megatron-LM: "
          "absent is off)"});
  CHECK(case_said("env-vars.yaml") ==
        V{"23:7 layout.tp: 2, but the run command passes --tensor-model-parallel-size $TP (= 4) (line 41)",
          "27:7 layout.ep: 8, but the run command passes --expert-model-parallel-size ${EP} (= 4) (line 42)",
          "19:17 workload.global_batch: 256, but the run command passes --global-batch-size $GBS (= 512) (line 44)"});
  CHECK(case_said("vpp-layers-flag.yaml") ==
        V{"25:8 layout.vpp: 1, but the run command passes --num-layers-per-virtual-pipeline-stage 4 (line 44): 32 "
          "layers / PP 1 / 4 = VPP 8"});
  CHECK(case_said("torchtitan.yaml") ==
        V{"23:7 layout.tp: 2, but the run command passes --parallelism.tensor_parallel_degree 4 (line 38)",
          "27:7 layout.ep: 8, but the run command passes --parallelism.expert_parallel_degree 2 (line 38)",
          "19:17 workload.global_batch: 256, but the run command passes --training.global_batch_size 64 (line 38)",
          "17:15 workload.row_tokens: 4096, but the run command passes --training.seq_len 8192 (line 38)"});
  // torchrun's elastic --nnodes=1:2 inside srun's bash -c: at most 2 nodes of 8 GPUs, the recipe's 16.
  CHECK(case_said("srun-elastic.yaml").empty());
}

TEST_CASE("launch case megatron flags: row length, microbatch and the model's shape, variants", "[launch]") {
  using V = std::vector<std::string>;
  const std::string mbs = megatron_case("mbs-seqlen.yaml");
  // Dynamic batching (slime): --seq-length and --micro-batch-size are not the rows; the model's flags still count.
  CHECK(launch_said(edited(mbs, "    --micro-batch-size 4 \\\n",
                           "    --use-dynamic-batch-size \\\n    "
                           "--micro-batch-size 4 \\\n"))
            .size() == 3);
  // Agreeing values in any spelling: '=' forms; the whole shape of mixtral-config.json.
  const std::string agree =
      "run: |\n  torchrun --nproc_per_node=8 --nnodes=2 pretrain_gpt.py --tensor-model-parallel-size 2 \\\n"
      "    --expert-model-parallel-size 8 --sequence-parallel --micro-batch-size=1 --seq-length=4096 \\\n"
      "    --num-layers 32 --hidden-size 4096 --num-attention-heads 32 --num-query-groups 8 --num-experts 8 \\\n"
      "    --moe-router-topk 2 --ffn-hidden-size 14336 --global-batch-size 256\n";
  const std::string head = mbs.substr(0, mbs.find("run: |\n"));
  CHECK(launch_said(head + agree).empty());
  // Each width that disagrees is its own warning, with the model's figure and the command's.
  CHECK(launch_said(head + edited(edited(agree, "--hidden-size 4096", "--hidden-size 2048"), "--ffn-hidden-size 14336",
                                  "--ffn-hidden-size 7168")) ==
        V{"4:11 model_params.config: the model's hidden_size 4096, but the run command passes --hidden-size 2048 "
          "(line 39)",
          "4:11 model_params.config: the model's intermediate_size 14336, but the run command passes "
          "--ffn-hidden-size 7168 (line 40)"});
  // A recipe of the registry's model (no config.json) is located at model:.
  const std::string registry = edited(edited(head, "model_params:\n  config: mixtral-config.json\n", ""),
                                      "model: Mixtral-8x7B", "model: Qwen3.5-397B-A17B");
  const V reg = launch_said(registry + edited(agree, "--moe-router-topk 2", "--moe-router-topk 10"));
  CHECK(std::find(reg.begin(), reg.end(),
                  "2:8 model: the model's num_layers 60, but the run command passes --num-layers 32 (line 37)") !=
        reg.end());
}

TEST_CASE("launch case megatron flags: switches left out, variables and the older VPP flag, variants", "[launch]") {
  using V = std::vector<std::string>;
  const std::string absent = megatron_case("switch-absent.yaml");
  // The converse: the switch present while the recipe says false.
  CHECK(launch_said(edited(edited(absent, "sequence_parallel: true", "sequence_parallel: false"),
                           "    --global-batch-size 256", "    --global-batch-size 256 --sequence-parallel")) ==
        V{"30:22 layout.sequence_parallel: false, but the run command passes --sequence-parallel (line 40)"});
  // An expansion the block does not resolve could pass the switch: not judged.
  CHECK(launch_said(edited(absent, "    --global-batch-size 256", "    --global-batch-size 256 $EXTRA_ARGS")).empty());
  // An array the block assigns is seen: the switch is still missing.
  CHECK(launch_said(edited(absent, "  torchrun", "  ARGS=(--lr 1e-5)\n  torchrun") + "    ${ARGS[@]}\n").size() == 1);
  // The precision-aware optimizer: bf16_remainder masters without --use-precision-aware-optimizer.
  CHECK(launch_said(edited(absent, "run: |\n", "optimizer:\n  master_weights: bf16_remainder\nrun: |\n")) ==
        V{"30:22 layout.sequence_parallel: true, but the run command does not pass --sequence-parallel (Megatron-LM: "
          "absent is off)",
          "37:19 optimizer.master_weights: bf16_remainder, but the run command does not pass "
          "--use-precision-aware-optimizer (Megatron-LM: absent is off)"});
  // Variables: export, '=' forms, a chain; a prefix assignment is the program's environment, not the shell's $TP;
  // a variable set after its use or never is said, not compared (a warning validate --strict does not fail on).
  const std::string vars = megatron_case("env-vars.yaml");
  CHECK(launch_said(edited(edited(edited(vars, "TP=4", "export TP=2"), "EP=4", "A=8 EP=$A"), "GBS=512", "GBS=256"))
            .empty());
  CHECK(launch_said(edited(vars, "--tensor-model-parallel-size $TP", "--tensor-model-parallel-size=$TP")).front() ==
        "23:7 layout.tp: 2, but the run command passes --tensor-model-parallel-size $TP (= 4) (line 41)");
  CHECK(launch_said(edited(edited(vars, "  TP=4\n", ""), "torchrun", "TP=2 torchrun")).back() ==
        "(not strict) 23:7 layout.tp: not compared: the run command passes --tensor-model-parallel-size $TP (line 40), "
        "a value not set literally earlier in the run block");
  CHECK(launch_said(edited(vars, "--nnodes=2", "--nnodes=$NODES")).back() ==
        "(not strict) 8:10 gpu.count: not compared: the run command passes --nnodes $NODES (line 40), a value not set "
        "literally earlier in the run block");
  // An assignment of a value the check does not evaluate (arithmetic) is no value either.
  CHECK(launch_said(edited(vars, "GBS=512", "GBS=$((128 * 2))")).back() ==
        "(not strict) 19:17 workload.global_batch: not compared: the run command passes --global-batch-size $GBS (line "
        "44), a value not set literally earlier in the run block");
  // --num-layers-per-virtual-pipeline-stage: VPP = 32 / PP / value; the model's layers when --num-layers is absent.
  const std::string vpp = megatron_case("vpp-layers-flag.yaml");
  CHECK(launch_said(edited(vpp, "-stage 4", "-stage 32")).empty());
  CHECK(launch_said(edited(edited(vpp, "    --num-layers 32 \\\n", ""), "-stage 4", "-stage 5")) ==
        V{"25:8 layout.vpp: 1, but the run command passes --num-layers-per-virtual-pipeline-stage 5 (line 43): 32 "
          "layers / PP 1 / 5, not a whole VPP"});
}

TEST_CASE("launch case megatron flags: TorchTitan's flags and torchrun's elastic nodes, variants", "[launch]") {
  using V = std::vector<std::string>;
  const std::string titan = megatron_case("torchtitan.yaml");
  const std::string head = titan.substr(0, titan.find("run: |\n"));
  CHECK(launch_said(head + "run: |\n  torchrun --nproc_per_node=8 --nnodes=2 -m torchtitan.train \\\n"
                           "    --parallelism.tensor_parallel_degree=2 --parallelism.expert_parallel_degree=8 \\\n"
                           "    --parallelism.data_parallel_shard_degree=-1 --training.global_batch_size=256 \\\n"
                           "    --training.seq_len=4096 --training.local_batch_size=1\n")
            .empty());
  CHECK(launch_said(head + "run: |\n  torchrun --nproc_per_node=8 --nnodes=2 -m torchtitan.train \\\n"
                           "    --parallelism.data_parallel_shard_degree 4 --training.local_batch_size 2 \\\n"
                           "    --parallelism.pipeline_parallel_degree=1 --parallelism.context_parallel_degree=2\n") ==
        V{"29:7 layout.dp: 8, but the run command passes --parallelism.data_parallel_shard_degree 4 (line 38)",
          "32:24 layout.rows_per_microbatch: 1, but the run command passes --training.local_batch_size 2 (line 38)",
          "26:7 layout.cp: 1, but the run command passes --parallelism.context_parallel_degree 2 (line 39)"});
  // Elastic MIN:MAX compared by its MAX; inside bash -c the flags are read, each at its own line.
  const std::string srun = megatron_case("srun-elastic.yaml");
  CHECK(launch_said(edited(srun, "--nnodes=1:2", "--nnodes=1:4")) ==
        V{"8:10 gpu.count: 16 GPUs (8 per node), but the run command passes --nnodes 1:4 (line 37): torchrun's "
          "elastic MIN:MAX, at most 4 nodes"});
  CHECK(launch_said(edited(srun, "--tensor-model-parallel-size 2", "--tensor-model-parallel-size 4")) ==
        V{"23:7 layout.tp: 2, but the run command passes --tensor-model-parallel-size 4 (line 38)"});
  CHECK(launch_said(edited(edited(srun, "bash -c \"", "sh -lc '"), "256\"", "256'")).empty());
  CHECK(launch_said(
            edited(edited(edited(srun, "bash -c \"", "sh -lc '"), "256\"", "256'"), "--sequence-parallel ", "")) ==
        V{"30:22 layout.sequence_parallel: true, but the run command does not pass --sequence-parallel (Megatron-LM: "
          "absent is off)"});
}
