// What `predict` and `plan` share: the profiles read from run records, and the step-time model's inputs for a
// recipe (costs, GPU scale, network, the overlap switches).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "catalog/models.h"
#include "layout/rank_map.h"
#include "plan/compute_profile.h"
#include "plan/step_time.h"
#include "recipe/recipe.h"

namespace recipebench::cli {

/// The profiles of one model among the records given.
struct LoadedProfiles {
  std::vector<ProfiledRank> ranks;  ///< those of the model asked for
  std::vector<std::string> other;   ///< "file (model)": records of other models, left out
};

/// Reads each record (checked as `report` checks it) and keeps the profiles of the model named `model` (registry
/// name of the full model). Prints every located error; nullopt when a record is refused.
std::optional<LoadedProfiles> load_profiles(const std::vector<std::string>& files, const std::string& model);

/// The step-time model's inputs for `recipe`.
struct PredictSetup {
  UnitCosts costs;
  NetworkModel network;
  StepTimeOptions options;
};

/// Fits the profiles' unit costs (the step-time model carries them to the recipe's GPU, plan/gpu_scaling.h; a CPU
/// profile serves only a CPU recipe), takes the recipe's network and overlap switches. Throws
/// std::invalid_argument when the GPUs cannot be scaled or the network is unknown.
PredictSetup predict_setup(const Recipe& recipe, const LoadedProfiles& profiles, double stack_factor);

/// The `run --emulate-rank R --profile` command lines that measure one rank of each kind of `recipe`'s layout
/// (first, the middle one with the largest memory peak, last), on the recipe's own device (recipe_device: bench.device,
/// else CUDA for a GPU's gpu.type), so each runs as printed where the recipe runs; on CUDA with `--layers K` where
/// the stage's memory plan does not fit one H200. One indented line each.
std::string emulation_commands(const std::string& file, const Recipe& recipe, const ModelConfig& model,
                               const RankMap& map);

}  // namespace recipebench::cli
