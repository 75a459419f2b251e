// The error each prediction mode showed where it was checked against measurements (docs/step-time.md, "What a
// prediction says about itself"): the validation's table, reports/bench/prediction-check-2026-12-05/error-bands.json,
// written by bench/prediction-check.sh from its own predictions and the reports it names, embedded in the binary
// (harness/CMakeLists.txt) and printed beside every prediction as its error band. Pure data, no libtorch.
#pragma once

#include <string>
#include <vector>

namespace recipebench {

/// Where a prediction's compute comes from (a closed set).
enum class PredictionMode {
  kProfiledSameGpu,   ///< profiles measured on the recipe's own GPU type
  kProfiledOtherGpu,  ///< profiles of another GPU, carried operation by operation (plan/gpu_scaling.h)
  kProfiledCpu,       ///< CPU profiles for a CPU recipe (development runs: not validated)
  kAnalytical,        ///< no profile: the catalog's per-operation efficiencies of the recipe's GPU
};

/// One checked row of the table: a mode, calibrated or not, on one pair of GPUs, against `rows` measurements.
struct ErrorBand {
  PredictionMode mode = PredictionMode::kAnalytical;
  bool calibrated = false;  ///< a stack factor fitted on a measured row of the target (--calibrate)
  std::string from;         ///< the profiles' GPU ("" for the analytical mode)
  std::string to;           ///< the GPU predicted
  int rows = 0;             ///< measurements checked against (a calibration's own row left out)
  double mean_abs_error = 0, max_abs_error = 0;  ///< fractions (0.031 = 3.1%)
  double min_error = 0, max_error = 0;           ///< signed: prediction over measurement - 1
  std::string source;                            ///< the report the figures were read from
  std::string what;                              ///< what was checked, in words
  /// The model family of the rows checked (catalog/models.h family_label: "Qwen3.5 MoE / Qwen3-Next", "gpt_oss");
  /// "" where the table does not say.
  std::string family;
};

/// The table of `text` (JSON, schema "recipebench-error-bands/1": {"bands": [{mode, calibrated, from, to, rows,
/// mean_abs_error, max_abs_error, min_error, max_error, source, what, optional family}]}, mode one of
/// profiled_same_gpu, profiled_other_gpu, analytical). Throws std::invalid_argument naming `name` and the field for a
/// malformed table.
std::vector<ErrorBand> read_error_bands(const std::string& text, const std::string& name);

/// The embedded table (reports/bench/prediction-check-2026-12-05/error-bands.json), read once.
const std::vector<ErrorBand>& error_bands();

/// The band of `mode` checked on exactly this pair (from is ignored for the analytical mode): the first of model
/// family `family` where the table holds one, else the first of any family; nullptr when the table holds none.
const ErrorBand* find_error_band(const std::vector<ErrorBand>& bands, PredictionMode mode, bool calibrated,
                                 const std::string& from, const std::string& to, const std::string& family = "");

/// Whether the table holds a band of `mode`, calibrated or not, checked on rows of model family `family`.
bool checked_on_family(const std::vector<ErrorBand>& bands, PredictionMode mode, bool calibrated,
                       const std::string& family);

/// "3.1% mean absolute error, 7.4% at most (-5.6% to +7.4%) over 11 rows: WHAT (SOURCE)".
std::string error_band_text(const ErrorBand& b);

}  // namespace recipebench
