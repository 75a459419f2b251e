// How a prediction was obtained and how far it can be trusted (docs/step-time.md, "What a prediction says about
// itself"): its mode and the error that mode showed when it was checked against measurements, what was scaled from
// the profiles' GPU and by which rule, the memory plan of the layout, every recipe field and switch the step-time
// model does not price, and the recipe's own measured figures beside the prediction with its error. `predict`
// prints it before the figures and writes it as the JSON's "basis"; nothing here changes the prediction.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "catalog/models.h"
#include "layout/rank_map.h"
#include "plan/compute_profile.h"
#include "plan/error_bands.h"
#include "plan/memory_plan.h"
#include "plan/step_time.h"
#include "recipe/recipe.h"
#include "settings/run_options.h"
#include "util/json.h"

namespace recipebench {

/// "profiled, same GPU", "profiled on another GPU, scaled", "profiled on the CPU", "analytical, no profile".
std::string to_string(PredictionMode mode);

/// The memory plan of the predicted layout (the torch backend's plan, plan/memory_plan.h) against the GPU's memory.
struct PredictedMemory {
  double peak_bytes = 0, gpu_bytes = 0;  ///< the worst pipeline rank's peak; the GPU's memory (bytes)
  std::string largest_term;              ///< of the worst rank, e.g. "optimizer state 98.1 GB"
  MemoryReserve reserve;                 ///< held back beside the peak (plan/memory_plan.h, the measured one)
  /// The one rule of fitting (fits_with_reserve), as plan and validate --strict read it.
  bool fits() const { return fits_with_reserve(peak_bytes, gpu_bytes, reserve); }
};

/// The recipe's own measurement (status measured or verified with result.tokens_per_s_per_gpu) and the prediction's
/// error against it: (predicted - measured) / measured, fractions.
struct MeasuredBeside {
  double tokens_per_s_per_gpu = 0;
  std::optional<double> mfu, usd_per_million_tokens;
  std::string measured;  ///< result.measured, YYYY-MM-DD
  double error = 0;      ///< of tokens/s/GPU
};

/// Everything a prediction says about itself.
struct PredictionBasis {
  PredictionMode mode = PredictionMode::kProfiledSameGpu;
  std::string profile_gpu, target_gpu;
  std::optional<GpuScaling> scaling;  ///< how the profiles were carried to the target (nullopt on the same GPU)
  std::string error_band;  ///< how far this mode was off when checked, with where
  double stack_factor = 1;
  std::vector<std::string> calibration;   ///< how the stack factor was fitted (predict --calibrate); empty if not
  std::optional<PredictedMemory> memory;  ///< nullopt on the CPU (no GPU memory to hold it against)
  bool memory_analytical = false;         ///< the memory plan is the analytical one (MemoryPlan::analytical)
  std::vector<std::string> not_modelled;  ///< "layout.cp: 2 (...)": recipe fields and switches not priced
  std::optional<MeasuredBeside> measured;
};

/// The basis of `p`, the prediction of `recipe` (validated) for `model` on `map` with the run's `settings` from
/// `costs` (the profiles' unit costs, on costs.gpu) at `stack_factor`. The error bands are the checks of
/// docs/step-time.md ("Checked": reports/bench/h200-2026-12-03-predict): same GPU 3.1% mean absolute error (7.4% at
/// most) over 11 proxy shapes on one H200; H200 -> B200 operation by operation +78% to +82% on the seed's three rows,
/// -0.2% / +0.7% with a stack factor fitted on one of them; analytical +212% to +240%, +9.5% / +6.1% calibrated
/// (reports/bench/prediction-check-2026-12-05). Throws std::invalid_argument when the memory plan cannot
/// be made for the layout (plan_memory's errors).
PredictionBasis prediction_basis(const Recipe& recipe, const ModelConfig& model, const RankMap& map,
                                 const RunSettings& settings, const UnitCosts& costs, double stack_factor,
                                 const StepPrediction& p);

/// The basis as the console's lines, each indented by two spaces: how obtained, trust, measured beside (when the
/// recipe has it), memory, not modelled.
std::string basis_text(const PredictionBasis& b);

/// The JSON form: {"mode", "profile_gpu", "target_gpu", "scaling": {"lines", "single_ratio", "components",
/// "optimizer", "operations": [...]} | null, "error_band", "stack_factor", "memory":
/// {"peak_bytes", "gpu_bytes", "fits", "largest_term"} | null, "not_modelled": [...], "measured":
/// {"tokens_per_s_per_gpu", "mfu", "usd_per_million_tokens", "measured", "error"} | null}.
Json basis_json(const PredictionBasis& b);

}  // namespace recipebench
