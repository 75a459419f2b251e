// The precision-aware optimizer state (optim/master_weights.h, docs/optimizer.md "Precision-aware state"): the
// master split round-trips every bit pattern; MixedPrecisionAdam and DistributedAdam with BF16 + remainder masters
// keep the explicit-FP32 arm's masters bit for bit and its update within 1e-3 of FP64 (the seed's component test, on
// the CPU); BF16 moments stay close to FP64; the negative controls fail.
#include <torch/types.h>
#include <torch/utils.h>
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "dist/process_group.h"
#include "optim/adam.h"
#include "optim/distributed_adam.h"
#include "optim/master_weights.h"
#include "two_ranks.h"

using namespace recipebench;

namespace {

/// FP32 values with the given bit patterns.
torch::Tensor floats_of_bits(const std::vector<uint32_t>& bits) {
  std::vector<float> f(bits.size());
  std::memcpy(f.data(), bits.data(), bits.size() * sizeof(float));
  return torch::tensor(f, torch::kFloat32);
}

/// The bits of FP32 `t` (contiguous, CPU).
std::vector<uint32_t> bits_of(const torch::Tensor& t) {
  const auto c = t.contiguous();
  std::vector<uint32_t> out(static_cast<size_t>(c.numel()));
  std::memcpy(out.data(), c.data_ptr<float>(), out.size() * sizeof(float));
  return out;
}

/// `steps` AdamW steps in float64 from `w` with gradients grads[s] (the formula of optim/adam.h, decay on).
std::vector<double> reference_adam(std::vector<double> w, const std::vector<std::vector<double>>& grads,
                                   const RecipeOptimizer& o, double lr) {
  std::vector<double> m(w.size(), 0.0), v(w.size(), 0.0);
  for (size_t s = 0; s < grads.size(); ++s) {
    const double t = static_cast<double>(s + 1);
    for (size_t i = 0; i < w.size(); ++i) {
      const double g = grads[s][i];
      m[i] = o.adam_beta1 * m[i] + (1 - o.adam_beta1) * g;
      v[i] = o.adam_beta2 * v[i] + (1 - o.adam_beta2) * g * g;
      w[i] *= 1 - lr * o.weight_decay;
      w[i] -= lr * (m[i] / (1 - std::pow(o.adam_beta1, t))) / (std::sqrt(v[i] / (1 - std::pow(o.adam_beta2, t))) + o.adam_eps);
    }
  }
  return w;
}

std::vector<double> to_doubles(const torch::Tensor& t) {
  auto c = t.to(torch::kFloat64).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

/// Relative L2 error of the update (a - w0) against (ref - w0).
double update_error(const std::vector<double>& a, const std::vector<double>& ref, const std::vector<double>& w0) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - ref[i]) * (a[i] - ref[i]);
    den += (ref[i] - w0[i]) * (ref[i] - w0[i]);
  }
  return std::sqrt(num / den);
}

RecipeOptimizer remainder_options() {
  RecipeOptimizer o;  // the seed's betas 0.9 / 0.98, weight decay 0.1
  o.clip_grad = 0;
  o.master_weights = MasterWeights::kBf16Remainder;
  return o;
}

/// Runs `steps` steps of `adam` on parameter `p` with gradients grads[s].
void run_steps(train::MixedPrecisionAdam& adam, torch::Tensor& p, const std::vector<torch::Tensor>& grads,
               double lr) {
  for (const auto& g : grads) {
    adam.zero_grad();
    p.mutable_grad() = g.clone();
    adam.accumulate_grads();
    adam.step(lr);
  }
}

}  // namespace

TEST_CASE("master split: every kind of FP32 bit pattern round-trips through BF16 + remainder", "[train][adam]") {
  std::vector<uint32_t> bits = {0x00000000u, 0x80000000u, 0x3F800000u, 0x3F808000u, 0x3F818000u, 0x3F80FFFFu,
                                0x3F807FFFu, 0x7F7FFFFFu, 0x7F7F8000u, 0x7F800000u, 0xFF800000u, 0x7FC00001u,
                                0xFFFFFFFFu, 0xFFFF8000u, 0x00000001u, 0x00008000u, 0x807FFFFFu, 0xBF808000u};
  for (uint32_t i = 0; i < 200000; ++i) bits.push_back(i * 2654435761u);  // spread over all 2^32 patterns
  const auto w = floats_of_bits(bits);
  auto hi = torch::empty(w.sizes(), torch::kBFloat16);
  auto rem = torch::empty(w.sizes(), torch::kInt16);
  train::split_master(w, hi, rem);
  CHECK(bits_of(train::reconstruct_master(hi, rem)) == bits);
  // The BF16 half is the master rounded half away from zero: 1 + 2^-8 exactly (0x3F808000) goes up to 0x3F81, where
  // round-to-nearest-even keeps 0x3F80; 0x3F818000 goes up under both rules; 0x3F807FFF stays down.
  const auto h = hi.view(torch::kInt16);
  CHECK(static_cast<uint16_t>(h[3].item<int16_t>()) == 0x3F81);
  CHECK(static_cast<uint16_t>(h[4].item<int16_t>()) == 0x3F82);
  CHECK(static_cast<uint16_t>(h[6].item<int16_t>()) == 0x3F80);
  CHECK(w.narrow(0, 3, 1).to(torch::kBFloat16).view(torch::kInt16).item<int16_t>() == 0x3F80);
  // Outside ties the BF16 half is round-to-nearest-even's: over the spread patterns that are finite.
  const auto finite = torch::isfinite(w) & torch::isfinite(w.to(torch::kBFloat16).to(torch::kFloat32));
  const auto tie = torch::remainder(w.view(torch::kInt32), 65536) == 32768;
  const auto differ = (hi.view(torch::kInt16) != w.to(torch::kBFloat16).view(torch::kInt16)) & finite & ~tie;
  CHECK(differ.sum().item<int64_t>() == 0);
  // Negative control: plain concatenation of the two halves (no borrow for a negative remainder) is wrong.
  const auto naive = (hi.view(torch::kInt16).to(torch::kInt64) * 65536 +
                      torch::remainder(rem.to(torch::kInt64), 65536));
  const auto naive_bits = torch::where(naive >= int64_t{2147483648}, naive - int64_t{4294967296}, naive).to(torch::kInt32);
  CHECK_FALSE(torch::equal(naive_bits.view(torch::kFloat32).view(torch::kInt32), w.view(torch::kInt32)));
}

TEST_CASE("precision-aware Adam: BF16 + remainder masters equal the explicit FP32 arm bit for bit, the update is "
          "within 1e-3 of FP64 after one and three steps, and dropping the remainder fails both",
          "[train][adam]") {
  torch::manual_seed(11);
  const double lr = 1e-5;
  RecipeOptimizer plain = remainder_options(), aware = remainder_options();
  plain.master_weights = MasterWeights::kFp32;
  const auto w0 = (torch::randn({96, 160}) * 0.02).to(torch::kBFloat16);
  std::vector<torch::Tensor> grads;
  for (int s = 0; s < 3; ++s) grads.push_back(torch::randn({96, 160}) * 1e-2);
  for (size_t steps : {size_t{1}, size_t{3}}) {
    const std::vector<torch::Tensor> gs(grads.begin(), grads.begin() + static_cast<long>(steps));
    auto pa = w0.clone().set_requires_grad(true), pb = w0.clone().set_requires_grad(true);
    train::MixedPrecisionAdam a({pa}, plain), b({pb}, aware);
    run_steps(a, pa, gs, lr);
    run_steps(b, pb, gs, lr);
    CHECK(torch::equal(a.master()[0], b.master()[0]));
    std::vector<std::vector<double>> g64;
    for (const auto& g : gs) g64.push_back(to_doubles(g));
    const auto ref = reference_adam(to_doubles(w0), g64, aware, lr);
    CHECK(update_error(to_doubles(b.master()[0]), ref, to_doubles(w0)) < 1e-3);
  }
  // Negative control: a master kept in BF16 only (the remainder dropped after every step; FP32 moments kept) loses
  // the small updates to rounding.
  auto w = w0.clone();
  auto m = torch::zeros({96, 160}), v = torch::zeros({96, 160});
  std::vector<std::vector<double>> g64;
  for (size_t s = 0; s < grads.size(); ++s) {
    auto w32 = w.to(torch::kFloat32);
    train::adamw_update_(w32, grads[s], m, v, lr, static_cast<int64_t>(s + 1), aware, true);
    w = w32.to(torch::kBFloat16);
    g64.push_back(to_doubles(grads[s]));
  }
  const auto ref = reference_adam(to_doubles(w0), g64, aware, lr);
  CHECK(update_error(to_doubles(w), ref, to_doubles(w0)) > 1e-3);
}

TEST_CASE("precision-aware Adam: BF16 moments are stored in BF16, stay within 1e-2 of FP64 and differ from FP32 "
          "moments",
          "[train][adam]") {
  torch::manual_seed(12);
  const double lr = 1e-5;
  RecipeOptimizer o = remainder_options();
  o.exp_avg_dtype = StateDtype::kBf16;
  o.exp_avg_sq_dtype = StateDtype::kBf16;
  RecipeOptimizer fp32_moments = remainder_options();
  const auto w0 = (torch::randn({64, 128}) * 0.02).to(torch::kBFloat16);
  std::vector<torch::Tensor> grads;
  std::vector<std::vector<double>> g64;
  for (int s = 0; s < 3; ++s) grads.push_back(torch::randn({64, 128}) * 1e-2), g64.push_back(to_doubles(grads.back()));
  auto pa = w0.clone().set_requires_grad(true), pb = w0.clone().set_requires_grad(true);
  train::MixedPrecisionAdam a({pa}, o), b({pb}, fp32_moments);
  run_steps(a, pa, grads, lr);
  run_steps(b, pb, grads, lr);
  const auto ref = reference_adam(to_doubles(w0), g64, o, lr);
  const double err = update_error(to_doubles(a.master()[0]), ref, to_doubles(w0));
  CHECK(err < 1e-2);
  CHECK(err > update_error(to_doubles(b.master()[0]), ref, to_doubles(w0)));  // the FP32 moments' arm is closer
  CHECK_FALSE(torch::equal(a.master()[0], b.master()[0]));
}

TEST_CASE("distributed optimizer, two ranks: BF16 + remainder masters and BF16 moments give the parameters of "
          "MixedPrecisionAdam with the same state on the summed gradients, bit for bit",
          "[train][adam][overlap]") {
  const double lr = 1e-4;
  for (const bool bf16_moments : {false, true}) {
    RecipeOptimizer o = remainder_options();
    if (bf16_moments) o.exp_avg_dtype = o.exp_avg_sq_dtype = StateDtype::kBf16;
    // Drawn once, before the ranks start: the two rank threads share libtorch's global generator, so draws
    // made inside them interleave and each rank would see different parameters and gradients.
    torch::manual_seed(21);
    const auto w0 = (torch::randn({37, 23}) * 0.02).to(torch::kBFloat16);
    const auto b0 = (torch::randn({23}) * 0.02).to(torch::kBFloat16);
    std::vector<std::vector<torch::Tensor>> g(3);  // g[s] = {w grad rank 0, b grad rank 0, rank 1's}
    for (int s = 0; s < 3; ++s)
      for (int k = 0; k < 4; ++k) g[s].push_back(torch::randn(k % 2 ? std::vector<int64_t>{23} : std::vector<int64_t>{37, 23}) * 1e-2);
    std::vector<char> same(2, 0);
    const auto errors = rbt_test::on_two_ranks(
        [&](int r, dist::ProcessGroup& pg) {
          auto dw = w0.clone().set_requires_grad(true), db = b0.clone().set_requires_grad(true);
          auto rw = w0.clone().set_requires_grad(true), rb = b0.clone().set_requires_grad(true);
          train::DistributedAdam dist_adam({dw, db}, o, pg);
          train::MixedPrecisionAdam ref({rw, rb}, o);
          for (int s = 0; s < 3; ++s) {
            dist_adam.zero_grad();
            ref.zero_grad();
            dw.mutable_grad() = g[s][2 * r].clone();
            db.mutable_grad() = g[s][2 * r + 1].clone();
            rw.mutable_grad() = g[s][0] + g[s][2];
            rb.mutable_grad() = g[s][1] + g[s][3];
            dist_adam.accumulate_grads();
            ref.accumulate_grads();
            (void)dist_adam.grad_norm();
            dist_adam.step(lr);
            ref.step(lr);
          }
          same[static_cast<size_t>(r)] = torch::equal(dw, rw) && torch::equal(db, rb) && !torch::equal(dw, w0);
        },
        /*finish=*/true);
    REQUIRE(errors == std::vector<std::string>{"", ""});
    CHECK(same == std::vector<char>{1, 1});
  }
}
