#include "schedule/pipeline_receives.h"

#include <stdexcept>
#include <string>

namespace recipebench {

namespace {

/// The receive of schedule[i] when the pass has one (its post_after not yet set).
bool receive_of(int pp, int vpp, int stage, const PipelineAction& a, int64_t i, PipelineReceive& out) {
  const int64_t g = int64_t{a.chunk} * pp + stage, stages = int64_t{pp} * vpp;
  out.action = i;
  if (a.kind == PipelineAction::Kind::Forward) {
    if (g == 0) return false;
    out.gradient = false;
    out.to_higher = stage > 0;  // from pipeline rank stage - 1, or (stage 0) the wrap-around from rank PP - 1
    return true;
  }
  if (g == stages - 1) return false;
  out.gradient = true;
  out.to_higher = stage == pp - 1;  // from pipeline rank stage + 1, or (last rank) the wrap-around from rank 0
  return true;
}

}  // namespace

std::vector<PipelineReceive> pipeline_receive_plan(int pp, int vpp, int stage, int64_t microbatches, int depth) {
  if (depth < 1) throw std::invalid_argument("pipeline receive plan: depth " + std::to_string(depth) + " < 1");
  const auto schedule = pipeline_schedule(pp, vpp, stage, microbatches);
  std::vector<PipelineReceive> out;
  std::vector<std::vector<int64_t>> by_link(4);  // actions of the receives so far, per link (gradient, to_higher)
  for (size_t i = 0; i < schedule.size(); ++i) {
    PipelineReceive r;
    if (!receive_of(pp, vpp, stage, schedule[i], static_cast<int64_t>(i), r)) continue;
    auto& link = by_link[(r.gradient ? 2 : 0) + (r.to_higher ? 1 : 0)];
    const auto d = static_cast<size_t>(depth);
    r.ahead = !link.empty();
    if (r.ahead) r.post_after = link[link.size() > d ? link.size() - d : 0];
    link.push_back(r.action);
    out.push_back(r);
  }
  return out;
}

}  // namespace recipebench
