// Finite-difference gradient checks in float64 (central differences, eps 1e-6) of every layer type and of the
// whole tiny model's SFT loss: autograd gradients of sampled parameter entries and of the input must agree to
// a relative error below 1e-6.
#include "catalog/models.h"
#include "model/gated_attention.h"
#include "model/gated_deltanet.h"
#include "model/moe.h"
#include "model/qwen35_moe.h"
#include "model/rms_norm.h"
#include "test_util.h"

#include <catch2/catch.hpp>

using namespace recipebench::torch_model;
using recipebench::ModelConfig;

namespace {

constexpr double kTol = 1e-6;
constexpr double kEps = 1e-6;

ModelConfig layer_config() {
  ModelConfig c;
  c.name = "gradcheck";
  c.hidden_size = 16;
  c.num_layers = 4;
  c.vocab_size = 40;
  c.num_attention_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 8;
  c.rope_dims = 4;
  c.rope_theta = 1e7;
  c.linear_num_key_heads = 2;
  c.linear_num_value_heads = 4;
  c.linear_key_head_dim = 8;
  c.linear_value_head_dim = 6;
  c.gdn_chunk_size = 4;
  c.num_experts = 6;
  c.top_k = 2;
  c.expert_ffn = 8;
  c.shared_expert_ffn = 8;
  return c;
}

/// Runs the check and asserts every sampled tensor; at least `live_fraction` of the tensors must have a
/// non-negligible numeric gradient so that the check cannot pass vacuously.
void require_grads_match(const std::function<torch::Tensor()>& loss,
                         std::vector<std::pair<std::string, torch::Tensor>> tensors, int samples = 3) {
  const auto entries = rbt_test::grad_check(loss, tensors, samples, kEps);
  INFO(rbt_test::describe(entries));
  size_t live = 0;
  for (const auto& e : entries) {
    CHECK(e.rel_error < kTol);
    if (e.numeric_norm > 1e-6) ++live;
  }
  CHECK(live * 10 >= entries.size() * 9);
  REQUIRE(!entries.empty());
}

/// Module parameters plus the input x as check targets.
std::vector<std::pair<std::string, torch::Tensor>> with_input(const torch::nn::Module& m, const torch::Tensor& x) {
  auto v = rbt_test::params_of(m);
  v.emplace_back("input", x);
  return v;
}

}  // namespace

TEST_CASE("gradient check: zero-centred and gated RMSNorm", "[grad][norm]") {
  torch::manual_seed(21);
  RMSNorm norm(12, 1e-6);
  rbt_test::randomize(*norm);
  norm->to(torch::kDouble);
  const auto x = torch::randn({3, 4, 12}, torch::kDouble).requires_grad_(true);
  const auto r = torch::randn({3, 4, 12}, torch::kDouble);
  require_grads_match([&] { return (norm(x) * r).sum(); }, with_input(*norm, x), 5);

  GatedRMSNorm gnorm(12, 1e-6);
  rbt_test::randomize(*gnorm);
  gnorm->to(torch::kDouble);
  const auto z = torch::randn({3, 4, 12}, torch::kDouble).requires_grad_(true);
  auto targets = with_input(*gnorm, x);
  targets.emplace_back("gate z", z);
  require_grads_match([&] { return (gnorm(x, z) * r).sum(); }, targets, 5);
}

TEST_CASE("gradient check: gated attention", "[grad][attention]") {
  torch::manual_seed(22);
  const auto cfg = layer_config();
  GatedAttention attn(cfg, AttentionImpl::Math);
  rbt_test::randomize(*attn);
  attn->to(torch::kDouble);
  const auto x = torch::randn({2, 6, cfg.hidden_size}, torch::kDouble).requires_grad_(true);
  const auto r = torch::randn({2, 6, cfg.hidden_size}, torch::kDouble);
  require_grads_match([&] { return (attn(x) * r).sum(); }, with_input(*attn, x));
}

TEST_CASE("gradient check: Gated DeltaNet (chunked kernel)", "[grad][gdn]") {
  torch::manual_seed(23);
  const auto cfg = layer_config();
  GatedDeltaNet gdn(cfg);
  rbt_test::randomize(*gdn);
  gdn->to(torch::kDouble);
  const auto x = torch::randn({2, 10, cfg.hidden_size}, torch::kDouble).requires_grad_(true);  // 2.5 chunks
  const auto r = torch::randn({2, 10, cfg.hidden_size}, torch::kDouble);
  require_grads_match([&] { return (gdn(x) * r).sum(); }, with_input(*gdn, x));
}

TEST_CASE("gradient check: sparse MoE", "[grad][moe]") {
  torch::manual_seed(24);
  const auto cfg = layer_config();
  SparseMoeBlock moe(cfg, ExpertsImpl::Loop);
  rbt_test::randomize(*moe);
  moe->to(torch::kDouble);
  const auto x = torch::randn({2, 8, cfg.hidden_size}, torch::kDouble).requires_grad_(true);
  const auto r = torch::randn({2, 8, cfg.hidden_size}, torch::kDouble);
  require_grads_match([&] { return (moe(x) * r).sum(); }, with_input(*moe, x));
}

TEST_CASE("gradient check: whole tiny model SFT loss", "[grad][model]") {
  torch::manual_seed(25);
  const auto* tiny = recipebench::find_model("Qwen3.5-tiny");
  REQUIRE(tiny != nullptr);
  Qwen35MoeForCausalLM lm(*tiny);
  rbt_test::randomize(*lm, 0.1);
  lm->to(torch::kDouble);
  const auto ids = torch::randint(0, tiny->vocab_size, {2, 20}, torch::kLong);  // 20: not a multiple of chunk 16
  auto mask = torch::ones({2, 20}, torch::kBool);
  mask.narrow(1, 0, 5).fill_(false);  // a prompt of 5 tokens, unsupervised
  const auto loss = [&] { return lm->sft_loss(ids, mask); };
  const double l = loss().item<double>();
  CHECK(l > 1.0);
  CHECK(l < 50.0);
  require_grads_match(loss, rbt_test::params_of(*lm), 2);
}

TEST_CASE("gradient check detects a wrong gradient (negative control)", "[grad]") {
  // loss = sum(stopgrad(x) * x): autograd gives x, the true derivative is 2x.
  torch::manual_seed(26);
  const auto x = torch::randn({5}, torch::kDouble).requires_grad_(true);
  const auto entries = rbt_test::grad_check([&] { return (x.detach() * x).sum(); }, {{"x", x}}, 3, kEps);
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].rel_error > 0.4);
  CHECK(entries[0].rel_error < 0.6);
}
