// The model that runs (docs/metrics.md: N_active counts the model that actually ran): one derivation for the run
// driver, the result check, the memory check and the leaderboard.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "catalog/models.h"
#include "recipe/recipe.h"

namespace recipebench {

/// Where a model's parameter counts come from (docs/metrics.md, "Models outside the registry"), a closed set: the
/// registry's formula, a config.json's formula (--model-config or model_params.config), or the recipe's stated counts
/// (model_params.active / total, result.active_params.count).
enum class CountsFrom { kRegistry, kConfig, kStated };

/// The model a run builds (`model`) and the one it comes from (`full`, every layer), and where their counts come
/// from: `counts_note` says it for messages and reports ("counted by the registry's formula for Qwen3.5-397B-A17B",
/// "counted by the llama formula from models/llama-3.1-8b.json", "stated: result.active_params.count (https://...)").
struct RunModel {
  ModelConfig full, model;
  CountsFrom counts_from = CountsFrom::kRegistry;
  std::string counts_note;
};

/// The model `recipe` runs: widths from `widths` (a --model-config config.json) when given, else from
/// model_params.config (read by load_hf_config, its path relative to the recipe's folder), else the registry's model
/// named recipe.model, else a ModelFamily::kStated model of the recipe's stated counts (result.active_params.count,
/// else model_params.active; model_params.total); `layers` decoder layers when given (--layers), else
/// recipe.bench.layers when the recipe sets it (a proxy run), else every layer (stated counts are those of the model
/// that ran, whatever its layers). nullopt when none of these gives the model. Throws std::invalid_argument (the
/// located load_hf_config error) when model_params.config cannot be read or counted.
std::optional<RunModel> run_model(const Recipe& recipe, const std::optional<int64_t>& layers = std::nullopt,
                                  const ModelConfig* widths = nullptr);

/// The path of the recipe's model_params.config: relative to the recipe file's folder (as written when absolute).
/// nullopt when the recipe names none.
std::optional<std::string> model_config_path(const Recipe& recipe);

}  // namespace recipebench
