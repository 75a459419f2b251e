// validate's check of a recipe's model and its parameter counts (docs/metrics.md, "Models outside the registry"):
// a registry model, a model_params.config, or counts stated with their source.
#pragma once

#include <optional>

#include "recipe/diagnostic.h"
#include "recipe/recipe.h"
#include "recipe/run_model.h"
#include "recipe/source_doc.h"

namespace recipebench {

/// The model a recipe runs (run_model) and what validate says about it.
struct ModelCheck {
  std::optional<RunModel> ran;  ///< nullopt when the recipe gives no model validate can count
  Diagnostics errors;           ///< located problems (the recipe fails)
  Diagnostics warnings;         ///< what is not checked and why (severity "warning")
};

/// Resolves the recipe's model (run_model) and checks its counts, located in `src`:
/// - model_params.config that cannot be read or counted: an error at model_params.config carrying the config's own
///   located error;
/// - a model neither in the registry nor given by a config.json nor with stated counts: an error at model, naming
///   the registry's models and the fields that would give its counts;
/// - stated counts without their source (model_params.source, result.active_params.source), a stated total below the
///   stated active count, model_params.active and result.active_params.count that differ (no bench.layers), or a
///   proxy (bench.layers) of a model known by model_params.active only: errors at the field;
/// - stated counts of a model the formula counts (registry or config.json) that differ from the formula's: errors at
///   model_params.active / total (result.active_params.count is check_result's);
/// - a model known by its stated counts only: a warning at model that the layout arithmetic on its heads, experts
///   and layers is not checked (with "did you mean" when the name is near a registry model's).
ModelCheck check_model(const Recipe& r, const SourceDoc& src);

}  // namespace recipebench
