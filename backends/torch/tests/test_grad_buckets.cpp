// The gradient buckets of bench.overlap_grad_reduce as pure data (optim/grad_buckets.h, optim/grad_sync_order.h):
// which parameters fall in which bucket, where each rank's slices land in its shard, the padding, and the one launch
// order of a rank's buckets whatever order they become ready in; the deferred parameter all-gathers of
// bench.overlap_param_gather (optim/param_gather.h): launched in the forward's order, finished before their modules.
#include <catch2/catch.hpp>

#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "optim/grad_buckets.h"
#include "optim/grad_sync_order.h"
#include "optim/param_gather.h"

using recipebench::train::BucketLauncher;
using recipebench::train::GatherLauncher;
using recipebench::train::GradBucketLayout;
using recipebench::train::GradSyncOrder;
using recipebench::train::make_grad_bucket_layout;
using recipebench::train::ParamGatherOrder;
using recipebench::train::shard_segments;
using recipebench::train::ShardSegment;

namespace {

/// (param, param_offset, shard_offset, n) of each segment.
std::vector<std::vector<int64_t>> rows(const std::vector<ShardSegment>& s) {
  std::vector<std::vector<int64_t>> out;
  for (const auto& x : s) out.push_back({static_cast<int64_t>(x.param), x.param_offset, x.shard_offset, x.n});
  return out;
}

/// Every element of every parameter lies in exactly one rank's shard, inside it, without two segments of a rank
/// overlapping; each parameter lies inside its bucket.
void check_cover(const std::vector<int64_t>& numels, int dp, int64_t bucket_elements) {
  INFO("dp " << dp << ", bucket " << bucket_elements);
  const GradBucketLayout l = make_grad_bucket_layout(numels, dp, bucket_elements);
  CHECK(l.flat_numel == l.shard_numel * dp);
  std::vector<std::vector<int>> seen(numels.size());
  for (size_t p = 0; p < numels.size(); ++p) {
    seen[p].assign(static_cast<size_t>(numels[p]), 0);
    const auto& b = l.buckets[l.param_bucket[p]];
    CHECK(l.param_offset[p] >= b.offset);
    CHECK(l.param_offset[p] + numels[p] <= b.offset + b.numel);
  }
  for (int r = 0; r < dp; ++r) {
    std::vector<int> used(static_cast<size_t>(l.shard_numel), 0);
    for (const auto& s : shard_segments(l, numels, r, dp))
      for (int64_t k = 0; k < s.n; ++k) {
        ++seen[s.param][static_cast<size_t>(s.param_offset + k)];
        ++used[static_cast<size_t>(s.shard_offset + k)];
      }
    for (int u : used) CHECK(u <= 1);
  }
  for (const auto& v : seen)
    for (int c : v) CHECK(c == 1);
}

/// Records the launches.
struct Recorder : BucketLauncher {
  Recorder(std::string n, std::vector<std::string>& l) : name(std::move(n)), log(l) {}
  void launch_bucket(size_t b) override { log.push_back(name + std::to_string(b)); }
  std::string name;
  std::vector<std::string>& log;
};

/// Records the gathers' launches ("+A0") and finishes ("-A0").
struct GatherRecorder : GatherLauncher {
  GatherRecorder(std::string n, std::vector<std::string>& l) : name(std::move(n)), log(l) {}
  void launch_gather(size_t b) override { log.push_back("+" + name + std::to_string(b)); }
  void finish_gather(size_t b) override { log.push_back("-" + name + std::to_string(b)); }
  std::string name;
  std::vector<std::string>& log;
};

}  // namespace

TEST_CASE("without a bucket size the buffer is today's one padded bucket in parameter order", "[grad_buckets]") {
  const std::vector<int64_t> numels{10, 300, 5};
  const auto l = make_grad_bucket_layout(numels, 4, 0);
  CHECK(l.param_offset == std::vector<int64_t>{0, 10, 310});
  REQUIRE(l.buckets.size() == 1);
  CHECK(l.buckets[0].params == std::vector<size_t>{0, 1, 2});
  CHECK(l.buckets[0].offset == 0);
  CHECK(l.buckets[0].numel == 316);  // 315 padded to a multiple of DP 4
  CHECK(l.shard_numel == 79);        // ceil(315 / 4), the shard without buckets
  CHECK(rows(shard_segments(l, numels, 0, 4)) == std::vector<std::vector<int64_t>>{{0, 0, 0, 10}, {1, 0, 10, 69}});
  CHECK(rows(shard_segments(l, numels, 1, 4)) == std::vector<std::vector<int64_t>>{{1, 69, 0, 79}});
  CHECK(rows(shard_segments(l, numels, 3, 4)) == std::vector<std::vector<int64_t>>{{1, 227, 0, 73}, {2, 0, 73, 5}});
}

TEST_CASE("buckets take the parameters in reverse order, close at the bucket size and pad to DP x 64",
          "[grad_buckets]") {
  const std::vector<int64_t> numels{10, 300, 5, 200, 70};
  const auto l = make_grad_bucket_layout(numels, 2, 256);
  REQUIRE(l.buckets.size() == 3);
  CHECK(l.buckets[0].params == std::vector<size_t>{4, 3});  // 70 + 200 = 270 >= 256: closed
  CHECK(l.buckets[1].params == std::vector<size_t>{2, 1});  // 5 + 300 = 305
  CHECK(l.buckets[2].params == std::vector<size_t>{0});     // what is left
  CHECK(l.buckets[0].offset == 0);
  CHECK(l.buckets[0].numel == 384);  // 270 -> 3 x 128 (DP 2 x 64)
  CHECK(l.buckets[1].offset == 384);
  CHECK(l.buckets[1].numel == 384);  // 305 -> 384
  CHECK(l.buckets[2].offset == 768);
  CHECK(l.buckets[2].numel == 128);  // 10 -> 128
  CHECK(l.buckets[0].shard_offset == 0);
  CHECK(l.buckets[1].shard_offset == 192);
  CHECK(l.buckets[2].shard_offset == 384);
  CHECK(l.flat_numel == 896);
  CHECK(l.shard_numel == 448);
  CHECK(l.param_offset == std::vector<int64_t>{768, 389, 384, 70, 0});
  CHECK(l.param_bucket == std::vector<size_t>{2, 1, 1, 0, 0});
  // Rank 0's slices: flat [0, 192), [384, 576), [768, 832); rank 1's: [192, 384), [576, 768), [832, 896).
  CHECK(rows(shard_segments(l, numels, 0, 2)) ==
        std::vector<std::vector<int64_t>>{
            {4, 0, 0, 70}, {3, 0, 70, 122}, {2, 0, 192, 5}, {1, 0, 197, 187}, {0, 0, 384, 10}});
  CHECK(rows(shard_segments(l, numels, 1, 2)) ==
        std::vector<std::vector<int64_t>>{{3, 122, 0, 78}, {1, 187, 192, 113}});
}

TEST_CASE("a parameter of exactly the bucket size closes its bucket, and no empty bucket at the end",
          "[grad_buckets]") {
  const std::vector<int64_t> numels{100, 100};
  const auto l = make_grad_bucket_layout(numels, 1, 100);
  REQUIRE(l.buckets.size() == 2);
  CHECK(l.buckets[0].params == std::vector<size_t>{1});
  CHECK(l.buckets[0].numel == 128);
  CHECK(l.buckets[1].params == std::vector<size_t>{0});
  CHECK(l.param_offset == std::vector<int64_t>{128, 0});
  CHECK(make_grad_bucket_layout({}, 4, 100).buckets.empty());
  CHECK(make_grad_bucket_layout({}, 4, 100).flat_numel == 0);
  CHECK_THROWS_AS(make_grad_bucket_layout(numels, 0, 100), std::invalid_argument);
  CHECK_THROWS_AS(make_grad_bucket_layout({-1}, 1, 100), std::invalid_argument);
}

TEST_CASE("every element is in exactly one rank's shard, for any DP and bucket size", "[grad_buckets]") {
  const std::vector<int64_t> numels{7, 0, 129, 64, 1, 500, 33, 2};
  for (int dp : {1, 2, 3, 4, 8})
    for (int64_t bucket : {int64_t{0}, int64_t{1}, int64_t{50}, int64_t{128}, int64_t{1000}})
      check_cover(numels, dp, bucket);
}

TEST_CASE("buckets launch in one order whatever order they become ready in", "[grad_buckets][order]") {
  std::vector<std::string> log;
  Recorder a("A", log), b("B", log);
  GradSyncOrder order;
  order.add(&a, 0, 50);
  order.add(&a, 1, 30);
  order.add(&a, 2, 10);
  order.add(&b, 0, 40);
  order.add(&b, 1, 20);
  order.reset();
  order.ready(&b, 0);
  CHECK(log.empty());  // A0 (key 50) goes first
  order.ready(&a, 0);
  CHECK(log == std::vector<std::string>{"A0", "B0"});
  order.ready(&a, 2);
  order.ready(&b, 1);
  CHECK(log.size() == 2);  // A1 not ready
  order.ready(&a, 1);
  CHECK(log == std::vector<std::string>{"A0", "B0", "A1", "B1", "A2"});
  order.flush();  // nothing left
  CHECK(log.size() == 5);
  CHECK_THROWS_AS(order.ready(&a, 1), std::logic_error);  // twice in a step
  order.reset();
  CHECK(order.launched() == 0);
  order.ready(&a, 1);
  order.flush();  // the backward pass is over: everything, in order
  CHECK(std::vector<std::string>(log.begin() + 5, log.end()) == std::vector<std::string>{"A0", "B0", "A1", "B1", "A2"});
  CHECK_THROWS_AS(order.add(&a, 3, 0), std::logic_error);  // fixed after the first step
}

TEST_CASE("an optimizer whose buckets would launch out of index order is refused", "[grad_buckets][order]") {
  std::vector<std::string> log;
  Recorder a("A", log);
  GradSyncOrder order;
  order.add(&a, 0, 10);
  order.add(&a, 1, 50);  // bucket 1 expected complete before bucket 0
  CHECK_THROWS_AS(order.reset(), std::logic_error);
  GradSyncOrder unknown;
  unknown.add(&a, 0, 10);
  CHECK_THROWS_AS(unknown.ready(&a, 7), std::logic_error);
}

TEST_CASE("deferred gathers launch in the forward's order and each is finished before the first module that needs it",
          "[grad_buckets][param_gather]") {
  std::vector<std::string> log;
  GatherRecorder a("A", log), b("B", log);
  ParamGatherOrder order;
  // A's buckets in reverse parameter order (as overlap_grad_reduce lays them out), B's interleaved with them.
  order.add(&a, 0, 40);
  order.add(&a, 1, 20);
  order.add(&a, 2, 0);
  order.add(&b, 0, 30);
  order.add(&b, 1, 20);  // a tie with A1: registration order
  CHECK(order.order() ==
        std::vector<std::pair<const GatherLauncher*, size_t>>{{&a, 2}, {&a, 1}, {&b, 1}, {&b, 0}, {&a, 0}});
  // The first step: nothing deferred, nothing to launch or wait for.
  order.launch();
  order.wait_through(100);
  CHECK(log.empty());
  CHECK(order.outstanding() == 0);
  order.defer(&a);
  order.defer(&b);
  CHECK(order.outstanding() == 5);
  CHECK(log.empty());                                       // deferred: nothing launched by the update
  CHECK_THROWS_AS(order.add(&a, 3, 50), std::logic_error);  // fixed once a step deferred
  order.launch();
  CHECK(log == std::vector<std::string>{"+A2", "+A1", "+B1", "+B0", "+A0"});
  order.launch();  // idempotent
  CHECK(log.size() == 5);
  order.wait_through(9);  // a module of parameters 0..9: the bucket keyed 0
  CHECK(std::vector<std::string>(log.begin() + 5, log.end()) == std::vector<std::string>{"-A2"});
  order.wait_through(25);  // parameters 10..25: the buckets keyed 20, in order
  CHECK(std::vector<std::string>(log.begin() + 6, log.end()) == std::vector<std::string>{"-A1", "-B1"});
  order.wait_through(25);  // the next microbatch: nothing left to wait for up to there
  CHECK(log.size() == 8);
  order.finish();  // the rest
  CHECK(std::vector<std::string>(log.begin() + 8, log.end()) == std::vector<std::string>{"-B0", "-A0"});
  CHECK(order.outstanding() == 0);
  CHECK(order.launched() == 5);
}

TEST_CASE(
    "deferred gathers: a forward without the launch still launches first, finish(owner) leaves the others, "
    "deferring twice is refused",
    "[grad_buckets][param_gather]") {
  std::vector<std::string> log;
  GatherRecorder a("A", log), b("B", log);
  ParamGatherOrder order;
  order.add(&a, 0, 0);
  order.add(&b, 0, 10);
  order.defer(&a);
  order.defer(&b);
  CHECK_THROWS_AS(order.defer(&a), std::logic_error);  // its last gather never finished
  order.wait_through(0);                               // launches every pending bucket, then waits for the first
  CHECK(log == std::vector<std::string>{"+A0", "+B0", "-A0"});
  order.finish(&a);  // nothing of A's outstanding
  CHECK(log.size() == 3);
  order.finish(&b);
  CHECK(log.back() == "-B0");
  order.defer(&b);
  order.finish(&a);  // B's pending bucket stays pending
  CHECK(order.outstanding() == 1);
  order.finish();
  CHECK(std::vector<std::string>(log.begin() + 4, log.end()) == std::vector<std::string>{"+B0", "-B0"});
  CHECK(order.outstanding() == 0);
}
