// The per-rank memory plan (harness/plan/memory_plan.h) against every committed H200 run record's measured peak,
// and the seed's B200 layouts against their 180 GB.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "plan/memory_plan.h"
#include "recipe/run_model.h"
#include "recipe/validate.h"
#include "record/run_record.h"
#include "test_util.h"
#include "util/format.h"
#include "util/json.h"

using namespace recipebench;

namespace {

MemoryPlan plan_of(const std::string& rel, Device device = Device::kCuda) {
  const ValidatedRecipe v = validate_recipe_file(test::source_path(rel));
  REQUIRE(v.ok());
  const Recipe& r = *v.recipe;
  const ModelConfig m = run_model(r)->model;
  PlanOptions o;
  o.device = device;
  return plan_memory(r, m, build_rank_map(r, m), o);
}

/// A committed H200 run record (complete, with a measured peak) and the backend code that measured it.
struct MeasuredRun {
  std::string path;  ///< relative to the source tree
  RunRecord record;
  TorchMemoryImpl impl;
};

/// The classification of tests/data/plan/record-implementations.json: record path -> TorchMemoryImpl.
std::map<std::string, TorchMemoryImpl> record_implementations() {
  const Json j = Json::parse(test::read_file(test::source_path("tests/data/plan/record-implementations.json")));
  std::map<std::string, TorchMemoryImpl> out;
  for (const auto& [path, name] : j.at("records").items()) {
    const std::string n = name.get<std::string>();
    REQUIRE((n == "full-logits" || n == "chunked-loss" || n == "fused-loss" || n == "gdn-saved" ||
             n == "gemm-accumulate"));
    out[path] = n == "full-logits"    ? TorchMemoryImpl::kFullLogits
                : n == "chunked-loss" ? TorchMemoryImpl::kChunkedLoss
                : n == "fused-loss"   ? TorchMemoryImpl::kFusedLoss
                : n == "gdn-saved"    ? TorchMemoryImpl::kGdnSaved
                                      : TorchMemoryImpl::kGemmAccumulate;
  }
  return out;
}

/// Every committed run record under reports/ (reports/runs/*.json, reports/bench/*/records/*.json) that ran to
/// completion on H200s with a measured peak, read with RunRecord::from_json. Each must be classified.
std::vector<MeasuredRun> committed_h200_runs() {
  namespace fs = std::filesystem;
  const auto impls = record_implementations();
  std::vector<std::string> paths;
  const fs::path reports = test::source_path("reports");
  for (const auto& e : fs::recursive_directory_iterator(reports)) {
    const fs::path rel = fs::relative(e.path(), test::source_path(""));
    const std::string parent = rel.parent_path().filename().string();
    if (e.path().extension() == ".json" && (parent == "runs" || parent == "records")) paths.push_back(rel.string());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<MeasuredRun> out;
  for (const auto& path : paths) {
    const RunRecord rec = RunRecord::from_json(Json::parse(test::read_file(test::source_path(path))), path);
    if (!rec.complete() || !rec.metrics || rec.metrics->peak_memory_bytes <= 0) continue;
    if (rec.device_name().find("H200") == std::string::npos) continue;
    if (rec.options.settings.backend != "torch") continue;  // e.g. the command backend's peer stack: no torch plan
    INFO(path << " is not classified in tests/data/plan/record-implementations.json");
    REQUIRE(impls.count(path) == 1);
    out.push_back({path, rec, impls.at(path)});
  }
  return out;
}

/// The plan of a run record's recipe (the document it ran, its model depth and device) with the code that ran it.
MemoryPlan plan_of_record(const MeasuredRun& m) {
  const Recipe r = recipe_from_json(m.record.recipe, m.path);
  const ModelConfig model = find_model(m.record.model_name)->with_layers(m.record.model_layers);
  PlanOptions o;
  o.device = m.record.options.settings.device;
  o.impl = m.impl;
  o.fused_kernels = m.record.options.settings.kernels == Kernels::kFused;
  o.ep_dispatch = m.record.options.settings.ep_dispatch;
  o.overlap_param_gather = m.record.options.settings.overlap_param_gather;
  return plan_memory(r, model, build_rank_map(r, model), o);
}

}  // namespace

TEST_CASE("memory plan: within 15% of every committed H200 run record's peak", "[plan]") {
  const std::vector<MeasuredRun> runs = committed_h200_runs();
  // 7 records of the full-logits backend (1 GPU x2, DP2, EP2, TP2, PP2, the 397B stage shapes), 9 of the
  // chunked-loss one (1 GPU: reports/runs, the issue-11 call's four, issue 17's first call's four), 28 of the
  // fused-loss one (issue 17's second call's four; the 2-GPU overlap call's 15: 1 GPU, DP2, EP2, TP2, PP2, 397B stage,
  // six of which are also in reports/runs; the 2026-12-01 call's fused, ops and profile runs) and 15 of the
  // gdn-saved one (the second 2026-12-01 call: fused, ops, profile; the third and fourth: fused twice and
  // --deterministic=false; the merge check of issue 15's switches: fused; the accumulation call: fused, ops,
  // profile, the fused one also in reports/runs) and 7 of the gemm-accumulate one (the evening's combine call at
  // 1eca4b9: fused, ops, profile; the tpoverlap call at ffa075f: fused, profile; each fused one also in
  // reports/runs); 3 more of it from the precision-aware optimizer's call (FP32 masters, BF16 + remainder masters,
  // remainders + BF16 moments: the plan follows the record's optimizer block). tests/data/plan/
  // record-implementations.json lists them.
  REQUIRE(runs.size() == 65);
  CHECK(runs.size() == record_implementations().size());  // no classification of a record that is gone
  for (const MeasuredRun& m : runs) {
    const MemoryPlan plan = plan_of_record(m);
    const double planned = plan.worst().peak, measured = static_cast<double>(m.record.metrics->peak_memory_bytes);
    std::printf("plan %-70s planned %6.1f GB measured %6.1f GB error %+5.1f%% (%s)\n", m.path.c_str(), planned / 1e9,
                measured / 1e9, 100 * (planned / measured - 1), plan.worst().transient_term.c_str());
    INFO(m.path << ": planned " << planned / 1e9 << " GB, measured " << measured / 1e9 << " GB\n"
                << format_memory_plan(plan));
    CHECK(std::abs(planned / measured - 1) <= 0.15);
  }
}

TEST_CASE("memory plan: the chunked LM loss holds a chunk, not the row's FP32 logits", "[plan]") {
  // Qwen3.5-35B-A3B widths (h 2,048, V 248,320), one 8,192-token row on one GPU, BF16: chunk 4,096.
  const ModelConfig m = find_model("Qwen3.5-35B-A3B")->with_layers(4);
  MicrobatchShape s;
  s.tokens = 8192;
  s.impl = TorchMemoryImpl::kFullLogits;
  const double V = 248320, h = 2048, N = 8192, c = 4096;
  CHECK(loss_memory(m, s).backward == Approx(12 * V * N));  // log-probabilities, two FP32 gradients: 24.4 GB
  s.impl = TorchMemoryImpl::kChunkedLoss;
  // Input and d hidden (BF16), d weight (FP32), the chunk's FP32 gradient, its BF16 cast and the BF16 product.
  const double chunked = 2 * 2 * N * h + 4 * V * h + 6 * c * V + 2 * V * h;
  CHECK(loss_memory(m, s).forward == Approx(chunked));
  CHECK(chunked / 1e9 == Approx(9.19).epsilon(0.01));
  // TP 2: a half of the vocabulary per rank, the whole (gathered) sequence.
  s.tp = 2;
  CHECK(loss_memory(m, s).forward == Approx(2 * 2 * N * h + 4 * V / 2 * h + 6 * c * V / 2 + 2 * V / 2 * h));
  // The fused cross-entropy kernels: the chunk's BF16 logits (turned gradient in place) and the BF16 product only,
  // 4 c V bytes (the FP32 copy) less: 4.07 GB at TP 1.
  s.tp = 1;
  s.impl = TorchMemoryImpl::kFusedLoss;
  const double fused = 2 * 2 * N * h + 4 * V * h + 2 * c * V + 2 * V * h;
  CHECK(loss_memory(m, s).forward == Approx(fused));
  CHECK((chunked - fused) / 1e9 == Approx(4.07).epsilon(0.01));
  s.param_bytes = 4;  // FP32 (CPU): no fused kernels, the Ops path's terms
  s.impl = TorchMemoryImpl::kChunkedLoss;
  const double ops_f32 = loss_memory(m, s).forward;
  s.impl = TorchMemoryImpl::kFusedLoss;
  CHECK(loss_memory(m, s).forward == Approx(ops_f32));
}

TEST_CASE("memory plan: the GDN kernels' saved intermediates are 1,156 bytes per token and value head", "[plan]") {
  // Qwen3.5-35B-A3B widths: 32 value heads of 128, chunk 64. gdn::saved_bytes (cuda/gdn_kernels.h): FP32 gate (4),
  // BF16 T (2 x 64), W and v_new (2 x 128 each), the BF16 128 x 128 state per 64-token chunk (2 x 128 x 128 / 64).
  const ModelConfig m = find_model("Qwen3.5-35B-A3B")->with_layers(4);
  MicrobatchShape s;
  s.tokens = 8192;
  s.impl = TorchMemoryImpl::kGdnSaved;
  const double saved = gdn_activation_bytes(m, s);
  s.impl = TorchMemoryImpl::kFusedLoss;
  const double recomputed = gdn_activation_bytes(m, s);
  CHECK(saved - recomputed == Approx(32.0 * 8192 * (4 + 2 * 64 + 2 * 128 + 2 * 128 + 2 * 128 * 128 / 64)));
  CHECK((saved - recomputed) / 1e9 == Approx(0.303).epsilon(0.01));
  s.impl = TorchMemoryImpl::kGdnSaved;
  s.fused_kernels = false;  // bench.kernels: ops: the libtorch-ops delta rule, nothing of the kernels'
  s.impl = TorchMemoryImpl::kFusedLoss;
  const double ops_before = gdn_activation_bytes(m, s);
  s.impl = TorchMemoryImpl::kGdnSaved;
  CHECK(gdn_activation_bytes(m, s) == Approx(ops_before));
}

TEST_CASE("memory plan: the states of one GPU are 18 bytes per parameter (MixedPrecisionAdam)", "[plan]") {
  const MemoryPlan plan = plan_of("recipes/qwen3.5-35b-a3b/h200/proxy4l-1gpu-bf16.yaml");
  REQUIRE(plan.ranks.size() == 1);
  const RankMemory& r = plan.ranks[0];
  // 4 layers of Qwen3.5-35B-A3B: the registry's count.
  CHECK(r.dense_params + r.expert_params == count_params(find_model("Qwen3.5-35B-A3B")->with_layers(4)).total);
  const double n = static_cast<double>(r.dense_params + r.expert_params);
  CHECK(r.params == Approx(2 * n));
  CHECK(r.grads == Approx(4 * n));
  CHECK(r.optimizer == Approx(12 * n));
  CHECK(r.microbatches_in_flight == 1);
}

TEST_CASE("memory plan: the precision-aware state (optimizer.master_weights, exp_avg(_sq)_dtype) in bytes per "
          "parameter, and the optimizer step's FP32 working copies on libtorch's path",
          "[plan]") {
  const ValidatedRecipe v = validate_recipe_file(test::source_path("recipes/qwen3.5-35b-a3b/h200/proxy4l-1gpu-bf16.yaml"));
  REQUIRE(v.ok());
  struct Form {
    MasterWeights masters;
    StateDtype m, v;
    double state_bytes;  ///< master + moments per BF16 parameter (docs/memory-plan.md, "States")
    const char* row;
  };
  for (const Form& f : {Form{MasterWeights::kFp32, StateDtype::kFp32, StateDtype::kFp32, 12,
                             "optimizer state (FP32 masters, moments)"},
                        Form{MasterWeights::kBf16Remainder, StateDtype::kFp32, StateDtype::kFp32, 10,
                             "optimizer (BF16+rem. masters, moments)"},
                        Form{MasterWeights::kBf16Remainder, StateDtype::kBf16, StateDtype::kBf16, 6,
                             "optimizer (BF16+rem. masters, BF16 moments)"},
                        Form{MasterWeights::kFp32, StateDtype::kBf16, StateDtype::kFp32, 10,
                             "optimizer (FP32 masters, BF16 m, FP32 v)"}}) {
    Recipe r = *v.recipe;
    r.optimizer.master_weights = f.masters;
    r.optimizer.exp_avg_dtype = f.m;
    r.optimizer.exp_avg_sq_dtype = f.v;
    const ModelConfig m = run_model(r)->model;
    const RankMap map = build_rank_map(r, m);
    const MemoryPlan fused = plan_memory(r, m, map);
    INFO(format_memory_plan(fused));
    const RankMemory& a = fused.ranks[0];
    const double n = static_cast<double>(a.dense_params + a.expert_params);
    CHECK(a.optimizer == Approx(f.state_bytes * n));
    CHECK(a.grads == Approx(4 * n));
    CHECK(fused.optimizer_row == f.row);
    // The fused kernels work in registers: no step phase. libtorch's path (bench.kernels ops) makes FP32 copies of
    // the largest tensor's master (with remainders) and BF16 moments during the step, far below the backward's peak.
    CHECK(a.peak_phase != "optimizer step");
    PlanOptions ops;
    ops.fused_kernels = false;
    const MemoryPlan plain = plan_memory(r, m, map, ops);
    CHECK(plain.ranks[0].peak == Approx(plain.ranks[0].params + plain.ranks[0].grads + plain.ranks[0].optimizer +
                                        plain.ranks[0].activations_in_flight + plain.ranks[0].transient));
  }
}

TEST_CASE("memory plan: the seed's B200 recipes on the torch backend against 180 GB", "[plan]") {
  // EDP = 64 / (EP 8 x PP 8) = 1 and 48 / (EP 8 x PP 6) = 1: sharding the expert state over EDP changes nothing.
  // The seeds ran Megatron-LM's precision-aware optimizer (optimizer.master_weights: bf16_remainder): 16 bytes per
  // expert parameter (BF16 parameter + remainder, FP32 gradient, two moments) and all three fit. With FP32 masters
  // (18 bytes) the 48-GPU layout's first stage (9.2 billion parameters) does not; the 64-GPU layouts (at most 7.0)
  // do.
  struct Seed {
    const char* stem;
    const char* peak;       ///< the worst rank's peak with the recipe's optimizer, GB
    bool fits_with_fp32;    ///< with optimizer.master_weights fp32
  };
  for (const Seed& s : {Seed{"attune-tp2-pp8-ep8-vpp2-mt16k", "132.7", true},
                        Seed{"attune-tp2-pp8-ep8-vpp2-mt8k", "130.0", true},
                        Seed{"attune-48gpu-tp2-pp6-ep8", "163.5", false}}) {
    const std::string rel = std::string("recipes/qwen3.5-397b-a17b/b200/") + s.stem + ".yaml";
    const MemoryPlan plan = plan_of(rel);
    INFO(s.stem << "\n" << format_memory_plan(plan));
    CHECK(plan.gpu_memory == 180e9);
    CHECK(plan.fits());
    CHECK(fixed(plan.worst().peak / 1e9, 1) == s.peak);
    CHECK(plan.expert_state_shards == 1);  // EDP 1: the experts' MixedPrecisionAdam, nothing to shard
    CHECK(plan.optimizer_state == "BF16 + remainder masters and Adam moments");
    Recipe fp32 = *validate_recipe_file(test::source_path(rel)).recipe;
    fp32.optimizer.master_weights = MasterWeights::kFp32;
    const ModelConfig m = run_model(fp32)->model;
    const MemoryPlan plain = plan_memory(fp32, m, build_rank_map(fp32, m));
    CHECK(plain.fits() == s.fits_with_fp32);
    // The masters' 2 bytes per parameter of the optimizer state: everything else is the same.
    const RankMemory &a = plan.worst(), &b = plain.ranks[static_cast<size_t>(a.pp_rank)];
    CHECK(b.optimizer - a.optimizer > 0);
    CHECK(b.params == a.params);
    CHECK(b.grads == a.grads);
    if (!s.fits_with_fp32) CHECK(plain.largest_term() == "optimizer state (FP32 masters and Adam moments)");
  }
  // 1F1B keeps PP - p microbatches on rank p; interleaved 2 (PP - p - 1) + (VPP - 1) PP + 1 chunk passes.
  const MemoryPlan pp6 = plan_of("recipes/qwen3.5-397b-a17b/b200/attune-48gpu-tp2-pp6-ep8.yaml");
  CHECK(pp6.ranks[0].microbatches_in_flight == 6);
  CHECK(pp6.ranks[5].microbatches_in_flight == 1);
  const MemoryPlan vpp = plan_of("recipes/qwen3.5-397b-a17b/b200/attune-tp2-pp8-ep8-vpp2-mt16k.yaml");
  CHECK(vpp.ranks[0].microbatches_in_flight == 23);
  CHECK(vpp.ranks[7].microbatches_in_flight == 9);
}

TEST_CASE("memory plan: no recompute and 65,536 tokens per GPU do not fit a B200: activations overflow", "[plan]") {
  const MemoryPlan plan = plan_of("tests/data/plan/attune-48gpu-no-recompute-64k.yaml");
  INFO(format_memory_plan(plan));
  CHECK_FALSE(plan.fits());
  CHECK(plan.largest_term().rfind("activations of", 0) == 0);
  CHECK(memory_overflow_message(plan).find("largest term: activations of") != std::string::npos);
}

TEST_CASE("memory plan: expert state sharded over EDP when EDP > 1, dense over DP", "[plan]") {
  // The 4-GPU DP4 proxy with EP 2: EDP = 4 / (ETP 1 x EP 2 x PP 1) = 2.
  const ValidatedRecipe v =
      validate_recipe_file(test::source_path("recipes/qwen3.5-35b-a3b/h200/proxy4l-4gpu-dp4-bf16.yaml"));
  REQUIRE(v.ok());
  Recipe r = *v.recipe;
  r.layout.ep = 2;
  const ModelConfig m = find_model(r.model)->with_layers(4);
  const RankMap map = build_rank_map(r, m);
  REQUIRE(map.edp == 2);
  const MemoryPlan plan = plan_memory(r, m, map);
  CHECK(plan.expert_state_shards == 2);
  const RankMemory& q = plan.ranks[0];
  const double x = static_cast<double>(q.expert_params), d = static_cast<double>(q.dense_params);
  CHECK(x == Approx(4 * 128.0 * 3 * 2048 * 512));  // 4 layers, 128 of 256 experts
  // DistributedAdam (optim/distributed_adam.h) over DP 4 for the dense parameters and over EDP 2 for the experts:
  // the whole FP32 gradient buffer and its shard; FP32 masters and moments of the shard; the BF16 all-gather buffer.
  CHECK(q.grads == Approx(4 * d * (1 + 1 / 4.0) + 4 * x * (1 + 1 / 2.0)));
  CHECK(q.optimizer == Approx(12 * d / 4 + 2 * d + 12 * x / 2 + 2 * x));
  // Against the replicated expert state (MixedPrecisionAdam: FP32 gradients, masters, moments: 16 bytes), the
  // experts hold 4 + 16 / 2 + 2 = 14 bytes per parameter.
  CHECK(q.grads + q.optimizer - (4 * d * (1 + 1 / 4.0) + 12 * d / 4 + 2 * d) == Approx(14 * x));
  CHECK(format_memory_plan(plan).find("experts' optimizer state sharded over EDP = 2 ranks") != std::string::npos);
}

TEST_CASE("memory plan: the fixed-capacity dispatcher keeps EP x max_tokens_per_gpu x top_k expert rows per MoE layer",
          "[plan][ep_dispatch]") {
  // The 2-GPU EP2 proxy (4 MoE layers; one 8,192-token row per microbatch, max_tokens_per_gpu 8,192, top-8):
  // fixed_capacity receives 2 blocks of 8,192 x 8 = 65,536 rows per MoE layer, 131,072 rows, where host_splits
  // plans the mean load of 65,536 (8,192 tokens x 8).
  const ValidatedRecipe v =
      validate_recipe_file(test::source_path("recipes/qwen3.5-35b-a3b/h200/proxy4l-2gpu-ep2-bf16.yaml"));
  REQUIRE(v.ok());
  Recipe r = *v.recipe;
  const ModelConfig m = find_model(r.model)->with_layers(4);
  const RankMap map = build_rank_map(r, m);
  REQUIRE(map.ep == 2);
  PlanOptions o;
  o.ep_dispatch = EpDispatch::kHostSplits;
  const MemoryPlan host = plan_memory(r, m, map, o);
  o.ep_dispatch = EpDispatch::kFixedCapacity;
  const MemoryPlan fixed = plan_memory(r, m, map, o);
  CHECK(host.ep_capacity_rows == 0);
  CHECK(fixed.ep_capacity_rows == 131072);
  // The 65,536 extra rows keep the experts' BF16 input [2,048] and gate/up, SiLU and product rows [4 x 512] in each
  // of the 4 MoE layers: 4 x 65,536 x 2 x (2,048 + 2,048) bytes = 2 GiB more per microbatch.
  const double extra = 4.0 * 65536 * 2 * (2048 + 4 * 512);
  CHECK(extra == 2147483648.0);
  CHECK(fixed.ranks[0].activations_per_microbatch - host.ranks[0].activations_per_microbatch == Approx(extra));
  CHECK(fixed.ranks[0].peak - host.ranks[0].peak >= extra);
  CHECK(format_memory_plan(fixed).find("bench.ep_dispatch fixed_capacity: each MoE layer's experts run on and keep "
                                       "131072 received rows") != std::string::npos);
  CHECK(format_memory_plan(host).find("ep_dispatch") == std::string::npos);
  // The recipe's bench.ep_dispatch is what the plan uses when none is given; with EP 1 nothing is dispatched.
  r.bench.ep_dispatch = EpDispatch::kFixedCapacity;
  CHECK(plan_memory(r, m, map).ep_capacity_rows == 131072);
  r.layout.ep = 1;
  CHECK(plan_memory(r, m, build_rank_map(r, m)).ep_capacity_rows == 0);
}

TEST_CASE("memory plan: bench.kernels ops plans the libtorch-ops delta rule and loss (more activation memory)",
          "[plan]") {
  // The 35B-A3B proxy on one H200, BF16: with ops the GDN layers keep the delta rule's libtorch intermediates and the
  // loss chunk its FP32 logits, both of which the kernels do without (2026-11-30: 105.9 GB measured with ops,
  // 91.7 GB fused, reports/bench/h200-2026-11-30-kernels).
  const ValidatedRecipe v =
      validate_recipe_file(test::source_path("recipes/qwen3.5-35b-a3b/h200/proxy4l-1gpu-bf16.yaml"));
  REQUIRE(v.ok());
  const Recipe& r = *v.recipe;
  const ModelConfig m = find_model(r.model)->with_layers(4);
  const RankMap map = build_rank_map(r, m);
  auto plan = [&](Device device, bool fused_kernels) {
    PlanOptions o;
    o.device = device;
    o.impl = TorchMemoryImpl::kFusedLoss;
    o.fused_kernels = fused_kernels;
    return plan_memory(r, m, map, o);
  };
  const MemoryPlan fused = plan(Device::kCuda, true);
  const MemoryPlan ops = plan(Device::kCuda, false);
  CHECK(ops.worst().activations_per_microbatch > fused.worst().activations_per_microbatch);
  CHECK(ops.worst().peak > fused.worst().peak);
  // On CPU there are no kernels: the switch changes nothing.
  CHECK(plan(Device::kCpu, false).worst().peak == plan(Device::kCpu, true).worst().peak);
}

TEST_CASE("memory plan: since 1eca4b9 the fused loss holds no BF16 [vocabulary, hidden] weight-gradient product",
          "[plan]") {
  // Qwen3.5-35B-A3B widths (h 2,048, V 248,320), one 8,192-token row on one GPU, BF16, chunk 4,096: cuBLAS adds each
  // chunk's weight gradient into the FP32 buffer (cuda/gemm_accumulate_cuda.h), 2 V h = 1.02 GB less.
  const ModelConfig m = find_model("Qwen3.5-35B-A3B")->with_layers(4);
  MicrobatchShape s;
  s.tokens = 8192;
  REQUIRE(s.impl == TorchMemoryImpl::kGemmAccumulate);  // the current code
  const double V = 248320, h = 2048, N = 8192, c = 4096;
  CHECK(loss_memory(m, s).forward == Approx(2 * 2 * N * h + 4 * V * h + 2 * c * V));
  CHECK(loss_memory(m, s).forward_term == "loss forward (d weight in FP32, d hidden, one chunk's logits)");
  s.impl = TorchMemoryImpl::kGdnSaved;
  CHECK(loss_memory(m, s).forward == Approx(2 * 2 * N * h + 4 * V * h + 2 * c * V + 2 * V * h));
  // bench.kernels ops: libtorch's product and add, as before.
  s.fused_kernels = false;
  const double ops_before = loss_memory(m, s).forward;
  s.impl = TorchMemoryImpl::kGemmAccumulate;
  CHECK(loss_memory(m, s).forward == Approx(ops_before));
}

TEST_CASE(
    "memory plan: bench.overlap_param_gather keeps each distributed optimizer's updated BF16 shard (2 bytes per "
    "parameter / shards), only where a group of several ranks gathers",
    "[plan][overlap_param_gather]") {
  // The 2-GPU DP2 proxy: one DistributedAdam over DP 2 for every parameter (EP 1, TP 1).
  const ValidatedRecipe v =
      validate_recipe_file(test::source_path("recipes/qwen3.5-35b-a3b/h200/proxy4l-2gpu-dp2-bf16.yaml"));
  REQUIRE(v.ok());
  Recipe r = *v.recipe;
  const ModelConfig m = find_model(r.model)->with_layers(4);
  const RankMap map = build_rank_map(r, m);
  REQUIRE(map.dp == 2);
  PlanOptions o;
  const MemoryPlan off = plan_memory(r, m, map, o);
  o.overlap_param_gather = true;
  const MemoryPlan on = plan_memory(r, m, map, o);
  const double n = static_cast<double>(off.ranks[0].dense_params + off.ranks[0].expert_params);
  CHECK(on.ranks[0].optimizer - off.ranks[0].optimizer == Approx(2 * n / 2));
  CHECK(on.ranks[0].peak - off.ranks[0].peak == Approx(2 * n / 2));
  // The recipe's bench.overlap_param_gather when the options name none.
  r.bench.overlap_param_gather = true;
  CHECK(plan_memory(r, m, map).ranks[0].optimizer == Approx(on.ranks[0].optimizer));
  // FP32 parameters (CPU): the shard is a view of the masters, nothing more is kept.
  o.device = Device::kCpu;
  o.overlap_param_gather = false;
  const double cpu_off = plan_memory(r, m, map, o).ranks[0].optimizer;
  o.overlap_param_gather = true;
  CHECK(plan_memory(r, m, map, o).ranks[0].optimizer == Approx(cpu_off));
  // One GPU: nothing is gathered, nothing kept.
  const ValidatedRecipe one =
      validate_recipe_file(test::source_path("recipes/qwen3.5-35b-a3b/h200/proxy4l-1gpu-bf16.yaml"));
  REQUIRE(one.ok());
  PlanOptions g;
  g.overlap_param_gather = true;
  CHECK(plan_memory(*one.recipe, m, build_rank_map(*one.recipe, m), g).ranks[0].optimizer ==
        Approx(plan_memory(*one.recipe, m, build_rank_map(*one.recipe, m)).ranks[0].optimizer));
}

#include "plan/memory_check.h"

TEST_CASE("memory check: the plan says whose plan it is, and --strict fails only a recipe meant for the torch backend",
          "[plan][strict]") {
  const std::string seed = test::seed_recipe("attune-48gpu-tp2-pp6-ep8");
  const ValidatedRecipe v = validate_recipe_file(seed);
  REQUIRE(v.ok());
  Recipe r = *v.recipe;
  CHECK(plan_not_modelled_reason(r) == "it was measured with slime with local patches, not pinned (stack.framework)");
  r.doc["stack"].erase("framework");
  CHECK(plan_not_modelled_reason(r) ==
        "it was measured with commit 1dcf0daf (megatron-core 0.16.0rc0) (stack.megatron_lm)");
  r.status = "proposed";
  CHECK(plan_not_modelled_reason(r) ==
        "it is written for commit 1dcf0daf (megatron-core 0.16.0rc0) (stack.megatron_lm)");
  r.doc.erase("stack");
  CHECK(plan_not_modelled_reason(r).empty());
  r.doc["stack"] = Json{{"framework", "recipebench 0.1.0, torch backend"}};
  CHECK(plan_not_modelled_reason(r).empty());
  r.bench.backend = "command";
  CHECK(plan_not_modelled_reason(r) == "it runs on the command backend (bench.backend)");

  // The verified seed (measured with slime / Megatron-LM) fits with its precision-aware optimizer
  // (optimizer.master_weights: bf16_remainder). With FP32 masters (the torch backend's default) it does not: a
  // warning, also with --strict, at the field whose change fixes the largest term (optimizer state): PP 10 on 80
  // GPUs (PP 7 to 9 do not split 60 layers; EP 16 does not fit the expert grid), not at max_tokens_per_gpu (line 69,
  // already one row).
  CHECK_FALSE(check_memory_fits(*v.recipe, seed, true));
  Recipe fp32 = *v.recipe;
  fp32.optimizer.master_weights = MasterWeights::kFp32;
  fp32.doc["optimizer"]["master_weights"] = "fp32";
  for (const bool strict : {false, true}) {
    const std::optional<Diagnostic> d = check_memory_fits(fp32, seed, strict);
    REQUIRE(d);
    CHECK(d->severity == "warning");
    CHECK(d->path == "layout.pp");
    CHECK(d->line == 61);
    CHECK(d->column == 7);
    CHECK(d->found ==
          "the memory plan of recipebench's torch backend does not fit: the first stage (pipeline rank 0) needs 180.2 "
          "GB at its peak, more than the B200's 180.0 GB; largest term: optimizer state (FP32 masters and Adam "
          "moments) (102.5 GB)");
    CHECK(d->expected ==
          "a layout whose peak and reserve fit the B200's 180.0 GB: layout.pp 10 (80 GPUs): the worst rank needs "
          "112.2 GB; or layout.dp 8 (96 GPUs): the worst rank needs 161.2 GB (recipebench run " +
              seed +
              " --dry-run shows the plan); the plan is recipebench's torch backend's and it was "
              "measured with slime with local patches, not pinned (stack.framework), whose memory it "
              "does not model: a warning, also with --strict");
  }
  // The same overflow proposed for the torch backend: an error with --strict, at layout.recompute (activations).
  const std::string torch = test::source_path("tests/data/plan/torch-48gpu-no-recompute-64k.yaml");
  const ValidatedRecipe t = validate_recipe_file(torch);
  REQUIRE(t.ok());
  CHECK(plan_not_modelled_reason(*t.recipe).empty());
  const std::optional<Diagnostic> e = check_memory_fits(*t.recipe, torch, true);
  REQUIRE(e);
  CHECK(e->severity == "error");
  CHECK(e->to_string().rfind(torch + ":37:14: error: layout.recompute: the memory plan of recipebench's torch "
                                     "backend does not fit: the first stage (pipeline rank 0) needs 1051.3 GB",
                             0) == 0);
  CHECK_THAT(e->expected, Catch::StartsWith("a peak and reserve within the B200's 180.0 GB, which no change of one field gives "
                                            "(layout.recompute full (uniform, 1 layer) (48 GPUs): the worst rank "
                                            "needs 193.8 GB; layout.max_tokens_per_gpu 8192 (48 GPUs): the worst rank "
                                            "needs 327.2 GB; layout.pp 12 (96 GPUs): the worst rank needs 529.2 GB)"));
  CHECK(check_memory_fits(*t.recipe, torch, false)->severity == "warning");
}

TEST_CASE("memory check: README's validate --strict recipes/ holds on every shipped recipe", "[plan][strict]") {
  int recipes = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(test::source_path("recipes"))) {
    if (e.path().extension() != ".yaml") continue;
    const ValidatedRecipe v = validate_recipe_file(e.path().string());
    INFO(e.path().string());
    REQUIRE(v.ok());
    ++recipes;
    const std::optional<Diagnostic> d = check_memory_fits(*v.recipe, e.path().string(), true);
    if (d) CHECK(d->severity == "warning");
  }
  CHECK(recipes >= 16);
}
