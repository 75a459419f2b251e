// The layout fields the step-time model prices, or names as not modelled, and a prediction linked to the measurement
// of its layout (issue 43 item 4; the 2026-12-05 cases predict-unmodelled-layout-fields and
// predicted-vs-measured-not-linked, inputs in tests/data/cases/<case>/).
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "catalog/models.h"
#include "layout/parallel_group.h"
#include "layout/rank_map.h"
#include "plan/pass_collectives.h"
#include "plan/prediction_basis.h"
#include "plan/step_time.h"
#include "recipe/layout_check.h"
#include "recipe/validate.h"
#include "record/profile_source.h"
#include "record/run_record.h"
#include "record/run_record_check.h"
#include "report/leaderboard.h"
#include "report/predictions.h"
#include "settings/switches.h"
#include "test_util.h"

using namespace recipebench;
using recipebench::test::case_path;
using recipebench::test::source_path;

namespace {

const std::string kLayoutCase = "predict-unmodelled-layout-fields/";
const std::string kLinkCase = "predicted-vs-measured-not-linked/";

Recipe valid_recipe(const std::string& path) {
  ValidatedRecipe v = validate_recipe_file(path);
  REQUIRE(v.ok());
  return *v.recipe;
}

/// The six committed profiles the case's run.sh gives (../_shared/profiles.sh, P397): the seed's emulated ranks of
/// two layouts, first, middle and last stage.
const std::vector<ProfiledRank>& seed_profiles() {
  static const std::vector<ProfiledRank> ranks = [] {
    std::vector<ProfiledRank> out;
    const std::vector<std::string> folders = {
        "reports/bench/h200-2026-12-02-emulate-profile/attune-tp2-pp8-ep8-vpp2-mt16k-first-profile",
        "reports/bench/h200-2026-12-02-emulate-profile/attune-tp2-pp8-ep8-vpp2-mt16k-middle-profile",
        "reports/bench/h200-2026-12-02-emulate-profile/attune-tp2-pp8-ep8-vpp2-mt16k-last-profile",
        "reports/bench/h200-2026-12-03-predict/call2/seed-attune-48gpu-tp2-pp6-ep8-first",
        "reports/bench/h200-2026-12-03-predict/call2/seed-attune-48gpu-tp2-pp6-ep8-middle",
        "reports/bench/h200-2026-12-03-predict/call2/seed-attune-48gpu-tp2-pp6-ep8-last"};
    for (const std::string& folder : folders) {
      std::string file;
      for (const auto& e : std::filesystem::directory_iterator(source_path(folder))) file = e.path().string();
      out.push_back(profiled_rank(RunRecord::from_json(read_json_file(file), file), file));
    }
    return out;
  }();
  return ranks;
}

struct Predicted {
  StepPrediction p;
  PredictionBasis basis;
};

/// The case's recipe `name` predicted as `predict` does it with the six profiles and the recipe's own switches.
Predicted predict_case(const std::string& name) {
  const Recipe r = valid_recipe(case_path(kLayoutCase + name));
  const ModelConfig& m = *find_model(r.model);
  const RankMap map = build_rank_map(r, m);
  RunSettings settings;
  merge_switches(r.bench, RecipeBench{}, settings);
  StepTimeOptions o;
  o.settings = settings;
  const UnitCosts costs = fit_unit_costs(seed_profiles());
  Predicted out{predict_step(r, m, map, costs, recipe_network(r), o), {}};
  out.basis = prediction_basis(r, m, map, settings, costs, 1, out.p);
  return out;
}

/// The uses of `role` among `uses`.
std::vector<CollectiveUse> of_role(const std::vector<CollectiveUse>& uses, CollectiveRole role) {
  std::vector<CollectiveUse> out;
  for (const CollectiveUse& u : uses)
    if (u.role == role) out.push_back(u);
  return out;
}

bool any_contains(const std::vector<std::string>& lines, const std::string& part) {
  for (const std::string& l : lines)
    if (l.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("pass collectives: CP's ring exchange of keys and values per attention layer, by hand", "[layout-pricing]") {
  const ModelConfig& m = *find_model("Qwen3.5-397B-A17B");  // h 4096, 2 KV heads of 256
  ChunkShape s;
  s.attention_layers = 2;
  s.gdn_layers = 6;
  s.tokens = 4096;  // one 8,192-token row over CP 2
  s.row_tokens = 8192;
  s.tp = 2;
  s.cp = 2;
  CollectiveSizes sizes;  // BF16: 2-byte activations
  // 2 (K and V) x 4,096 tokens x 2 heads x 256 / TP 2 x 2 bytes = 4 MiB per ring step.
  CHECK(context_exchange_bytes(m, s, sizes.wire) == 2.0 * 4096 * 2 * 256 / 2 * 2);
  const auto fwd = of_role(pass_collectives(m, s, false, 0, sizes), CollectiveRole::kContextExchange);
  REQUIRE(fwd.size() == 2);  // a send and a receive per ring step
  CHECK(fwd[0].group == GroupKind::kCp);
  CHECK(fwd[0].op == Collective::kSend);
  CHECK(fwd[1].op == Collective::kRecv);
  CHECK(fwd[0].calls == 2);  // 2 attention layers x (CP - 1) steps
  CHECK(fwd[0].bytes == 4194304);
  // A backward with full recompute: the recompute's ring (1) and the backward's keys, values and gradients (2).
  const auto bwd = of_role(pass_collectives(m, s, true, 1, sizes), CollectiveRole::kContextExchange);
  REQUIRE(bwd.size() == 2);
  CHECK(bwd[0].calls == 2 * 3);
  s.cp = 4;
  CHECK(of_role(pass_collectives(m, s, false, 0, sizes), CollectiveRole::kContextExchange)[0].calls == 2 * 3);
  s.attention_layers = 0;  // a chunk of Gated DeltaNet layers only: nothing listed (their state passing not modelled)
  CHECK(of_role(pass_collectives(m, s, false, 0, sizes), CollectiveRole::kContextExchange).empty());
  s.attention_layers = 2;
  s.cp = 1;
  CHECK(of_role(pass_collectives(m, s, true, 1, sizes), CollectiveRole::kContextExchange).empty());
}

TEST_CASE("pass collectives: the allgather dispatcher gathers every EP rank's tokens once, by hand",
          "[layout-pricing]") {
  const ModelConfig& m = *find_model("Qwen3.5-397B-A17B");  // h 4096, 512 experts, top-10
  ChunkShape s;
  s.gdn_layers = 3;
  s.attention_layers = 1;
  s.tokens = 8192;
  s.row_tokens = 8192;
  s.tp = 2;
  s.ep = 8;
  CollectiveSizes sizes;
  sizes.dispatcher = Dispatcher::kAllgather;
  const auto fwd = pass_collectives(m, s, false, 0, sizes);
  const auto dispatch = of_role(fwd, CollectiveRole::kDispatch);
  const auto combine = of_role(fwd, CollectiveRole::kCombine);
  const auto map = of_role(fwd, CollectiveRole::kRoutingMap);
  REQUIRE(dispatch.size() == 1);
  REQUIRE(combine.size() == 1);
  REQUIRE(map.size() == 1);
  CHECK(of_role(fwd, CollectiveRole::kRoutingCounts).empty());
  // EP 8 x 8,192 / TP 2 tokens = 32,768 tokens of 4,096 BF16 values: 256 MiB gathered, 4 layers.
  CHECK(dispatch[0].op == Collective::kAllGather);
  CHECK(dispatch[0].bytes == 32768.0 * 4096 * 2);
  CHECK(dispatch[0].calls == 4);
  CHECK(combine[0].op == Collective::kReduceScatter);
  CHECK(combine[0].bytes == dispatch[0].bytes);
  CHECK(map[0].bytes == 32768.0 * 512 * 5);  // an FP32 probability and a bool per expert
  // alltoall moves top-k slots, not tokens: 4,096 x 10 rows of 4,096 values per call.
  sizes.dispatcher = Dispatcher::kAlltoall;
  const auto a2a = of_role(pass_collectives(m, s, false, 0, sizes), CollectiveRole::kDispatch);
  REQUIRE(a2a.size() == 1);
  CHECK(a2a[0].op == Collective::kAllToAll);
  CHECK(a2a[0].bytes == 4096.0 * 10 * 4096 * 2);
  // flex (DeepEP) sends each token once per destination rank: 5.92 of EP 8 for top-10 of 512, not 10 slots.
  sizes.dispatcher = Dispatcher::kFlex;
  const auto flex = of_role(pass_collectives(m, s, false, 0, sizes), CollectiveRole::kDispatch);
  REQUIRE(flex.size() == 1);
  CHECK(flex[0].op == Collective::kAllToAll);
  CHECK(flex[0].bytes == Approx(4096.0 * 5.922006244814218 * 4096 * 2).epsilon(1e-12));
  CHECK(flex[0].bytes < a2a[0].bytes);
  // A backward with full recompute: the recompute's gather and scatter, then the mirror.
  sizes.dispatcher = Dispatcher::kAllgather;
  const auto bwd = of_role(pass_collectives(m, s, true, 1, sizes), CollectiveRole::kDispatch);
  REQUIRE(bwd.size() == 2);
  CHECK(bwd[0].op == Collective::kAllGather);
  CHECK(bwd[1].op == Collective::kReduceScatter);
}

TEST_CASE("the CP group: same TP, DP and PP coordinates, TP apart in the rank order", "[layout-pricing]") {
  const Recipe r = valid_recipe(case_path(kLayoutCase + "cp2-dp2.yaml"));
  const RankMap map = build_rank_map(r, *find_model(r.model));
  CHECK(group_members(map, 0, GroupKind::kCp) == std::vector<int>{0, 2});
  CHECK(group_members(map, 5, GroupKind::kCp) == std::vector<int>{5, 7});
  CHECK(std::string(to_string(GroupKind::kCp)) == "cp");
  CHECK_THROWS_AS(parse_group_kind("cp"), std::invalid_argument);  // never a recorded group (the backend runs CP 1)
}

TEST_CASE("predict-unmodelled-layout-fields: the dispatcher and CP change the prediction or are named",
          "[layout-pricing][cases]") {
  const Predicted base = predict_case("base-alltoall.yaml");
  const Predicted allgather = predict_case("allgather.yaml");
  const Predicted flex = predict_case("flex-deepep.yaml");
  const Predicted cp2 = predict_case("cp2-dp2.yaml");
  const RankStepTime& b = base.p.ranks.at(static_cast<size_t>(base.p.critical_pp_rank));
  const RankStepTime& g = allgather.p.ranks.at(static_cast<size_t>(allgather.p.critical_pp_rank));
  // allgather moves EP x a rank's tokens where alltoall moves its top-k slots: 8 / 10 of the dispatch's bytes here,
  // plus the routing map; a different exposed EP and step, said in the assumptions, not "not modelled".
  CHECK(g.ep_exposed != Approx(b.ep_exposed).epsilon(1e-3));
  CHECK(allgather.p.tokens_per_s_per_gpu != Approx(base.p.tokens_per_s_per_gpu).epsilon(1e-4));
  CHECK(any_contains(allgather.p.assumptions, "EP dispatcher allgather (Megatron-LM's MoEAllGatherTokenDispatcher)"));
  CHECK_FALSE(any_contains(allgather.basis.not_modelled, "layout.dispatcher"));
  // flex: DeepEP's dispatch and combine priced (each token once per destination rank, within the node here), and
  // the sender's permutation fused into its kernel: less exposed EP, less dispatch and combine, a faster step; said
  // in the assumptions, and what of it is not priced named.
  const RankStepTime& f = flex.p.ranks.at(static_cast<size_t>(flex.p.critical_pp_rank));
  CHECK(f.ep_exposed < b.ep_exposed);
  CHECK(f.compute[static_cast<int>(ProfileComponent::kMoeDispatch)] <
        b.compute[static_cast<int>(ProfileComponent::kMoeDispatch)]);
  CHECK(f.compute[static_cast<int>(ProfileComponent::kMoeExperts)] ==
        b.compute[static_cast<int>(ProfileComponent::kMoeExperts)]);
  CHECK(flex.p.tokens_per_s_per_gpu > base.p.tokens_per_s_per_gpu);
  CHECK(any_contains(flex.p.assumptions, "EP dispatcher flex (Megatron-Core's MoEFlexTokenDispatcher with DeepEP's "
                                         "normal kernels, over the ETP x EP group of 8 ranks): each token sent once "
                                         "per destination rank, 5.92 of them a token"));
  CHECK(any_contains(flex.p.assumptions, "within one node: one all-to-all on NVLink"));
  CHECK(any_contains(flex.basis.not_modelled, "layout.dispatcher: flex (DeepEP's dispatch and combine are priced"));
  CHECK_FALSE(any_contains(flex.basis.not_modelled, "priced as alltoall"));
  CHECK_FALSE(any_contains(flex.p.assumptions, "priced as alltoall"));
  CHECK(base.basis.not_modelled.empty());
  // CP 2: the ring exchange is priced on the CP group's link (exposed beyond the attention layers' compute; at
  // least 0), the assumption gives the formula, and what stays unpriced is named.
  const RankStepTime& c = cp2.p.ranks.at(static_cast<size_t>(cp2.p.critical_pp_rank));
  CHECK(c.cp_exposed >= 0);
  CHECK(b.cp_exposed == 0);
  CHECK(any_contains(cp2.p.assumptions, "CP 2: ring attention's exchange of keys and values, 1 ring step(s)"));
  CHECK(any_contains(cp2.basis.not_modelled, "layout.cp: 2 (ring attention's exchange of keys and values is priced"));
  CHECK(any_contains(cp2.basis.not_modelled, "Gated DeltaNet's state passing between CP ranks is not"));
  double sum = 0;
  for (double v : c.compute) sum += v;
  sum += c.tp_exposed + c.ep_exposed + c.cp_exposed + c.pipeline_idle + c.dp_exposed + c.optimizer;
  CHECK(sum == Approx(c.step));
}

TEST_CASE("predict-unmodelled-layout-fields: a label that contradicts the layout is a located warning",
          "[layout-pricing][cases]") {
  const Recipe cp2 = valid_recipe(case_path(kLayoutCase + "cp2-dp2.yaml"));
  CHECK(layout_label(cp2.layout) == "TP2 PP6 CP2 EP8 DP2");
  CHECK(label_disagreements(cp2.layout) == std::vector<std::string>{"DP4 (layout.dp 2)", "no CP (layout.cp 2)"});
  const ValidatedRecipe v = validate_recipe_file(case_path(kLayoutCase + "cp2-dp2.yaml"));
  REQUIRE(v.ok());
  std::vector<std::string> label_warnings;
  for (const Diagnostic& d : v.warnings)
    if (d.path == "layout.label") label_warnings.push_back(d.to_string());
  REQUIRE(label_warnings.size() == 1);
  CHECK_THAT(label_warnings[0],
             Catch::EndsWith("cp2-dp2.yaml:56:10: warning: layout.label: \"TP2 PP6 EP8 DP4\": DP4 (layout.dp 2), "
                             "no CP (layout.cp 2), expected a label the layout's fields agree with (they say TP2 PP6 "
                             "CP2 EP8 DP2)"));
  // The seed's labels agree; so do labels with notes, without EP1, and with none of the degrees at all.
  const Recipe base = valid_recipe(case_path(kLayoutCase + "base-alltoall.yaml"));
  CHECK(label_disagreements(base.layout).empty());
  RecipeLayout l = base.layout;
  l.label = "TP2 PP6 EP8 DP4 (the seed's 48 GPUs)";
  CHECK(label_disagreements(l).empty());
  l.label = "the seed's layout";
  CHECK(label_disagreements(l).empty());
  l.label = "TP2 PP6 VPP2 EP8 DP4";  // VPP named, the fields say 1
  CHECK(label_disagreements(l) == std::vector<std::string>{"VPP2 (layout.vpp 1)"});
  l.label = "TP4 PP6 EP8 ETP2 DP4";  // ETP is held to layout.etp (1 here)
  CHECK(label_disagreements(l) == std::vector<std::string>{"TP4 (layout.tp 2)", "ETP2 (layout.etp 1)"});
  l.vpp = 2;
  l.label = "TP2 PP6 EP8 DP4";
  CHECK(label_disagreements(l) == std::vector<std::string>{"no VPP (layout.vpp 2)"});
}

TEST_CASE("predicted-vs-measured-not-linked: a proposal of a measured layout gets the measurement and its error",
          "[layout-pricing][cases][report]") {
  const Recipe proposal = valid_recipe(case_path(kLinkCase + "plan-tp2-pp8-vpp2-ep8-dp4-split6-mt16k-recompute.yaml"));
  const Recipe seed = valid_recipe(source_path("recipes/qwen3.5-397b-a17b/b200/attune-tp2-pp8-ep8-vpp2-mt16k.yaml"));
  const Recipe mt8k = valid_recipe(source_path("recipes/qwen3.5-397b-a17b/b200/attune-tp2-pp8-ep8-vpp2-mt8k.yaml"));
  REQUIRE(seed.result);
  CHECK(same_measured_layout(proposal, seed));
  CHECK_FALSE(same_measured_layout(proposal, mt8k));  // 8,192 tokens per GPU, not 16,384
  Recipe other = seed;
  other.gpu.count = 48;
  CHECK_FALSE(same_measured_layout(proposal, other));
  other = seed;
  other.layout.recompute.granularity = "none";
  CHECK_FALSE(same_measured_layout(proposal, other));
  // What remains apart: the switches the proposal was predicted with, its optimizer state beside the seed's.
  const std::vector<std::string> diffs = setup_differences(proposal, seed);
  CHECK(any_contains(diffs, "bench.overlap_grad_reduce: true / -"));
  CHECK_FALSE(any_contains(diffs, "layout.dispatcher"));

  const Leaderboard board = build_leaderboard({seed, mt8k, proposal}, ReportOptions{});
  REQUIRE(board.predictions.size() == 1);
  const PredictedEntry& p = board.predictions[0];
  const double predicted = proposal.doc["prediction"]["tokens_per_s_per_gpu"].get<double>();
  REQUIRE(p.measured_tokens_per_s_per_gpu);
  CHECK(*p.measured_tokens_per_s_per_gpu == 1232.53);
  CHECK(p.measured_file == seed.file);
  CHECK(p.measured_id == "attune-tp2-pp8-ep8-vpp2-mt16k");
  REQUIRE(p.error());
  CHECK(*p.error() == Approx(predicted / 1232.53 - 1).epsilon(1e-12));
  const Json j = leaderboard_to_json(board)["predictions"][0];
  CHECK(j["measured_file"] == seed.file);
  CHECK(j["error"].get<double>() == Approx(predicted / 1232.53 - 1).epsilon(1e-12));
  const std::string html = leaderboard_to_html(board);
  CHECK(html.find("<a href=\"#attune-tp2-pp8-ep8-vpp2-mt16k\" title=\"measured: " + seed.file) != std::string::npos);
  CHECK(html.find("predicted / measured tokens/s/GPU - 1, as a signed percentage") != std::string::npos);
  // Without the measured recipe on the page: no link, no error.
  const Leaderboard alone = build_leaderboard({proposal}, ReportOptions{});
  REQUIRE(alone.predictions.size() == 1);
  CHECK_FALSE(alone.predictions[0].error());
}
