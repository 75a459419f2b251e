// The per-phase profile of a multi-rank step (console/phase_profile.h): window means of rank 0's exposed communication,
// "compute and other" as the remainder, and the comm_waits block's round trip through the run record's step JSON.
#include <catch2/catch.hpp>

#include "console/phase_profile.h"

using namespace recipebench;

namespace {

StepSample step_with_waits(int step, double seconds, double tp, double ep, double dp, double pp) {
  StepSample s;
  s.step = step;
  s.seconds = seconds;
  s.comm_waits = CommWaitSeconds{true, tp, ep, dp, pp};
  return s;
}

}  // namespace

TEST_CASE("phase rows are window means of the waits, compute and other the remainder, summing to the step") {
  RunRecord r;
  r.options.settings.window = StepWindow{1, 2};
  r.steps = {step_with_waits(0, 9.0, 1, 1, 1, 1),  // outside the window
             step_with_waits(1, 0.400, 0.010, 0.020, 0.030, 0.040),
             step_with_waits(2, 0.600, 0.030, 0.040, 0.050, 0.060)};
  const auto rows = phase_rows(r);
  REQUIRE(rows);
  REQUIRE(rows->size() == 5);
  // Means: step 0.5 s; TP 0.02, EP 0.03, DP 0.04, PP 0.05; compute and other 0.5 - 0.14 = 0.36 s.
  CHECK((*rows)[0].phase == "compute and other");
  CHECK((*rows)[0].ms_per_step == Approx(360.0));
  CHECK((*rows)[0].percent == Approx(72.0));
  CHECK((*rows)[1].phase == "exposed TP");
  CHECK((*rows)[1].ms_per_step == Approx(20.0));
  CHECK((*rows)[2].ms_per_step == Approx(30.0));
  CHECK((*rows)[3].phase == "exposed DP/EDP");
  CHECK((*rows)[3].ms_per_step == Approx(40.0));
  CHECK((*rows)[4].phase == "pipeline waits");
  CHECK((*rows)[4].ms_per_step == Approx(50.0));
  CHECK((*rows)[4].percent == Approx(10.0));
  double sum = 0;
  for (const auto& row : *rows) sum += row.ms_per_step;
  CHECK(sum == Approx(500.0));
  CHECK_THAT(format_phase_line(r), Catch::StartsWith("step phases on rank 0 (mean over steps 1..2): compute and "
                                                     "other 360.0 ms (72.0%), exposed TP 20.0 ms (4.0%),"));
}

TEST_CASE("no phase rows without measured waits: one rank, or an older record") {
  RunRecord r;
  r.options.settings.window = StepWindow{0, 1};
  StepSample s;
  s.seconds = 0.3;
  r.steps = {s, s};
  r.steps[1].step = 1;
  CHECK_FALSE(phase_rows(r));
  CHECK(format_phase_line(r).empty());
}

TEST_CASE("comm waits survive the run record's step JSON and are absent when not measured") {
  const StepSample s = step_with_waits(3, 0.5, 0.001, 0.002, 0.003, 0.004);
  const Json j = s.to_json();
  CHECK(j["comm_waits"]["tp_seconds"].get<double>() == 0.001);
  CHECK(j["comm_waits"]["ep_seconds"].get<double>() == 0.002);
  CHECK(j["comm_waits"]["dp_seconds"].get<double>() == 0.003);
  CHECK(j["comm_waits"]["pp_seconds"].get<double>() == 0.004);
  CHECK_FALSE(StepSample{}.to_json().contains("comm_waits"));
}
