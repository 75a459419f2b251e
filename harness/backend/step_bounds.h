// The bounds of one step's figures, one rule for every way a step enters recipebench: a log read by `import` or
// the command backend (logparse/log_reader.h, located at the line) and a run record read back by `report`,
// `compare`, `converge` or a profile (record/run_record.h, located at steps[i].<field>). A record that import or
// run writes therefore always passes report's check (docs/command-backend.md, Step figures).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace recipebench {

/// The figures of a step that carry a bound.
enum class StepFigure {
  kSeconds,          ///< the step time, s: finite, > 0 and at most kMaxStepSeconds
  kTokens,           ///< tokens of the step: 1 to kMaxStepTokens
  kLoss,             ///< loss, nats per token: within +-kMaxLoss (NaN: not printed, null in the record, is allowed)
  kGradNorm,         ///< gradient norm: finite, >= 0
  kLearningRate,     ///< learning rate: finite, >= 0
  kPeakMemoryBytes,  ///< peak device memory, bytes: 0 to kMaxMemoryBytes
};

/// The longest step a log or record may hold: 10^6 s (11.6 days); anything longer is a misprint or a unit error.
constexpr double kMaxStepSeconds = 1e6;
/// The most tokens one step may hold: 2^40 (1.1e12, some 10^4 times the largest published global batch); the
/// window's sums of up to 2^20 steps stay within int64.
constexpr int64_t kMaxStepTokens = int64_t{1} << 40;
/// The largest loss accepted: 10^6 nats per token (a uniform guess over any vocabulary is below 20).
constexpr double kMaxLoss = 1e6;
/// The most memory one device may report: 2^50 bytes (1 PiB, thousands of times any GPU's).
constexpr double kMaxMemoryBytes = 1125899906842624.0;

/// The field's name in a run record's step ("seconds", "tokens", "loss", "grad_norm", "learning_rate",
/// "peak_memory_bytes").
const char* record_field(StepFigure f);

/// True when `value` is inside `f`'s bounds.
bool within_step_bounds(StepFigure f, double value);
/// `f`'s bounds as a message's "expected" half ("a finite number >= 0").
const char* step_bounds_text(StepFigure f);

/// "<value>, expected <bounds>" when `value` is outside `f`'s bounds (NaN included, except a NaN loss); nullopt
/// when inside. E.g. (kGradNorm, -1) -> "-1, expected a finite number >= 0".
std::optional<std::string> step_figure_problem(StepFigure f, double value);

}  // namespace recipebench
