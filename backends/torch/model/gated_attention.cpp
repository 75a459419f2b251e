#include "model/gated_attention.h"

#include "model/common.h"
#include "model/compat.h"
#include "model/tensor_parallel.h"

#include <cmath>
#include <limits>

namespace recipebench::torch_model {

std::pair<torch::Tensor, torch::Tensor> rope_cos_sin(const torch::Tensor& positions, int64_t rope_dims, double theta,
                                                     c10::ScalarType dtype) {
  TORCH_CHECK(rope_dims > 0 && rope_dims % 2 == 0, "rope_dims must be even and positive, got ", rope_dims);
  const auto f64 = torch::TensorOptions().dtype(torch::kDouble).device(positions.device());
  const auto exponent = torch::arange(0, rope_dims, 2, f64) / static_cast<double>(rope_dims);
  const auto inv_freq = torch::pow(theta, -exponent);                        // [rope_dims / 2]
  const auto angle = positions.to(torch::kDouble).unsqueeze(-1) * inv_freq;  // [..., seq, rope_dims / 2]
  const auto emb = torch::cat({angle, angle}, -1);                           // [..., seq, rope_dims]
  return {emb.cos().to(dtype), emb.sin().to(dtype)};
}

torch::Tensor apply_partial_rope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  const int64_t r = cos.size(-1), d = x.size(-1);
  TORCH_CHECK(r <= d && r % 2 == 0, "RoPE dims ", r, " do not fit head dim ", d);
  auto c = cos, s = sin;
  if (c.dim() == 3) {  // [batch, seq, r] -> [batch, 1, seq, r]
    c = c.unsqueeze(1);
    s = s.unsqueeze(1);
  }
  const auto xr = x.narrow(-1, 0, r);
  const auto rotated = torch::cat({-xr.narrow(-1, r / 2, r / 2), xr.narrow(-1, 0, r / 2)}, -1);
  const auto out = xr * c + rotated * s;
  if (r == d) return out;
  return torch::cat({out, x.narrow(-1, r, d - r)}, -1);
}

namespace {
/// KV heads repeated to the query heads: [b, kv, s, d] -> [b, kv * rep, s, d], query head i reading KV head i / rep.
/// An expanded view copied once, so the backward is a sum over the rep copies (a reduction), not the index_add
/// of repeat_interleave's backward.
torch::Tensor repeat_kv(const torch::Tensor& t, int64_t rep) {
  if (rep == 1) return t;
  const int64_t b = t.size(0), kv = t.size(1), s = t.size(2), d = t.size(3);
  return t.unsqueeze(2).expand({b, kv, rep, s, d}).reshape({b, kv * rep, s, d});
}
}  // namespace

torch::Tensor causal_attention_math(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                    double scale) {
  TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, "attention expects [batch, heads, seq, dim]");
  TORCH_CHECK(q.size(1) % k.size(1) == 0 && k.size(1) == v.size(1), "q heads ", q.size(1),
              " not a multiple of kv heads ", k.size(1));
  const int64_t rep = q.size(1) / k.size(1), s = q.size(2);
  const auto ct = compute_dtype(q.scalar_type());
  const auto kk = repeat_kv(k, rep), vv = repeat_kv(v, rep);
  auto scores = torch::matmul(q, kk.transpose(-1, -2)).to(ct) * scale;  // [b, h, s, s]
  const auto future = torch::ones({s, s}, torch::TensorOptions().dtype(torch::kBool).device(q.device())).triu(1);
  scores = scores.masked_fill(future, -std::numeric_limits<double>::infinity());
  const auto p = torch::softmax(scores, -1).to(q.scalar_type());
  return torch::matmul(p, vv);
}

GatedAttentionImpl::GatedAttentionImpl(const ModelConfig& cfg, AttentionImpl impl_)
    : num_heads(cfg.num_attention_heads),
      num_kv_heads(cfg.num_kv_heads),
      head_dim(cfg.head_dim),
      rope_dims(cfg.rope_dims),
      rope_theta(cfg.rope_theta),
      impl(impl_) {
  TORCH_CHECK(num_heads > 0 && num_kv_heads > 0 && num_heads % num_kv_heads == 0, "attention heads ", num_heads,
              " / kv heads ", num_kv_heads);
  const int64_t h = cfg.hidden_size;
  q_proj = register_module("q_proj", Projection(h, 2 * num_heads * head_dim));
  k_proj = register_module("k_proj", Projection(h, num_kv_heads * head_dim));
  v_proj = register_module("v_proj", Projection(h, num_kv_heads * head_dim));
  o_proj = register_module("o_proj", Projection(num_heads * head_dim, h));
  q_norm = register_module("q_norm", RMSNorm(head_dim, cfg.rms_norm_eps));
  k_norm = register_module("k_norm", RMSNorm(head_dim, cfg.rms_norm_eps));
}

torch::Tensor GatedAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& positions) {
  TORCH_CHECK(x.dim() == 3, "GatedAttention expects [batch, seq, hidden], got ", x.sizes());
  // The projections on the whole sequence: under tensor parallelism x is this rank's sequence shard, all-gathered
  // for them, and they give this rank's heads (num_heads, num_kv_heads are the local counts).
  const auto in = project_whole_sequence(x, {q_proj->weight, k_proj->weight, v_proj->weight}, tp.get());
  const int64_t b = in[0].size(0), s = in[0].size(1);
  const auto qg = in[0].view({b, s, num_heads, 2 * head_dim});
  const auto gate = qg.narrow(-1, head_dim, head_dim).reshape({b, s, num_heads * head_dim});
  auto q = q_norm(qg.narrow(-1, 0, head_dim)).transpose(1, 2);                   // [b, h, s, d]
  auto k = k_norm(in[1].view({b, s, num_kv_heads, head_dim})).transpose(1, 2);  // [b, kv, s, d]
  const auto v = in[2].view({b, s, num_kv_heads, head_dim}).transpose(1, 2);    // [b, kv, s, d]

  const auto pos =
      positions.defined() ? positions : torch::arange(s, torch::TensorOptions().dtype(torch::kLong).device(x.device()));
  const auto [cos, sin] = rope_cos_sin(pos, rope_dims, rope_theta, q.scalar_type());
  q = apply_partial_rope(q, cos, sin);
  k = apply_partial_rope(k, cos, sin);

  const bool use_sdpa = impl == AttentionImpl::Sdpa || (impl == AttentionImpl::Auto && compat::sdpa_usable(q));
  torch::Tensor o;
  if (use_sdpa) {
    const int64_t rep = num_heads / num_kv_heads;
    o = compat::sdpa_causal(q, repeat_kv(k, rep), repeat_kv(v, rep));
  } else {
    o = causal_attention_math(q, k, v, 1.0 / std::sqrt(static_cast<double>(head_dim)));
  }
  o = o.transpose(1, 2).reshape({b, s, num_heads * head_dim});
  const auto out = o_proj(o * torch::sigmoid(gate));
  return tp ? reduce_scatter_sequence(out, *tp) : out;
}

}  // namespace recipebench::torch_model
