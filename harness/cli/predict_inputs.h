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
#include "settings/resolved_run.h"

namespace recipebench::cli {

/// The profiles of one model among the records given.
struct LoadedProfiles {
  std::vector<ProfiledRank> ranks;         ///< those of the model asked for
  std::vector<ProfiledRank> family_ranks;  ///< those of other models (other sizes of the torch backend's family)
  std::vector<std::pair<std::string, std::string>> other;  ///< (file, model): records of other models
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

/// The settings a recipe is predicted with: the resolved run's (the bench block with the command line's over it),
/// and for a recipe run by its own command the priced switches its `run:` command sets (plan/megatron_command.h
/// command_switches). predict and --calibrate both read them here.
RunSettings predicted_settings(const ResolvedRun& run, const Recipe& recipe);

/// The network, stack factor and switches of predict_setup, with no costs (a CPU recipe's stand-in link, else
/// recipe_network). Throws std::invalid_argument as recipe_network does.
PredictSetup predict_setup_network(const Recipe& recipe, double stack_factor);

/// The step-time model's inputs from what is known (docs/step-time.md, "Modes"): the profiles of the model when
/// given (predict_setup); else the profiles of another size of its family, their seconds per unit of work taken as
/// the model's (said in the notes); else no profile at all: the analytical mode (plan/analytical_costs.h) on the
/// recipe's GPU at `shape` (a chunk of the recipe's layout: its tokens, row tokens, TP and EP). Throws
/// std::invalid_argument as predict_setup and analytical_costs do.
PredictSetup prediction_setup(const Recipe& recipe, const ModelConfig& model, const ChunkShape& shape,
                              const LoadedProfiles& loaded, double stack_factor);

/// The `run --emulate-rank R --profile` command lines that measure one rank of each kind of `recipe`'s layout
/// (first, the middle one with the largest memory peak, last), on the recipe's own device (recipe_device: bench.device,
/// else CUDA for a GPU's gpu.type), so each runs as printed where the recipe runs; on CUDA with `--layers K` where
/// the stage's memory plan does not fit one H200. One indented line each.
std::string emulation_commands(const std::string& file, const Recipe& recipe, const ModelConfig& model,
                               const RankMap& map);

}  // namespace recipebench::cli
