#include "catalog/models.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "catalog/checked_int.h"
#include "metrics/metrics.h"
#include "util/format.h"

namespace recipebench {

int64_t ModelConfig::num_full_attention_layers() const {
  // Layers i < num_layers with (i + 1) % interval == 0: one per whole interval (no loop over the layers).
  return full_attention_interval > 0 && num_layers > 0 ? num_layers / full_attention_interval : 0;
}

ModelConfig ModelConfig::with_layers(int64_t layers) const {
  ModelConfig m = *this;
  m.num_layers = layers;
  m.dense_layers = num_experts == 0 ? layers : std::min(dense_layers, layers);
  return m;
}

std::string family_label(const ModelConfig& m) {
  switch (m.family) {
    case ModelFamily::kQwen35:
      return "Qwen3.5 MoE / Qwen3-Next";
    case ModelFamily::kTransformer:
      return m.model_type.empty() ? "transformer" : m.model_type;
    case ModelFamily::kStated:
      return "stated counts";
  }
  return "?";
}

std::string family_clause(const ModelConfig& m) {
  return m.family == ModelFamily::kStated ? "is known by its stated counts only" : "is a " + family_label(m) + " model";
}

AttentionHeadDims attention_head_dims(const ModelConfig& m) {
  const bool mla = m.family == ModelFamily::kTransformer && m.attention == AttentionKind::kMla;
  AttentionHeadDims d;
  d.qk = mla ? static_cast<double>(m.qk_nope_head_dim + m.qk_rope_head_dim) : static_cast<double>(m.head_dim);
  d.v = mla ? static_cast<double>(m.v_head_dim) : static_cast<double>(m.head_dim);
  return d;
}

double attention_flops_per_token(const ModelConfig& m, int64_t row_tokens) {
  if (!m.architecture_known()) return 0;
  const AttentionHeadDims d = attention_head_dims(m);
  return attention_flops_per_token(static_cast<double>(m.num_full_attention_layers()),
                                   static_cast<double>(m.num_attention_heads), d.qk, d.v, static_cast<double>(row_tokens));
}

ParamCounts count_params(const ModelConfig& m) {
  if (m.family == ModelFamily::kTransformer) return count_transformer_params(m);
  if (m.family == ModelFamily::kStated) {
    ParamCounts c;
    c.active = m.stated_active;
    c.total = m.stated_total;
    return c;
  }
  const Checked h = c64(m.hidden_size), vocab = c64(m.vocab_size), two = c64(2), three = c64(3);
  ParamCounts c;
  c.embedding = (vocab * h).v;
  c.output_layer = (h * vocab).v;  // untied

  // Gated attention: q_proj yields query and gate (2 x heads x head_dim), k/v_proj, o_proj.
  const Checked heads = c64(m.num_attention_heads), head_dim = c64(m.head_dim);
  const Checked q_out = two * heads * head_dim;
  const Checked kv_out = c64(m.num_kv_heads) * head_dim;
  c.attention_layer = (h * q_out + two * h * kv_out + heads * head_dim * h).v;
  const Checked attention_norms = two * head_dim;  // q_norm, k_norm
  c.attention_layer_total = (c64(c.attention_layer) + attention_norms).v;

  // Gated DeltaNet: in_proj_qkv, in_proj_z, in_proj_b, in_proj_a, depthwise conv1d (no bias), out_proj.
  const Checked kd = c64(m.linear_num_key_heads) * c64(m.linear_key_head_dim);
  const Checked vh = c64(m.linear_num_value_heads);
  const Checked vd = vh * c64(m.linear_value_head_dim);
  const Checked conv_channels = two * kd + vd;
  c.gdn_layer = (h * conv_channels + h * vd + two * h * vh + conv_channels * c64(m.linear_conv_kernel) + vd * h).v;
  const Checked gdn_scalars = two * vh + c64(m.linear_value_head_dim);  // A_log, dt_bias, gated RMSNorm weight

  // MoE: router, routed SwiGLU experts (gate, up, down), shared SwiGLU expert and its sigmoid gate.
  const Checked expert = three * h * c64(m.expert_ffn);
  const Checked shared = three * h * c64(m.shared_expert_ffn) + h;
  const Checked router = h * c64(m.num_experts);
  c.moe_layer_active = (c64(m.top_k) * expert + shared + router).v;
  c.moe_layer_total = (c64(m.num_experts) * expert + shared + router).v;

  const Checked n_attn = c64(m.num_full_attention_layers()), n_gdn = c64(m.num_linear_attention_layers());
  const Checked layers = c64(m.num_layers);
  c.active = (c64(c.output_layer) + layers * c64(c.moe_layer_active) + n_attn * c64(c.attention_layer) +
              n_gdn * c64(c.gdn_layer))
                 .v;
  const Checked layer_norms = two * h;  // input and post-attention RMSNorm
  c.total =
      (c64(c.embedding) + c64(c.output_layer) + h /* final norm */ + layers * (c64(c.moe_layer_total) + layer_norms) +
       n_attn * (c64(c.attention_layer) + attention_norms) + n_gdn * (c64(c.gdn_layer) + gdn_scalars))
          .v;
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

}  // namespace

const std::vector<ModelConfig>& model_registry() {
  static const std::vector<ModelConfig> registry = make_registry();
  return registry;
}

const ModelConfig* find_model(const std::string& name) {
  const std::string key = ascii_lower(name);
  for (const auto& m : model_registry())
    if (ascii_lower(m.name) == key) return &m;
  return nullptr;
}

}  // namespace recipebench
