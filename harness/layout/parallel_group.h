// The groups of a layout, by the coordinates their ranks share in the rank map (layout/rank_map.h: Megatron-LM order,
// TP fastest; the expert grid of "MoE parallel folding"). One definition for the step-time model (which link a
// collective spans, plan/step_time.h) and the torch backend's process groups (backends/torch/dist/parallel_groups.h).
#pragma once

#include <string>
#include <vector>

namespace recipebench {

struct RankMap;  // layout/rank_map.h (kept out of this header: the torch backend's dist headers include it)

/// The kinds of group of a layout, by the coordinates their ranks share.
enum class GroupKind {
  kTp,   ///< same (cp, dp, pp): the attention grid's tensor-parallel group
  kDp,   ///< same (tp, cp, pp): the dense parameters' data-parallel group
  kEp,   ///< same (etp, edp, pp): the expert-parallel group
  kEdp,  ///< same (etp, ep, pp): the ranks holding the same experts
  kPp,   ///< same (tp, cp, dp): one pipeline
  kCp,   ///< same (tp, dp, pp): one context-parallel group (the step-time model's ring exchange of keys and values;
         ///< the torch backend makes none: it runs CP 1)
  kEtp,  ///< same (ep, edp, pp): the experts' tensor-parallel group (Megatron-Core's expt_tp; the step-time model's
         ///< all-gather and reduce-scatter of the dispatched rows with ETP > 1; the torch backend runs ETP 1)
  kEtpEp,  ///< same (edp, pp): the ETP x EP ranks of one expert grid (Megatron-Core's tp_ep group: the flex and
           ///< allgather dispatchers' group; the torch backend makes none)
};

/// "tp", "dp", "ep", "edp", "pp", "cp", "etp", "etp_ep" (also the prefix of the torch backend's subgroup store names).
const char* to_string(GroupKind kind);
/// The GroupKind of a recorded group spelled `s` (tp, dp, ep, edp, pp); throws std::invalid_argument for another
/// spelling, "cp", "etp" and "etp_ep" included (the torch backend records none of them: it runs CP 1 and ETP 1).
GroupKind parse_group_kind(const std::string& s);

/// The members (run ranks, ascending) of `rank`'s group of `kind` in `map`. Throws std::invalid_argument for a rank
/// outside the map.
std::vector<int> group_members(const RankMap& map, int rank, GroupKind kind);

}  // namespace recipebench
