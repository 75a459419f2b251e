// The optimizer of one rank's parameters, chosen from the layout: its members and the groups they reduce over.
#pragma once

#include <memory>

#include "recipe/recipe.h"
#include "train/model_builder.h"
#include "train/optimizer.h"
#include "train/run_context.h"

namespace recipebench::train {

/// The optimizer of `model`'s pipeline stage, a ChainedOptimizer (train/chained_optimizer.h) whose norm is the
/// one-rank run's (replicated parameters counted once, TP and EP shards summed over their groups, the pipeline's
/// stages together):
/// - one rank: one MixedPrecisionAdam over every parameter;
/// - several: a DistributedAdam (sharded over the stage's DP group) over the dense parameters replicated over TP
///   (their gradients are partial sums over this rank's sequence shard under sequence parallel: summed over TP
///   first), another over the TP-sharded ones (TP > 1; norms summed over TP), and, when the routed experts are apart
///   (RankModel::expert_params: EP > 1 or TP > 1), a DistributedAdam over the expert-data-parallel group when
///   EDP > 1 (gradients reduce-scattered over EDP, FP32 masters and moments of 1 / EDP of the experts per rank,
///   updated experts all-gathered; Megatron-LM's distributed optimizer for experts), else a MixedPrecisionAdam
///   (nothing replicated); their norms summed over EP.
/// The state of every kind is sharded whenever the run has several ranks (no recipe field switches it; the
/// capability table's optimizer_sharding says dense over DP, experts over EDP).
std::unique_ptr<Optimizer> build_optimizer(const RankModel& model, const RunContext& ctx, const RecipeOptimizer& o);

}  // namespace recipebench::train
