// The routed experts' deterministic dispatch / combine (model/moe.cpp: permutations whose backward is a gather, a sum
// over the k slots in slot order) against the index_add combine it replaced, and their repeatability.
#include "model/moe.h"
#include "test_util.h"

#include <catch2/catch.hpp>

#include <torch/cuda.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <vector>

using namespace recipebench::torch_model;
using rbt_test::rel_err;

namespace {

/// The previous combine, kept here as the reference: tokens gathered with index_select, per-expert matmuls over the
/// rows sorted by expert, the weighted rows index_add-ed back into their tokens.
torch::Tensor index_add_reference(RoutedExpertsImpl& m, const torch::Tensor& x, const torch::Tensor& indices,
                                  const torch::Tensor& weights) {
  const int64_t k = indices.size(1);
  const auto flat = indices.reshape({-1});
  const auto order = std::get<1>(flat.sort(/*stable=*/true, 0, false));
  const auto token = order.div(k, "floor");
  const auto xs = x.index_select(0, token);
  const auto ws = weights.reshape({-1}).index_select(0, order);
  const auto counts = torch::bincount(flat, {}, m.num_experts);
  std::vector<torch::Tensor> parts;
  int64_t start = 0;
  for (int64_t e = 0; e < m.num_experts; ++e) {
    const int64_t c = counts[e].item<int64_t>();
    if (c == 0) continue;
    const auto gu = torch::linear(xs.narrow(0, start, c), m.gate_up_proj[e]);
    parts.push_back(torch::linear(torch::silu(gu.narrow(-1, 0, m.ffn)) * gu.narrow(-1, m.ffn, m.ffn), m.down_proj[e]));
    start += c;
  }
  return torch::zeros_like(x).index_add(0, token, torch::cat(parts, 0) * ws.unsqueeze(-1));
}

struct Result {
  torch::Tensor out, gx, gw, g_gate_up, g_down;
};

/// Forward and backward (against a fixed random output gradient) through `m` or the reference.
Result run(RoutedExperts& m, const torch::Tensor& x0, const torch::Tensor& idx, const torch::Tensor& w0,
           const torch::Tensor& gout, bool reference) {
  m->zero_grad();
  const auto x = x0.clone().requires_grad_(true), w = w0.clone().requires_grad_(true);
  const auto out = reference ? index_add_reference(*m, x, idx, w) : m(x, idx, w);
  (out * gout).sum().backward();
  return {out.detach(), x.grad(), w.grad(), m->gate_up_proj.grad().clone(), m->down_proj.grad().clone()};
}

std::vector<torch::Device> devices() {
  std::vector<torch::Device> d{torch::kCPU};
  if (torch::cuda::is_available()) d.emplace_back(torch::kCUDA);
  return d;
}

}  // namespace

TEST_CASE("MoE combine without index_add: output and every gradient equal the index_add path (float64)",
          "[layers][moe][grad]") {
  torch::manual_seed(51);
  const int64_t E = 6, H = 8, F = 12, N = 17, K = 2;
  RoutedExperts m(E, H, F, ExpertsImpl::Loop);
  m->to(torch::kDouble);
  const auto x = torch::randn({N, H}, torch::kDouble);
  // Two distinct experts per token among 0..4: expert 5 gets no token (an empty group).
  const auto first = torch::randint(0, 5, {N}, torch::kLong);
  const auto idx = torch::stack({first, (first + 1 + torch::randint(0, 4, {N}, torch::kLong)).remainder(5)}, 1);
  const auto w = torch::softmax(torch::randn({N, K}, torch::kDouble), -1);
  const auto gout = torch::randn({N, H}, torch::kDouble);
  const auto got = run(m, x, idx, w, gout, false), ref = run(m, x, idx, w, gout, true);
  CHECK(rel_err(got.out, ref.out) < 1e-12);
  CHECK(rel_err(got.gx, ref.gx) < 1e-12);
  CHECK(rel_err(got.gw, ref.gw) < 1e-12);
  CHECK(rel_err(got.g_gate_up, ref.g_gate_up) < 1e-12);
  CHECK(rel_err(got.g_down, ref.g_down) < 1e-12);
  CHECK(got.g_gate_up[5].abs().max().item<double>() == 0.0);  // the expert without tokens
  CHECK(got.g_gate_up[0].abs().max().item<double>() > 1e-3);
  // Negative control: a different routing gives a different output.
  const auto other = run(m, x, idx.flip({1}).remainder(E), w, gout, false);
  CHECK(rel_err(other.out, ref.out) > 1e-3);
}

TEST_CASE("MoE forward and backward are repeatable: two runs give the same bits (CPU, and CUDA bf16 when present)",
          "[layers][moe][determinism]") {
  for (const auto& dev : devices()) {
    INFO("device " << dev);
    torch::manual_seed(52);
    const int64_t E = 8, H = 32, F = 48, N = 300, K = 3;
    const auto dt = dev.is_cuda() ? torch::kBFloat16 : torch::kFloat;
    RoutedExperts m(E, H, F);  // Auto: grouped GEMMs on CUDA bf16 with libtorch >= 2.8
    m->to(dev, dt);
    const auto x = torch::randn({N, H}).to(dev, dt);
    const auto idx = std::get<1>(torch::randn({N, E}).topk(K, -1)).to(dev);
    const auto w = torch::softmax(torch::randn({N, K}), -1).to(dev, dt);
    const auto gout = torch::randn({N, H}).to(dev, dt);
    const auto a = run(m, x, idx, w, gout, false), b = run(m, x, idx, w, gout, false);
    CHECK(torch::equal(a.out, b.out));
    CHECK(torch::equal(a.gx, b.gx));
    CHECK(torch::equal(a.gw, b.gw));
    CHECK(torch::equal(a.g_gate_up, b.g_gate_up));
    CHECK(torch::equal(a.g_down, b.g_down));
    CHECK(a.gx.abs().max().item<double>() > 0);
  }
}
