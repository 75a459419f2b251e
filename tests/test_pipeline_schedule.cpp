// The pipeline schedules (schedule/pipeline_schedule.h) as pure data: counts, warm-up lengths, forward before backward,
// the interleaved order, and that all ranks' orders together complete with non-blocking sends (no deadlock).
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <stdexcept>
#include <utility>

#include "schedule/pipeline_schedule.h"

using recipebench::format_pipeline_order;
using recipebench::pipeline_schedule;
using recipebench::pipeline_schedule_runs;
using recipebench::pipeline_warmup;
using recipebench::PipelineAction;
using Kind = PipelineAction::Kind;

namespace {

/// Forwards before the first backward of an order.
int64_t leading_forwards(const std::vector<PipelineAction>& order) {
  int64_t n = 0;
  for (const auto& a : order) {
    if (a.kind == Kind::Backward) break;
    ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("1F1B: warm-up PP - stage - 1 forwards, then one forward one backward, then cool-down",
          "[pipeline][schedule]") {
  CHECK(format_pipeline_order(pipeline_schedule(4, 1, 0, 6)) ==
        "F0.0 F1.0 F2.0 F3.0 B0.0 F4.0 B1.0 F5.0 B2.0 B3.0 B4.0 B5.0");
  CHECK(format_pipeline_order(pipeline_schedule(4, 1, 2, 6)) ==
        "F0.0 F1.0 B0.0 F2.0 B1.0 F3.0 B2.0 F4.0 B3.0 F5.0 B4.0 B5.0");
  CHECK(format_pipeline_order(pipeline_schedule(4, 1, 3, 6)) ==
        "F0.0 B0.0 F1.0 B1.0 F2.0 B2.0 F3.0 B3.0 F4.0 B4.0 F5.0 B5.0");
  // Fewer microbatches than stages: the warm-up is capped, every forward still precedes its backward.
  CHECK(format_pipeline_order(pipeline_schedule(4, 1, 0, 2)) == "F0.0 F1.0 B0.0 B1.0");
  // PP 1 is the one-rank order.
  CHECK(format_pipeline_order(pipeline_schedule(1, 1, 0, 3)) == "F0.0 B0.0 F1.0 B1.0 F2.0 B2.0");
  for (int stage = 0; stage < 4; ++stage) CHECK(pipeline_warmup(4, 1, stage, 8) == 4 - stage - 1);
}

TEST_CASE("interleaved 1F1B: groups of PP microbatches through chunk 0 then chunk 1, backwards in reverse chunks",
          "[pipeline][schedule]") {
  // PP 2, VPP 2, 4 microbatches. Rank 0: warm-up 2 (2 - 0 - 1) + (2 - 1) 2 = 4; rank 1: 0 + 2 = 2.
  CHECK(pipeline_warmup(2, 2, 0, 4) == 4);
  CHECK(pipeline_warmup(2, 2, 1, 4) == 2);
  CHECK(format_pipeline_order(pipeline_schedule(2, 2, 0, 4)) ==
        "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0");
  CHECK(format_pipeline_order(pipeline_schedule(2, 2, 1, 4)) ==
        "F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 F3.1 B3.1 B2.0 B3.0");
  // PP 4, VPP 2, 8 microbatches (Narayanan et al. 2021, figure 4): rank 0 warms up with 2 x 3 + 4 = 10 forwards.
  CHECK(pipeline_warmup(4, 2, 0, 8) == 10);
  CHECK(pipeline_warmup(4, 2, 3, 8) == 4);
  // The warm-up is capped at all forwards of the rank.
  CHECK(pipeline_warmup(4, 3, 0, 4) == 12);
  CHECK_THROWS_AS(pipeline_schedule(2, 2, 0, 3), std::invalid_argument);  // not a multiple of PP
  CHECK_THROWS_AS(pipeline_schedule(1, 2, 0, 4), std::invalid_argument);  // VPP without a pipeline
  CHECK_THROWS_AS(pipeline_schedule(2, 1, 2, 4), std::invalid_argument);  // no such stage
  CHECK_THROWS_AS(pipeline_schedule(2, 1, 0, 0), std::invalid_argument);
}

TEST_CASE("every schedule runs each pass once, forward before backward, and all ranks complete together",
          "[pipeline][schedule]") {
  for (int pp : {1, 2, 3, 4, 8})
    for (int vpp : {1, 2, 3, 4})
      for (int64_t m : {1, 2, 3, 4, 6, 8, 12, 16}) {
        if (vpp > 1 && (pp < 2 || m % pp != 0)) continue;
        INFO("PP " << pp << " VPP " << vpp << " microbatches " << m);
        std::vector<std::vector<PipelineAction>> orders;
        for (int stage = 0; stage < pp; ++stage) {
          const auto order = pipeline_schedule(pp, vpp, stage, m);
          INFO("stage " << stage << ": " << format_pipeline_order(order));
          REQUIRE(static_cast<int64_t>(order.size()) == 2 * m * vpp);
          // The warm-up, then the steady phase's first forward (none when the warm-up holds every forward).
          const int64_t warmup = pipeline_warmup(pp, vpp, stage, m);
          CHECK(leading_forwards(order) == (warmup < m * vpp ? warmup + 1 : warmup));
          std::map<std::pair<int64_t, int>, size_t> forward_at, backward_at;
          std::map<int, int64_t> last_backward;  // per chunk: backwards in microbatch order (the one-rank
                                                 // accumulation order of every parameter's gradient)
          for (size_t i = 0; i < order.size(); ++i) {
            const auto& a = order[i];
            auto& seen = a.kind == Kind::Forward ? forward_at : backward_at;
            CHECK(seen.emplace(std::make_pair(a.microbatch, a.chunk), i).second);  // once
            if (a.kind == Kind::Backward) {
              const auto f = forward_at.find({a.microbatch, a.chunk});
              CHECK((f != forward_at.end() && f->second < i));
              auto [it, first] = last_backward.emplace(a.chunk, a.microbatch);
              if (!first) {
                CHECK(a.microbatch > it->second);
                it->second = a.microbatch;
              }
            }
          }
          CHECK(static_cast<int64_t>(forward_at.size()) == m * vpp);
          CHECK(static_cast<int64_t>(backward_at.size()) == m * vpp);
          orders.push_back(order);
        }
        CHECK(pipeline_schedule_runs(pp, vpp, orders, m) == "");
      }
}

TEST_CASE("the deadlock check fails on orders that wait on each other", "[pipeline][schedule]") {
  // Rank 0 runs one forward one backward from the start, rank 1 all forwards first: rank 0's B0 waits for rank 1's
  // B0, which waits behind rank 1's F1, which waits for rank 0's F1, which comes after B0.
  const auto f = [](int64_t m) { return PipelineAction{Kind::Forward, m, 0}; };
  const auto b = [](int64_t m) { return PipelineAction{Kind::Backward, m, 0}; };
  const std::vector<std::vector<PipelineAction>> bad{{f(0), b(0), f(1), b(1)}, {f(0), f(1), b(0), b(1)}};
  CHECK(pipeline_schedule_runs(2, 1, bad, 2) == "rank 0 waits at B0.0; rank 1 waits at F1.0");
  // A backward before its own forward never runs.
  const std::vector<std::vector<PipelineAction>> early{{b(0), f(0)}};
  CHECK(pipeline_schedule_runs(1, 1, early, 1) != "");
}
