// Gated (softmax) attention of the Qwen3.5 full-attention layers (docs/model.md).
#pragma once

#include "catalog/models.h"
#include "model/basic_modules.h"
#include "model/options.h"
#include "model/rms_norm.h"

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <utility>

namespace recipebench::torch_model {

struct TensorParallel;  // model/tensor_parallel.h

/// RoPE tables for the rotate-half convention (RoFormer, arXiv 2104.09864; Hugging Face `rotate_half`):
/// angle[p, j] = p * theta^(-2j / rope_dims) for j < rope_dims / 2, laid out as cat(angle, angle).
/// Angles are computed in float64, then cos / sin cast to `dtype`.
/// positions: int64 [seq] or [batch, seq] -> (cos, sin), each [seq, rope_dims] or [batch, seq, rope_dims].
std::pair<torch::Tensor, torch::Tensor> rope_cos_sin(const torch::Tensor& positions, int64_t rope_dims, double theta,
                                                     c10::ScalarType dtype);

/// Partial rotate-half RoPE on the first rope_dims = cos.size(-1) entries of the last dim; the rest pass through:
///   x_rot * cos + rotate_half(x_rot) * sin, rotate_half(x1, x2) = (-x2, x1).
/// x: [batch, heads, seq, head_dim]; cos, sin: [seq, rope_dims] or [batch, seq, rope_dims]. Returns x's shape.
torch::Tensor apply_partial_rope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

/// Causal softmax attention with grouped-query heads, explicit form (any device and dtype):
///   out = softmax(q k^T * scale + causal mask) v, softmax in fp32 (fp64 for fp64 inputs).
/// q: [batch, q_heads, seq, d]; k, v: [batch, kv_heads, seq, d], q_heads a multiple of kv_heads; query head h reads
/// kv head h / (q_heads / kv_heads) (Hugging Face repeat_kv). Returns [batch, q_heads, seq, d] in q's dtype.
torch::Tensor causal_attention_math(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                    double scale);

/// Gated attention (Hugging Face Qwen3_5MoeAttention; output gate from "Gated Attention for LLMs", arXiv 2505.06708):
///   [query | gate] per head = q_proj(x); query = q_norm(query); key = k_norm(k_proj(x)); value = v_proj(x);
///   partial RoPE (cfg.rope_dims of cfg.head_dim, theta cfg.rope_theta) on query and key;
///   o = causal softmax attention (scale 1/sqrt(head_dim), GQA); out = o_proj(o * sigmoid(gate)).
/// Parameters (Hugging Face names under "self_attn."), no biases:
///   q_proj.weight [2 * heads * head_dim, hidden]   (per head: head_dim query rows, then head_dim gate rows)
///   k_proj.weight, v_proj.weight [kv_heads * head_dim, hidden]; o_proj.weight [hidden, heads * head_dim]
///   q_norm.weight, k_norm.weight [head_dim] (zero-centred RMSNorm)
struct GatedAttentionImpl : torch::nn::Module {
  explicit GatedAttentionImpl(const ModelConfig& cfg, AttentionImpl impl = AttentionImpl::Auto);

  /// x: [batch, seq, hidden]; positions: int64 [seq] or [batch, seq], default 0..seq-1.
  /// Returns [batch, seq, hidden] in x's dtype.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& positions = {});

  Projection q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};
  RMSNorm q_norm{nullptr}, k_norm{nullptr};
  int64_t num_heads, num_kv_heads, head_dim, rope_dims;
  double rope_theta;
  AttentionImpl impl;
  /// Tensor parallelism with sequence parallelism (set by shard_tensor_parallel, model/tensor_parallel.h); null
  /// without. With it the input and output are this rank's sequence shard [batch, seq / TP, hidden].
  std::shared_ptr<TensorParallel> tp;
};
TORCH_MODULE(GatedAttention);

}  // namespace recipebench::torch_model
