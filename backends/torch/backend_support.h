// What the torch backend runs, and its refusals of the rest: the checks that are specific to this backend. The
// layout's arithmetic (degrees dividing the world, heads, experts, microbatches) is the harness's
// (recipe/layout_check.h: require_layout); the backend asks it instead of repeating it.
#pragma once

#include "backend/backend.h"
#include "catalog/models.h"
#include "model/options.h"
#include "recipe/recipe.h"

namespace recipebench::torch_backend {

/// Refuses, with a RunError naming the field, the value and what the backend runs, what the torch backend does not
/// implement beyond its capability table (torch_backend_registration.h, checked once at admission: CP, ETP, the
/// recompute granularity, ...): TP > 1 without sequence parallel (the backend's TP is sequence parallel only); a
/// shared expert FFN or vocabulary not divisible by TP (sharded without padding; `model` may be null: then not
/// checked).
void check_backend_support(const Recipe& recipe, const ModelConfig* model);

/// The recipe's layout.recompute as the model's RecomputeOptions (granularity full: method uniform, groups of
/// num_layers consecutive layers recomputed as one unit, or block, the first num_layers layers recomputed; absent
/// method: uniform; absent or 0 num_layers: 1). Throws RunError for an unknown method, std::logic_error for a
/// granularity the capability table does not admit (selective: refused at admission, never reaching here).
torch_model::RecomputeOptions recompute_options(const RecipeLayout& layout);

/// Refuses a run whose ranks (options.place.world) are not the layout's world size TP x CP x DP x PP (RunError saying
/// how to start it).
void check_run_ranks(const Recipe& recipe, const RunOptions& options);

/// The resolved run's layout for the model that runs (settings/resolved_run.h), as a RunError naming the recipe's
/// layout: no rank map (harness/layout/rank_map.h: the layer split over PP and VPP, the expert grid, rows per
/// microbatch; `map_problem`), or a layout rule of recipe/layout_check.h broken for that model (`layout_problem`:
/// heads and experts against TP and EP, microbatches per DP rank, ...). Neither is worked out again here.
void check_resolved_layout(const ResolvedRun& run);

}  // namespace recipebench::torch_backend
