// The GDN CUDA kernels' autograd function (cuda/gdn_autograd.h) against the libtorch-ops per-token recurrence in
// float64 (model/gated_delta_rule.h): output, final state and every input gradient, GQA, an initial state and
// packed rows; a perturbed gate as negative control; two backward passes bitwise equal. Without a GPU the binary
// exits with kSkip, which CTest reports as skipped (SKIP_RETURN_CODE), never passed.
#define CATCH_CONFIG_RUNNER
#include "cuda/gdn_autograd.h"
#include "model/gated_delta_rule.h"
#include "test_util.h"

#include <torch/cuda.h>

#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <vector>

using namespace recipebench::torch_model;
using rbt_test::rel_err;

namespace {

constexpr int kSkip = 77;      // exit status without a CUDA device
constexpr double kTol = 5e-3;  // relative L2 with bf16 inputs (docs/gdn-kernels.md)

/// Inputs on the CPU in float64, q, k, v already rounded to bf16 (what the kernels see). One packed row of
/// cu.back() tokens, 2 key heads, 4 value heads, head dims 128, an initial state per row.
struct Inputs {
  torch::Tensor q, k, v, g, beta, h0;
};
torch::Tensor normalize(const torch::Tensor& x) { return x / x.norm(2, -1, true); }

Inputs make_inputs(const std::vector<int64_t>& cu) {
  const auto f64 = torch::TensorOptions().dtype(torch::kDouble);
  const int64_t n = cu.back(), rows = static_cast<int64_t>(cu.size()) - 1;
  auto bf = [](const torch::Tensor& t) { return t.to(torch::kBFloat16).to(torch::kDouble); };
  Inputs in;
  in.q = bf(normalize(torch::randn({1, n, 2, 128}, f64)));
  in.k = bf(normalize(torch::randn({1, n, 2, 128}, f64)));
  in.v = bf(torch::randn({1, n, 4, 128}, f64));
  in.g = -0.5 * torch::softplus(torch::randn({1, n, 4}, f64));
  in.beta = torch::sigmoid(torch::randn({1, n, 4}, f64));
  in.h0 = 0.5 * torch::randn({rows, 4, 128, 128}, f64);
  return in;
}

/// Output, final state and gradients of loss = sum(o * d_o) + sum(ht * dht).
struct Result {
  std::vector<torch::Tensor> values;  // o, ht, dq, dk, dv, dg, dbeta, dh0 (CPU, float64)
};
const std::vector<std::string> kNames = {"o", "ht", "dq", "dk", "dv", "dg", "dbeta", "dh0"};

Result reference(const Inputs& in, const std::vector<int64_t>& cu, const torch::Tensor& d_o, const torch::Tensor& dht) {
  std::vector<torch::Tensor> leaves;
  for (const auto& t : {in.q, in.k, in.v, in.g, in.beta, in.h0}) leaves.push_back(t.clone().requires_grad_(true));
  std::vector<torch::Tensor> outs, states;
  for (size_t r = 0; r + 1 < cu.size(); ++r) {
    auto row = [&](const torch::Tensor& t) { return t.narrow(1, cu[r], cu[r + 1] - cu[r]); };
    const auto res = recurrent_gated_delta_rule(row(leaves[0]), row(leaves[1]), row(leaves[2]), row(leaves[3]),
                                                row(leaves[4]), leaves[5].narrow(0, r, 1), true);
    outs.push_back(res.output);
    states.push_back(res.final_state);
  }
  const auto o = torch::cat(outs, 1), ht = torch::cat(states, 0);
  (o * d_o).sum().add((ht * dht).sum()).backward();
  Result res{{o.detach(), ht.detach()}};
  for (const auto& l : leaves) res.values.push_back(l.grad());
  return res;
}

Result cuda(const Inputs& in, const std::vector<int64_t>& cu, const torch::Tensor& d_o, const torch::Tensor& dht,
            const torch::Tensor& g_override = {}) {
  const auto dev = torch::Device(torch::kCUDA);
  auto leaf = [&](const torch::Tensor& t, c10::ScalarType s) { return t.to(dev, s).requires_grad_(true); };
  std::vector<torch::Tensor> leaves = {
      leaf(in.q, torch::kBFloat16),   leaf(in.k, torch::kBFloat16),
      leaf(in.v, torch::kBFloat16),   leaf(g_override.defined() ? g_override : in.g, torch::kFloat32),
      leaf(in.beta, torch::kFloat32), leaf(in.h0, torch::kFloat32)};
  const auto out =
      cuda_chunk_gated_delta_rule(leaves[0], leaves[1], leaves[2], leaves[3], leaves[4], leaves[5], true, 0.0, cu);
  (out.output.to(torch::kDouble) * d_o.to(dev))
      .sum()
      .add((out.final_state.to(torch::kDouble) * dht.to(dev)).sum())
      .backward();
  Result res{{out.output.detach().cpu().to(torch::kDouble), out.final_state.detach().cpu().to(torch::kDouble)}};
  for (const auto& l : leaves) res.values.push_back(l.grad().cpu().to(torch::kDouble));
  return res;
}

}  // namespace

TEST_CASE("CUDA GDN kernels match the float64 recurrence: output, final state, all gradients", "[cuda][gdn]") {
  torch::manual_seed(11);
  // Length 1 as 16 one-token rows: a relative L2 over one token of 4 value heads (4 values of dg, dbeta) is too
  // noisy a statistic to hold against a fixed tolerance.
  const std::vector<std::vector<int64_t>> shapes = {{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
                                                    {0, 63},
                                                    {0, 64},
                                                    {0, 65},
                                                    {0, 300},
                                                    {0, 1, 64, 128, 193, 493}};
  for (const auto& cu : shapes) {
    INFO("tokens " << cu.back() << ", rows " << cu.size() - 1);
    const auto in = make_inputs(cu);
    const auto d_o = torch::randn(in.v.sizes(), torch::kDouble).to(torch::kBFloat16).to(torch::kDouble);
    const auto dht = torch::randn(in.h0.sizes(), torch::kDouble);
    const auto ref = reference(in, cu, d_o, dht);
    const auto got = cuda(in, cu, d_o, dht);
    std::printf("tokens %5ld rows %zu:", static_cast<long>(cu.back()), cu.size() - 1);
    for (size_t i = 0; i < kNames.size(); ++i) {
      INFO(kNames[i] << ": got " << got.values[i].sizes() << ", reference " << ref.values[i].sizes());
      REQUIRE(got.values[i].sizes() == ref.values[i].sizes());
      const double e = rel_err(got.values[i], ref.values[i]);
      std::printf(" %s %.2e", kNames[i].c_str(), e);
      CHECK(e <= kTol);
    }
    if (cu.back() >= 64) {  // negative control: a gate perturbed by -0.05 fails the output check
      const double e = rel_err(cuda(in, cu, d_o, dht, in.g - 0.05).values[0], ref.values[0]);
      std::printf(" | perturbed gate: o %.2e", e);
      CHECK(e > kTol);
    }
    std::printf("\n");
  }
}

TEST_CASE("CUDA GDN backward is bitwise repeatable", "[cuda][gdn]") {
  torch::manual_seed(12);
  const std::vector<int64_t> cu = {0, 100, 400};
  const auto in = make_inputs(cu);
  const auto d_o = torch::randn(in.v.sizes(), torch::kDouble);
  const auto dht = torch::randn(in.h0.sizes(), torch::kDouble);
  const auto a = cuda(in, cu, d_o, dht), b = cuda(in, cu, d_o, dht);
  for (size_t i = 0; i < kNames.size(); ++i) {
    INFO(kNames[i]);
    CHECK(torch::equal(a.values[i], b.values[i]));
  }
}

TEST_CASE("The CUDA function with the layer's dtypes (fp32 q, k, g; bf16 v, beta) follows the libtorch path",
          "[cuda][gdn]") {
  torch::manual_seed(13);
  auto in = make_inputs({0, 200});
  in.beta = in.beta.to(torch::kBFloat16).to(torch::kDouble);  // the layer's beta is bf16: both sides see it
  const auto dev = torch::Device(torch::kCUDA);
  const auto ref = chunk_gated_delta_rule(in.q, in.k, in.v, in.g, in.beta, 64).output;
  const auto got = cuda_chunk_gated_delta_rule(in.q.to(dev, torch::kFloat32), in.k.to(dev, torch::kFloat32),
                                               in.v.to(dev, torch::kBFloat16), in.g.to(dev, torch::kFloat32),
                                               in.beta.to(dev, torch::kBFloat16))
                       .output;
  CHECK(got.scalar_type() == torch::kBFloat16);  // the value input's dtype
  const double e = rel_err(got.cpu().to(torch::kDouble), ref);
  std::printf("layer dtypes, 200 tokens: o %.2e\n", e);
  CHECK(e <= kTol);
}

int main(int argc, char** argv) {
  if (!torch::cuda::is_available()) {
    std::printf("test_gdn_cuda: no CUDA device, skipped\n");
    return kSkip;
  }
  return Catch::Session().run(argc, argv);
}
