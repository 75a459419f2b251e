#include "optim/optimizer_builder.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "optim/adam.h"
#include "optim/chained_optimizer.h"
#include "optim/distributed_adam.h"

namespace recipebench::train {

namespace {

/// Where each of the stage's parameters is: its model chunk and its index in the stage's parameters().
struct StagePlaces {
  std::unordered_map<const void*, int> chunk;
  std::unordered_map<const void*, int64_t> position;
};

StagePlaces stage_places(const RankModel& model) {
  StagePlaces s;
  int64_t i = 0;
  for (const auto& p : model.stage->parameters()) s.position[p.unsafeGetTensorImpl()] = i++;
  for (int c = 0; c < model.stage->num_chunks(); ++c)
    for (const auto& p : model.stage->chunk_parameters(c)) s.chunk[p.unsafeGetTensorImpl()] = c;
  return s;
}

/// The overlap settings of a DistributedAdam over `params` on `group` (its grad_* duplicate `grad_group`): none
/// without reduce.overlap (gather) or on one rank.
struct OverlapPlan {
  const GradReduceOptions& reduce;
  std::shared_ptr<ParamGatherOrder> gather;
  StagePlaces places;
  std::shared_ptr<GradSyncOrder> order = std::make_shared<GradSyncOrder>();

  /// The deferred all-gathers of a DistributedAdam over `params` on `group`.
  ParamGatherOverlap gather_of(const std::vector<torch::Tensor>& params, const dist::ProcessGroup& group,
                               const char* name) const {
    ParamGatherOverlap g;
    if (!gather || group.size() < 2) return g;
    g.order = gather;
    for (const auto& p : params) {
      const auto at = places.position.find(p.unsafeGetTensorImpl());
      if (at == places.position.end())
        throw std::invalid_argument(std::string("overlap_param_gather: a parameter of the ") + name +
                                    " optimizer is not in this rank's pipeline stage");
      g.position.push_back(at->second);
    }
    return g;
  }

  GradReduceOverlap of(const std::vector<torch::Tensor>& params, const dist::ProcessGroup& group,
                       dist::ProcessGroup* grad_group, const char* name) const {
    GradReduceOverlap ov;
    if (!reduce.overlap || group.size() < 2) return ov;
    if (!grad_group || grad_group->size() != group.size())
      throw std::invalid_argument(std::string("overlap_grad_reduce: no gradient reduce-scatter group for the ") + name +
                                  " optimizer (place_rank without grad_groups)");
    ov.group = grad_group;
    ov.bucket_elements = reduce.bucket_elements;
    ov.order = order;
    for (const auto& p : params) {
      const auto c = places.chunk.find(p.unsafeGetTensorImpl());
      const auto at = places.position.find(p.unsafeGetTensorImpl());
      if (c == places.chunk.end() || at == places.position.end())
        throw std::invalid_argument(std::string("overlap_grad_reduce: a parameter of the ") + name +
                                    " optimizer is not in this rank's pipeline stage");
      ov.chunk.push_back(c->second);
      ov.position.push_back(at->second);
    }
    return ov;
  }
};

/// The routed experts' optimizer (they are apart: EP > 1 or TP > 1). The EDP ranks hold the same experts, each
/// with the gradients of its own tokens: with EDP > 1 a DistributedAdam over the EDP group (the reduce-scatter sums
/// the EDP ranks' gradients into each rank's 1 / EDP shard, which alone keeps FP32 masters and moments; the shard
/// norms are summed over EDP, so the replicas count once); with EDP = 1 nothing is replicated, nothing to shard:
/// a MixedPrecisionAdam (no flat buffers). Either way the squared norms of the EP ranks' different experts are
/// summed over the EP group.
std::unique_ptr<Optimizer> build_expert_optimizer(const RankModel& model, const RunContext& ctx,
                                                  const RecipeOptimizer& o, const OverlapPlan& plan,
                                                  AdamKernels kernels) {
  dist::ProcessGroup* ep = model.ep ? &model.ep->group : nullptr;
  dist::ProcessGroup& edp = *ctx.groups.edp;
  if (edp.size() > 1)
    return std::make_unique<DistributedAdam>(model.expert_params, o, edp, GradientGroups{nullptr, ep},
                                             plan.of(model.expert_params, edp, ctx.groups.grad_edp, "expert"),
                                             plan.gather_of(model.expert_params, edp, "expert"));
  return std::make_unique<MixedPrecisionAdam>(model.expert_params, o, GradientGroups{nullptr, ep}, kernels);
}

}  // namespace

std::unique_ptr<Optimizer> build_optimizer(const RankModel& model, const RunContext& ctx, const RecipeOptimizer& o,
                                           const GradReduceOptions& reduce, AdamKernels kernels,
                                           std::shared_ptr<ParamGatherOrder> gather) {
  std::vector<std::unique_ptr<Optimizer>> members;
  if (!ctx.group) {
    members.push_back(std::make_unique<MixedPrecisionAdam>(model.stage->parameters(), o, GradientGroups{}, kernels));
    return std::make_unique<ChainedOptimizer>(std::move(members), nullptr);
  }
  const auto& g = ctx.groups;
  dist::ProcessGroup* tp = ctx.map.tp > 1 ? g.tp : nullptr;
  std::vector<torch::Tensor> dense, dense_tp;  // replicated over TP; TP-sharded
  for (const auto& p : model.stage->parameters())
    if (!model.is_expert(p)) (model.tp_spec(p) ? dense_tp : dense).push_back(p);
  const OverlapPlan plan{reduce, gather, reduce.overlap || gather ? stage_places(model) : StagePlaces{}};
  members.push_back(std::make_unique<DistributedAdam>(dense, o, *g.dp, GradientGroups{tp, nullptr},
                                                      plan.of(dense, *g.dp, g.grad_dp, "dense"),
                                                      plan.gather_of(dense, *g.dp, "dense")));
  if (!dense_tp.empty())
    members.push_back(std::make_unique<DistributedAdam>(dense_tp, o, *g.dp, GradientGroups{nullptr, tp},
                                                        plan.of(dense_tp, *g.dp, g.grad_dp, "TP-sharded"),
                                                        plan.gather_of(dense_tp, *g.dp, "TP-sharded")));
  if (!model.expert_params.empty()) members.push_back(build_expert_optimizer(model, ctx, o, plan, kernels));
  return std::make_unique<ChainedOptimizer>(std::move(members), g.pp);
}

std::unique_ptr<Optimizer> build_optimizer(RankModel& model, const RunContext& ctx, const RecipeOptimizer& o,
                                           const OptimizerConfig& config) {
  std::shared_ptr<ParamGatherOrder> gather;
  if (config.overlap_param_gather) gather = std::make_shared<ParamGatherOrder>();
  auto optimizer = build_optimizer(model, ctx, o, config.reduce, config.kernels, gather);
  if (gather) wait_for_param_gathers(model, gather);
  return optimizer;
}

void wait_for_param_gathers(RankModel& model, std::shared_ptr<ParamGatherOrder> gather) {
  auto& stage = *model.stage;
  const StagePlaces places = stage_places(model);
  // Per module: the largest index of its parameters in the stage's parameters().
  std::unordered_map<const torch::nn::Module*, int64_t> last;
  size_t covered = 0;
  auto add = [&](const torch::nn::Module& m) {
    int64_t at = -1;
    for (const auto& p : m.parameters()) {
      at = std::max(at, places.position.at(p.unsafeGetTensorImpl()));
      ++covered;
    }
    last[&m] = at;
  };
  if (!stage.embed_tokens.is_empty()) add(*stage.embed_tokens);
  for (const auto& chunk : stage.chunk_layers)
    for (const auto& layer : chunk) add(*layer);
  if (!stage.norm.is_empty()) add(*stage.norm);
  if (!stage.lm_head.is_empty()) add(*stage.lm_head);
  if (covered != places.position.size())
    throw std::invalid_argument("overlap_param_gather: " + std::to_string(places.position.size() - covered) +
                                " of the stage's parameters are outside its embedding, layers, norm and lm_head");
  stage.before_forward = [order = std::move(gather), ends = std::move(last)](const torch::nn::Module& m) {
    const auto at = ends.find(&m);
    if (at == ends.end()) throw std::logic_error("overlap_param_gather: a module of no known place in the stage");
    order->wait_through(at->second);
  };
}

bool overlap_applies(const RankModel& model, const RunContext& ctx) {
  if (!ctx.group) return false;
  if (ctx.groups.dp->size() > 1) return true;
  return !model.expert_params.empty() && ctx.groups.edp->size() > 1;
}

}  // namespace recipebench::train
