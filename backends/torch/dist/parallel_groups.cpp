#include "dist/parallel_groups.h"

#include <stdexcept>

#include "layout/rank_map.h"

namespace recipebench::dist {

namespace {

/// The pipeline's point-to-point groups on NCCL (PipelineLinks): the run's group and three groups of all ranks.
PipelineLinks make_pipeline_links(ProcessGroup& world, std::vector<std::unique_ptr<ProcessGroup>>& owned) {
  std::vector<int> all(static_cast<size_t>(world.size()));
  for (int r = 0; r < world.size(); ++r) all[static_cast<size_t>(r)] = r;
  auto make = [&](const char* name) {
    owned.push_back(world.subgroup(name, all));
    return owned.back().get();
  };
  PipelineLinks links;
  links.activations_to_higher = &world;
  links.activations_to_lower = make("pp-act-down");
  links.gradients_to_higher = make("pp-grad-up");
  links.gradients_to_lower = make("pp-grad-down");
  return links;
}

}  // namespace

LayoutGroups make_layout_groups(ProcessGroup& world, const RankMap& map, bool grad_groups) {
  if (static_cast<int>(map.ranks.size()) != world.size())
    throw std::invalid_argument("the layout has " + std::to_string(map.ranks.size()) + " ranks but the run " +
                                std::to_string(world.size()));
  LayoutGroups g;
  g.dp_rank = map.ranks[static_cast<size_t>(world.rank())].dp;
  auto make = [&](GroupKind kind) -> ProcessGroup* {
    const auto members = group_members(map, world.rank(), kind);
    if (static_cast<int>(members.size()) == world.size()) return &world;
    g.owned.push_back(world.subgroup(to_string(kind) + std::to_string(members.front()), members));
    return g.owned.back().get();
  };
  g.tp = make(GroupKind::kTp);
  g.dp = make(GroupKind::kDp);
  g.ep = make(GroupKind::kEp);
  g.edp = make(GroupKind::kEdp);
  if (map.pp > 1) {
    g.pp = make(GroupKind::kPp);
    // Pipeline sends go over the run's group (stage ranks are run ranks); on NCCL each kind and direction over its
    // own group of all ranks (its own communicators).
    if (world.transport() == Transport::kNccl) g.links = make_pipeline_links(world, g.owned);
  }
  auto own = [&](GroupKind kind) -> ProcessGroup* {
    const auto members = group_members(map, world.rank(), kind);
    if (members.size() < 2) return nullptr;
    g.owned.push_back(
        world.subgroup(std::string("grad-") + to_string(kind) + std::to_string(members.front()), members));
    return g.owned.back().get();
  };
  if (grad_groups) {
    g.grad_dp = own(GroupKind::kDp);
    // The experts have an optimizer of their own only when apart from the dense parameters (EP > 1 or TP > 1:
    // rank/model_builder.h, RankModel::expert_params).
    if (map.ep > 1 || map.tp > 1) g.grad_edp = own(GroupKind::kEdp);
  }
  return g;
}

namespace {
/// A TP reduce-scatter in flight; its wait() is a TP wait on the active comm clock (dist/comm_clock.h).
struct PendingTpRequest : torch_model::PendingCollective {
  explicit PendingTpRequest(std::unique_ptr<ProcessGroup::Request> r) : request(std::move(r)) {}
  void wait() override {
    const CommWait wait(CommKind::kTensorParallel);
    request->wait();
  }
  std::unique_ptr<ProcessGroup::Request> request;
};
}  // namespace

std::unique_ptr<torch_model::PendingCollective> GroupTensorParallel::start_reduce_scatter_sum(const at::Tensor& full,
                                                                                             const at::Tensor& shard) {
  return std::make_unique<PendingTpRequest>(group.ireduce_scatter_sum(full, shard));
}

}  // namespace recipebench::dist
