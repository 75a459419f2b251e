// Physical bounds of stated sizes and figures (docs/layout-arithmetic.md, "Sizes and figures with physical
// bounds"; issue 33 kind 4): what the schema's ranges cannot know because the bound is another field or the
// hardware catalog. Each violation is an error at the field, file:line:col.
#pragma once

#include "catalog/models.h"
#include "recipe/diagnostic.h"
#include "recipe/recipe.h"
#include "recipe/source_doc.h"

namespace recipebench {

/// One diagnostic per violated bound:
/// - gpu.memory_gb at most the catalog's memory of gpu.type (GpuSpec::memory_bytes / 1e9, rounded up to a whole
///   GB; a GPU has no more memory than it is built with); CPU and GPUs unknown to the catalog are not bounded here.
/// - result.step_time_cv_percent at most 100 x sqrt(n) for a window of n steps: the sample standard deviation of n
///   positive step times is at most sqrt(n) times their mean (sum (x - m)^2 <= (sum x)^2 - n m^2 = n (n - 1) m^2);
///   checked when result.window is inside the run (else check_result reports the window).
/// - layout.recompute.num_layers, with granularity full: at least 1 and at most the layers of the largest model
///   chunk (a pipeline stage's layers / VPP, of the model that ran); a num_layers or method with granularity
///   selective or none is refused (only full recompute uses them, so they would be ignored).
/// `model` (the model that ran; may be null, or of unknown architecture: num_layers 0) bounds the recompute.
Diagnostics check_bounds(const Recipe& recipe, const ModelConfig* model, const SourceDoc& src);

}  // namespace recipebench
