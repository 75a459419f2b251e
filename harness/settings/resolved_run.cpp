#include "settings/resolved_run.h"

#include <stdexcept>
#include <utility>

#include "recipe/layout_check.h"

namespace recipebench {

void apply_bench_fields(const RecipeBench& b, RunOptions& o) {
  RunSettings& s = o.settings;
  if (b.backend) s.backend = *b.backend;
  if (b.window) s.window = *b.window;
  if (b.layers) s.layers = *b.layers;
  if (b.device) s.device = *b.device;
  if (b.seed) s.seed = *b.seed;
  if (b.data.source) s.data.source = *b.data.source;
  if (b.data.path) s.data.path = *b.data.path;
  if (b.data.supervised_token_ratio) s.data.supervised_token_ratio = *b.data.supervised_token_ratio;
  if (b.data.min_row_tokens) s.data.min_row_tokens = *b.data.min_row_tokens;
  if (b.log_format) o.command.log_format = *b.log_format;
  if (b.timeout_seconds) o.command.timeout_seconds = *b.timeout_seconds;
}

RunOptions merged_options(const Recipe& recipe, const RecipeBench& overlay) {
  RunOptions o;
  o.settings.device = recipe_device(recipe);  // bench.device, else gpu.type's: a GPU recipe runs on CUDA
  apply_bench_fields(recipe.bench, o);
  apply_bench_fields(overlay, o);
  merge_switches(recipe.bench, overlay, o.settings);
  if (overlay.data.path) o.settings.data.source = DataSource::kFile;  // --data
  return o;
}

ResolvedRun resolve_run(const Recipe& recipe, RunOptions options, RunModel model) {
  ResolvedRun r;
  r.recipe = &recipe;
  r.options = std::move(options);
  r.model = std::move(model);
  try {
    r.map = build_rank_map(recipe, r.model.model);
  } catch (const std::invalid_argument& e) {
    r.map_problem = e.what();
  }
  try {
    require_layout(recipe, r.model.model.architecture_known() ? &r.model.model : nullptr);
  } catch (const std::invalid_argument& e) {
    r.layout_problem = e.what();
  }
  r.options.effects = layout_effects(r.switch_context());
  return r;
}

}  // namespace recipebench
