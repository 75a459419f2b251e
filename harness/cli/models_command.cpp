// `recipebench models [--format text|json] [--config config.json]`: the model registry (or one config.json's
// model) with parameter counts.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "catalog/hf_config.h"
#include "catalog/models.h"
#include "commands.h"
#include "util/format.h"
#include "util/json.h"

namespace recipebench::cli {

namespace {

/// The layers column: "60 (45/15)" (Gated DeltaNet / full attention) for the Qwen3.5 family, "61 (3 dense)" for a
/// model whose first layers are dense before its MoE layers, else the count.
std::string layers_text(const ModelConfig& m) {
  const std::string n = std::to_string(m.num_layers);
  if (m.family == ModelFamily::kQwen35)
    return n + " (" + std::to_string(m.num_linear_attention_layers()) + "/" +
           std::to_string(m.num_full_attention_layers()) + ")";
  if (m.num_experts > 0 && m.dense_layers > 0) return n + " (" + std::to_string(m.dense_layers) + " dense)";
  return n;
}

/// The text table, its name column as wide as the longest name (display columns).
void print_model_table(const std::vector<ModelConfig>& models) {
  size_t name_width = 20;
  for (const auto& m : models) name_width = std::max(name_width, display_width(m.name));
  std::printf("%s %-12s %7s %13s %8s %6s %20s %18s\n", pad_right("model", name_width).c_str(), "family", "hidden",
              "layers", "experts", "top-k", "total params", "active params");
  for (const auto& m : models) {
    const ParamCounts c = count_params(m);
    const std::string family = m.family == ModelFamily::kQwen35 ? "qwen3_5" : m.model_type;
    std::printf("%s %-12s %7lld %13s %8lld %6lld %20s %18s\n", pad_right(m.name, name_width).c_str(), family.c_str(),
                static_cast<long long>(m.hidden_size), layers_text(m).c_str(), static_cast<long long>(m.num_experts),
                static_cast<long long>(m.top_k), with_commas(c.total).c_str(), with_commas(c.active).c_str());
  }
}

/// Under a config's table: the embedding (in total, not in active, so a model card's "activated" figure that counts
/// it can be compared), the output layer, and the MTP layers of the checkpoint, not counted.
void print_config_notes(const ModelConfig& m) {
  const ParamCounts c = count_params(m);
  std::printf("%s: embedding %s (in total, not in active; active + embedding = %s), output layer %s%s", m.name.c_str(),
              with_commas(c.embedding).c_str(), with_commas(c.active + c.embedding).c_str(),
              with_commas(c.output_layer).c_str(), m.tie_word_embeddings ? " (tied to the embedding)" : "");
  if (m.mtp_layers > 0) std::printf(", %lld MTP layer(s) not counted", static_cast<long long>(m.mtp_layers));
  std::printf("\n");
}

/// One model as JSON: widths, layers, experts and the counts (with the embedding and output layer apart).
Json model_json(const ModelConfig& m) {
  const ParamCounts c = count_params(m);
  return Json{{"name", m.name},
              {"family", m.family == ModelFamily::kQwen35 ? "qwen3_5" : m.model_type},
              {"hidden_size", m.hidden_size},
              {"layers", m.num_layers},
              {"linear_attention_layers", m.family == ModelFamily::kQwen35 ? m.num_linear_attention_layers() : 0},
              {"full_attention_layers", m.num_full_attention_layers()},
              {"dense_layers", m.family == ModelFamily::kQwen35 ? 0 : m.dense_layers},
              {"experts", m.num_experts},
              {"top_k", m.top_k},
              {"expert_ffn", m.expert_ffn},
              {"vocab_size", m.vocab_size},
              {"mtp_layers_not_counted", m.mtp_layers},
              {"embedding_params", c.embedding},
              {"output_layer_params", c.output_layer},
              {"total_params", c.total},
              {"active_params", c.active}};
}

}  // namespace

void add_models_command(CLI::App& app, std::function<int()>& run) {
  auto* cmd = app.add_subcommand(
      "models", "List the model registry (or a config.json's model): widths, experts and parameter counts");
  auto format = std::make_shared<std::string>("text");
  auto config = std::make_shared<std::string>();
  cmd->add_option("--format", *format, "Output format")->check(CLI::IsMember({"text", "json"}));
  cmd->add_option(
      "--config", *config,
      "A Hugging Face config.json (Qwen3.5 MoE / Qwen3-Next, or counted by formula: Llama, Mistral, Mixtral, Qwen2, "
      "Qwen3, Qwen3-MoE, DeepSeek-V3, GPT-OSS): list its model instead of the registry");
  cmd->callback([&run, format, config] {
    run = [format, config]() -> int {
      std::vector<ModelConfig> models;
      if (config->empty()) {
        models = model_registry();
      } else {
        try {
          models.push_back(load_hf_config(*config));
        } catch (const std::invalid_argument& e) {
          std::cerr << e.what() << "\n";  // located: FILE[:LINE:COL]: error: ... (load_hf_config)
          return kFailed;
        }
      }
      if (*format == "json") {
        Json out = Json::array();
        for (const auto& m : models) out.push_back(model_json(m));
        std::cout << out.dump(2) << "\n";
        return kOk;
      }
      print_model_table(models);
      if (!config->empty()) print_config_notes(models.front());
      std::printf(
          "active: weight matrices a token passes through (top-k + shared experts, router, projections and their\n"
          "biases, conv, output layer), not the embedding, norms or per-head scalars (docs/metrics.md, by family).\n"
          "total: all parameters without the MTP layers.\n");
      return kOk;
    };
  });
}

}  // namespace recipebench::cli
