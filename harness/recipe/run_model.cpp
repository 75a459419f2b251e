#include "recipe/run_model.h"

#include <filesystem>

#include "catalog/hf_config.h"

namespace recipebench {

std::optional<std::string> model_config_path(const Recipe& recipe) {
  if (!recipe.model_params || !recipe.model_params->config) return std::nullopt;
  const std::filesystem::path p(*recipe.model_params->config);
  if (p.is_absolute()) return p.string();
  return (std::filesystem::path(recipe.file).parent_path() / p).lexically_normal().string();
}

namespace {

/// The model of the recipe's stated counts: result.active_params.count (N of the model that ran) before
/// model_params.active, model_params.total when given. nullopt when no count is stated.
std::optional<RunModel> stated_model(const Recipe& recipe) {
  const std::optional<int64_t> from_result = recipe.result ? recipe.result->active_params : std::nullopt;
  const std::optional<int64_t> from_params = recipe.model_params ? recipe.model_params->active : std::nullopt;
  if (!from_result && !from_params) return std::nullopt;
  ModelConfig m;
  m.name = recipe.model;
  m.family = ModelFamily::kStated;
  m.num_layers = 0;  // not known
  m.mtp_layers = 0;
  m.stated_active = from_result ? *from_result : *from_params;
  m.stated_total = recipe.model_params ? recipe.model_params->total.value_or(0) : 0;
  const std::string source = from_result ? recipe.result->active_params_source : recipe.model_params->source;
  const std::string field = from_result ? "result.active_params.count" : "model_params.active";
  return RunModel{m, m, CountsFrom::kStated, "stated: " + field + (source.empty() ? "" : " (" + source + ")")};
}

}  // namespace

std::optional<RunModel> run_model(const Recipe& recipe, const std::optional<int64_t>& layers,
                                  const ModelConfig* widths) {
  std::optional<RunModel> m;
  if (widths) {
    m = RunModel{*widths, *widths, CountsFrom::kConfig,
                 "counted by the " + family_label(*widths) + " formula from --model-config " + widths->name};
  } else if (const auto path = model_config_path(recipe)) {
    ModelConfig c = load_hf_config(*path);
    c.name = recipe.model;  // the recipe's name for it, as the registry's models are named
    m = RunModel{c, c, CountsFrom::kConfig, "counted by the " + family_label(c) + " formula from " + *path};
  } else if (const ModelConfig* reg = find_model(recipe.model)) {
    m = RunModel{*reg, *reg, CountsFrom::kRegistry, "counted by the registry's formula for " + reg->name};
  } else {
    return stated_model(recipe);  // the stated counts are of the model that ran; its layers are not known
  }
  if (const auto n = layers ? layers : recipe.bench.layers) m->model = m->full.with_layers(*n);
  return m;
}

}  // namespace recipebench
