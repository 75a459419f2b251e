// The optimizer of one rank's parameters, chosen from the layout: its members and the groups they reduce over.
#pragma once

#include <cstdint>
#include <memory>

#include "optim/grad_buckets.h"
#include "optim/optimizer.h"
#include "optim/param_gather.h"
#include "rank/model_builder.h"
#include "rank/run_context.h"
#include "recipe/recipe.h"

namespace recipebench::train {

/// How the distributed optimizers reduce their gradients (bench.overlap_grad_reduce and
/// bench.grad_reduce_bucket_elements; docs/distributed.md, "Overlap").
struct GradReduceOptions {
  /// Reduce-scatter the gradients in buckets launched during the last microbatch's backward pass (needs the
  /// context's grad_dp / grad_edp groups: place_rank with grad_groups); false: one reduce-scatter after the
  /// backward passes.
  bool overlap = false;
  int64_t bucket_elements = kDefaultGradBucketElements;  ///< elements per bucket (> 0), with overlap
};

/// The optimizer's part of the run's switches (Megatron-Core's DistributedDataParallelConfig): how the gradients are
/// reduced, the parameters gathered, and the updates computed.
struct OptimizerConfig {
  GradReduceOptions reduce;
  /// bench.overlap_param_gather: every DistributedAdam of more than one rank defers its all-gathers into the next
  /// step's forward passes, which wait for each module's own buckets (wait_for_param_gathers).
  bool overlap_param_gather = false;
  AdamKernels kernels = AdamKernels::kFused;  ///< bench.kernels: how every MixedPrecisionAdam computes on CUDA
};

/// The optimizer as `config` says, built by build_optimizer below; with config.overlap_param_gather the deferred
/// all-gathers' order, shared by its DistributedAdams, and `model`'s stage set to wait for them
/// (wait_for_param_gathers).
std::unique_ptr<Optimizer> build_optimizer(RankModel& model, const RunContext& ctx, const RecipeOptimizer& o,
                                           const OptimizerConfig& config);

/// The optimizer of `model`'s pipeline stage, a ChainedOptimizer (optim/chained_optimizer.h) whose norm is the
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
/// With reduce.overlap every DistributedAdam of more than one rank buckets its gradients and reduce-scatters them
/// over ctx.groups.grad_dp / grad_edp during the backward pass, all in one launch order (optim/grad_sync_order.h).
/// The state of every kind is sharded whenever the run has several ranks (no recipe field switches it; the
/// capability table's optimizer_sharding says dense over DP, experts over EDP). Throws std::invalid_argument when
/// reduce.overlap is set and a group it needs is missing. `kernels` (bench.kernels) selects how every
/// MixedPrecisionAdam computes on CUDA (optim/optimizer.h AdamKernels); the DistributedAdams use libtorch either way.
/// With `gather` (bench.overlap_param_gather) every DistributedAdam of more than one rank defers its all-gathers
/// into it, its buckets keyed by their parameters' places in the stage's parameters(); the stage's forward passes
/// must then wait for them (wait_for_param_gathers).
std::unique_ptr<Optimizer> build_optimizer(const RankModel& model, const RunContext& ctx, const RecipeOptimizer& o,
                                           const GradReduceOptions& reduce = {},
                                           AdamKernels kernels = AdamKernels::kFused,
                                           std::shared_ptr<ParamGatherOrder> gather = nullptr);

/// bench.overlap_param_gather: sets `model`'s stage to wait, right before the forward of its embedding, each decoder
/// layer, the final norm and lm_head, for the deferred all-gathers in `gather` of the buckets holding their
/// parameters (ParamGatherOrder::wait_through the module's last parameter in the stage's parameters()). Throws
/// std::invalid_argument when a parameter of the stage is in none of those modules (its bucket would be waited for
/// too late).
void wait_for_param_gathers(RankModel& model, std::shared_ptr<ParamGatherOrder> gather);

/// True when `reduce.overlap` (or a deferred parameter gather) changes anything for this rank: some DistributedAdam
/// has a group of several ranks (DP > 1, or EDP > 1 with the experts apart). False on one rank.
bool overlap_applies(const RankModel& model, const RunContext& ctx);

}  // namespace recipebench::train
