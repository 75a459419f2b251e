// The one place where a run's parameters are created and sharded: the one-rank model, then its TP shards, then
// this rank's pipeline stage, then its experts' EP shard, in that order (TorchTitan's parallelize order).
#pragma once

#include <torch/types.h>

#include <memory>
#include <vector>

#include "catalog/models.h"
#include "dist/parallel_groups.h"
#include "model/options.h"
#include "model/pipeline_stage.h"
#include "model/tensor_parallel.h"
#include "train/run_context.h"

namespace recipebench::train {

/// Where a parameter of the one-rank model went.
struct ParamInfo {
  std::vector<int64_t> shape;  ///< in the one-rank model (experts and TP shards whole)
  int stage = 0;               ///< the pipeline rank holding it
};

/// This rank's part of the model and how it maps onto the one-rank model.
struct RankModel {
  torch_model::PipelineStage stage{nullptr};      ///< this rank's pipeline stage, on its device and dtype
  std::vector<ParamInfo> param_info;              ///< every one-rank parameter, in its parameters() order
  std::shared_ptr<dist::GroupTensorParallel> tp;  ///< the model's TP group; null when TP = 1
  std::vector<torch_model::TpParam> tp_params;    ///< the TP-sharded parameters and their layouts
  std::shared_ptr<dist::GroupExpertParallel> ep;  ///< the experts' EP group; null when EP = 1
  /// The routed experts' parameters, kept apart from the dense ones when EP > 1 or TP > 1 (the EP or TP ranks
  /// route different tokens: their gradients are summed over EDP); empty otherwise.
  std::vector<torch::Tensor> expert_params;

  /// `p` is one of expert_params.
  bool is_expert(const torch::Tensor& p) const;
  /// The TP layout of `p`, or nullptr when `p` is not TP-sharded.
  const torch_model::TpShardSpec* tp_spec(const torch::Tensor& p) const;
};

/// Builds this rank's part of `model` (every rank builds the one-rank model from `seed`, so every part starts with
/// the one-rank run's values): with TP every TP rank keeps its shards; this rank keeps its pipeline stage (the
/// embedding on the first stage, the layers of its virtual stages from the rank map, the final norm and lm_head on
/// the last; the other stages' layers are freed); with EP > 1 its E / EP experts of each MoE layer. Then the stage
/// moves to ctx.device and ctx.dtype, in training mode. Throws c10::Error when a dimension does not shard.
RankModel build_rank_model(const ModelConfig& model, const torch_model::KernelOptions& kernels, uint64_t seed,
                           const RunContext& ctx);

}  // namespace recipebench::train
