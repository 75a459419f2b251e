#include "train/optimizer_builder.h"

#include <utility>
#include <vector>

#include "train/adam.h"
#include "train/chained_optimizer.h"
#include "train/distributed_adam.h"

namespace recipebench::train {

namespace {

/// The routed experts' optimizer (they are apart: EP > 1 or TP > 1). The EDP ranks hold the same experts, each
/// with the gradients of its own tokens: with EDP > 1 a DistributedAdam over the EDP group (the reduce-scatter sums
/// the EDP ranks' gradients into each rank's 1 / EDP shard, which alone keeps FP32 masters and moments; the shard
/// norms are summed over EDP, so the replicas count once); with EDP = 1 nothing is replicated, nothing to shard:
/// a MixedPrecisionAdam (no flat buffers). Either way the squared norms of the EP ranks' different experts are
/// summed over the EP group.
std::unique_ptr<Optimizer> build_expert_optimizer(const RankModel& model, const RunContext& ctx,
                                                  const RecipeOptimizer& o) {
  dist::ProcessGroup* ep = model.ep ? &model.ep->group : nullptr;
  dist::ProcessGroup& edp = *ctx.groups.edp;
  if (edp.size() > 1) return std::make_unique<DistributedAdam>(model.expert_params, o, edp, GradientGroups{nullptr, ep});
  return std::make_unique<MixedPrecisionAdam>(model.expert_params, o, GradientGroups{nullptr, ep});
}

}  // namespace

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
  if (!model.expert_params.empty()) members.push_back(build_expert_optimizer(model, ctx, o));
  return std::make_unique<ChainedOptimizer>(std::move(members), g.pp);
}

}  // namespace recipebench::train
