#include "record/profile_source.h"

#include <map>

#include <fmt/format.h>

#include "catalog/hardware.h"
#include "layout/rank_map.h"
#include "plan/memory_plan.h"
#include "plan/step_time.h"
#include "recipe/diagnostic.h"
#include "recipe/recipe.h"
#include "recipe/run_model.h"

namespace recipebench {

namespace {

[[noreturn]] void refuse(const std::string& file, const std::string& path, const std::string& found,
                         const std::string& expected) {
  Diagnostic d;
  d.file = file;
  d.path = path;
  d.found = found;
  d.expected = expected;
  throw InputError(d);
}

void add_cells(ComponentCells& to, const ComponentCells& from, double weight) {
  for (int c = 0; c < kProfileComponents; ++c) to[c] += from[c] * weight;
}

}  // namespace

std::string record_gpu(const RunRecord& rec) {
  const std::string name = rec.device_name();
  if (name.rfind("CPU", 0) == 0) return "CPU";
  for (const GpuSpec& g : gpu_catalog())
    if (name.find(g.name) != std::string::npos) return g.name;
  return "";
}

ProfiledRank profiled_rank(const RunRecord& rec, const std::string& file) {
  const RunSettings& s = rec.options.settings;
  if (rec.status == RunStatus::kFailed)
    refuse(file, "status", "failed", "a complete or emulated run record (a failed run measured no window)");
  if (!rec.model_config.is_null())
    refuse(file, "model_config", "a --model-config model", "a registry model's run (the profile's widths by name)");
  const Recipe recipe = recipe_from_json(rec.recipe, rec.recipe_path);
  std::optional<int64_t> layers;
  if (rec.model_layers > 0 && rec.model_layers != rec.model_layers_full) layers = rec.model_layers;
  const std::optional<RunModel> model = run_model(recipe, layers);
  if (!model) refuse(file, "recipe.model", recipe.model, "a model of the registry (recipebench models)");
  const std::string gpu = record_gpu(rec);
  if (gpu.empty())
    refuse(
        file, "environment.device", rec.device_name(), "a GPU of the catalog (" + [] {
          std::string names;
          for (const GpuSpec& g : gpu_catalog()) names += (names.empty() ? "" : ", ") + g.name;
          return names;
        }() + ") or the CPU");

  RankMap map = build_rank_map(recipe, model->model);
  const int rank = s.emulate_rank.value_or(0);
  const RankPlacement place = map.ranks.at(static_cast<size_t>(rank));
  if (s.emulate_rank && s.emulated_stage_layers) keep_stage_layers(map, place.pp, *s.emulated_stage_layers);
  const std::vector<ChunkShape> shapes = chunk_shapes(map, model->model, place.pp, recipe.workload.row_tokens);

  // The window's passes, averaged per (kind, chunk) over its steps and microbatches.
  std::vector<ProfiledChunk> chunks(shapes.size());
  std::vector<double> forwards(shapes.size(), 0), backwards(shapes.size(), 0);
  double optimizer = 0, between = 0;
  int64_t microbatches = 0;
  int steps = 0;
  for (const StepSample& step : rec.steps) {
    if (step.step < s.window.first || step.step > s.window.last) continue;
    ++steps;
    optimizer += step.optimizer_seconds;
    microbatches += step.microbatches;
    double passes = 0;
    for (const PassSample& p : step.passes) passes += p.seconds;
    between += step.seconds - passes - step.optimizer_seconds;
    for (const PassSample& p : step.passes) {
      if (p.virtual_stage < 0 || static_cast<size_t>(p.virtual_stage) >= chunks.size())
        refuse(file, fmt::format("steps[{}].phases.passes", step.step),
               fmt::format("virtual stage {}", p.virtual_stage),
               fmt::format("a virtual stage of the rank's {}", chunks.size()));
      ProfiledChunk& ch = chunks[static_cast<size_t>(p.virtual_stage)];
      PhaseCells& to = p.backward ? ch.backward : ch.forward;
      for (int ph = 0; ph < kPassPhases; ++ph) add_cells(to[ph], p.phases[ph], 1);
      (p.backward ? backwards : forwards)[static_cast<size_t>(p.virtual_stage)] += 1;
    }
  }
  for (size_t v = 0; v < chunks.size(); ++v) {
    if (forwards[v] == 0 || backwards[v] == 0)
      refuse(file, "steps[].phases.passes", "no pass of virtual stage " + std::to_string(v) + " in the window",
             "a record of `run --profile` (every pass of the window timed by phase and component)");
    chunks[v].shape = shapes[v];
    for (int ph = 0; ph < kPassPhases; ++ph) {
      for (int c = 0; c < kProfileComponents; ++c) {
        chunks[v].forward[ph][c] /= forwards[v];
        chunks[v].backward[ph][c] /= backwards[v];
      }
    }
  }

  ProfiledRank out;
  out.source = file;
  out.model = model->full.name;
  out.gpu = gpu;
  out.widths = model->model;
  out.layout = recipe.layout.label.empty() ? fmt::format("TP{} PP{} EP{} DP{}", map.tp, map.pp, map.ep, map.dp)
                                           : recipe.layout.label;
  out.layout += fmt::format(" (rank {})", rank);
  out.chunks = std::move(chunks);
  out.optimizer_seconds = steps > 0 ? optimizer / steps : 0;
  out.between_passes_seconds = steps > 0 ? between / steps : 0;
  out.microbatches = steps > 0 ? microbatches / steps : 0;
  PlanOptions po;
  po.device = s.device;
  const MemoryPlan plan = plan_memory(recipe, model->model, map, po);
  out.optimizer_params = optimizer_shards(plan, map, place.pp).shard_params();
  return out;
}

}  // namespace recipebench
