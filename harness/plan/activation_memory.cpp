#include "plan/activation_memory.h"

#include <algorithm>

namespace recipebench {

namespace {

double shard_tokens(const MicrobatchShape& s) { return static_cast<double>(s.tokens) / s.tp; }

/// Zero-centred RMSNorm on x: keeps the FP32 copy of x and the normalised FP32 product (8 bytes per element).
double rms_norm_bytes(double elements) { return 2 * kF32 * elements; }
}  // namespace

double gdn_activation_bytes(const ModelConfig& m, const MicrobatchShape& s) {
  const double T = static_cast<double>(s.tokens), p = s.param_bytes;
  const double kd = static_cast<double>(m.linear_key_dim()) / s.tp,
               vd = static_cast<double>(m.linear_value_dim()) / s.tp;
  const double hv = static_cast<double>(m.linear_num_value_heads) / s.tp, conv = 2 * kd + vd;
  const double dk = static_cast<double>(m.linear_key_head_dim), dv = static_cast<double>(m.linear_value_head_dim);
  const double c = static_cast<double>(m.gdn_chunk_size);
  double per_token = p * m.hidden_size;  // the (gathered) input, kept by the four input projections
  per_token += 2 * p * conv;             // in_proj_qkv's output (conv1d input) and the conv output (SiLU input)
  per_token += 2 * kF32 * kd;            // FP32 q and k before their L2 normalisation
  if (s.gdn_kernels()) {
    // GDN CUDA kernels (cuda/gdn_autograd.cpp): their inputs, BF16 q and k at the key heads, the contiguous BF16
    // copy of v, and beta in FP32; since kGdnSaved also the forward's intermediates (gdn::saved_bytes): per value
    // head the FP32 cumulative gate, T [c], W [dk] and v_new [dv] in BF16, and the BF16 [dk x dv] state of each
    // chunk (before kGdnSaved the backward recomputed them).
    per_token += 2 * (2 * kd + vd) + kF32 * hv;
    if (s.gdn_saved()) per_token += hv * (kF32 + 2 * (c + dk + dv) + 2 * dk * dv / c);
  } else {
    // Chunked delta rule in libtorch ops, per value head (q, k repeated to the value heads), FP32: q, k, v, k*beta,
    // the WY solve's [dv + dk] result, exp-decayed q and k, the chunk-major copies of U0, W, K^T (dk + dk + dv), U
    // per chunk and its stack (2 dv), the decay, A, (K K^T), (Q K^T), intra products ([c] each: 5 c), the state
    // before each chunk and its stack (2 dk dv / c per token).
    per_token += kF32 * hv * (8 * dk + 5 * dv + 5 * c + 2 * dk * dv / c);
  }
  per_token += (4 * kF32 + 2 * p) * vd;  // gated RMSNorm: FP32 x, z, silu(z), normed (FP32 and dtype), output
  per_token += 10 * kF32 * hv;           // beta, g, softplus input: per value head scalars
  return per_token * T;
}

double attention_activation_bytes(const ModelConfig& m, const MicrobatchShape& s) {
  const double T = static_cast<double>(s.tokens), p = s.param_bytes;
  const double nh = static_cast<double>(m.num_attention_heads) / s.tp, hd = static_cast<double>(m.head_dim);
  const double q_elems = nh * hd, kv_elems = static_cast<double>(m.num_kv_heads) / s.tp * hd;
  double per_token = p * m.hidden_size;             // the (gathered) input of q/k/v_proj
  per_token += rms_norm_bytes(q_elems + kv_elems);  // q_norm, k_norm (FP32)
  // q and k normed (dtype) and rotated, q/k/v repeated to the query heads for attention, its output, the output
  // transposed, sigmoid(gate) and the gated product (o_proj input): 9 tensors of [nh x hd] plus the RoPE halves.
  per_token += p * (9 * q_elems + 2 * kv_elems) + p * nh * m.rope_dims;
  if (!s.sdpa) per_token += (kF32 + p) * nh * T;  // explicit softmax: FP32 probabilities and their cast, [seq, seq]
  return per_token * T;
}

double moe_activation_bytes(const ModelConfig& m, const MicrobatchShape& s) {
  const double T = static_cast<double>(s.tokens), Ts = shard_tokens(s), p = s.param_bytes;
  const double h = static_cast<double>(m.hidden_size), k = static_cast<double>(m.top_k);
  double bytes = Ts * (p * h + kF32 * m.num_experts);  // the normed shard (router, gates input), FP32 router softmax
  // Routed experts, per (token, slot) assignment: the dispatched row, gate/up output [2 F], SiLU output and product
  // [F each], the expert output before its routing weight; the mean load (top_k x tokens per rank) under EP. With
  // the fixed-capacity dispatcher the experts run on (and keep) every row of the P blocks of C received, padding
  // included: the experts' input [h] and their gate/up, SiLU and product rows on ep_capacity_rows rows.
  const double rows = Ts * k, expert_rows = s.ep_capacity_rows > 0 ? static_cast<double>(s.ep_capacity_rows) : rows;
  bytes += expert_rows * (p * h + 4 * p * m.expert_ffn) + rows * p * h;
  // Shared expert (column-/row-parallel over TP on the gathered sequence) and its gated output on the shard.
  const double f_shared = static_cast<double>(m.shared_expert_ffn) / s.tp;
  bytes += T * (4 * p * f_shared + (s.tp > 1 ? p * h : 0)) + Ts * p * h;
  return bytes;
}

namespace {

/// Per token, before / TP: the attention mixer's term of transformer_layer_activation_bytes.
double transformer_attention_per_token(const ModelConfig& m, double p) {
  const double h = static_cast<double>(m.hidden_size), heads = static_cast<double>(m.num_attention_heads);
  const double lse = kF32 * heads;
  if (m.attention == AttentionKind::kMla) {
    const AttentionHeadDims d = attention_head_dims(m);
    return p * h + 2 * p * m.q_lora_rank + p * (2 * m.kv_lora_rank + m.qk_rope_head_dim) +
           p * heads * (2 * d.qk + 2 * d.v) + lse;
  }
  const double q = heads * m.head_dim, kv = static_cast<double>(m.num_kv_heads) * m.head_dim;
  return p * h + p * (q + 2 * kv) + p * q + lse;
}

}  // namespace

double transformer_layer_activation_bytes(const ModelConfig& m, int64_t layer, const MicrobatchShape& s) {
  const double p = s.param_bytes, h = static_cast<double>(m.hidden_size);
  double per_token = 2 * p * h + transformer_attention_per_token(m, p);
  if (layer < m.dense_layers || m.num_experts == 0)
    per_token += p * h + 3 * p * m.intermediate_size;
  else
    per_token += p * h + kF32 * m.num_experts + m.top_k * (p * h + 3 * p * m.expert_ffn) +
                 3 * p * m.shared_expert_ffn;
  return per_token * shard_tokens(s);
}

double attention_core_activation_bytes(const ModelConfig& m, int64_t layer, const MicrobatchShape& s) {
  const double p = s.param_bytes, heads = static_cast<double>(m.num_attention_heads) / s.tp;
  if (m.family == ModelFamily::kTransformer) {
    const double d_v = m.attention == AttentionKind::kMla ? static_cast<double>(attention_head_dims(m).v)
                                                          : static_cast<double>(m.head_dim);
    return (p * heads * d_v + kF32 * heads) * static_cast<double>(s.tokens);
  }
  if (!m.is_full_attention(layer)) return 0;
  const double T = static_cast<double>(s.tokens);
  double per_token = 4 * p * heads * static_cast<double>(m.head_dim);
  if (!s.sdpa) per_token += (kF32 + p) * heads * T;
  return per_token * T;
}

bool recompute_module_priced(ModelFamily family, RecomputeModule r) {
  if (r == RecomputeModule::kCoreAttn) return true;
  return family == ModelFamily::kTransformer && (r == RecomputeModule::kLayernorm || r == RecomputeModule::kMoeAct);
}

double selective_recompute_freed_bytes(const ModelConfig& m, int64_t layer, const MicrobatchShape& s,
                                       const std::vector<RecomputeModule>& modules) {
  const bool moe_layer = m.family == ModelFamily::kTransformer && m.num_experts > 0 && layer >= m.dense_layers;
  const double p = s.param_bytes, h = static_cast<double>(m.hidden_size);
  double freed = 0;
  for (RecomputeModule r : modules) {
    if (r == RecomputeModule::kCoreAttn) freed += attention_core_activation_bytes(m, layer, s);
    if (r == RecomputeModule::kLayernorm && moe_layer) freed += p * h * shard_tokens(s);
    if (r == RecomputeModule::kMoeAct && moe_layer) freed += m.top_k * p * m.expert_ffn * shard_tokens(s);
  }
  return freed;
}

double layer_activation_bytes(const ModelConfig& m, int64_t layer, const MicrobatchShape& s) {
  if (m.family == ModelFamily::kTransformer) return transformer_layer_activation_bytes(m, layer, s);
  const double norms = 2 * rms_norm_bytes(shard_tokens(s) * m.hidden_size);
  const double mixer = m.is_full_attention(layer) ? attention_activation_bytes(m, s) : gdn_activation_bytes(m, s);
  return norms + mixer + moe_activation_bytes(m, s);
}

namespace {

/// model/chunked_lm_loss.cpp on N = T tokens (the gathered sequence), vocabulary slice V' = V / TP, c tokens per
/// chunk. Forward: the input [N x h] and d hidden [N x h] (parameters' dtype), d weight [V' x h] (FP32), and in the
/// chunk whose gradient is formed: its FP32 probabilities turned gradient [c x V'] (4 c V'), their cast to the
/// dtype (p c V') and the chunk's weight-gradient product [V' x h] (p V' h) added into d weight; before it the
/// chunk's logits in the dtype and their FP32 copy (p + 4) c V'. With FP32 parameters (p = 4) the casts are no
/// copies and d weight is accumulated in place. Backward: the saved d hidden and d weight, d hidden scaled in FP32
/// (a transient copy) into a new tensor in the dtype, then d weight cast to the dtype. With the fused kernels
/// (s.fused_loss()) the chunk holds only its logits in the dtype, overwritten by their gradient (p c V'), and then
/// the weight-gradient product (p V' h).
LossMemory chunked_loss_memory(const ModelConfig& m, const MicrobatchShape& s) {
  const double N = static_cast<double>(s.tokens), p = s.param_bytes, h = static_cast<double>(m.hidden_size);
  const double v = static_cast<double>(m.vocab_size) / s.tp;
  const double c = static_cast<double>(std::min<int64_t>(kLmLossChunkTokens, s.tokens));
  const bool f32 = p == kF32;
  const double held = 2 * p * N * h + kF32 * v * h;
  const bool fused = s.fused_loss();
  const double logits = f32 ? kF32 * c * v : fused ? p * c * v : (p + kF32) * c * v;
  // The chunk's BF16 weight-gradient product, added into d weight after it (none when cuBLAS adds it in place).
  const double weight_product = s.loss_weight_gemm() ? 0 : p * v * h;
  const double gradient = f32 ? kF32 * c * v : fused ? p * c * v + weight_product : (kF32 + p) * c * v + weight_product;
  LossMemory l;
  l.forward = held + std::max(logits, gradient);
  l.forward_term = s.loss_weight_gemm() ? "loss forward (d weight in FP32, d hidden, one chunk's logits)"
                   : fused ? "loss forward (d weight in FP32, d hidden, one chunk's logits and its weight gradient)"
                           : "loss forward (d weight in FP32, d hidden, one chunk's logits and FP32 probabilities)";
  l.backward_term = "loss backward (the forward's d hidden and d weight scaled)";
  l.backward = f32 ? p * N * h + kF32 * v * h : 2 * p * N * h + kF32 * v * h + std::max(kF32 * N * h, p * v * h);
  return l;
}

}  // namespace

LossMemory loss_memory(const ModelConfig& m, const MicrobatchShape& s) {
  if (s.impl != TorchMemoryImpl::kFullLogits) return chunked_loss_memory(m, s);
  const double T = static_cast<double>(s.tokens), p = s.param_bytes;
  const double v = static_cast<double>(m.vocab_size) / s.tp;
  const double logits = p * v * T, f32 = kF32 * v * T;
  LossMemory l;
  l.forward_term = "loss forward (logits and their FP32 copies)";
  l.backward_term = "loss backward (FP32 softmax gradients)";
  if (s.tp == 1) {
    // sft_loss_sum: logits (dtype), their FP32 copy and log_softmax's FP32 output at once; backward: the saved
    // log-probabilities, gather's FP32 gradient and log_softmax's FP32 input gradient.
    l.forward = logits + (p == kF32 ? 0 : f32) + f32;
    l.backward = 3 * f32;
  } else {
    // VocabParallelCrossEntropy: logits (a contiguous copy when rows > 1), FP32 copy, shifted, exp, softmax;
    // backward: the saved softmax, its product with the gradient, the gradient cast to the dtype.
    l.forward = logits * (s.rows > 1 ? 2 : 1) + 4 * f32;
    l.backward = 2 * f32 + logits;
  }
  return l;
}

double output_layer_activation_bytes(const ModelConfig& m, const MicrobatchShape& s) {
  const double lm_head_input = s.impl == TorchMemoryImpl::kFullLogits ? s.param_bytes * m.hidden_size * s.tokens : 0;
  return rms_norm_bytes(shard_tokens(s) * m.hidden_size) + lm_head_input;
}

double recompute_input_bytes(const ModelConfig& m, const MicrobatchShape& s) {
  return s.param_bytes * m.hidden_size * shard_tokens(s);
}

}  // namespace recipebench
