// Pipeline stages (model/pipeline_stage.h): the one-rank model cut into stages and model chunks, run chunk after chunk
// with the hidden states handed on detached (as the pipeline executor sends them) and the gradients handed back,
// computes the model's loss and every parameter's gradient; the stages' parameters cover the model's once, in order.
#include "catalog/models.h"
#include "model/pipeline_stage.h"
#include "model/qwen35_moe.h"
#include "test_util.h"

#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

using namespace recipebench::torch_model;
using rbt_test::rel_err;

namespace {

const recipebench::ModelConfig& tiny_config() { return *recipebench::find_model("Qwen3.5-tiny"); }

void clear_grads(Qwen35MoeForCausalLM& model) {
  for (auto& p : model->parameters()) p.mutable_grad() = torch::Tensor();
}

std::vector<torch::Tensor> grads(Qwen35MoeForCausalLM& model) {
  std::vector<torch::Tensor> out;
  for (const auto& p : model->parameters()) out.push_back(p.grad().defined() ? p.grad().clone() : torch::Tensor());
  return out;
}

}  // namespace

TEST_CASE("pipeline stages: PP2 with VPP2 chunks reproduce the model's loss and gradients", "[pipeline][model]") {
  torch::manual_seed(5);
  Qwen35MoeForCausalLM model(tiny_config());  // 4 layers
  model->to(torch::kDouble);
  model->train();
  const auto ids = torch::randint(0, tiny_config().vocab_size, {2, 40}, torch::kLong);
  const auto mask = torch::randint(0, 2, {2, 40}, torch::kLong);

  clear_grads(model);
  const auto plain = model->sft_loss_sum(ids, mask).sum;
  plain.backward();
  const auto want = grads(model);

  // Interleaved layout of the rank map: rank 0 holds layers 0 (chunk 0) and 2 (chunk 1), rank 1 layers 1 and 3.
  PipelineStage first(model, std::vector<ChunkLayers>{{0, 1}, {2, 1}}, true, false);
  PipelineStage last(model, std::vector<ChunkLayers>{{1, 1}, {3, 1}}, false, true);
  CHECK(first->takes_ids(0));
  CHECK_FALSE(first->takes_ids(1));
  CHECK_FALSE(first->has_head(1));
  CHECK(last->has_head(1));
  CHECK_FALSE(last->has_head(0));
  CHECK_THROWS(first->loss_sum(torch::zeros({2, 40, tiny_config().hidden_size}, torch::kDouble), ids, mask));

  for (const bool recompute : {false, true}) {
    DYNAMIC_SECTION((recompute ? "with" : "without") << " full recompute per chunk") {
      for (auto* s : {&first, &last}) {
        (*s)->recompute.method = recompute ? RecomputeOptions::Method::Uniform : RecomputeOptions::Method::None;
        (*s)->recompute.num_layers = 1;
      }
      clear_grads(model);
      // Global stages 0..3: (first, 0), (last, 0), (first, 1), (last, 1).
      std::vector<std::pair<PipelineStage*, int>> order{{&first, 0}, {&last, 0}, {&first, 1}, {&last, 1}};
      std::vector<torch::Tensor> inputs, outputs;
      torch::Tensor x = ids;
      for (const auto& [stage, chunk] : order) {
        if (!inputs.empty() || !(*stage)->takes_ids(chunk)) x = x.detach().requires_grad_(true);
        inputs.push_back(x);
        outputs.push_back((*stage)->forward(chunk, x));
        x = outputs.back();
      }
      const auto loss = last->loss_sum(outputs.back(), ids, mask).sum;
      CHECK(loss.item<double>() == plain.item<double>());
      loss.backward();
      for (size_t g = order.size() - 1; g-- > 0;) outputs[g].backward(inputs[g + 1].grad());
      const auto got = grads(model);
      REQUIRE(got.size() == want.size());
      int compared = 0;
      for (size_t i = 0; i < want.size(); ++i) {
        INFO("parameter " << i);
        REQUIRE(got[i].defined() == want[i].defined());
        if (!want[i].defined() || want[i].norm().item<double>() == 0) continue;
        CHECK(rel_err(got[i], want[i]) < 1e-12);
        ++compared;
      }
      CHECK(compared > 20);
    }
  }
}

TEST_CASE("pipeline stages: the stages' parameters are the model's, each once, in the model's order",
          "[pipeline][model]") {
  Qwen35MoeForCausalLM model(tiny_config().with_layers(6));
  // PP 3 with a first/last split of 1 and 1: layers 0 | 1-4 | 5.
  std::vector<PipelineStage> stages{PipelineStage(model, std::vector<ChunkLayers>{{0, 1}}, true, false),
                                    PipelineStage(model, std::vector<ChunkLayers>{{1, 4}}, false, false),
                                    PipelineStage(model, std::vector<ChunkLayers>{{5, 1}}, false, true)};
  std::map<const void*, size_t> index;
  const auto all = model->parameters();
  for (size_t i = 0; i < all.size(); ++i) index[all[i].unsafeGetTensorImpl()] = i;
  std::vector<int> seen(all.size(), 0);
  for (auto& s : stages) {
    long previous = -1;
    for (const auto& p : s->parameters()) {
      const auto it = index.find(p.unsafeGetTensorImpl());
      REQUIRE(it != index.end());  // shared, not copied
      CHECK(static_cast<long>(it->second) > previous);
      previous = static_cast<long>(it->second);
      ++seen[it->second];
    }
  }
  for (size_t i = 0; i < seen.size(); ++i) CHECK(seen[i] == 1);
  CHECK_THROWS(PipelineStage(model, std::vector<ChunkLayers>{{5, 2}}, false, true));  // beyond the 6 layers
}
