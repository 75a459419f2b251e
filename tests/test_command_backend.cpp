// The command backend (harness/run/command_backend.h) and `recipebench import` through the run driver: a command's
// steps read from its output, a failing or hanging command's `failed` record, and a Megatron-LM log imported into
// a record whose figures are computed by hand below.
#include <catch2/catch.hpp>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "backends/command/command_backend.h"
#include "launch/child_process.h"
#include "recipe/validate.h"
#include "record/run_record_check.h"
#include "report/leaderboard.h"
#include "run/run_driver.h"
#include "test_util.h"
#include "util/exit_code.h"
#include "util/proc_stat.h"

using namespace recipebench;
namespace fs = std::filesystem;

namespace {

RunRequest command_request(const std::string& recipe, const std::string& folder) {
  register_command_backend();
  RunRequest q;
  q.recipe_path = test::source_path("tests/data/command/" + recipe);
  q.out_dir = (fs::temp_directory_path() / folder).string();
  q.build = BuildInfo{"test", "test", "Debug"};  // a log's figures are ranked whatever built recipebench
  fs::remove_all(q.out_dir);
  return q;
}

/// The record as `report` reads it back: schema, types, figures re-derived from the steps.
CheckedRunRecord reread(const RunOutcome& out) {
  return check_run_record(read_json_file(out.record_path), out.record_path);
}

/// True while process `pid` exists and is not a zombie.
bool process_alive(int pid) {
  const auto stat = read_proc_stat(pid);
  return stat && !stat->gone();
}

/// The console lines of a run that is refused before any rank starts: exit 1, no record.
struct Refused : RunReporter {
  std::vector<std::string> lines;
  void message(const std::string& line) override { lines.push_back(line); }
};
Refused refused_run(const RunRequest& q) {
  Refused messages;
  const RunOutcome out = run_recipe(q, {&messages});
  CHECK(out.exit_code == kFailed);
  CHECK_FALSE(out.record);
  return messages;
}

/// A recipe of tests/data/command/ whose one bench setting the command backend refuses: exactly two lines, the
/// located diagnostic (`located`: what follows the recipe's path) and the summary.
void check_field_refused(const std::string& recipe, const std::string& temp_name, const std::string& located) {
  const RunRequest q = command_request(recipe, temp_name);
  const Refused messages = refused_run(q);
  REQUIRE(messages.lines.size() == 2);
  CHECK(messages.lines[0] == q.recipe_path + located);
  CHECK(messages.lines[1] ==
        "recipebench run: the command backend would ignore the settings above (its command's own); nothing was run");
}

}  // namespace

TEST_CASE("import: a Megatron-LM log gives the hand-computed tokens/s/GPU and MFU", "[command]") {
  // tests/data/logs/megatron-dp8.log, 8 H100s, 64 rows x 4,096 tokens = 262,144 tokens per step. Window 5..19 is
  // iterations 6..20: eight of 2,055.0 ms (even iterations) and seven of 2,040.0 ms, 16.440 + 14.280 = 30.720 s for
  // 15 x 262,144 = 3,932,160 tokens: 3,932,160 / 30.72 / 8 = 16,000 tokens/s/GPU.
  // MFU = 6 x N x tokens/s/GPU / peak = 6 x 752,328,704 (the 4-layer proxy's N_active) x 16,000 / 989.4e12
  //     = 72,223,555,584,000 / 989.4e12 = 0.0729973 (7.30%).
  // $ / 1M tokens = 55.04 / 8 $/GPU-hour (p5.48xlarge) / (16,000 x 3,600) x 1e6 = 0.119444.
  // Wall time = the 20 kept steps: 9.0 + 2.3 + 2.1 + 2.06 + 2.05 + 30.72 = 48.23 s; GPU-hours 8 x 48.23 / 3600.
  RunRequest q = command_request("megatron-h100-dp8.yaml", "recipebench-import-megatron");
  const std::string log = test::source_path("tests/data/logs/megatron-dp8.log");
  q.overrides.backend = "command";
  q.import_log = log;
  const RunOutcome out = run_recipe(q, {});
  REQUIRE(out.exit_code == kOk);
  REQUIRE(out.record);
  const RunRecord& r = *out.record;
  REQUIRE(r.metrics);
  CHECK(r.metrics->window.tokens == 3932160);
  CHECK(r.metrics->window.seconds == Approx(30.72));
  CHECK(r.metrics->window.tokens_per_s_per_gpu == Approx(16000.0).epsilon(1e-12));
  REQUIRE(r.metrics->mfu);
  CHECK(*r.metrics->mfu == Approx(0.07299732725288054).epsilon(1e-12));
  CHECK(r.metrics->active_params == 752328704);
  CHECK(*r.metrics->usd_per_million_tokens == Approx(0.1194444444).epsilon(1e-9));
  CHECK(r.wall_seconds == Approx(48.23));
  CHECK(r.metrics->gpu_hours == Approx(8 * 48.23 / 3600));
  CHECK(r.steps.size() == 20);  // 22 parsed, settings.steps kept
  CHECK(r.log["source"] == "import");
  CHECK(r.log["parser"] == "megatron");
  CHECK(r.log["steps_parsed"] == 22);
  CHECK(r.log["sha256"] == sha256_file(log));
  CHECK(r.log["printed"]["tflops_per_gpu"].get<double>() == Approx(73.0));
  const CheckedRunRecord checked = reread(out);
  for (const auto& d : checked.errors) FAIL_CHECK(d.to_string());
  REQUIRE(checked.ok());
  // Read back, written again: the same document (the log block and settings.command included).
  const Json written = read_json_file(out.record_path);
  CHECK(checked.record->to_json() == written);
  CHECK_FALSE(written["settings"].contains("kernels"));  // the command's kernels are its own
  // `report` ranks it, labelled by how its figures were read.
  const Leaderboard board = build_leaderboard({}, {}, {RunRecordInput{out.record_path, *checked.record}});
  REQUIRE(board.groups.size() == 1);
  REQUIRE(board.groups[0].entries.size() == 1);
  CHECK(board.groups[0].entries[0].backend == "import \xC2\xB7 megatron");
  CHECK(board.groups[0].entries[0].tokens_per_s_per_gpu == Approx(16000.0));
  CHECK(board.unranked.empty());
}

TEST_CASE("import: a log that cannot be read gives a failed record naming the line", "[command]") {
  RunRequest q = command_request("megatron-h100-dp8.yaml", "recipebench-import-unreadable");
  q.overrides.backend = "command";
  q.import_log = test::source_path("tests/data/logs/megatron-unreadable.log");
  const RunOutcome out = run_recipe(q, {});
  CHECK(out.exit_code == kFailed);
  REQUIRE(out.record);
  CHECK(out.record->status == RunStatus::kFailed);
  const std::string message = out.record->error->message;
  CHECK_THAT(message, Catch::Contains("megatron-unreadable.log:3:1: error: megatron step line: no 'elapsed time"));
  CHECK(Json(out.record->error->log_tail).size() == 5);
  CHECK(reread(out).ok());
}

TEST_CASE("command backend: the command's steps, env and node variables, the log beside the record", "[command]") {
  const RunRequest q = command_request("hf-ok.yaml", "recipebench-command-ok");
  const RunOutcome out = run_recipe(q, {});
  REQUIRE(out.exit_code == kOk);
  const RunRecord& r = *out.record;
  // 2 rows x 4,096 tokens per step at 0.5 s on one H200: 16,384 tokens/s/GPU.
  CHECK(r.metrics->window.tokens_per_s_per_gpu == Approx(16384.0));
  CHECK(r.steps.size() == 20);
  CHECK(r.log["source"] == "run");
  CHECK(r.log["exit"] == "exited with status 0");
  CHECK(r.capabilities.is_null());
  const std::string log_path = r.log["path"];
  CHECK(log_path == out.record_path.substr(0, out.record_path.size() - 5) + ".log");
  const std::string text = test::read_file(log_path);
  CHECK_THAT(text, Catch::Contains("NODE_RANK=0 NNODES=1 GREETING=hello \"1\" node(s)"));
  CHECK(r.log["sha256"] == sha256_file(log_path));
  CHECK(reread(out).ok());
}

TEST_CASE("command backend: a non-zero exit gives a failed record with the log's last lines", "[command]") {
  const RunRequest q = command_request("exit-3.yaml", "recipebench-command-exit");
  const RunOutcome out = run_recipe(q, {});
  CHECK(out.exit_code == kFailed);
  REQUIRE(out.record);
  CHECK(out.record->status == RunStatus::kFailed);
  CHECK_THAT(out.record->error->message, Catch::StartsWith("the command exited with status 3"));
  const Json tail = Json(out.record->error->log_tail);
  REQUIRE(tail.size() == 4);
  CHECK(tail.back() == "Traceback: CUDA out of memory");
  CHECK(out.record->log["steps_parsed"] == 3);
  CHECK(reread(out).ok());
}

TEST_CASE("command backend: a failed record keeps the last 50 lines of the log", "[command]") {
  const RunRequest q = command_request("many-lines.yaml", "recipebench-command-tail");
  const RunOutcome out = run_recipe(q, {});
  CHECK(out.exit_code == kFailed);
  REQUIRE(out.record);
  const Json tail = Json(out.record->error->log_tail);
  REQUIRE(tail.size() == 50);
  CHECK(tail.front() == "line 71");
  CHECK(tail.back() == "line 120");
  CHECK(out.record->log["parser"] == "none");
  CHECK(out.record->log["lines"] == 120);
}

TEST_CASE("command backend: fewer steps than the window needs is a failed record", "[command]") {
  const RunRequest q = command_request("too-few-steps.yaml", "recipebench-command-few");
  const RunOutcome out = run_recipe(q, {});
  CHECK(out.exit_code == kFailed);
  REQUIRE(out.record);
  CHECK(out.record->error->message == "the log has 10 step line(s) (hf); the window 5..19 needs steps 0..19");
  CHECK(Json(out.record->error->log_tail).size() == 10);
  CHECK(reread(out).ok());
}

TEST_CASE("command backend: a hanging command is stopped at its timeout, no process left", "[command]") {
  const RunRequest q = command_request("hang.yaml", "recipebench-command-hang");
  const auto t0 = std::chrono::steady_clock::now();
  const RunOutcome out = run_recipe(q, {});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(out.exit_code == kFailed);
  CHECK(took < 8.0);  // timeout 1 s; sleep dies of SIGTERM at once
  REQUIRE(out.record);
  CHECK(out.record->status == RunStatus::kFailed);
  CHECK_THAT(out.record->error->message,
             Catch::StartsWith("the command ran past its timeout; its process group was stopped (SIGTERM)"));
  CHECK(Json(out.record->error->log_tail) == Json::array({"started; hanging"}));
  std::ifstream pids(out.record->log["path"].get<std::string>() + ".pids");
  int shell = 0, background = 0;
  pids >> shell >> background;
  REQUIRE(shell > 0);
  REQUIRE(background > 0);
  CHECK_FALSE(process_group_alive(shell));
  CHECK_FALSE(process_alive(shell));
  CHECK_FALSE(process_alive(background));
  CHECK(reread(out).ok());
}

TEST_CASE("command backend: the env block is exported with its $ kept for the shell", "[command]") {
  RunRequest q = command_request("hf-ok.yaml", "recipebench-command-script");
  const ValidatedRecipe v = validate_recipe_file(q.recipe_path);
  REQUIRE(v.ok());
  CHECK(command_script(*v.recipe, "true") ==
        "export PYTORCH_CUDA_ALLOC_CONF=\"expandable_segments:True\"\nexport GREETING=\"hello \\\"$NNODES\\\" "
        "node(s)\"\ntrue");
  RunOptions o;
  o.place.master_port = 29511;
  const auto env = command_environment(o, [](const char* n) -> const char* {
    const std::string s = n;
    return s == "SLURM_NODEID" ? "3" : s == "SLURM_NNODES" ? "4" : nullptr;
  });
  CHECK(env[0] == std::make_pair(std::string("NODE_RANK"), std::string("3")));
  CHECK(env[1] == std::make_pair(std::string("NNODES"), std::string("4")));
  CHECK(env[3] == std::make_pair(std::string("MASTER_PORT"), std::string("29511")));
}

TEST_CASE("command backend: bench.kernels in the recipe is refused, located at the field", "[command]") {
  check_field_refused("kernels-ops.yaml", "recipebench-command-kernels",
                      ":57:12: error: bench.kernels: ops, expected absent (the command backend runs the "
                      "recipe's own command: its kernels are the command's)");
}

TEST_CASE("command backend: bench.ep_dispatch in the recipe is refused, located at the field", "[command]") {
  check_field_refused("ep-dispatch.yaml", "recipebench-command-ep-dispatch",
                      ":57:16: error: bench.ep_dispatch: fixed_capacity, expected absent (the command "
                      "backend runs the recipe's own command: its expert dispatch is the command's)");
}

TEST_CASE("command backend: bench.overlap_param_gather in the recipe is refused, located at the field", "[command]") {
  check_field_refused("overlap-param-gather.yaml", "recipebench-command-overlap-param-gather",
                      ":57:25: error: bench.overlap_param_gather: true, expected false or absent (the command "
                      "backend runs the recipe's own command: its optimizer is the command's)");
}

TEST_CASE("command backend: bench.overlap_tp_comm in the recipe is refused, located at the field", "[command]") {
  check_field_refused("overlap-tp-comm.yaml", "recipebench-command-overlap-tp-comm",
                      ":57:20: error: bench.overlap_tp_comm: true, expected false or absent (the command "
                      "backend runs the recipe's own command: its tensor parallelism is the command's)");
}

TEST_CASE("command backend: bench.fail_on_sync in the recipe is refused, located at the field", "[command]") {
  check_field_refused("fail-on-sync.yaml", "recipebench-command-fail-on-sync",
                      ":57:17: error: bench.fail_on_sync: true, expected false or absent (the command "
                      "backend runs the recipe's own command: its synchronisation is the command's)");
}

TEST_CASE("import-missing-loss-shown-as-zero (2026-12-02): a log without a loss gives null losses, said once",
          "[command][cases]") {
  // A Megatron-LM log of a first pipeline stage: no 'lm loss' on its step lines (the last stage prints it).
  register_command_backend();
  RunRequest q;
  const std::string dir = test::source_path("tests/data/cases/import-missing-loss-shown-as-zero/");
  q.recipe_path = dir + "attune-48gpu-tp2-pp6-ep8.yaml";
  q.out_dir = (fs::temp_directory_path() / "recipebench-import-missing-loss").string();
  q.build = BuildInfo{"test", "test", "Debug"};
  fs::remove_all(q.out_dir);
  q.overrides.backend = "command";
  q.overrides.log_format = "megatron";
  q.import_log = dir + "megatron-rank0.log";
  Refused messages;  // every message of the run
  const RunOutcome out = run_recipe(q, {&messages});
  REQUIRE(out.exit_code == kOk);
  const RunRecord& r = *out.record;
  REQUIRE(r.steps.size() == 20);
  for (const StepSample& s : r.steps) CHECK(std::isnan(s.loss));
  const Json written = read_json_file(out.record_path);
  for (const Json& s : written["steps"]) CHECK(s["loss"].is_null());
  // The measurement's time is the log's, not the import's: the leaderboard dates the entry 2026-10-18.
  CHECK(written["log"]["printed_at"] == Json{{"first", "2026-10-18T10:01:00"}, {"last", "2026-10-18T10:20:00"}});
  CHECK(std::count(messages.lines.begin(), messages.lines.end(),
                   "recipebench import: the log prints no loss: the record's loss is null (Megatron-LM prints it on "
                   "the last pipeline stage only: import that rank's log)") == 1);
  const CheckedRunRecord checked = reread(out);  // report reads it back
  REQUIRE(checked.ok());
  const Leaderboard board = build_leaderboard({}, {}, {RunRecordInput{out.record_path, *checked.record}});
  REQUIRE(board.groups.size() == 1);
  CHECK(board.groups[0].entries.at(0).measured == "2026-10-18");
}

TEST_CASE("import-log-vs-recipe-mismatch (2026-12-02): a log of another run is refused, located, no record",
          "[command][cases]") {
  register_command_backend();
  const std::string dir = test::source_path("tests/data/cases/import-log-vs-recipe-mismatch/");
  const auto import = [&](const std::string& log, const std::string& recipe) {
    RunRequest q;
    q.recipe_path = dir + recipe;
    q.out_dir = (fs::temp_directory_path() / "recipebench-import-mismatch").string();
    q.build = BuildInfo{"test", "test", "Debug"};
    fs::remove_all(q.out_dir);
    q.overrides.backend = "command";
    q.import_log = dir + log;
    return q;
  };
  const std::string summary =
      "recipebench import: the log is of another run than the recipe describes (above); no record was written";
  // (1) Megatron-LM ran global batch 256 (its step lines say so); the recipe says 128 (line 33).
  const RunRequest gb = import("megatron-gb256.log", "attune-48gpu-tp2-pp6-ep8.yaml");
  const Refused one = refused_run(gb);  // exit 1, no record
  REQUIRE(one.lines.size() == 2);
  CHECK(one.lines[0] == dir +
                            "megatron-gb256.log:4:1: error: global batch size: 256 (step 0's line), expected 128 "
                            "(the recipe's workload.global_batch at " +
                            dir + "attune-48gpu-tp2-pp6-ep8.yaml:33:17)");
  CHECK(one.lines[1] == summary);
  CHECK_FALSE(fs::exists(gb.out_dir));
  // (2) A 48-GPU TP2 PP6 run (its first line) against the 64-GPU TP2 PP8 recipe: world size and PP, each located.
  const RunRequest world = import("megatron-48gpu.log", "attune-tp2-pp8-ep8-vpp2-mt16k.yaml");
  const Refused two = refused_run(world);
  REQUIRE(two.lines.size() == 3);
  CHECK(two.lines[0] == dir +
                            "megatron-48gpu.log:1:19: error: world size: 48, expected 64 (the recipe's gpu.count at " +
                            dir + "attune-tp2-pp8-ep8-vpp2-mt16k.yaml:7:10)");
  CHECK(two.lines[1] == dir +
                            "megatron-48gpu.log:1:133: error: pipeline-model-parallel size: 6, expected 8 (the "
                            "recipe's layout.pp at " +
                            dir + "attune-tp2-pp8-ep8-vpp2-mt16k.yaml:62:7)");
  CHECK(two.lines[2] == summary);
  CHECK_FALSE(fs::exists(world.out_dir));
  // The same log with its own recipe is imported (world size 48, TP 2, PP 6, DP 4, global batch 128 agree).
  const RunRequest own = import("megatron-48gpu.log", "attune-48gpu-tp2-pp6-ep8.yaml");
  const RunOutcome out = run_recipe(own, {});
  CHECK(out.exit_code == kOk);
  REQUIRE(out.record);
  CHECK(out.record->metrics->window.tokens == 15 * 128 * 8192);
}

TEST_CASE("command backend: a command whose log states another global batch than the recipe fails, located",
          "[command]") {
  // hf-ok.yaml (global batch 2) with a command that also prints the Hugging Face Trainer's total train batch size 8.
  std::string text = test::read_file(test::source_path("tests/data/command/hf-ok.yaml"));
  const std::string loop = "    for i in $(seq 0 21); do\n";
  REQUIRE(text.find(loop) != std::string::npos);
  text.replace(text.find(loop), 0,
               "    echo \"  Total train batch size (w. parallel, distributed & accumulation) = 8\"\n");
  const fs::path dir = fs::temp_directory_path() / "recipebench-command-other-batch";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string recipe = (dir / "hf-other-batch.yaml").string();
  std::ofstream(recipe) << text;
  RunRequest q = command_request("hf-ok.yaml", "recipebench-command-other-batch/runs");
  q.recipe_path = recipe;
  const RunOutcome out = run_recipe(q, {});
  CHECK(out.exit_code == kFailed);
  REQUIRE(out.record);
  CHECK(out.record->status == RunStatus::kFailed);
  const std::string log = out.record_path.substr(0, out.record_path.size() - 5) + ".log";
  CHECK(out.record->error->message ==
        "the command's log says it ran another run than the recipe describes: " + log +
            ":1:70: error: Total train batch size: 8, expected 2 (the recipe's workload.global_batch)");
}
