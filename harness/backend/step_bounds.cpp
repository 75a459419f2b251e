#include "backend/step_bounds.h"

#include <cmath>

#include "util/format.h"

namespace recipebench {

const char* record_field(StepFigure f) {
  switch (f) {
    case StepFigure::kSeconds: return "seconds";
    case StepFigure::kTokens: return "tokens";
    case StepFigure::kLoss: return "loss";
    case StepFigure::kGradNorm: return "grad_norm";
    case StepFigure::kLearningRate: return "learning_rate";
    case StepFigure::kPeakMemoryBytes: return "peak_memory_bytes";
  }
  return "?";
}

const char* step_bounds_text(StepFigure f) {
  switch (f) {
    case StepFigure::kSeconds: return "a finite time > 0 s and at most 1e6 s";
    case StepFigure::kTokens: return "1 to 2^40 (1099511627776) tokens";
    case StepFigure::kLoss: return "a finite loss within +-1e6 nats per token";
    case StepFigure::kGradNorm: return "a finite number >= 0";
    case StepFigure::kLearningRate: return "a finite number >= 0";
    case StepFigure::kPeakMemoryBytes: return "0 to 2^50 bytes (1 PiB)";
  }
  return "";
}

bool within_step_bounds(StepFigure f, double v) {
  switch (f) {
    case StepFigure::kSeconds: return v > 0 && v <= kMaxStepSeconds;
    case StepFigure::kTokens: return v >= 1 && v <= static_cast<double>(kMaxStepTokens);
    case StepFigure::kLoss: return std::isnan(v) || std::abs(v) <= kMaxLoss;
    case StepFigure::kGradNorm:
    case StepFigure::kLearningRate: return v >= 0 && std::isfinite(v);
    case StepFigure::kPeakMemoryBytes: return v >= 0 && v <= kMaxMemoryBytes;
  }
  return false;
}

std::optional<std::string> step_figure_problem(StepFigure f, double value) {
  if (within_step_bounds(f, value)) return std::nullopt;
  return shortest(value) + ", expected " + step_bounds_text(f);
}

}  // namespace recipebench
