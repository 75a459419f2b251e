// What a rank's process groups moved (dist/traffic.h), by the layout's groups they serve: per step for an emulated
// rank's record (docs/emulation.md, "Traffic"), and call by call for the emulation parity test's dump.
#pragma once

#include <string>
#include <vector>

#include "backend/backend.h"
#include "rank/model_builder.h"
#include "rank/run_context.h"

namespace recipebench::train {

/// Each distinct process group of the rank (the run's group, then TP, DP, EP, EDP, PP, the pipeline's links and
/// the gradient groups) and the layout's groups it serves ("run", "tp", ... as GroupTraffic::kinds).
struct RankGroup {
  dist::ProcessGroup* group = nullptr;
  std::vector<std::string> kinds;
};
std::vector<RankGroup> rank_groups(const RunContext& ctx);

/// What each group moved since the last call, and forgets it: the groups that ran an operation, their operations
/// in dist::CollectiveOp order.
std::vector<GroupTraffic> take_step_traffic(const RunContext& ctx);

/// Keeps every later call of every group of the rank (for dump_rank_traffic).
void keep_traffic_calls(const RunContext& ctx);

/// Writes `<prefix>.rank<R>.json`: {"rank", "parameters": [{"name", "shape"}] of this rank's stage in order,
/// "groups": [{"kinds", "members", "calls": [{"op", "shape", "bytes", "received_bytes"}]}]}. Throws
/// std::runtime_error when the file cannot be written.
void dump_rank_traffic(const std::string& prefix, const RunContext& ctx, const RankModel& model);

}  // namespace recipebench::train
