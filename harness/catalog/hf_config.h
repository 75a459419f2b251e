// Model configs from a Hugging Face config.json: built and counted (Qwen3.5 MoE: model_type qwen3_5_moe or
// qwen3_5_moe_text; Qwen3-Next: qwen3_next), or counted by formula (llama, mistral, mixtral, qwen2, qwen3, qwen3_moe,
// deepseek_v3, gpt_oss: ModelFamily::kTransformer). Other families are refused by name.
#pragma once

#include <string>
#include <vector>

#include "catalog/models.h"
#include "util/json.h"

namespace recipebench {

/// The model_type values the reader builds: qwen3_5_moe (the multimodal form, its text model under text_config),
/// qwen3_5_moe_text and qwen3_next (the text-only form).
const std::vector<std::string>& hf_model_types();

/// The model_type values read as ModelFamily::kTransformer, counted by formula but not built: llama, mistral,
/// mixtral, qwen2, qwen3, qwen3_moe, deepseek_v3, gpt_oss (docs/hf-config-fields.md, "Other families").
const std::vector<std::string>& hf_counted_model_types();

/// Builds a ModelConfig from a Hugging Face config.json. model_type is checked first: a family in neither
/// hf_model_types() nor hf_counted_model_types(), or no model_type, is refused by name (listing both) before any other
/// field is looked at; a counted family is read as its family's fields say (catalog/hf_families.h). For a Qwen3.5 MoE
/// model: the
/// multimodal form (with a "text_config" object) and the text-only form are both read. Fields read: vocab_size,
/// hidden_size, num_hidden_layers, num_attention_heads, num_key_value_heads, head_dim, rms_norm_eps, rope_theta and
/// partial_rotary_factor (each beside the widths or under rope_parameters; both places must agree),
/// linear_num_key_heads, linear_num_value_heads, linear_key_head_dim, linear_value_head_dim, linear_conv_kernel_dim,
/// num_experts, num_experts_per_tok, moe_intermediate_size, shared_expert_intermediate_size, mtp_num_hidden_layers,
/// and layer_types or full_attention_interval (both given: they must agree).
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

/// Reads `path` (a regular file of at most 16 MiB) and builds its model as model_config_from_hf does, named by
/// model_name_from_hf. Throws std::invalid_argument for an unreadable file or invalid JSON (with line and column;
/// a duplicate key or a number beyond a double is invalid too, parse_json_text),
/// and for a wrong or missing field located in the file: `config.json:15:17: error: model_type: 'qwen3_moe',
/// expected qwen3_5_moe, ...` (a missing field at the object that should hold it).
ModelConfig load_hf_config(const std::string& path);

}  // namespace recipebench
