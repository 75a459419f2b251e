// Parameter counts of the kTransformer families (docs/metrics.md, "Parameter counts by family"): Llama, Mistral,
// Mixtral, Qwen2, Qwen3, Qwen3-MoE, DeepSeek-V3 and GPT-OSS, each as its Hugging Face modeling file lays it out.
#include "catalog/checked_int.h"
#include "catalog/models.h"

namespace recipebench {

namespace {

/// The active and total weights of one attention block.
struct Block {
  Checked active{0}, total{0};
};

/// Grouped-query attention (LlamaAttention and its kin): q_proj h -> heads x d, k_proj / v_proj h -> kv x d,
/// o_proj heads x d -> h, with biases when the family has them; q/k norms (d each) and sinks (one per head) in total.
Block gqa_attention(const ModelConfig& m) {
  const Checked h = c64(m.hidden_size), d = c64(m.head_dim), two = c64(2);
  const Checked q = c64(m.num_attention_heads) * d, kv = c64(m.num_kv_heads) * d;
  Block b;
  b.active = h * q + two * h * kv + q * h;
  if (m.qkv_bias) b.active = b.active + q + two * kv;
  if (m.o_bias) b.active = b.active + h;
  b.total = b.active;
  if (m.qk_norm) b.total = b.total + two * d;
  if (m.attention_sinks) b.total = b.total + c64(m.num_attention_heads);
  return b;
}

/// Multi-head latent attention (DeepseekV3Attention): q_a_proj h -> q_lora_rank, its RMSNorm, q_b_proj
/// q_lora_rank -> heads x (nope + rope) (or q_proj h -> heads x (nope + rope) when q_lora_rank is 0);
/// kv_a_proj_with_mqa h -> kv_lora_rank + rope, its RMSNorm, kv_b_proj kv_lora_rank -> heads x (nope + v);
/// o_proj heads x v -> h. The two norms are in total only.
Block mla_attention(const ModelConfig& m) {
  const Checked h = c64(m.hidden_size), heads = c64(m.num_attention_heads);
  const Checked qk_head = c64(m.qk_nope_head_dim) + c64(m.qk_rope_head_dim);
  const Checked q_lora = c64(m.q_lora_rank), kv_lora = c64(m.kv_lora_rank);
  const Checked q = m.q_lora_rank > 0 ? h * q_lora + q_lora * heads * qk_head : h * heads * qk_head;
  const Checked kv =
      h * (kv_lora + c64(m.qk_rope_head_dim)) + kv_lora * heads * (c64(m.qk_nope_head_dim) + c64(m.v_head_dim));
  Block b;
  b.active = q + kv + heads * c64(m.v_head_dim) * h;
  b.total = b.active + q_lora + kv_lora;
  return b;
}

/// One SwiGLU MLP of width `ffn` (gate, up, down), with biases (2 x ffn + h) when `bias`.
Checked swiglu(const ModelConfig& m, int64_t ffn, bool bias) {
  const Checked h = c64(m.hidden_size), f = c64(ffn);
  const Checked w = c64(3) * h * f;
  return bias ? w + c64(2) * f + h : w;
}

/// One MoE block: the router (h x experts, its bias), top_k (active) or all (total) routed experts, the shared
/// expert (shared_expert_ffn wide) with its gate when the family has one; DeepSeek's score-correction bias in total.
Block moe_block(const ModelConfig& m) {
  const Checked h = c64(m.hidden_size), experts = c64(m.num_experts);
  Checked router = h * experts;
  if (m.router_bias) router = router + experts;
  Checked shared = m.shared_expert_ffn > 0 ? swiglu(m, m.shared_expert_ffn, false) : c64(0);
  if (m.shared_expert_ffn > 0 && m.shared_expert_gate) shared = shared + h;
  const Checked expert = swiglu(m, m.expert_ffn, m.expert_bias);
  Block b;
  b.active = c64(m.top_k) * expert + shared + router;
  b.total = experts * expert + shared + router;
  if (m.router_score_bias) b.total = b.total + experts;
  return b;
}

}  // namespace

ParamCounts count_transformer_params(const ModelConfig& m) {
  const Checked h = c64(m.hidden_size), vocab = c64(m.vocab_size), two = c64(2);
  ParamCounts c;
  c.embedding = (vocab * h).v;
  c.output_layer = (h * vocab).v;  // a token passes through it also when it is tied to the embedding
  const Block attention = m.attention == AttentionKind::kMla ? mla_attention(m) : gqa_attention(m);
  c.attention_layer = attention.active.v;
  c.attention_layer_total = attention.total.v;
  const Checked dense = m.intermediate_size > 0 ? swiglu(m, m.intermediate_size, m.mlp_bias) : c64(0);
  c.dense_mlp_layer = dense.v;
  const Block moe = m.num_experts > 0 ? moe_block(m) : Block{};
  c.moe_layer_active = moe.active.v;
  c.moe_layer_total = moe.total.v;

  const Checked layers = c64(m.num_layers), n_dense = c64(m.dense_layers);
  const Checked n_moe = c64(m.num_layers - m.dense_layers);
  c.active = (c64(c.output_layer) + layers * attention.active + n_dense * dense + n_moe * moe.active).v;
  const Checked layer_norms = two * h;  // input and post-attention RMSNorm
  const Checked output = m.tie_word_embeddings ? c64(0) : c64(c.output_layer);
  c.total = (c64(c.embedding) + output + h /* final norm */ + layers * (attention.total + layer_norms) +
             n_dense * dense + n_moe * moe.total)
                .v;
  return c;
}

}  // namespace recipebench
