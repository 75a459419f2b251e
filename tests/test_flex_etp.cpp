// The flex dispatcher (Megatron-Core's MoEFlexTokenDispatcher with DeepEP's normal kernels) and ETP > 1 (the
// experts' tensor parallelism) in the step-time model, worked by hand from docs/step-time.md's "flex and ETP"
// formulas: the bytes, the bus factors and the bandwidths (issue 43 item 4).
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "catalog/hardware.h"
#include "catalog/models.h"
#include "layout/parallel_group.h"
#include "layout/rank_map.h"
#include "plan/analytical_costs.h"
#include "plan/collective_time.h"
#include "plan/compute_profile.h"
#include "plan/pass_collectives.h"
#include "plan/prediction_basis.h"
#include "plan/step_time.h"
#include "recipe/validate.h"
#include "settings/switches.h"
#include "test_util.h"

using namespace recipebench;

namespace flex_etp_test {

/// One chunk of Qwen3.5-397B-A17B (h 4,096, 512 experts, top-10) with 4 MoE layers and 8,192 tokens at TP 2: a rank
/// holds 4,096 of them in the MoE block.
ChunkShape qwen_chunk(int ep, int etp) {
  ChunkShape s;
  s.gdn_layers = 3;
  s.attention_layers = 1;
  s.tokens = 8192;
  s.row_tokens = 8192;
  s.tp = 2;
  s.ep = ep;
  s.etp = etp;
  return s;
}

std::vector<CollectiveUse> uses_of(const std::vector<CollectiveUse>& uses, GroupKind g, CollectiveRole role) {
  std::vector<CollectiveUse> out;
  for (const CollectiveUse& u : uses)
    if (u.group == g && u.role == role) out.push_back(u);
  return out;
}

const Link kNvlink{450e9, kNvlinkStepLatencySeconds, "NVLink"};  // H100 / H200: 900 GB/s both directions
const Link kNetShare{50e9, kNetworkStepLatencySeconds, "inter-node network"};  // 3.2 Tb/s per node of 8 GPUs

}  // namespace flex_etp_test

using namespace flex_etp_test;

TEST_CASE("flex: the expected destinations of a token's top-k experts, by hand", "[layout-pricing][flex]") {
  // n (1 - prod_{i<k} (E - E/n - i) / (E - i)): EP 8 of 512 experts, top-10: 8 (1 - 448/512 x 447/511 x ... x 439/503).
  double none = 1;
  for (int i = 0; i < 10; ++i) none *= (448.0 - i) / (512.0 - i);
  CHECK(expected_destinations(512, 10, 8) == Approx(8 * (1 - none)).epsilon(1e-14));
  CHECK(expected_destinations(512, 10, 8) == Approx(5.922006244814218).epsilon(1e-12));
  CHECK(expected_destinations(512, 10, 2) == Approx(1.9982141880544357).epsilon(1e-12));  // two nodes: nearly both
  CHECK(expected_destinations(8, 2, 8) == Approx(2));  // an expert per rank: every slot its own rank
  CHECK(expected_destinations(512, 10, 1) == 1);
  CHECK(expected_destinations(512, 10, 512) == Approx(10));
  CHECK_THROWS_AS(expected_destinations(8, 9, 8), std::invalid_argument);
  CHECK_THROWS_AS(expected_destinations(8, 2, 0), std::invalid_argument);
}

TEST_CASE("flex: DeepEP's dispatch of one layer within a node and across two, by hand", "[layout-pricing][flex]") {
  const ModelConfig& m = *find_model("Qwen3.5-397B-A17B");
  CollectiveSizes sizes;  // BF16: 2-byte activations
  sizes.dispatcher = Dispatcher::kFlex;
  // Within one node, EP 8: each of the rank's 4,096 tokens once per destination rank, 5.922 of them: 4,096 x 5.922 x
  // 4,096 x 2 bytes per call (the all-to-all's size), over the ETP x EP group of 8, on NVLink at (8 - 1) / 8.
  const auto fwd = pass_collectives(m, qwen_chunk(8, 1), false, 0, sizes);
  CHECK(uses_of(fwd, GroupKind::kEp, CollectiveRole::kRoutingCounts).empty());  // DeepEP's layout is in its kernels
  const auto d8 = uses_of(fwd, GroupKind::kEtpEp, CollectiveRole::kDispatch);
  const auto c8 = uses_of(fwd, GroupKind::kEtpEp, CollectiveRole::kCombine);
  REQUIRE(d8.size() == 1);
  REQUIRE(c8.size() == 1);
  const double bytes8 = 4096 * 5.922006244814218 * 4096 * 2;  // 198.7 MB where alltoall sends 335.5 MB (10 slots)
  CHECK(d8[0].bytes == Approx(bytes8).epsilon(1e-12));
  CHECK(d8[0].calls == 4);  // 4 MoE layers
  CHECK(d8[0].ranks == 8);
  CHECK(d8[0].node_bytes == 0);
  CHECK(c8[0].bytes == d8[0].bytes);
  const double intranode = deepep_seconds(d8[0].bytes, d8[0].node_bytes, 8, 1, kNvlink, kNetShare);
  CHECK(intranode == Approx(7 * 3.4e-6 + bytes8 * 7 / 8 / 450e9).epsilon(1e-12));  // 410.2 us
  // A backward with full recompute: the recompute's dispatch and combine, and the backward's (a combine, a dispatch).
  CHECK(uses_of(pass_collectives(m, qwen_chunk(8, 1), true, 1, sizes), GroupKind::kEtpEp, CollectiveRole::kDispatch)
            .at(0)
            .calls == 8);

  // EP 16 over two nodes of 8: each token once per destination node over the network (1.998 of 2) and once per
  // destination rank (7.658 of 16) over NVLink from there; the slower leg is the call's time.
  sizes.flex_nodes = 2;
  const auto d16 = uses_of(pass_collectives(m, qwen_chunk(16, 1), false, 0, sizes), GroupKind::kEtpEp,
                           CollectiveRole::kDispatch);
  REQUIRE(d16.size() == 1);
  const double rank_bytes = 4096 * 7.658290681960684 * 4096 * 2, node_bytes = 4096 * 1.9982141880544357 * 4096 * 2;
  CHECK(d16[0].bytes == Approx(rank_bytes).epsilon(1e-12));
  CHECK(d16[0].node_bytes == Approx(node_bytes).epsilon(1e-12));
  const double nvlink_leg = 7 * 3.4e-6 + rank_bytes * 7 / 8 / 450e9;  // 8 ranks a node: 564.7 us
  const double network_leg = 1 * 14e-6 + node_bytes * 1 / 2 / 50e9;   // 2 nodes at a GPU's share: 684.6 us
  const double internode = deepep_seconds(d16[0].bytes, d16[0].node_bytes, 8, 2, kNvlink, kNetShare);
  CHECK(internode == Approx(std::max(nvlink_leg, network_leg)).epsilon(1e-12));
  CHECK(internode == Approx(network_leg).epsilon(1e-12));
  CHECK(internode > intranode);
  // The alltoall dispatcher's all-to-all of the same rank across the two nodes, as NCCL sends it: 10 slots a token,
  // 7 / 16 of them to the node's peers over NVLink, 8 / 16 over the network at the GPU's share, the slower leg:
  // 4.9 times flex's (the whole group on the network, the rule before 2026-12-06, was 9.5 times).
  const double bytes = 4096.0 * 10 * 4096 * 2;
  const double a2a = split_all_to_all_seconds(bytes, 8, 2, kNvlink, kNetShare);
  const double a2a_nvlink = 7 * 3.4e-6 + bytes * 8 / 16 * 7 / 8 / 450e9, a2a_network = 1 * 14e-6 + bytes / 2 / 50e9;
  CHECK(a2a == Approx(std::max(a2a_nvlink, a2a_network)).epsilon(1e-12));
  CHECK(a2a == Approx(a2a_network).epsilon(1e-12));
  CHECK(a2a / internode == Approx(4.923).epsilon(1e-3));
  const double whole = collective_seconds(Collective::kAllToAll, bytes, 16, kNetShare);
  CHECK(whole == Approx(15 * 14e-6 + bytes * 15 / 16 / 50e9).epsilon(1e-12));
  CHECK(whole / internode == Approx(9.498).epsilon(1e-3));
  // On one node the split all-to-all is the NVLink all-to-all itself.
  CHECK(split_all_to_all_seconds(bytes, 8, 1, kNvlink, kNetShare) ==
        Approx(collective_seconds(Collective::kAllToAll, bytes, 8, kNvlink)).epsilon(1e-15));
  CHECK_THROWS_AS(deepep_seconds(1, 1, 8, 0, kNvlink, kNetShare), std::invalid_argument);
}

TEST_CASE("ETP: the all-gather and reduce-scatter of the dispatched rows over the ETP group, by hand",
          "[layout-pricing][etp]") {
  const ModelConfig& m = *find_model("Qwen3.5-397B-A17B");
  const CollectiveSizes sizes;  // alltoall, host_splits
  // EP 4, ETP 2: the all-to-all over EP unchanged (4,096 x 10 rows of 4,096 BF16 values); then per MoE layer an
  // all-gather over ETP of the rows received, ETP x 4,096 x 10 rows (671 MB), and before the combine a reduce-scatter
  // of the same buffer.
  const auto fwd = pass_collectives(m, qwen_chunk(4, 2), false, 0, sizes);
  const auto a2a = uses_of(fwd, GroupKind::kEp, CollectiveRole::kDispatch);
  REQUIRE(a2a.size() == 1);
  CHECK(a2a[0].bytes == 4096.0 * 10 * 4096 * 2);
  CHECK(a2a[0].ranks == 4);
  const auto gather = uses_of(fwd, GroupKind::kEtp, CollectiveRole::kDispatch);
  const auto scatter = uses_of(fwd, GroupKind::kEtp, CollectiveRole::kCombine);
  REQUIRE(gather.size() == 1);
  REQUIRE(scatter.size() == 1);
  CHECK(gather[0].op == Collective::kAllGather);
  CHECK(scatter[0].op == Collective::kReduceScatter);
  CHECK(gather[0].bytes == 2 * 4096.0 * 10 * 4096 * 2);
  CHECK(scatter[0].bytes == gather[0].bytes);
  CHECK(gather[0].calls == 4);
  CHECK(gather[0].ranks == 2);
  // On NVLink: one step's latency and the buffer's half at 450 GB/s: 745.7 us a call.
  CHECK(collective_seconds(gather[0].op, gather[0].bytes, 2, kNvlink) ==
        Approx(3.4e-6 + 2 * 4096.0 * 10 * 8192 / 2 / 450e9).epsilon(1e-12));
  // A backward with full recompute: the recompute's gather and scatter, then the mirror (a reduce-scatter at the
  // dispatch, an all-gather at the combine).
  const auto bwd = uses_of(pass_collectives(m, qwen_chunk(4, 2), true, 1, sizes), GroupKind::kEtp,
                           CollectiveRole::kDispatch);
  REQUIRE(bwd.size() == 2);
  CHECK(bwd[0].op == Collective::kAllGather);
  CHECK(bwd[1].op == Collective::kReduceScatter);
  CHECK(bwd[0].calls + bwd[1].calls == 8);
  // ETP 1: no ETP collective, and the EP list is today's.
  const auto one = pass_collectives(m, qwen_chunk(4, 1), false, 0, sizes);
  int ep_uses = 0;
  for (const CollectiveUse& u : one) {
    CHECK((u.group != GroupKind::kEtp && u.group != GroupKind::kEtpEp));
    ep_uses += u.group == GroupKind::kEp;
  }
  CHECK(ep_uses == 3);  // routing counts, dispatch, combine (beside TP's entries and exits)
  // flex at ETP 2 has no ETP gather: the ETP ranks are destinations (ETP x the EP ranks a token's experts hit).
  CollectiveSizes flex = sizes;
  flex.dispatcher = Dispatcher::kFlex;
  const auto f = pass_collectives(m, qwen_chunk(4, 2), false, 0, flex);
  CHECK(uses_of(f, GroupKind::kEtp, CollectiveRole::kDispatch).empty());
  CHECK(uses_of(f, GroupKind::kEtpEp, CollectiveRole::kDispatch).at(0).bytes ==
        Approx(4096 * 2 * expected_destinations(512, 10, 4) * 4096 * 2).epsilon(1e-12));
}

TEST_CASE("ETP: the experts' FLOP per rank unchanged, their weights and permutations by ETP", "[layout-pricing][etp]") {
  const ModelConfig& m = *find_model("Qwen3.5-397B-A17B");
  const ChunkShape one = qwen_chunk(4, 1), two = qwen_chunk(4, 2);
  // ETP 2 gathers both ETP ranks' rows (x 2) and runs each expert at half its width: the same FLOP on the rank.
  CHECK(component_work(ProfileComponent::kMoeExperts, m, two) == component_work(ProfileComponent::kMoeExperts, m, one));
  // Each expert split over the ETP ranks: half the weights a rank streams.
  CHECK(component_params(ProfileComponent::kMoeExperts, m, two) ==
        component_params(ProfileComponent::kMoeExperts, m, one) / 2);
  // The permutations (analytical count, bytes per token over h, k = 10): alltoall at ETP 1 exactly 1 and 1; ETP 2
  // sorts the gathered rows: dispatch (4k + 4k 2) / 8k = 1.5, combine (4k 2 + 2k + 2) / (6k + 2) = 102 / 62.
  const DispatchWork base = dispatch_work(m, one, Dispatcher::kAlltoall, FlexFanout{});
  CHECK(base.dispatch == 1);
  CHECK(base.combine == 1);
  const DispatchWork etp2 = dispatch_work(m, two, Dispatcher::kAlltoall, FlexFanout{});
  CHECK(etp2.dispatch == Approx(1.5));
  CHECK(etp2.combine == Approx(102.0 / 62));
  // flex at ETP 1, EP 8 (D = 5.922 a token): the receiver's permutation only, (2k + 2D) / 8k and (2k + 2D) / (6k + 2).
  const ChunkShape ep8 = qwen_chunk(8, 1);
  const DispatchWork flex = dispatch_work(m, ep8, Dispatcher::kFlex, flex_fanout(m, ep8, 1));
  CHECK(flex.dispatch == Approx((20 + 2 * 5.922006244814218) / 80).epsilon(1e-12));
  CHECK(flex.combine == Approx((20 + 2 * 5.922006244814218) / 62).epsilon(1e-12));
  CHECK(dispatch_work(m, ep8, Dispatcher::kAllgather, FlexFanout{}).dispatch == 1);  // its own pricing, unchanged
}

TEST_CASE("ETP 2 predicted: its collectives exposed, said in the assumptions", "[layout-pricing][etp]") {
  ValidatedRecipe v =
      validate_recipe_file(test::case_path("predict-unmodelled-layout-fields/base-alltoall.yaml"));  // TP2 PP6 EP8
  REQUIRE(v.ok());
  Recipe r = *v.recipe;
  r.layout.ep = 4;
  r.layout.etp = 1;
  const ModelConfig& m = *find_model(r.model);
  RunSettings settings;
  merge_switches(r.bench, RecipeBench{}, settings);
  StepTimeOptions o;
  o.settings = settings;
  // The analytical mode (no profile), read again at each layout's shape by predict_step.
  const UnitCosts costs =
      analytical_costs(hardware_catalog(), *find_gpu(r.gpu.type), m, chunk_shapes(build_rank_map(r, m), m, 0, 8192)[0]);
  const StepPrediction ep4 = predict_step(r, m, build_rank_map(r, m), costs, recipe_network(r), o);
  r.layout.etp = 2;
  const RankMap map = build_rank_map(r, m);
  CHECK(group_members(map, 0, GroupKind::kEtp) == std::vector<int>{0, 1});
  CHECK(group_members(map, 3, GroupKind::kEtpEp) == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  const StepPrediction etp2 = predict_step(r, m, map, costs, recipe_network(r), o);
  const RankStepTime& a = ep4.ranks.at(0);
  const RankStepTime& b = etp2.ranks.at(0);
  CHECK(b.ep_exposed > a.ep_exposed);  // the all-gathers and reduce-scatters over ETP
  double sum = 0;
  for (double c : b.compute) sum += c;
  sum += b.tp_exposed + b.ep_exposed + b.cp_exposed + b.pipeline_idle + b.dp_exposed + b.optimizer;
  CHECK(sum == Approx(b.step));
  bool said = false;
  for (const std::string& line : etp2.assumptions)
    said = said || line.find("ETP 2 (Megatron-Core's expert tensor parallelism, MoEAlltoAllTokenDispatcher)") !=
                       std::string::npos;
  CHECK(said);
  const PredictionBasis basis = prediction_basis(r, m, map, settings, costs, 1, etp2);
  REQUIRE(basis.not_modelled.size() == 1);
  CHECK(basis.not_modelled[0].rfind("layout.etp: 2 (the experts' split over ETP ranks and the dispatcher's "
                                    "collectives of it are priced",
                                    0) == 0);
}
