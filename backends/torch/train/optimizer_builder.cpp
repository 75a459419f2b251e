#include "train/optimizer_builder.h"

#include <utility>
#include <vector>

#include "train/adam.h"
#include "train/chained_optimizer.h"
#include "train/distributed_adam.h"

namespace recipebench::train {

std::unique_ptr<Optimizer> build_optimizer(const RankModel& model, const RunContext& ctx, const RecipeOptimizer& o) {
  std::vector<std::unique_ptr<Optimizer>> members;
  if (!ctx.group) {
    members.push_back(std::make_unique<MixedPrecisionAdam>(model.stage->parameters(), o));
    return std::make_unique<ChainedOptimizer>(std::move(members), nullptr);
  }
  const auto& g = ctx.groups;
  dist::ProcessGroup* tp = ctx.map.tp > 1 ? g.tp : nullptr;
  std::vector<torch::Tensor> dense, dense_tp;  // replicated over TP; TP-sharded
  for (const auto& p : model.stage->parameters())
    if (!model.is_expert(p)) (model.tp_spec(p) ? dense_tp : dense).push_back(p);
  members.push_back(std::make_unique<DistributedAdam>(dense, o, *g.dp, GradientGroups{tp, nullptr}));
  if (!dense_tp.empty())
    members.push_back(std::make_unique<DistributedAdam>(dense_tp, o, *g.dp, GradientGroups{nullptr, tp}));
  if (!model.expert_params.empty()) {
    GradientGroups experts;
    experts.partial_sums = g.edp->size() > 1 ? g.edp : nullptr;
    experts.shards = model.ep ? &model.ep->group : nullptr;
    members.push_back(std::make_unique<MixedPrecisionAdam>(model.expert_params, o, experts));
  }
  return std::make_unique<ChainedOptimizer>(std::move(members), g.pp);
}

}  // namespace recipebench::train
