// The step-time model beyond one GPU and one profile (docs/step-time.md, "Scaling to another GPU", "Analytical
// mode"): the catalog's efficiency curves as data, a profile carried operation by operation by hand, the fallback
// rule, and the analytical unit costs by hand.
#include <catch2/catch.hpp>

#include <cmath>

#include "catalog/hardware.h"
#include "catalog/models.h"
#include "plan/analytical_costs.h"
#include "plan/gpu_scaling.h"

using namespace recipebench;

namespace {

/// Two GPUs and dense GEMM curves of one series: A at 100 TFLOP/s, B at 300.
HardwareCatalog two_gpus() {
  const std::string text = R"(
gpus:
  - {name: GA, full_name: GPU A, vendor: other, bf16_dense_flops: 100e12, memory_bytes: 80e9,
     memory_bandwidth_bytes_per_s: 2e12, scale_up: link, scale_up_bandwidth_bytes_per_s: 1e11, source: test, date: 2026-12}
  - {name: GB, full_name: GPU B, vendor: other, bf16_dense_flops: 300e12, memory_bytes: 80e9,
     memory_bandwidth_bytes_per_s: 4e12, scale_up: link, scale_up_bandwidth_bytes_per_s: 1e11, source: test, date: 2026-12}
efficiencies:
  - {gpu: GA, operation: dense_gemm, series: s, points: [[100, 0.8], [10000, 0.8]], source: t, date: 2026-12, method: m}
  - {gpu: GB, operation: dense_gemm, series: s, points: [[100, 0.2], [10000, 0.6]], source: t, date: 2026-12, method: m}
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

}  // namespace

TEST_CASE("efficiency curve: linear in log(key) between points, flat beyond the ends", "[prediction-modes]") {
  EfficiencyCurve c;
  c.points = {{100, 0.2}, {10000, 0.6}};
  CHECK(c.at(50) == 0.2);
  CHECK(c.at(100) == 0.2);
  CHECK(c.at(1000) == Approx(0.4));  // log10 1000 is halfway between 2 and 4
  CHECK(c.at(10000) == 0.6);
  CHECK(c.at(1e6) == 0.6);
  EfficiencyCurve one;
  one.points = {{0, 0.7}};
  CHECK(one.at(12345) == 0.7);
}

TEST_CASE("per-operation scaling by hand: (e_from x peak_from) / (e_to x peak_to) at the target's key",
          "[prediction-modes]") {
  const HardwareCatalog c = two_gpus();
  const GpuSpec& a = *c.gpu("GA");
  const GpuSpec& b = *c.gpu("GB");
  const OperationScale s = scale_operation(c, a, b, Operation::kDenseGemm, 1000);
  CHECK_FALSE(s.fallback);
  CHECK(s.from_efficiency == Approx(0.8));
  CHECK(s.to_efficiency == Approx(0.4));
  CHECK(s.ratio == Approx(0.8 * 100 / (0.4 * 300)));  // 0.667: B is 1.5x A here, not the 3x of its peak
  CHECK(s.series_note.empty());
  // No curve on one end: the ratio of peaks (HBM bandwidths for a bandwidth-bound operation), said.
  const OperationScale g = scale_operation(c, a, b, Operation::kGroupedGemm, 1000);
  CHECK(g.fallback);
  CHECK(g.missing == "GB");
  CHECK(g.ratio == Approx(100.0 / 300));
  const OperationScale m = scale_operation(c, a, b, Operation::kMemoryBound, 0);
  CHECK(m.fallback);
  CHECK(m.ratio == Approx(2.0 / 4));
  GpuScaling two;
  two.operations = {s, g};
  const auto lines = scaling_lines(two, "GA", "GB");
  REQUIRE(lines.size() == 4);
  CHECK(lines[0] == "dense_gemm at smallest dimension 1000: GA 0.8 -> GB 0.4 of peak: x 0.667");
  CHECK(lines[1] ==
        "grouped_gemm at tokens per expert 1000: no efficiency of GB in the catalog: ratio of dense BF16 peaks x 0.333");
  CHECK(lines[2] == "source, GA dense_gemm: t");
}

TEST_CASE("analytical unit costs by hand: work share over efficiency x peak, twice that backward",
          "[prediction-modes]") {
  const HardwareCatalog c = two_gpus();
  const GpuSpec& b = *c.gpu("GB");
  ModelConfig m = *find_model("Qwen3.5-35B-A3B");
  ChunkShape s;
  s.tokens = 8192;
  s.row_tokens = 8192;
  const UnitCosts u = analytical_costs(c, b, m, s);
  CHECK(u.sources.empty());
  CHECK(u.gpu == "GB");
  // The shared expert is one dense GEMM keyed by min(8192 tokens, its width 512): GB's curve at 512.
  EfficiencyCurve gb;
  gb.points = {{100, 0.2}, {10000, 0.6}};
  const int shared = static_cast<int>(ProfileComponent::kMoeSharedExpert);
  const int fwd = static_cast<int>(PassPhase::kForward), bwd = static_cast<int>(PassPhase::kBackward);
  CHECK(u.forward_pass[fwd][shared] == Approx(1 / (gb.at(512) * 300e12)));
  CHECK(u.backward_pass[bwd][shared] == Approx(2 / (gb.at(512) * 300e12)));
  // GB has no optimizer curve: GA's fraction of peak is borrowed (0.5 of GB's 4 TB/s), and said.
  CHECK(u.weight_stream_bytes_per_s == Approx(0.5 * 4e12));
  bool borrowed = false;
  for (const std::string& n : u.notes) borrowed = borrowed || n.find("GA's fraction of peak assumed") != std::string::npos;
  CHECK(borrowed);
  // An operation no GPU of the catalog has a curve for cannot be timed: a clear error.
  HardwareCatalog without = c;
  without.efficiencies.pop_back();  // gated_deltanet
  CHECK_THROWS_WITH(analytical_costs(without, b, m, s),
                    "no efficiency of gated_deltanet for any GPU in the catalog: the analytical mode cannot time it");
}

TEST_CASE("catalog efficiencies: each problem located at its field", "[prediction-modes][catalog]") {
  auto error_of = [&](const std::string& entry) -> std::string {
    try {
      HardwareCatalog c = overlay(embedded_catalog(), read_catalog("efficiencies:\n  - {" + entry + "}\n", "mine.yaml"));
      check_references(c);
    } catch (const CatalogError& e) {
      return e.file + ": " + e.pointer + ": " + e.found + ", expected " + e.expected;
    }
    return "";
  };
  const std::string rest = "series: s, source: t, date: 2026-12, method: m, ";
  CHECK(error_of("gpu: H200, operation: dense_gemm, " + rest + "points: [[512, 0.5], [256, 0.6]]") ==
        "mine.yaml: /efficiencies/0/points/1/0: 256, expected keys in ascending order");
  CHECK(error_of("gpu: H200, operation: dense_gemm, " + rest + "points: [[512, 1.5]]") ==
        "mine.yaml: /efficiencies/0/points/0/1: 1.5, expected a fraction of the peak, above 0 and at most 1");
  CHECK(error_of("gpu: H200, operation: dense_gemm, " + rest + "points: []") ==
        "mine.yaml: /efficiencies/0/points: missing or empty, expected [[smallest_dimension, efficiency], ...]");
  CHECK(error_of("gpu: H200, operation: memory_bound, " + rest + "points: [[1, 0.5]]") ==
        "mine.yaml: /efficiencies/0/efficiency: missing, expected one fraction for memory_bound");
  CHECK(error_of("gpu: H200, operation: matmul, " + rest + "points: [[1, 0.5]]").rfind(
            "mine.yaml: /efficiencies/0/operation: 'matmul', expected dense_gemm, grouped_gemm", 0) == 0);
  CHECK(error_of("gpu: H999, operation: dense_gemm, " + rest + "points: [[1, 0.5]]").rfind(
            "mine.yaml: /efficiencies/0/gpu: unknown GPU 'H999', expected a catalog GPU: ", 0) == 0);
  // A user's curve replaces the embedded one of the same GPU and operation (no duplicate).
  CHECK(error_of("gpu: H200 SXM, operation: dense_gemm, " + rest + "points: [[1, 0.5]]").empty());
  // The embedded curves pass and cover the pairs the seed's predictions use.
  const HardwareCatalog& e = hardware_catalog();
  for (const char* gpu : {"H100", "H200", "B200", "GB200"}) {
    CHECK(e.efficiency(gpu, Operation::kDenseGemm) != nullptr);
    CHECK(e.efficiency(gpu, Operation::kGatedDeltaNet) != nullptr);
  }
}
