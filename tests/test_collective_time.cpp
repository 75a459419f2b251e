// The alpha-beta model of NCCL collectives (plan/collective_time.h): nccl-tests' bus-bandwidth factors on figures
// computed by hand, the link a group of the rank map runs on, the catalog's network figures, and the errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>

#include "catalog/hardware.h"
#include "layout/rank_map.h"
#include "plan/collective_time.h"
#include "recipe/validate.h"
#include "test_util.h"

using namespace recipebench;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

Link link(double bandwidth, double latency = 0, const std::string& name = "test") {
  return Link{bandwidth, latency, name};
}

/// A bare rank map of `world` ranks, 8 per node (group_spans_nodes reads only world).
RankMap map_of(int world) {
  RankMap m;
  m.world = world;
  m.per_node = 8;
  return m;
}

std::vector<int> ranks(int first, int count, int stride = 1) {
  std::vector<int> out;
  for (int i = 0; i < count; ++i) out.push_back(first + i * stride);
  return out;
}

}  // namespace

TEST_CASE("collectives: nccl-tests' bus factors and ring step counts", "[collective]") {
  CHECK(bus_factor(Collective::kAllReduce, 8) == Approx(2.0 * 7 / 8));
  CHECK(bus_factor(Collective::kReduceScatter, 8) == Approx(7.0 / 8));
  CHECK(bus_factor(Collective::kAllGather, 4) == Approx(3.0 / 4));
  CHECK(bus_factor(Collective::kAllToAll, 8) == Approx(7.0 / 8));
  CHECK(bus_factor(Collective::kSend, 2) == 1);
  CHECK(latency_steps(Collective::kAllReduce, 8) == 14);
  CHECK(latency_steps(Collective::kReduceScatter, 8) == 7);
  CHECK(latency_steps(Collective::kAllToAll, 8) == 7);
  CHECK(latency_steps(Collective::kSend, 2) == 1);
  for (auto k : {Collective::kAllReduce, Collective::kReduceScatter, Collective::kAllGather,
                 Collective::kAllToAll, Collective::kSend}) {
    CHECK(bus_factor(k, 1) == 0);
    CHECK(latency_steps(k, 1) == 0);
  }
  CHECK(collective_name(Collective::kReduceScatter) == "reduce-scatter");
}

TEST_CASE("collectives: 1 GiB on 8 GPUs at 450 GB/s, by hand", "[collective]") {
  const Link nv = link(450e9);
  // All-reduce: 2 (n-1)/n x size / bandwidth = 2 x 7/8 x 2^30 / 450e9 = 4.175 ms.
  CHECK(collective_seconds(Collective::kAllReduce, kGiB, 8, nv) == Approx(2.0 * 7 / 8 * kGiB / 450e9));
  CHECK(collective_seconds(Collective::kAllReduce, kGiB, 8, nv) == Approx(4.17566e-3).epsilon(1e-5));
  // Reduce-scatter of the full 1 GiB input, all-gather of the full output, all-to-all of one rank's rows: 7/8.
  for (auto k : {Collective::kReduceScatter, Collective::kAllGather, Collective::kAllToAll})
    CHECK(collective_seconds(k, kGiB, 8, nv) == Approx(7.0 / 8 * kGiB / 450e9));
  CHECK(collective_seconds(Collective::kSend, kGiB, 2, nv) == Approx(kGiB / 450e9));
  // With the latency: + 2 (n-1) steps for the all-reduce, n-1 for the others, 1 for send/recv.
  const Link lat = link(450e9, 3.4e-6);
  CHECK(collective_seconds(Collective::kAllReduce, kGiB, 8, lat) ==
        Approx(14 * 3.4e-6 + 2.0 * 7 / 8 * kGiB / 450e9));
  CHECK(collective_seconds(Collective::kAllGather, kGiB, 8, lat) == Approx(7 * 3.4e-6 + 7.0 / 8 * kGiB / 450e9));
  CHECK(collective_seconds(Collective::kSend, 1e6, 2, lat) == Approx(3.4e-6 + 1e6 / 450e9));
  // A small message is latency-bound: 8 bytes over 8 ranks is ~ 14 x alpha.
  CHECK(collective_seconds(Collective::kAllReduce, 8, 8, lat) == Approx(14 * 3.4e-6).epsilon(1e-6));
}

TEST_CASE("collectives: one rank or no bytes cost nothing, and time grows with the bytes and the group",
          "[collective]") {
  const Link l = link(100e9, 5e-6);
  for (auto k : {Collective::kAllReduce, Collective::kReduceScatter, Collective::kAllGather,
                 Collective::kAllToAll, Collective::kSend}) {
    CHECK(collective_seconds(k, kGiB, 1, l) == 0);
    CHECK(collective_seconds(k, 0, 8, l) == 0);
    double last = 0;
    for (double bytes = 1; bytes <= 16 * kGiB; bytes *= 4) {
      const double t = collective_seconds(k, bytes, 8, l);
      CHECK(t > last);
      last = t;
    }
  }
  CHECK(collective_seconds(Collective::kAllReduce, kGiB, 16, l) >
        collective_seconds(Collective::kAllReduce, kGiB, 8, l));
  // Twice the bandwidth halves the bandwidth term.
  CHECK(collective_seconds(Collective::kAllGather, kGiB, 8, link(200e9)) ==
        Approx(collective_seconds(Collective::kAllGather, kGiB, 8, link(100e9)) / 2));
}

TEST_CASE("collectives: bad bytes, group sizes and links are refused by value", "[collective]") {
  const Link l = link(100e9);
  CHECK_THROWS_MATCHES(collective_seconds(Collective::kAllReduce, -1, 8, l), std::invalid_argument,
                       Catch::Message("collective all-reduce: -1 bytes, expected >= 0"));
  CHECK_THROWS_MATCHES(collective_seconds(Collective::kAllGather, 1e6, 0, l), std::invalid_argument,
                       Catch::Message("collective: group size 0, expected >= 1"));
  CHECK_THROWS_MATCHES(collective_seconds(Collective::kAllGather, 1e6, 8, link(0, 0, "NVLink")),
                       std::invalid_argument,
                       Catch::Message("collective: link 'NVLink' bandwidth 0 bytes/s, expected > 0"));
  CHECK_THROWS_WITH(collective_seconds(Collective::kAllGather, 1e6, 8, link(-5e9)),
                    Catch::Contains("bandwidth -5e+09"));
  CHECK_THROWS_WITH(collective_seconds(Collective::kAllGather, 1e6, 8, link(1e9, -1e-6)),
                    Catch::Contains("latency -1e-06"));
  CHECK_THROWS_AS(collective_seconds(Collective::kAllReduce, std::nan(""), 8, l), std::invalid_argument);
  CHECK_THROWS_AS(bus_factor(Collective::kAllReduce, 0), std::invalid_argument);
  // Even a group of one checks its arguments.
  CHECK_THROWS_AS(collective_seconds(Collective::kAllReduce, 1e6, 1, link(0)), std::invalid_argument);
}

TEST_CASE("collectives: the catalog's links (NVLink one direction, 3,200 Gbps EFA per instance)", "[collective]") {
  const Link nv = nvlink_link(*find_gpu("H100"));
  CHECK(nv.bandwidth_bytes_per_s == Approx(450e9));  // 900 GB/s both directions
  CHECK(nv.latency_s == kNvlinkStepLatencySeconds);
  CHECK(nvlink_link(*find_gpu("B200")).bandwidth_bytes_per_s == Approx(900e9));
  for (const char* name : {"p5.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge"}) {  // the seed's instances
    const InstanceSpec& i = *find_instance(name);
    CHECK(i.network_bytes_per_s == Approx(400e9));  // 3,200 Gbps / 8 bits
    CHECK_THAT(i.network_source, Catch::Contains("3,200 Gbps") && Catch::Contains(i.name));
  }
  for (const auto& i : instance_catalog()) {
    INFO(i.label());
    CHECK(i.network_bytes_per_s >= 12.5e9);  // every catalog instance states its network: 100 Gbps or more
    CHECK(node_network_link(i).latency_s == kNetworkStepLatencySeconds);
  }
  InstanceSpec none;
  none.provider = "X";
  none.name = "y";
  CHECK_THROWS_WITH(node_network_link(none), "collective: instance X y has no inter-node network figure");
}

TEST_CASE("collectives: a group within a node runs on NVLink, one across nodes on the GPU's network share",
          "[collective]") {
  const RankMap m = map_of(16);
  const Link nv = link(450e9, 3.4e-6, "NVLink"), net = link(400e9, 14e-6, "inter-node network");
  CHECK_FALSE(group_spans_nodes(m, ranks(0, 8), 8));
  CHECK_FALSE(group_spans_nodes(m, ranks(8, 8), 8));
  CHECK(group_spans_nodes(m, {7, 8}, 8));
  CHECK(group_spans_nodes(m, ranks(0, 2, 8), 8));
  CHECK_FALSE(group_spans_nodes(m, {3}, 8));
  CHECK(group_link(m, ranks(0, 8), 8, nv, net).name == "NVLink");
  const Link across = group_link(m, ranks(0, 2, 8), 8, nv, net);
  CHECK(across.name == "inter-node network");
  CHECK(across.bandwidth_bytes_per_s == Approx(50e9));  // 400e9 / 8 GPUs of the node
  CHECK(across.latency_s == 14e-6);
  // The DP all-reduce of 1 GiB over 2 nodes: 2 x 1/2 x 2^30 / 50e9 + 2 x 14 us.
  CHECK(collective_seconds(Collective::kAllReduce, kGiB, 2, across) == Approx(kGiB / 50e9 + 2 * 14e-6));
  // A network faster than a GPU's NVLink (not in the catalog): the slower one, NVLink's bandwidth, is kept.
  const Link slow_nv = link(10e9, 1e-6, "NVLink");
  CHECK(group_link(m, {0, 8}, 8, slow_nv, net).bandwidth_bytes_per_s == 10e9);
  CHECK(group_link(m, {0, 8}, 8, slow_nv, net).latency_s == 14e-6);
  CHECK_THROWS_WITH(group_spans_nodes(m, {0, 16}, 8), "collective group: rank 16 outside 0..15");
  CHECK_THROWS_WITH(group_spans_nodes(m, {}, 8), "collective group: no members");
  CHECK_THROWS_WITH(group_spans_nodes(m, {0}, 0), "collective group: 0 GPUs per node, expected >= 1");
  CHECK_THROWS_AS(group_link(m, {0, 8}, 8, nv, link(0)), std::invalid_argument);
}

TEST_CASE("collectives: the seed's TP2 PP8 DP4 layout: DP within a node, pipeline neighbours across nodes",
          "[collective]") {
  const ValidatedRecipe v = validate_recipe_file(test::seed_recipe("attune-tp2-pp8-ep8-vpp2-mt16k"));
  REQUIRE(v.ok());
  const RankMap m = build_rank_map(*v.recipe, *find_model(v.recipe->model));
  REQUIRE(m.per_node == 8);
  const Link nv = nvlink_link(*find_gpu("B200"));
  const Link net = node_network_link(*find_instance("p6-b200.48xlarge"));
  // rank = tp + TP (dp + DP pp): the DP group of rank 0 is {0, 2, 4, 6}, its pipeline group {0, 8, ..., 56}.
  const std::vector<int> dp = ranks(0, 4, 2), pp = ranks(0, 8, 8);
  for (int r : dp) CHECK(m.ranks[size_t(r)].tp == 0);
  for (int r : pp) CHECK(m.ranks[size_t(r)].dp == 0);
  CHECK_FALSE(group_spans_nodes(m, dp, m.per_node));
  CHECK(group_link(m, dp, m.per_node, nv, net).bandwidth_bytes_per_s == Approx(900e9));
  CHECK(group_spans_nodes(m, {0, 8}, m.per_node));
  CHECK(group_link(m, {0, 8}, m.per_node, nv, net).bandwidth_bytes_per_s == Approx(50e9));
}

TEST_CASE("the table of collectives: one row per operation in enum order, shared by the model and the traffic",
          "[collective]") {
  const char* records[] = {"all_reduce", "reduce_scatter", "all_gather", "all_to_all", "send", "recv", "barrier"};
  for (int i = 0; i < kCollectives; ++i) {
    const Collective op = static_cast<Collective>(i);
    CHECK(collective_row(op).op == op);
    CHECK(std::string(collective_row(op).record_name) == records[i]);
  }
  // Send and recv move their message once (bus factor 1, one step); a barrier moves nothing in 2(n-1) steps.
  CHECK(bus_factor(Collective::kRecv, 2) == 1);
  CHECK(latency_steps(Collective::kSend, 8) == 1);
  CHECK(bus_factor(Collective::kBarrier, 8) == 0);
  CHECK(latency_steps(Collective::kBarrier, 8) == 14);
}
