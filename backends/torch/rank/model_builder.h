// The one place where a run's parameters are created: the one-rank model laid out on the meta device (no memory),
// its TP shards, this rank's pipeline stage and its experts' EP shard taken (TorchTitan's parallelize order), then
// only this rank's shards allocated on its device in its dtype and filled by the rank-local, layout-independent
// initialisation of docs/initialization.md (model/param_init.h).
#pragma once

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>
#include <torch/types.h>

#include <memory>
#include <string>
#include <vector>

#include "catalog/models.h"
#include "dist/parallel_groups.h"
#include "layout/rank_map.h"
#include "model/options.h"
#include "model/pipeline_stage.h"
#include "model/tensor_parallel.h"
#include "rank/run_context.h"

namespace recipebench::train {

/// Where a parameter of the one-rank model went.
struct ParamInfo {
  std::string name;            ///< Hugging Face name in the one-rank model, e.g. "model.layers.3.mlp.gate.weight"
  std::vector<int64_t> shape;  ///< in the one-rank model (experts and TP shards whole)
  int stage = 0;               ///< the pipeline rank holding it; -1: none (an emulated rank's stage cut by --layers)
};

/// This rank's part of the model and how it maps onto the one-rank model.
struct RankModel {
  torch_model::PipelineStage stage{nullptr};      ///< this rank's pipeline stage, on its device and dtype
  std::vector<ParamInfo> param_info;              ///< every one-rank parameter, in its parameters() order
  std::vector<std::string> stage_param_names;     ///< the global name of each of stage->parameters(), in order
  std::shared_ptr<dist::GroupTensorParallel> tp;  ///< the model's TP group; null when TP = 1 (or shapes only)
  std::vector<torch_model::TpParam> tp_params;    ///< the TP-sharded parameters and their layouts
  std::shared_ptr<dist::GroupExpertParallel> ep;  ///< the experts' EP group; null when EP = 1 (or shapes only)
  /// The routed experts' parameters, kept apart from the dense ones when EP > 1 or TP > 1 (the EP or TP ranks
  /// route different tokens: their gradients are summed over EDP); empty otherwise.
  std::vector<torch::Tensor> expert_params;

  /// `p` is one of expert_params.
  bool is_expert(const torch::Tensor& p) const;
  /// The TP layout of `p`, or nullptr when `p` is not TP-sharded.
  const torch_model::TpShardSpec* tp_spec(const torch::Tensor& p) const;
};

/// How the model's parallel parts communicate (Megatron-Core's ModelParallelConfig's part of the run's switches).
struct ModelParallelConfig {
  /// bench.ep_dispatch: the routed experts' dispatcher over EP (RoutedExpertsImpl::shard); no effect with EP 1.
  torch_model::EpDispatchOptions ep_dispatch;
  /// bench.overlap_tp_comm: under tensor parallelism the column-parallel projections reduce-scatter their input's
  /// gradient while they compute their weight gradients, and the shared expert's forward reduce-scatter runs while
  /// the routed experts compute (model/tensor_parallel.h, dist::GroupTensorParallel); no effect with TP 1.
  bool overlap_tp_comm = false;
};

/// Builds this rank's part of `model`: with TP its TP shards; its pipeline stage (the embedding on the first stage,
/// the layers of its virtual stages from the rank map, the final norm and lm_head on the last); with EP > 1 its
/// E / EP experts of each MoE layer. Only those shards are allocated, on ctx.device in ctx.dtype, with the values
/// of docs/initialization.md under `seed` (the same global tensors for every layout), in training mode. Throws
/// c10::Error when a dimension does not shard. `parallel` says how its TP and EP
/// parts communicate.
RankModel build_rank_model(const ModelConfig& model, const torch_model::KernelOptions& kernels,
                           const ModelParallelConfig& parallel, uint64_t seed, const RunContext& ctx);

/// Rank `me` of `map`'s part of `model` on the meta device: every parameter with its shard's shape and no memory
/// (no process group: the TP and EP shards come from me's coordinates). For checking a layout's shapes and sizes
/// at full scale on any machine. Throws c10::Error when a dimension does not shard.
RankModel build_rank_shapes(const ModelConfig& model, const RankMap& map, const RankPlacement& me);

}  // namespace recipebench::train
