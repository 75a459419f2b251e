// validate's memory check: a recipe whose plan (harness/plan/memory_plan.h) does not fit the GPU, located at the
// layout field that would fix the plan's largest term, and whose plan it is.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "catalog/models.h"
#include "plan/memory_plan.h"
#include "recipe/diagnostic.h"
#include "recipe/recipe.h"

namespace recipebench {

/// Why the memory plan (recipebench's torch backend) is not the memory of the stack the recipe is meant for, naming
/// the field that says so: "it runs on the command backend (bench.backend)", "it was measured with slime with local
/// patches, not pinned (stack.framework)". Empty when the recipe is meant for the torch backend: bench.backend absent
/// or torch, and no other training stack in stack.framework or stack.megatron_lm.
std::string plan_not_modelled_reason(const Recipe& recipe);

/// One change of one layout field and the plan it gives: `field` ("layout.pp"), the new value as text ("8"), the GPUs
/// of the changed layout, the worst rank's peak (bytes) and whether it fits the GPU.
struct LayoutFix {
  std::string field, value;
  int64_t gpus = 0;
  double peak = 0;
  bool fits = false;
};

/// The layout fields that act on the largest term of `plan` (the plan of `recipe` for `model` run as `o` says), each
/// with its best one-field change: the first value that fits, else the one with the lowest peak. States (parameters,
/// gradients, optimizer): layout.pp (up to twice), layout.ep (x2, x4), layout.dp (x2: optimizer shards); activations:
/// layout.recompute (full when none), layout.max_tokens_per_gpu (halved down to one row), layout.pp; the loss's
/// transients: layout.max_tokens_per_gpu, layout.tp (x2). A change that breaks the layout arithmetic
/// (docs/layout-arithmetic.md) is skipped; a field without a valid change is left out. Fitting fixes first.
std::vector<LayoutFix> layout_fixes(const Recipe& recipe, const ModelConfig& model, const PlanOptions& o,
                                    const MemoryPlan& plan);

/// The plan of a validated recipe (model from the registry, bench.layers applied; planned on the recipe's device:
/// recipe_device) against its GPU's memory. Returns a diagnostic when the worst rank does not fit, naming its peak,
/// the largest term and the layout changes that would make it fit (layout_fixes), located at the first fix's field
/// (else at layout); nullopt when it fits or when the model is not in the registry or the layout has no rank map
/// (validate reports those itself). A model of another config.json family gets the analytical plan of the recipe's own
/// stack (MemoryPlan::analytical); a model known by its stated counts only has no widths and is not planned: a warning
/// at model saying so. Its severity is "error" only when `strict` and the plan is the torch backend's of a recipe meant
/// for it (plan_not_modelled_reason empty); otherwise "warning", saying whose plan it is (the analytical plan: formulas
/// never held against a measured peak, so a warning also with --strict). The peak fits with `reserve` beside it (nullopt: measured_reserve of the recipe's device;
/// plan/memory_plan.h fits_with_reserve, the rule plan and run apply). Reads `file` again for the location.
std::optional<Diagnostic> check_memory_fits(const Recipe& recipe, const std::string& file, bool strict = false,
                                            const std::optional<MemoryReserve>& reserve = std::nullopt);

}  // namespace recipebench
