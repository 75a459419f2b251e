#include "layout/parallel_group.h"

#include <stdexcept>

#include "layout/rank_map.h"

namespace recipebench {

const char* to_string(GroupKind kind) {
  switch (kind) {
    case GroupKind::kTp:
      return "tp";
    case GroupKind::kDp:
      return "dp";
    case GroupKind::kEp:
      return "ep";
    case GroupKind::kEdp:
      return "edp";
    case GroupKind::kPp:
      return "pp";
    case GroupKind::kCp:
      return "cp";
    case GroupKind::kEtp:
      return "etp";
    case GroupKind::kEtpEp:
      return "etp_ep";
  }
  return "?";
}

GroupKind parse_group_kind(const std::string& s) {
  for (const GroupKind k : {GroupKind::kTp, GroupKind::kDp, GroupKind::kEp, GroupKind::kEdp, GroupKind::kPp})
    if (s == to_string(k)) return k;
  throw std::invalid_argument("unknown group kind " + s + ", expected tp, dp, ep, edp or pp");
}

namespace {

/// Whether `q` shares `me`'s coordinates of a group of `kind`.
bool same_group(const RankPlacement& q, const RankPlacement& me, GroupKind kind) {
  switch (kind) {
    case GroupKind::kTp:
      return q.cp == me.cp && q.dp == me.dp && q.pp == me.pp;
    case GroupKind::kDp:
      return q.tp == me.tp && q.cp == me.cp && q.pp == me.pp;
    case GroupKind::kEp:
      return q.etp == me.etp && q.edp == me.edp && q.pp == me.pp;
    case GroupKind::kEdp:
      return q.etp == me.etp && q.ep == me.ep && q.pp == me.pp;
    case GroupKind::kPp:
      return q.tp == me.tp && q.cp == me.cp && q.dp == me.dp;
    case GroupKind::kCp:
      return q.tp == me.tp && q.dp == me.dp && q.pp == me.pp;
    case GroupKind::kEtp:
      return q.ep == me.ep && q.edp == me.edp && q.pp == me.pp;
    case GroupKind::kEtpEp:
      return q.edp == me.edp && q.pp == me.pp;
  }
  return false;
}

/// The members of `me`'s group of `kind` by the grid's arithmetic (build_rank_map's order: rank = tp + TP (cp + CP (dp
/// + DP pp)) = etp + ETP (ep + EP (edp + EDP pp))): O(group), not a scan of every rank (plan's search of 131,072
/// GPUs times every candidate's groups).
std::vector<int> grid_members(const RankMap& map, const RankPlacement& me, GroupKind kind) {
  int first = me.rank, stride = 1, size = 1;
  switch (kind) {
    case GroupKind::kTp:
      first -= me.tp, stride = 1, size = map.tp;
      break;
    case GroupKind::kDp:
      stride = map.tp * map.cp, first -= me.dp * stride, size = map.dp;
      break;
    case GroupKind::kPp:
      stride = map.tp * map.cp * map.dp, first -= me.pp * stride, size = map.pp;
      break;
    case GroupKind::kEp:
      stride = map.etp, first -= me.ep * stride, size = map.ep;
      break;
    case GroupKind::kEdp:
      stride = map.etp * map.ep, first -= me.edp * stride, size = map.edp;
      break;
    case GroupKind::kCp:
      stride = map.tp, first -= me.cp * stride, size = map.cp;
      break;
    case GroupKind::kEtp:
      first -= me.etp, stride = 1, size = map.etp;
      break;
    case GroupKind::kEtpEp:
      first -= me.etp + map.etp * me.ep, stride = 1, size = map.etp * map.ep;
      break;
  }
  std::vector<int> members;
  members.reserve(static_cast<size_t>(size));
  for (int i = 0; i < size; ++i) members.push_back(first + i * stride);
  return members;
}

}  // namespace

std::vector<int> group_members(const RankMap& map, int rank, GroupKind kind) {
  if (map.stages_only) return grid_members(map, rank_placement(map, rank), kind);  // build_stage_map's map
  if (rank < 0 || rank >= static_cast<int>(map.ranks.size()))
    throw std::invalid_argument("rank " + std::to_string(rank) + " is not in the layout's " +
                                std::to_string(map.ranks.size()) + " ranks");
  const RankPlacement& me = map.ranks[static_cast<size_t>(rank)];
  // A map build_rank_map made (its stage index filled, every rank at its index) is in the grid's order.
  if (map.stage_first_rank.size() == static_cast<size_t>(map.pp) &&
      map.ranks.size() == static_cast<size_t>(map.world) && me.rank == rank)
    return grid_members(map, me, kind);
  std::vector<int> members;
  for (const auto& q : map.ranks)
    if (same_group(q, me, kind)) members.push_back(q.rank);
  return members;
}

}  // namespace recipebench
