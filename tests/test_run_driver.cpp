// The run driver (harness/run/run_driver.h) with a fake backend registered here: the record's figures, the
// reporters' calls in order, the console's table and summary, failures and refusals.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "backends/torch/torch_backend_registration.h"
#include "recipe/validate.h"
#include "run/backend.h"
#include "run/console_reporter.h"
#include "run/record_writer.h"
#include "run/run_driver.h"
#include "test_util.h"
#include "util/exit_code.h"

using namespace recipebench;
namespace fs = std::filesystem;

namespace {

/// What the fake backend does: step s takes 0.6 s when odd, 0.5 s when even, 1000 tokens, 0.01 s overhead; it
/// reports `devices` devices and throws RunError("loss is NaN", fail_at) at step fail_at (>= 0).
struct FakeScript {
  int devices = 2;
  int fail_at = -1;
  int runs = 0;             ///< how often run() was called
  RunOptions last_options;  ///< what the last run() was given
};

class FakeBackend : public Backend {
 public:
  explicit FakeBackend(std::shared_ptr<FakeScript> s) : s_(std::move(s)) {}
  std::string name() const override { return "fake"; }
  BackendEnvironment environment(const Recipe&, const RunOptions&) override {
    BackendEnvironment env;
    env.device_name = "fake device";
    env.device_count = s_->devices;
    return env;
  }
  void run(const Recipe&, const ModelConfig&, const RunOptions& o,
           const std::function<void(const StepSample&)>& on_step) override {
    ++s_->runs;
    s_->last_options = o;
    for (int i = 0; i < o.steps; ++i) {
      if (i == s_->fail_at) throw RunError("step " + std::to_string(i) + ": loss is NaN", i);
      StepSample s;
      s.step = i;
      s.seconds = i % 2 ? 0.6 : 0.5;
      s.tokens = 1000;
      s.loss = 10.0 - i;
      s.grad_norm = 1.5;
      s.overhead_seconds = i > 0 ? 0.01 : 0.0;
      on_step(s);
    }
  }

 private:
  std::shared_ptr<FakeScript> s_;
};

/// What the fake backend runs: the torch backend's table, on CPU only.
BackendCapabilities fake_capabilities() {
  BackendCapabilities c = torch_backend_capabilities();
  c.devices = {Device::kCpu};
  c.memory_plan = false;  // the tests below list every reporter call; the plan's own test turns it on
  return c;
}

/// Registers the fake backend (afresh) and returns its script.
std::shared_ptr<FakeScript> register_fake() {
  auto script = std::make_shared<FakeScript>();
  register_backend("fake", fake_capabilities(), [script] { return std::make_unique<FakeBackend>(script); });
  return script;
}

/// Records every reporter call as one line.
struct Recorder : RunReporter {
  std::vector<std::string> calls;
  void message(const std::string& line) override { calls.push_back("message " + line); }
  void dry_run(const std::string&) override { calls.push_back("dry_run"); }
  void start(const RunRecord& r) override { calls.push_back("start " + r.options.backend); }
  void step(const StepSample& s, const RunRecord&, int devices) override {
    calls.push_back("step " + std::to_string(s.step) + " on " + std::to_string(devices));
  }
  void finish(const RunRecord& r, std::string&, bool shown) override {
    calls.push_back("finish " + r.status + (shown ? " shown" : ""));
  }
};

/// How many of the recorded calls name `setting` (e.g. the console's note about it).
long calls_naming(const Recorder& rec, const std::string& setting) {
  return std::count_if(rec.calls.begin(), rec.calls.end(),
                       [&](const std::string& c) { return c.find(setting) != std::string::npos; });
}

/// The tiny CPU example recipe on the fake backend: 6 steps, window 1..4, records under a fresh folder.
RunRequest fake_request(const std::string& folder) {
  RunRequest q;
  q.recipe_path = test::source_path("recipes/examples/qwen3.5-tiny-cpu.yaml");
  q.backend = "fake";
  q.steps = 6;
  q.window = StepWindow{1, 4};
  q.out_dir = (fs::temp_directory_path() / folder).string();
  fs::remove_all(q.out_dir);
  return q;
}

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
  RecordWriter writer;
  const RunOutcome out = run_recipe(q, {&writer, &rec});
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
  // Step 2 (index 1): 0.6 s, loss 9, 1000 / 0.6 / 2 = 833 tokens/s per device.
  CHECK(text.find("  2/6       0.600     9.0000          833      1.500       0.00 GB\n") != std::string::npos);
  CHECK(text.find("  6/6       0.600     5.0000          833      1.500       0.00 GB  (not timed)\n") !=
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
  RecordWriter writer;
  const RunOutcome out = run_recipe(q, {&writer, &rec});
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
    q.window = StepWindow{4, 6};
    CHECK(run_recipe(q, {&rec}).exit_code == kUsage);
    CHECK(rec.calls == std::vector<std::string>{"message recipebench run: window 4..6 with 6 steps, expected 0 <= "
                                                "first <= last <= 5 (steps numbered from 0)"});
  }
  SECTION("an unknown backend: exit 2, naming the ones there are") {
    RunRequest q = fake_request("recipebench-driver-refused");
    q.backend = "nope";
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
    q.device = Device::kCuda;
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

TEST_CASE("run driver: overlap_grad_reduce is recorded, and said to have no effect with DP 1 and EDP 1",
          "[run_driver][overlap]") {
  auto script = register_fake();
  RunRequest q = fake_request("recipebench-driver-overlap");
  q.overlap_grad_reduce = true;
  q.grad_reduce_bucket_elements = 4096;
  Recorder rec;
  SECTION("DP1: no effect, said once, recorded") {
    const RunOutcome out = run_recipe(q, {&rec});
    REQUIRE(out.exit_code == kOk);
    REQUIRE(out.record);
    CHECK(rec.calls.front() ==
          "message recipebench run: bench.overlap_grad_reduce: true has no effect on TP1 PP1 EP1 DP1 (DP 1 and EDP 1: "
          "no gradient is reduce-scattered)");
    const Json s = out.record->to_json()["settings"];
    CHECK(s["overlap_grad_reduce"] == true);
    CHECK(s["grad_reduce_bucket_elements"] == 4096);
    CHECK(s["overlap_grad_reduce_applies"] == false);
    // Read back from the record as written.
    const RunRecord back = RunRecord::from_json(out.record->to_json(), "r.json");
    CHECK(back.options.overlap_grad_reduce);
    CHECK(back.options.grad_reduce_bucket_elements == 4096);
    CHECK(back.options.overlap_grad_reduce_applies == false);
  }
  SECTION("DP2 (from the recipe's layout): it applies, nothing said") {
    q.recipe_path = test::source_path("tests/data/dist/tiny-dp2.yaml");
    const RunOutcome out = run_recipe(q, {&rec});
    REQUIRE(out.exit_code == kOk);
    CHECK(rec.calls.front() == "start fake");
    CHECK(out.record->to_json()["settings"]["overlap_grad_reduce_applies"] == true);
  }
  SECTION("a bucket size without the switch: recorded, said to have no effect") {
    q.overlap_grad_reduce = false;
    const RunOutcome out = run_recipe(q, {&rec});
    REQUIRE(out.exit_code == kOk);
    CHECK(rec.calls.front() ==
          "message recipebench run: bench.grad_reduce_bucket_elements: 4096 has no effect without "
          "bench.overlap_grad_reduce: true");
    const Json s = out.record->to_json()["settings"];
    CHECK(s["overlap_grad_reduce"] == false);
    CHECK_FALSE(s.contains("overlap_grad_reduce_applies"));
  }
  CHECK(script->runs == 1);
}

TEST_CASE(
    "run driver: bench.overlap_p2p_comm is recorded, said to have no effect with PP 1, the command line wins, "
    "and a backend running the recipe's own command refuses it at the field",
    "[run_driver][overlap_p2p]") {
  auto script = register_fake();
  RunRequest q = fake_request("recipebench-driver-overlap-p2p");
  const std::string pp2 = test::source_path("tests/data/dist/tiny-pp2-overlap-p2p.yaml");
  Recorder rec;
  auto notes = [&] { return calls_naming(rec, "overlap_p2p_comm"); };
  SECTION("absent: false, nothing said; a record without the field reads back false") {
    const RunOutcome out = run_recipe(q, {&rec});
    REQUIRE(out.exit_code == kOk);
    CHECK(rec.calls.front() == "start fake");
    CHECK_FALSE(script->last_options.overlap_p2p_comm);
    CHECK(out.record->to_json()["settings"]["overlap_p2p_comm"] == false);
    Json old = out.record->to_json();
    old["settings"].erase("overlap_p2p_comm");
    CHECK_FALSE(RunRecord::from_json(old, "old.json").options.overlap_p2p_comm);
  }
  SECTION("--overlap-p2p-comm true with PP 1: the backend gets it, no effect said once, recorded, read back") {
    q.overlap_p2p_comm = true;
    const RunOutcome out = run_recipe(q, {&rec});
    REQUIRE(out.exit_code == kOk);
    CHECK(script->last_options.overlap_p2p_comm);
    CHECK(rec.calls.front() ==
          "message recipebench run: bench.overlap_p2p_comm: true has no effect on TP1 PP1 EP1 DP1 (PP 1: nothing is "
          "sent between pipeline stages)");
    CHECK(notes() == 1);
    CHECK(out.record->to_json()["settings"]["overlap_p2p_comm"] == true);
    CHECK(RunRecord::from_json(out.record->to_json(), "r.json").options.overlap_p2p_comm);
  }
  SECTION("from the recipe's bench block with PP 2: it applies, nothing said") {
    q.recipe_path = pp2;
    const RunOutcome out = run_recipe(q, {&rec});
    REQUIRE(out.exit_code == kOk);
    CHECK(rec.calls.front() == "start fake");
    CHECK(notes() == 0);
    CHECK(script->last_options.overlap_p2p_comm);
    CHECK(out.record->to_json()["settings"]["overlap_p2p_comm"] == true);
  }
  SECTION("from the recipe, turned off on the command line: false") {
    q.recipe_path = pp2;
    q.overlap_p2p_comm = false;
    const RunOutcome out = run_recipe(q, {&rec});
    REQUIRE(out.exit_code == kOk);
    CHECK_FALSE(script->last_options.overlap_p2p_comm);
    CHECK(out.record->to_json()["settings"]["overlap_p2p_comm"] == false);
  }
  SECTION("from the recipe with --profile on PP 2: refused (usage), located at the field, nothing run") {
    q.recipe_path = pp2;
    q.profile = true;
    CHECK(run_recipe(q, {&rec}).exit_code == kUsage);
    CHECK(rec.calls == std::vector<std::string>{
                           "message " + pp2 +
                               ":44:21: error: bench.overlap_p2p_comm: true, expected false or absent with --profile "
                               "on PP 2 (it synchronises the device after every pass, which would wait for the "
                               "receives posted ahead)",
                           "message recipebench run: --profile synchronises the device after every pass; nothing "
                           "was run"});
    CHECK(script->runs == 0);
  }
  SECTION("--profile with PP 1: runs, the switch said to have no effect") {
    q.overlap_p2p_comm = true;
    q.profile = true;
    const RunOutcome out = run_recipe(q, {&rec});
    REQUIRE(out.exit_code == kOk);
    CHECK(notes() == 1);
  }
  SECTION("a per-node backend: refused, located at the recipe's field, or at the command line") {
    BackendCapabilities caps;
    caps.launch = Launch::kPerNode;
    register_backend("fake-node", caps, [script] { return std::make_unique<FakeBackend>(script); });
    q.backend = "fake-node";
    const std::string why =
        "expected false or absent (the fake-node backend runs the recipe's own command: its pipeline is the "
        "command's)";
    const std::string nothing =
        "message recipebench run: the fake-node backend would ignore the settings above (its command's own); "
        "nothing was run";
    SECTION("from the recipe") {
      q.recipe_path = pp2;
      CHECK(run_recipe(q, {&rec}).exit_code == kFailed);
      CHECK(rec.calls == std::vector<std::string>{
                             "message " + pp2 + ":44:21: error: bench.overlap_p2p_comm: true, " + why, nothing});
    }
    SECTION("from the command line") {
      q.overlap_p2p_comm = true;
      CHECK(run_recipe(q, {&rec}).exit_code == kFailed);
      CHECK(rec.calls ==
            std::vector<std::string>{"message <command line>: error: --overlap-p2p-comm: true, " + why, nothing});
    }
    CHECK(script->runs == 0);
  }
}

TEST_CASE(
    "run driver: bench.overlap_tp_comm is recorded, said to have no effect with TP 1, the command line wins, and a "
    "backend running the recipe's own command refuses it at the field",
    "[run_driver][overlap_tp]") {
  auto script = register_fake();
  RunRequest q = fake_request("recipebench-driver-overlap-tp");
  const std::string tp2 = test::source_path("tests/data/dist/tiny-tp2-overlap-tp.yaml");
  Recorder rec;
  auto notes = [&] { return calls_naming(rec, "overlap_tp_comm"); };
  SECTION("absent: false, nothing said; a record without the field reads back false") {
    const RunOutcome out = run_recipe(q, {&rec});
    REQUIRE(out.exit_code == kOk);
    CHECK(rec.calls.front() == "start fake");
    CHECK_FALSE(script->last_options.overlap_tp_comm);
    CHECK(out.record->to_json()["settings"]["overlap_tp_comm"] == false);
    Json old = out.record->to_json();
    old["settings"].erase("overlap_tp_comm");
    CHECK_FALSE(RunRecord::from_json(old, "old.json").options.overlap_tp_comm);
  }
  SECTION("--overlap-tp-comm true with TP 1: the backend gets it, no effect said once, recorded, read back") {
    q.overlap_tp_comm = true;
    const RunOutcome out = run_recipe(q, {&rec});
    REQUIRE(out.exit_code == kOk);
    CHECK(script->last_options.overlap_tp_comm);
    CHECK(rec.calls.front() ==
          "message recipebench run: bench.overlap_tp_comm: true has no effect on TP1 PP1 EP1 DP1 (TP 1: nothing is "
          "reduce-scattered over tensor parallelism)");
    CHECK(notes() == 1);
    CHECK(out.record->to_json()["settings"]["overlap_tp_comm"] == true);
    CHECK(RunRecord::from_json(out.record->to_json(), "r.json").options.overlap_tp_comm);
  }
  SECTION("from the recipe's bench block with TP 2: it applies, nothing said") {
    q.recipe_path = tp2;
    const RunOutcome out = run_recipe(q, {&rec});
    REQUIRE(out.exit_code == kOk);
    CHECK(rec.calls.front() == "start fake");
    CHECK(notes() == 0);
    CHECK(script->last_options.overlap_tp_comm);
    CHECK(out.record->to_json()["settings"]["overlap_tp_comm"] == true);
  }
  SECTION("from the recipe, turned off on the command line: false") {
    q.recipe_path = tp2;
    q.overlap_tp_comm = false;
    const RunOutcome out = run_recipe(q, {&rec});
    REQUIRE(out.exit_code == kOk);
    CHECK_FALSE(script->last_options.overlap_tp_comm);
    CHECK(out.record->to_json()["settings"]["overlap_tp_comm"] == false);
  }
  SECTION("a per-node backend: refused, located at the recipe's field, or at the command line") {
    BackendCapabilities caps;
    caps.launch = Launch::kPerNode;
    register_backend("fake-node", caps, [script] { return std::make_unique<FakeBackend>(script); });
    q.backend = "fake-node";
    const std::string why =
        "expected false or absent (the fake-node backend runs the recipe's own command: its tensor parallelism is "
        "the command's)";
    const std::string nothing =
        "message recipebench run: the fake-node backend would ignore the settings above (its command's own); "
        "nothing was run";
    SECTION("from the recipe") {
      q.recipe_path = tp2;
      CHECK(run_recipe(q, {&rec}).exit_code == kFailed);
      CHECK(rec.calls == std::vector<std::string>{
                             "message " + tp2 + ":43:20: error: bench.overlap_tp_comm: true, " + why, nothing});
    }
    SECTION("from the command line") {
      q.overlap_tp_comm = true;
      CHECK(run_recipe(q, {&rec}).exit_code == kFailed);
      CHECK(rec.calls ==
            std::vector<std::string>{"message <command line>: error: --overlap-tp-comm: true, " + why, nothing});
    }
    CHECK(script->runs == 0);
  }
}

TEST_CASE(
    "run driver: bench.overlap_param_gather is recorded, said to have no effect with DP 1 and EDP 1, the command "
    "line wins, and a backend running the recipe's own command refuses it at the field",
    "[run_driver][overlap_param_gather]") {
  auto script = register_fake();
  RunRequest q = fake_request("recipebench-driver-overlap-gather");
  const std::string dp2 = test::source_path("tests/data/dist/tiny-pp2-vpp2-dp2-overlap-gather.yaml");
  Recorder rec;
  auto notes = [&] { return calls_naming(rec, "overlap_param_gather"); };
  SECTION("absent: false, nothing said; a record without the field reads back false") {
    const RunOutcome out = run_recipe(q, {&rec});
    REQUIRE(out.exit_code == kOk);
    CHECK(rec.calls.front() == "start fake");
    CHECK_FALSE(script->last_options.overlap_param_gather);
    const Json s = out.record->to_json()["settings"];
    CHECK(s["overlap_param_gather"] == false);
    CHECK_FALSE(s.contains("overlap_param_gather_applies"));
    Json old = out.record->to_json();
    old["settings"].erase("overlap_param_gather");
    CHECK_FALSE(RunRecord::from_json(old, "old.json").options.overlap_param_gather);
  }
  SECTION("--overlap-param-gather true with DP 1: the backend gets it, no effect said once, recorded, read back") {
    q.overlap_param_gather = true;
    const RunOutcome out = run_recipe(q, {&rec});
    REQUIRE(out.exit_code == kOk);
    CHECK(script->last_options.overlap_param_gather);
    CHECK(script->last_options.overlap_param_gather_applies == false);
    CHECK(rec.calls.front() ==
          "message recipebench run: bench.overlap_param_gather: true has no effect on TP1 PP1 EP1 DP1 (DP 1 and "
          "EDP 1: no parameter is all-gathered)");
    CHECK(notes() == 1);
    const Json s = out.record->to_json()["settings"];
    CHECK(s["overlap_param_gather"] == true);
    CHECK(s["overlap_param_gather_applies"] == false);
    const RunRecord back = RunRecord::from_json(out.record->to_json(), "r.json");
    CHECK(back.options.overlap_param_gather);
    CHECK(back.options.overlap_param_gather_applies == false);
  }
  SECTION("from the recipe's bench block with DP 2: it applies, nothing said, recorded") {
    q.recipe_path = dp2;
    const RunOutcome out = run_recipe(q, {&rec});
    REQUIRE(out.exit_code == kOk);
    CHECK(rec.calls.front() == "start fake");
    CHECK(notes() == 0);
    CHECK(script->last_options.overlap_param_gather);
    CHECK(script->last_options.overlap_param_gather_applies == true);
    const Json s = out.record->to_json()["settings"];
    CHECK(s["overlap_param_gather"] == true);
    CHECK(s["overlap_param_gather_applies"] == true);
  }
  SECTION("from the recipe, turned off on the command line: false") {
    q.recipe_path = dp2;
    q.overlap_param_gather = false;
    const RunOutcome out = run_recipe(q, {&rec});
    REQUIRE(out.exit_code == kOk);
    CHECK_FALSE(script->last_options.overlap_param_gather);
    const Json s = out.record->to_json()["settings"];
    CHECK(s["overlap_param_gather"] == false);
    CHECK_FALSE(s.contains("overlap_param_gather_applies"));
  }
  SECTION("--profile: runs (every rank launches the gathers at the step's start, a synchronisation waits for them)") {
    q.recipe_path = dp2;
    q.profile = true;
    const RunOutcome out = run_recipe(q, {&rec});
    REQUIRE(out.exit_code == kOk);
    CHECK(script->last_options.overlap_param_gather);
  }
  SECTION("a per-node backend: refused, located at the recipe's field, or at the command line") {
    BackendCapabilities caps;
    caps.launch = Launch::kPerNode;
    register_backend("fake-node", caps, [script] { return std::make_unique<FakeBackend>(script); });
    q.backend = "fake-node";
    const std::string why =
        "expected false or absent (the fake-node backend runs the recipe's own command: its optimizer is the "
        "command's)";
    const std::string nothing =
        "message recipebench run: the fake-node backend would ignore the settings above (its command's own); "
        "nothing was run";
    SECTION("from the recipe") {
      q.recipe_path = dp2;  // its gradient-reduction fields are refused too
      CHECK(run_recipe(q, {&rec}).exit_code == kFailed);
      const std::string at = "message " + dp2 + ":48:25: error: bench.overlap_param_gather: true, " + why;
      CHECK(std::count(rec.calls.begin(), rec.calls.end(), at) == 1);
      CHECK(rec.calls.back() == nothing);
    }
    SECTION("from the command line") {
      q.overlap_param_gather = true;
      CHECK(run_recipe(q, {&rec}).exit_code == kFailed);
      CHECK(rec.calls ==
            std::vector<std::string>{"message <command line>: error: --overlap-param-gather: true, " + why, nothing});
    }
    CHECK(script->runs == 0);
  }
}

TEST_CASE("run driver: a backend running the recipe's own command refuses the gradient-reduction settings",
          "[run_driver][overlap]") {
  BackendCapabilities caps;
  caps.launch = Launch::kPerNode;
  auto script = std::make_shared<FakeScript>();
  register_backend("fake-node", caps, [script] { return std::make_unique<FakeBackend>(script); });
  RunRequest q = fake_request("recipebench-driver-overlap-node");
  q.backend = "fake-node";
  q.overlap_grad_reduce = true;
  q.grad_reduce_bucket_elements = 4096;
  Recorder rec;
  CHECK(run_recipe(q, {&rec}).exit_code == kFailed);
  const std::string why =
      " (the fake-node backend runs the recipe's own command: its gradient reduction is the "
      "command's)";
  CHECK(rec.calls == std::vector<std::string>{
                         "message <command line>: error: --overlap-grad-reduce: true, expected false or absent" + why,
                         "message <command line>: error: --grad-reduce-bucket-elements: 4096, expected absent" + why,
                         "message recipebench run: the fake-node backend would ignore the settings above (its "
                         "command's own); nothing was run"});
  CHECK(script->runs == 0);
}

TEST_CASE("run driver: bench.kernels is recorded, and refused by a backend running the recipe's own command",
          "[run_driver][kernels]") {
  auto script = register_fake();
  RunRequest q = fake_request("recipebench-driver-kernels");
  Recorder rec;
  SECTION("absent: fused, in the record and read back") {
    const RunOutcome out = run_recipe(q, {&rec});
    REQUIRE(out.exit_code == kOk);
    CHECK(out.record->to_json()["settings"]["kernels"] == "fused");
    CHECK(RunRecord::from_json(out.record->to_json(), "r.json").options.kernels == Kernels::kFused);
  }
  SECTION("--kernels ops: the backend gets it, the record says it") {
    q.kernels = Kernels::kOps;
    const RunOutcome out = run_recipe(q, {&rec});
    REQUIRE(out.exit_code == kOk);
    CHECK(script->last_options.kernels == Kernels::kOps);
    CHECK(out.record->to_json()["settings"]["kernels"] == "ops");
    CHECK(RunRecord::from_json(out.record->to_json(), "r.json").options.kernels == Kernels::kOps);
    // A record written before the setting existed (no settings.kernels) ran the fused kernels.
    Json old = out.record->to_json();
    old["settings"].erase("kernels");
    CHECK(RunRecord::from_json(old, "old.json").options.kernels == Kernels::kFused);
  }
  SECTION("a per-node backend: refused, located at the command line") {
    BackendCapabilities caps;
    caps.launch = Launch::kPerNode;
    register_backend("fake-node-k", caps, [script] { return std::make_unique<FakeBackend>(script); });
    q.backend = "fake-node-k";
    q.kernels = Kernels::kOps;
    CHECK(run_recipe(q, {&rec}).exit_code == kFailed);
    CHECK(rec.calls == std::vector<std::string>{
                           "message <command line>: error: --kernels: ops, expected absent (the fake-node-k backend "
                           "runs the recipe's own command: its kernels are the command's)",
                           "message recipebench run: the fake-node-k backend would ignore the settings above (its "
                           "command's own); nothing was run"});
  }
}

TEST_CASE("run driver: bench.ep_dispatch is recorded, said to have no effect with EP 1, refused where it cannot hold",
          "[run_driver][ep_dispatch]") {
  auto script = register_fake();
  RunRequest q = fake_request("recipebench-driver-ep-dispatch");
  Recorder rec;
  SECTION("absent: host_splits, nothing said, read back; an older record without it ran host_splits") {
    const RunOutcome out = run_recipe(q, {&rec});
    REQUIRE(out.exit_code == kOk);
    CHECK(rec.calls.front() == "start fake");
    CHECK(script->last_options.ep_dispatch == EpDispatch::kHostSplits);
    CHECK(out.record->to_json()["settings"]["ep_dispatch"] == "host_splits");
    Json old = out.record->to_json();
    old["settings"].erase("ep_dispatch");
    CHECK(RunRecord::from_json(old, "old.json").options.ep_dispatch == EpDispatch::kHostSplits);
  }
  SECTION("--ep-dispatch fixed_capacity on EP 1: the backend gets it, the console says it has no effect, once") {
    q.ep_dispatch = EpDispatch::kFixedCapacity;
    const RunOutcome out = run_recipe(q, {&rec});
    REQUIRE(out.exit_code == kOk);
    CHECK(script->last_options.ep_dispatch == EpDispatch::kFixedCapacity);
    CHECK(rec.calls.front() ==
          "message recipebench run: bench.ep_dispatch: fixed_capacity has no effect on TP1 PP1 EP1 DP1 (EP 1: every "
          "expert is local, no row is dispatched)");
    CHECK(calls_naming(rec, "ep_dispatch") == 1);
    CHECK(out.record->to_json()["settings"]["ep_dispatch"] == "fixed_capacity");
    CHECK(RunRecord::from_json(out.record->to_json(), "r.json").options.ep_dispatch == EpDispatch::kFixedCapacity);
  }
  SECTION("EP 2: it applies, nothing said") {
    q.recipe_path = test::source_path("tests/data/dist/tiny-ep2-dp2.yaml");
    q.ep_dispatch = EpDispatch::kFixedCapacity;
    const RunOutcome out = run_recipe(q, {&rec});
    REQUIRE(out.exit_code == kOk);
    CHECK(rec.calls.front() == "start fake");
    CHECK(out.record->to_json()["settings"]["ep_dispatch"] == "fixed_capacity");
  }
  SECTION("a per-node backend: refused, located at the command line") {
    BackendCapabilities caps;
    caps.launch = Launch::kPerNode;
    register_backend("fake-node-ep", caps, [script] { return std::make_unique<FakeBackend>(script); });
    q.backend = "fake-node-ep";
    q.ep_dispatch = EpDispatch::kHostSplits;
    CHECK(run_recipe(q, {&rec}).exit_code == kFailed);
    CHECK(rec.calls == std::vector<std::string>{
                           "message <command line>: error: --ep-dispatch: host_splits, expected absent (the "
                           "fake-node-ep backend runs the recipe's own command: its expert dispatch is the command's)",
                           "message recipebench run: the fake-node-ep backend would ignore the settings above (its "
                           "command's own); nothing was run"});
    CHECK(script->runs == 0);
  }
}

TEST_CASE("run driver: bench.fail_on_sync with EP > 1 and the host_splits dispatcher on CUDA is refused, located",
          "[run_driver][ep_dispatch][fail_on_sync]") {
  auto script = std::make_shared<FakeScript>();
  BackendCapabilities caps = fake_capabilities();
  caps.devices = {Device::kCpu, Device::kCuda};
  register_backend("fake-cuda", caps, [script] { return std::make_unique<FakeBackend>(script); });
  RunRequest q = fake_request("recipebench-driver-ep-dispatch-sync");
  q.backend = "fake-cuda";
  q.recipe_path = test::source_path("tests/data/fail-on-sync/tiny-ep2-fail-on-sync.yaml");
  q.device = Device::kCuda;
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
    q.fail_on_sync = true;
    CHECK(run_recipe(q, {&rec}).exit_code == kUsage);
    REQUIRE_FALSE(rec.calls.empty());
    CHECK(rec.calls.front().rfind("message <command line>: error: --fail-on-sync: true, expected false or absent with "
                                  "bench.ep_dispatch host_splits on EP 2",
                                  0) == 0);
  }
  SECTION("with --ep-dispatch fixed_capacity: not refused") {
    q.ep_dispatch = EpDispatch::kFixedCapacity;
    CHECK(run_recipe(q, {&rec}).exit_code == kOk);
    CHECK(rec.calls == std::vector<std::string>{"dry_run"});
  }
  SECTION("on the CPU: not refused (nothing to check)") {
    q.device = Device::kCpu;
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
  q.backend = "fake-planned";
  Recorder rec;
  REQUIRE(run_recipe(q, {&rec}).exit_code == kOk);
  REQUIRE(rec.calls.size() == 9);  // start, the plan, steps 0..5, finish
  CHECK(rec.calls[0] == "start fake-planned");
  CHECK(rec.calls[1].rfind("message memory plan per GPU (GB; torch backend; docs/memory-plan.md):", 0) == 0);
  CHECK(rec.calls[1].find("fits") != std::string::npos);  // the plan's verdict line
  CHECK(rec.calls[2] == "step 0 on 2");
}

TEST_CASE(
    "run driver: bench.fail_on_sync is recorded, said to have nothing to check on the CPU, and refused where "
    "it cannot hold",
    "[run_driver][fail_on_sync]") {
  auto script = register_fake();
  RunRequest q = fake_request("recipebench-driver-fail-on-sync");
  Recorder rec;
  SECTION("absent: false, nothing said, read back") {
    const RunOutcome out = run_recipe(q, {&rec});
    REQUIRE(out.exit_code == kOk);
    CHECK(rec.calls.front() == "start fake");
    CHECK_FALSE(script->last_options.fail_on_sync);
    CHECK(out.record->to_json()["settings"]["fail_on_sync"] == false);
    // A record written before the setting existed (no settings.fail_on_sync) ran without the check.
    Json old = out.record->to_json();
    old["settings"].erase("fail_on_sync");
    CHECK_FALSE(RunRecord::from_json(old, "old.json").options.fail_on_sync);
  }
  SECTION("--fail-on-sync on the CPU: the backend gets it, the console says there is nothing to check, once") {
    q.fail_on_sync = true;
    const RunOutcome out = run_recipe(q, {&rec});
    REQUIRE(out.exit_code == kOk);
    CHECK(script->last_options.fail_on_sync);
    CHECK(rec.calls.front() ==
          "message recipebench run: bench.fail_on_sync: no CUDA device, nothing to check (device cpu: the step never "
          "waits for a GPU)");
    CHECK(calls_naming(rec, "fail_on_sync") == 1);
    CHECK(out.record->to_json()["settings"]["fail_on_sync"] == true);
    CHECK(RunRecord::from_json(out.record->to_json(), "r.json").options.fail_on_sync);
  }
  SECTION("from the recipe, turned off on the command line: false, nothing said") {
    q.recipe_path = test::source_path("tests/data/fail-on-sync/tiny-fail-on-sync.yaml");
    q.fail_on_sync = false;
    const RunOutcome out = run_recipe(q, {&rec});
    REQUIRE(out.exit_code == kOk);
    CHECK(rec.calls.front() == "start fake");
    CHECK(out.record->to_json()["settings"]["fail_on_sync"] == false);
  }
  SECTION("from the recipe with --profile: refused (usage), located at the field, nothing run") {
    q.recipe_path = test::source_path("tests/data/fail-on-sync/tiny-fail-on-sync.yaml");
    q.profile = true;
    CHECK(run_recipe(q, {&rec}).exit_code == kUsage);
    CHECK(rec.calls == std::vector<std::string>{
                           "message " + q.recipe_path +
                               ":46:17: error: bench.fail_on_sync: true, expected false or absent with --profile (it "
                               "synchronises the device between the phases and components it times)",
                           "message recipebench run: --profile synchronises the device by design; nothing was run"});
    CHECK(script->runs == 0);
  }
  SECTION("a per-node backend: refused, located at the command line") {
    BackendCapabilities caps;
    caps.launch = Launch::kPerNode;
    register_backend("fake-node", caps, [script] { return std::make_unique<FakeBackend>(script); });
    q.backend = "fake-node";
    q.fail_on_sync = true;
    CHECK(run_recipe(q, {&rec}).exit_code == kFailed);
    CHECK(rec.calls == std::vector<std::string>{
                           "message <command line>: error: --fail-on-sync: true, expected false or absent (the "
                           "fake-node backend runs the recipe's own command: its synchronisation is the command's)",
                           "message recipebench run: the fake-node backend would ignore the settings above (its "
                           "command's own); nothing was run"});
    CHECK(script->runs == 0);
  }
}
