#include "model/decoder_layer.h"

#include "model/component_timer.h"

namespace recipebench::torch_model {

DecoderLayerImpl::DecoderLayerImpl(const ModelConfig& cfg, int64_t layer_index_, const KernelOptions& opt)
    : layer_index(layer_index_) {
  input_layernorm = register_module("input_layernorm", RMSNorm(cfg.hidden_size, cfg.rms_norm_eps));
  if (cfg.is_full_attention(layer_index))
    self_attn = register_module("self_attn", GatedAttention(cfg, opt.attention));
  else
    linear_attn = register_module("linear_attn", GatedDeltaNet(cfg, opt.gdn, opt.fused_kernels));
  post_attention_layernorm = register_module("post_attention_layernorm", RMSNorm(cfg.hidden_size, cfg.rms_norm_eps));
  mlp = register_module("mlp", SparseMoeBlock(cfg, opt.experts, opt.fused_kernels));
}

torch::Tensor DecoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& positions) {
  // The component marks time the token mixer and the MoE block under --profile (model/component_timer.h).
  const ProfileComponent mixer = is_full_attention() ? ProfileComponent::kAttention : ProfileComponent::kGdn;
  const auto normed = component_enter(input_layernorm(x), mixer);
  const auto mixed = component_exit(is_full_attention() ? self_attn(normed, positions) : linear_attn(normed), mixer);
  const auto h = x + mixed;
  const auto moe_in = component_enter(post_attention_layernorm(h), ProfileComponent::kMoeRest);
  return h + component_exit(mlp(moe_in), ProfileComponent::kMoeRest);
}

}  // namespace recipebench::torch_model
