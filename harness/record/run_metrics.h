// The metrics of a finished run (docs/metrics.md), from its record's samples.
#pragma once

#include "catalog/models.h"
#include "recipe/recipe.h"
#include "record/run_record.h"

namespace recipebench {

/// The metrics of a complete run: the window's throughput and step-time CV over `devices` GPUs (or CPU ranks),
/// MFU and $ / 1M tokens on CUDA (GPU peak and price from the catalog; null on CPU), GPU-hours over the wall time,
/// peak memory and harness overhead. `model`: the model that ran (its active parameters give MFU's N).
/// Throws std::invalid_argument when the record's steps do not cover its window.
RunMetrics compute_metrics(const RunRecord& rec, const Recipe& recipe, const ModelConfig& model, int devices);

}  // namespace recipebench
