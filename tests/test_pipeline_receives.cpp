// When each receive of a pipeline rank is posted with bench.overlap_p2p_comm (schedule/pipeline_receives.h), as pure
// data: every receive posted before its pass waits for it, per link in the sender's order, never more than `depth`
// of a link in flight.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "schedule/pipeline_receives.h"
#include "schedule/pipeline_schedule.h"

using recipebench::format_pipeline_order;
using recipebench::pipeline_receive_plan;
using recipebench::pipeline_schedule;
using recipebench::PipelineAction;
using recipebench::PipelineReceive;
using Kind = PipelineAction::Kind;

namespace {

int link_of(bool gradient, bool to_higher) { return (gradient ? 2 : 0) + (to_higher ? 1 : 0); }

/// "F1.0@F0.0": the receive of F1.0 is posted after the wait of F0.0's; "F0.0@own": by its own pass.
std::string format_plan(const std::vector<PipelineReceive>& plan, const std::vector<PipelineAction>& schedule) {
  std::string s;
  for (const auto& r : plan) {
    if (!s.empty()) s += ' ';
    s += format_pipeline_order({schedule[static_cast<size_t>(r.action)]}) + "@" +
         (r.ahead ? format_pipeline_order({schedule[static_cast<size_t>(r.post_after)]}) : "own");
  }
  return s;
}

/// A message (microbatch, receiving global stage) on a link.
using Message = std::pair<int64_t, int64_t>;

/// The messages pipeline rank `sender` sends to rank `receiver` over link `link`, in its schedule's order.
std::vector<Message> sends(int pp, int vpp, int sender, int receiver, int link, int64_t microbatches) {
  const int64_t stages = int64_t{pp} * vpp;
  std::vector<Message> out;
  for (const auto& a : pipeline_schedule(pp, vpp, sender, microbatches)) {
    const int64_t g = int64_t{a.chunk} * pp + sender;
    const bool gradient = a.kind == Kind::Backward;
    const int64_t to = gradient ? g - 1 : g + 1;
    if (to < 0 || to >= stages || to % pp != receiver) continue;
    if (link_of(gradient, to % pp > g % pp) == link) out.emplace_back(a.microbatch, to);
  }
  return out;
}

/// Plays `stage`'s plan as the executor does (per pass: post its receive when not posted ahead, wait for it, post
/// the ones due after it) and checks it; returns the messages per link in the order they were posted.
std::map<int, std::vector<Message>> play(int pp, int vpp, int stage, int64_t microbatches, int depth) {
  const auto schedule = pipeline_schedule(pp, vpp, stage, microbatches);
  const auto plan = pipeline_receive_plan(pp, vpp, stage, microbatches, depth);
  std::map<int64_t, const PipelineReceive*> by_action;
  for (const auto& r : plan) {
    CHECK(by_action.emplace(r.action, &r).second);  // one receive per pass
    if (r.ahead) {
      CHECK(r.post_after >= 0);
      CHECK(r.post_after < r.action);  // posted before it is waited for
    } else {
      CHECK(r.post_after == -1);
    }
  }
  std::map<int, std::vector<Message>> posted;
  std::map<int, int> in_flight;
  std::set<int64_t> waiting;  // actions whose receive is posted, not yet waited for
  std::set<int> used;         // links with a receive posted or waited for so far
  auto post = [&](const PipelineReceive& r) {
    const auto& a = schedule[static_cast<size_t>(r.action)];
    const int link = link_of(r.gradient, r.to_higher);
    CHECK(used.insert(link).second != r.ahead);  // only a link's first receive is posted by its own pass
    posted[link].emplace_back(a.microbatch, int64_t{a.chunk} * pp + stage);
    CHECK(++in_flight[link] <= depth);
    waiting.insert(r.action);
  };
  auto post_due = [&](int64_t after) {
    for (const auto& r : plan)
      if (r.ahead && r.post_after == after) post(r);
  };
  for (int64_t i = 0; i < static_cast<int64_t>(schedule.size()); ++i) {
    const auto& a = schedule[static_cast<size_t>(i)];
    const int64_t g = int64_t{a.chunk} * pp + stage;
    const bool has_input = a.kind == Kind::Forward ? g > 0 : g < int64_t{pp} * vpp - 1;
    REQUIRE(by_action.count(i) == (has_input ? 1u : 0u));
    if (has_input) {
      const auto& r = *by_action[i];
      CHECK(r.gradient == (a.kind == Kind::Backward));
      if (!r.ahead) post(r);
      CHECK(waiting.erase(i) == 1);  // posted before this wait
      --in_flight[link_of(r.gradient, r.to_higher)];
    }
    post_due(i);
  }
  CHECK(waiting.empty());
  return posted;
}

}  // namespace

TEST_CASE("receive plan, 1F1B PP4 x 8 microbatches, depth 1: each link's next receive right after its last wait",
          "[pipeline][receives]") {
  const auto s1 = pipeline_schedule(4, 1, 1, 8);
  CHECK(format_plan(pipeline_receive_plan(4, 1, 1, 8, 1), s1) ==
        "F0.0@own F1.0@F0.0 F2.0@F1.0 B0.0@own F3.0@F2.0 B1.0@B0.0 F4.0@F3.0 B2.0@B1.0 F5.0@F4.0 B3.0@B2.0 "
        "F6.0@F5.0 B4.0@B3.0 F7.0@F6.0 B5.0@B4.0 B6.0@B5.0 B7.0@B6.0");
  // The first rank receives only gradients, the last only hidden states.
  const auto s0 = pipeline_schedule(4, 1, 0, 8);
  CHECK(format_plan(pipeline_receive_plan(4, 1, 0, 8, 1), s0) ==
        "B0.0@own B1.0@B0.0 B2.0@B1.0 B3.0@B2.0 B4.0@B3.0 B5.0@B4.0 B6.0@B5.0 B7.0@B6.0");
  const auto s3 = pipeline_schedule(4, 1, 3, 8);
  CHECK(format_plan(pipeline_receive_plan(4, 1, 3, 8, 1), s3) ==
        "F0.0@own F1.0@F0.0 F2.0@F1.0 F3.0@F2.0 F4.0@F3.0 F5.0@F4.0 F6.0@F5.0 F7.0@F6.0");
}

TEST_CASE("receive plan, depth 3: the next three posted after the first one's wait", "[pipeline][receives]") {
  const auto s1 = pipeline_schedule(4, 1, 1, 8);
  const auto plan = pipeline_receive_plan(4, 1, 1, 8, 3);
  CHECK(format_plan({plan.begin(), plan.begin() + 8}, s1) ==
        "F0.0@own F1.0@F0.0 F2.0@F0.0 B0.0@own F3.0@F0.0 B1.0@B0.0 F4.0@F1.0 B2.0@B0.0");
}

TEST_CASE("receive plan, interleaved PP2 VPP2 x 4 microbatches, depth 1: the wrap-around links",
          "[pipeline][receives]") {
  // Rank 0: chunk 1 (global stage 2) receives hidden states from rank 1 (towards a lower rank) and gradients from
  // rank 1's chunk 1 (global stage 3); chunk 0 receives gradients from rank 1's chunk 0.
  const auto s0 = pipeline_schedule(2, 2, 0, 4);
  const auto plan = pipeline_receive_plan(2, 2, 0, 4, 1);
  for (const auto& r : plan) {
    const auto& a = s0[static_cast<size_t>(r.action)];
    CHECK_FALSE(r.to_higher);  // rank 0 receives everything from rank 1
    CHECK(r.gradient == (a.kind == Kind::Backward));
  }
  CHECK(format_plan(plan, s0) ==
        "F0.1@own F1.1@F0.1 B0.1@own B1.1@B0.1 F2.1@F1.1 B0.0@B1.1 F3.1@F2.1 B1.0@B0.0 B2.1@B1.0 B3.1@B2.1 "
        "B2.0@B3.1 B3.0@B2.0");
  for (const auto& r : pipeline_receive_plan(2, 2, 1, 4, 1)) CHECK(r.to_higher);  // rank 1: all from rank 0
}

TEST_CASE("receive plan: posted before waited, per link in the sender's order, at most depth in flight",
          "[pipeline][receives]") {
  for (int pp : {2, 3, 4})
    for (int vpp : {1, 2, 3})
      for (int64_t m : {int64_t{4}, int64_t{8}, int64_t{12}})
        for (int depth : {1, 2, 4}) {
          if (vpp > 1 && m % pp != 0) continue;
          INFO("PP " << pp << " VPP " << vpp << " microbatches " << m << " depth " << depth);
          for (int stage = 0; stage < pp; ++stage) {
            INFO("stage " << stage);
            const auto posted = play(pp, vpp, stage, m, depth);
            size_t received = 0;
            for (int link = 0; link < 4; ++link) {
              const bool gradient = link >= 2;  // gradients come from the next rank, hidden states the previous
              const int sender = (stage + (gradient ? 1 : pp - 1)) % pp;
              const auto it = posted.find(link);
              const std::vector<Message> got = it == posted.end() ? std::vector<Message>{} : it->second;
              CHECK(got == sends(pp, vpp, sender, stage, link, m));
              received += got.size();
            }
            CHECK(received > 0);
          }
        }
}

TEST_CASE("receive plan: depth below 1 and bad layouts are refused", "[pipeline][receives]") {
  CHECK_THROWS_AS(pipeline_receive_plan(2, 1, 0, 4, 0), std::invalid_argument);
  CHECK_THROWS_AS(pipeline_receive_plan(2, 2, 0, 3, 1), std::invalid_argument);
  CHECK_THROWS_AS(pipeline_receive_plan(2, 1, 2, 4, 1), std::invalid_argument);
}
