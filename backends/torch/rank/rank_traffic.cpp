#include "rank/rank_traffic.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include "dist/traffic.h"

namespace recipebench::train {

std::vector<RankGroup> rank_groups(const RunContext& ctx) {
  std::vector<RankGroup> out;
  auto add = [&out](dist::ProcessGroup* g, const char* kind) {
    if (!g) return;
    auto it = std::find_if(out.begin(), out.end(), [g](const RankGroup& r) { return r.group == g; });
    if (it == out.end()) it = out.insert(out.end(), RankGroup{g, {}});
    if (std::find(it->kinds.begin(), it->kinds.end(), kind) == it->kinds.end()) it->kinds.push_back(kind);
  };
  const dist::LayoutGroups& l = ctx.groups;
  add(ctx.group.get(), "run");
  add(l.tp, "tp"), add(l.dp, "dp"), add(l.ep, "ep"), add(l.edp, "edp"), add(l.pp, "pp");
  for (dist::ProcessGroup* g : {l.links.activations_to_higher, l.links.activations_to_lower,
                                l.links.gradients_to_higher, l.links.gradients_to_lower})
    add(g, "pp_links");
  add(l.grad_dp, "grad_dp"), add(l.grad_edp, "grad_edp");
  return out;
}

std::vector<GroupTraffic> take_step_traffic(const RunContext& ctx) {
  std::vector<GroupTraffic> out;
  for (const RankGroup& r : rank_groups(ctx)) {
    const dist::TrafficTotals t = r.group->traffic().take_totals();
    if (t.empty()) continue;
    GroupTraffic g{r.kinds, r.group->members(), {}};
    for (int i = 0; i < dist::kCollectiveOps; ++i) {
      if (t.calls[static_cast<size_t>(i)] == 0) continue;
      const auto op = static_cast<dist::CollectiveOp>(i);
      g.ops.push_back(OpTraffic{dist::to_string(op), t.calls[static_cast<size_t>(i)], t.bytes[static_cast<size_t>(i)],
                                op == dist::CollectiveOp::kAllToAll ? t.received_bytes : 0});
    }
    out.push_back(std::move(g));
  }
  return out;
}

void keep_traffic_calls(const RunContext& ctx) {
  for (const RankGroup& r : rank_groups(ctx)) r.group->traffic().keep_calls(true);
}

void dump_rank_traffic(const std::string& prefix, const RunContext& ctx, const RankModel& model) {
  Json params = Json::array();
  const auto& names = model.stage_param_names;
  const auto tensors = model.stage->parameters();
  for (size_t i = 0; i < tensors.size(); ++i)
    params.push_back(Json{{"name", i < names.size() ? names[i] : ""}, {"shape", tensors[i].sizes().vec()}});
  Json groups = Json::array();
  for (const RankGroup& r : rank_groups(ctx)) {
    Json calls = Json::array();
    for (const dist::CollectiveCall& c : r.group->traffic().calls())
      calls.push_back(Json{{"op", dist::to_string(c.op)},
                           {"shape", c.shape},
                           {"bytes", c.bytes},
                           {"received_bytes", c.received_bytes}});
    groups.push_back(Json{{"kinds", r.kinds}, {"members", r.group->members()}, {"calls", calls}});
  }
  const std::string path = prefix + ".rank" + std::to_string(ctx.rank) + ".json";
  std::ofstream out(path);
  out << Json{{"rank", ctx.rank}, {"parameters", params}, {"groups", groups}}.dump(1) << "\n";
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace recipebench::train
