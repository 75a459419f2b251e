// The pipeline schedules played in time (schedule/pipeline_timing.h): one rank, the textbook bubbles of 1F1B and
// interleaved 1F1B with equal passes, transfers in a 2-stage case computed by hand, a slower first stage, the
// recorded passes and the errors.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "schedule/pipeline_receives.h"
#include "schedule/pipeline_timing.h"
#include "util/format.h"

using namespace recipebench;
using Kind = PipelineAction::Kind;

namespace {

/// The passes of rank r as they ran.
std::vector<TimedPipelineAction> of_rank(const PipelineTiming& t, int r) {
  std::vector<TimedPipelineAction> out;
  for (const auto& a : t.actions)
    if (a.rank == r) out.push_back(a);
  return out;
}

/// "F0.0[0,1] ..." for a rank's passes.
std::string timeline(const PipelineTiming& t, int r) {
  std::string s;
  for (const auto& a : of_rank(t, r))
    s += (s.empty() ? "" : " ") + format_pipeline_order({a.action}) + "[" + shortest(a.start) + "," + shortest(a.end) +
         "]";
  return s;
}

}  // namespace

TEST_CASE("pipeline timing: PP 1 is the sum of all passes, with no transfer", "[pipeline][timing]") {
  PipelineTimingOptions o;
  o.p2p_seconds = 7;  // no neighbour: never paid
  const PipelineTiming t = time_pipeline(1, 1, 3, uniform_pass_durations(1, 1, 1.5, 2.5), o);
  CHECK(t.step_seconds == Approx(3 * (1.5 + 2.5)));
  CHECK(t.busy_seconds == std::vector<double>{12});
  CHECK(t.idle_seconds == std::vector<double>{0});
  CHECK(t.p2p_wait_seconds == std::vector<double>{0});
}

TEST_CASE("pipeline timing: 1F1B with equal stages takes (m + p - 1)(tf + tb)", "[pipeline][timing]") {
  // PipeDream-Flush (Narayanan et al. 2021): the bubble is (p - 1)(tf + tb) on every rank, a fraction
  // (p - 1) / (m + p - 1) of the step. tf != tb on purpose; fewer microbatches than stages too.
  const double tf = 1, tb = 2;
  for (int p : {2, 3, 4, 8})
    for (int m : {1, 2, 4, 8, 16}) {
      CAPTURE(p, m);
      const PipelineTiming t = time_pipeline(p, 1, m, uniform_pass_durations(p, 1, tf, tb));
      CHECK(t.step_seconds == Approx((m + p - 1) * (tf + tb)));
      for (int r = 0; r < p; ++r) {
        CHECK(t.busy_seconds[size_t(r)] == Approx(m * (tf + tb)));
        CHECK(t.idle_seconds[size_t(r)] == Approx((p - 1) * (tf + tb)));
        CHECK(t.idle_seconds[size_t(r)] / t.step_seconds == Approx(double(p - 1) / (m + p - 1)));
      }
    }
}

TEST_CASE("pipeline timing: interleaved 1F1B with VPP v divides the bubble by v", "[pipeline][timing]") {
  // Each rank's v chunks take tf / v and tb / v (a stage's layers split evenly), so the ideal step is m (tf + tb)
  // and Narayanan et al. 2021 (section 2.2) give the bubble (p - 1)(tf + tb) / v, a fraction (p - 1) / (v m) of the
  // ideal. Megatron-LM's order (pipeline_schedule: 2 (p - r - 1) + (v - 1) p warm-up forwards) reaches it exactly,
  // also with m = p and tf != tb; nothing here differs from the textbook figure.
  const double tf = 1, tb = 2;
  for (int p : {2, 3, 4, 8})
    for (int v : {2, 3, 4})
      for (int k : {1, 2, 4}) {
        const int m = k * p;
        CAPTURE(p, v, m);
        const PipelineTiming t = time_pipeline(p, v, m, uniform_pass_durations(p, v, tf / v, tb / v));
        const double ideal = m * (tf + tb);
        CHECK(t.step_seconds == Approx(ideal + (p - 1) * (tf + tb) / v));
        CHECK((t.step_seconds - ideal) / ideal == Approx(double(p - 1) / (v * m)));
        for (int r = 0; r < p; ++r) CHECK(t.idle_seconds[size_t(r)] == Approx((p - 1) * (tf + tb) / v));
      }
  // PP 2, VPP 2, 4 microbatches, chunks of 0.5 s forward and 1 s backward: 4 x 3 + 3 / 2 = 13.5 s.
  PipelineTimingOptions o;
  o.keep_actions = true;
  const PipelineTiming t = time_pipeline(2, 2, 4, uniform_pass_durations(2, 2, 0.5, 1), o);
  CHECK(t.step_seconds == 13.5);
  CHECK(timeline(t, 1) ==
        "F0.0[0.5,1] F1.0[1,1.5] F0.1[1.5,2] B0.1[2,3] F1.1[3,3.5] B1.1[3.5,4.5] F2.0[4.5,5] B0.0[5,6] "
        "F3.0[6,6.5] B1.0[6.5,7.5] F2.1[7.5,8] B2.1[8,9] F3.1[9,9.5] B3.1[9.5,10.5] B2.0[10.5,11.5] "
        "B3.0[11.5,12.5]");
}

TEST_CASE("pipeline timing: transfers in a 2-stage 1F1B, by hand", "[pipeline][timing]") {
  // PP 2, 2 microbatches, tf 1, tb 2, transfer c = 0.5. Rank 0: F0 F1 B0 B1; rank 1: F0 B0 F1 B1.
  // Not overlapped (the receive starts when the rank reaches the pass): rank 1 F0 [1 + c, 2 + c], B0 [2 + c, 4 + c],
  // F1 at max(4 + c, 2) + c; rank 0 B0 at max(2, 4 + c) + c = 4 + 2c, B1 after rank 1's B1 (7 + 2c) + c, ending
  // at 9 + 3c = 10.5: the zero-transfer step (9) plus three exposed transfers on the critical path.
  PipelineTimingOptions o;
  o.p2p_seconds = 0.5;
  o.keep_actions = true;
  const PassDurations d = uniform_pass_durations(2, 1, 1, 2);
  PipelineTiming t = time_pipeline(2, 1, 2, d, o);
  CHECK(t.step_seconds == 10.5);
  CHECK(timeline(t, 0) == "F0.0[0,1] F1.0[1,2] B0.0[5,7] B1.0[8.5,10.5]");
  CHECK(timeline(t, 1) == "F0.0[1.5,2.5] B0.0[2.5,4.5] F1.0[5,6] B1.0[6,8]");
  CHECK(t.busy_seconds == std::vector<double>{6, 6});
  CHECK(t.idle_seconds == std::vector<double>{4.5, 4.5});
  CHECK(t.p2p_wait_seconds == std::vector<double>{1, 1});  // two receives of c each per rank
  // Overlapped (receives posted ahead): rank 1's F1 input arrives at 2 + c during its B0, so F1 starts at 4 + c;
  // the step is 9 + 2c = 10.
  o.overlap_p2p = true;
  t = time_pipeline(2, 1, 2, d, o);
  CHECK(t.step_seconds == 10);
  CHECK(timeline(t, 1) == "F0.0[1.5,2.5] B0.0[2.5,4.5] F1.0[4.5,5.5] B1.0[5.5,7.5]");
  CHECK(t.p2p_wait_seconds == std::vector<double>{1, 0.5});
  // Per link: [0] joins ranks 0 and 1; [1] (rank 1 back to rank 0) carries nothing with VPP 1.
  o.overlap_p2p = false;
  o.p2p_seconds = 99;
  o.link_p2p_seconds = {0.5, 100};
  CHECK(time_pipeline(2, 1, 2, d, o).step_seconds == 10.5);
  // With VPP 2 the chunk boundary crosses link [1]: a slower one lengthens the step.
  PipelineTimingOptions a, b;
  a.link_p2p_seconds = {0.1, 0.1};
  b.link_p2p_seconds = {0.1, 1.0};
  const PassDurations d2 = uniform_pass_durations(2, 2, 0.5, 1);
  CHECK(time_pipeline(2, 2, 4, d2, b).step_seconds > time_pipeline(2, 2, 4, d2, a).step_seconds);
}

TEST_CASE("pipeline timing: receives posted ahead play the executor's plan, one in flight per link, by hand",
          "[pipeline][timing][overlap_p2p]") {
  // PP 2, 2 microbatches, tf = tb = 1, transfer c = 5 (slower than the passes between). Rank 1's F1 input is sent at
  // 2 but its receive is posted only when rank 1 starts F0 (kPipelineReceivesAhead = 1: after the wait of the link's
  // previous receive), at 6: it arrives at 11, not 7. Rank 0's B1 gradient likewise is posted at B0's start, 13.
  REQUIRE(kPipelineReceivesAhead == 1);
  PipelineTimingOptions o;
  o.p2p_seconds = 5;
  o.keep_actions = true;
  o.overlap_p2p = true;
  const PassDurations d = uniform_pass_durations(2, 1, 1, 1);
  const PipelineTiming t = time_pipeline(2, 1, 2, d, o);
  CHECK(timeline(t, 0) == "F0.0[0,1] F1.0[1,2] B0.0[13,14] B1.0[18,19]");
  CHECK(timeline(t, 1) == "F0.0[6,7] B0.0[7,8] F1.0[11,12] B1.0[12,13]");
  CHECK(t.step_seconds == 19);  // an unbounded number in flight would give 16
  CHECK(t.p2p_wait_seconds == std::vector<double>{9, 8});
  // Not overlapped: every receive waits whole, 21.
  o.overlap_p2p = false;
  CHECK(time_pipeline(2, 1, 2, d, o).step_seconds == 21);
}

TEST_CASE("pipeline timing: a slower first stage sets the pace", "[pipeline][timing]") {
  // PP 2, 2 microbatches; rank 0 tf 2, tb 4 (embedding), rank 1 tf 1, tb 2. Rank 0: F0 [0, 2], F1 [2, 4]; rank 1:
  // F0 [2, 3], B0 [3, 5], F1 [5, 6], B1 [6, 8]; rank 0: B0 [5, 9] (waits 1 s for rank 1's B0), B1 [9, 13].
  PassDurations d = uniform_pass_durations(2, 1, 1, 2);
  d.forward[0][0] = 2;
  d.backward[0][0] = 4;
  PipelineTiming t = time_pipeline(2, 1, 2, d);
  CHECK(t.step_seconds == 13);
  CHECK(t.busy_seconds == std::vector<double>{12, 6});
  CHECK(t.idle_seconds == std::vector<double>{1, 7});
  // PP 4, 8 microbatches, the same first stage and 1 / 2 s elsewhere: rank 0 runs its 3 warm-up forwards and the
  // first steady one in 8 s; its first backward's input arrives at 2 + 3 x 1 (forwards) + 3 x 2 (backwards) = 11 s.
  // From then on the faster stages deliver before rank 0 is free, so it never waits again: 8 x 6 + 3 = 51 s.
  d = uniform_pass_durations(4, 1, 1, 2);
  d.forward[0][0] = 2;
  d.backward[0][0] = 4;
  t = time_pipeline(4, 1, 8, d);
  CHECK(t.step_seconds == 51);
  CHECK(t.idle_seconds[0] == 3);
  for (int r = 1; r < 4; ++r) CHECK(t.idle_seconds[size_t(r)] == 51 - 8 * 3);
  // The slow stage dominates: the step is rank 0's busy time plus its one wait, far above the equal-stage step of
  // the fast pace ((8 + 3) x 3 = 33 s) and below the equal-stage step at the slow pace ((8 + 3) x 6 = 66 s).
  CHECK(t.step_seconds == t.busy_seconds[0] + 3);
  CHECK(time_pipeline(4, 1, 8, uniform_pass_durations(4, 1, 1, 2)).step_seconds == 33);
  CHECK(time_pipeline(4, 1, 8, uniform_pass_durations(4, 1, 2, 4)).step_seconds == 66);
}

TEST_CASE("pipeline timing: every rank runs its schedule's order, one pass at a time", "[pipeline][timing]") {
  PipelineTimingOptions o;
  o.keep_actions = true;
  o.p2p_seconds = 0.05;
  const int pp = 4, vpp = 2, m = 8;
  PassDurations d = uniform_pass_durations(pp, vpp, 0.3, 0.7);
  d.backward[3][1] = 1.1;  // the last stage with the LM head
  const PipelineTiming t = time_pipeline(pp, vpp, m, d, o);
  REQUIRE(t.actions.size() == size_t(pp * 2 * m * vpp));
  for (int r = 0; r < pp; ++r) {
    const auto runs = of_rank(t, r);
    const auto order = pipeline_schedule(pp, vpp, r, m);
    REQUIRE(runs.size() == order.size());
    for (size_t i = 0; i < runs.size(); ++i) {
      CHECK(runs[i].action == order[i]);
      CHECK(runs[i].global_stage == runs[i].action.chunk * pp + r);
      if (i > 0) CHECK(runs[i].start >= runs[i - 1].end);
    }
    CHECK(runs.back().end <= t.step_seconds);
    CHECK(t.busy_seconds[size_t(r)] + t.idle_seconds[size_t(r)] == Approx(t.step_seconds));
    CHECK(t.p2p_wait_seconds[size_t(r)] <= t.idle_seconds[size_t(r)] + 1e-12);
  }
}

TEST_CASE("pipeline timing: bad shapes, durations and layouts are refused", "[pipeline][timing]") {
  const PassDurations d = uniform_pass_durations(2, 1, 1, 2);
  CHECK_THROWS_WITH(time_pipeline(4, 1, 8, d), "pipeline timing: forward durations for 2 ranks, expected PP 4");
  CHECK_THROWS_WITH(time_pipeline(2, 2, 4, d),
                    "pipeline timing: forward durations of rank 0: 1 chunks, expected VPP 2");
  PassDurations neg = d;
  neg.backward[1][0] = -1;
  CHECK_THROWS_WITH(time_pipeline(2, 1, 4, neg), Catch::Contains("backward of rank 1 chunk 0 -1"));
  PipelineTimingOptions o;
  o.p2p_seconds = -0.5;
  CHECK_THROWS_WITH(time_pipeline(2, 1, 4, d, o), Catch::Contains("p2p time -0.5"));
  o.p2p_seconds = 0;
  o.link_p2p_seconds = {0.1};
  CHECK_THROWS_WITH(time_pipeline(2, 1, 4, d, o), "pipeline timing: 1 link p2p times, expected PP 2");
  // The schedule's own checks: PP 0, microbatches not a multiple of PP with VPP > 1.
  CHECK_THROWS_AS(time_pipeline(0, 1, 4, d), std::invalid_argument);
  CHECK_THROWS_AS(time_pipeline(2, 2, 3, uniform_pass_durations(2, 2, 1, 2)), std::invalid_argument);
}

TEST_CASE("pipeline timing: above the played count the steady state carries the step exactly", "[pipeline][timing]") {
  // Uneven stages and links, with and without receives posted ahead: the steady-state form agrees with the play of
  // every pass (issue 49, predict-plan-memory-per-microbatch); 1F1B with equal stages gives the textbook formula.
  for (int pp : {1, 2, 4, 8})
    for (int vpp : {1, 2})
      for (bool ahead : {false, true}) {
        if (vpp > 1 && pp < 2) continue;
        CAPTURE(pp, vpp, ahead);
        PassDurations d = uniform_pass_durations(pp, vpp, 1.0, 2.0);
        PipelineTimingOptions o;
        o.overlap_p2p = ahead;
        for (int r = 0; r < pp; ++r) {
          o.link_p2p_seconds.push_back(0.05 * (r + 1));
          for (int c = 0; c < vpp; ++c)
            d.forward[size_t(r)][size_t(c)] += 0.1 * r, d.backward[size_t(r)][size_t(c)] += 0.3 * c;
        }
        const int64_t m = (pipeline_played_microbatches(pp, vpp) + 37 * pp) / pp * pp;
        const PipelineTiming carried = time_pipeline(pp, vpp, m, d, o), played = play_pipeline(pp, vpp, m, d, o);
        CHECK(carried.step_seconds == Approx(played.step_seconds).epsilon(1e-9));
        for (int r = 0; r < pp; ++r) {
          CHECK(carried.busy_seconds[size_t(r)] == Approx(played.busy_seconds[size_t(r)]).epsilon(1e-9));
          CHECK(carried.idle_seconds[size_t(r)] == Approx(played.idle_seconds[size_t(r)]).epsilon(1e-9));
          CHECK(carried.p2p_wait_seconds[size_t(r)] == Approx(played.p2p_wait_seconds[size_t(r)]).epsilon(1e-9));
          CHECK(carried.end_seconds[size_t(r)] == Approx(played.end_seconds[size_t(r)]).epsilon(1e-9));
        }
      }
  // 2^31 - 1 microbatches (the schema's largest global batch on one GPU): (m + p - 1)(tf + tb), at once.
  const int64_t huge = (int64_t{1} << 31) - 1;
  CHECK(time_pipeline(1, 1, huge, uniform_pass_durations(1, 1, 1, 2)).step_seconds == Approx(3.0 * huge));
  const int64_t many = int64_t{1} << 40;
  CHECK(time_pipeline(8, 2, many, uniform_pass_durations(8, 2, 1, 2)).step_seconds ==
        Approx(6.0 * double(many) + 21));  // m VPP (tf + tb) + (PP - 1)(tf + tb)
}
