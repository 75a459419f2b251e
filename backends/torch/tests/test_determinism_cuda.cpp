// Repeatability of each GPU operation that bench.deterministic had to change (docs/determinism.md): with the
// deterministic switch on, two forward + backward passes over the same inputs give the same bits. Covered: the
// causal scaled-dot-product attention of the gated-attention layer (its backward was cuDNN's, which adds in no fixed
// order), the sparse MoE block (dispatch / combine without index_add atomics) and the chunked LM loss. Shapes are the
// Qwen3.5-35B-A3B widths of the proxy recipe, so the kernels are the ones a run uses. Without a GPU the binary exits
// with kSkip, which CTest reports as skipped (SKIP_RETURN_CODE), never passed.
#include "catalog/models.h"
#include "model/chunked_lm_loss.h"
#include "model/compat.h"
#include "model/determinism.h"
#include "model/moe.h"

#include <torch/cuda.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <catch2/catch.hpp>

#include <functional>
#include <vector>

using namespace recipebench::torch_model;

namespace {

/// Runs `pass` (a forward + backward returning the tensors to compare) twice and says whether every tensor of the
/// second pass equals the first bit for bit (torch::equal: same shape, same values, NaN never equal).
bool bitwise_repeatable(const std::function<std::vector<torch::Tensor>()>& pass) {
  const auto a = pass();
  const auto b = pass();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i)
    if (!torch::equal(a[i], b[i])) return false;
  return true;
}

const recipebench::ModelConfig& proxy_widths() {
  const auto* m = recipebench::find_model("Qwen3.5-35B-A3B");
  REQUIRE(m != nullptr);
  return *m;
}

torch::TensorOptions bf16_cuda() { return torch::TensorOptions().dtype(torch::kBFloat16).device(torch::kCUDA); }

}  // namespace

TEST_CASE("causal attention forward + backward is bitwise repeatable (16 heads x 256 dims, 2 x 4,096 tokens)") {
  torch::manual_seed(7);
  const auto opt = bf16_cuda();
  const auto q0 = torch::randn({2, 16, 4096, 256}, opt), k0 = torch::randn({2, 16, 4096, 256}, opt);
  const auto v0 = torch::randn({2, 16, 4096, 256}, opt), gout = torch::randn({2, 16, 4096, 256}, opt);
  CHECK(bitwise_repeatable([&] {
    const auto q = q0.clone().requires_grad_(true), k = k0.clone().requires_grad_(true);
    const auto v = v0.clone().requires_grad_(true);
    const auto o = compat::sdpa_causal(q, k, v);  // the gated-attention layer's call
    (o.to(torch::kFloat) * gout.to(torch::kFloat)).sum().backward();
    return std::vector<torch::Tensor>{o, q.grad(), k.grad(), v.grad()};
  }));
}

TEST_CASE("sparse MoE block forward + backward is bitwise repeatable (256 experts, top 8, 8,192 tokens)") {
  torch::manual_seed(7);
  SparseMoeBlock moe(proxy_widths());
  moe->to(torch::kCUDA, torch::kBFloat16);
  const auto x0 = torch::randn({1, 8192, proxy_widths().hidden_size}, bf16_cuda());
  const auto gout = torch::randn_like(x0);
  CHECK(bitwise_repeatable([&] {
    moe->zero_grad();
    const auto x = x0.clone().requires_grad_(true);
    const auto y = moe(x);
    (y.to(torch::kFloat) * gout.to(torch::kFloat)).sum().backward();
    std::vector<torch::Tensor> out{y, x.grad()};
    for (const auto& p : moe->parameters()) out.push_back(p.grad().clone());
    return out;
  }));
}

TEST_CASE("chunked LM loss forward + backward is bitwise repeatable (vocab 248,320, 8,192 tokens)") {
  torch::manual_seed(7);
  const auto& c = proxy_widths();
  const auto h0 = torch::randn({8192, c.hidden_size}, bf16_cuda());
  const auto w0 = torch::randn({c.vocab_size, c.hidden_size}, bf16_cuda()) * 0.02;
  const auto targets =
      torch::randint(c.vocab_size, {8192}, torch::TensorOptions().dtype(torch::kLong).device(torch::kCUDA));
  const auto mask = torch::rand({8192}, torch::TensorOptions().device(torch::kCUDA)) < 0.7;
  CHECK(bitwise_repeatable([&] {
    const auto h = h0.clone().requires_grad_(true), w = w0.clone().requires_grad_(true);
    const auto loss = lm_loss_sum(h, w, targets, mask);
    loss.sum.backward();
    return std::vector<torch::Tensor>{loss.sum, h.grad(), w.grad()};
  }));
}
