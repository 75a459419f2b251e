// A run that cannot start or fit is refused before the model is built (issue 32, kind 5): the device follows the
// recipe's gpu.type when bench.device is absent, CUDA devices and CPU memory are held against the run before the
// backend is made (run/run_driver.cpp, util/host.h), advice is given only where it works on the host, and a run
// refused before step 0 leaves no run record. The host is given to the driver (RunRequest::host), never read here.
#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backends/torch/torch_backend_registration.h"
#include "fake_backend.h"
#include "recipe/validate.h"
#include "run/run_driver.h"
#include "test_util.h"
#include "util/exit_code.h"

using namespace recipebench;
using namespace recipebench::test;
namespace fs = std::filesystem;

namespace {

/// Every reporter call, with the dry run's text and the messages in full.
struct Calls : RunReporter {
  std::vector<std::string> messages;
  std::string dry_run_text;
  int starts = 0;
  void message(const std::string& line) override { messages.push_back(line); }
  void dry_run(const std::string& text) override { dry_run_text = text; }
  void start(const RunRecord&) override { ++starts; }
  void step(const StepSample&, const RunRecord&, int) override {}
  void finish(const RunRecord&, const std::string&, bool) override {}
};

/// The torch backend's declared table (CPU and CUDA, the memory plan) on a fake backend that counts its runs.
std::shared_ptr<FakeScript> register_fake_torch() {
  auto script = std::make_shared<FakeScript>();
  register_backend("fake-torch", torch_backend_capabilities(),
                   [script] { return std::make_unique<FakeBackend>(script); });
  return script;
}

/// A request for `recipe` (relative to the source tree) on the fake torch backend, on a host with `cuda` CUDA
/// devices and `available` bytes of memory; records under a fresh folder.
RunRequest request(const std::string& recipe, int cuda, double available, const std::string& folder) {
  RunRequest q;
  q.recipe_path = source_path(recipe);
  q.overrides.backend = "fake-torch";
  q.overrides.steps = 3;
  q.overrides.window = StepWindow{1, 2};
  q.host = HostDevices{cuda, static_cast<uint64_t>(available)};
  q.out_dir = (fs::temp_directory_path() / folder).string();
  fs::remove_all(q.out_dir);
  return q;
}

const std::string kAttune = "tests/data/cases/gpu-recipe-defaults-to-cpu/attune-tp2-pp8-ep8-vpp2-mt16k.yaml";
const std::string kProxy = "tests/data/cases/cpu-run-exceeds-host-memory/proxy4l-1gpu-bf16.yaml";

/// The memory plan's lines of a text (from "memory plan per GPU" to its fit line).
std::string plan_part(const std::string& text) {
  const size_t from = text.find("memory plan per GPU");
  if (from == std::string::npos) return "";
  const size_t fit = text.find("  peak at: ", from);
  return text.substr(from, text.find('\n', fit) - from);
}

}  // namespace

TEST_CASE("recipe_device: bench.device, else the CPU for gpu.type CPU and CUDA for a GPU", "[run_refusals]") {
  const ValidatedRecipe attune = validate_recipe_file(source_path(kAttune));
  REQUIRE(attune.ok());
  Recipe r = *attune.recipe;
  CHECK_FALSE(r.bench.device);
  for (const char* gpu : {"B200", "H200", "H100"}) {
    r.gpu.type = gpu;
    CHECK(recipe_device(r) == Device::kCuda);
  }
  r.gpu.type = "CPU";
  CHECK(recipe_device(r) == Device::kCpu);
  r.bench.device = Device::kCuda;
  CHECK(recipe_device(r) == Device::kCuda);
  r.gpu.type = "H200";
  r.bench.device = Device::kCpu;
  CHECK(recipe_device(r) == Device::kCpu);
}

TEST_CASE(
    "gpu-recipe-defaults-to-cpu (2026-12-02): a 64 x B200 recipe without bench runs on CUDA, refused at once "
    "on a host without CUDA, no record, the dry run's plan the run's",
    "[run_refusals][cases]") {
  auto script = register_fake_torch();
  const std::string refused =
      "recipebench run: the run needs 64 B200 GPUs (CUDA, from gpu.type B200); this host has no CUDA device "
      "(recipebench run --dry-run shows its rank map and memory plan); nothing was run";
  SECTION("run, and run --nproc 64: one line, exit 1, no advice to start CPU ranks, no record") {
    RunRequest q = request(kAttune, 0, 21.3e9, "recipebench-case-gpu-default");
    const bool nproc = GENERATE(false, true);
    if (nproc) q.nproc = 64;
    Calls calls;
    const RunOutcome out = run_recipe(q, {&calls});
    CHECK(out.exit_code == kFailed);
    CHECK(calls.messages == std::vector<std::string>{refused});
    CHECK(calls.starts == 0);
    CHECK_FALSE(out.record);
    CHECK_FALSE(fs::exists(q.out_dir));
  }
  SECTION("a host with 8 CUDA devices: named") {
    RunRequest q = request(kAttune, 8, 2e12, "recipebench-case-gpu-default");
    Calls calls;
    CHECK(run_recipe(q, {&calls}).exit_code == kFailed);
    REQUIRE(calls.messages.size() == 1);
    CHECK_THAT(calls.messages[0], Catch::Contains("this host has 8 CUDA devices ("));
  }
  SECTION("the dry run plans CUDA (BF16) as the run does") {
    RunRequest q = request(kAttune, 0, 21.3e9, "recipebench-case-gpu-default");
    q.dry_run = true;
    Calls calls;
    REQUIRE(run_recipe(q, {&calls}).exit_code == kOk);
    const std::string plan = plan_part(calls.dry_run_text);
    CHECK_THAT(plan, Catch::Contains("parameters                                               11.5"));  // BF16
    CHECK_THAT(plan, Catch::Contains(" 118.1            145.9            115.4\n"));
    CHECK_THAT(plan, Catch::EndsWith("B200 memory 180.0 GB: fits"));
  }
  CHECK(script->runs == 0);
}

TEST_CASE("run and run --dry-run show the same plan for the same recipe", "[run_refusals]") {
  auto script = register_fake_torch();
  for (const bool cpu : {false, true}) {
    INFO((cpu ? "--device cpu" : "gpu.type H200"));
    RunRequest q = request(kProxy, 1, 2e12, "recipebench-same-plan");
    if (cpu) q.overrides.device = Device::kCpu;
    Calls run;
    REQUIRE(run_recipe(q, {&run}).exit_code == kOk);
    std::string printed;
    for (const auto& m : run.messages)
      if (m.rfind("memory plan per GPU", 0) == 0) printed = m;
    q.dry_run = true;
    Calls dry;
    REQUIRE(run_recipe(q, {&dry}).exit_code == kOk);
    CHECK_FALSE(printed.empty());
    CHECK(plan_part(printed) == plan_part(dry.dry_run_text));
    CHECK_THAT(printed, Catch::Contains(cpu ? "107.6" : "H200 memory 141.0 GB"));
  }
  CHECK(script->runs == 2);
}

TEST_CASE(
    "cpu-run-exceeds-host-memory (2026-12-02): the CPU plan is held against the host's memory before "
    "anything is built",
    "[run_refusals][cases]") {
  auto script = register_fake_torch();
  RunRequest q = request(kProxy, 0, 21.3e9, "recipebench-case-cpu-memory");
  q.overrides.device = Device::kCpu;
  Calls calls;
  const RunOutcome out = run_recipe(q, {&calls});
  CHECK(out.exit_code == kFailed);
  CHECK(calls.messages ==
        std::vector<std::string>{"recipebench run: --device cpu: the memory plan's peak is 107.6 GB per rank, more "
                                 "than the 21.3 GB this host has available; nothing was run"});
  CHECK(calls.starts == 0);
  CHECK_FALSE(fs::exists(q.out_dir));
  SECTION("from the recipe's bench.device: named so") {
    q.recipe_path = source_path("tests/data/cases/cpu-run-exceeds-host-memory/proxy4l-1gpu-bf16.yaml");
    q.overrides.device.reset();
    q.recipe_text = test::read_file(q.recipe_path);
    q.recipe_text->replace(q.recipe_text->find("device: cuda"), 12, "device: cpu");
    Calls c;
    CHECK(run_recipe(q, {&c}).exit_code == kFailed);
    REQUIRE(c.messages.size() == 1);
    CHECK_THAT(c.messages[0],
               Catch::StartsWith("recipebench run: bench.device cpu: the memory plan's peak is 107.6 GB"));
  }
  SECTION("a layer count whose plan fits: offered (1, 2, 3 layers plan 42.4, 62.1, 81.9 GB on the CPU)") {
    q.host->available_bytes = static_cast<uint64_t>(70e9);
    Calls c;
    CHECK(run_recipe(q, {&c}).exit_code == kFailed);
    CHECK(c.messages == std::vector<std::string>{"recipebench run: --device cpu: the memory plan's peak is 107.6 GB "
                                                 "per rank, more than the 70.0 GB this host has available; --layers 2 "
                                                 "fits (its plan needs 62.1 GB); nothing was run"});
  }
  SECTION("the dry run holds the CPU plan against this host's memory, not the recipe's H200") {
    q.dry_run = true;
    Calls c;
    REQUIRE(run_recipe(q, {&c}).exit_code == kOk);
    CHECK_THAT(plan_part(c.dry_run_text),
               Catch::Contains("; the CPU: this host's available memory 21.3 GB: does NOT fit; largest term: "));
    CHECK_THAT(c.dry_run_text, !Catch::Contains("H200 memory"));
  }
  SECTION("enough memory: it runs") {
    q.host->available_bytes = static_cast<uint64_t>(200e9);
    CHECK(run_recipe(q, {}).exit_code == kOk);
    CHECK(script->runs == 1);
  }
}

TEST_CASE("advice is given only where it works on this host", "[run_refusals]") {
  auto script = register_fake_torch();
  // tiny-dp2 as a 2 x H200 recipe (no bench.device): CUDA; on a host without CUDA its CPU run fits, so it is offered.
  std::string text = test::read_file(source_path("tests/data/dist/tiny-dp2.yaml"));
  text.replace(text.find("type: CPU"), 9, "type: H200");
  text.replace(text.find("  device: cpu\n"), 14, "");
  RunRequest q = request("tests/data/dist/tiny-dp2.yaml", 0, 64e9, "recipebench-advice");
  q.recipe_text = text;
  Calls calls;
  CHECK(run_recipe(q, {&calls}).exit_code == kFailed);
  REQUIRE(calls.messages.size() == 1);
  CHECK(calls.messages[0] ==
        "recipebench run: the run needs 2 H200 GPUs (CUDA, from gpu.type H200); this host has no CUDA device "
        "(recipebench run --dry-run shows its rank map and memory plan; --device cpu --nproc 2 runs it on this host's "
        "CPU); nothing was run");
  SECTION("a CPU layout of 2 ranks without --nproc: --nproc 2 offered where the ranks fit") {
    RunRequest c = request("tests/data/dist/tiny-dp2.yaml", 0, 64e9, "recipebench-advice");
    Calls m;
    CHECK(run_recipe(c, {&m}).exit_code == kFailed);
    REQUIRE(m.messages.size() == 1);
    CHECK_THAT(m.messages[0], Catch::EndsWith("needs 2 ranks (on the CPU, bench.device cpu): --nproc 2 starts them "
                                              "on this host; nothing was run"));
    c.host->available_bytes = 1000;  // not even two processes' runtime
    Calls none;
    CHECK(run_recipe(c, {&none}).exit_code == kFailed);
    REQUIRE(none.messages.size() == 1);
    CHECK_THAT(none.messages[0], Catch::Contains("they do not fit this host (2 ranks need at least 2 x 256 MiB"));
    CHECK_THAT(none.messages[0], !Catch::Contains("--nproc 2 starts"));
  }
  CHECK(script->runs == 0);
}

namespace {

/// A backend that refuses every run in environment(), before anything is built.
class RefusingBackend : public FakeBackend {
 public:
  using FakeBackend::FakeBackend;
  BackendEnvironment environment(const ResolvedRun&) override {
    throw RunError("the layout needs something this backend does not have");
  }
};

}  // namespace

TEST_CASE("a run refused by its backend before step 0 leaves no run record", "[run_refusals]") {
  auto script = std::make_shared<FakeScript>();
  register_backend("fake-refusing", fake_capabilities(),
                   [script] { return std::make_unique<RefusingBackend>(script); });
  RunRequest q = fake_request("recipebench-refused-before-start");
  q.overrides.backend = "fake-refusing";
  Calls calls;
  const RunOutcome out = run_recipe(q, {&calls});
  CHECK(out.exit_code == kFailed);
  CHECK_FALSE(out.record);
  CHECK(out.record_path.empty());
  CHECK(calls.messages.back() ==
        "recipebench run: the layout needs something this backend does not have; nothing was run (no run record "
        "written)");
  CHECK((!fs::exists(q.out_dir) || fs::is_empty(q.out_dir)));
  CHECK(script->runs == 0);
}

namespace {

/// A backend whose model build fails as libtorch's CPU allocator does: its message and a C++ stack trace.
class AllocFailingBackend : public FakeBackend {
 public:
  using FakeBackend::FakeBackend;
  void run(const ResolvedRun&, const std::function<void(const StepSample&)>&) override {
    throw RunError(
        "[enforce fail at alloc_cpu.cpp:75] data. DefaultCPUAllocator: can't allocate memory: you tried to allocate "
        "4294967296 bytes. Error code 12 (Cannot allocate memory)\nException raised from alloc_cpu at "
        "../c10/core/impl/alloc_cpu.cpp:75 (most recent call first):\nframe #0: c10::ThrowEnforceNotMet(char const*, "
        "int, char const*, std::string const&, void const*) + 0x48 (0x7f in libc10.so)\nframe #1: "
        "c10::alloc_cpu(unsigned "
        "long) + 0x2cc (0x7f in libc10.so)\n");
  }
};

}  // namespace

TEST_CASE("an allocation failure is reported in one line, without the library's stack trace", "[run_refusals]") {
  auto script = std::make_shared<FakeScript>();
  register_backend("fake-alloc", fake_capabilities(),
                   [script] { return std::make_unique<AllocFailingBackend>(script); });
  RunRequest q = fake_request("recipebench-alloc-failure");
  q.overrides.backend = "fake-alloc";
  const RunOutcome out = run_recipe(q, {});
  CHECK(out.exit_code == kFailed);
  REQUIRE(out.record);  // the run started: a failed record, its message one line
  REQUIRE(out.record->error);
  CHECK(out.record->error->message ==
        "[enforce fail at alloc_cpu.cpp:75] data. DefaultCPUAllocator: can't allocate memory: you tried to allocate "
        "4294967296 bytes. Error code 12 (Cannot allocate memory)");
  fs::remove_all(q.out_dir);
}
