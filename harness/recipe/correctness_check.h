// The correctness block's verdicts against its own figures (docs/correctness.md, "What a stated verdict must agree
// with"): a convergence check that says pass beside failing figures, or a verified recipe whose convergence check
// failed, is an error located at the verdict.
#pragma once

#include "metrics/convergence.h"
#include "recipe/diagnostic.h"
#include "recipe/recipe.h"
#include "recipe/source_doc.h"

namespace recipebench {

/// One diagnostic per contradiction of correctness.convergence (absent block: none): result pass with more
/// pointwise_failures than the default thresholds allow (pointwise_failures_pass, metrics/convergence.h: at most 10%
/// of steps; any without steps), or with a correlation below kPassCorrelation; pointwise_failures above steps; result
/// fail or not_run on a recipe of status verified. Located in `src` at the field.
Diagnostics check_correctness(const Recipe& recipe, const SourceDoc& src);

/// The least Pearson correlation of the two loss curves a convergence check may call a pass (docs/correctness.md):
/// the convergence check's default (metrics/convergence.h).
constexpr double kPassCorrelation = ConvergenceThresholds{}.min_correlation;

}  // namespace recipebench
