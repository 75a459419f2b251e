// The leaderboard's predicted figures (docs/reports.md, "Predictions"): recipes that carry a `prediction` block
// (written by `recipebench plan`, docs/step-time.md) listed apart from measured results, never ranked with them; a
// prediction is linked to the measurement of its layout (the recipe's own result, or a measured recipe of the same
// model, GPU type and count, workload and layout fields) and shows its error.
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
  std::optional<double> measured_tokens_per_s_per_gpu;  ///< the recipe's result, or its layout's measurement
  std::string measured_file;  ///< the recipe the measurement is of (this one's own file, or the matched one)
  std::string measured_id;    ///< that recipe's entry id on the page (set by the leaderboard), empty if none
  /// What differs between this recipe and the matched measured one beyond the matched fields (same_measured_layout):
  /// "layout.dispatcher: flex / alltoall", "optimizer: bf16_remainder / fp32", "bench.overlap_grad_reduce: true /
  /// -" (predicted / measured; "-" where one leaves it out). Empty for the recipe's own result.
  std::vector<std::string> measured_differences;
  /// predicted / measured - 1 (tokens/s/GPU, a signed fraction), when measured.
  std::optional<double> error() const;
};

/// Whether measured recipe `m` ran the layout `p` predicts: the same model, GPU type and count, workload (row tokens,
/// global batch, precision), and layout fields TP, PP, VPP, CP, EP, ETP (TP where not stated), DP, the layer split,
/// max tokens per GPU and recompute (granularity, method and layers; none of them with no recompute). What else may
/// differ (the dispatcher, switches, optimizer state) is listed by setup_differences.
bool same_measured_layout(const Recipe& p, const Recipe& m);

/// The fields a prediction `p` and a measurement `m` of the same layout differ in, besides those
/// same_measured_layout matches: layout.sequence_parallel, rows_per_microbatch, offload and dispatcher, the
/// optimizer-state form, and each bench switch one states unlike the other, as "field: p's / m's" ("-" unstated).
std::vector<std::string> setup_differences(const Recipe& p, const Recipe& m);

/// The predictions of `recipes` (those with a `prediction` block; recipes are schema-valid, so its required fields
/// are there), by model, GPU type, then predicted tokens/s/GPU, fastest first. Each is linked to its own result, else
/// to the measured recipe of `measured` (those with a result) of the same layout (same_measured_layout; a measurement
/// before generated test data, then the latest result.measured, then by file), whose tokens/s/GPU and differences it
/// takes.
std::vector<PredictedEntry> predicted_entries(const std::vector<Recipe>& recipes,
                                              const std::vector<Recipe>& measured = {});

/// {"file", "model", "gpu_type", "gpus", "layout", "status", "tokens_per_s_per_gpu", "step_seconds", "mfu",
/// "usd_per_million_tokens", "gpu_hours", "predicted", "by", "profiles", "stack_factor",
/// "measured_tokens_per_s_per_gpu", "measured_file", "measured_id", "measured_differences", "error"} (absent figures
/// null; error a signed fraction).
Json to_json(const PredictedEntry& e);

}  // namespace recipebench
