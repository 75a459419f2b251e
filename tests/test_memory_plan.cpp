// The per-rank memory plan (harness/plan/memory_plan.h) against every committed H200 run record's measured peak,
// and the seed's B200 layouts against their 180 GB.
#include <catch2/catch.hpp>

#include <cmath>

#include "plan/memory_plan.h"
#include "recipe/validate.h"
#include "test_util.h"
#include "util/json.h"

using namespace recipebench;

namespace {

MemoryPlan plan_of(const std::string& rel, const std::string& device = "cuda") {
  const ValidatedRecipe v = validate_recipe_file(test::source_path(rel));
  REQUIRE(v.ok());
  const Recipe& r = *v.recipe;
  ModelConfig m = *find_model(r.model);
  const Json bench = r.doc.value("bench", Json());
  if (bench.is_object() && bench.contains("layers")) m = m.with_layers(bench["layers"].get<int64_t>());
  return plan_memory(r, m, build_rank_map(r, m), device);
}

struct Measured {
  const char* recipe;
  const char* record;
  double peak_bytes;  ///< metrics.peak_memory_bytes of the record (the maximum over ranks)
};

// The committed H200 run records (reports/runs/), torch backend, PyTorch 2.11, BF16: the caching allocator's
// peak allocated bytes over each step, maximum over the ranks.
const Measured kMeasured[] = {
    {"recipes/qwen3.5-35b-a3b/h200/proxy4l-1gpu-bf16.yaml", "proxy4l-1gpu-bf16-20261130T000513Z.json", 122134062080},
    {"recipes/qwen3.5-35b-a3b/h200/proxy4l-1gpu-bf16.yaml", "proxy4l-1gpu-bf16-20261129T213008Z.json", 122134063104},
    {"recipes/qwen3.5-35b-a3b/h200/proxy4l-2gpu-dp2-bf16.yaml", "proxy4l-2gpu-dp2-bf16-20261130T000607Z.json",
     113371078656},
    {"recipes/qwen3.5-35b-a3b/h200/proxy4l-2gpu-ep2-bf16.yaml", "proxy4l-2gpu-ep2-bf16-20261130T000706Z.json",
     91908449280},
    {"recipes/qwen3.5-35b-a3b/h200/proxy4l-2gpu-tp2-bf16.yaml", "proxy4l-2gpu-tp2-bf16-20261130T000821Z.json",
     71507596800},
    {"recipes/qwen3.5-35b-a3b/h200/proxy4l-2gpu-pp2-bf16.yaml", "proxy4l-2gpu-pp2-bf16-20261130T000926Z.json",
     85128126976},
    {"recipes/qwen3.5-397b-a17b/h200/stage-shapes-tp2-ep2-2gpu.yaml", "stage-shapes-tp2-ep2-2gpu-20261130T001312Z.json",
     125363679232},
};

}  // namespace

TEST_CASE("memory plan: within 15% of every committed H200 run record's peak", "[plan]") {
  for (const Measured& m : kMeasured) {
    // The figure above is the record's.
    const Json rec = Json::parse(test::read_file(test::source_path(std::string("reports/runs/") + m.record)));
    REQUIRE(rec["metrics"]["peak_memory_bytes"].get<double>() == m.peak_bytes);
    const MemoryPlan plan = plan_of(m.recipe);
    const double planned = plan.worst().peak;
    INFO(m.record << ": planned " << planned / 1e9 << " GB, measured " << m.peak_bytes / 1e9 << " GB\n"
                  << format_memory_plan(plan));
    CHECK(std::abs(planned / m.peak_bytes - 1) <= 0.15);
  }
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

TEST_CASE("memory plan: the seed's B200 recipes on the torch backend against 180 GB", "[plan]") {
  // EDP = 64 / (EP 8 x PP 8) = 1 and 48 / (EP 8 x PP 6) = 1: sharding the expert state over EDP changes nothing.
  // The torch backend keeps 18 bytes per expert parameter (BF16 parameter, FP32 gradient, master, two moments):
  // the 48-GPU layout's first stage (9.2 billion parameters) does not fit; the 64-GPU layouts (at most 7.0) do.
  struct Seed {
    const char* stem;
    bool fits;
  };
  for (const Seed& s : {Seed{"attune-tp2-pp8-ep8-vpp2-mt16k", true}, Seed{"attune-tp2-pp8-ep8-vpp2-mt8k", true},
                        Seed{"attune-48gpu-tp2-pp6-ep8", false}}) {
    const MemoryPlan plan = plan_of(std::string("recipes/qwen3.5-397b-a17b/b200/") + s.stem + ".yaml");
    INFO(s.stem << "\n" << format_memory_plan(plan));
    CHECK(plan.gpu_memory == 180e9);
    CHECK(plan.fits() == s.fits);
    for (const RankMemory& r : plan.ranks) CHECK(r.peak_edp_sharded == Approx(r.peak));
    if (!s.fits) CHECK(plan.largest_term() == "optimizer state (FP32 masters and Adam moments)");
  }
  // 1F1B keeps PP - p microbatches on rank p; interleaved 2 (PP - p - 1) + (VPP - 1) PP + 1 chunk passes.
  const MemoryPlan pp6 = plan_of("recipes/qwen3.5-397b-a17b/b200/attune-48gpu-tp2-pp6-ep8.yaml");
  CHECK(pp6.ranks[0].microbatches_in_flight == 6);
  CHECK(pp6.ranks[5].microbatches_in_flight == 1);
  const MemoryPlan vpp = plan_of("recipes/qwen3.5-397b-a17b/b200/attune-tp2-pp8-ep8-vpp2-mt16k.yaml");
  CHECK(vpp.ranks[0].microbatches_in_flight == 23);
  CHECK(vpp.ranks[7].microbatches_in_flight == 9);
}

TEST_CASE("memory plan: no recompute and 65,536 tokens per GPU do not fit a B200; activations overflow", "[plan]") {
  const MemoryPlan plan = plan_of("tests/data/plan/attune-48gpu-no-recompute-64k.yaml");
  INFO(format_memory_plan(plan));
  CHECK_FALSE(plan.fits());
  CHECK(plan.largest_term().rfind("activations of", 0) == 0);
  CHECK(memory_overflow_message(plan).find("largest term: activations of") != std::string::npos);
}

TEST_CASE("memory plan: expert state sharded over EDP, as the layout implies, when EDP > 1", "[plan]") {
  // The 4-GPU DP4 proxy with EP 2: EDP = 4 / (ETP 1 x EP 2 x PP 1) = 2.
  const ValidatedRecipe v =
      validate_recipe_file(test::source_path("recipes/qwen3.5-35b-a3b/h200/proxy4l-4gpu-dp4-bf16.yaml"));
  REQUIRE(v.ok());
  Recipe r = *v.recipe;
  r.layout.ep = 2;
  const ModelConfig m = find_model(r.model)->with_layers(4);
  const RankMap map = build_rank_map(r, m);
  REQUIRE(map.edp == 2);
  const RankMemory& q = plan_memory(r, m, map).ranks[0];
  const double x = static_cast<double>(q.expert_params);
  CHECK(x == Approx(4 * 128.0 * 3 * 2048 * 512));  // 4 layers, 128 of 256 experts
  // Today: MixedPrecisionAdam on every EDP replica (12 bytes of masters and moments per expert parameter);
  // sharded: gradient shard, masters and moments over EDP (16 / 2) plus the BF16 all-gather buffer (2).
  CHECK(q.optimizer - q.optimizer_edp_sharded == Approx(12 * x - (16 * x / 2 + 2 * x)));
}
