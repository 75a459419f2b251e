// The run switches (harness/settings/switches.h), one generated test over the table: every backend switch absent, on
// from the command line (with its "no effect" note on the tiny one-rank layout where it has none), on from the
// recipe where it has an effect (nothing said), turned off on the command line, recorded and read back, and
// refused at its field by a backend that runs the recipe's own command. The figures each switch must give (its
// note, its layout, its refusal) are this file's table: a row of the switch table without one here fails.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "fake_backend.h"
#include "settings/switches.h"
#include "test_util.h"
#include "util/exit_code.h"

using namespace recipebench;
using namespace recipebench::test;
namespace fs = std::filesystem;

namespace {

/// What one switch must do, as known figures.
struct Expected {
  std::string engaged;            ///< its command-line value that engages it
  Json recorded;                  ///< that value in the record's settings
  std::string note_on_one_rank;   ///< the console's note on the tiny TP1 PP1 EP1 DP1 CPU recipe; "" when none
  std::string effective_recipe;   ///< a recipe (source path) where the engaged switch has an effect
  std::vector<std::string> with;  ///< bench lines that recipe needs beside the switch
  bool on_cuda = false;           ///< the effective case runs with --device cuda
  std::string owned;              ///< the per-node refusal's "its <owned> the command's"
};

const std::string kTiny = "recipes/examples/qwen3.5-tiny-cpu.yaml";
const std::string kNoEffect = "has no effect on TP1 PP1 EP1 DP1 ";

std::map<std::string, Expected> expected_switches() {
  const std::string dp2 = "tests/data/dist/tiny-dp2.yaml";
  return {
      {"deterministic", {"false", false, "", kTiny, {}, false, "determinism is"}},
      {"kernels", {"ops", "ops", "", kTiny, {}, false, "kernels are"}},
      {"fail_on_sync",
       {"true",
        true,
        "recipebench run: bench.fail_on_sync: no CUDA device, nothing to check (device cpu: the step never waits for "
        "a GPU)",
        kTiny,
        {},
        true,
        "synchronisation is"}},
      {"overlap_grad_reduce",
       {"true",
        true,
        "recipebench run: bench.overlap_grad_reduce: true " + kNoEffect +
            "(DP 1 and EDP 1: no gradient is reduce-scattered)",
        dp2,
        {},
        false,
        "gradient reduction is"}},
      {"grad_reduce_bucket_elements",
       {"4096",
        4096,
        "recipebench run: bench.grad_reduce_bucket_elements: 4096 has no effect without bench.overlap_grad_reduce: "
        "true",
        dp2,
        {"overlap_grad_reduce: true"},
        false,
        "gradient reduction is"}},
      {"overlap_param_gather",
       {"true",
        true,
        "recipebench run: bench.overlap_param_gather: true " + kNoEffect +
            "(DP 1 and EDP 1: no parameter is all-gathered)",
        dp2,
        {},
        false,
        "optimizer is"}},
      {"overlap_p2p_comm",
       {"true",
        true,
        "recipebench run: bench.overlap_p2p_comm: true " + kNoEffect +
            "(PP 1: nothing is sent between pipeline stages)",
        "tests/data/dist/tiny-pp2.yaml",
        {},
        false,
        "pipeline is"}},
      {"overlap_tp_comm",
       {"true",
        true,
        "recipebench run: bench.overlap_tp_comm: true " + kNoEffect +
            "(TP 1: nothing is reduce-scattered over tensor parallelism)",
        "tests/data/dist/tiny-tp2.yaml",
        {},
        false,
        "tensor parallelism is"}},
      {"ep_dispatch",
       {"fixed_capacity",
        "fixed_capacity",
        "recipebench run: bench.ep_dispatch: fixed_capacity " + kNoEffect +
            "(EP 1: every expert is local, no row is dispatched)",
        "tests/data/dist/tiny-ep2-dp2.yaml",
        {},
        false,
        "expert dispatch is"}},
  };
}

/// `text` with `lines` added at the top of its bench block; the first added line is line `*first_line`.
std::string with_bench_lines(const std::string& text, const std::vector<std::string>& lines, int* first_line) {
  const size_t at = text.find("\nbench:\n");
  REQUIRE(at != std::string::npos);
  *first_line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at) + 1, '\n')) + 1;
  std::string added;
  for (const auto& l : lines) added += "  " + l + "\n";
  return text.substr(0, at + 8) + added + text.substr(at + 8);
}

/// A request for recipe `rel` with `lines` added to its bench block (label "<rel>+"), on backend `backend`; its
/// records go to a folder of this process's own (CTest runs the test cases in parallel processes).
RunRequest request_with(const std::string& rel, const std::vector<std::string>& lines, const std::string& backend,
                        int* first_line) {
  RunRequest q = fake_request("recipebench-switches-" + std::to_string(::getpid()));
  q.recipe_path = rel + "+";
  q.recipe_text = with_bench_lines(read_file(source_path(rel)), lines, first_line);
  q.overrides.backend = backend;
  return q;
}

/// The switch's value as the fake backend got it, as text.
std::string got(const RunSwitch& s, const FakeScript& script) {
  return switch_value_text(s, script.last_options.settings);
}

/// Sets the command line's overlay of `s` from its text, as the CLI does.
void set_on_command_line(const RunSwitch& s, const std::string& text, RecipeBench& overlay) {
  set_switch_text(s, text, overlay);
}

/// A registered fake backend that runs on the CPU and CUDA (the fail_on_sync case), and a per-node one.
std::shared_ptr<FakeScript> register_fakes() {
  auto script = std::make_shared<FakeScript>();
  BackendCapabilities caps = fake_capabilities();
  caps.devices = {Device::kCpu, Device::kCuda};
  register_backend("fake-switch", caps, [script] { return std::make_unique<FakeBackend>(script); });
  BackendCapabilities node;
  node.launch = Launch::kPerNode;
  register_backend("fake-node", node, [script] { return std::make_unique<FakeBackend>(script); });
  return script;
}

}  // namespace

TEST_CASE("switches: the test knows every backend switch of the table, and each row is whole", "[switches]") {
  const auto expected = expected_switches();
  size_t backend_rows = 0;
  for (const RunSwitch& s : run_switches()) {
    INFO(s.field);
    CHECK(std::string(s.option) == "--" + [&] {
      std::string o = s.field;
      std::replace(o.begin(), o.end(), '_', '-');
      return o;
    }());
    CHECK(std::string(s.help).size() > 20);
    if (s.owner != SwitchOwner::kBackend) continue;
    ++backend_rows;
    CHECK(expected.count(s.field) == 1);
    REQUIRE(s.owned != nullptr);
    CHECK(expected.at(s.field).owned == s.owned);
  }
  CHECK(backend_rows == expected.size());
  CHECK(std::string(run_switch("steps").field) == "steps");
  CHECK(run_switch("steps").owner == SwitchOwner::kHarness);
  CHECK_THROWS_AS(run_switch("no_such_switch"), std::out_of_range);
  RecipeBench b;
  CHECK_THROWS_WITH(set_switch_text(run_switch("overlap_tp_comm"), "yes", b),
                    "--overlap-tp-comm: 'yes', expected true or false");
  CHECK_THROWS_WITH(set_switch_text(run_switch("grad_reduce_bucket_elements"), "0", b),
                    "--grad-reduce-bucket-elements: '0', expected an integer in 1..2147483647");
  CHECK_THROWS_WITH(set_switch_text(run_switch("ep_dispatch"), "deepep", b),
                    "--ep-dispatch: 'deepep', expected host_splits or fixed_capacity");
  set_switch_text(run_switch("grad_reduce_bucket_elements"), "4096", b);
  CHECK(b.grad_reduce_bucket_elements == 4096);
}

TEST_CASE("switches: every backend switch off, on, where it has an effect, overridden, recorded, read back",
          "[switches]") {
  auto script = register_fakes();
  for (const auto& [field, e] : expected_switches()) {
    const RunSwitch& s = run_switch(field);
    const std::string off = switch_value_text(s, RunSettings{});
    INFO(field);
    int line = 0;
    {  // absent: the default, nothing said; a record without the field reads back the default
      Recorder rec;
      const RunOutcome out = run_recipe(request_with(kTiny, {}, "fake-switch", &line), {&rec});
      REQUIRE(out.exit_code == kOk);
      CHECK(rec.calls.front() == "start fake-switch");
      CHECK(got(s, *script) == off);
      Json old = out.record->to_json();
      CHECK(switch_value_text(s, RunRecord::from_json(old, "r.json").options.settings) == off);
      old["settings"].erase(field);
      CHECK(switch_value_text(s, RunRecord::from_json(old, "old.json").options.settings) == off);
    }
    {  // on from the command line on one CPU rank: the backend gets it, its note once, recorded, read back
      Recorder rec;
      RunRequest q = request_with(kTiny, {}, "fake-switch", &line);
      set_on_command_line(s, e.engaged, q.overrides);
      const RunOutcome out = run_recipe(q, {&rec});
      REQUIRE(out.exit_code == kOk);
      CHECK(got(s, *script) == e.engaged);
      if (e.note_on_one_rank.empty()) {
        CHECK(rec.calls.front() == "start fake-switch");
      } else {
        CHECK(rec.calls.front() == "message " + e.note_on_one_rank);
      }
      CHECK(calls_naming(rec, "bench." + field) == (e.note_on_one_rank.empty() ? 0 : 1));
      const Json written = out.record->to_json();
      CHECK(written["settings"][field] == e.recorded);
      CHECK(switch_value_text(s, RunRecord::from_json(written, "r.json").options.settings) == e.engaged);
      if (s.applies) CHECK(written["settings"][field + "_applies"] == false);
    }
    std::vector<std::string> lines{field + ": " + e.engaged};
    lines.insert(lines.end(), e.with.begin(), e.with.end());
    {  // on from the recipe where it has an effect: nothing said
      Recorder rec;
      RunRequest q = request_with(e.effective_recipe, lines, "fake-switch", &line);
      if (e.on_cuda) q.overrides.device = Device::kCuda;
      const RunOutcome out = run_recipe(q, {&rec});
      REQUIRE(out.exit_code == kOk);
      CHECK(rec.calls.front() == "start fake-switch");
      CHECK(calls_naming(rec, "bench." + field) == 0);
      CHECK(got(s, *script) == e.engaged);
      if (s.applies) CHECK(out.record->to_json()["settings"][field + "_applies"] == true);
    }
    {  // from the recipe, turned off on the command line: the default
      Recorder rec;
      RunRequest q = request_with(e.effective_recipe, lines, "fake-switch", &line);
      set_on_command_line(s, off, q.overrides);
      if (e.on_cuda) q.overrides.device = Device::kCuda;
      REQUIRE(run_recipe(q, {&rec}).exit_code == kOk);
      CHECK(got(s, *script) == off);
    }
  }
}

TEST_CASE("switches: a backend running the recipe's own command refuses each, located at its field or option",
          "[switches]") {
  auto script = register_fakes();
  const std::string nothing =
      "message recipebench run: the fake-node backend would ignore the settings above (its command's own); nothing "
      "was run";
  for (const auto& [field, e] : expected_switches()) {
    const RunSwitch& s = run_switch(field);
    const std::string off = switch_value_text(s, RunSettings{});
    const bool boolean = std::holds_alternative<SwitchMember<bool>>(s.member);
    const std::string why = std::string(boolean ? off + " or absent" : "absent") +
                            " (the fake-node backend runs the "
                            "recipe's own command: its " +
                            e.owned + " the command's)";
    INFO(field);
    int line = 0;
    const int runs = script->runs;
    {  // from the recipe: at file:line:column of the value
      Recorder rec;
      const RunRequest q = request_with(kTiny, {field + ": " + e.engaged}, "fake-node", &line);
      CHECK(run_recipe(q, {&rec}).exit_code == kFailed);
      const std::string at = q.recipe_path + ":" + std::to_string(line) + ":" + std::to_string(field.size() + 5);
      CHECK(rec.calls ==
            std::vector<std::string>{
                "message " + at + ": error: bench." + field + ": " + e.engaged + ", expected " + why, nothing});
    }
    {  // from the command line: at the option
      Recorder rec;
      RunRequest q = request_with(kTiny, {}, "fake-node", &line);
      set_on_command_line(s, e.engaged, q.overrides);
      CHECK(run_recipe(q, {&rec}).exit_code == kFailed);
      CHECK(rec.calls == std::vector<std::string>{"message <command line>: error: " + std::string(s.option) + ": " +
                                                      e.engaged + ", expected " + why,
                                                  nothing});
    }
    CHECK(script->runs == runs);
    if (boolean) {  // off is not engaged: nothing refused
      Recorder rec;
      RunRequest q = request_with(kTiny, {field + ": " + off}, "fake-node", &line);
      CHECK(run_recipe(q, {&rec}).exit_code == kOk);
      CHECK(calls_naming(rec, "bench." + field) == 0);
      CHECK(script->runs == runs + 1);
    }
  }
}

TEST_CASE("switches: a per-node backend's record lists the harness's switches, not the backend's", "[switches]") {
  RunSettings s;
  s.overlap_tp_comm = true;
  Json per_rank = Json::object(), per_node = Json::object();
  LayoutEffects effects;
  effects.overlap_grad_reduce_applies = false;
  switches_to_json(s, effects, true, per_rank);
  switches_to_json(s, effects, false, per_node);
  CHECK(per_rank.size() == run_switches().size() + 1);  // every row and one <field>_applies
  CHECK(per_rank["overlap_tp_comm"] == true);
  CHECK(per_rank["overlap_grad_reduce_applies"] == false);
  CHECK(per_node == Json{{"steps", 20}});
}

TEST_CASE("switches: the conflicts no run can honour are refused, located, before anything runs",
          "[switches][conflicts]") {
  auto script = register_fakes();
  int line = 0;
  SECTION("bench.fail_on_sync from the recipe with --profile") {
    Recorder rec;
    RunRequest q = request_with(kTiny, {"fail_on_sync: true"}, "fake-switch", &line);
    q.profile = true;
    CHECK(run_recipe(q, {&rec}).exit_code == kUsage);
    CHECK(rec.calls == std::vector<std::string>{
                           "message " + q.recipe_path + ":" + std::to_string(line) +
                               ":17: error: bench.fail_on_sync: true, expected false or absent with --profile (it "
                               "synchronises the device between the phases and components it times)",
                           "message recipebench run: --profile synchronises the device by design; nothing was run"});
  }
  SECTION("bench.overlap_p2p_comm from the recipe with --profile on PP 2") {
    Recorder rec;
    RunRequest q = request_with("tests/data/dist/tiny-pp2.yaml", {"overlap_p2p_comm: true"}, "fake-switch", &line);
    q.profile = true;
    CHECK(run_recipe(q, {&rec}).exit_code == kUsage);
    CHECK(rec.calls == std::vector<std::string>{
                           "message " + q.recipe_path + ":" + std::to_string(line) +
                               ":21: error: bench.overlap_p2p_comm: true, expected false or absent with --profile on "
                               "PP 2 (it synchronises the device after every pass, which would wait for the receives "
                               "posted ahead)",
                           "message recipebench run: --profile synchronises the device after every pass; nothing "
                           "was run"});
  }
  SECTION("--overlap-p2p-comm with --profile on PP 1: no conflict, the switch said to have no effect") {
    Recorder rec;
    RunRequest q = request_with(kTiny, {}, "fake-switch", &line);
    q.overrides.overlap_p2p_comm = true;
    q.profile = true;
    REQUIRE(run_recipe(q, {&rec}).exit_code == kOk);
    CHECK(calls_naming(rec, "overlap_p2p_comm") == 1);
    CHECK(script->runs == 1);  // this section's run only: the refusals above ran nothing
  }
  SECTION(
      "bench.overlap_param_gather from the recipe with --profile on DP 2: no conflict (a synchronisation waits for "
      "the gathers launched at the step's start)") {
    Recorder rec;
    RunRequest q = request_with("tests/data/dist/tiny-dp2.yaml", {"overlap_param_gather: true"}, "fake-switch", &line);
    q.profile = true;
    REQUIRE(run_recipe(q, {&rec}).exit_code == kOk);
    CHECK(script->last_options.settings.overlap_param_gather);
  }
  SECTION("every conflict names a switch of the table") {
    for (const SwitchConflict& c : switch_conflicts()) CHECK_NOTHROW(run_switch(c.field));
    CHECK(switch_conflicts().size() == 3);
  }
}
