// The three seed recipes: they validate, and the catalog and metric formulas reproduce their figures.
#include <catch2/catch.hpp>

#include "catalog/hardware.h"
#include "catalog/models.h"
#include "metrics/metrics.h"
#include "recipe/layout_check.h"
#include "recipe/result_check.h"
#include "recipe/validate.h"
#include "test_util.h"
#include "util/format.h"

using namespace recipebench;

TEST_CASE("the seed recipes validate with no error", "[seed]") {
  for (const char* stem :
       {"attune-tp2-pp8-ep8-vpp2-mt16k", "attune-tp2-pp8-ep8-vpp2-mt8k", "attune-48gpu-tp2-pp6-ep8"}) {
    const ValidatedRecipe v = validate_recipe_file(test::seed_recipe(stem));
    INFO(stem << (v.errors.empty() ? "" : ": " + v.errors[0].to_string()));
    CHECK(v.errors.empty());
    REQUIRE(v.recipe);
    CHECK(v.recipe->result->window_tokens == 15728640);
  }
}

TEST_CASE("the seed page's $ and MFU figures follow from tokens/s/GPU", "[seed]") {
  const InstanceSpec* b200 = find_instance("AWS p6-b200.48xlarge");
  REQUIRE(b200);
  const double n_active = static_cast<double>(count_params(*find_model("Qwen3.5-397B-A17B")).active);
  const double peak = find_gpu("B200")->peak_bf16_flops;
  struct Row {
    double tps;
    const char* usd;
    const char* mfu_percent;
  };
  for (const Row& r : {Row{1232.53, "3.21", "5.4"}, Row{1130.65, "3.50", "4.9"}, Row{1075.50, "3.68", "4.7"}}) {
    CHECK(fixed(usd_per_million_tokens(b200->usd_per_gpu_hour(), r.tps), 2) == r.usd);
    CHECK(fixed(100 * mfu_6n(n_active, r.tps, peak), 1) == r.mfu_percent);
  }
  // The recipes print MFU to 4 decimals.
  CHECK(fixed(mfu_6n(n_active, 1232.53, peak), 4) == "0.0537");
  CHECK(fixed(mfu_6n(n_active, 1130.65, peak), 4) == "0.0492");
  CHECK(fixed(mfu_6n(n_active, 1075.50, peak), 4) == "0.0468");
  // The other GPUs of the seed page: H200 545.3 -> $4.03, H100 313.3 -> $6.10.
  CHECK(fixed(usd_per_million_tokens(find_instance("p5en.48xlarge")->usd_per_gpu_hour(), 545.3), 2) == "4.03");
  CHECK(fixed(usd_per_million_tokens(find_instance("p5.48xlarge")->usd_per_gpu_hour(), 313.3), 2) == "6.10");
  CHECK(window_tokens(StepWindow{5, 19}, 128, 8192) == 15728640);
}

TEST_CASE("the seed layouts' stage split and microbatches", "[seed][layout]") {
  // PP8 with 6-layer first and last stages: 8 layers in each of the 6 middle stages.
  CHECK(stage_layer_counts(60, 8, 6, 6) == std::vector<int64_t>{6, 8, 8, 8, 8, 8, 8, 6});
  CHECK(stage_layer_counts(60, 6, std::nullopt, std::nullopt) == std::vector<int64_t>(6, 10));
  CHECK(stage_layer_counts(60, 8, std::nullopt, std::nullopt).empty());  // 60 / 8 is not whole
  CHECK(stage_layer_counts(60, 8, 6, 5).empty());                        // 49 over 6 middle stages
  CHECK(stage_layer_counts(60, 2, 30, 30) == std::vector<int64_t>{30, 30});
  CHECK(rows_per_microbatch(16384, 8192) == 2);
  CHECK(rows_per_microbatch(8192, 8192) == 1);
  CHECK(rows_per_microbatch(4096, 8192) == 0);
}

TEST_CASE("a recipe's own price overrides the catalog", "[seed][price]") {
  ValidatedRecipe v = validate_recipe_file(test::seed_recipe("attune-tp2-pp8-ep8-vpp2-mt16k"));
  REQUIRE(v.recipe);
  auto p = recipe_price(*v.recipe);
  REQUIRE(p);
  CHECK(p->usd_per_gpu_hour == Approx(113.9328 / 8));
  CHECK_THAT(p->source, Catch::Contains("p6-b200.48xlarge"));
  v.recipe->gpu.usd_per_gpu_hour = 10.0;
  CHECK(recipe_price(*v.recipe)->usd_per_gpu_hour == 10.0);
}
