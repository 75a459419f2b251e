#include "model/decoder_layer.h"

namespace recipebench::torch_model {

DecoderLayerImpl::DecoderLayerImpl(const ModelConfig& cfg, int64_t layer_index_, const KernelOptions& opt)
    : layer_index(layer_index_) {
  input_layernorm = register_module("input_layernorm", RMSNorm(cfg.hidden_size, cfg.rms_norm_eps));
  if (cfg.is_full_attention(layer_index))
    self_attn = register_module("self_attn", GatedAttention(cfg, opt.attention));
  else
    linear_attn = register_module("linear_attn", GatedDeltaNet(cfg, opt.gdn));
  post_attention_layernorm = register_module("post_attention_layernorm", RMSNorm(cfg.hidden_size, cfg.rms_norm_eps));
  mlp = register_module("mlp", SparseMoeBlock(cfg, opt.experts));
}

torch::Tensor DecoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& positions) {
  const auto normed = input_layernorm(x);
  const auto mixed = is_full_attention() ? self_attn(normed, positions) : linear_attn(normed);
  const auto h = x + mixed;
  return h + mlp(post_attention_layernorm(h));
}

}  // namespace recipebench::torch_model
