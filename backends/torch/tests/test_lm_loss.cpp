// The chunked output layer + cross-entropy (model/chunked_lm_loss.h) against the plain path: full logits, then
// sft_loss_sum's FP32 / FP64 log-softmax (model/qwen35_moe.h), for the loss and both gradients.
#include "catalog/models.h"
#include "model/chunked_lm_loss.h"
#include "model/qwen35_moe.h"
#include "test_util.h"
#include "tiny_lm_case.h"

#include <catch2/catch.hpp>

#include <torch/types.h>
#include <torch/utils.h>

using namespace recipebench::torch_model;
using rbt_test::rel_err;

namespace {

struct LossAndGrads {
  torch::Tensor loss, d_hidden, d_weight;
};

/// The mean loss over supervised tokens and its gradients, through the plain path (chunk <= 0) or lm_loss_sum.
LossAndGrads run(const torch::Tensor& h0, const torch::Tensor& w0, const torch::Tensor& targets,
                 const torch::Tensor& mask, int64_t chunk) {
  const auto h = h0.clone().requires_grad_(true), w = w0.clone().requires_grad_(true);
  torch::Tensor sum, count;
  if (chunk <= 0) {
    const auto s = sft_loss_sum(torch::mm(h, w.t()).unsqueeze(0), targets.unsqueeze(0), mask.unsqueeze(0));
    sum = s.sum, count = s.count;
  } else {
    const auto s = lm_loss_sum(h, w, targets, mask, nullptr, 0, chunk);
    sum = s.sum, count = s.count;
  }
  const auto loss = sum / count.clamp_min(1).to(sum.scalar_type());
  loss.backward();
  return {loss.detach(), h.grad(), w.grad()};
}

/// N tokens, hidden H, vocab V; every third token unsupervised with target -100.
struct Case {
  torch::Tensor h, w, targets, mask;
};
Case make_case(int64_t N, int64_t H, int64_t V, torch::Dtype dt) {
  Case c;
  c.h = torch::randn({N, H}, dt);
  c.w = torch::randn({V, H}, dt) * 0.5;
  c.targets = torch::randint(0, V, {N}, torch::kLong);
  c.mask = torch::arange(N).remainder(3).ne(1);
  c.targets.masked_fill_(c.mask.logical_not(), -100);
  return c;
}

}  // namespace

TEST_CASE("chunked LM loss equals the full-logits log-softmax loss and gradients (float64, float32)", "[loss][lm]") {
  torch::manual_seed(41);
  for (const auto dt : {torch::kDouble, torch::kFloat}) {
    const double tol = dt == torch::kDouble ? 1e-12 : 1e-6;
    const auto c = make_case(23, 16, 37, dt);
    const auto ref = run(c.h, c.w, c.targets, c.mask, 0);
    for (const int64_t chunk : {1, 4, 7, 23, 64}) {  // one token, uneven last chunk, exactly N, more than N
      INFO("dtype " << dt << " chunk " << chunk);
      const auto got = run(c.h, c.w, c.targets, c.mask, chunk);
      CHECK(std::abs(got.loss.item<double>() - ref.loss.item<double>()) <= tol * std::abs(ref.loss.item<double>()));
      CHECK(rel_err(got.d_hidden, ref.d_hidden) <= tol);
      CHECK(rel_err(got.d_weight, ref.d_weight) <= tol);
    }
  }
}

TEST_CASE("chunked LM loss, BF16: the weight gradient scaled in FP32 and rounded to BF16 once", "[loss][lm]") {
  // BF16 inputs accumulate the weight gradient in FP32 over the chunks; backward scales it by the incoming gradient
  // and rounds it to BF16 in one pass (at::mul_out): the FP32 path's gradient rounded to BF16, within BF16's own
  // rounding of the inputs and logits.
  torch::manual_seed(43);
  const auto c = make_case(29, 16, 41, torch::kFloat);
  const auto ref = run(c.h, c.w, c.targets, c.mask, 8);
  const auto bf = run(c.h.to(torch::kBFloat16), c.w.to(torch::kBFloat16), c.targets, c.mask, 8);
  REQUIRE(bf.d_weight.scalar_type() == torch::kBFloat16);
  CHECK(rel_err(bf.d_weight.to(torch::kFloat), ref.d_weight) < 2e-2);
  CHECK(rel_err(bf.d_hidden.to(torch::kFloat), ref.d_hidden) < 2e-2);
  CHECK(rel_err(bf.d_weight.to(torch::kFloat), ref.d_weight * 1.1) > 5e-2);  // the bound sees a 10% error
}

TEST_CASE("chunked LM loss: unsupervised tokens give no loss and no gradient, none supervised gives 0", "[loss][lm]") {
  torch::manual_seed(42);
  const auto c = make_case(12, 8, 19, torch::kDouble);
  const auto base = run(c.h, c.w, c.targets, c.mask, 5);
  // Scrambling the hidden state of an unsupervised token changes neither the loss nor the weight gradient.
  auto h2 = c.h.clone();
  h2[1].normal_();
  const auto scrambled = run(h2, c.w, c.targets, c.mask, 5);
  CHECK(scrambled.loss.item<double>() == base.loss.item<double>());
  CHECK(rel_err(scrambled.d_weight, base.d_weight) < 1e-14);
  CHECK(base.d_hidden[1].abs().max().item<double>() == 0.0);
  CHECK(base.d_hidden[0].abs().max().item<double>() > 1e-3);
  // Scrambling a supervised one does change the loss (negative control).
  auto h3 = c.h.clone();
  h3[0].normal_();
  CHECK(run(h3, c.w, c.targets, c.mask, 5).loss.item<double>() != base.loss.item<double>());
  const auto none = run(c.h, c.w, c.targets, torch::zeros_like(c.mask), 5);
  CHECK(none.loss.item<double>() == 0.0);
  CHECK(none.d_weight.abs().max().item<double>() == 0.0);
}

TEST_CASE("chunked LM loss is repeatable: two runs give the same bits", "[loss][lm][determinism]") {
  torch::manual_seed(43);
  const auto c = make_case(40, 16, 53, torch::kFloat);
  const auto a = run(c.h, c.w, c.targets, c.mask, 16), b = run(c.h, c.w, c.targets, c.mask, 16);
  CHECK(torch::equal(a.loss, b.loss));
  CHECK(torch::equal(a.d_hidden, b.d_hidden));
  CHECK(torch::equal(a.d_weight, b.d_weight));
}

TEST_CASE("chunked LM loss without grad mode gives the same loss and records no graph", "[loss][lm]") {
  torch::manual_seed(44);
  const auto c = make_case(10, 8, 13, torch::kDouble);
  const auto w = c.w.clone().requires_grad_(true);
  const auto with = lm_loss_sum(c.h, w, c.targets, c.mask, nullptr, 0, 3);
  torch::NoGradGuard no_grad;
  const auto without = lm_loss_sum(c.h, w, c.targets, c.mask, nullptr, 0, 3);
  CHECK(without.sum.item<double>() == with.sum.item<double>());
  CHECK_FALSE(without.sum.requires_grad());
  CHECK(with.count.item<int64_t>() == 7);
}

TEST_CASE("model loss through the chunked head equals the loss of the model's full logits", "[loss][lm][model]") {
  const auto c = rbt_test::tiny_lm_case(45, 3);
  auto lm = c.lm;
  const auto &ids = c.ids, &mask = c.mask, &ref = c.expect;
  ref.backward();
  const auto ref_grad = lm->lm_head->weight.grad().clone();
  lm->zero_grad();
  const auto got = lm->sft_loss(ids, mask);
  got.backward();
  CHECK(std::abs(got.item<double>() - ref.item<double>()) < 1e-13 * ref.item<double>());
  CHECK(rel_err(lm->lm_head->weight.grad(), ref_grad) < 1e-12);
}
