// The convergence check (metrics/convergence.h, docs/correctness.md): figures against a hand computation, the
// threshold edges, steps without a loss, different step counts, the case of 2026-12-02 (compare-runs-no-convergence),
// a realistic pair of committed run records, `compare`'s settings fields, and the recipe's block written in place.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "metrics/convergence.h"
#include "recipe/correctness_check.h"
#include "recipe/recipe_edit.h"
#include "recipe/source_doc.h"
#include "recipe/validate.h"
#include "record/run_record_check.h"
#include "report/compare.h"
#include "report/leaderboard.h"
#include "test_util.h"

using namespace recipebench;
using recipebench::test::source_path;

namespace {

constexpr double kNull = std::numeric_limits<double>::quiet_NaN();

LossCurve curve(const std::vector<double>& loss) {
  LossCurve c;
  for (size_t i = 0; i < loss.size(); ++i) c.emplace_back(static_cast<int64_t>(i), loss[i]);
  return c;
}

/// A committed run record, checked as `report` and `converge` check it.
RunRecord record(const std::string& file) {
  CheckedRunRecord checked = check_run_record(read_json_file(file), file);
  REQUIRE(checked.ok());
  return std::move(*checked.record);
}

LossCurve curve_of(const RunRecord& r) {
  LossCurve c;
  for (const StepSample& s : r.steps) c.emplace_back(s.step, s.loss);
  return c;
}

const ComparedField* compared_field(const Comparison& c, const std::string& section, const std::string& name) {
  for (const auto& f : c.fields)
    if (f.section == section && f.name == name) return &f;
  return nullptr;
}

}  // namespace

TEST_CASE("convergence: a five-step curve against a hand computation", "[convergence]") {
  // Reference 4, 3, 2, 1, 0.4; candidate 4.2, 3, 2.2, 1, 0.41. Means 2.08 and 2.162; sxx 8.528, syy 9.27688,
  // sxy 8.8792: r = 8.8792 / sqrt(8.528 x 9.27688) = 0.99827288.
  // Pointwise: step 0 is 5% off at loss 4 (tolerance 10%: within); step 2 is 10% off at loss 2.0 (not above 2.0:
  // tolerance 5%, a failure); step 4 is 2.5% off at loss 0.4 (tolerance 2%, a failure): 2 of 5 = 40% > 10%.
  // Final: |0.41 - 0.4| / 0.4 = 2.5% <= 3%. Residuals 0.2, 0, 0.2, 0, 0.01: mean 0.082, sd 0.0964, no 3-sigma outlier.
  const ConvergenceResult r = check_convergence(curve({4, 3, 2, 1, 0.4}), curve({4.2, 3, 2.2, 1, 0.41}));
  REQUIRE(r.correlation);
  CHECK(*r.correlation == Approx(8.8792 / std::sqrt(8.528 * 9.27688)).epsilon(1e-12));
  CHECK(*r.correlation == Approx(0.99827288).epsilon(1e-8));
  CHECK(r.correlation_ok);
  REQUIRE(r.failures.size() == 2);
  CHECK(r.failures[0].step == 2);
  CHECK(r.failures[0].tolerance == 0.05);
  CHECK(r.failures[0].relative_difference == Approx(0.10));
  CHECK(r.failures[1].step == 4);
  CHECK(r.failures[1].tolerance == 0.02);
  CHECK(r.failures[1].relative_difference == Approx(0.025));
  CHECK_FALSE(r.pointwise_ok);
  CHECK(r.final_loss_difference == Approx(0.01));
  CHECK(r.final_relative_difference == Approx(0.025));
  CHECK(r.final_ok);
  CHECK(r.outliers.empty());
  CHECK(r.outliers_ok);
  CHECK_FALSE(r.passed());
  CHECK_FALSE(r.steps_ok);  // 5 steps compared, fewer than the least 10
  CHECK(r.failed_checks() == std::vector<std::string>{"steps", "pointwise"});
  const std::string text = convergence_to_text(r);
  CHECK_THAT(text, Catch::Contains("thresholds (Megatron-Bridge validate_convergence): correlation >= 0.95; "
                                   "pointwise tolerance 10% above loss 2, 5% above 0.5, 2% at or below; at most 10% "
                                   "of steps failing pointwise, at most 10% outliers (3 sigma); final loss within 3%; "
                                   "at least 10 steps compared"));
  CHECK_THAT(text, Catch::Contains("  step 2: reference 2, candidate 2.2: 10% > 5%"));
  CHECK_THAT(text, Catch::Contains("pointwise failures    2 of 5 (40%)"));
  CHECK_THAT(text, Catch::Contains("steps compared        5                                       "
                                   ">= 10       FAIL"));
  CHECK_THAT(text, Catch::EndsWith("result: fail (steps, pointwise)\n"));
  const Json j = convergence_to_json(r);
  CHECK(j["result"] == "fail");
  CHECK(j["failed"] == Json::array({"steps", "pointwise"}));
  CHECK(j["checks"]["steps"] == false);
  CHECK(j["thresholds"]["min_steps"] == 10);
  CHECK(j["thresholds"]["min_correlation"] == 0.95);
  CHECK(j["pointwise_failures"].size() == 2);
  CHECK(convergence_block(r, "n") == Json{{"steps", 5},
                                          {"result", "fail"},
                                          {"correlation", *r.correlation},
                                          {"final_loss_difference", r.final_loss_difference},
                                          {"pointwise_failures", 2},
                                          {"note", "n"}});
}

TEST_CASE("convergence: the thresholds' edges", "[convergence]") {
  const ConvergenceThresholds t;
  // The bands: above 2.0 high, above 0.5 medium, else low (validate_convergence's golden > 2.0, golden > 0.5).
  CHECK(pointwise_tolerance(2.0, t) == 0.05);
  CHECK(pointwise_tolerance(std::nextafter(2.0, 3.0), t) == 0.10);
  CHECK(pointwise_tolerance(0.5, t) == 0.02);
  CHECK(pointwise_tolerance(std::nextafter(0.5, 1.0), t) == 0.05);
  CHECK(pointwise_tolerance(0.0, t) == 0.02);
  CHECK(relative_difference(0, 0.3) == 0.3);  // a zero reference: the candidate's magnitude
  CHECK(relative_difference(-2, -1) == 0.5);

  // Pointwise failures: 2 of 20 (10%) pass, 3 of 20 fail; the recipe-side rule is the same one.
  std::vector<double> ref, two, three;
  for (int i = 0; i < 20; ++i) ref.push_back(10.0 - 0.1 * i);
  two = three = ref;
  two[5] *= 1.2;
  two[9] *= 1.2;
  three = two;
  three[13] *= 1.2;
  CHECK(check_convergence(curve(ref), curve(two)).pointwise_ok);
  CHECK_FALSE(check_convergence(curve(ref), curve(three)).pointwise_ok);
  CHECK(pointwise_failures_pass(2, 20));
  CHECK_FALSE(pointwise_failures_pass(3, 20));
  CHECK_FALSE(pointwise_failures_pass(1, 0));  // steps unknown: only 0 passes
  CHECK(pointwise_failures_pass(0, 0));

  // Final loss: exactly 3% passes (3 / 100), just above fails.
  CHECK(check_convergence(curve({110, 100}), curve({112, 103})).final_ok);
  CHECK_FALSE(check_convergence(curve({110, 100}), curve({112, 103.001})).final_ok);

  // Correlation: a result equal to the least passes, the next double above it fails.
  const ConvergenceResult r = check_convergence(curve({4, 3, 2, 1, 0.4}), curve({4.2, 3, 2.2, 1, 0.41}));
  ConvergenceThresholds at = t;
  at.min_correlation = *r.correlation;
  CHECK(check_convergence(curve({4, 3, 2, 1, 0.4}), curve({4.2, 3, 2.2, 1, 0.41}), at).correlation_ok);
  at.min_correlation = std::nextafter(*r.correlation, 2.0);
  CHECK_FALSE(check_convergence(curve({4, 3, 2, 1, 0.4}), curve({4.2, 3, 2.2, 1, 0.41}), at).correlation_ok);
  CHECK(kPassCorrelation == t.min_correlation);  // the recipe-side check holds the same bound

  // Outliers: 3 spikes of 1.0 in 20 flat residuals, 0.85 from the mean 0.15 with sd 0.357: not 3-sigma outliers,
  // but 1-sigma ones (3 of 20 = 15% > 10%).
  std::vector<double> spiky = ref;
  for (int i : {4, 10, 16}) spiky[i] += 1.0;
  CHECK(check_convergence(curve(ref), curve(spiky)).outliers.empty());
  ConvergenceThresholds one_sigma = t;
  one_sigma.outlier_sigma = 1;
  const ConvergenceResult o = check_convergence(curve(ref), curve(spiky), one_sigma);
  CHECK(o.outliers == std::vector<int64_t>{4, 10, 16});
  CHECK_FALSE(o.outliers_ok);

  // skip_first_fraction: int(5 x 0.5) = 2 steps left out.
  ConvergenceThresholds skip = t;
  skip.skip_first_fraction = 0.5;
  const ConvergenceResult s = check_convergence(curve({4, 3, 2, 1, 0.4}), curve({4.2, 3, 2.2, 1, 0.41}), skip);
  CHECK(s.skipped_first == 2);
  CHECK(s.compared_steps == std::vector<int64_t>{2, 3, 4});
}

TEST_CASE("convergence: steps without a loss are skipped and said, different step counts are said", "[convergence]") {
  const ConvergenceResult r = check_convergence(curve({4, 3, kNull, 1, 0.5}), curve({4, 3, 2, kNull}));
  CHECK(r.compared_steps == std::vector<int64_t>{0, 1});
  REQUIRE(r.skipped.size() == 2);
  CHECK(r.skipped[0].step == 2);
  CHECK(r.skipped[0].reason == "no loss in the reference");
  CHECK(r.skipped[1].step == 3);
  CHECK(r.skipped[1].reason == "no loss in the candidate");
  CHECK(r.only_reference == 1);
  CHECK(r.only_candidate == 0);
  const std::string text = convergence_to_text(r);
  CHECK_THAT(text, Catch::Contains("steps: 2 compared (0..1); the reference has 5, the candidate 4\n"));
  CHECK_THAT(text, Catch::Contains("note: different step counts: 1 step only in the reference, 0 only in the "
                                   "candidate, not compared"));
  CHECK_THAT(text, Catch::Contains("note: step 2 skipped: no loss in the reference"));
  // No step in common, or a constant curve: no figure to pass on.
  const ConvergenceResult none = check_convergence(curve({kNull}), curve({1.0}));
  CHECK(none.compared_steps.empty());
  CHECK_FALSE(none.passed());
  CHECK(none.failed_checks().size() == 5);
  const ConvergenceResult flat = check_convergence(curve({3, 3, 3}), curve({3, 3, 3}));
  CHECK_FALSE(flat.correlation);
  CHECK_FALSE(flat.correlation_ok);
  CHECK(convergence_to_json(flat)["correlation"].is_null());
  CHECK_FALSE(convergence_block(flat, "").contains("correlation"));
}

TEST_CASE("compare-runs-no-convergence (2026-12-02): two runs' settings compared, their convergence figures",
          "[cases][convergence]") {
  const std::string dir = source_path("tests/data/cases/compare-runs-no-convergence/");
  const std::string fa = dir + "proxy4l-1gpu-bf16-20261130T000513Z.json";
  const std::string fb = dir + "proxy4l-1gpu-bf16-20261201T204200Z.json";
  const RunRecord a = record(fa), b = record(fb);
  // The case's figures (its run.sh computes them with Python): correlation 0.9874842, final difference 2.91e-03.
  const ConvergenceResult r = check_convergence(curve_of(a), curve_of(b));
  REQUIRE(r.correlation);
  CHECK(*r.correlation == Approx(0.9874842).margin(5e-8));
  CHECK(r.final_loss_difference == Approx(2.909585e-3).epsilon(1e-5));
  CHECK(r.failures.empty());
  CHECK(r.outliers.empty());
  CHECK(r.compared_steps.size() == 20);
  CHECK(r.passed());
  // Different seeds (1234, 7) are warned of; the rows are the same.
  const auto sa = a.options.to_json(true), sb = b.options.to_json(true);
  const auto warnings = settings_warnings(sa, sb);
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Catch::StartsWith("the runs' seeds differ (1234, 7)"));
  // compare lists the settings: the seed and the kernel choice count as differing fields.
  const Leaderboard board = build_leaderboard({}, ReportOptions{}, {{fa, a}, {fb, b}});
  std::optional<LeaderboardEntry> ea, eb;
  for (const auto& g : board.groups)
    for (const auto& e : g.entries) (e.file == fa ? ea : eb) = e;
  REQUIRE(ea);
  REQUIRE(eb);
  // As `compare` shows them: the settings as each file wrote them (the older record states no kernels).
  use_settings_as_written(*ea, read_json_file(fa));
  use_settings_as_written(*eb, read_json_file(fb));
  const Comparison c = compare_entries(*ea, *eb);
  const ComparedField* seed = compared_field(c, "settings", "seed");
  REQUIRE(seed);
  CHECK(seed->a == "1234");
  CHECK(seed->b == "7");
  CHECK(seed->differs);
  const ComparedField* kernels = compared_field(c, "settings", "kernels");
  REQUIRE(kernels);
  CHECK(kernels->a == "—");
  CHECK(kernels->b == "fused");
  CHECK(kernels->differs);
  REQUIRE(compared_field(c, "settings", "data.source"));
  CHECK_FALSE(compared_field(c, "settings", "data.source")->differs);
  CHECK(compared_field(c, "settings", "window")->a == "5:19");
  CHECK(compared_field(c, "stack", "recipebench_commit")->differs);
}

TEST_CASE("convergence: a realistic pair of committed run records (same seed, two commits) passes", "[convergence]") {
  const RunRecord a = record(source_path("reports/runs/proxy4l-1gpu-bf16-20261201T134635Z.json"));
  const RunRecord b = record(source_path("reports/runs/proxy4l-1gpu-bf16-20261201T170824Z.json"));
  const ConvergenceResult r = check_convergence(curve_of(a), curve_of(b));
  REQUIRE(r.correlation);
  CHECK(*r.correlation == Approx(0.9999966686).margin(1e-9));
  CHECK(r.final_loss_difference == Approx(3.52677e-6).epsilon(1e-4));
  CHECK(r.failures.empty());
  CHECK(r.passed());
  CHECK(settings_warnings(a.options.to_json(true), b.options.to_json(true)).empty());
}

TEST_CASE("convergence: the recipe's block written in place, the rest of the file kept", "[convergence][yaml]") {
  const Json block{{"steps", 20},
                   {"result", "pass"},
                   {"correlation", 0.9874842},
                   {"final_loss_difference", 0.0029},
                   {"pointwise_failures", 0},
                   {"note", "reference a, candidate b"}};
  const std::string seed = recipebench::test::seed_recipe("attune-tp2-pp8-ep8-vpp2-mt8k");
  const std::string text = recipebench::test::read_file(seed);
  // Replaced: the old block's lines go, every other line stays, and the recipe validates with the new figures.
  const std::string edited = set_convergence_block(text, seed, block);
  const ValidatedRecipe v = validate_recipe_text(edited, seed);
  INFO(edited);
  REQUIRE(v.ok());
  CHECK(v.recipe->doc["correctness"]["convergence"] == block);
  CHECK(v.recipe->doc["correctness"]["rules"] == parse_yaml(text, seed).value["correctness"]["rules"]);
  CHECK_THAT(edited,
             Catch::Contains("\n  convergence:\n    steps: 20\n    result: \"pass\"\n    correlation: 0.9874842\n"));
  CHECK(edited.find("correlation: 0.9999967") == std::string::npos);
  CHECK(edited.substr(0, edited.find("  convergence:")) == text.substr(0, text.find("  convergence:")));
  CHECK(edited.substr(edited.find("  rules:")) == text.substr(text.find("  rules:")));
  // Added to a correctness block without one, and a correctness block added to a recipe without any.
  const std::string no_conv = "a: 1\ncorrectness:\n  result: pass\n  summary: s\n# trailing comment\nb: 2\n";
  CHECK(set_convergence_block(no_conv, "x.yaml", block) ==
        "a: 1\ncorrectness:\n  result: pass\n  summary: s\n  convergence:\n    steps: 20\n    result: \"pass\"\n"
        "    correlation: 0.9874842\n    final_loss_difference: 0.0029\n    pointwise_failures: 0\n"
        "    note: \"reference a, candidate b\"\n# trailing comment\nb: 2\n");
  const std::string added = set_convergence_block("a: 1\n", "x.yaml", block);
  CHECK_THAT(added, Catch::StartsWith("a: 1\ncorrectness:\n  result: \"pass\"\n  summary: "));
  CHECK(parse_yaml(added, "x.yaml").value["correctness"]["convergence"] == block);
  // A flow-style block is refused, located, for the caller to print the block to paste.
  CHECK_THROWS_WITH(
      set_convergence_block("correctness: {result: pass, convergence: {result: pass}}\n", "f.yaml", block),
      Catch::StartsWith("f.yaml:1:"));
}
