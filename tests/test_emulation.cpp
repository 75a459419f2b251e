// An emulated rank (`recipebench run --emulate-rank R`, docs/emulation.md) against the real rank R of a multi-rank
// CPU run (Gloo) of the same recipe, rows and seed: the same parameters (names, shapes), the same groups, and in
// each group the same operations on tensors of the same shapes and bytes, call by call (RECIPEBENCH_DUMP_TRAFFIC);
// its record says emulated, its loss (on a last stage) is finite and falls; the refusals are located; and the
// step-time model's collectives per step (plan/pass_collectives.h) are what the emulated ranks recorded. Torch-free:
// it runs the recipebench binary and reads its records and dumps.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>
#include <string>
#include <vector>

#include "catalog/models.h"
#include "layout/parallel_group.h"
#include "layout/rank_map.h"
#include "plan/memory_plan.h"
#include "plan/pass_collectives.h"
#include "recipe/validate.h"
#include "test_util.h"

namespace fs = std::filesystem;
using nlohmann::json;
using recipebench::test::read_file;

namespace {

struct Result {
  int exit_code = -1;
  std::string output;
  std::vector<json> records;
  fs::path dir;
};

/// `recipebench run tests/data/FIXTURE STEPS EXTRA` in a fresh folder, every rank dumping its traffic to
/// <folder>/traffic.rank<R>.json.
Result run(const std::string& name, const std::string& fixture, const std::string& extra,
           const std::string& steps = "--steps 5 --window 1:4") {
  Result r;
  r.dir = fs::path(RECIPEBENCH_TEST_OUT) / name;
  fs::remove_all(r.dir);
  fs::create_directories(r.dir);
  const std::string cmd = "RECIPEBENCH_DUMP_TRAFFIC='" + (r.dir / "traffic").string() + "' timeout -k 5 240 '" +
                          RECIPEBENCH_BINARY + "' run '" + RECIPEBENCH_SOURCE_DIR + "/tests/data/" + fixture +
                          "' " + steps + " --out '" + (r.dir / "runs").string() + "' " + extra + " > '" +
                          (r.dir / "log").string() + "' 2>&1";
  const int status = std::system(cmd.c_str());
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.output = read_file((r.dir / "log").string());
  if (fs::exists(r.dir / "runs"))
    for (const auto& e : fs::directory_iterator(r.dir / "runs"))
      if (e.path().extension() == ".json") r.records.push_back(json::parse(read_file(e.path().string())));
  return r;
}

json traffic_of(const Result& r, int rank) {
  const fs::path p = r.dir / ("traffic.rank" + std::to_string(rank) + ".json");
  REQUIRE(fs::exists(p));
  return json::parse(read_file(p.string()));
}

/// The group of `dump` serving these kinds with these members, or null (a layout's TP and EP groups may have the
/// same members and still be two groups).
json group_with(const json& dump, const json& kinds, const json& members) {
  for (const json& g : dump["groups"])
    if (g["kinds"] == kinds && g["members"] == members) return g;
  return nullptr;
}

/// Rank `rank` emulated equals rank `rank` of `real`: parameters, groups, and every call's operation, shape and
/// bytes; its record is an emulated one with that rank's traffic per step. Returns the emulated record.
json check_rank(const std::string& name, const std::string& fixture, const std::string& extra, const Result& real,
                int rank) {
  INFO(name << " rank " << rank);
  const Result e = run(name + "-emulated-" + std::to_string(rank), fixture,
                       extra + " --emulate-rank " + std::to_string(rank));
  INFO(e.output);
  REQUIRE(e.exit_code == 0);
  const json want = traffic_of(real, rank), got = traffic_of(e, rank);
  CHECK(got["parameters"] == want["parameters"]);
  REQUIRE(got["groups"].size() == want["groups"].size());
  int64_t calls = 0;
  for (const json& g : want["groups"]) {
    INFO("group " << g["kinds"].dump() << " members " << g["members"].dump());
    const json h = group_with(got, g["kinds"], g["members"]);
    REQUIRE(!h.is_null());
    REQUIRE(h["calls"].size() == g["calls"].size());
    for (size_t i = 0; i < g["calls"].size(); ++i) {
      INFO("call " << i << ": " << g["calls"][i].dump());
      CHECK(h["calls"][i] == g["calls"][i]);
    }
    calls += static_cast<int64_t>(g["calls"].size());
  }
  CHECK(calls > 0);
  REQUIRE(e.records.size() == 1);
  const json& rec = e.records[0];
  CHECK(rec["status"] == "emulated");
  CHECK(rec["metrics"].is_null());
  CHECK(rec["settings"]["emulate_rank"] == rank);
  CHECK(rec["emulation"]["rank"] == rank);
  CHECK(rec["emulation"]["world"] == real.records.at(0)["settings"]["ranks"]);
  CHECK(rec["emulation"]["planned_peak_bytes"].get<double>() > 0);
  CHECK(!rec["emulation"]["traffic_per_step"].empty());
  for (const json& s : rec["steps"]) CHECK(!s["traffic"].empty());
  return rec;
}

/// The losses of an emulated last-stage rank: finite, and (`falls`) the last step's below step 0's.
void check_loss(const Result& e, bool falls) {
  INFO(e.output);
  REQUIRE(e.records.size() == 1);
  const json& steps = e.records[0]["steps"];
  for (const json& s : steps) REQUIRE(s["loss"].is_number());
  for (const json& s : steps) CHECK(std::isfinite(s["loss"].get<double>()));
  if (falls) CHECK(steps.back()["loss"].get<double>() < steps.front()["loss"].get<double>());
}

/// The emulated records of `ranks`, each checked against the real run of `world` ranks (check_rank).
std::vector<json> check_layout(const std::string& name, const std::string& fixture, int world,
                               const std::string& extra, const std::vector<int>& ranks) {
  const Result real = run(name + "-real", fixture, extra + " --nproc " + std::to_string(world));
  INFO(real.output);
  REQUIRE(real.exit_code == 0);
  std::vector<json> records;
  for (const int r : ranks) records.push_back(check_rank(name, fixture, extra, real, r));
  return records;
}

/// Calls and bytes per step of one operation on one kind of group.
struct PerStep {
  double calls = 0, bytes = 0;
};
using TrafficKey = std::pair<std::string, std::string>;  // (group kind, operation as records write it)

/// The group kind a recorded group serves for the step-time model: its first kind that is a layout group (a
/// gradient group counts as its DP or EDP group); "" for the run's group alone.
std::string model_group_of(const json& kinds) {
  for (const json& k : kinds) {
    std::string kind = k.get<std::string>();
    if (kind.rfind("grad_", 0) == 0) kind = kind.substr(5);
    try {
      return recipebench::to_string(recipebench::parse_group_kind(kind));
    } catch (const std::invalid_argument&) {  // "run", "pp_links": not a layout group
    }
  }
  return "";
}

/// An emulated record's traffic per step by (group kind, operation): sends and receives under "pp" whichever group
/// carries them (the pipeline's links); all-reduces and barriers, which the model does not price (the loss, the
/// gradient norm, sequence-parallel norms' gradients), summed into `unpriced` bytes.
std::map<TrafficKey, PerStep> recorded_traffic(const json& record, double& unpriced, double& total) {
  std::map<TrafficKey, PerStep> out;
  for (const json& g : record["emulation"]["traffic_per_step"])
    for (const auto& [op, t] : g["ops"].items()) {
      const double bytes = t["bytes_per_step"].get<double>();
      total += bytes;
      if (op == "all_reduce" || op == "barrier") {
        unpriced += bytes;
        continue;
      }
      const std::string kind = op == "send" || op == "recv" ? "pp" : model_group_of(g["kinds"]);
      PerStep& p = out[{kind, op}];
      p.calls += t["calls_per_step"].get<double>();
      p.bytes += bytes;
    }
  return out;
}

/// The step-time model's collectives per step of `rank` (step_collectives) by (group kind, operation).
std::map<TrafficKey, PerStep> predicted_traffic(const recipebench::Recipe& recipe, const recipebench::RankMap& map,
                                                int rank, recipebench::EpDispatch dispatch) {
  using namespace recipebench;
  const ModelConfig& m = *find_model(recipe.model);
  const int pp = map.ranks.at(static_cast<size_t>(rank)).pp;
  std::map<TrafficKey, PerStep> out;
  for (const CollectiveUse& u :
       step_collectives(recipe, m, map, plan_memory(recipe, m, map), pp, collective_sizes(recipe, dispatch))) {
    PerStep& p = out[{to_string(u.group), collective_row(u.op).record_name}];
    p.calls += u.calls;
    p.bytes += u.calls * u.bytes;
  }
  return out;
}

/// Each emulated record's traffic per step is the model's: every operation it prices on the same kind of group,
/// with the same calls (the distributed optimizer's in buckets: at least one) and the same bytes; what it does not
/// price (all-reduces, barriers) under 1% of the rank's bytes.
void check_predicted_traffic(const std::string& fixture, const std::vector<json>& records,
                             recipebench::EpDispatch dispatch) {
  using namespace recipebench;
  ValidatedRecipe v = validate_recipe_file(test::source_path("tests/data/" + fixture));
  REQUIRE(v.ok());
  const Recipe& recipe = *v.recipe;
  const RankMap map = build_rank_map(recipe, *find_model(recipe.model));
  for (const json& rec : records) {
    const int rank = rec["emulation"]["rank"].get<int>();
    double unpriced = 0, total = 0;
    const auto got = recorded_traffic(rec, unpriced, total);
    const auto want = predicted_traffic(recipe, map, rank, dispatch);
    for (const auto& [key, w] : want) {
      INFO("rank " << rank << ": " << key.first << " " << key.second << " predicted " << w.calls << " calls, "
                   << w.bytes << " bytes per step");
      REQUIRE(got.count(key) == 1);
      const PerStep& g = got.at(key);
      const bool bucketed = key.first == "dp" || key.first == "edp";
      if (bucketed) CHECK(g.calls >= w.calls);
      else CHECK(g.calls == Approx(w.calls).epsilon(1e-12));
      CHECK(g.bytes == Approx(w.bytes).epsilon(1e-12));
    }
    for (const auto& [key, g] : got) {
      INFO("rank " << rank << ": recorded " << key.first << " " << key.second << " not predicted");
      CHECK(want.count(key) == 1);
    }
    INFO("rank " << rank << ": unpriced " << unpriced << " of " << total << " bytes per step");
    CHECK(unpriced < 0.01 * total);
  }
}

constexpr const char* kFixed = "--ep-dispatch fixed_capacity";

}  // namespace

TEST_CASE("an emulated DP2 rank moves what the real rank moves", "[emulation]") {
  check_layout("dp2", "dist/tiny-dp2.yaml", 2, "", {0, 1});
}

TEST_CASE("an emulated EP2 rank moves what the real rank moves (fixed-capacity dispatch)", "[emulation]") {
  check_layout("ep2", "dist/tiny-ep2-dp2.yaml", 2, kFixed, {0, 1});
}

TEST_CASE("an emulated TP2 rank moves what the real rank moves", "[emulation]") {
  check_layout("tp2", "dist/tiny-tp2.yaml", 2, kFixed, {0, 1});  // TP2 with EP2 (ETP 1)
}

TEST_CASE("an emulated PP2 VPP2 rank moves what the real rank moves", "[emulation]") {
  check_layout("pp2-vpp2", "dist/tiny-pp2-vpp2.yaml", 2, "", {0, 1});
}

TEST_CASE("an emulated TP2 PP2 EP2 DP2 rank moves what the real rank moves and what the step-time model prices",
          "[emulation]") {
  const char* fixture = "dist/tiny-tp2-pp2-ep2-dp2.yaml";
  const std::vector<json> records = check_layout("tp2-pp2-ep2-dp2", fixture, 8, kFixed, {0, 3, 5, 6});
  // Ranks 0 and 3 hold the first stage (the embedding), 5 and 6 the last (the output layer): TP's gathers and
  // scatters, EP's counts, dispatch and combine, the pipeline's sends and receives, DP's and EDP's reduce-scatters and
  // all-gathers, each as the model counts them.
  check_predicted_traffic(fixture, records, recipebench::EpDispatch::kFixedCapacity);
}

TEST_CASE("an emulated rank's loss: finite on a last stage, falling where its inputs are its own, else none",
          "[emulation]") {
  // PP 1: the rank embeds its own rows, so its loss falls. PP > 1: the last stage's inputs are the stand-in's fixed
  // receive values, which carry nothing of the rows: finite, no training signal (docs/emulation.md, "The loss").
  const std::string eight = "--steps 8 --window 1:7";
  check_loss(run("loss-dp2", "dist/tiny-dp2.yaml", "--emulate-rank 1", eight), true);
  check_loss(run("loss-ep2", "dist/tiny-ep2-dp2.yaml", "--emulate-rank 1", eight), true);
  check_loss(run("loss-tp2", "dist/tiny-tp2.yaml", std::string("--emulate-rank 1 ") + kFixed, eight), true);
  check_loss(run("loss-pp2", "dist/tiny-pp2-vpp2.yaml", "--emulate-rank 1", eight), false);
  check_loss(run("loss-tp2-pp2-ep2-dp2", "dist/tiny-tp2-pp2-ep2-dp2.yaml", "--emulate-rank 7", eight), false);
  const Result first = run("loss-pp2-first", "dist/tiny-pp2-vpp2.yaml", "--emulate-rank 0");
  REQUIRE(first.exit_code == 0);
  for (const json& s : first.records.at(0)["steps"]) CHECK(s["loss"].is_null());
}

TEST_CASE("a cut stage: --layers K with --emulate-rank runs K of the stage's layers", "[emulation]") {
  // tiny-pp2: the tiny model's 4 layers over PP 2, layers 2 and 3 on rank 1 (the last stage); --layers 1 keeps 2.
  const Result e = run("layers", "dist/tiny-pp2.yaml", "--emulate-rank 1 --layers 1");
  INFO(e.output);
  REQUIRE(e.exit_code == 0);
  const json& rec = e.records.at(0);
  const json& em = rec["emulation"];
  CHECK(em["stage_layers"] == 2);
  CHECK(em["layers_run"] == 1);
  REQUIRE(em["layers"].size() == 1);
  CHECK(em["layers"][0]["first"] == 2);
  CHECK(em["layers"][0]["count"] == 1);
  CHECK(rec["settings"]["emulated_stage_layers"] == 1);
  CHECK(rec["settings"]["layers"].is_null());  // the model keeps its layers: only the stage is cut
  CHECK(rec["model"]["layers"] == 4);
  // The parameters dumped are the stage's one layer and the output layer: no parameter of layer 3.
  const std::string params = traffic_of(e, 1)["parameters"].dump();
  CHECK(params.find("layers.2.") != std::string::npos);
  CHECK(params.find("layers.3.") == std::string::npos);
}

TEST_CASE("a rank outside the layout, --layers outside the stage and --nproc are refused, located", "[emulation]") {
  const Result out = run("refused-rank", "dist/tiny-dp2.yaml", "--emulate-rank 2");
  CHECK(out.exit_code == 2);
  CHECK(out.output.find("<command line>: error: --emulate-rank: 2, expected a rank of the recipe's layout TP1 PP1 "
                        "EP1 DP2 (2 ranks: 0 to 1)") != std::string::npos);
  CHECK(out.records.empty());
  const Result layers = run("refused-layers", "dist/tiny-pp2-vpp2.yaml", "--emulate-rank 0 --layers 1");
  CHECK(layers.exit_code == 2);
  CHECK(layers.output.find("<command line>: error: --layers: 1, expected with --emulate-rank, layers of rank 0's "
                           "pipeline stage 0: 2 to") != std::string::npos);
  const Result nproc = run("refused-nproc", "dist/tiny-dp2.yaml", "--emulate-rank 0 --nproc 2");
  CHECK(nproc.exit_code == 2);
  CHECK(nproc.output.find("--emulate-rank runs one process alone; drop --nproc") != std::string::npos);
}

TEST_CASE("the command backend cannot emulate a rank: refused by name", "[emulation]") {
  const Result r = run("refused-command", "command/hf-ok.yaml", "--emulate-rank 0");
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("--emulate-rank: the command backend cannot emulate a rank") != std::string::npos);
  CHECK(r.records.empty());
}

TEST_CASE("report lists an emulated rank's record apart, never ranked", "[emulation]") {
  const Result e = run("report", "dist/tiny-dp2.yaml", "--emulate-rank 1");
  REQUIRE(e.exit_code == 0);
  const fs::path board = e.dir / "board";
  const std::string cmd = "'" + std::string(RECIPEBENCH_BINARY) + "' report '" + (e.dir / "runs").string() +
                          "' --out '" + board.string() + "' > '" + (e.dir / "report.log").string() + "' 2>&1";
  REQUIRE(WEXITSTATUS(std::system(cmd.c_str())) == 0);
  const json b = json::parse(read_file((board / "leaderboard.json").string()));
  CHECK(b["groups"].empty());
  REQUIRE(b["unranked"].size() == 1);
  CHECK(b["unranked"][0].get<std::string>().find(
            "not ranked: an emulated rank (rank 1 alone, its collectives stood in; docs/emulation.md)") !=
        std::string::npos);
}

namespace {

/// The cells of a pass or of a phase object: {component: seconds}; 0 for an absent component or phase.
double cell(const json& pass, const char* phase, const char* component) {
  if (!pass.contains(phase)) return 0;
  return pass[phase].value(component, 0.0);
}

double cells_sum(const json& pass) {
  double s = 0;
  for (const char* ph : {"forward", "backward", "recompute"})
    if (pass.contains(ph))
      for (const auto& [name, v] : pass[ph].items()) s += v.get<double>();
  return s;
}

/// An emulated rank of tiny-pp2-vpp2-recompute (4 microbatches, 2 chunks a rank, one layer a chunk, every chunk
/// recomputed) under --profile: each step holds every pass of the schedule once, each pass's cells add up to its
/// seconds, forward passes have only a forward phase and backward passes a backward and a recompute phase, the MoE
/// parts are timed in every phase, and `where` (a component) only in the chunk that has it.
void check_profiled_rank(int rank, const char* only_component, int only_chunk) {
  const Result e = run("profile-rank" + std::to_string(rank), "dist/tiny-pp2-vpp2-recompute.yaml",
                       "--profile --emulate-rank " + std::to_string(rank));
  INFO(e.output);
  REQUIRE(e.exit_code == 0);
  CHECK(e.output.find("ms per step") != std::string::npos);
  const json& rec = e.records.at(0);
  for (const json& s : rec["steps"]) {
    const json& passes = s["phases"]["passes"];
    REQUIRE(passes.size() == 16);  // 2 kinds x 2 chunks x 4 microbatches
    std::set<std::tuple<std::string, int, int>> seen;
    for (const json& p : passes) {
      INFO(p.dump());
      seen.insert({p["kind"].get<std::string>(), p["virtual_stage"].get<int>(), p["microbatch"].get<int>()});
      CHECK(cells_sum(p) == Approx(p["seconds"].get<double>()).epsilon(1e-9));
      const bool backward = p["kind"] == "backward";
      CHECK(p.contains("forward") == !backward);
      CHECK(p.contains("backward") == backward);
      CHECK(p.contains("recompute") == backward);  // full recompute: each chunk's forward runs again in its backward
      for (const char* moe : {"moe_router", "moe_shared_expert", "moe_dispatch", "moe_experts", "moe_combine"})
        for (const char* ph : backward ? std::vector<const char*>{"backward", "recompute"}
                                       : std::vector<const char*>{"forward"})
          CHECK(cell(p, ph, moe) > 0);
      const bool has = p["virtual_stage"] == only_chunk;
      CHECK((cell(p, backward ? "backward" : "forward", only_component) > 0) == has);
    }
    CHECK(seen.size() == 16);
    // The step's MoE figure is the sum of its parts over the passes (component_totals).
    double moe = 0;
    for (const json& p : passes)
      for (const char* ph : {"forward", "backward", "recompute"})
        for (const char* part :
             {"moe_router", "moe_shared_expert", "moe_dispatch", "moe_experts", "moe_combine", "moe_rest"})
          moe += cell(p, ph, part);
    CHECK(s["phases"]["moe_seconds"].get<double>() == Approx(moe).epsilon(1e-9));
  }
  const json& em = rec["emulation"];
  REQUIRE(em["passes"].size() == 16);
  CHECK(em["window"]["optimizer_seconds"].get<double>() > 0);
  for (const char* ph : {"forward", "backward", "recompute"}) CHECK(em["components_per_step"][ph]["moe_experts"] > 0);
  // The per-step cells are the window's passes summed: the experts' forward, two ways.
  double experts = 0;
  for (const json& p : em["passes"]) experts += cell(p, "forward", "moe_experts");
  CHECK(em["components_per_step"]["forward"]["moe_experts"].get<double>() == Approx(experts).epsilon(1e-9));
}

}  // namespace

TEST_CASE("an emulated rank under --profile: every pass by phase and component, adding up", "[emulation]") {
  // Rank 0 holds global stages 0 and 2: the embedding in chunk 0. Rank 1 holds 1 and 3: the LM head in chunk 1.
  check_profiled_rank(0, "embedding", 0);
  check_profiled_rank(1, "lm_head_loss", 1);
}
