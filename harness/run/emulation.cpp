#include "run/emulation.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <stdexcept>

namespace recipebench {

namespace {
constexpr const char* kStoodIn =
    "every collective of the rank's groups (TP, DP, EP, EDP, pipeline sends and receives) went to the stand-in "
    "transport: sums are this rank's values times the group's size, gathers repeat this rank's shard, a receive "
    "gets fixed pseudo-random values of the real shape, and the EP all-to-all brings this rank's experts what this "
    "rank routes to them from each peer (EP x its own routed tokens); the compute, recompute and optimizer step are "
    "real (docs/emulation.md)";

Json coordinates(const RankPlacement& q) {
  return Json{{"tp", q.tp}, {"cp", q.cp}, {"dp", q.dp}, {"pp", q.pp}, {"etp", q.etp}, {"ep", q.ep}, {"edp", q.edp}};
}

Json layer_ranges(const RankPlacement& q) {
  Json out = Json::array();
  for (const LayerRange& lr : q.layers)
    out.push_back(Json{{"virtual_stage", lr.virtual_stage}, {"first", lr.first}, {"count", lr.count}});
  return out;
}
}  // namespace

std::optional<Diagnostic> emulation_diagnostic(const RunSettings& s, const RankMap& map, const std::string& layout) {
  if (!s.emulate_rank) return std::nullopt;
  const int r = *s.emulate_rank;
  if (r < 0 || r >= map.world)
    return Diagnostic{"<command line>", 0, 0, "--emulate-rank", std::to_string(r),
                      "a rank of the recipe's layout " + layout + " (" + std::to_string(map.world) + " ranks: 0 to " +
                          std::to_string(map.world - 1) + ")"};
  if (const auto& k = s.emulated_stage_layers) {
    const int pp = map.ranks[static_cast<size_t>(r)].pp;
    const int64_t have = map.stage_layers[static_cast<size_t>(pp)];
    if (*k < map.vpp || *k > have)
      return Diagnostic{"<command line>", 0, 0, "--layers", std::to_string(*k),
                        "with --emulate-rank, layers of rank " + std::to_string(r) + "'s pipeline stage " +
                            std::to_string(pp) + ": " + std::to_string(map.vpp) + " to " + std::to_string(have) +
                            " (each of its " + std::to_string(map.vpp) + " virtual stages keeps one at least)"};
  }
  return std::nullopt;
}

RankMap emulated_rank_map(RankMap map, const RunSettings& s) {
  if (s.emulate_rank && s.emulated_stage_layers)
    keep_stage_layers(map, map.ranks.at(static_cast<size_t>(*s.emulate_rank)).pp, *s.emulated_stage_layers);
  return map;
}

Json emulation_block(const Recipe& recipe, const RankMap& full, const RankMap& ran, const MemoryPlan& plan,
                     const RunSettings& s) {
  const int r = *s.emulate_rank;
  const RankPlacement& q = ran.ranks.at(static_cast<size_t>(r));
  const RankMemory& m = plan.ranks.at(static_cast<size_t>(q.pp));
  return Json{{"rank", r},
              {"world", ran.world},
              {"layout", recipe.layout.label},
              {"gpu", recipe.gpu.type},
              {"coordinates", coordinates(q)},
              {"stage_kind", m.kind},
              {"layers", layer_ranges(q)},
              {"stage_layers", full.stage_layers.at(static_cast<size_t>(q.pp))},
              {"layers_run", ran.stage_layers.at(static_cast<size_t>(q.pp))},
              {"microbatches", q.microbatches},
              {"planned_peak_bytes", m.peak},
              {"stood_in", kStoodIn}};
}

namespace {
/// Each group's mean traffic per window step: {kinds, members, ops: {op: {calls, bytes, received_bytes}}}.
Json window_traffic(const RunRecord& rec, int first, int last) {
  // By kinds and members: the TP and EP groups of a layout may have the same members and still be two groups.
  std::map<std::pair<std::vector<std::string>, std::vector<int>>, std::map<std::string, OpTraffic>> groups;
  std::vector<std::pair<std::vector<std::string>, std::vector<int>>> order;  // first seen first
  int steps = 0;
  for (const StepSample& s : rec.steps) {
    if (s.step < first || s.step > last) continue;
    ++steps;
    for (const GroupTraffic& g : s.traffic) {
      const auto key = std::make_pair(g.kinds, g.members);
      if (!groups.count(key)) order.push_back(key);
      auto& ops = groups[key];
      for (const OpTraffic& o : g.ops) {
        OpTraffic& t = ops[o.op];
        t.op = o.op, t.calls += o.calls, t.bytes += o.bytes, t.received_bytes += o.received_bytes;
      }
    }
  }
  Json out = Json::array();
  for (const auto& key : order) {
    Json ops = Json::object();
    for (const auto& [name, t] : groups[key]) {
      ops[name] = Json{{"calls_per_step", static_cast<double>(t.calls) / steps},
                       {"bytes_per_step", static_cast<double>(t.bytes) / steps}};
      if (name == "all_to_all") ops[name]["received_bytes_per_step"] = static_cast<double>(t.received_bytes) / steps;
    }
    out.push_back(Json{{"kinds", key.first}, {"members", key.second}, {"ops", ops}});
  }
  return out;
}
/// With --profile: the window's mean of each pass of the schedule (by kind, virtual stage and microbatch, in the
/// order run) and of the step's components by phase. Null without passes.
Json window_passes(const RunRecord& rec, int first, int last) {
  using Key = std::tuple<bool, int, int64_t>;
  std::map<Key, PassSample> sums;
  std::vector<Key> order;
  std::array<ComponentCells, kPassPhases> per_step{};
  int steps = 0;
  for (const StepSample& s : rec.steps) {
    if (s.step < first || s.step > last || s.passes.empty()) continue;
    ++steps;
    for (const PassSample& p : s.passes) {
      const Key key{p.backward, p.virtual_stage, p.microbatch};
      if (!sums.count(key)) order.push_back(key), sums[key] = PassSample{p.backward, p.virtual_stage, p.microbatch};
      PassSample& t = sums[key];
      t.seconds += p.seconds;
      for (size_t ph = 0; ph < kPassPhases; ++ph)
        for (size_t c = 0; c < kProfileComponents; ++c) {
          t.phases[ph][c] += p.phases[ph][c];
          per_step[ph][c] += p.phases[ph][c];
        }
    }
  }
  if (steps == 0) return nullptr;
  Json passes = Json::array();
  for (const Key& k : order) {
    PassSample mean = sums[k];
    mean.seconds /= steps;
    for (ComponentCells& phase : mean.phases)
      for (double& c : phase) c /= steps;
    passes.push_back(to_json(mean));
  }
  return Json{{"passes", passes}, {"components_per_step", phase_cells_json(per_step, steps)}};
}
}  // namespace

void summarise_emulation(RunRecord& rec) {
  if (rec.emulation.is_null()) return;
  const StepWindow w = rec.options.settings.window;
  double seconds = 0, stand_in = 0, optimizer = 0;
  int steps = 0;
  int64_t peak = 0;
  for (const StepSample& s : rec.steps) {
    if (s.step < w.first || s.step > w.last) continue;
    seconds += s.seconds, stand_in += s.comm_waits.sum(), optimizer += s.optimizer_seconds, ++steps;
    peak = std::max(peak, s.peak_memory_bytes);
  }
  if (steps == 0) return;
  Json& e = rec.emulation;
  // The stand-in's own operations (its copies and scalings) are timed where the real collectives are waited for
  // (steps[].comm_waits): part of the step, not of the rank's compute.
  e["window"] = Json{{"steps", steps},
                     {"mean_step_seconds", seconds / steps},
                     {"stand_in_seconds", stand_in / steps},
                     {"compute_seconds", (seconds - stand_in) / steps}};
  e["peak_memory_bytes"] = peak;
  const double planned = e.value("planned_peak_bytes", 0.0);
  e["peak_over_plan"] = planned > 0 && peak > 0 ? Json(static_cast<double>(peak) / planned) : Json(nullptr);
  e["traffic_per_step"] = window_traffic(rec, w.first, w.last);
  // --profile: every pass of the schedule by phase and component, and the optimizer's step (docs/emulation.md).
  if (Json p = window_passes(rec, w.first, w.last); !p.is_null()) {
    e["window"]["optimizer_seconds"] = optimizer / steps;
    e["passes"] = p["passes"];
    e["components_per_step"] = p["components_per_step"];
  }
}

}  // namespace recipebench
