// The rank map of the seed layouts: coordinates, layer split per (virtual) stage, microbatches, schedule.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <tuple>

#include "layout/rank_map.h"
#include "recipe/run_model.h"
#include "recipe/validate.h"
#include "test_util.h"

using namespace recipebench;

namespace {
RankMap seed_map(const std::string& stem) {
  const ValidatedRecipe v = validate_recipe_file(test::seed_recipe(stem));
  REQUIRE(v.ok());
  return build_rank_map(*v.recipe, *find_model(v.recipe->model));
}
}  // namespace

TEST_CASE("TP2 PP8 VPP2 EP8 DP4 on 64 GPUs: the seed's split, interleaved virtual stages", "[rankmap]") {
  const RankMap m = seed_map("attune-tp2-pp8-ep8-vpp2-mt16k");
  CHECK(m.world == 64);
  REQUIRE(m.ranks.size() == 64);
  CHECK(m.stage_layers == std::vector<int64_t>{6, 8, 8, 8, 8, 8, 8, 6});
  CHECK(m.edp == 1);  // 64 / (ETP 1 x EP 8 x PP 8)
  CHECK(m.rows_per_microbatch == 2);
  CHECK(m.microbatches == 16);  // 128 rows / DP 4 / 2 rows
  CHECK(m.schedule == "interleaved 1F1B (VPP 2)");
  // Rank 0: first pipeline stage, chunk 0 = layers 0-2, chunk 1 = layers 30-32 (half the model later).
  const RankPlacement& r0 = m.ranks[0];
  CHECK(std::make_tuple(r0.tp, r0.cp, r0.dp, r0.pp, r0.ep, r0.edp) == std::make_tuple(0, 0, 0, 0, 0, 0));
  REQUIRE(r0.layers.size() == 2);
  CHECK(r0.layers[0].first == 0);
  CHECK(r0.layers[0].count == 3);
  CHECK(r0.layers[1].first == 30);
  // Rank 63: TP 1, DP 3, last stage; within its stage of 8 ranks the expert rank is 7.
  const RankPlacement& r63 = m.ranks[63];
  CHECK(std::make_tuple(r63.tp, r63.dp, r63.pp, r63.ep, r63.node, r63.local_rank) == std::make_tuple(1, 3, 7, 7, 7, 7));
  CHECK(r63.layers[0].first == 27);
  CHECK(r63.layers[1].first == 57);
  CHECK(r63.layers[1].first + r63.layers[1].count == 60);
  // Every layer belongs to exactly one (stage, virtual stage); every attention coordinate is used once.
  std::vector<int> owners(60, 0);
  std::set<std::tuple<int, int, int, int>> coords;
  for (const auto& q : m.ranks) {
    coords.insert({q.tp, q.cp, q.dp, q.pp});
    if (q.tp == 0 && q.dp == 0)
      for (const auto& lr : q.layers)
        for (int64_t l = lr.first; l < lr.first + lr.count; ++l) ++owners[l];
  }
  CHECK(coords.size() == 64);
  CHECK(std::count(owners.begin(), owners.end(), 1) == 60);
}

TEST_CASE("TP2 PP6 EP8 DP4 on 48 GPUs: 10 layers per stage, 1F1B", "[rankmap]") {
  const RankMap m = seed_map("attune-48gpu-tp2-pp6-ep8");
  CHECK(m.world == 48);
  CHECK(m.stage_layers == std::vector<int64_t>(6, 10));
  CHECK(m.microbatches == 32);
  CHECK(m.schedule == "1F1B");
  CHECK(m.ranks[8].pp == 1);
  CHECK(m.ranks[8].layers[0].first == 10);
  const std::string text = format_rank_map(m);
  CHECK_THAT(text, Catch::Contains("world 48 = TP 2 x CP 1 x DP 4 x PP 6; experts: ETP 1 x EP 8 x EDP 1 x PP 6"));
  CHECK_THAT(text, Catch::Contains("layers per pipeline stage: 10, 10, 10, 10, 10, 10"));
}

TEST_CASE("a model known by its stated counts only: no rank map, and the refusal says why instead of 0 layers",
          "[rankmap]") {
  // The seed's 64-GPU recipe (layer_split first 6 + last 6) with a model name outside the registry: validate accepts
  // it on its stated active count and warns that the layout arithmetic is not checked (found by the fuzz bench).
  std::string text = test::read_file(test::seed_recipe("attune-tp2-pp8-ep8-vpp2-mt16k"));
  const std::string from = "model: Qwen3.5-397B-A17B\n";
  REQUIRE(text.find(from) != std::string::npos);
  text.replace(text.find(from), from.size(), "model: Unlisted-MoE-397B\n");
  const ValidatedRecipe v = validate_recipe_text(text, "unlisted.yaml");
  REQUIRE(v.ok());
  const auto model = run_model(*v.recipe);
  REQUIRE(model);
  CHECK_FALSE(model->model.architecture_known());
  CHECK_THROWS_WITH(build_rank_map(*v.recipe, model->model),
                    Catch::Contains("Unlisted-MoE-397B is known by its stated counts only") &&
                        Catch::Contains("no rank map is built") && !Catch::Contains("of 0 layers"));
}
