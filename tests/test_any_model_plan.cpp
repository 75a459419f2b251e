// The analytical mode and the analytical memory plan for a model no backend of recipebench builds (issue 43 item 3;
// docs/step-time.md, "Analytical mode"; docs/memory-plan.md, "Analytical plan"): the work of each layer kind (GQA,
// MLA, dense SwiGLU, MoE with and without a shared expert), the collectives of the MoE layers only, the parameters of
// a rank from the exact counts and the activations by Korthikanti et al. 2022's per-layer formula, by hand.
#include <catch2/catch.hpp>

#include "catalog/hardware.h"
#include "catalog/hf_config.h"
#include "catalog/models.h"
#include "layout/rank_map.h"
#include "plan/activation_memory.h"
#include "plan/analytical_costs.h"
#include "plan/compute_profile.h"
#include "plan/memory_plan.h"
#include "plan/pass_collectives.h"
#include "recipe/run_model.h"
#include "recipe/validate.h"
#include "test_util.h"

using namespace recipebench;

namespace {

ModelConfig hf_model(const std::string& file) {
  return load_hf_config(test::source_path("tests/data/hf_configs/" + file));
}

/// Every matrix component's forward work of `s` (FLOP).
double matrix_work(const ModelConfig& m, const ChunkShape& s) {
  double sum = 0;
  for (int c = 0; c < kProfileComponents; ++c)
    if (work_kind(static_cast<ProfileComponent>(c)) == WorkKind::kMatrix)
      sum += component_work(static_cast<ProfileComponent>(c), m, s);
  return sum;
}

/// One microbatch of `tokens` through every layer of `m`, embedding and output layer included, TP 1, EP 1.
ChunkShape whole_model(const ModelConfig& m, int64_t tokens) {
  ChunkShape s;
  s.attention_layers = m.num_layers;
  s.dense_mlp_layers = m.dense_layers;
  s.embedding = s.lm_head = true;
  s.tokens = s.row_tokens = tokens;
  return s;
}

}  // namespace

TEST_CASE("Llama-3.1-8B at 8,192 tokens: the forward's matrix work is 2N per token plus causal attention",
          "[any-model]") {
  const ModelConfig m = hf_model("llama-3.1-8b.json");
  REQUIRE(m.family == ModelFamily::kTransformer);
  // N_active (models --config): 32 layers x (attention 41,943,040 = q 4,096^2 + k, v 2 x 4,096 x 1,024 + o 4,096^2;
  // SwiGLU 176,160,768 = 3 x 4,096 x 14,336) = 6,979,321,856 + output layer 4,096 x 128,256 = 525,336,576
  // -> 7,504,658,432.
  CHECK(count_params(m).active == 7504658432);
  // Causal attention per token and forward: L x S x Hq x (d_qk + d_v) = 32 x 8,192 x 32 x 256 = 2,147,483,648 (QK^T and
  // AV over S / 2 keys on average, 2 FLOP each); so per token 2 x 7,504,658,432 + 2,147,483,648 = 17,156,800,512.
  const ChunkShape s = whole_model(m, 8192);
  CHECK(matrix_work(m, s) == Approx(8192.0 * 17156800512.0).epsilon(1e-12));
  // Training (forward + 2 x backward) = 6N + 3 x the forward's attention = 6N + half of the MFU convention's attention
  // term (attention_flops_per_token counts the full [S x S] product, docs/metrics.md).
  CHECK(3 * matrix_work(m, s) / 8192 ==
        Approx(6.0 * 7504658432 + attention_flops_per_token(m, 8192) / 2).epsilon(1e-12));
  CHECK(component_work(ProfileComponent::kDenseMlp, m, s) == Approx(32.0 * 6 * 4096 * 14336 * 8192));
  // No experts: no MoE component has work, not even the memory-bound ones.
  for (ProfileComponent c : {ProfileComponent::kMoeRouter, ProfileComponent::kMoeExperts,
                             ProfileComponent::kMoeDispatch, ProfileComponent::kMoeCombine, ProfileComponent::kMoeRest})
    CHECK(component_work(c, m, s) == 0);
}

TEST_CASE("DeepSeek-V3: MLA's widths, 3 dense layers then 58 MoE layers of 8 routed of 256 and 1 shared",
          "[any-model]") {
  const ModelConfig m = hf_model("deepseek-v3.json");
  REQUIRE(m.attention == AttentionKind::kMla);
  REQUIRE(m.dense_layers == 3);
  const ChunkShape s = whole_model(m, 4096);
  CHECK(moe_layers(m, s) == 58);
  const double T = 4096, h = 7168;
  // The scores at qk_nope + qk_rope = 192, the values at v_head_dim 128: 4,096 x 128 heads x 320 per token and layer.
  const double mla = 2.0 * count_params(m).attention_layer + T * 128 * (192 + 128);
  CHECK(component_work(ProfileComponent::kAttention, m, s) == Approx(61 * mla * T));
  CHECK(component_work(ProfileComponent::kDenseMlp, m, s) == Approx(3 * 6 * h * 18432 * T));
  CHECK(component_work(ProfileComponent::kMoeExperts, m, s) == Approx(58 * 6 * h * 2048 * 8 * T));
  CHECK(component_work(ProfileComponent::kMoeSharedExpert, m, s) == Approx(58 * 6 * h * 2048 * T));
  CHECK(component_work(ProfileComponent::kMoeRouter, m, s) == Approx(58 * 2 * h * 256 * T));
  // Mixtral: 8 experts top-2, no shared expert, no dense layer.
  const ModelConfig mx = hf_model("mixtral-8x7b.json");
  const ChunkShape sx = whole_model(mx, 4096);
  CHECK(component_work(ProfileComponent::kMoeSharedExpert, mx, sx) == 0);
  CHECK(component_work(ProfileComponent::kDenseMlp, mx, sx) == 0);
  CHECK(component_work(ProfileComponent::kMoeExperts, mx, sx) == Approx(32 * 6 * 4096.0 * 14336 * 2 * 4096));
}

TEST_CASE("the analytical mode prices every layer kind of a config.json family on a catalog GPU", "[any-model]") {
  const GpuSpec& h100 = *find_gpu("H100");
  for (const char* file : {"llama-3.1-70b.json", "mixtral-8x7b.json", "deepseek-v3.json"}) {
    INFO(file);
    const ModelConfig m = hf_model(file);
    ChunkShape s;
    s.tokens = s.row_tokens = 8192;
    const UnitCosts u = analytical_costs(hardware_catalog(), h100, m, s);
    CHECK(u.sources.empty());  // nothing measured: the prediction's mode is analytical
    const int attention = static_cast<int>(ProfileComponent::kAttention);
    const int dense = static_cast<int>(ProfileComponent::kDenseMlp);
    const int experts = static_cast<int>(ProfileComponent::kMoeExperts);
    CHECK(u.measured_forward[attention]);
    CHECK(u.measured_forward[dense] == (m.dense_layers > 0));
    CHECK(u.measured_forward[experts] == (m.num_experts > 0));
    // A backward pass costs twice its forward per unit of work (the input's and the weights' gradients).
    if (m.dense_layers > 0) CHECK(u.backward_pass[kBackwardIndex][dense] == 2 * u.forward_pass[kForwardIndex][dense]);
  }
}

TEST_CASE("EP's all-to-alls run on the MoE layers only and TP's entries and exits on every layer", "[any-model]") {
  const ModelConfig m = hf_model("deepseek-v3.json");
  ChunkShape s;  // layers 0-4: the 3 dense layers and 2 MoE layers
  s.attention_layers = 5;
  s.dense_mlp_layers = 3;
  s.tokens = s.row_tokens = 4096;
  s.tp = 2;
  s.ep = 8;
  CollectiveSizes sizes;
  double dispatch = 0, tp_entries = 0;
  for (const CollectiveUse& u : pass_collectives(m, s, false, 0, sizes)) {
    if (u.role == CollectiveRole::kDispatch) dispatch += u.calls;
    if (u.role == CollectiveRole::kLayerEntry) tp_entries += u.calls;
  }
  CHECK(dispatch == 2);
  CHECK(tp_entries == 10);  // mixer and feed-forward of each of the 5 layers
  s.dense_mlp_layers = 5;   // all dense: no all-to-all at all
  for (const CollectiveUse& u : pass_collectives(m, s, false, 0, sizes)) CHECK(u.group != GroupKind::kEp);
}

TEST_CASE("the analytical memory plan of Llama-3.1-8B on 8 A100 (the 2026-12-05 case): exact counts, Korthikanti",
          "[any-model]") {
  const ValidatedRecipe v = validate_recipe_file(
      test::source_path("tests/data/cases/plan-predict-need-exact-model-profile/llama31-8b-a100-tp1-dp8.yaml"));
  REQUIRE(v.ok());
  const std::optional<RunModel> ran = run_model(*v.recipe);
  REQUIRE(ran);
  const ModelConfig& m = ran->model;
  const RankMap map = build_rank_map(*v.recipe, m);
  const MemoryPlan plan = plan_memory(*v.recipe, m, map);
  CHECK(plan.analytical);
  const RankMemory& r = plan.ranks.front();
  // TP 1, PP 1, EP 1: the rank holds every parameter, exactly the total `models --config` counts (8,030,261,248),
  // in BF16: 2 bytes each.
  CHECK(r.dense_params + r.expert_params == count_params(m).total);
  CHECK(count_params(m).total == 8030261248);
  CHECK(r.params == Approx(2.0 * 8030261248));
  // Per layer and token, BF16 (docs/memory-plan.md, "Analytical plan"): norms 2 x 2 x 4,096; attention 2 x 4,096 +
  // 2 x (4,096 + 2 x 1,024) + 2 x 4,096 + 4 x 32; SwiGLU 2 x 4,096 + 3 x 2 x 14,336 = 139,392 bytes.
  MicrobatchShape shape;
  shape.tokens = 8192;
  CHECK(layer_activation_bytes(m, 0, shape) == 139392.0 * 8192);
  shape.tp = 2;  // sequence parallel: every term / TP
  CHECK(layer_activation_bytes(m, 0, shape) == 139392.0 * 4096);
  CHECK(format_memory_plan(plan).find("analytical: the recipe's stack, not recipebench's torch backend") !=
        std::string::npos);
}

TEST_CASE("the analytical memory plan shards DeepSeek-V3's routed experts over EP and its attention over TP",
          "[any-model]") {
  const ModelConfig m = hf_model("deepseek-v3.json");
  const ParamCounts c = count_params(m);
  // TP 1, EP 1, PP 1 on one GPU: the plan's parameters are the exact total (671.0 B).
  Recipe r;
  r.model = m.name;
  r.gpu.type = "H100";
  r.gpu.count = r.gpu.per_node = 1;
  r.workload.row_tokens = 4096;
  r.workload.global_batch = 1;
  r.workload.precision = "bf16";
  r.layout.tp = r.layout.pp = r.layout.vpp = r.layout.cp = r.layout.ep = r.layout.dp = 1;
  r.layout.etp = 1;
  r.layout.max_tokens_per_gpu = 4096;
  r.layout.rows_per_microbatch = 1;
  const MemoryPlan one = plan_memory(r, m, build_rank_map(r, m));
  CHECK(one.ranks.front().dense_params + one.ranks.front().expert_params == c.total);
  CHECK(one.ranks.front().expert_params == 58LL * 256 * 3 * 7168 * 2048);
  // EP 8 on 8 GPUs: each holds 256 / 8 routed experts of each of the 58 MoE layers, 3 x 7,168 x 2,048 each.
  r.gpu.count = r.gpu.per_node = 8;
  r.layout.ep = 8;
  r.layout.dp = 8;
  r.workload.global_batch = 8;
  const MemoryPlan ep8 = plan_memory(r, m, build_rank_map(r, m));
  CHECK(ep8.ranks.front().expert_params == 58LL * 32 * 3 * 7168 * 2048);
  CHECK(ep8.ranks.front().dense_params == one.ranks.front().dense_params);
}

TEST_CASE("a Megatron-Core MoE layer keeps no per-slot expert output, and layernorm and moe_act recompute free the MoE "
          "input and each slot's activation output (gpt-oss-120b, by hand)",
          "[any-model][memory]") {
  const ModelConfig m = hf_model("gpt-oss-120b.json");
  MicrobatchShape s;
  s.tokens = 4096;  // TP 1, BF16
  // Per token: norms 2 x 2 x 2,880 = 11,520; GQA 2 x 2,880 + 2 x (4,096 + 2 x 512) + 2 x 4,096 + 4 x 64 = 24,448;
  // MoE 2 x 2,880 + 4 x 128 + 4 x (2 x 2,880 + 3 x 2 x 2,880) = 98,432 (the old per-slot output, 4 x 2 x 2,880 =
  // 23,040 more, is gone: the probabilities are applied inside the activation). 134,400 bytes.
  CHECK(layer_activation_bytes(m, 0, s) == 134400.0 * 4096);
  // layernorm: the pre-MLP norm's output 2 x 2,880; moe_act: 4 slots x 2 x 2,880 = 23,040. 28,800 bytes.
  CHECK(selective_recompute_freed_bytes(m, 0, s, {RecomputeModule::kLayernorm, RecomputeModule::kMoeAct}) ==
        28800.0 * 4096);
  // core_attn (Megatron-Core's default): the core's output 2 x 4,096 and its FP32 log-sum-exp 4 x 64 = 8,448 bytes.
  CHECK(selective_recompute_freed_bytes(m, 0, s, {RecomputeModule::kCoreAttn}) == 8448.0 * 4096);
  CHECK(selective_recompute_freed_bytes(m, 0, s, {RecomputeModule::kMlp}) == 0);
  CHECK(recompute_module_priced(ModelFamily::kTransformer, RecomputeModule::kMoeAct));
  CHECK_FALSE(recompute_module_priced(ModelFamily::kQwen35, RecomputeModule::kLayernorm));
  CHECK_FALSE(recompute_module_priced(ModelFamily::kTransformer, RecomputeModule::kSharedExperts));
}

TEST_CASE("the public GPT OSS 120B B200 row fits its 180 GB: BF16 gradient buffer, Megatron-Core's distributed "
          "optimizer, selective recompute of layernorm and moe_act (by hand)",
          "[any-model][memory]") {
  const ValidatedRecipe v = validate_recipe_file(
      test::source_path("reports/bench/public-rows-2026-12-06/recipes/gpt-oss-120b-b200-26.04.01-bf16.yaml"));
  REQUIRE(v.ok());
  CHECK(v.recipe->optimizer.grad_reduce_dtype == StateDtype::kBf16);
  CHECK(v.recipe->layout.recompute.recomputes(RecomputeModule::kMoeAct));
  CHECK_FALSE(v.recipe->layout.recompute.recomputes(RecomputeModule::kCoreAttn));
  const std::optional<RunModel> ran = run_model(*v.recipe);
  REQUIRE(ran);
  const ModelConfig& m = ran->model;
  const MemoryPlan plan = plan_memory(*v.recipe, m, build_rank_map(*v.recipe, m));
  const RankMemory& r = plan.ranks.front();
  const double n = static_cast<double>(r.dense_params + r.expert_params);
  // One BF16 gradient buffer of every parameter (no FP32 accumulators, no reduce-scatter shard): 2 bytes each.
  CHECK(r.grads == Approx(2 * n));
  CHECK(plan.grad_term == "gradients (BF16)");
  // FP32 masters and both moments, 12 bytes, of 1 / EDP (8) of the experts and 1 / DP (64) of the dense parameters;
  // no all-gather buffer (gathered into the parameters' own buffer).
  CHECK(r.optimizer == Approx(12.0 * static_cast<double>(r.expert_params) / 8 + 12.0 * static_cast<double>(r.dense_params) / 64));
  // 36 layers of (134,400 - 28,800) bytes per token, 16,384 tokens: 62.28 GB (+ the final norm's input).
  CHECK(r.activations_per_microbatch >= 105600.0 * 16384 * 36);
  CHECK(r.activations_per_microbatch < 105600.0 * 16384 * 36 + 0.5e9);
  CHECK(plan.fits());
  CHECK(plan.spare_bytes() > 15e9);
  CHECK(plan.not_modelled.empty());
}

TEST_CASE("recompute modules and a BF16 gradient reduce the plan cannot price are named not modelled", "[memory]") {
  const ValidatedRecipe v = validate_recipe_file(
      test::source_path("reports/bench/public-rows-2026-12-06/recipes/gpt-oss-120b-h100-26.04.01-bf16.yaml"));
  REQUIRE(v.ok());
  Recipe r = *v.recipe;
  r.layout.recompute.modules = {RecomputeModule::kLayernorm, RecomputeModule::kMlp};
  const ModelConfig m = run_model(r)->model;
  const MemoryPlan plan = plan_memory(r, m, build_rank_map(r, m));
  REQUIRE(plan.not_modelled.size() == 1);
  CHECK(plan.not_modelled[0] == "layout.recompute.modules mlp (its activations are planned as kept)");
  CHECK(format_memory_plan(plan).find("  not modelled: layout.recompute.modules mlp") != std::string::npos);
  // The torch backend's plan (Qwen3.5) keeps its FP32 gradients and names a BF16 reduce not modelled.
  const ValidatedRecipe seed =
      validate_recipe_file(test::source_path("recipes/qwen3.5-397b-a17b/b200/attune-48gpu-tp2-pp6-ep8.yaml"));
  REQUIRE(seed.ok());
  Recipe q = *seed.recipe;
  const ModelConfig qm = run_model(q)->model;
  const double fp32_grads = plan_memory(q, qm, build_rank_map(q, qm)).worst().grads;
  q.optimizer.grad_reduce_dtype = StateDtype::kBf16;
  const MemoryPlan qp = plan_memory(q, qm, build_rank_map(q, qm));
  CHECK(qp.worst().grads == fp32_grads);
  REQUIRE(qp.not_modelled.size() == 1);
  CHECK(qp.not_modelled[0].rfind("optimizer.grad_reduce_dtype bf16", 0) == 0);
}
