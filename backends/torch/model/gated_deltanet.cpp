#include "model/gated_deltanet.h"

#include "model/common.h"
#include "model/gated_delta_rule.h"
#include "model/param_factory.h"
#include "model/tensor_parallel.h"

#ifdef RECIPEBENCH_GDN_CUDA
#include "cuda/conv_silu_cuda.h"
#include "cuda/gdn_autograd.h"
#endif

namespace recipebench::torch_model {

torch::Tensor causal_depthwise_conv1d_silu(const torch::Tensor& x, const torch::Tensor& w, ConvSiluImpl impl) {
  TORCH_CHECK(x.dim() == 3 && w.dim() == 3 && w.size(0) == x.size(2) && w.size(1) == 1, "conv1d: x ", x.sizes(), " w ",
              w.sizes());
#ifdef RECIPEBENCH_GDN_CUDA
  if (impl == ConvSiluImpl::Auto && cuda_conv_silu_supports(x, w)) return cuda_conv_silu(x, w);
#else
  (void)impl;
#endif
  const int64_t seq = x.size(1), channels = x.size(2), kernel = w.size(2);
  // Pad K-1 on both sides and keep the first seq outputs: output t sees inputs t-K+1 .. t.
  const auto y = torch::conv1d(x.transpose(1, 2).to(w.scalar_type()), w, /*bias=*/{}, /*stride=*/1,
                               /*padding=*/kernel - 1, /*dilation=*/1, /*groups=*/channels)
                     .narrow(-1, 0, seq);
  return torch::silu(y).transpose(1, 2).to(x.scalar_type());
}

torch::Tensor l2_normalize(const torch::Tensor& x, double eps) {
  return x * torch::rsqrt(x.pow(2).sum(-1, /*keepdim=*/true) + eps);
}

GatedDeltaNetImpl::GatedDeltaNetImpl(const ModelConfig& cfg, GdnKernel kernel_, bool fused_kernels_)
    : num_k_heads(cfg.linear_num_key_heads),
      num_v_heads(cfg.linear_num_value_heads),
      head_k_dim(cfg.linear_key_head_dim),
      head_v_dim(cfg.linear_value_head_dim),
      chunk_size(cfg.gdn_chunk_size),
      kernel(kernel_),
      fused_kernels(fused_kernels_) {
  TORCH_CHECK(num_k_heads > 0 && num_v_heads % num_k_heads == 0, "GDN value heads ", num_v_heads,
              " not a multiple of key heads ", num_k_heads);
  const int64_t h = cfg.hidden_size, kd = cfg.linear_key_dim(), vd = cfg.linear_value_dim();
  const int64_t conv_dim = 2 * kd + vd;
  in_proj_qkv = register_module("in_proj_qkv", Projection(h, conv_dim));
  in_proj_z = register_module("in_proj_z", Projection(h, vd));
  in_proj_b = register_module("in_proj_b", Projection(h, num_v_heads));
  in_proj_a = register_module("in_proj_a", Projection(h, num_v_heads));
  conv1d = register_module("conv1d", DepthwiseConvWeight(conv_dim, cfg.linear_conv_kernel));
  // Hugging Face init: dt_bias = 1, A = U(0.01, 16) (A_log = log A), gated norm weight 1, projections N(0, 0.02);
  // the conv keeps torch's default (Kaiming uniform) init. (The model builder's values: docs/initialization.md.)
  dt_bias = register_parameter("dt_bias", new_param({num_v_heads}));
  A_log = register_parameter("A_log", new_param({num_v_heads}));
  init_fill_(dt_bias, 1.0);
  if (!A_log.is_meta()) {
    torch::NoGradGuard no_grad;
    A_log.uniform_(0.01, 16.0).log_();
  }
  norm = register_module(
      "norm", GatedRMSNorm(head_v_dim, cfg.rms_norm_eps, fused_kernels ? GatedNormImpl::Auto : GatedNormImpl::Ops));
  out_proj = register_module("out_proj", Projection(vd, h));
}

torch::Tensor GatedDeltaNetImpl::gated_delta_rule(const torch::Tensor& q, const torch::Tensor& k,
                                                  const torch::Tensor& v, const torch::Tensor& g,
                                                  const torch::Tensor& beta) const {
  if (kernel == GdnKernel::Recurrent) return recurrent_gated_delta_rule(q, k, v, g, beta).output;
#ifdef RECIPEBENCH_GDN_CUDA
  // The CUDA kernels (docs/gdn-kernels.md) compute the chunked form with chunk 64 from bf16 inputs with fp32
  // accumulation: used for bf16 / fp16 models only, so an fp32 model keeps fp32 arithmetic.
  if (fused_kernels && chunk_size == 64 && v.scalar_type() != torch::kFloat32 &&
      cuda_gated_delta_rule_supports(q, k, v))
    return cuda_chunk_gated_delta_rule(q, k, v, g, beta).output;
#endif
  return chunk_gated_delta_rule(q, k, v, g, beta, chunk_size).output;
}

torch::Tensor GatedDeltaNetImpl::forward(const torch::Tensor& x) {
  TORCH_CHECK(x.dim() == 3, "GatedDeltaNet expects [batch, seq, hidden], got ", x.sizes());
  // The input projections on the whole sequence (the causal conv needs it): under tensor parallelism x is this
  // rank's sequence shard, all-gathered for them, and they give this rank's key / value heads.
  const auto in = project_whole_sequence(
      x, {in_proj_qkv->weight, in_proj_b->weight, in_proj_a->weight, in_proj_z->weight}, tp.get());
  const int64_t b = in[0].size(0), s = in[0].size(1);
  const int64_t kd = num_k_heads * head_k_dim, vd = num_v_heads * head_v_dim;
  const auto ct = compute_dtype(x.scalar_type());

  const auto conv_impl = fused_kernels ? ConvSiluImpl::Auto : ConvSiluImpl::Ops;
  const auto qkv = causal_depthwise_conv1d_silu(in[0], conv1d->weight, conv_impl);  // [b, s, 2kd + vd]
  const auto q = l2_normalize(qkv.narrow(-1, 0, kd).reshape({b, s, num_k_heads, head_k_dim}).to(ct));
  const auto k = l2_normalize(qkv.narrow(-1, kd, kd).reshape({b, s, num_k_heads, head_k_dim}).to(ct));
  const auto v = qkv.narrow(-1, 2 * kd, vd).reshape({b, s, num_v_heads, head_v_dim});

  const auto beta = torch::sigmoid(in[1]);                                              // [b, s, hv]
  const auto g = -A_log.to(ct).exp() * torch::softplus(in[2].to(ct) + dt_bias.to(ct));  // [b, s, hv]

  const auto o = gated_delta_rule(q, k, v, g, beta);  // [b, s, hv, dv]
  const auto z = in[3].reshape({b, s, num_v_heads, head_v_dim});
  const auto out = out_proj(norm(o, z).reshape({b, s, vd}));
  return tp ? reduce_scatter_sequence(out, *tp) : out;
}

}  // namespace recipebench::torch_model
