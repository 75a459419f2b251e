// `recipebench plan`'s search (docs/step-time.md, "Planning layouts"): every layout of a model on N GPUs that
// passes the layout check (recipe/layout_check.h) and whose memory plan fits the GPU (plan/memory_plan.h),
// predicted by the step-time model (plan/step_time.h) and ranked by tokens/s/GPU. Pure arithmetic, no libtorch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "catalog/models.h"
#include "plan/compute_profile.h"
#include "plan/memory_plan.h"
#include "plan/step_time.h"
#include "recipe/layout_check.h"  // layout_label: a proposal is named by its fields
#include "recipe/recipe.h"

namespace recipebench {

/// The optimizer-state forms plan searches (docs/optimizer.md, "Precision-aware state"), which the torch backend and
/// Megatron-LM both run: FP32 masters and moments (18 bytes of state and gradient per BF16 parameter, unsharded);
/// BF16 + remainder masters (Megatron-LM's --use-precision-aware-optimizer: the same FP32 value bit for bit, 2 bytes
/// less); BF16 + remainder masters and BF16 moments (--exp-avg-dtype / --exp-avg-sq-dtype bf16: 6 bytes less, the
/// moments rounded). A closed set, tried in this order for each layout: the first whose plan fits is proposed.
enum class OptimizerForm { kFp32, kBf16Remainder, kBf16Moments };

/// "fp32", "bf16_remainder", "bf16_moments" (the names of `plan --optimizer-state`).
const char* to_string(OptimizerForm f);
/// The form named `name` (to_string's names), nullopt for another name.
std::optional<OptimizerForm> optimizer_form_named(const std::string& name);
/// `o` with the state fields of form `f` (master_weights, exp_avg_dtype, exp_avg_sq_dtype); the rest unchanged.
RecipeOptimizer with_optimizer_form(RecipeOptimizer o, OptimizerForm f);

/// What the user asks for.
struct LayoutRequest {
  ModelConfig model;         ///< the model (every layer)
  std::string gpu;           ///< catalog GPU name ("B200")
  int count = 0;             ///< GPUs
  int per_node = 8;          ///< GPUs per node
  int64_t global_batch = 0;  ///< rows per optimizer step
  int64_t row_tokens = 0;    ///< tokens per row
  std::string instance;      ///< catalog instance ("AWS p6-b200.48xlarge"); empty: the GPU's default
  /// The config.json the model was read from (plan --model-config; an absolute path), written into each proposal
  /// as model_params.config so that validate and predict find the model again; empty for a registry model.
  std::string model_config;
  /// Held back beside each layout's planned peak (plan/memory_plan.h); nullopt: measured_reserve(CUDA).
  std::optional<MemoryReserve> reserve;
};

/// The module sets of selective recompute the search tries, as Megatron-LM users set --recompute-modules for
/// memory: core_attn (Megatron-Core's default); core_attn, layernorm, moe_act; moe_act; layernorm, moe_act.
const std::vector<std::vector<RecomputeModule>>& selective_module_sets();

/// Those of selective_module_sets whose every module the memory plan prices for `m`'s family
/// (recompute_module_priced, plan/activation_memory.h), without moe_act for a model without experts (it frees
/// nothing there): Qwen3.5 core_attn alone, a config.json family all four (a dense one core_attn).
std::vector<std::vector<RecomputeModule>> searched_selective_modules(const ModelConfig& m);

/// The space searched (docs/step-time.md, "Planning layouts"), with its pruning rules, each stated in plan's output
/// (pruning_rules): TP (1, 2, 4, 8 up to the NVLink domain, sequence parallel when > 1); CP (powers of two) only
/// where a row has at least `cp_from_row_tokens` tokens, each CP rank keeping `cp_min_rank_tokens` or more, with one
/// row per microbatch; PP (every divisor of GPUs / (TP CP) up to the layers; the even layer split, and first = last
/// stages lighter by whole layers where the rest splits evenly); VPP (every degree up to `max_vpp`, 0: no bound,
/// where every stage's layers divide: up to one layer per virtual stage); ETP 1 and, with TP > 1, ETP = TP; EP
/// (divisors of the stage's GPUs / ETP and of the experts); the dispatcher (EP > 1: alltoall; allgather where ETP x
/// EP stays within the NVLink domain; flex (DeepEP) where it spans more than one); DP = GPUs / (TP CP PP);
/// rows per microbatch (max tokens per GPU = rows x row tokens); recompute none, and only where none does not fit:
/// selective of each module set of searched_selective_modules, full block with the fewest layers per stage that fit, full uniform 1 layer; the optimizer-state forms
/// (the first of `optimizer_forms` whose plan fits, with the reserve beside the peak). Every switch the step-time model
/// prices is on where its own no-effect rule says it has an effect on the layout (settings/switches.h
/// engage_priced_switches), as `run` would apply it.
struct LayoutSpace {
  std::vector<int> tp{1, 2, 4, 8};
  int max_vpp = 0;
  std::vector<int> rows_per_microbatch{1, 2, 4, 8};
  bool try_recompute = true;
  bool try_cp = true, try_etp = true;
  int64_t cp_from_row_tokens = 16384;  ///< CP > 1 only for rows of at least this many tokens
  int64_t cp_min_rank_tokens = 4096;   ///< and at most row_tokens / this
  std::vector<Dispatcher> dispatchers{Dispatcher::kAlltoall, Dispatcher::kAllgather, Dispatcher::kFlex};
  std::vector<OptimizerForm> optimizer_forms{OptimizerForm::kFp32, OptimizerForm::kBf16Remainder,
                                             OptimizerForm::kBf16Moments};
};

/// One layout that fits, predicted.
struct PlannedLayout {
  Recipe recipe;  ///< status proposed, the layout filled in, bench switches as predicted
  StepPrediction prediction;
  double peak_bytes = 0;                                ///< the memory plan's worst rank
  double reserve_bytes = 0;                             ///< the reserve beside that peak
  OptimizerForm optimizer_form = OptimizerForm::kFp32;  ///< the state form planned (also in recipe.optimizer)
};

/// One layout that passed the layout check but not the memory plan.
struct MemoryMiss {
  Recipe recipe;
  double peak_bytes = 0;        ///< with the last form of the space tried (the smallest state)
  double reserve_bytes = 0;     ///< the reserve beside that peak
  bool inside_reserve = false;  ///< the peak fits the memory, not with the reserve beside it
  std::string largest_term;
  OptimizerForm optimizer_form = OptimizerForm::kFp32;
};

/// The search's outcome.
struct LayoutSearch {
  std::vector<PlannedLayout> ranked;  ///< fitting layouts, fastest (tokens/s/GPU) first
  std::vector<MemoryMiss> closest;    ///< when few fit: the layouts over memory with the smallest peaks, 5 at most
  int64_t considered = 0, layout_ok = 0;
  int64_t fit = 0;        ///< layouts that fit the memory plan (with the reserve), each recompute choice one layout
  int64_t predicted = 0;  ///< of those, the layouts the step-time model predicted (ranked.size())
  int64_t inside_reserve = 0;  ///< layouts whose peak fits the memory but not with the reserve beside it
  std::vector<std::pair<std::string, int64_t>> refusals;  ///< layout-check problems (field path) and how often
  /// Why layouts that fit the memory plan were not predicted (predict_step's message, e.g. a component no profile
  /// measured) and how often, most frequent first; empty when every fitting layout was predicted.
  std::vector<std::pair<std::string, int64_t>> unpredicted;
  double gpu_memory_bytes = 0;
  MemoryReserve reserve;  ///< the reserve applied
  int nvlink_gpus = 0;    ///< TP's bound: the GPUs NVLink joins (the node, or the instance's NVLink domain)
};

/// The recipe of a layout of `r` (status proposed) before the layout is set: model, GPU (memory and instance from
/// the catalog), workload (synthetic rows, bf16). Throws std::invalid_argument for a GPU the catalog does not know.
Recipe base_recipe(const LayoutRequest& r);

/// Searches `space` for `r`, predicting each layout that fits from `costs` (unit costs of the model's profile,
/// already scaled by options.scale to the request's GPU) on `network`. Throws std::invalid_argument for a request
/// with no GPUs, rows or batch, or a GPU the catalog does not know.
LayoutSearch search_layouts(const LayoutRequest& r, const UnitCosts& costs, const NetworkModel& network,
                            const StepTimeOptions& options, const LayoutSpace& space = {});

/// The space `space` spans for a search whose TP is bounded by `nvlink_gpus`, one line per dimension in words
/// ("TP 1, 2, 4, 8 (within one scale-up domain ...: 8 GPUs; ...)", ...): what `plan` prints as searched.
std::vector<std::string> searched_dimensions(const LayoutSpace& space, int nvlink_gpus);

/// The rules that prune `space` for rows of `row_tokens` (CP by row length, the dispatchers by the EP group's span,
/// recompute only where none does not fit, ...), one line each with why: what `plan` prints as pruned.
std::vector<std::string> pruning_rules(const LayoutSpace& space, int64_t row_tokens);

/// What the search leaves out, one line each with why (offload, TP beyond the NVLink domain, ETP other than 1 and TP,
/// recompute uniform of several layers, FP32 masters with BF16 moments).
std::vector<std::string> left_out_dimensions();

}  // namespace recipebench
