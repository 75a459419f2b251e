// The run driver (harness/run/run_driver.h) with a fake backend registered here: the record's figures, the
// reporters' calls in order, the console's table and summary, failures and refusals.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backends/torch/torch_backend_registration.h"
#include "console/console_reporter.h"
#include "fake_backend.h"
#include "layout/rank_map.h"
#include "recipe/validate.h"
#include "run/run_driver.h"
#include "settings/run_options.h"
#include "test_util.h"
#include "util/exit_code.h"

using namespace recipebench;
namespace fs = std::filesystem;

using namespace recipebench::test;

namespace {

std::string read_all(std::FILE* f) {
  std::rewind(f);
  std::string s;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, f)) s.append(buf, n);
  return s;
}

}  // namespace

TEST_CASE("run driver: a complete run's record, figures and reporter calls", "[run_driver]") {
  auto script = register_fake();
  const RunRequest q = fake_request("recipebench-driver-complete");
  Recorder rec;
  const RunOutcome out = run_recipe(q, {&rec});
  REQUIRE(out.exit_code == kOk);
  CHECK(script->runs == 1);
  CHECK(rec.calls == std::vector<std::string>{"start fake", "step 0 on 2", "step 1 on 2", "step 2 on 2", "step 3 on 2",
                                              "step 4 on 2", "step 5 on 2", "finish complete"});
  REQUIRE(out.record);
  REQUIRE(out.record->metrics);
  const RunMetrics& m = *out.record->metrics;
  // Window 1..4: 0.6 + 0.5 + 0.6 + 0.5 s for 4 x 1000 tokens over 2 devices.
  CHECK(m.window.tokens == 4000);
  CHECK(m.window.seconds == Approx(2.2));
  CHECK(m.window.tokens_per_s_per_gpu == Approx(4000 / 2.2 / 2));
  // Sample standard deviation of {0.6, 0.5, 0.6, 0.5}: sqrt(4 x 0.05^2 / 3); mean 0.55.
  CHECK(m.window.step_time_cv_percent == Approx(100 * std::sqrt(4 * 0.05 * 0.05 / 3) / 0.55));
  CHECK(m.harness_overhead_fraction == Approx(0.01 / 0.55));  // 3 tails of 0.01 s per 0.55 s step
  CHECK_FALSE(m.mfu);                                         // CPU: no peak FLOP/s
  CHECK(out.record->model_name == "Qwen3.5-tiny");
  // The writer wrote the same record to the reported path.
  const Json written = Json::parse(test::read_file(out.record_path));
  CHECK(written["status"] == "complete");
  CHECK(written["backend"] == "fake");
  CHECK(written["settings"]["window"] == Json::array({1, 4}));
  CHECK(written["metrics"]["tokens_per_s_per_gpu"].get<double>() == Approx(4000 / 2.2 / 2));
  CHECK(written["steps"].size() == 6);
  CHECK(written["environment"]["device"]["name"] == "fake device");
  // The capability table the run was checked against.
  CHECK(written["capabilities"] == fake_capabilities().to_json());
  CHECK(written["capabilities"]["dispatcher"] == Json::array({"alltoall"}));
  CHECK(written["capabilities"]["recompute"] == Json::array({"full", "none"}));
}

TEST_CASE("run driver: the rank map is built once per run, in its resolved run, and the backend is handed it",
          "[run_driver][resolved]") {
  auto script = register_fake();
  for (const char* recipe : {"recipes/examples/qwen3.5-tiny-cpu.yaml", "tests/data/dist/tiny-tp2-pp2-ep2-dp2.yaml"}) {
    DYNAMIC_SECTION(recipe) {
      RunRequest q = fake_request("recipebench-driver-resolved");
      q.recipe_path = source_path(recipe);
      q.nproc.reset();
      // What validation itself builds (the layout and memory checks), measured apart: the run adds exactly one.
      const int64_t before_validate = rank_map_builds();
      REQUIRE(validate_recipe_file(q.recipe_path).ok());
      const int64_t validation = rank_map_builds() - before_validate;
      SECTION("a dry run") {
        q.dry_run = true;
        const int64_t before = rank_map_builds();
        Recorder rec;
        REQUIRE(run_recipe(q, {&rec}).exit_code == kOk);
        CHECK(rank_map_builds() - before == validation + 1);
      }
      SECTION("an emulated rank of the layout, run") {
        q.emulate_rank = 0;
        const int64_t before = rank_map_builds();
        Recorder rec;
        const RunOutcome out = run_recipe(q, {&rec});
        REQUIRE(out.exit_code == kOk);
        CHECK(rank_map_builds() - before == validation + 1);
        CHECK(script->last_map_world == script->last_options.place.world);
        CHECK(script->last_map_world == validate_recipe_file(q.recipe_path).recipe->layout.world());
      }
    }
  }
}

TEST_CASE("run driver: the console's table and summary", "[run_driver]") {
  register_fake();
  const RunRequest q = fake_request("recipebench-driver-console");
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  ConsoleReporter console(out, err);
  const RunOutcome o = run_recipe(q, {&console});
  REQUIRE(o.exit_code == kOk);
  const std::string text = read_all(out);
  CHECK(text.find("model Qwen3.5-tiny (4 of 4 layers), backend fake, device cpu, 6 steps, window 1..4\n") !=
        std::string::npos);
  CHECK(text.find("  step   time (s)       loss     tokens/s  grad norm     peak mem\n") != std::string::npos);
  // Step 1 (0-based, as the record and the window number it): 0.6 s, loss 9, 1000 / 0.6 / 2 = 833 tokens/s per device.
  // The fake backend measures no memory (0 bytes): "-", not "0.00 GB".
  CHECK(text.find("  1/6       0.600     9.0000          833      1.500             -\n") != std::string::npos);
  CHECK(text.find("  5/6       0.600     5.0000          833      1.500             -  (not timed)\n") !=
        std::string::npos);
  CHECK(text.find("window 1..4: 909.1 tokens/s/GPU, step-time CV 10.50%, mean step 0.550 s") != std::string::npos);
  CHECK(text.find("run record: " + o.record_path) != std::string::npos);
  CHECK(read_all(err).empty());
  std::fclose(out);
  std::fclose(err);
}

TEST_CASE("run driver: a failing step gives a failed record and exit 1", "[run_driver]") {
  auto script = register_fake();
  script->fail_at = 3;
  const RunRequest q = fake_request("recipebench-driver-failed");
  Recorder rec;
  const RunOutcome out = run_recipe(q, {&rec});
  CHECK(out.exit_code == kFailed);
  CHECK(rec.calls.back() == "finish failed");
  CHECK(rec.calls.size() == 5);  // start, steps 0..2, finish
  const Json written = Json::parse(test::read_file(out.record_path));
  CHECK(written["status"] == "failed");
  CHECK(written["error"]["step"] == 3);
  CHECK(written["error"]["message"] == "step 3: loss is NaN");
  CHECK(written["metrics"].is_null());
}

TEST_CASE("run driver: refusals start no backend", "[run_driver]") {
  auto script = register_fake();
  Recorder rec;
  SECTION("a recipe that fails validation: its diagnostics, exit 1") {
    RunRequest q = fake_request("recipebench-driver-refused");
    q.recipe_path = test::source_path("tests/data/bad/ep-not-dividing-experts.yaml");
    CHECK(run_recipe(q, {&rec}).exit_code == kFailed);
    REQUIRE(rec.calls.size() >= 2);
    CHECK(rec.calls.front().find("ep-not-dividing-experts.yaml:") != std::string::npos);
    CHECK(rec.calls.back() == "message recipebench run: the recipe failed validation; nothing was run");
  }
  SECTION("a window outside the steps: exit 2") {
    RunRequest q = fake_request("recipebench-driver-refused");
    q.overrides.window = StepWindow{4, 6};
    CHECK(run_recipe(q, {&rec}).exit_code == kUsage);
    CHECK(rec.calls == std::vector<std::string>{"message recipebench run: window 4..6 with 6 steps, expected 0 <= "
                                                "first <= last <= 5 (steps numbered from 0)"});
  }
  SECTION("an unknown backend: exit 2, naming the ones there are") {
    RunRequest q = fake_request("recipebench-driver-refused");
    q.overrides.backend = "nope";
    CHECK(run_recipe(q, {&rec}).exit_code == kUsage);
    REQUIRE(rec.calls.size() == 1);
    CHECK(rec.calls[0].find("no backend 'nope' in this build (available: ") != std::string::npos);
    CHECK(rec.calls[0].find("fake") != std::string::npos);
  }
  SECTION("a dry run reports the rank map and runs nothing") {
    RunRequest q = fake_request("recipebench-driver-refused");
    q.dry_run = true;
    CHECK(run_recipe(q, {&rec}).exit_code == kOk);
    CHECK(rec.calls == std::vector<std::string>{"dry_run"});
  }
  CHECK(script->runs == 0);
  CHECK_FALSE(fs::exists(fs::temp_directory_path() / "recipebench-driver-refused"));
}

TEST_CASE("run driver: what the backend does not run is refused by name, also in a dry run", "[run_driver]") {
  auto script = register_fake();
  const bool dry = GENERATE(false, true);
  RunRequest q = fake_request("recipebench-driver-capabilities");
  q.dry_run = dry;
  Recorder rec;
  SECTION("dispatcher: deepep") {
    q.recipe_path = test::source_path("tests/data/capabilities/dispatcher-deepep.yaml");
    CHECK(run_recipe(q, {&rec}).exit_code == kFailed);
    CHECK(rec.calls ==
          std::vector<std::string>{
              "message " + q.recipe_path +
                  ":36:15: error: layout.dispatcher: deepep, expected alltoall (what the fake backend runs)",
              "message recipebench run: the fake backend does not run what the recipe asks for; nothing "
              "was run"});
  }
  SECTION("offload: optimizer") {
    q.recipe_path = test::source_path("tests/data/capabilities/offload-optimizer.yaml");
    CHECK(run_recipe(q, {&rec}).exit_code == kFailed);
    REQUIRE(rec.calls.size() == 2);
    CHECK(rec.calls[0] == "message " + q.recipe_path +
                              ":35:12: error: layout.offload: optimizer, expected none (what the fake backend runs)");
  }
  SECTION("precision: fp8") {
    q.recipe_path = test::source_path("tests/data/capabilities/precision-fp8.yaml");
    CHECK(run_recipe(q, {&rec}).exit_code == kFailed);
    REQUIRE(rec.calls.size() == 2);
    CHECK(rec.calls[0] == "message " + q.recipe_path +
                              ":17:14: error: workload.precision: fp8, expected bf16, fp32 or fp64 (what the fake "
                              "backend runs)");
  }
  SECTION("a device from the command line") {
    q.overrides.device = Device::kCuda;
    CHECK(run_recipe(q, {&rec}).exit_code == kFailed);
    REQUIRE(rec.calls.size() == 2);
    CHECK(rec.calls[0] == "message <command line>: error: --device: cuda, expected cpu (what the fake backend runs)");
  }
  CHECK(script->runs == 0);
}

TEST_CASE("capabilities: ETP taken from TP when layout.etp is absent, and several fields at once", "[run_driver]") {
  const ValidatedRecipe v = validate_recipe_file(test::source_path("tests/data/capabilities/dispatcher-deepep.yaml"));
  REQUIRE(v.ok());
  Recipe r = *v.recipe;
  r.layout.tp = 2;
  r.layout.etp.reset();
  r.layout.cp = 2;
  r.layout.recompute.granularity = "selective";
  const Diagnostics d = check_capabilities("torch", fake_capabilities(), r, *v.source, Device::kCpu, DataSource::kFile);
  REQUIRE(d.size() == 4);
  CHECK(d[0].path == "layout.cp");
  CHECK(d[0].found == "2");
  CHECK(d[0].expected == "1 (what the torch backend runs)");
  CHECK(d[1].path == "layout.etp");
  CHECK(d[1].found == "2 (layout.etp absent: ETP = TP)");
  CHECK(d[2].path == "layout.dispatcher");
  CHECK(d[3].path == "layout.recompute.granularity");
  CHECK(d[3].expected == "full or none (what the torch backend runs)");
}

TEST_CASE("run driver: bench.fail_on_sync with EP > 1 and the host_splits dispatcher on CUDA is refused, located",
          "[run_driver][ep_dispatch][fail_on_sync]") {
  auto script = std::make_shared<FakeScript>();
  BackendCapabilities caps = fake_capabilities();
  caps.devices = {Device::kCpu, Device::kCuda};
  register_backend("fake-cuda", caps, [script] { return std::make_unique<FakeBackend>(script); });
  RunRequest q = fake_request("recipebench-driver-ep-dispatch-sync");
  q.overrides.backend = "fake-cuda";
  q.recipe_path = test::source_path("tests/data/fail-on-sync/tiny-ep2-fail-on-sync.yaml");
  q.overrides.device = Device::kCuda;
  q.dry_run = true;  // the refusal comes first; past it, a dry run stops before any rank starts
  Recorder rec;
  SECTION("from the recipe: refused (usage) at bench.fail_on_sync, naming --ep-dispatch fixed_capacity") {
    CHECK(run_recipe(q, {&rec}).exit_code == kUsage);
    CHECK(rec.calls == std::vector<std::string>{
                           "message " + q.recipe_path +
                               ":43:17: error: bench.fail_on_sync: true, expected false or absent with "
                               "bench.ep_dispatch host_splits on EP 2 (its all-to-all's split sizes are read on the "
                               "host, which the check fails on): use --ep-dispatch fixed_capacity",
                           "message recipebench run: the host_splits expert dispatcher synchronises the host with the "
                           "GPU in every MoE layer; nothing was run"});
  }
  SECTION("from the command line: located there") {
    q.recipe_path = test::source_path("tests/data/dist/tiny-ep2-dp2.yaml");
    q.overrides.fail_on_sync = true;
    CHECK(run_recipe(q, {&rec}).exit_code == kUsage);
    REQUIRE_FALSE(rec.calls.empty());
    CHECK(rec.calls.front().rfind("message <command line>: error: --fail-on-sync: true, expected false or absent with "
                                  "bench.ep_dispatch host_splits on EP 2",
                                  0) == 0);
  }
  SECTION("with --ep-dispatch fixed_capacity: not refused") {
    q.overrides.ep_dispatch = EpDispatch::kFixedCapacity;
    CHECK(run_recipe(q, {&rec}).exit_code == kOk);
    CHECK(rec.calls == std::vector<std::string>{"dry_run"});
  }
  SECTION("on the CPU: not refused (nothing to check)") {
    q.overrides.device = Device::kCpu;
    CHECK(run_recipe(q, {&rec}).exit_code == kOk);
  }
  CHECK(script->runs == 0);
}

TEST_CASE("run driver: a backend the memory plan models gets its plan printed after start, before step 0",
          "[run_driver][plan]") {
  auto script = std::make_shared<FakeScript>();
  BackendCapabilities caps = fake_capabilities();
  caps.memory_plan = true;
  register_backend("fake-planned", caps, [script] { return std::make_unique<FakeBackend>(script); });
  RunRequest q = fake_request("recipebench-driver-plan");
  q.overrides.backend = "fake-planned";
  Recorder rec;
  REQUIRE(run_recipe(q, {&rec}).exit_code == kOk);
  REQUIRE(rec.calls.size() == 10);  // start, the plan, the model being built, steps 0..5, finish
  CHECK(rec.calls[0] == "start fake-planned");
  CHECK(rec.calls[1].rfind("message memory plan per GPU (GB; torch backend; docs/memory-plan.md):", 0) == 0);
  CHECK(rec.calls[1].find("fits") != std::string::npos);  // the plan's verdict line
  CHECK(rec.calls[2] ==
        "message building the model (Qwen3.5-tiny, 4 layers) on the CPU; the steps follow once it is "
        "built");  // a long build is not silence (cpu-run-exceeds-host-memory, 2026-12-02)
  CHECK(rec.calls[3] == "step 0 on 2");
}

TEST_CASE("run hooks: RECIPEBENCH_DUMP_STEP_PARAMS=1 dumps each step's parameters and the record's hooks say so",
          "[run_driver]") {
  RunOptions off;
  ::unsetenv("RECIPEBENCH_DUMP_STEP_PARAMS");
  apply_environment_hooks(off);
  CHECK_FALSE(off.hooks.dump_step_params);
  CHECK_FALSE(off.hooks.any());
  CHECK_FALSE(off.to_json(false).contains("hooks"));
  RunOptions on;
  ::setenv("RECIPEBENCH_DUMP_STEP_PARAMS", "1", 1);
  apply_environment_hooks(on);
  ::unsetenv("RECIPEBENCH_DUMP_STEP_PARAMS");
  CHECK(on.hooks.dump_step_params);
  CHECK(on.to_json(false)["hooks"].dump() == R"({"dump_step_params":true})");
  RunOptions zero;
  ::setenv("RECIPEBENCH_DUMP_STEP_PARAMS", "0", 1);
  apply_environment_hooks(zero);
  ::unsetenv("RECIPEBENCH_DUMP_STEP_PARAMS");
  CHECK_FALSE(zero.hooks.dump_step_params);
}
