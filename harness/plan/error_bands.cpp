#include "plan/error_bands.h"

#include <fmt/format.h>

#include <stdexcept>

#include "util/json.h"

namespace recipebench {

extern const char* const kErrorBandsJson;  // generated from the validation's table (harness/CMakeLists.txt)

namespace {

PredictionMode mode_named(const std::string& name, const std::string& where) {
  if (name == "profiled_same_gpu") return PredictionMode::kProfiledSameGpu;
  if (name == "profiled_other_gpu") return PredictionMode::kProfiledOtherGpu;
  if (name == "analytical") return PredictionMode::kAnalytical;
  throw std::invalid_argument(where + ".mode: \"" + name +
                              "\", expected profiled_same_gpu, profiled_other_gpu or analytical");
}

ErrorBand band_of(const Json& j, const std::string& where) {
  ErrorBand b;
  try {
    b.mode = mode_named(j.at("mode").get<std::string>(), where);
    b.calibrated = j.at("calibrated").get<bool>();
    b.from = j.at("from").get<std::string>();
    b.to = j.at("to").get<std::string>();
    b.rows = j.at("rows").get<int>();
    b.mean_abs_error = j.at("mean_abs_error").get<double>();
    b.max_abs_error = j.at("max_abs_error").get<double>();
    b.min_error = j.at("min_error").get<double>();
    b.max_error = j.at("max_error").get<double>();
    b.source = j.at("source").get<std::string>();
    b.what = j.at("what").get<std::string>();
    if (j.contains("family")) b.family = j.at("family").get<std::string>();
  } catch (const Json::exception& e) {
    throw std::invalid_argument(where + ": " + e.what());
  }
  if (b.rows < 1 || !(b.mean_abs_error >= 0) || b.max_abs_error < b.mean_abs_error)
    throw std::invalid_argument(where + fmt::format(": rows {}, mean {} and max {}, expected at least one row and a "
                                                    "mean absolute error >= 0 and <= the max",
                                                    b.rows, b.mean_abs_error, b.max_abs_error));
  return b;
}

}  // namespace

std::vector<ErrorBand> read_error_bands(const std::string& text, const std::string& name) {
  const Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || doc.value("schema", "") != "recipebench-error-bands/1" ||
      !doc.contains("bands") || !doc["bands"].is_array())
    throw std::invalid_argument(name + ": expected a JSON object of schema recipebench-error-bands/1 with bands[]");
  std::vector<ErrorBand> out;
  for (size_t i = 0; i < doc["bands"].size(); ++i)
    out.push_back(band_of(doc["bands"][i], fmt::format("{}: bands[{}]", name, i)));
  return out;
}

const std::vector<ErrorBand>& error_bands() {
  static const std::vector<ErrorBand> bands =
      read_error_bands(kErrorBandsJson, "reports/bench/prediction-check-2026-12-05/error-bands.json");
  return bands;
}

const ErrorBand* find_error_band(const std::vector<ErrorBand>& bands, PredictionMode mode, bool calibrated,
                                 const std::string& from, const std::string& to, const std::string& family) {
  const ErrorBand* any = nullptr;
  for (const ErrorBand& b : bands)
    if (b.mode == mode && b.calibrated == calibrated && b.to == to &&
        (mode == PredictionMode::kAnalytical || b.from == from)) {
      if (b.family == family) return &b;
      if (any == nullptr) any = &b;
    }
  return any;
}

bool checked_on_family(const std::vector<ErrorBand>& bands, PredictionMode mode, bool calibrated,
                       const std::string& family) {
  for (const ErrorBand& b : bands)
    if (b.mode == mode && b.calibrated == calibrated && b.family == family) return true;
  return false;
}

std::string error_band_text(const ErrorBand& b) {
  return fmt::format("{:.1f}% mean absolute error, {:.1f}% at most ({:+.1f}% to {:+.1f}%) over {} row(s): {} ({})",
                     100 * b.mean_abs_error, 100 * b.max_abs_error, 100 * b.min_error, 100 * b.max_error, b.rows,
                     b.what, b.source);
}

}  // namespace recipebench
