// The convergence check of two loss curves (docs/correctness.md, "Convergence check"): Megatron-Bridge's
// validate_convergence (scripts/performance/utils/evaluate.py) with its default thresholds. A reference curve and a
// candidate curve are compared over the steps both have with a loss: the Pearson correlation, pointwise relative
// differences against a tolerance that depends on the reference loss, the final loss, and 3-sigma outliers of the
// residuals. Used by `recipebench converge`, `recipebench compare` and the recipe-side verdict check
// (recipe/correctness_check.h).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "util/json.h"

namespace recipebench {

/// The default least number of compared steps (ConvergenceThresholds::min_steps).
constexpr int64_t kMinComparedSteps = 10;

/// What the check holds the candidate to. The defaults are validate_convergence's, and min_steps.
struct ConvergenceThresholds {
  double min_correlation = 0.95;        ///< least Pearson correlation of the two curves
  double high_loss_tolerance = 0.10;    ///< relative tolerance where the reference loss is above 2.0
  double medium_loss_tolerance = 0.05;  ///< ... above 0.5 and at most 2.0
  double low_loss_tolerance = 0.02;     ///< ... at most 0.5
  double max_outlier_ratio = 0.10;      ///< most pointwise failures, and most outliers, as a fraction of the steps
  double outlier_sigma = 3.0;           ///< a residual this many standard deviations from the mean is an outlier
  double final_loss_tolerance = 0.03;   ///< relative difference of the final losses
  double skip_first_fraction = 0.0;     ///< fraction of the compared steps left out at the start (int(n x f))
  /// Least steps compared (recipebench's own bound, not validate_convergence's): two points always correlate
  /// +-1, and a run that stopped after a few steps says nothing of convergence.
  int64_t min_steps = kMinComparedSteps;
};

/// The band edges of the pointwise tolerance: above kHighLossAbove the high tolerance, above kLowLossAtMost the
/// medium one, else the low one (validate_convergence's `golden > 2.0`, `golden > 0.5`).
constexpr double kHighLossAbove = 2.0;
constexpr double kLowLossAtMost = 0.5;

/// The relative tolerance of one step, chosen by the reference loss (bands above).
double pointwise_tolerance(double reference_loss, const ConvergenceThresholds& t);

/// |candidate - reference| / |reference|; |candidate| when the reference is 0 (validate_convergence's rule).
double relative_difference(double reference, double candidate);

/// A loss curve: (step, loss) in step order; a NaN loss is a step without a loss (null in a run record).
using LossCurve = std::vector<std::pair<int64_t, double>>;

/// A step whose relative difference exceeds its tolerance.
struct PointwiseFailure {
  int64_t step = 0;
  double reference = 0, candidate = 0, relative_difference = 0, tolerance = 0;
};

/// A common step left out of the comparison, and why ("no loss in the candidate").
struct SkippedStep {
  int64_t step = 0;
  std::string reason;
};

/// The figures of one check and its verdict.
struct ConvergenceResult {
  ConvergenceThresholds thresholds;
  size_t reference_steps = 0, candidate_steps = 0;  ///< steps in each curve (with or without a loss)
  std::vector<int64_t> compared_steps;              ///< the steps compared, in order
  std::vector<SkippedStep> skipped;                 ///< common steps without a loss in one curve or both
  size_t only_reference = 0, only_candidate = 0;    ///< steps one curve has and the other lacks
  size_t skipped_first = 0;                         ///< steps left out by skip_first_fraction
  /// Pearson correlation (of the curves scaled to their largest magnitude first, so no sum overflows: identical
/// curves correlate 1 at any scale); nullopt when undefined (fewer than 2 steps, or a curve that does not change).
  std::optional<double> correlation;
  double final_reference = 0, final_candidate = 0;  ///< the last compared step's losses
  double final_loss_difference = 0;                 ///< |final candidate - final reference|
  double final_relative_difference = 0;             ///< relative_difference() of the final losses
  std::vector<PointwiseFailure> failures;
  std::vector<int64_t> outliers;  ///< steps whose residual is outlier_sigma standard deviations from the mean
  bool steps_ok = false;  ///< at least thresholds.min_steps steps compared
  bool correlation_ok = false, pointwise_ok = false, final_ok = false, outliers_ok = false;
  bool passed() const { return steps_ok && correlation_ok && pointwise_ok && final_ok && outliers_ok; }
  /// The failed checks' names, in order: "steps", "correlation", "pointwise", "final_loss", "outliers".
  std::vector<std::string> failed_checks() const;
};

/// Compares `candidate` with `reference` over the steps both have with a loss (steps without a loss in either are
/// listed in `skipped`), after leaving out the first int(n x skip_first_fraction). With no step compared every check
/// fails. Pure: no I/O.
ConvergenceResult check_convergence(const LossCurve& reference, const LossCurve& candidate,
                                    const ConvergenceThresholds& thresholds = {});

/// Whether a stated count of pointwise failures over `steps` passes (failures / steps <= max_outlier_ratio); with
/// `steps` unknown (0), only 0 failures pass. The recipe-side verdict check uses it.
bool pointwise_failures_pass(int64_t failures, int64_t steps, const ConvergenceThresholds& t = {});

/// The thresholds in one line: "correlation >= 0.95; pointwise tolerance 10% above loss 2, 5% above 0.5, 2% at or
/// below; at most 10% of steps failing pointwise, at most 10% outliers (3 sigma); final loss within 3%; at least 10
/// steps compared".
std::string thresholds_text(const ConvergenceThresholds& t);

/// The check as terminal text: the thresholds (and their source), the steps compared and any skipped or only in one
/// curve, each check's figure, bound and verdict, the first pointwise failures, then "result: pass" or "result: fail
/// (correlation, final_loss)".
std::string convergence_to_text(const ConvergenceResult& r);

/// The check as JSON: {"thresholds", "steps": {"reference", "candidate", "compared", "skipped", "only_reference",
/// "only_candidate", "skipped_first"}, "correlation" (null when undefined), "final_loss": {"reference", "candidate",
/// "difference", "relative_difference"}, "pointwise_failures": [...], "outliers": [steps], "checks": {name: bool},
/// "result": "pass" | "fail", "failed": [names]}.
Json convergence_to_json(const ConvergenceResult& r);

/// The recipe's correctness.convergence block (schema/recipe.schema.yaml) of a check: steps, result, correlation
/// (left out when undefined), final_loss_difference, pointwise_failures, and `note` when not empty.
Json convergence_block(const ConvergenceResult& r, const std::string& note);

}  // namespace recipebench
