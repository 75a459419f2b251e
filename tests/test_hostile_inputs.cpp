// The hostile inputs of 2026-12-05 (issue 49): each input with the value it must give. Cases: report-segv-flat-huge-
// loss, import-writes-records-report-refuses, converge-identical-curves-fail-correlation, converge-pass-on-failed-or-
// partial-run, config-kv-heads-not-divisor-fails-late, config-control-characters-in-output, profile-rank-out-of-
// layout-library-message, profile-figures-not-checked, profile-missing-component-priced-zero, import-memory-grows-
// with-log, import-regex-match-limit-silent (the test names are short: Catch2's console wrapping loops on long
// unbroken words). Profiles are the committed run records of reports/bench/, edited here as the cases edited them.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "backend/step_bounds.h"
#include "catalog/hf_config.h"
#include "logparse/line_parser.h"
#include "logparse/line_text.h"
#include "logparse/log_reader.h"
#include "metrics/convergence.h"
#include "record/profile_source.h"
#include "record/run_record.h"
#include "record/run_record_check.h"
#include "report/svg_chart.h"
#include "test_util.h"

using namespace recipebench;
using recipebench::test::source_path;

namespace {

const std::string kProfile1Gpu =
    "reports/bench/h200-2026-12-03-predict/call1/profile-2x8k/base-2x8k-20261203T082524Z.json";
const std::string kBench = "reports/bench/h200-2026-12-02-emulate-profile/attune-tp2-pp8-ep8-vpp2-mt16k-";
const std::string kMiddle = kBench + "middle-profile/attune-tp2-pp8-ep8-vpp2-mt16k-20261202T210849Z.json";
const std::string kLast = kBench + "last-profile/attune-tp2-pp8-ep8-vpp2-mt16k-20261202T210913Z.json";
const std::string kFirst = kBench + "first-profile/attune-tp2-pp8-ep8-vpp2-mt16k-20261202T210818Z.json";

Json record_json(const std::string& rel) { return read_json_file(source_path(rel)); }

/// The profile of record `doc` (named `file`), or the message it is refused with ("" when taken).
std::string profile_refusal(const Json& doc, const std::string& file = "p.json") {
  try {
    (void)profiled_rank(RunRecord::from_json(doc, file), file);
  } catch (const InputError& e) {
    return e.diagnostic().to_string();
  }
  return "";
}

/// Sets every pass cell of every step of `doc` to `v` seconds (the case's edit).
void set_cells(Json& doc, double v) {
  for (Json& s : doc["steps"])
    for (Json& p : s["phases"]["passes"])
      for (const char* phase : {"forward", "backward", "recompute"})
        if (p.contains(phase))
          for (auto& [name, cell] : p[phase].items()) cell = v;
}

void require_ticks_total(double lo, double hi, int target) {
  const std::vector<double> t = svg::nice_ticks(lo, hi, target);
  INFO("lo " << lo << " hi " << hi << " target " << target);
  REQUIRE(t.size() >= 2);
  CHECK(t.size() <= 2003);
  CHECK(t.front() <= lo);
  CHECK(t.back() >= hi);
  for (size_t i = 0; i < t.size(); ++i) {
    CHECK(std::isfinite(t[i]));
    if (i > 0) CHECK(t[i] > t[i - 1]);
  }
}

}  // namespace

TEST_CASE("hostile report: chart ticks are total over finite doubles (a flat loss of 1e16 or +-1.5e308)",
          "[hostile][report][svg]") {
  const double big = std::numeric_limits<double>::max(), tiny = std::numeric_limits<double>::denorm_min();
  const std::vector<std::pair<double, double>> ranges = {
      {1e16, 1e16}, {-1.5e308, 1.5e308}, {1e16, 1e16 + 2}, {0, big},     {-big, -big}, {big, big},   {-big, big},
      {0, 0},       {tiny, tiny},        {-1e-300, 1e-300}, {9.007199254740992e15, 9.007199254740994e15}, {3, 3}};
  for (const auto& [lo, hi] : ranges)
    for (int target : {1, 5, 8, 1000, 1 << 30}) require_ticks_total(lo, hi, target);
  // The flat loss of 1e16: widened by a millionth of its value each side (+-0.5 is lost to rounding at >= 2^53).
  const std::vector<double> flat = svg::nice_ticks(1e16, 1e16);
  REQUIRE(flat.size() == 5);
  CHECK(flat.front() == 1e16 - 1e10);
  CHECK(flat[1] - flat[0] == 5e9);
  CHECK(flat.back() == 1e16 + 1e10);
  // Losses spanning +-1.5e308: hi - lo is beyond the doubles; the ticks past them are the range's ends.
  const std::vector<double> span = svg::nice_ticks(-1.5e308, 1.5e308);
  REQUIRE(span.size() == 5);
  CHECK(span[0] == -1.5e308);
  CHECK(span[1] == Approx(-1e308));
  CHECK(span[2] == 0);
  CHECK(span[3] == Approx(1e308));
  CHECK(span[4] == 1.5e308);
  CHECK(svg::tick_label(1e16, 5e9) == "1e+16");
  CHECK_THROWS_AS(svg::nice_ticks(0, std::numeric_limits<double>::infinity()), std::invalid_argument);
  CHECK_THROWS_AS(svg::nice_ticks(std::nan(""), 1), std::invalid_argument);
  // Both records of the case draw: every point inside the plot, no "nan" or "inf" in the markup.
  const std::vector<std::vector<double>> records = {std::vector<double>(20, 1e16), {-1.5e308, 1.5e308, -1.5e308}};
  for (const std::vector<double>& v : records) {
    const svg::StepLayout L = svg::layout_steps(v, 1, 2, false, 420, 240);
    for (const svg::Point& p : L.points) {
      CHECK(p.y >= L.frame.y0() - 1e-9);
      CHECK(p.y <= L.frame.y1() + 1e-9);
    }
    const std::string svg = svg::steps_svg(v, 1, 2, svg::StepStyle{"loss", false, true, true}, "c", "t");
    CHECK(svg.find("nan") == std::string::npos);
    CHECK(svg.find("inf") == std::string::npos);
  }
}

TEST_CASE("hostile import: one rule for a step's figures in a log and in a record",
          "[hostile][import][records]") {
  CHECK(step_figure_problem(StepFigure::kGradNorm, -1) == std::string("-1, expected a finite number >= 0"));
  CHECK(step_figure_problem(StepFigure::kLearningRate, -1e-6) == std::string("-1e-06, expected a finite number >= 0"));
  CHECK(step_figure_problem(StepFigure::kPeakMemoryBytes, -5e9) ==
        std::string("-5e+09, expected 0 to 2^50 bytes (1 PiB)"));
  CHECK(step_figure_problem(StepFigure::kLoss, 1e16) ==
        std::string("1e+16, expected a finite loss within +-1e6 nats per token"));
  CHECK_FALSE(step_figure_problem(StepFigure::kLoss, std::nan("")));  // not printed: null in the record
  CHECK(step_figure_problem(StepFigure::kTokens, 4611686018427387904.0));
  CHECK_FALSE(step_figure_problem(StepFigure::kTokens, 1099511627776.0));
  CHECK(whole_count(1e300) == std::nullopt);  // never a cast of a double past int64
  CHECK(whole_count(9223372036854775807.0) == std::nullopt);
  CHECK(whole_count(4611686018427387904.0) == int64_t{4611686018427387904});

  // A record report reads by the same rule: a loss of 1e16 (the schema takes any number) refused at its field.
  Json doc = record_json(kProfile1Gpu);
  doc["steps"][3]["loss"] = 1e16;
  const CheckedRunRecord checked = check_run_record(doc, "r.json");
  REQUIRE(checked.errors.size() == 1);
  CHECK(checked.errors[0].to_string() ==
        "r.json: error: steps[3].loss: 1e+16, expected a finite loss within +-1e6 nats per token");
}

TEST_CASE("hostile converge: identical curves correlate 1 at any scale",
          "[hostile][convergence]") {
  LossCurve curve;
  for (int i = 0; i < 20; ++i) curve.emplace_back(i, 12.0 - 0.3 * i + 0.05 * (i % 3));
  for (double scale : {1.0, 1e80, 1e155, 1e300}) {
    LossCurve c = curve;
    for (auto& [step, loss] : c) loss *= scale;
    const ConvergenceResult r = check_convergence(c, c);
    INFO("scale " << scale);
    REQUIRE(r.correlation.has_value());
    CHECK(*r.correlation == Approx(1.0));
    CHECK(r.passed());
  }
}

TEST_CASE("hostile converge: fewer than 10 compared steps fail", "[hostile][convergence]") {
  LossCurve reference, two;
  for (int i = 0; i < 20; ++i) reference.emplace_back(i, 12.0 - 0.3 * i);
  two = {reference[5], reference[6]};
  const ConvergenceResult r = check_convergence(reference, two);
  CHECK(r.compared_steps.size() == 2);
  CHECK(r.correlation == Approx(1.0));  // two points always correlate +-1: no evidence
  CHECK_FALSE(r.steps_ok);
  CHECK_FALSE(r.passed());
  CHECK(r.failed_checks() == std::vector<std::string>{"steps"});
  LossCurve ten(reference.begin(), reference.begin() + 10);
  CHECK(check_convergence(reference, ten).passed());
}

TEST_CASE("hostile config.json: faults refused where the config is read with characters escaped",
          "[hostile][config]") {
  const std::string dir = source_path("tests/data/cases/hostile-2026-12-05/");
  const auto message = [](const std::string& file) -> std::string {
    try {
      (void)load_hf_config(file);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  CHECK(message(dir + "kv3-of-4.json") ==
        dir + "kv3-of-4.json:1:316: error: num_key_value_heads: 3, expected a divisor of num_attention_heads (4)");
  const std::string nul = message(dir + "model-type-with-nul.json");
  CHECK(nul.find("model_type: 'qwen3_5_moe_text\\x00', expected ") != std::string::npos);
  CHECK(message(dir + "architectures-escape.json").find("architectures[0]: '\\u202eevil\\x1b[31m', expected a name "
                                                         "of printable text") != std::string::npos);
  CHECK(message(dir + "architectures-object.json").find("architectures[0]: an object, expected a string") !=
        std::string::npos);
}

TEST_CASE("hostile profile: its rank and stage and layout located at their fields",
          "[hostile][profile]") {
  Json doc = record_json(kProfile1Gpu);
  CHECK(profile_refusal(doc) == "");  // the committed profile is taken
  doc["settings"]["emulate_rank"] = 5;
  CHECK(profile_refusal(doc) ==
        "p.json: error: settings.emulate_rank: 5, expected a rank of the recipe's layout TP1 CP1 PP1 DP1 EP1 (ranks 0 "
        "to 0)");
  doc["settings"]["emulate_rank"] = 0;
  doc["settings"]["emulated_stage_layers"] = 1000;
  CHECK(profile_refusal(doc) ==
        "p.json: error: settings.emulated_stage_layers: 1000, expected 1 to 4 (the layers of pipeline stage 0, at "
        "least one per virtual stage)");
  Json tp64 = record_json(kProfile1Gpu);
  tp64["recipe"]["document"]["layout"]["tp"] = 64;  // the record ran on 1 GPU
  CHECK(profile_refusal(tp64).rfind("p.json: error: recipe.document.layout: ", 0) == 0);
  Json middle = record_json(kMiddle);
  CHECK(profile_refusal(middle) == "");
  middle["settings"]["emulated_stage_layers"] = 2;  // its emulation block says layers_run 6
  CHECK(profile_refusal(middle) ==
        "p.json: error: settings.emulated_stage_layers: 2, expected 6, the layers its emulation block says ran "
        "(emulation.layers_run)");
}

TEST_CASE("hostile profile: its figures are checked as measurements", "[hostile][profile]") {
  Json zero = record_json(kProfile1Gpu);
  set_cells(zero, 0.0);
  CHECK(profile_refusal(zero).rfind("p.json: error: steps[3].phases.passes[0]: cells summing to 0 s, expected the "
                                    "pass's seconds",
                                    0) == 0);
  Json huge = record_json(kProfile1Gpu);
  set_cells(huge, 1e300);
  CHECK(profile_refusal(huge).find("cells summing to ") != std::string::npos);
  Json mb = record_json(kProfile1Gpu);
  for (Json& s : mb["steps"]) s["microbatches"] = int64_t{1} << 62;
  CHECK(profile_refusal(mb).rfind("p.json: error: steps[3].microbatches: 4611686018427387904, expected 2 (its "
                                  "forward passes, 2, over the rank's 1 chunk(s))",
                                  0) == 0);
  // Every committed profile passes: its rates below 2 x the H200's peak and bandwidth.
  for (const std::string& f : {kFirst, kMiddle, kLast}) CHECK(profile_refusal(record_json(f)) == "");
  // The LM head timed at a thousandth of what it took (each pass's seconds kept its cells' sum): 1.34 x the peak
  // becomes some 1,340 x.
  Json fast = record_json(kProfile1Gpu);
  for (Json& s : fast["steps"])
    for (Json& p : s["phases"]["passes"])
      for (const char* phase : {"forward", "backward"})
        if (p.contains(phase) && p[phase].contains("lm_head_loss")) {
          const double cell = p[phase]["lm_head_loss"].get<double>();
          p[phase]["lm_head_loss"] = cell * 1e-3;
          p["seconds"] = p["seconds"].get<double>() - cell * (1 - 1e-3);
        }
  CHECK(profile_refusal(fast).rfind("p.json: error: steps[3..9].phases.passes[virtual_stage 0].forward.lm_head_loss + "
                                    "backward.lm_head_loss: ",
                                    0) == 0);
  CHECK(profile_refusal(fast).find("FLOP/s, expected at most 2 x the H200's dense BF16 peak 9.894e+14 FLOP/s "
                                   "(catalog)") != std::string::npos);
}

TEST_CASE("hostile profile: a component the chunk runs without a time is refused",
          "[hostile][profile]") {
  Json last = record_json(kLast);
  for (Json& s : last["steps"])
    for (Json& p : s["phases"]["passes"])
      for (const char* phase : {"forward", "backward", "recompute"})
        if (p.contains(phase) && p[phase].contains("lm_head_loss")) {
          p["seconds"] = p["seconds"].get<double>() - p[phase]["lm_head_loss"].get<double>();
          p[phase].erase("lm_head_loss");
        }
  const std::string m = profile_refusal(last);
  CHECK(m.find(".forward.lm_head_loss: 0 s (the window's mean; absent counts as 0), expected a positive time: the "
               "chunk runs lm_head_loss") != std::string::npos);
}

TEST_CASE("hostile import: a log line is read to 1 MiB and a log hashed in chunks", "[hostile][import]") {
  std::istringstream in(std::string(3 << 20, 'x') + "\n\nstep\nlast");
  std::string line;
  REQUIRE(read_log_line(in, line));
  CHECK(line.size() == kMaxLogLineBytes);
  REQUIRE(read_log_line(in, line));
  CHECK(line.empty());
  REQUIRE(read_log_line(in, line));
  CHECK(line == "step");
  REQUIRE(read_log_line(in, line));  // a last line without its newline
  CHECK(line == "last");
  CHECK_FALSE(read_log_line(in, line));
  const std::string file = source_path(kProfile1Gpu);
  CHECK(sha256_file(file) == sha256_hex(test::read_file(file)));
}

TEST_CASE("hostile regex: a match PCRE2 gives up on is a line problem, in bounded time", "[hostile][import]") {
  // import-regex-match-limit-silent: an optional part that backtracks 2^30 ways on 30 trailing blanks.
  const auto parser = make_regex_parser(
      "^peer step (?<step>[0-9]+) time_s (?<seconds>[0-9.e+-]+) loss (?<loss>[0-9.e+-]+) tokens (?<tokens>[0-9]+)"
      "(?:(?: |\\s)*x)?\\s*$");
  const std::string step = "peer step 7 time_s 1.5 loss 2.25 tokens 16384";
  CHECK(parser->read(step).kind == LineKind::kStep);  // the pattern reads the line without the blanks
  const auto started = std::chrono::steady_clock::now();
  const LineRead r = parser->read(step + std::string(30, ' '));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  CHECK(r.kind == LineKind::kUnreadable);
  CHECK(r.problem.rfind("the pattern hit PCRE2's match limit (100000) on this line, expected a pattern that matches "
                        "in bounded time",
                        0) == 0);
  CHECK(seconds < 0.5);  // PCRE2's default limit took ~0.3 s a line; 10^5 steps take milliseconds
  // A line the pattern does not match at all is still just not a step line.
  CHECK(parser->read("peer checkpoint saved").kind == LineKind::kOther);
}
