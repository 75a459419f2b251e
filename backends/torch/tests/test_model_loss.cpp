// The SFT loss (hand-computed values, masking) and the assembled tiny model (names, sizes, kernels).
#include "catalog/models.h"
#include "model/qwen35_moe.h"
#include "test_util.h"
#include "tiny_lm_case.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace recipebench::torch_model;
using rbt_test::rel_err;

TEST_CASE("SFT loss matches a hand-computed value", "[loss]") {
  // vocab 4, three positions. Position 0: logits (0, ln 2, 0, 0), target 1 -> p = 2/5, loss ln(5/2).
  // Position 1: logits all 0, target 3 -> p = 1/4, loss ln 4. Position 2: unsupervised (target -100).
  // Mean over the 2 supervised tokens: (ln 2.5 + ln 4) / 2 = ln(10) / 2.
  const double ln2 = std::log(2.0);
  const auto logits =
      torch::tensor({0.0, ln2, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 9.0, -3.0, 1.0, 2.0}, torch::kDouble).view({1, 3, 4});
  const auto targets = torch::tensor({1, 3, -100}, torch::kLong).view({1, 3});
  const auto mask = torch::tensor({1, 1, 0}, torch::kLong).view({1, 3});
  const auto s = sft_loss_sum(logits, targets, mask);
  CHECK(s.count.item<int64_t>() == 2);
  CHECK(s.sum.item<double>() == Approx(std::log(2.5) + std::log(4.0)).epsilon(1e-15));
  CHECK(sft_loss(logits, targets, mask).item<double>() == Approx(0.5 * std::log(10.0)).epsilon(1e-15));
  // In fp32 the same value to fp32 precision.
  CHECK(sft_loss(logits.to(torch::kFloat), targets, mask).item<double>() == Approx(0.5 * std::log(10.0)).epsilon(1e-6));
  // Supervising position 2 as well (target 0: logits (9, -3, 1, 2)) changes the mean as expected.
  const auto t2 = torch::tensor({1, 3, 0}, torch::kLong).view({1, 3});
  const double l2 = 9.0 - std::log(std::exp(9.0) + std::exp(-3.0) + std::exp(1.0) + std::exp(2.0));
  CHECK(sft_loss(logits, t2, torch::ones({1, 3}, torch::kLong)).item<double>() ==
        Approx((std::log(2.5) + std::log(4.0) - l2) / 3).epsilon(1e-14));
  // No supervised token: loss 0, not NaN.
  CHECK(sft_loss(logits, targets, torch::zeros({1, 3}, torch::kLong)).item<double>() == 0.0);
}

TEST_CASE("masked tokens do not change the SFT loss", "[loss]") {
  torch::manual_seed(31);
  auto logits = torch::randn({2, 6, 11}, torch::kDouble);
  auto targets = torch::randint(0, 11, {2, 6}, torch::kLong);
  const auto mask = torch::tensor({1, 0, 1, 1, 0, 0, 0, 1, 1, 0, 1, 1}, torch::kBool).view({2, 6});
  const double base = sft_loss(logits, targets, mask).item<double>();
  // Scramble the logits and targets of the masked positions only.
  const auto unmasked = mask.logical_not().unsqueeze(-1).expand_as(logits);
  const auto logits2 = torch::where(unmasked, torch::randn_like(logits) * 10, logits);
  const auto targets2 = torch::where(mask, targets, torch::randint(0, 11, {2, 6}, torch::kLong));
  CHECK(sft_loss(logits2, targets2, mask).item<double>() == base);
  // And scrambling a supervised position does change it.
  auto logits3 = logits.clone();
  logits3[0][0].normal_();
  CHECK(sft_loss(logits3, targets, mask).item<double>() != base);
  // Normalised by the number of supervised tokens: equals the mean of the per-token cross-entropies.
  const auto logp = torch::log_softmax(logits, -1);
  double sum = 0;
  int n = 0;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t t = 0; t < 6; ++t)
      if (mask[b][t].item<bool>()) {
        sum -= logp[b][t][targets[b][t].item<int64_t>()].item<double>();
        ++n;
      }
  CHECK(n == 7);
  CHECK(base == Approx(sum / n).epsilon(1e-14));
  // Gradients of masked positions are exactly zero.
  const auto lg = logits.clone().requires_grad_(true);
  sft_loss(lg, targets, mask).backward();
  CHECK(lg.grad().masked_select(unmasked).abs().max().item<double>() == 0.0);
  CHECK(lg.grad().masked_select(unmasked.logical_not()).abs().max().item<double>() > 1e-3);
}

TEST_CASE("model SFT loss shifts targets by one token and honours the mask", "[loss][model]") {
  const auto c = rbt_test::tiny_lm_case(32, 4);
  auto lm = c.lm;
  const auto &ids = c.ids, &mask = c.mask, &expect = c.expect;
  REQUIRE(c.logits.sizes() == torch::IntArrayRef({2, 9, c.config->vocab_size}));
  const auto s = lm->sft_loss_sum(ids, mask);
  CHECK(s.count.item<int64_t>() == 2 * 5);
  CHECK(lm->sft_loss(ids, mask).item<double>() == Approx(expect.item<double>()).epsilon(1e-14));
  // Near-uniform predictions at init: loss close to ln(vocab).
  CHECK(std::abs(lm->sft_loss(ids, mask).item<double>() - std::log(512.0)) < 0.5);
  // The last token never is an input whose prediction counts: changing it changes only the loss of its own target.
  // The first token is never a target: changing mask[:, 0] changes nothing.
  auto mask0 = mask.clone();
  mask0.select(1, 0).fill_(true);
  CHECK(lm->sft_loss(ids, mask0).item<double>() == lm->sft_loss(ids, mask).item<double>());
}

TEST_CASE("tiny model has Hugging Face parameter names and the catalog's parameter count", "[model]") {
  const auto* tiny = recipebench::find_model("Qwen3.5-tiny");
  REQUIRE(tiny != nullptr);
  Qwen35MoeForCausalLM lm(*tiny);
  const auto p = lm->named_parameters();
  const int64_t h = tiny->hidden_size;
  CHECK(p["model.embed_tokens.weight"].sizes() == torch::IntArrayRef({tiny->vocab_size, h}));
  CHECK(p["lm_head.weight"].sizes() == torch::IntArrayRef({tiny->vocab_size, h}));
  CHECK(p["model.norm.weight"].sizes() == torch::IntArrayRef({h}));
  CHECK(p.contains("model.layers.0.linear_attn.in_proj_qkv.weight"));
  CHECK(p.contains("model.layers.2.linear_attn.A_log"));
  CHECK_FALSE(p.contains("model.layers.0.self_attn.q_proj.weight"));
  CHECK(p["model.layers.3.self_attn.q_proj.weight"].sizes() ==
        torch::IntArrayRef({2 * tiny->num_attention_heads * tiny->head_dim, h}));
  CHECK(p.contains("model.layers.3.self_attn.q_norm.weight"));
  CHECK_FALSE(p.contains("model.layers.3.linear_attn.A_log"));
  CHECK(p["model.layers.1.mlp.gate.weight"].sizes() == torch::IntArrayRef({tiny->num_experts, h}));
  CHECK(p["model.layers.1.mlp.experts.gate_up_proj"].sizes() ==
        torch::IntArrayRef({tiny->num_experts, 2 * tiny->expert_ffn, h}));
  CHECK(p["model.layers.1.mlp.experts.down_proj"].sizes() ==
        torch::IntArrayRef({tiny->num_experts, h, tiny->expert_ffn}));
  CHECK(p.contains("model.layers.1.mlp.shared_expert.gate_proj.weight"));
  CHECK(p["model.layers.1.mlp.shared_expert_gate.weight"].sizes() == torch::IntArrayRef({1, h}));
  CHECK(p.contains("model.layers.1.input_layernorm.weight"));
  CHECK(p.contains("model.layers.1.post_attention_layernorm.weight"));
  int64_t total = 0;
  for (const auto& kv : p) total += kv.value().numel();
  CHECK(total == recipebench::count_params(*tiny).total);
  // The zero-centred norms start at 0 (identity), the gated norm at 1.
  CHECK(p["model.norm.weight"].abs().max().item<float>() == 0.0f);
  CHECK(p["model.layers.0.linear_attn.norm.weight"].eq(1.0f).all().item<bool>());
}

TEST_CASE("tiny model: chunked and recurrent Gated DeltaNet kernels give the same logits", "[model][gdn]") {
  torch::manual_seed(33);
  const auto* tiny = recipebench::find_model("Qwen3.5-tiny");
  REQUIRE(tiny != nullptr);
  Qwen35MoeForCausalLM lm(*tiny);
  rbt_test::randomize(*lm, 0.1);
  lm->to(torch::kDouble);
  const auto ids = torch::randint(0, tiny->vocab_size, {2, 37}, torch::kLong);
  const auto chunked = lm(ids);
  for (auto& layer : lm->model->decoder_layers)
    if (!layer->is_full_attention()) layer->linear_attn->kernel = GdnKernel::Recurrent;
  const auto recurrent = lm(ids);
  CHECK(rel_err(chunked, recurrent) < 1e-10);
  CHECK(chunked.std().item<double>() > 0.1);
}
