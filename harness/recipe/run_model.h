// The model that runs (docs/metrics.md: N_active counts the model that actually ran): one derivation for the run
// driver, the result check, the memory check and the leaderboard.
#pragma once

#include <cstdint>
#include <optional>

#include "catalog/models.h"
#include "recipe/recipe.h"

namespace recipebench {

/// The model a run builds (`model`) and the one it comes from (`full`, every layer).
struct RunModel {
  ModelConfig full, model;
};

/// The model `recipe` runs: widths from `widths` (a --model-config config.json) when given, else the registry's
/// model named recipe.model; `layers` decoder layers when given (--layers), else recipe.bench.layers when the
/// recipe sets it (a proxy run), else every layer. nullopt when no widths are given and the registry does not know
/// the model.
std::optional<RunModel> run_model(const Recipe& recipe, const std::optional<int64_t>& layers = std::nullopt,
                                  const ModelConfig* widths = nullptr);

}  // namespace recipebench
