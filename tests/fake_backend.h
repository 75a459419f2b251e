// A fake backend for the run driver's tests (harness/run/run_driver.h): its script, its registration, and a
// reporter that records every call as one line.
#pragma once

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backends/torch/torch_backend_registration.h"
#include "console/reporter.h"
#include "run/run_driver.h"
#include "test_util.h"

namespace recipebench::test {

/// What the fake backend does: step s takes 0.6 s when odd, 0.5 s when even, 1000 tokens, 0.01 s overhead; it
/// reports `devices` devices and throws RunError("loss is NaN", fail_at) at step fail_at (>= 0).
struct FakeScript {
  int devices = 2;
  int fail_at = -1;
  int runs = 0;             ///< how often run() was called
  RunOptions last_options;  ///< what the last run() was given
  int last_map_world = 0;   ///< the world of the rank map the last run() was handed (0: none)
};

class FakeBackend : public Backend {
 public:
  explicit FakeBackend(std::shared_ptr<FakeScript> s) : s_(std::move(s)) {}
  std::string name() const override { return "fake"; }
  BackendEnvironment environment(const ResolvedRun&) override {
    BackendEnvironment env;
    env.device_name = "fake device";
    env.device_count = s_->devices;
    return env;
  }
  void run(const ResolvedRun& run, const std::function<void(const StepSample&)>& on_step) override {
    const RunOptions& o = run.options;
    ++s_->runs;
    s_->last_options = o;
    s_->last_map_world = run.map ? run.map->world : 0;
    for (int i = 0; i < o.settings.steps; ++i) {
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
inline BackendCapabilities fake_capabilities() {
  BackendCapabilities c = torch_backend_capabilities();
  c.devices = {Device::kCpu};
  c.memory_plan = false;  // the tests below list every reporter call; the plan's own test turns it on
  return c;
}

/// Registers the fake backend (afresh) and returns its script.
inline std::shared_ptr<FakeScript> register_fake() {
  auto script = std::make_shared<FakeScript>();
  register_backend("fake", fake_capabilities(), [script] { return std::make_unique<FakeBackend>(script); });
  return script;
}

/// Records every reporter call as one line.
struct Recorder : RunReporter {
  std::vector<std::string> calls;
  void message(const std::string& line) override { calls.push_back("message " + line); }
  void dry_run(const std::string&) override { calls.push_back("dry_run"); }
  void start(const RunRecord& r) override { calls.push_back("start " + r.options.settings.backend); }
  void step(const StepSample& s, const RunRecord&, int devices) override {
    calls.push_back("step " + std::to_string(s.step) + " on " + std::to_string(devices));
  }
  void finish(const RunRecord& r, const std::string&, bool shown) override {
    calls.push_back("finish " + to_string(r.status) + (shown ? " shown" : ""));
  }
};

/// How many of the recorded calls name `setting` (e.g. the console's note about it).
inline long calls_naming(const Recorder& rec, const std::string& setting) {
  return std::count_if(rec.calls.begin(), rec.calls.end(),
                       [&](const std::string& c) { return c.find(setting) != std::string::npos; });
}

/// The tiny CPU example recipe on the fake backend: 6 steps, window 1..4, records under a fresh folder, on a host
/// with CUDA devices (RunRequest::host: the host checks of run/run_driver.cpp pass whatever this machine has).
inline RunRequest fake_request(const std::string& folder) {
  RunRequest q;
  q.recipe_path = source_path("recipes/examples/qwen3.5-tiny-cpu.yaml");
  q.overrides.backend = "fake";
  q.overrides.steps = 6;
  q.overrides.window = StepWindow{1, 4};
  q.out_dir = (std::filesystem::temp_directory_path() / folder).string();
  q.host = HostDevices{8, 0};  // 8 CUDA devices, memory not checked: the fake backend builds nothing on either
  std::filesystem::remove_all(q.out_dir);
  return q;
}

}  // namespace recipebench::test
