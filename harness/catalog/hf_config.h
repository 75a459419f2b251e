// Model configs from a Hugging Face config.json (Qwen3.5 MoE: model_type qwen3_5_moe or qwen3_5_moe_text).
#pragma once

#include <string>

#include "catalog/models.h"
#include "util/json.h"

namespace recipebench {

/// Builds a ModelConfig from a Hugging Face config.json of a Qwen3.5 MoE model. The multimodal form (with a
/// "text_config" object) and the text-only form are both read. Fields read: vocab_size, hidden_size,
/// num_hidden_layers, num_attention_heads, num_key_value_heads, head_dim, rms_norm_eps, rope_theta (or
/// rope_parameters.rope_theta), partial_rotary_factor, linear_num_key_heads, linear_num_value_heads,
/// linear_key_head_dim, linear_value_head_dim, linear_conv_kernel_dim, num_experts, num_experts_per_tok,
/// moe_intermediate_size, shared_expert_intermediate_size, and layer_types or full_attention_interval.
/// Fields that change the model are read, or refused unless they hold the value recipebench builds
/// (mlp_only_layers [], decoder_sparse_step 1, attention_bias false, ...); fields that do not change it are
/// listed as irrelevant; any other field is refused (docs/hf-config-fields.md has the table).
/// `name` labels the model (model_name_from_hf). Throws std::invalid_argument naming the file, the field
/// (e.g. "text_config.num_experts"), what was found and what was expected, for a missing or mistyped field,
/// a layer_types pattern other than "full_attention every N-th layer", or unusable values.
ModelConfig model_config_from_hf(const Json& config, const std::string& file, const std::string& name);

/// The name of a config's model: architectures[0] (e.g. "Qwen3_5MoeForCausalLM"), else model_type, never the
/// file's folder.
std::string model_name_from_hf(const Json& config);

/// Reads `path` (a regular file of at most 16 MiB) and calls model_config_from_hf, named by model_name_from_hf.
/// Throws std::invalid_argument as above, also for an unreadable file or invalid JSON (with line and column).
ModelConfig load_hf_config(const std::string& path);

}  // namespace recipebench
