// The chunked gated delta rule against the per-token recurrence (float64), and the recurrence against the
// matrix form of the paper (arXiv 2412.06464, eq. 10: S_t = S_{t-1} (a_t (I - beta_t k_t k_t^T)) + beta_t v_t k_t^T).
#include "model/gated_delta_rule.h"
#include "model/gated_deltanet.h"
#include "test_util.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace recipebench::torch_model;
using rbt_test::rel_err;

namespace {

struct GdrInputs {
  torch::Tensor q, k, v, g, beta, state;
};

/// Random inputs as the layer produces them: L2-normalised q, k; g = -A * softplus(.) < 0; beta in (0, 1).
GdrInputs random_inputs(int64_t b, int64_t t, int64_t hk, int64_t hv, int64_t dk, int64_t dv, bool with_state) {
  const auto f64 = torch::TensorOptions().dtype(torch::kDouble);
  GdrInputs in;
  in.q = l2_normalize(torch::randn({b, t, hk, dk}, f64));
  in.k = l2_normalize(torch::randn({b, t, hk, dk}, f64));
  in.v = torch::randn({b, t, hv, dv}, f64);
  in.g = -torch::rand({hv}, f64).mul(3.0).add(0.1) * torch::softplus(torch::randn({b, t, hv}, f64));
  in.beta = torch::sigmoid(torch::randn({b, t, hv}, f64));
  if (with_state) in.state = torch::randn({b, hv, dk, dv}, f64);
  return in;
}

}  // namespace

TEST_CASE("chunked gated delta rule equals the per-token recurrence in float64", "[gdn]") {
  torch::manual_seed(7);
  for (const bool with_state : {false, true}) {
    for (const int64_t t : {1, 37, 64, 100, 130}) {
      const auto in = random_inputs(2, t, 2, 4, 16, 8, with_state);
      const auto ref = recurrent_gated_delta_rule(in.q, in.k, in.v, in.g, in.beta, in.state, true);
      const auto chk = chunk_gated_delta_rule(in.q, in.k, in.v, in.g, in.beta, 64, in.state, true);
      INFO("seq " << t << (with_state ? " with" : " without") << " initial state");
      REQUIRE(chk.output.sizes() == torch::IntArrayRef({2, t, 4, 8}));
      REQUIRE(chk.output.scalar_type() == torch::kDouble);
      REQUIRE(chk.final_state.sizes() == torch::IntArrayRef({2, 4, 16, 8}));
      CHECK(ref.output.abs().max().item<double>() > 1e-3);  // a non-trivial output
      CHECK(rel_err(chk.output, ref.output) < 1e-10);
      CHECK(rel_err(chk.final_state, ref.final_state) < 1e-10);
    }
  }
}

TEST_CASE("chunked gated delta rule is exact for other chunk sizes and equal head counts", "[gdn]") {
  torch::manual_seed(11);
  const auto in = random_inputs(1, 45, 3, 3, 8, 12, true);
  const auto ref = recurrent_gated_delta_rule(in.q, in.k, in.v, in.g, in.beta, in.state, true);
  for (const int64_t c : {1, 7, 16, 45, 64}) {
    const auto chk = chunk_gated_delta_rule(in.q, in.k, in.v, in.g, in.beta, c, in.state, true);
    INFO("chunk " << c);
    CHECK(rel_err(chk.output, ref.output) < 1e-10);
    CHECK(rel_err(chk.final_state, ref.final_state) < 1e-10);
  }
}

TEST_CASE("chunked gated delta rule carries state across calls", "[gdn]") {
  // Running 100 tokens in one call equals running 37 then 63 with the state handed over.
  torch::manual_seed(5);
  const auto in = random_inputs(2, 100, 2, 4, 16, 8, false);
  const auto whole = chunk_gated_delta_rule(in.q, in.k, in.v, in.g, in.beta, 64, {}, true);
  auto part = [&](const torch::Tensor& x, int64_t s, int64_t n) { return x.narrow(1, s, n); };
  const auto first = chunk_gated_delta_rule(part(in.q, 0, 37), part(in.k, 0, 37), part(in.v, 0, 37), part(in.g, 0, 37),
                                            part(in.beta, 0, 37), 64, {}, true);
  const auto second = chunk_gated_delta_rule(part(in.q, 37, 63), part(in.k, 37, 63), part(in.v, 37, 63),
                                             part(in.g, 37, 63), part(in.beta, 37, 63), 64, first.final_state, true);
  CHECK(rel_err(torch::cat({first.output, second.output}, 1), whole.output) < 1e-10);
  CHECK(rel_err(second.final_state, whole.final_state) < 1e-10);
}

TEST_CASE("the comparison detects a wrong gated delta rule (negative control)", "[gdn]") {
  torch::manual_seed(3);
  const auto in = random_inputs(1, 37, 2, 4, 16, 8, false);
  const auto ref = recurrent_gated_delta_rule(in.q, in.k, in.v, in.g, in.beta);
  // A 1% change of beta, or dropping the decay, must show far above the 1e-10 tolerance.
  const auto beta_off = chunk_gated_delta_rule(in.q, in.k, in.v, in.g, in.beta * 1.01, 64);
  const auto no_decay = chunk_gated_delta_rule(in.q, in.k, in.v, torch::zeros_like(in.g), in.beta, 64);
  CHECK(rel_err(beta_off.output, ref.output) > 1e-4);
  CHECK(rel_err(no_decay.output, ref.output) > 1e-2);
}

TEST_CASE("the recurrence follows the paper's matrix form of the gated delta rule", "[gdn]") {
  // Paper orientation: S_t is [v_dim, k_dim], S_t = S_{t-1} a_t (I - beta_t k_t k_t^T) + beta_t v_t k_t^T,
  // o_t = S_t q_t with q_t scaled by 1/sqrt(k_dim). The implementation keeps S^T; both must agree.
  torch::manual_seed(13);
  const int64_t t = 9, dk = 6, dv = 5;
  const auto in = random_inputs(1, t, 1, 1, dk, dv, true);
  const auto got = recurrent_gated_delta_rule(in.q, in.k, in.v, in.g, in.beta, in.state, true);
  auto s = in.state[0][0].transpose(0, 1).clone();  // [dv, dk]
  const auto eye = torch::eye(dk, torch::kDouble);
  for (int64_t i = 0; i < t; ++i) {
    const auto q = in.q[0][i][0] / std::sqrt(static_cast<double>(dk));
    const auto k = in.k[0][i][0], v = in.v[0][i][0];
    const double a = std::exp(in.g[0][i][0].item<double>()), b = in.beta[0][i][0].item<double>();
    s = torch::mm(s, a * (eye - b * torch::outer(k, k))) + b * torch::outer(v, k);
    CHECK(rel_err(got.output[0][i][0], torch::mv(s, q)) < 1e-12);
  }
  CHECK(rel_err(got.final_state[0][0].transpose(0, 1), s) < 1e-12);
}

TEST_CASE("chunked and recurrent gated delta rule have the same gradients", "[gdn][grad]") {
  torch::manual_seed(17);
  auto in = random_inputs(1, 70, 2, 4, 8, 8, true);
  std::vector<torch::Tensor> leaves = {in.q, in.k, in.v, in.g, in.beta, in.state};
  for (auto& l : leaves) l.requires_grad_(true);
  const auto w = torch::randn({1, 70, 4, 8}, torch::kDouble);
  const auto ref = recurrent_gated_delta_rule(leaves[0], leaves[1], leaves[2], leaves[3], leaves[4], leaves[5]);
  const auto chk = chunk_gated_delta_rule(leaves[0], leaves[1], leaves[2], leaves[3], leaves[4], 16, leaves[5]);
  const auto g_ref = torch::autograd::grad({(ref.output * w).sum()}, leaves);
  const auto g_chk = torch::autograd::grad({(chk.output * w).sum()}, leaves);
  const char* names[] = {"q", "k", "v", "g", "beta", "initial_state"};
  for (size_t i = 0; i < leaves.size(); ++i) {
    INFO(names[i]);
    CHECK(g_ref[i].norm().item<double>() > 1e-3);
    CHECK(rel_err(g_chk[i], g_ref[i]) < 1e-10);
  }
}
