// Rank-local, layout-independent initialisation (model/param_init.h, docs/initialization.md) and the full
// Qwen3.5-397B-A17B laid out per rank on the meta device (rank/model_builder.h's build_rank_shapes): every shard's
// shape against the seed recipe's rank map, and the parameters of all 64 ranks, each shard counted once.
#include <torch/types.h>
#include <torch/utils.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "catalog/models.h"
#include "layout/rank_map.h"
#include "model/moe.h"
#include "model/param_init.h"
#include "model/tensor_parallel.h"
#include "rank/model_builder.h"
#include "recipe/validate.h"

using namespace recipebench;
using torch_model::init_shard;
using torch_model::ShardPlacement;

namespace {

/// The whole parameter `name` of `shape` (float32, CPU) under `seed`.
torch::Tensor whole(uint64_t seed, const std::string& name, std::vector<int64_t> shape) {
  auto t = torch::empty(shape, torch::kFloat);
  init_shard(t, seed, name, shape, {});
  return t;
}

bool bitwise_equal(const torch::Tensor& a, const torch::Tensor& b) {
  return a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type() &&
         std::memcmp(a.contiguous().data_ptr(), b.contiguous().data_ptr(), a.numel() * a.element_size()) == 0;
}

}  // namespace

TEST_CASE("Philox4x32-10 gives the known answers of Random123's kat_vectors", "[init]") {
  using A4 = std::array<uint32_t, 4>;
  CHECK(torch_model::philox4x32_10({0, 0, 0, 0}, {0, 0}) == A4{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u});
  CHECK(torch_model::philox4x32_10({~0u, ~0u, ~0u, ~0u}, {~0u, ~0u}) ==
        A4{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu});
  CHECK(torch_model::philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u}) ==
        A4{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u});
}

TEST_CASE("a TP shard, made alone, is bitwise the slice of the whole parameter (plain and fused q|k|v layouts)",
          "[init]") {
  const uint64_t seed = 1234;
  struct Case {
    std::string name;
    std::vector<int64_t> shape;
    torch_model::TpShardSpec spec;
  };
  const std::vector<Case> cases = {
      {"model.embed_tokens.weight", {64, 8}, {0, {64}}},
      {"model.layers.3.self_attn.o_proj.weight", {8, 24}, {1, {24}}},
      {"model.layers.0.linear_attn.in_proj_qkv.weight", {40, 8}, {0, {12, 12, 16}}},
      {"model.layers.0.linear_attn.conv1d.weight", {40, 1, 4}, {0, {12, 12, 16}}},
      {"model.layers.0.linear_attn.A_log", {8}, {0, {8}}},
  };
  for (const auto& c : cases)
    for (int64_t T : {2, 4})
      for (int64_t r = 0; r < T; ++r) {
        INFO(c.name << " TP " << T << " rank " << r);
        const auto full = whole(seed, c.name, c.shape);
        const auto expected = torch_model::tp_local_slice(full, c.spec, r, T);
        auto local = torch::empty(expected.sizes(), torch::kFloat);
        ShardPlacement where;
        where.tp_sharded = true;
        where.tp = c.spec;
        where.tp_rank = r;
        where.tp_size = T;
        init_shard(local, seed, c.name, c.shape, where);
        CHECK(bitwise_equal(local, expected));
      }
}

TEST_CASE("an EP shard of experts, made alone, is bitwise those experts of the whole parameter", "[init]") {
  const std::vector<int64_t> shape{8, 6, 4};
  const std::string name = "model.layers.1.mlp.experts.gate_up_proj";
  const auto full = whole(7, name, shape);
  for (int64_t first : {0, 2, 6}) {
    auto local = torch::empty({2, 6, 4}, torch::kFloat);
    ShardPlacement where;
    where.expert_offset = first;
    init_shard(local, 7, name, shape, where);
    CHECK(bitwise_equal(local, full.narrow(0, first, 2)));
  }
  // Each expert is its own stream: an expert's values do not depend on how many experts the parameter has.
  const auto fewer = whole(7, name, {3, 6, 4});
  CHECK(bitwise_equal(fewer, full.narrow(0, 0, 3)));
}

TEST_CASE("initial values follow their rules: N(0, 0.02^2), log U(0.01, 16), conv U(+-1/sqrt(K)), constants",
          "[init]") {
  const auto w = whole(3, "model.layers.0.mlp.shared_expert.up_proj.weight", {1000, 1000}).to(torch::kDouble);
  // 1e6 samples: the mean's standard error is 2e-5, the standard deviation's ~1.4e-5 (0.02 / sqrt(2n)); 5 sigma.
  CHECK(std::abs(w.mean().item<double>()) < 1e-4);
  CHECK(std::abs(w.std().item<double>() - 0.02) < 7e-5);
  const auto a = whole(3, "model.layers.0.linear_attn.A_log", {100000}).exp();
  CHECK(a.min().item<float>() >= 0.01f);
  CHECK(a.max().item<float>() <= 16.0f);
  CHECK(std::abs(a.to(torch::kDouble).mean().item<double>() - 8.005) < 0.075);  // (0.01 + 16) / 2; 5 x se 0.0146
  const auto c = whole(3, "model.layers.0.linear_attn.conv1d.weight", {1000, 1, 4});
  CHECK(c.abs().max().item<float>() <= 0.5f);
  CHECK(c.abs().max().item<float>() > 0.49f);
  CHECK(whole(3, "model.norm.weight", {16}).eq(0).all().item<bool>());
  CHECK(whole(3, "model.layers.0.linear_attn.norm.weight", {16}).eq(1).all().item<bool>());
  CHECK(whole(3, "model.layers.0.linear_attn.dt_bias", {16}).eq(1).all().item<bool>());
  // Another seed or another name: other values.
  const auto base = whole(3, "lm_head.weight", {4, 4});
  CHECK(!bitwise_equal(base, whole(4, "lm_head.weight", {4, 4})));
  CHECK(!bitwise_equal(base, whole(3, "model.embed_tokens.weight", {4, 4})));
  CHECK_THROWS_WITH(whole(3, "model.layers.0.mlp.mystery", {4}),
                    Catch::Contains("no initialisation rule for parameter model.layers.0.mlp.mystery"));
}

namespace {

/// The global shape of each parameter of `m`, from its configuration (Hugging Face's Qwen3.5 MoE shapes; written
/// here from the architecture, not taken from the model code).
std::vector<int64_t> global_shape(const ModelConfig& m, const std::string& name) {
  const int64_t H = m.hidden_size, kd = m.linear_key_dim(), vd = m.linear_value_dim(), nv = m.linear_num_value_heads;
  const int64_t hd = m.head_dim, qd = m.num_attention_heads * hd, kvd = m.num_kv_heads * hd;
  const std::map<std::string, std::vector<int64_t>> shapes = {
      {"input_layernorm.weight", {H}},
      {"post_attention_layernorm.weight", {H}},
      {"self_attn.q_proj.weight", {2 * qd, H}},
      {"self_attn.k_proj.weight", {kvd, H}},
      {"self_attn.v_proj.weight", {kvd, H}},
      {"self_attn.o_proj.weight", {H, qd}},
      {"self_attn.q_norm.weight", {hd}},
      {"self_attn.k_norm.weight", {hd}},
      {"linear_attn.in_proj_qkv.weight", {2 * kd + vd, H}},
      {"linear_attn.in_proj_z.weight", {vd, H}},
      {"linear_attn.in_proj_b.weight", {nv, H}},
      {"linear_attn.in_proj_a.weight", {nv, H}},
      {"linear_attn.conv1d.weight", {2 * kd + vd, 1, m.linear_conv_kernel}},
      {"linear_attn.dt_bias", {nv}},
      {"linear_attn.A_log", {nv}},
      {"linear_attn.norm.weight", {m.linear_value_head_dim}},
      {"linear_attn.out_proj.weight", {H, vd}},
      {"mlp.gate.weight", {m.num_experts, H}},
      {"mlp.experts.gate_up_proj", {m.num_experts, 2 * m.expert_ffn, H}},
      {"mlp.experts.down_proj", {m.num_experts, H, m.expert_ffn}},
      {"mlp.shared_expert.gate_proj.weight", {m.shared_expert_ffn, H}},
      {"mlp.shared_expert.up_proj.weight", {m.shared_expert_ffn, H}},
      {"mlp.shared_expert.down_proj.weight", {H, m.shared_expert_ffn}},
      {"mlp.shared_expert_gate.weight", {1, H}},
      {"model.embed_tokens.weight", {m.vocab_size, H}},
      {"model.norm.weight", {H}},
      {"lm_head.weight", {m.vocab_size, H}},
  };
  static const std::regex layer(R"(model\.layers\.\d+\.(.*))");
  std::smatch s;
  const std::string key = std::regex_match(name, s, layer) ? s[1].str() : name;
  const auto it = shapes.find(key);
  return it == shapes.end() ? std::vector<int64_t>{} : it->second;
}

/// How a parameter is split: along dim 0 or 1 over TP, over EP (experts), or replicated.
enum class Split { Replicated, TpRows, TpCols, Experts };

Split split_of(const std::string& name) {
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  if (has("experts.")) return Split::Experts;
  for (const char* c : {"q_proj", "k_proj", "v_proj", "in_proj_", "conv1d", "dt_bias", "A_log",
                        "shared_expert.gate_proj", "shared_expert.up_proj", "embed_tokens", "lm_head"})
    if (has(c)) return Split::TpRows;
  for (const char* c : {"o_proj", "out_proj", "shared_expert.down_proj"})
    if (has(c)) return Split::TpCols;
  return Split::Replicated;
}

/// The names rank `me` must hold: the embedding on the first stage, its layers' parameters, the head on the last.
std::set<std::string> expected_names(const ModelConfig& m, const RankMap& map, const RankPlacement& me) {
  std::set<std::string> out;
  if (me.pp == 0) out.insert("model.embed_tokens.weight");
  for (const auto& lr : me.layers)
    for (int64_t i = lr.first; i < lr.first + lr.count; ++i) {
      const std::string p = "model.layers." + std::to_string(i) + ".";
      std::vector<std::string> mine = {"input_layernorm.weight", "post_attention_layernorm.weight",
                                       "mlp.gate.weight", "mlp.experts.gate_up_proj", "mlp.experts.down_proj",
                                       "mlp.shared_expert.gate_proj.weight", "mlp.shared_expert.up_proj.weight",
                                       "mlp.shared_expert.down_proj.weight", "mlp.shared_expert_gate.weight"};
      if (m.is_full_attention(i))
        for (const char* s : {"q_proj", "k_proj", "v_proj", "o_proj", "q_norm", "k_norm"})
          mine.push_back(std::string("self_attn.") + s + ".weight");
      else
        for (const char* s : {"in_proj_qkv.weight", "in_proj_z.weight", "in_proj_b.weight", "in_proj_a.weight",
                              "conv1d.weight", "dt_bias", "A_log", "norm.weight", "out_proj.weight"})
          mine.push_back(std::string("linear_attn.") + s);
      for (const auto& s : mine) out.insert(p + s);
    }
  if (me.pp == map.pp - 1) {
    out.insert("model.norm.weight");
    out.insert("lm_head.weight");
  }
  return out;
}

/// Checks every parameter of rank `me`'s shapes-only model against the rank map; returns the parameters it holds
/// that no other rank's copy counts (a replica over DP, over TP for replicated ones, over EDP for experts).
int64_t check_rank(const ModelConfig& m, const RankMap& map, const RankPlacement& me) {
  const train::RankModel rm = train::build_rank_shapes(m, map, me);
  const auto params = rm.stage->parameters();
  REQUIRE(params.size() == rm.stage_param_names.size());
  const std::set<std::string> names(rm.stage_param_names.begin(), rm.stage_param_names.end());
  CHECK(names == expected_names(m, map, me));
  int64_t counted = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string& name = rm.stage_param_names[i];
    INFO("rank " << me.rank << " " << name);
    CHECK(params[i].is_meta());  // shapes only: nothing allocated
    auto shape = global_shape(m, name);
    REQUIRE(!shape.empty());
    const Split split = split_of(name);
    if (split == Split::TpRows) shape[0] /= map.tp;
    if (split == Split::TpCols) shape[1] /= map.tp;
    if (split == Split::Experts) shape[0] /= map.ep;
    CHECK(params[i].sizes().vec() == shape);
    CHECK((rm.tp_spec(params[i]) != nullptr) == (split == Split::TpRows || split == Split::TpCols));
    CHECK(rm.is_expert(params[i]) == (split == Split::Experts));
    const bool counts = split == Split::Experts ? me.edp == 0
                        : split == Split::Replicated ? me.dp == 0 && me.cp == 0 && me.tp == 0
                                                     : me.dp == 0 && me.cp == 0;
    if (counts) counted += params[i].numel();
  }
  return counted;
}

}  // namespace

TEST_CASE(
    "the seed's 64-GPU recipe (TP2 PP8 VPP2 EP8) on the full 60-layer Qwen3.5-397B-A17B, laid out per rank on the "
    "meta device: every shape as the rank map says, 396,346,350,336 parameters over the 64 ranks",
    "[init][meta]") {
  const auto t0 = std::chrono::steady_clock::now();
  const ValidatedRecipe v = validate_recipe_file(std::string(RECIPEBENCH_SOURCE_DIR) +
                                                 "/recipes/qwen3.5-397b-a17b/b200/attune-tp2-pp8-ep8-vpp2-mt16k.yaml");
  REQUIRE(v.ok());
  const ModelConfig& m = *find_model(v.recipe->model);
  REQUIRE(m.num_layers == 60);
  const RankMap map = build_rank_map(*v.recipe, m);
  REQUIRE(map.world == 64);
  REQUIRE(map.tp == 2);
  REQUIRE(map.pp == 8);
  REQUIRE(map.ep == 8);

  SECTION("rank 0 (first stage, embedding) and rank 63 (last stage, output layer)") {
    for (const int r : {0, 63}) {
      const RankPlacement& me = map.ranks[static_cast<size_t>(r)];
      check_rank(m, map, me);
      const train::RankModel rm = train::build_rank_shapes(m, map, me);
      // The experts of EP rank e are [e E / EP, (e + 1) E / EP); rank 63 is EP rank 7: experts 448..511.
      for (const auto& mod : rm.stage->modules())
        if (auto e = std::dynamic_pointer_cast<torch_model::RoutedExpertsImpl>(mod)) {
          CHECK(e->first_expert == me.ep * (m.num_experts / map.ep));
          CHECK(e->local_experts == m.num_experts / map.ep);
        }
    }
    CHECK(map.ranks[63].ep == 7);
  }
  SECTION("every rank, each shard counted once") {
    int64_t total = 0;
    for (const auto& me : map.ranks) total += check_rank(m, map, me);
    CHECK(total == 396'346'350'336);
    CHECK(total == count_params(m).total);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO("laid out in " << seconds << " s");
  CHECK(seconds < 60);  // shapes only: seconds, not the minutes (and 1.6 TB) of allocating the model
}
