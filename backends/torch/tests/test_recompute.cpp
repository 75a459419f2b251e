// Activation recompute (model/recompute.h): the recomputed model computes the same loss and the same gradient of
// every parameter as the plain one, for each way of grouping the layers; a recomputed layer keeps only its input.
#include "catalog/models.h"
#include "model/decoder_layer.h"
#include "model/qwen35_moe.h"
#include "model/recompute.h"
#include "test_util.h"

#include <torch/autograd.h>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace recipebench::torch_model;
using rbt_test::rel_err;

namespace {

const recipebench::ModelConfig& tiny() { return *recipebench::find_model("Qwen3.5-tiny"); }

struct LossAndNamedGrads {
  double loss = 0;
  std::vector<std::pair<std::string, torch::Tensor>> grads;  ///< named_parameters order; undefined where none
};

LossAndNamedGrads loss_and_grads(Qwen35MoeForCausalLM& model, const torch::Tensor& ids, const torch::Tensor& mask) {
  for (auto& p : model->parameters()) p.mutable_grad() = torch::Tensor();
  const auto loss = model->sft_loss(ids, mask);
  loss.backward();
  LossAndNamedGrads r;
  r.loss = loss.item<double>();
  for (const auto& np : model->named_parameters()) r.grads.emplace_back(np.key(), np.value().grad().clone());
  return r;
}

/// Loss and every parameter gradient of `got` equal those of `want` to `tol` (relative).
void check_same(const LossAndNamedGrads& want, const LossAndNamedGrads& got, double tol) {
  CHECK(std::abs(got.loss - want.loss) <= tol * std::abs(want.loss));
  REQUIRE(got.grads.size() == want.grads.size());
  int compared = 0;
  for (size_t i = 0; i < want.grads.size(); ++i) {
    INFO(want.grads[i].first);
    const auto& a = want.grads[i].second;
    const auto& b = got.grads[i].second;
    REQUIRE(a.defined() == b.defined());
    if (!a.defined()) continue;
    if (a.norm().item<double>() == 0) {
      CHECK(b.norm().item<double>() == 0);
      continue;
    }
    CHECK(rel_err(b, a) < tol);
    ++compared;
  }
  CHECK(compared > 20);  // embedding, every layer's projections, norms and experts, lm_head
}

}  // namespace

TEST_CASE("recompute: the tiny model's loss and every parameter gradient match the plain model", "[recompute][model]") {
  for (const auto dtype : {torch::kDouble, torch::kFloat}) {
    const double tol = dtype == torch::kDouble ? 1e-6 : 1e-5;
    torch::manual_seed(5);
    Qwen35MoeForCausalLM model(tiny());
    model->to(dtype);
    model->train();
    const auto ids = torch::randint(0, tiny().vocab_size, {2, 40}, torch::kLong);
    const auto mask = torch::randint(0, 2, {2, 40}, torch::kLong);
    const LossAndNamedGrads plain = loss_and_grads(model, ids, mask);
    CHECK(plain.loss > 1.0);
    struct Case {
      RecomputeOptions::Method method;
      int num_layers;
      const char* name;
    };
    for (const Case c : {Case{RecomputeOptions::Method::Uniform, 1, "uniform 1"},
                         Case{RecomputeOptions::Method::Uniform, 2, "uniform 2"},
                         Case{RecomputeOptions::Method::Uniform, 3, "uniform 3 (a last group of 1)"},
                         Case{RecomputeOptions::Method::Uniform, 8, "uniform 8 (one group of all 4 layers)"},
                         Case{RecomputeOptions::Method::Block, 2, "block 2"}}) {
      DYNAMIC_SECTION((dtype == torch::kDouble ? "float64 " : "float32 ") << c.name) {
        model->model->recompute.method = c.method;
        model->model->recompute.num_layers = c.num_layers;
        const LossAndNamedGrads re = loss_and_grads(model, ids, mask);
        model->model->recompute = RecomputeOptions{};
        check_same(plain, re, tol);
      }
    }
  }
}

TEST_CASE("recompute: one decoder layer, input with and without a gradient", "[recompute][layer]") {
  torch::manual_seed(9);
  for (int64_t index : {0, 3}) {  // Gated DeltaNet, gated attention
    DYNAMIC_SECTION("layer " << index) {
      DecoderLayer layer(tiny(), index);
      layer->to(torch::kDouble);
      const auto x0 = torch::randn({2, 24, tiny().hidden_size}, torch::kDouble);
      const auto positions = torch::arange(3, 27, torch::kLong);  // not 0..seq-1: the bound positions are used
      const auto w = torch::randn({2, 24, tiny().hidden_size}, torch::kDouble);
      std::vector<torch::Tensor> params = layer->parameters();
      auto grads_of = [&](bool recompute, bool input_grad) {
        for (auto& p : params) p.mutable_grad() = torch::Tensor();
        auto x = x0.clone().requires_grad_(input_grad);
        const auto y = recompute
                           ? checkpoint([&](const torch::Tensor& t) { return layer->forward(t, positions); }, x, params)
                           : layer->forward(x, positions);
        CHECK(y.requires_grad());
        (y * w).sum().backward();
        std::vector<torch::Tensor> g;
        g.push_back(input_grad ? x.grad().clone() : torch::Tensor());
        for (auto& p : params) g.push_back(p.grad().defined() ? p.grad().clone() : torch::Tensor());
        return g;
      };
      for (bool input_grad : {true, false}) {
        INFO("input requires grad: " << input_grad);
        const auto a = grads_of(false, input_grad), b = grads_of(true, input_grad);
        REQUIRE(a.size() == b.size());
        CHECK(a[0].defined() == input_grad);
        CHECK(b[0].defined() == input_grad);
        for (size_t i = 0; i < a.size(); ++i) {
          REQUIRE(a[i].defined() == b[i].defined());
          if (a[i].defined() && a[i].norm().item<double>() > 0) CHECK(rel_err(b[i], a[i]) < 1e-12);
        }
      }
    }
  }
}

TEST_CASE("recompute: the forward pass keeps no activations of the recomputed layers", "[recompute][layer]") {
  torch::manual_seed(2);
  DecoderLayer layer(tiny(), 0);
  const auto x = torch::randn({1, 16, tiny().hidden_size}).requires_grad_(true);
  const auto y = checkpoint([&](const torch::Tensor& t) { return layer->forward(t); }, x, layer->parameters());
  // The whole layer is one node of the graph whose only next edges are x and the layer's parameters.
  REQUIRE(y.grad_fn());
  CHECK(y.grad_fn()->num_inputs() == 1);
  CHECK(y.grad_fn()->next_edges().size() == 1 + layer->parameters().size());
  // Without gradients (inference) it is the plain forward.
  torch::NoGradGuard no_grad;
  const auto z = checkpoint([&](const torch::Tensor& t) { return layer->forward(t); }, x, layer->parameters());
  CHECK(!z.requires_grad());
  CHECK(rel_err(z, layer->forward(x)) == 0);
}
