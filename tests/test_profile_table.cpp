// The --profile table (console/profile_table.h): window means per component, "other" as the remainder, a run record
// round trip of the component seconds.
#include <catch2/catch.hpp>

#include "console/profile_table.h"

using namespace recipebench;

namespace {

StepSample profiled_step(int step, double seconds, double scale) {
  StepSample s;
  s.step = step;
  s.seconds = seconds;
  s.components = ComponentSeconds{0.100 * scale, 0.020 * scale, 0.150 * scale, 0.030 * scale};
  s.optimizer_seconds = 0.040 * scale;
  return s;
}

}  // namespace

TEST_CASE("profile rows are window means, other is the step's remainder, the rows sum to the mean step") {
  RunRecord r;
  r.options.settings.window = StepWindow{1, 2};
  r.steps = {profiled_step(0, 9.0, 10),  // step 0 is outside the window: not counted
             profiled_step(1, 0.400, 1.0), profiled_step(2, 0.500, 2.0)};
  const auto rows = profile_rows(r);
  REQUIRE(rows.size() == 6);
  // Means over steps 1 and 2: step (0.4 + 0.5) / 2 = 0.450 s; GDN (0.1 + 0.2) / 2 = 0.150 s; attention 0.030;
  // MoE 0.225; LM head + loss 0.045; optimizer 0.060; other 0.450 - 0.510 = -0.060 (a negative remainder is shown
  // as it is: it says the parts overlap or the clock is off, which a table must not hide).
  CHECK(rows[0].component == "GDN layers");
  CHECK(rows[0].ms_per_step == Approx(150.0));
  CHECK(rows[1].ms_per_step == Approx(30.0));
  CHECK(rows[2].ms_per_step == Approx(225.0));
  CHECK(rows[3].ms_per_step == Approx(45.0));
  CHECK(rows[4].component == "optimizer");
  CHECK(rows[4].ms_per_step == Approx(60.0));
  CHECK(rows[5].component == "other");
  CHECK(rows[5].ms_per_step == Approx(-60.0));
  double sum = 0, percent = 0;
  for (const auto& row : rows) sum += row.ms_per_step, percent += row.percent;
  CHECK(sum == Approx(450.0));
  CHECK(percent == Approx(100.0));
  CHECK(rows[0].percent == Approx(100.0 * 150 / 450));
}

TEST_CASE("the profile table names every component and closes with the step row") {
  RunRecord r;
  r.options.settings.window = StepWindow{0, 0};
  r.steps = {profiled_step(0, 0.500, 1.0)};
  const std::string t = format_profile_table(r);
  for (const char* name : {"GDN layers", "attention layers", "MoE blocks", "LM head + loss", "optimizer", "other"})
    CHECK_THAT(t, Catch::Contains(name));
  CHECK_THAT(t, Catch::Contains("other                   160.0    32.0%"));
  CHECK_THAT(t, Catch::Contains("step                    500.0   100.0%"));
  RunRecord empty;
  CHECK(format_profile_table(empty) == "profile: no step in the window\n");
}

TEST_CASE("component seconds survive the run record's step JSON") {
  const StepSample s = profiled_step(3, 0.5, 1.0);
  const Json j = s.to_json();
  CHECK(j["phases"]["gdn_seconds"].get<double>() == 0.100);
  CHECK(j["phases"]["moe_seconds"].get<double>() == 0.150);
  CHECK(j["phases"]["lm_head_loss_seconds"].get<double>() == 0.030);
  CHECK(j["phases"]["attention_seconds"].get<double>() == 0.020);
}
