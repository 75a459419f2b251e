// `recipebench plan`'s search (docs/step-time.md, "Planning layouts"): every layout of a model on N GPUs that
// passes the layout check (recipe/layout_check.h) and whose memory plan fits the GPU (plan/memory_plan.h),
// predicted by the step-time model (plan/step_time.h) and ranked by tokens/s/GPU. Pure arithmetic, no libtorch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "catalog/models.h"
#include "plan/compute_profile.h"
#include "plan/memory_plan.h"
#include "plan/step_time.h"
#include "recipe/recipe.h"

namespace recipebench {

/// What the user asks for.
struct LayoutRequest {
  ModelConfig model;         ///< the model (every layer)
  std::string gpu;           ///< catalog GPU name ("B200")
  int count = 0;             ///< GPUs
  int per_node = 8;          ///< GPUs per node
  int64_t global_batch = 0;  ///< rows per optimizer step
  int64_t row_tokens = 0;    ///< tokens per row
  std::string instance;      ///< catalog instance ("AWS p6-b200.48xlarge"); empty: the GPU's default
};

/// The space searched: TP (1, 2, 4, 8 up to a node, sequence parallel when > 1), PP (every divisor of
/// count / TP up to the layers; the even split, and first = last stages lighter by whole layers where the rest
/// splits evenly), VPP (1..4 where every stage's layers divide), EP (divisors of the stage's ranks and of the
/// experts; ETP 1, CP 1: what the torch backend runs), DP = count / (TP PP), rows per microbatch (1, 2, 4, 8;
/// max tokens per GPU = rows x row tokens), recompute (none, full uniform 1 layer). Every switch the step-time model
/// prices is on where its own no-effect rule says it has an effect on the layout (settings/switches.h
/// engage_priced_switches), as `run` would apply it.
struct LayoutSpace {
  std::vector<int> tp{1, 2, 4, 8};
  std::vector<int> vpp{1, 2, 3, 4};
  std::vector<int> rows_per_microbatch{1, 2, 4, 8};
  bool try_recompute = true;
};

/// One layout that fits, predicted.
struct PlannedLayout {
  Recipe recipe;  ///< status proposed, the layout filled in, bench switches as predicted
  StepPrediction prediction;
  double peak_bytes = 0;  ///< the memory plan's worst rank
};

/// One layout that passed the layout check but not the memory plan.
struct MemoryMiss {
  Recipe recipe;
  double peak_bytes = 0;
  std::string largest_term;
};

/// The search's outcome.
struct LayoutSearch {
  std::vector<PlannedLayout> ranked;  ///< fitting layouts, fastest (tokens/s/GPU) first
  std::vector<MemoryMiss> closest;    ///< when few fit: the layouts over memory with the smallest peaks, 5 at most
  int64_t considered = 0, layout_ok = 0, fit = 0;
  std::vector<std::pair<std::string, int64_t>> refusals;  ///< layout-check problems (field path) and how often
  double gpu_memory_bytes = 0;
};

/// The recipe of a layout of `r` (status proposed) before the layout is set: model, GPU (memory and instance from
/// the catalog), workload (synthetic rows, bf16). Throws std::invalid_argument for a GPU the catalog does not know.
Recipe base_recipe(const LayoutRequest& r);

/// Searches `space` for `r`, predicting each layout that fits from `costs` (unit costs of the model's profile,
/// already scaled by options.scale to the request's GPU) on `network`. Throws std::invalid_argument for a request
/// with no GPUs, rows or batch, or a GPU the catalog does not know.
LayoutSearch search_layouts(const LayoutRequest& r, const UnitCosts& costs, const NetworkModel& network,
                            const StepTimeOptions& options, const LayoutSpace& space = {});

/// "TP2 PP8 VPP2 EP8 DP4" (+ " first 6 / last 6" with an uneven split).
std::string layout_label(const RecipeLayout& l);

}  // namespace recipebench
