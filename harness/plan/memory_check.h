// validate's memory check: a recipe whose plan (harness/plan/memory_plan.h) does not fit the GPU.
#pragma once

#include <optional>

#include "recipe/diagnostic.h"
#include "recipe/recipe.h"

namespace recipebench {

/// The plan of a validated recipe (model from the registry, bench.layers applied; planned on bench.device, else
/// CUDA) against its GPU's memory. Returns a diagnostic located at `layout.max_tokens_per_gpu` when the worst
/// rank does not fit, naming its peak and the largest term; nullopt when it fits or when the model is not in the
/// registry or the layout has no rank map (validate reports those itself). Reads `file` again for the location.
std::optional<Diagnostic> check_memory_fits(const Recipe& recipe, const std::string& file);

}  // namespace recipebench
