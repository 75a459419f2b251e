#include "model/pipeline_stage.h"

#include <torch/nn/modules/container/modulelist.h>

#include <string>

#include "model/component_timer.h"

namespace recipebench::torch_model {

PipelineStageImpl::PipelineStageImpl(const Qwen35MoeForCausalLM& full, const std::vector<ChunkLayers>& chunks,
                                     bool first, bool last)
    : recompute(full->model->recompute),
      hidden_size(full->cfg.hidden_size),
      fused_kernels(full->fused_kernels),
      tp(full->tp) {
  TORCH_CHECK(!chunks.empty(), "a pipeline stage needs at least one model chunk");
  const auto& layers = full->model->decoder_layers;
  if (first) embed_tokens = register_module("embed_tokens", full->model->embed_tokens);
  for (size_t v = 0; v < chunks.size(); ++v) {
    const auto& c = chunks[v];
    TORCH_CHECK(c.first >= 0 && c.count >= 0 && c.first + c.count <= static_cast<int64_t>(layers.size()),
                "model chunk ", v, ": layers ", c.first, "..", c.first + c.count - 1, " outside the model's ",
                layers.size(), " layers");
    auto list = register_module("chunk" + std::to_string(v), torch::nn::ModuleList());
    chunk_layers.emplace_back(layers.begin() + c.first, layers.begin() + c.first + c.count);
    for (const auto& layer : chunk_layers.back()) list->push_back(layer);
  }
  if (last) {
    norm = register_module("norm", full->model->norm);
    lm_head = register_module("lm_head", full->lm_head);
  }
}

torch::Tensor PipelineStageImpl::forward(int chunk, const torch::Tensor& input, const torch::Tensor& positions) {
  TORCH_CHECK(chunk >= 0 && chunk < num_chunks(), "model chunk ", chunk, " of ", num_chunks());
  torch::Tensor h;
  if (takes_ids(chunk)) {
    if (before_forward) before_forward(*embed_tokens);
    const auto ids = component_enter(input, ProfileComponent::kEmbedding);  // --profile (model/component_timer.h)
    h = component_exit(embed_hidden(embed_tokens, ids, tp.get()), ProfileComponent::kEmbedding);
  } else {
    TORCH_CHECK(input.dim() == 3, "a stage's input must be hidden states [batch, seq, hidden], got ", input.sizes());
    h = input;
  }
  return run_decoder_layers(chunk_layers[static_cast<size_t>(chunk)], h, positions, recompute, before_forward);
}

std::vector<torch::Tensor> PipelineStageImpl::chunk_parameters(int chunk) const {
  TORCH_CHECK(chunk >= 0 && chunk < num_chunks(), "model chunk ", chunk, " of ", num_chunks());
  std::vector<torch::Tensor> out;
  auto add = [&out](const torch::nn::Module& m) {
    for (const auto& p : m.parameters()) out.push_back(p);
  };
  if (takes_ids(chunk)) add(*embed_tokens);
  for (const auto& layer : chunk_layers[static_cast<size_t>(chunk)]) add(*layer);
  if (has_head(chunk)) {
    add(*norm);
    add(*lm_head);
  }
  return out;
}

SftLossSum PipelineStageImpl::loss_sum(const torch::Tensor& hidden, const torch::Tensor& ids,
                                       const torch::Tensor& loss_mask) {
  TORCH_CHECK(!lm_head.is_empty(), "the loss is computed on the last pipeline stage only");
  if (before_forward) {
    before_forward(*norm);
    before_forward(*lm_head);
  }
  return head_loss_sum(lm_head, norm(hidden), ids, loss_mask, tp.get(), fused_kernels);
}

}  // namespace recipebench::torch_model
