// `predict --calibrate FILE...`: a stack factor fitted on measured runs of the target GPU (docs/step-time.md,
// "Calibration on measured runs"): each measured run is predicted the way the target is (the same profiles or the
// analytical mode) and the factor that makes its prediction meet its measurement is solved for.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "predict_inputs.h"
#include "recipe/recipe.h"

namespace recipebench::cli {

/// One measured run the factor was fitted on.
struct CalibrationPoint {
  std::string file;           ///< the recipe or run record
  std::string layout;         ///< its layout label
  double measured = 0;        ///< its measured tokens/s/GPU
  double uncalibrated = 0;    ///< its prediction at stack factor 1, tokens/s/GPU
  double factor = 1;          ///< the stack factor that makes its prediction its measurement
  double residual = 0;        ///< (prediction at the fitted factor - measured) / measured
};

/// The fitted factor and what it came from.
struct Calibration {
  double stack_factor = 1;  ///< the geometric mean of the points' factors (one factor for every component)
  std::vector<CalibrationPoint> points;
};

/// Fits the stack factor on `files`: recipes with a measured result (status measured or verified) or run records
/// of complete, non-emulated runs (ours, or imported from another stack's log), each of the target's GPU type and of
/// its model family; predicted with `loaded` (or the analytical mode when it holds no profile) at stack factor 1,
/// then the factor solved by bisection on [0.01, 100] so the prediction's tokens/s/GPU equals the measured one.
/// Prints a located error for each refused file (another GPU, another family, no measured result, no rank map)
/// and returns nullopt when any was refused or none was given.
std::optional<Calibration> fit_calibration(const std::vector<std::string>& files, const Recipe& target,
                                           const ModelConfig& target_model, const LoadedProfiles& loaded);

/// One line per point and the factor: "calibrated on FILE (LAYOUT): measured 1,232.5 tokens/s/GPU, predicted
/// 2,048.3 uncalibrated: factor 1.662"; "stack factor 1.662 (the geometric mean of 1 run)".
std::vector<std::string> calibration_lines(const Calibration& c);

}  // namespace recipebench::cli
