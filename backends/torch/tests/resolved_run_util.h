// Tests' resolved runs (settings/resolved_run.h) of recipes built in code: what the run driver hands a backend.
#pragma once

#include <stdexcept>

#include "recipe/run_model.h"
#include "settings/resolved_run.h"

namespace recipebench::test {

/// The resolved run of `recipe` with `options` (already merged), its model the registry's at
/// options.settings.layers. `recipe` must outlive the result. Throws std::invalid_argument for a model outside the
/// registry.
inline ResolvedRun resolved(const Recipe& recipe, const RunOptions& options = {}) {
  std::optional<RunModel> model = run_model(recipe, options.settings.layers);
  if (!model) throw std::invalid_argument("no model " + recipe.model);
  return resolve_run(recipe, options, *model);
}

}  // namespace recipebench::test
