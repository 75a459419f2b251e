#include "model/qwen35_moe.h"

#include "model/chunked_lm_loss.h"
#include "model/common.h"
#include "model/component_timer.h"
#include "model/recompute.h"
#include "model/tensor_parallel.h"

#include <algorithm>

namespace recipebench::torch_model {

SftLossSum sft_loss_sum(const torch::Tensor& logits, const torch::Tensor& targets, const torch::Tensor& loss_mask) {
  TORCH_CHECK(
      logits.dim() == 3 && targets.sizes() == logits.sizes().slice(0, 2) && loss_mask.sizes() == targets.sizes(),
      "SFT loss: logits ", logits.sizes(), " targets ", targets.sizes(), " mask ", loss_mask.sizes());
  const auto ct = compute_dtype(logits.scalar_type());
  const auto mask = loss_mask.to(torch::kBool);
  const auto safe_targets = targets.masked_fill(mask.logical_not(), 0);  // unsupervised targets may be -100
  const auto logp = torch::log_softmax(logits.to(ct), -1);
  const auto nll = -logp.gather(-1, safe_targets.unsqueeze(-1)).squeeze(-1);  // [batch, seq]
  SftLossSum r;
  r.sum = torch::where(mask, nll, torch::zeros_like(nll)).sum();
  r.count = mask.sum();
  return r;
}

torch::Tensor sft_loss(const torch::Tensor& logits, const torch::Tensor& targets, const torch::Tensor& loss_mask) {
  const auto s = sft_loss_sum(logits, targets, loss_mask);
  return s.sum / s.count.clamp_min(1).to(s.sum.scalar_type());
}

TextModelImpl::TextModelImpl(const ModelConfig& cfg, const KernelOptions& opt) : recompute(opt.recompute) {
  embed_tokens = register_module("embed_tokens", TokenEmbedding(cfg.vocab_size, cfg.hidden_size));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < cfg.num_layers; ++i) {
    decoder_layers.push_back(DecoderLayer(cfg, i, opt));
    layers->push_back(decoder_layers.back());
  }
  norm = register_module("norm", RMSNorm(cfg.hidden_size, cfg.rms_norm_eps));
}

torch::Tensor run_decoder_layers(const std::vector<DecoderLayer>& layers, torch::Tensor h,
                                 const torch::Tensor& positions, const RecomputeOptions& recompute,
                                 const BeforeForward& before) {
  const int64_t n = static_cast<int64_t>(layers.size());
  TORCH_CHECK(recompute.method == RecomputeOptions::Method::None || recompute.num_layers >= 1,
              "recompute num_layers must be >= 1, got ", recompute.num_layers);
  auto announce = [&](int64_t begin, int64_t end) {
    if (before)
      for (int64_t l = begin; l < end; ++l) before(*layers[static_cast<size_t>(l)]);
  };
  // Layers [begin, end) as one recomputed unit (Megatron-LM's _checkpointed_forward): only the unit's input is kept.
  auto recomputed = [&](int64_t begin, int64_t end) {
    announce(begin, end);
    std::vector<DecoderLayer> group(layers.begin() + begin, layers.begin() + end);
    std::vector<torch::Tensor> params;
    for (const auto& layer : group)
      for (const auto& p : layer->parameters()) params.push_back(p);
    TensorFn fn = [group, positions](const torch::Tensor& x) {
      auto y = x;
      for (auto layer : group) y = layer->forward(y, positions);  // holder copies: forward is not const
      return y;
    };
    h = checkpoint(std::move(fn), h, params);
  };
  switch (recompute.method) {
    case RecomputeOptions::Method::None:
      for (auto layer : layers) {
        if (before) before(*layer);
        h = layer(h, positions);
      }
      break;
    case RecomputeOptions::Method::Uniform:
      for (int64_t l = 0; l < n; l += recompute.num_layers)
        recomputed(l, std::min<int64_t>(n, l + recompute.num_layers));  // a last group may be shorter
      break;
    case RecomputeOptions::Method::Block:
      for (int64_t l = 0; l < n; ++l)
        if (l < recompute.num_layers) {
          recomputed(l, l + 1);
        } else {
          announce(l, l + 1);
          h = DecoderLayer(layers[static_cast<size_t>(l)])(h, positions);
        }
      break;
  }
  return h;
}

torch::Tensor embed_hidden(TokenEmbedding embed_tokens, const torch::Tensor& input_ids, TensorParallel* tp) {
  TORCH_CHECK(input_ids.dim() == 2, "input_ids must be [batch, seq], got ", input_ids.sizes());
  if (!tp) return embed_tokens->forward(input_ids);
  // Tensor parallel: vocab-parallel lookup, then this rank's sequence shard for the layers.
  const auto& table = embed_tokens->weight;
  return vocab_parallel_embedding(input_ids, table, tp->rank() * table.size(0), *tp);
}

SftLossSum head_loss_sum(Projection lm_head, const torch::Tensor& normed, const torch::Tensor& input_ids,
                         const torch::Tensor& loss_mask, TensorParallel* tp, bool fused_kernels) {
  TORCH_CHECK(loss_mask.sizes() == input_ids.sizes(), "loss mask ", loss_mask.sizes(), " != input_ids ",
              input_ids.sizes());
  const int64_t b = input_ids.size(0), s = input_ids.size(1);
  TORCH_CHECK(s >= 2, "next-token loss needs at least 2 tokens per row");
  // Position t predicts input_ids[:, t + 1] where loss_mask[:, t + 1]; the last position predicts nothing (masked),
  // so that the hidden states are used whole (no copy of a narrowed view).
  const auto none = torch::zeros({b, 1}, loss_mask.options().dtype(torch::kBool));
  const auto targets = torch::cat({input_ids.narrow(1, 1, s - 1), torch::zeros({b, 1}, input_ids.options())}, 1);
  const auto mask = torch::cat({loss_mask.narrow(1, 1, s - 1).to(torch::kBool), none}, 1);
  const auto h = tp ? gather_sequence(normed, *tp) : normed;  // tensor parallel: the whole sequence
  TORCH_CHECK(h.dim() == 3 && h.size(0) == b && h.size(1) == s, "hidden states ", h.sizes(), " for input_ids ",
              input_ids.sizes());
  // The vocab-parallel output layer holds rows [rank V / TP, (rank + 1) V / TP) of the vocabulary.
  const int64_t vocab_start = tp ? tp->rank() * lm_head->weight.size(0) : 0;
  const auto r = lm_loss_sum(component_enter(h, ProfileComponent::kLmHeadLoss).reshape({b * s, h.size(2)}), lm_head->weight,
                             targets.reshape({-1}), mask.reshape({-1}), tp, vocab_start, kLmLossChunkTokens,
                             fused_kernels ? LmLossImpl::Auto : LmLossImpl::Ops);
  return SftLossSum{component_exit(r.sum, ProfileComponent::kLmHeadLoss), r.count};
}

torch::Tensor TextModelImpl::forward(const torch::Tensor& input_ids, const torch::Tensor& positions) {
  return norm(
      run_decoder_layers(decoder_layers, embed_hidden(embed_tokens, input_ids, tp.get()), positions, recompute));
}

Qwen35MoeForCausalLMImpl::Qwen35MoeForCausalLMImpl(const ModelConfig& cfg_, const KernelOptions& opt)
    : cfg(cfg_), fused_kernels(opt.fused_kernels) {
  model = register_module("model", TextModel(cfg, opt));
  lm_head = register_module("lm_head", Projection(cfg.hidden_size, cfg.vocab_size));
}

torch::Tensor Qwen35MoeForCausalLMImpl::forward(const torch::Tensor& input_ids, const torch::Tensor& positions) {
  const auto h = model(input_ids, positions);
  return lm_head(tp ? gather_sequence(h, *tp) : h);  // tensor parallel: this rank's vocabulary slice
}

SftLossSum Qwen35MoeForCausalLMImpl::sft_loss_sum(const torch::Tensor& input_ids, const torch::Tensor& loss_mask) {
  return head_loss_sum(lm_head, model(input_ids), input_ids, loss_mask, tp.get(), fused_kernels);
}

torch::Tensor Qwen35MoeForCausalLMImpl::sft_loss(const torch::Tensor& input_ids, const torch::Tensor& loss_mask) {
  const auto s = sft_loss_sum(input_ids, loss_mask);
  return s.sum / s.count.clamp_min(1).to(s.sum.scalar_type());
}

}  // namespace recipebench::torch_model
