// The field cases of 2026-11-30 (tests/data/cases/<case>/, copied from the cases' inputs): each input with the
// result its expect.txt names: exit status, and for errors the exact located line.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "metrics/derive.h"
#include "recipe/validate.h"
#include "report/leaderboard.h"
#include "run/run_record.h"
#include "test_util.h"

using namespace recipebench;
using recipebench::test::source_path;

namespace {

std::string case_path(const std::string& rel) { return source_path("tests/data/cases/" + rel); }

/// The diagnostics of one file, one line each.
std::vector<std::string> errors_of(const std::string& file) {
  std::vector<std::string> out;
  for (const auto& d : validate_recipe_file(file).errors) out.push_back(d.to_string());
  return out;
}

}  // namespace

TEST_CASE("proxy-mfu-depth: a proxy recipe's N and MFU are those of the 4 layers that ran", "[cases]") {
  // N_active of the 4-layer Qwen3.5-35B-A3B = 752,328,704; MFU = 6 x N x 18871.26 / 989.4e12 = 0.0861.
  CHECK(errors_of(case_path("proxy-mfu-depth/proxy4l-result-proxy-count.yaml")).empty());
  const std::string full = case_path("proxy-mfu-depth/proxy4l-result-full-count.yaml");
  const auto errors = errors_of(full);
  REQUIRE(errors.size() == 2);
  CHECK(errors[0] == full + ":46:8: error: result.mfu: 0.3372, expected 0.0861 = 6 x 752,328,704 (4-layer "
                            "Qwen3.5-35B-A3B) x 18871.26 / 9.894e+14 (H200 dense BF16 FLOP/s), to the printed "
                            "precision");
  CHECK(errors[1] == full + ":48:12: error: result.active_params.count: 2,946,252,800, expected 752,328,704 active "
                            "parameters of the 4-layer Qwen3.5-35B-A3B that ran (docs/metrics.md: N_active of the "
                            "layers and widths that ran)");
}

TEST_CASE("the leaderboard's MFU of a run is the run record's, from the N the record holds", "[cases][report]") {
  // A run of a model given by --model-config: its N (here the 170,688 of hf-mlp-only-layers' config with layer
  // 0 dense) is not the registry model's; the leaderboard must not recompute it from registry widths.
  const ValidatedRecipe v = validate_recipe_file(case_path("proxy-mfu-depth/proxy4l-result-proxy-count.yaml"));
  REQUIRE(v.ok());
  RunRecord rec;
  rec.recipe_path = v.file;
  rec.recipe = v.recipe->doc;
  rec.options.device = "cuda";
  rec.model_name = "tiny-config";
  rec.model_layers = rec.model_layers_full = 4;
  rec.status = "complete";
  rec.environment = Json{{"device", Json{{"name", "NVIDIA H200"}, {"count", 1}}}};
  RunMetrics m;
  m.window.window = StepWindow{5, 19};
  m.window.tokens = 245760;
  m.window.seconds = 245760.0 / 18871.26;
  m.window.tokens_per_s_per_gpu = 18871.26;
  m.active_params = 170688;
  m.peak_flops = 989.4e12;
  m.mfu = 6.0 * 170688 * 18871.26 / 989.4e12;
  rec.metrics = m;
  const Leaderboard board = build_leaderboard({}, ReportOptions{}, {RunRecordInput{"r.json", rec.to_json()}});
  REQUIRE(board.groups.size() == 1);
  const LeaderboardEntry& e = board.groups[0].entries.at(0);
  CHECK(e.active_params == 170688);
  REQUIRE(e.mfu);
  CHECK(*e.mfu == Approx(*m.mfu).epsilon(1e-12));
}
