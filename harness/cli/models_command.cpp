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

/// The text table, its name column as wide as the longest name (display columns).
void print_model_table(const std::vector<ModelConfig>& models) {
  size_t name_width = 20;
  for (const auto& m : models) name_width = std::max(name_width, display_width(m.name));
  std::printf("%s %7s %12s %8s %6s %20s %18s\n", pad_right("model", name_width).c_str(), "hidden", "layers(l/f)",
              "experts", "top-k", "total params", "active params");
  for (const auto& m : models) {
    const ParamCounts c = count_params(m);
    const std::string layers = std::to_string(m.num_layers) + " (" + std::to_string(m.num_linear_attention_layers()) +
                               "/" + std::to_string(m.num_full_attention_layers()) + ")";
    std::printf("%s %7lld %12s %8lld %6lld %20s %18s\n", pad_right(m.name, name_width).c_str(),
                static_cast<long long>(m.hidden_size), layers.c_str(), static_cast<long long>(m.num_experts),
                static_cast<long long>(m.top_k), with_commas(c.total).c_str(), with_commas(c.active).c_str());
  }
}

}  // namespace

void add_models_command(CLI::App& app, std::function<int()>& run) {
  auto* cmd = app.add_subcommand(
      "models", "List the model registry (or a config.json's model): widths, experts and parameter counts");
  auto format = std::make_shared<std::string>("text");
  auto config = std::make_shared<std::string>();
  cmd->add_option("--format", *format, "Output format")->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--config", *config,
                  "A Hugging Face config.json (Qwen3.5 MoE / Qwen3-Next): list its model instead of the registry");
  cmd->callback([&run, format, config] {
    run = [format, config]() -> int {
      std::vector<ModelConfig> models;
      if (config->empty()) {
        models = model_registry();
      } else {
        try {
          models.push_back(load_hf_config(*config));
        } catch (const std::invalid_argument& e) {
          std::cerr << "recipebench models: " << e.what() << "\n";
          return kFailed;
        }
      }
      if (*format == "json") {
        Json out = Json::array();
        for (const auto& m : models) {
          const ParamCounts c = count_params(m);
          out.push_back(Json{{"name", m.name},
                             {"hidden_size", m.hidden_size},
                             {"layers", m.num_layers},
                             {"linear_attention_layers", m.num_linear_attention_layers()},
                             {"full_attention_layers", m.num_full_attention_layers()},
                             {"experts", m.num_experts},
                             {"top_k", m.top_k},
                             {"expert_ffn", m.expert_ffn},
                             {"vocab_size", m.vocab_size},
                             {"total_params", c.total},
                             {"active_params", c.active}});
        }
        std::cout << out.dump(2) << "\n";
        return kOk;
      }
      print_model_table(models);
      std::printf(
          "active: weight matrices a token passes through (top-k + shared experts, router, projections, conv,\n"
          "output layer), not the embedding, norms or per-head scalars (docs/metrics.md). total: all parameters\n"
          "without the MTP layer.\n");
      return kOk;
    };
  });
}

}  // namespace recipebench::cli
