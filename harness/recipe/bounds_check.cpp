#include "recipe/bounds_check.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "catalog/hardware.h"
#include "metrics/metrics.h"
#include "recipe/layout_check.h"
#include "util/format.h"

namespace recipebench {

namespace {

/// The text a number was written with, or its shortest form.
std::string written(const SourceDoc& src, const std::string& pointer, double fallback) {
  const SourceNode* n = src.node(pointer);
  return n && !n->text.empty() ? n->text : shortest(fallback);
}

void check_gpu_memory(const Recipe& r, const SourceDoc& src, Diagnostics& out) {
  const GpuSpec* gpu = find_gpu(r.gpu.type);
  if (!gpu || gpu->memory_bytes <= 0) return;
  const double most = std::ceil(gpu->memory_bytes / 1e9);
  if (r.gpu.memory_gb <= most) return;
  out.push_back(src.at("/gpu/memory_gb",
                       written(src, "/gpu/memory_gb", r.gpu.memory_gb) + " GB on a " + gpu->name,
                       "at most " + shortest(most) + " GB, the memory of one " + gpu->name +
                           " (the hardware catalog, docs/catalog.md)"));
}

void check_cv(const RecipeResult& res, const SourceDoc& src, Diagnostics& out) {
  if (!res.step_time_cv_percent || !res.window.inside(res.steps_per_run) || res.window.steps() < kMinWindowSteps)
    return;
  const int64_t n = res.window.steps();
  const double most = 100 * std::sqrt(static_cast<double>(n));
  if (*res.step_time_cv_percent <= most) return;
  out.push_back(src.at("/result/step_time_cv_percent",
                       written(src, "/result/step_time_cv_percent", *res.step_time_cv_percent) + "%",
                       "at most " + fixed(most, 1, false) + "% = 100 x sqrt(" + std::to_string(n) +
                           " window steps) (the sample CV of n positive step times is at most sqrt(n))"));
}

/// The layers of the largest model chunk: a stage's layers / VPP (0 when the split does not add up: check_layout
/// reports it).
int64_t largest_chunk_layers(const Recipe& r, const ModelConfig& m) {
  const RecipeLayout& L = r.layout;
  const auto stages = stage_layer_counts(m.num_layers, L.pp, L.first_stage_layers, L.last_stage_layers);
  if (stages.empty() || L.vpp < 1) return 0;
  return *std::max_element(stages.begin(), stages.end()) / L.vpp;
}

void check_recompute(const Recipe& r, const ModelConfig* model, const SourceDoc& src, Diagnostics& out) {
  const RecipeRecompute& rc = r.layout.recompute;
  const std::string at = "/layout/recompute/num_layers";
  const bool given = src.node(at) != nullptr;
  if (rc.granularity != "full") {
    for (const char* field : {"num_layers", "method"})
      if (src.node(std::string("/layout/recompute/") + field))
        out.push_back(src.at_key(std::string("/layout/recompute/") + field,
                                 std::string(field) + " with granularity " + rc.granularity,
                                 "no " + std::string(field) + " (only full recompute chooses layers), or granularity "
                                 "full"));
    return;
  }
  if (!given) return;
  if (rc.num_layers < 1) {
    out.push_back(src.at(at, std::to_string(rc.num_layers) + " layers with full recompute",
                         "at least 1 (layers per recompute unit (uniform) or recomputed layers per stage (block))"));
    return;
  }
  if (!model || model->num_layers <= 0) return;
  const int64_t chunk = largest_chunk_layers(r, *model);
  if (chunk > 0 && rc.num_layers > chunk)
    out.push_back(src.at(at, counted(rc.num_layers, "layer"),
                         "at most " + std::to_string(chunk) + ", the layers of the largest model chunk (a stage's " +
                             "layers / VPP " + std::to_string(r.layout.vpp) + " of " +
                             std::to_string(model->num_layers) + " layers over PP " + std::to_string(r.layout.pp) +
                             ")"));
}

}  // namespace

Diagnostics check_bounds(const Recipe& recipe, const ModelConfig* model, const SourceDoc& src) {
  Diagnostics out;
  check_gpu_memory(recipe, src, out);
  if (recipe.result) check_cv(*recipe.result, src, out);
  check_recompute(recipe, model, src, out);
  return out;
}

}  // namespace recipebench
