// Selective recompute priced by its modules (docs/step-time.md, "Selective recompute"): the recompute phase's seconds
// of core_attn, moe_act and moe worked by hand from the analytical unit costs, the collectives each module issues
// again, and the invariants: every module of a layer at most full recompute, none no recompute, full unchanged.
#include <catch2/catch.hpp>

#include "catalog/hardware.h"
#include "catalog/hf_config.h"
#include "catalog/models.h"
#include "plan/analytical_costs.h"
#include "plan/analytical_work.h"
#include "plan/pass_collectives.h"
#include "plan/selective_recompute.h"
#include "plan/step_time.h"
#include "test_util.h"

using namespace recipebench;

namespace {

/// One GPU with flat curves: dense GEMMs at 0.8 of 100 TFLOP/s, grouped GEMMs and attention at 0.3, memory-bound
/// kernels at 0.5 of 2 TB/s.
HardwareCatalog selective_catalog() {
  const std::string text = R"(
gpus:
  - {name: GA, full_name: GPU A, vendor: other, bf16_dense_flops: 100e12, memory_bytes: 80e9,
     memory_bandwidth_bytes_per_s: 2e12, scale_up: link, scale_up_bandwidth_bytes_per_s: 1e11, source: test, date: 2026-12}
efficiencies:
  - {gpu: GA, operation: dense_gemm, series: s, points: [[100, 0.8]], source: t, date: 2026-12, method: m}
  - {gpu: GA, operation: optimizer, series: s, efficiency: 0.5, source: t, date: 2026-12, method: m}
  - {gpu: GA, operation: memory_bound, series: s, efficiency: 0.5, source: t, date: 2026-12, method: m}
  - {gpu: GA, operation: grouped_gemm, series: s, points: [[100, 0.3]], source: t, date: 2026-12, method: m}
  - {gpu: GA, operation: attention, series: s, points: [[100, 0.3]], source: t, date: 2026-12, method: m}
  - {gpu: GA, operation: gated_deltanet, series: s, points: [[100, 0.03]], source: t, date: 2026-12, method: m}
)";
  HardwareCatalog c = read_catalog(text, "test.yaml");
  check_references(c);
  return c;
}

RecipeRecompute selective(std::vector<RecomputeModule> modules) { return RecipeRecompute{"selective", "", 0, modules}; }

/// The recompute phase of a backward pass of `s` under `r`, on GA's analytical costs.
ComponentCells recompute_cells(const HardwareCatalog& c, const ModelConfig& m, const ChunkShape& s,
                               const RecipeRecompute& r) {
  const UnitCosts u = analytical_costs(c, *c.gpu("GA"), m, s);
  PassCostOptions o;
  o.recompute = recomputed_shares(r, m, s, SplitGpu{c, *c.gpu("GA")});
  return pass_cells(u, m, s, true, o)[kRecomputeIndex];
}

double sum(const ComponentCells& cells) {
  double t = 0;
  for (double v : cells) t += v;
  return t;
}

constexpr double kLaunch = 0.345e-3 / 22;  // plan/analytical_work.h kSecondsPerKernelLaunch
int cell(ProfileComponent c) { return static_cast<int>(c); }

}  // namespace

TEST_CASE("selective recompute by hand: core_attn, moe_act and moe on a Qwen3.5 chunk", "[selective-recompute]") {
  const HardwareCatalog c = selective_catalog();
  const ModelConfig m = *find_model("Qwen3.5-35B-A3B");
  ChunkShape s;
  s.gdn_layers = 1;
  s.attention_layers = 1;
  s.tokens = s.row_tokens = 4096;
  const double t = 4096;
  // core_attn: the attention mixer's forward again x the core's share of its seconds. Projections 2 P_attn t FLOP at
  // 80 TFLOP/s, the core (the rest of the mixer's work) at 30, the norms, rotary and gate's bytes at 1 TB/s.
  const double proj = 2.0 * count_params(m).attention_layer * t;
  const double core = component_work(ProfileComponent::kAttention, m, s) - proj;
  const double bytes = analytical_memory_bytes(ProfileComponent::kAttention, m, s);
  const double attention = bytes / 1e12 + proj / 80e12 + core / 30e12;
  const ComponentCells ca = recompute_cells(c, m, s, selective({RecomputeModule::kCoreAttn}));
  CHECK(ca[cell(ProfileComponent::kAttention)] == Approx((attention + 8 * kLaunch) * (core / 30e12) / attention));
  CHECK(sum(ca) == ca[cell(ProfileComponent::kAttention)]);  // nothing else
  CHECK(ca[cell(ProfileComponent::kAttention)] > 0.001);    // 4k tokens of 32 heads x 256: a millisecond or more
  // moe_act: the experts' forward again x the SwiGLU's bytes' share: 6 F k t bytes per layer (2 MoE layers) at
  // 1 TB/s beside the grouped GEMMs at 30 TFLOP/s; 3 kernels per layer.
  const double act = 2 * 6.0 * m.expert_ffn * m.top_k * t / 1e12;
  const double gemm = component_work(ProfileComponent::kMoeExperts, m, s) / 30e12;
  const ComponentCells ma = recompute_cells(c, m, s, selective({RecomputeModule::kMoeAct}));
  CHECK(ma[cell(ProfileComponent::kMoeExperts)] == Approx((act + gemm + 2 * 3 * kLaunch) * act / (act + gemm)));
  CHECK(sum(ma) == ma[cell(ProfileComponent::kMoeExperts)]);
  // moe: the six components of the MoE block whole, each its forward's work and launches (no weights streamed again).
  const UnitCosts u = analytical_costs(c, *c.gpu("GA"), m, s);
  double moe = 0;
  for (ProfileComponent p : {ProfileComponent::kMoeRouter, ProfileComponent::kMoeSharedExpert,
                             ProfileComponent::kMoeDispatch, ProfileComponent::kMoeExperts,
                             ProfileComponent::kMoeCombine, ProfileComponent::kMoeRest})
    moe += u.forward_pass[kForwardIndex][cell(p)] * component_work(p, m, s) +
           u.launch_seconds_per_run[0][cell(p)] * component_runs(p, m, s);
  const ComponentCells mo = recompute_cells(c, m, s, selective({RecomputeModule::kMoe}));
  CHECK(sum(mo) == Approx(moe));
  CHECK(mo[cell(ProfileComponent::kAttention)] == 0);
  CHECK(mo[cell(ProfileComponent::kGdn)] == 0);
  // moe and moe_act together: the experts once (shares capped at the component).
  const ComponentCells both = recompute_cells(c, m, s, selective({RecomputeModule::kMoe, RecomputeModule::kMoeAct}));
  CHECK(sum(both) == Approx(moe));
  // layernorm: 40% of other (two norms' 4 h of other's 10 h elements per token).
  const ComponentCells ln = recompute_cells(c, m, s, selective({RecomputeModule::kLayernorm}));
  const ComponentCells full = recompute_cells(c, m, s, RecipeRecompute{"full", "uniform", 1});
  CHECK(ln[cell(ProfileComponent::kOther)] == Approx(0.4 * full[cell(ProfileComponent::kOther)]));
}

TEST_CASE("selective recompute's invariants: every module at most full recompute, none no recompute, full and block "
          "unchanged",
          "[selective-recompute]") {
  const HardwareCatalog c = selective_catalog();
  const ModelConfig v3 = load_hf_config(test::source_path("tests/data/hf_configs/deepseek-v3.json"));
  ChunkShape s;
  s.attention_layers = 4;
  s.dense_mlp_layers = 1;  // DeepSeek-V3's first layers are dense
  s.tokens = s.row_tokens = 4096;
  const std::vector<RecomputeModule> every{RecomputeModule::kCoreAttn, RecomputeModule::kLayernorm,
                                           RecomputeModule::kMoeAct,   RecomputeModule::kMlp,
                                           RecomputeModule::kMoe,      RecomputeModule::kSharedExperts,
                                           RecomputeModule::kMlaUpProj};
  const ComponentCells all = recompute_cells(c, v3, s, selective(every));
  const ComponentCells full = recompute_cells(c, v3, s, RecipeRecompute{"full", "uniform", 1});
  for (int i = 0; i < kProfileComponents; ++i) CHECK(all[i] <= full[i]);
  CHECK(sum(all) < sum(full));  // the attention projections (but MLA's up projections) and half of other stay
  CHECK(all[cell(ProfileComponent::kDenseMlp)] == full[cell(ProfileComponent::kDenseMlp)]);
  CHECK(all[cell(ProfileComponent::kMoeExperts)] == full[cell(ProfileComponent::kMoeExperts)]);
  // mla_up_proj: a share of attention beside core_attn's, on a model with MLA only.
  const ComponentCells up = recompute_cells(c, v3, s, selective({RecomputeModule::kMlaUpProj}));
  CHECK(up[cell(ProfileComponent::kAttention)] > 0);
  CHECK(up[cell(ProfileComponent::kAttention)] < full[cell(ProfileComponent::kAttention)]);
  CHECK(recompute_module_timed(v3, RecomputeModule::kMlaUpProj));
  CHECK_FALSE(recompute_module_timed(*find_model("Qwen3.5-35B-A3B"), RecomputeModule::kMlaUpProj));
  // None: no recompute, as granularity none.
  CHECK(sum(recompute_cells(c, v3, s, selective({}))) == 0);
  CHECK(sum(recompute_cells(c, v3, s, RecipeRecompute{})) == 0);
  // Full block 2 of the chunk's 4 layers: half of every decoder component, as the scalar fraction gave it.
  const ComponentCells block = recompute_cells(c, v3, s, RecipeRecompute{"full", "block", 2});
  for (int i = 0; i < kProfileComponents; ++i) CHECK(block[i] == full[i] * 0.5);
}

TEST_CASE("selective recompute's collectives: each module issues again those inside it", "[selective-recompute]") {
  const ModelConfig v3 = load_hf_config(test::source_path("tests/data/hf_configs/deepseek-v3.json"));
  ChunkShape s;
  s.attention_layers = 4;
  s.dense_mlp_layers = 1;
  s.tokens = s.row_tokens = 4096;
  s.tp = 2;
  s.ep = 8;
  s.cp = 2;
  const auto rc = [&](std::vector<RecomputeModule> m) { return recomputed_collectives(selective(m), v3, s); };
  const RecomputedCollectives attn = rc({RecomputeModule::kCoreAttn});
  CHECK(attn.cp == 1);  // ring attention runs inside the core
  CHECK(attn.mixer_tp + attn.feed_forward_tp + attn.ep == 0);
  const RecomputedCollectives moe = rc({RecomputeModule::kMoe});
  CHECK(moe.ep == 1);
  CHECK(moe.feed_forward_tp == 3.0 / 4);  // the MoE layers' feed-forward TP pair: 3 of the chunk's 4 layers
  CHECK(rc({RecomputeModule::kMlp}).feed_forward_tp == 1.0 / 4);
  CHECK(rc({RecomputeModule::kMoe, RecomputeModule::kMlp}).feed_forward_tp == 1);
  const RecomputedCollectives none = rc({RecomputeModule::kLayernorm, RecomputeModule::kMoeAct});
  CHECK(none.mixer_tp + none.feed_forward_tp + none.ep + none.cp == 0);
  // A backward pass's entry all-gathers are its recompute's (its own entries reduce-scatter): the MoE layers' one.
  const CollectiveSizes sizes;
  double gathers = 0;
  for (const CollectiveUse& u : pass_collectives(v3, s, true, moe, sizes))
    if (u.group == GroupKind::kTp && u.role == CollectiveRole::kLayerEntry && u.op == Collective::kAllGather)
      gathers += u.calls;
  CHECK(gathers == 3);
  // Full recompute's figures are those of the scalar fraction.
  const auto calls = [](const std::vector<CollectiveUse>& uses) {
    std::vector<double> out;
    for (const CollectiveUse& u : uses) out.push_back(u.calls);
    return out;
  };
  CHECK(calls(pass_collectives(v3, s, true, RecomputedCollectives::all(0.4), sizes)) ==
        calls(pass_collectives(v3, s, true, 0.4, sizes)));
  CHECK(recomputed_collectives(RecipeRecompute{"full", "block", 2}, v3, s).ep == 0.5);
}
