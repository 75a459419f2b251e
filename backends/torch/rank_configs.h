// The run's settings as the torch backend's components take them: one config per component (the way
// Megatron-Core's ModelParallelConfig and DistributedDataParallelConfig do), made once before any is built;
// nothing is patched after construction.
#pragma once

#include "model/options.h"
#include "optim/optimizer_builder.h"
#include "rank/model_builder.h"
#include "rank/run_context.h"
#include "recipe/recipe.h"
#include "settings/run_options.h"

namespace recipebench::torch_backend {

/// Each component's config for one rank.
struct RankConfigs {
  train::ParallelConfig parallel;             ///< place_rank: gradient groups, pipeline receives posted ahead
  torch_model::KernelOptions kernels;         ///< the layers: fused kernels or libtorch ops, recompute
  train::ModelParallelConfig model_parallel;  ///< build_rank_model: the EP dispatcher, the TP overlap
  train::OptimizerConfig optimizer;           ///< build_optimizer: gradient reduction, parameter gathers, kernels
};

/// The configs of a run of `recipe` with `settings` (bench.kernels, overlap_*, grad_reduce_bucket_elements,
/// ep_dispatch; layout.recompute). The fixed-capacity dispatcher's blocks hold the tokens one rank's MoE layer may
/// take in a microbatch: layout.max_tokens_per_gpu / TP (sequence parallel shards the tokens over TP;
/// docs/distributed.md, "Expert parallelism").
RankConfigs rank_configs(const Recipe& recipe, const RunSettings& settings);

}  // namespace recipebench::torch_backend
