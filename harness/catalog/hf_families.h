// The config.json families recipebench counts by formula but does not build (ModelFamily::kTransformer): Llama,
// Mistral, Mixtral, Qwen2, Qwen3, Qwen3-MoE, DeepSeek-V3, GPT-OSS (docs/hf-config-fields.md). Internal to the
// catalog layer: hf_config.h is the interface.
#pragma once

#include <string>
#include <vector>

#include "catalog/models.h"
#include "util/json.h"

namespace recipebench::hf {

/// The model_type values read_transformer_model reads: llama, mistral, mixtral, qwen2, qwen3, qwen3_moe,
/// deepseek_v3, gpt_oss.
const std::vector<std::string>& transformer_model_types();

/// The kTransformer ModelConfig of a config.json whose model_type is one of transformer_model_types() (checked by
/// the caller), named `name`. Every field of the config is read (a width or count), checked against the one value
/// the formula counts (Qwen3-MoE mlp_only_layers [], DeepSeek-V3 moe_layer_freq 1, ...), or listed as not changing
/// the count; any other field is refused. Throws FieldFault (catalog/hf_reader.h) for a missing, mistyped or unknown
/// field, or widths that do not fit together (heads not a multiple of KV heads, top-k above the experts).
ModelConfig read_transformer_model(const Json& config, const std::string& name);

}  // namespace recipebench::hf
