#include "plan/activation_memory.h"

namespace recipebench {

namespace {
constexpr double kF32 = 4;  // the backend's compute dtype for norms, softmax and the delta rule (FP32)

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
  // Chunked delta rule, per value head (q, k repeated to the value heads), FP32: q, k, v, k*beta, the WY solve's
  // [dv + dk] result, exp-decayed q and k, the chunk-major copies of U0, W, K^T (dk + dk + dv), U per chunk and its
  // stack (2 dv), the decay, A, (K K^T), (Q K^T), intra products ([c] each: 5 c), the state before each chunk and
  // its stack (2 dk dv / c per token).
  per_token += kF32 * hv * (8 * dk + 5 * dv + 5 * c + 2 * dk * dv / c);
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
  // [F each], the expert output before its routing weight; the mean load (top_k x tokens per rank) under EP.
  bytes += Ts * k * (2 * p * h + 4 * p * m.expert_ffn);
  // Shared expert (column-/row-parallel over TP on the gathered sequence) and its gated output on the shard.
  const double f_shared = static_cast<double>(m.shared_expert_ffn) / s.tp;
  bytes += T * (4 * p * f_shared + (s.tp > 1 ? p * h : 0)) + Ts * p * h;
  return bytes;
}

double layer_activation_bytes(const ModelConfig& m, int64_t layer, const MicrobatchShape& s) {
  const double norms = 2 * rms_norm_bytes(shard_tokens(s) * m.hidden_size);
  const double mixer = m.is_full_attention(layer) ? attention_activation_bytes(m, s) : gdn_activation_bytes(m, s);
  return norms + mixer + moe_activation_bytes(m, s);
}

LossMemory loss_memory(const ModelConfig& m, const MicrobatchShape& s) {
  const double T = static_cast<double>(s.tokens), p = s.param_bytes;
  const double v = static_cast<double>(m.vocab_size) / s.tp;
  const double logits = p * v * T, f32 = kF32 * v * T;
  LossMemory l;
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
  return rms_norm_bytes(shard_tokens(s) * m.hidden_size) + s.param_bytes * m.hidden_size * s.tokens;
}

double recompute_input_bytes(const ModelConfig& m, const MicrobatchShape& s) {
  return s.param_bytes * m.hidden_size * shard_tokens(s);
}

}  // namespace recipebench
