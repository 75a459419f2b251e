#include "catalog/models.h"

#include <algorithm>
#include <cctype>

namespace recipebench {

int64_t ModelConfig::num_full_attention_layers() const {
  int64_t n = 0;
  for (int64_t i = 0; i < num_layers; ++i) n += is_full_attention(i) ? 1 : 0;
  return n;
}

ModelConfig ModelConfig::with_layers(int64_t layers) const {
  ModelConfig m = *this;
  m.num_layers = layers;
  return m;
}

ParamCounts count_params(const ModelConfig& m) {
  const int64_t h = m.hidden_size;
  ParamCounts c;
  c.embedding = m.vocab_size * h;
  c.output_layer = h * m.vocab_size;  // untied

  // Gated attention: q_proj yields query and gate (2 x heads x head_dim), k/v_proj, o_proj.
  const int64_t q_out = 2 * m.num_attention_heads * m.head_dim;
  const int64_t kv_out = m.num_kv_heads * m.head_dim;
  c.attention_layer = h * q_out + 2 * h * kv_out + m.num_attention_heads * m.head_dim * h;
  const int64_t attention_norms = 2 * m.head_dim;  // q_norm, k_norm

  // Gated DeltaNet: in_proj_qkv, in_proj_z, in_proj_b, in_proj_a, depthwise conv1d (no bias), out_proj.
  const int64_t kd = m.linear_key_dim(), vd = m.linear_value_dim(), vh = m.linear_num_value_heads;
  const int64_t conv_channels = 2 * kd + vd;
  c.gdn_layer = h * conv_channels + h * vd + 2 * h * vh + conv_channels * m.linear_conv_kernel + vd * h;
  const int64_t gdn_scalars = 2 * vh + m.linear_value_head_dim;  // A_log, dt_bias, gated RMSNorm weight

  // MoE: router, routed SwiGLU experts (gate, up, down), shared SwiGLU expert and its sigmoid gate.
  const int64_t expert = 3 * h * m.expert_ffn;
  const int64_t shared = 3 * h * m.shared_expert_ffn + h;
  const int64_t router = h * m.num_experts;
  c.moe_layer_active = m.top_k * expert + shared + router;
  c.moe_layer_total = m.num_experts * expert + shared + router;

  const int64_t n_attn = m.num_full_attention_layers();
  const int64_t n_gdn = m.num_linear_attention_layers();
  c.active = c.output_layer + m.num_layers * c.moe_layer_active + n_attn * c.attention_layer + n_gdn * c.gdn_layer;
  const int64_t layer_norms = 2 * h;  // input and post-attention RMSNorm
  c.total = c.embedding + c.output_layer + h /* final norm */ + m.num_layers * (c.moe_layer_total + layer_norms) +
            n_attn * (c.attention_layer + attention_norms) + n_gdn * (c.gdn_layer + gdn_scalars);
  return c;
}

namespace {

ModelConfig qwen35(const char* name, int64_t hidden, int64_t layers, int64_t heads, int64_t kv_heads,
                   int64_t gdn_k_heads, int64_t gdn_v_heads, int64_t experts, int64_t top_k, int64_t ffn) {
  ModelConfig m;
  m.name = name;
  m.hidden_size = hidden;
  m.num_layers = layers;
  m.num_attention_heads = heads;
  m.num_kv_heads = kv_heads;
  m.linear_num_key_heads = gdn_k_heads;
  m.linear_num_value_heads = gdn_v_heads;
  m.num_experts = experts;
  m.top_k = top_k;
  m.expert_ffn = ffn;
  m.shared_expert_ffn = ffn;
  return m;
}

std::vector<ModelConfig> make_registry() {
  std::vector<ModelConfig> r;
  // Widths from docs/model.md (Hugging Face config.json of each Qwen3.5 MoE checkpoint).
  r.push_back(qwen35("Qwen3.5-397B-A17B", 4096, 60, 32, 2, 16, 64, 512, 10, 1024));
  r.push_back(qwen35("Qwen3.5-122B-A10B", 3072, 48, 32, 2, 16, 64, 256, 8, 1024));
  r.push_back(qwen35("Qwen3.5-35B-A3B", 2048, 40, 16, 2, 16, 32, 256, 8, 512));
  // Tiny member with the same structure for CPU tests and the embedded default recipe.
  ModelConfig t = qwen35("Qwen3.5-tiny", 64, 4, 4, 2, 2, 4, 8, 2, 32);
  t.vocab_size = 512;
  t.head_dim = 16;
  t.rope_dims = 8;
  t.linear_key_head_dim = 16;
  t.linear_value_head_dim = 16;
  t.gdn_chunk_size = 16;
  t.mtp_layers = 0;
  r.push_back(t);
  return r;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return s;
}

}  // namespace

const std::vector<ModelConfig>& model_registry() {
  static const std::vector<ModelConfig> registry = make_registry();
  return registry;
}

const ModelConfig* find_model(const std::string& name) {
  const std::string key = lower(name);
  for (const auto& m : model_registry())
    if (lower(m.name) == key) return &m;
  return nullptr;
}

}  // namespace recipebench
