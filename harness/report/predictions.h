// The leaderboard's predicted figures (docs/reports.md, "Predictions"): recipes that carry a `prediction` block
// (written by `recipebench plan`, docs/step-time.md) listed apart from measured results, never ranked with them; a
// recipe that also has a measured result shows the prediction's error.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "recipe/recipe.h"
#include "util/json.h"

namespace recipebench {

/// One recipe's prediction.
struct PredictedEntry {
  std::string file, model, gpu_type, layout_label, status;
  int gpus = 0;
  double tokens_per_s_per_gpu = 0;  ///< predicted
  double step_seconds = 0;          ///< predicted, s
  std::optional<double> mfu, usd_per_million_tokens, gpu_hours;
  std::string predicted, by;          ///< the day, what predicted it
  std::vector<std::string> profiles;  ///< the run records it rests on
  std::optional<double> stack_factor;
  std::optional<double> measured_tokens_per_s_per_gpu;  ///< the recipe's result, when measured
  /// predicted / measured - 1 (tokens/s/GPU), when measured.
  std::optional<double> error() const;
};

/// The predictions of `recipes` (those with a `prediction` block; recipes are schema-valid, so its required fields
/// are there), by model, GPU type, then predicted tokens/s/GPU, fastest first.
std::vector<PredictedEntry> predicted_entries(const std::vector<Recipe>& recipes);

/// {"file", "model", "gpu_type", "gpus", "layout", "status", "tokens_per_s_per_gpu", "step_seconds", "mfu",
/// "usd_per_million_tokens", "gpu_hours", "predicted", "by", "profiles", "stack_factor",
/// "measured_tokens_per_s_per_gpu", "error"} (absent figures null).
Json to_json(const PredictedEntry& e);

}  // namespace recipebench
