// The step-time model (docs/step-time.md): a recipe's layout played from a measured compute profile
// (plan/compute_profile.h), its collectives timed by the alpha-beta model on the links the rank map places them on
// (plan/collective_time.h), and its pipeline by the project's own schedules played in time
// (schedule/pipeline_timing.h). Predicts the step time, tokens/s/GPU, MFU, $ per 1M tokens and GPU-hours, with a
// breakdown and every assumption it made. Pure arithmetic, no libtorch.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "catalog/hardware.h"
#include "catalog/models.h"
#include "layout/rank_map.h"
#include "plan/collective_time.h"
#include "plan/compute_profile.h"
#include "plan/gpu_scaling.h"
#include "plan/memory_plan.h"
#include "recipe/recipe.h"
#include "settings/run_options.h"

namespace recipebench {

/// The links collectives run on.
struct NetworkModel {
  Link nvlink;        ///< within a node
  Link node_network;  ///< across nodes, the whole node's bandwidth (group_link shares it per GPU)
  int gpus_per_node = 8;
  std::string source;  ///< where the figures come from, for the assumptions
};

/// The network of a recipe's cluster: NVLink of gpu.type from the catalog; across nodes the recipe's
/// stack.network when it states a rate ("3.2 Tb/s ... per node", "400 Gb/s per GPU"), else its instance's (or the
/// GPU's default instance's) catalog figure; GPUs per node from gpu.per_node (else the instance's). Throws
/// std::invalid_argument when the GPU is not in the catalog or no inter-node figure is known for a layout that
/// needs one (more GPUs than one node).
NetworkModel recipe_network(const Recipe& recipe);

/// What the model is told beside the recipe.
struct StepTimeOptions {
  double stack_factor = 1;  ///< multiplies every compute second (a stack's speed against the profiled one's)
  /// The run's effective settings (the recipe's bench block and the command line merged by the switch table,
  /// settings/switches.h): the priced switches (SwitchPricing::kPriced, the overlaps) say what may hide behind what
  /// (docs/step-time.md).
  RunSettings settings;
};

/// Where one pipeline rank's step goes, seconds per step (the parts add up to the rank's step).
struct RankStepTime {
  int pp_rank = 0;
  ComponentCells compute{};  ///< every pass's compute by component (all phases)
  double recompute = 0;      ///< of compute, the recompute phase's
  double tp_exposed = 0;     ///< TP all-gathers / reduce-scatters on the passes' critical path
  double ep_exposed = 0;     ///< EP dispatch and combine (all-to-alls, the allgather or flex dispatcher's; ETP's)
  double cp_exposed = 0;     ///< CP's ring exchange of keys and values not hidden behind the attention layers
  double pipeline_idle = 0;  ///< waiting for a neighbour: bubble and exposed transfers
  double p2p_wait = 0;       ///< of pipeline_idle, waits for transfers after the input was sent
  double dp_exposed = 0;     ///< gradient reduce-scatters and parameter all-gathers not hidden (DP and EDP)
  double optimizer = 0;      ///< the optimizer's step on the rank's shard
  double step = 0;           ///< the sum of the above
  double forward_pass = 0, backward_pass = 0;  ///< mean pass seconds over the rank's chunks (compute + exposed)
};

/// The prediction.
struct StepPrediction {
  double step_seconds = 0;
  double tokens_per_step = 0;  ///< global batch x row tokens
  double tokens_per_s_per_gpu = 0;
  std::optional<double> mfu;                     ///< 6N rule at the recipe GPU's dense BF16 peak
  std::optional<double> usd_per_million_tokens;  ///< at the recipe's (else the catalog's) GPU-hour price
  double gpu_hours = 0;  ///< of steps_per_run steps (the recipe's result.steps_per_run, else 20): steps only
  int steps_for_gpu_hours = 20;
  int critical_pp_rank = 0;              ///< the pipeline rank that ends last
  std::vector<RankStepTime> ranks;       ///< per pipeline rank
  std::vector<std::string> assumptions;  ///< each figure and rule the prediction rests on
  /// How the profiles were carried from their GPU to the recipe's, operation by operation (plan/gpu_scaling.h);
  /// nullopt on the profiles' own GPU (and on the CPU).
  std::optional<GpuScaling> gpu_scaling;
};

/// The scaling from the profiles' GPU (costs.gpu) to the recipe's gpu.type at the recipe's chunk shape
/// (per_operation_scaling with the process's catalog), nullopt when they are the same GPU or the CPU. Throws
/// std::invalid_argument when either GPU is not in the catalog.
std::optional<GpuScaling> scaling_to_recipe(const Recipe& recipe, const ModelConfig& model, const RankMap& map,
                                            const UnitCosts& costs);

/// The step-time model's refusal of a prediction past physics: a step that is not a finite time > 0 s, or one whose
/// MFU is above 100% of the GPU's dense BF16 peak (docs/step-time.md, "Refusals"). what() says the figure and what
/// timed it (the profiles, the analytical mode's catalog efficiencies, a stack factor); the command places it (the
/// `--stack-factor` value on the command line where one was given, else the recipe).
struct BeyondPhysics : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

/// Predicts one step of `recipe` (validated) on `map` (its rank map for `model`, the model that runs) from
/// `costs`, timed on `network`. Per pipeline rank and chunk: the forward and backward passes' compute
/// (pass_cells, x the per-operation scaling_to_recipe x stack_factor; recompute as layout.recompute says), plus their exposed TP and EP
/// collectives; the pipeline by time_pipeline with the PP transfers on their links; then each rank's DP / EDP
/// reduce-scatter and all-gather (what the overlap switches do not hide) and its optimizer step; the step is the
/// rank that ends last. Throws std::invalid_argument when the profile lacks a component the layout runs, or the
/// schedule cannot be played (pipeline_schedule's errors); BeyondPhysics when the figures are past physics.
StepPrediction predict_step(const Recipe& recipe, const ModelConfig& model, const RankMap& map, const UnitCosts& costs,
                            const NetworkModel& network, const StepTimeOptions& options = {});

/// The parameters pipeline rank `pp`'s optimizers hold (every TP / DP / EP rank of a stage alike): the dense ones
/// (with the experts when the plan keeps them in the dense distributed optimizer: EP 1 and TP 1) sharded over DP,
/// the experts apart sharded over EDP (plan.expert_state_shards). Elements. Throws std::out_of_range for pp outside
/// the plan.
struct OptimizerShards {
  double dense = 0, experts = 0;            ///< parameters on the rank (its TP shard, its experts)
  int dense_groups = 1, expert_groups = 1;  ///< DP, EDP: the shards they are cut into
  /// The parameters whose state the rank updates: dense / DP + experts / EDP.
  double shard_params() const { return dense / dense_groups + experts / expert_groups; }
};
OptimizerShards optimizer_shards(const MemoryPlan& plan, const RankMap& map, int pp);

/// The fraction of a chunk's decoder layers recomputed whole in its backward pass: full/uniform 1; full/block
/// min(num_layers, chunk layers) / chunk layers; selective 0 (no layer whole: its modules are priced apart, plan/
/// selective_recompute.h); none 0.
double recompute_fraction(const RecipeRecompute& r, int64_t chunk_layers);

}  // namespace recipebench
