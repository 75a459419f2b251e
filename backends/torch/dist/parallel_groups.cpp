#include "dist/parallel_groups.h"

#include <stdexcept>

#include "layout/rank_map.h"

namespace recipebench::dist {

std::vector<int> group_members(const RankMap& map, int rank, const std::string& kind) {
  if (rank < 0 || rank >= static_cast<int>(map.ranks.size()))
    throw std::invalid_argument("rank " + std::to_string(rank) + " is not in the layout's " +
                                std::to_string(map.ranks.size()) + " ranks");
  const RankPlacement& me = map.ranks[static_cast<size_t>(rank)];
  auto same = [&](const RankPlacement& q) {
    if (kind == "tp") return q.cp == me.cp && q.dp == me.dp && q.pp == me.pp;
    if (kind == "dp") return q.tp == me.tp && q.cp == me.cp && q.pp == me.pp;
    if (kind == "ep") return q.etp == me.etp && q.edp == me.edp && q.pp == me.pp;
    if (kind == "edp") return q.etp == me.etp && q.ep == me.ep && q.pp == me.pp;
    if (kind == "pp") return q.tp == me.tp && q.cp == me.cp && q.dp == me.dp;
    throw std::invalid_argument("unknown group kind " + kind);
  };
  std::vector<int> members;
  for (const auto& q : map.ranks)
    if (same(q)) members.push_back(q.rank);
  return members;
}

LayoutGroups make_layout_groups(ProcessGroup& world, const RankMap& map) {
  if (static_cast<int>(map.ranks.size()) != world.size())
    throw std::invalid_argument("the layout has " + std::to_string(map.ranks.size()) + " ranks but the run " +
                                std::to_string(world.size()));
  LayoutGroups g;
  g.dp_rank = map.ranks[static_cast<size_t>(world.rank())].dp;
  auto make = [&](const std::string& kind) -> ProcessGroup* {
    const auto members = group_members(map, world.rank(), kind);
    if (static_cast<int>(members.size()) == world.size()) return &world;
    g.owned.push_back(world.subgroup(kind + std::to_string(members.front()), members));
    return g.owned.back().get();
  };
  g.tp = make("tp");
  g.dp = make("dp");
  g.ep = make("ep");
  g.edp = make("edp");
  if (map.pp > 1) {
    g.pp = make("pp");
    // Pipeline sends go over the run's group (stage ranks are run ranks); on NCCL each kind and direction over its
    // own group of all ranks (its own communicators).
    if (world.transport() == Transport::kNccl) {
      std::vector<int> all(static_cast<size_t>(world.size()));
      for (int r = 0; r < world.size(); ++r) all[static_cast<size_t>(r)] = r;
      g.p2p[0][0] = &world;
      const char* names[2][2] = {{"", "pp-act-down"}, {"pp-grad-up", "pp-grad-down"}};
      for (int k = 0; k < 2; ++k)
        for (int d = 0; d < 2; ++d)
          if (!g.p2p[k][d]) {
            g.owned.push_back(world.subgroup(names[k][d], all));
            g.p2p[k][d] = g.owned.back().get();
          }
    }
  }
  return g;
}

}  // namespace recipebench::dist
