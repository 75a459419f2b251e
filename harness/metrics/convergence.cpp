#include "metrics/convergence.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "util/format.h"

namespace recipebench {

double pointwise_tolerance(double reference_loss, const ConvergenceThresholds& t) {
  if (reference_loss > kHighLossAbove) return t.high_loss_tolerance;
  if (reference_loss > kLowLossAtMost) return t.medium_loss_tolerance;
  return t.low_loss_tolerance;
}

double relative_difference(double reference, double candidate) {
  if (reference != 0) return std::fabs(candidate - reference) / std::fabs(reference);
  return std::fabs(candidate);
}

std::vector<std::string> ConvergenceResult::failed_checks() const {
  std::vector<std::string> out;
  if (!steps_ok) out.push_back("steps");
  if (!correlation_ok) out.push_back("correlation");
  if (!pointwise_ok) out.push_back("pointwise");
  if (!final_ok) out.push_back("final_loss");
  if (!outliers_ok) out.push_back("outliers");
  return out;
}

namespace {

/// Pearson correlation of x and y; nullopt with fewer than 2 points or a curve without variance.
/// `v` divided by its largest magnitude (unchanged when all are 0): values within +-1, whose squares and sums of
/// squares cannot overflow whatever the losses' scale. Pearson's correlation does not change under scaling.
std::vector<double> scaled(std::vector<double> v) {
  double top = 0;
  for (double e : v) top = std::max(top, std::fabs(e));
  if (top > 0)
    for (double& e : v) e /= top;
  return v;
}

std::optional<double> pearson(const std::vector<double>& x_in, const std::vector<double>& y_in) {
  const size_t n = x_in.size();
  if (n < 2) return std::nullopt;
  const std::vector<double> x = scaled(x_in), y = scaled(y_in);
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) {
    mx += x[i];
    my += y[i];
  }
  mx /= static_cast<double>(n);
  my /= static_cast<double>(n);
  double sxx = 0, syy = 0, sxy = 0;
  for (size_t i = 0; i < n; ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
    sxy += (x[i] - mx) * (y[i] - my);
  }
  if (sxx == 0 || syy == 0) return std::nullopt;
  return std::clamp(sxy / (std::sqrt(sxx) * std::sqrt(syy)), -1.0, 1.0);
}

}  // namespace

namespace {

/// The steps both curves have with a loss, in step order: reference losses `x`, candidate losses `y`, their steps in
/// r.compared_steps; the steps only one has, and those without a loss, counted or listed in `r`.
void pair_steps(const LossCurve& reference, const LossCurve& candidate, ConvergenceResult& r, std::vector<double>& x,
                std::vector<double>& y) {
  std::map<int64_t, double> ref(reference.begin(), reference.end()), cand(candidate.begin(), candidate.end());
  for (const auto& [step, loss] : ref) {
    auto it = cand.find(step);
    if (it == cand.end()) {
      ++r.only_reference;
      continue;
    }
    const bool ref_null = std::isnan(loss), cand_null = std::isnan(it->second);
    if (ref_null || cand_null) {
      r.skipped.push_back({step, ref_null && cand_null ? "no loss in either run"
                                 : ref_null            ? "no loss in the reference"
                                                       : "no loss in the candidate"});
      continue;
    }
    r.compared_steps.push_back(step);
    x.push_back(loss);
    y.push_back(it->second);
  }
  for (const auto& [step, loss] : cand) r.only_candidate += !ref.count(step);
}

/// validate_convergence's skip_first_percent_loss: int(n x fraction) compared steps left out at the start.
void skip_first(const ConvergenceThresholds& t, ConvergenceResult& r, std::vector<double>& x, std::vector<double>& y) {
  r.skipped_first =
      std::min(x.size(), static_cast<size_t>(std::max(0.0, static_cast<double>(x.size()) * t.skip_first_fraction)));
  const auto k = static_cast<std::ptrdiff_t>(r.skipped_first);
  x.erase(x.begin(), x.begin() + k);
  y.erase(y.begin(), y.begin() + k);
  r.compared_steps.erase(r.compared_steps.begin(), r.compared_steps.begin() + k);
}

/// Residuals (candidate - reference) farther than outlier_sigma population standard deviations from their mean.
void find_outliers(const std::vector<double>& x, const std::vector<double>& y, const ConvergenceThresholds& t,
                   ConvergenceResult& r) {
  const size_t n = x.size();
  const double steps = static_cast<double>(n);
  double mean = 0;
  for (size_t i = 0; i < n; ++i) mean += y[i] - x[i];
  mean /= steps;
  double var = 0;
  for (size_t i = 0; i < n; ++i) var += (y[i] - x[i] - mean) * (y[i] - x[i] - mean);
  const double sd = std::sqrt(var / steps);
  for (size_t i = 0; i < n; ++i)
    if (sd > 0 && std::fabs(y[i] - x[i] - mean) > t.outlier_sigma * sd) r.outliers.push_back(r.compared_steps[i]);
  r.outliers_ok = static_cast<double>(r.outliers.size()) / steps <= t.max_outlier_ratio;
}

}  // namespace

ConvergenceResult check_convergence(const LossCurve& reference, const LossCurve& candidate,
                                    const ConvergenceThresholds& thresholds) {
  ConvergenceResult r;
  r.thresholds = thresholds;
  r.reference_steps = reference.size();
  r.candidate_steps = candidate.size();
  std::vector<double> x, y;  // reference, candidate losses of the compared steps
  pair_steps(reference, candidate, r, x, y);
  skip_first(thresholds, r, x, y);
  const size_t n = x.size();
  r.steps_ok = static_cast<int64_t>(n) >= thresholds.min_steps;
  if (n == 0) return r;  // nothing compared: every check fails

  r.correlation = pearson(x, y);
  r.correlation_ok = r.correlation && *r.correlation >= thresholds.min_correlation;

  for (size_t i = 0; i < n; ++i) {
    const double tol = pointwise_tolerance(x[i], thresholds);
    const double d = relative_difference(x[i], y[i]);
    if (d > tol) r.failures.push_back({r.compared_steps[i], x[i], y[i], d, tol});
  }
  r.pointwise_ok = static_cast<double>(r.failures.size()) / static_cast<double>(n) <= thresholds.max_outlier_ratio;

  r.final_reference = x.back();
  r.final_candidate = y.back();
  r.final_loss_difference = std::fabs(y.back() - x.back());
  r.final_relative_difference = relative_difference(x.back(), y.back());
  r.final_ok = r.final_relative_difference <= thresholds.final_loss_tolerance;
  find_outliers(x, y, thresholds, r);
  return r;
}

bool pointwise_failures_pass(int64_t failures, int64_t steps, const ConvergenceThresholds& t) {
  if (failures <= 0) return true;
  if (steps <= 0) return false;
  return static_cast<double>(failures) / static_cast<double>(steps) <= t.max_outlier_ratio;
}

std::string thresholds_text(const ConvergenceThresholds& t) {
  // Rounded to 1e-6 %: 100 x 0.07 prints 7%, not 7.000000000000001%.
  auto pct = [](double f) { return shortest(std::round(100 * f * 1e6) / 1e6) + "%"; };
  std::string s = "correlation >= " + shortest(t.min_correlation) + "; pointwise tolerance " +
                  pct(t.high_loss_tolerance) + " above loss " + shortest(kHighLossAbove) + ", " +
                  pct(t.medium_loss_tolerance) + " above " + shortest(kLowLossAtMost) + ", " +
                  pct(t.low_loss_tolerance) + " at or below; at most " + pct(t.max_outlier_ratio) +
                  " of steps failing pointwise, at most " + pct(t.max_outlier_ratio) + " outliers (" +
                  shortest(t.outlier_sigma) + " sigma); final loss within " + pct(t.final_loss_tolerance);
  if (t.skip_first_fraction > 0) s += "; first " + pct(t.skip_first_fraction) + " of steps left out";
  s += "; at least " + std::to_string(t.min_steps) + " steps compared";
  return s;
}

namespace {

std::string verdict(bool ok) { return ok ? "pass" : "FAIL"; }

/// "2 of 20 (10%)".
std::string count_of(size_t k, size_t n) {
  return std::to_string(k) + " of " + std::to_string(n) +
         (n ? " (" + shortest(std::round(1000.0 * static_cast<double>(k) / static_cast<double>(n)) / 10) + "%)" : "");
}

/// A loss or a difference with 7 significant digits.
std::string num(double v) {
  std::ostringstream o;
  o.precision(7);
  o << v;
  return o.str();
}

/// "3..9" or "3" (a run of consecutive steps), joined by ", ".
std::string step_list(const std::vector<int64_t>& steps) {
  std::string s;
  for (size_t i = 0; i < steps.size();) {
    size_t j = i;
    while (j + 1 < steps.size() && steps[j + 1] == steps[j] + 1) ++j;
    s += (s.empty() ? "" : ", ") + std::to_string(steps[i]) + (j > i ? ".." + std::to_string(steps[j]) : "");
    i = j + 1;
  }
  return s;
}

}  // namespace

std::string convergence_to_text(const ConvergenceResult& r) {
  const ConvergenceThresholds& t = r.thresholds;
  const size_t n = r.compared_steps.size();
  std::ostringstream o;
  o << "thresholds (Megatron-Bridge validate_convergence): " << thresholds_text(t) << "\n";
  o << "steps: " << n << " compared";
  if (n) o << " (" << step_list(r.compared_steps) << ")";
  o << "; the reference has " << r.reference_steps << ", the candidate " << r.candidate_steps << "\n";
  if (r.reference_steps != r.candidate_steps || r.only_reference || r.only_candidate)
    o << "  note: different step counts: " << r.only_reference << " step" << (r.only_reference == 1 ? "" : "s")
      << " only in the reference, " << r.only_candidate << " only in the candidate, not compared\n";
  for (const SkippedStep& s : r.skipped) o << "  note: step " << s.step << " skipped: " << s.reason << "\n";
  if (r.skipped_first) o << "  note: the first " << r.skipped_first << " compared steps left out\n";
  const auto pad = [](const std::string& s, size_t w) { return pad_right(s, std::max(w, display_width(s) + 2)); };
  o << pad("check", 22) << pad("figure", 40) << pad("bound", 12) << "verdict\n";
  o << pad("steps compared", 22) << pad(std::to_string(n), 40) << pad(">= " + std::to_string(t.min_steps), 12)
    << verdict(r.steps_ok) << "\n";
  o << pad("correlation", 22) << pad(r.correlation ? num(*r.correlation) : "undefined", 40)
    << pad(">= " + shortest(t.min_correlation), 12) << verdict(r.correlation_ok) << "\n";
  const std::string ratio = "<= " + shortest(std::round(100 * t.max_outlier_ratio * 1e6) / 1e6) + "%";
  o << pad("pointwise failures", 22) << pad(count_of(r.failures.size(), n), 40) << pad(ratio, 12)
    << verdict(r.pointwise_ok) << "\n";
  o << pad("outliers (" + shortest(t.outlier_sigma) + " sigma)", 22) << pad(count_of(r.outliers.size(), n), 40)
    << pad(ratio, 12) << verdict(r.outliers_ok) << "\n";
  const std::string final_fig = n ? num(r.final_reference) + " vs " + num(r.final_candidate) + ": " +
                                        shortest(std::round(r.final_relative_difference * 1e6) / 1e4) + "%"
                                  : "none";
  o << pad("final loss", 22) << pad(final_fig, 40)
    << pad("<= " + shortest(std::round(100 * t.final_loss_tolerance * 1e6) / 1e6) + "%", 12) << verdict(r.final_ok)
    << "\n";
  if (n) o << "final loss difference: " << num(r.final_loss_difference) << " (|candidate - reference|)\n";
  const size_t shown = std::min<size_t>(r.failures.size(), 10);
  for (size_t i = 0; i < shown; ++i) {
    const PointwiseFailure& f = r.failures[i];
    o << "  step " << f.step << ": reference " << num(f.reference) << ", candidate " << num(f.candidate) << ": "
      << shortest(std::round(f.relative_difference * 1e6) / 1e4) << "% > "
      << shortest(std::round(f.tolerance * 1e8) / 1e6) << "%\n";
  }
  if (r.failures.size() > shown) o << "  ... and " << r.failures.size() - shown << " more pointwise failures\n";
  if (!r.outliers.empty()) o << "  outlier steps: " << step_list(r.outliers) << "\n";
  o << "result: " << (r.passed() ? "pass" : "fail");
  if (!r.passed()) {
    std::string names;
    for (const auto& c : r.failed_checks()) names += (names.empty() ? "" : ", ") + c;
    o << " (" << names << ")";
  }
  o << "\n";
  return o.str();
}

Json convergence_to_json(const ConvergenceResult& r) {
  const ConvergenceThresholds& t = r.thresholds;
  Json skipped = Json::array();
  for (const SkippedStep& s : r.skipped) skipped.push_back({{"step", s.step}, {"reason", s.reason}});
  Json failures = Json::array();
  for (const PointwiseFailure& f : r.failures)
    failures.push_back({{"step", f.step},
                        {"reference", f.reference},
                        {"candidate", f.candidate},
                        {"relative_difference", f.relative_difference},
                        {"tolerance", f.tolerance}});
  const bool any = !r.compared_steps.empty();
  Json failed = Json::array();
  for (const auto& c : r.failed_checks()) failed.push_back(c);
  return Json{{"thresholds",
               {{"source", "Megatron-Bridge validate_convergence"},
                {"min_correlation", t.min_correlation},
                {"high_loss_tolerance", t.high_loss_tolerance},
                {"high_loss_above", kHighLossAbove},
                {"medium_loss_tolerance", t.medium_loss_tolerance},
                {"low_loss_tolerance", t.low_loss_tolerance},
                {"low_loss_at_most", kLowLossAtMost},
                {"max_outlier_ratio", t.max_outlier_ratio},
                {"outlier_sigma", t.outlier_sigma},
                {"final_loss_tolerance", t.final_loss_tolerance},
                {"skip_first_fraction", t.skip_first_fraction},
                {"min_steps", t.min_steps}}},
              {"steps",
               {{"reference", r.reference_steps},
                {"candidate", r.candidate_steps},
                {"compared", r.compared_steps.size()},
                {"skipped", skipped},
                {"only_reference", r.only_reference},
                {"only_candidate", r.only_candidate},
                {"skipped_first", r.skipped_first}}},
              {"correlation", r.correlation ? Json(*r.correlation) : Json(nullptr)},
              {"final_loss", any ? Json{{"reference", r.final_reference},
                                        {"candidate", r.final_candidate},
                                        {"difference", r.final_loss_difference},
                                        {"relative_difference", r.final_relative_difference}}
                                 : Json(nullptr)},
              {"pointwise_failures", failures},
              {"outliers", r.outliers},
              {"checks",
               {{"steps", r.steps_ok},
                {"correlation", r.correlation_ok},
                {"pointwise", r.pointwise_ok},
                {"final_loss", r.final_ok},
                {"outliers", r.outliers_ok}}},
              {"result", r.passed() ? "pass" : "fail"},
              {"failed", failed}};
}

Json convergence_block(const ConvergenceResult& r, const std::string& note) {
  Json b = Json::object();
  if (!r.compared_steps.empty()) b["steps"] = r.compared_steps.size();
  b["result"] = r.passed() ? "pass" : "fail";
  if (r.correlation) b["correlation"] = *r.correlation;
  if (!r.compared_steps.empty()) b["final_loss_difference"] = r.final_loss_difference;
  b["pointwise_failures"] = r.failures.size();
  if (!note.empty()) b["note"] = note;
  return b;
}

}  // namespace recipebench
