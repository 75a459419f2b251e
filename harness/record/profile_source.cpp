#include "record/profile_source.h"

#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "catalog/hardware.h"
#include "layout/rank_map.h"
#include "plan/memory_plan.h"
#include "plan/optimizer_traffic.h"
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

/// What a record's timed window measured: each chunk's mean forward and backward pass, and the step's means.
struct WindowPasses {
  std::vector<ProfiledChunk> chunks;
  double optimizer_seconds = 0, between_passes_seconds = 0;
  int64_t microbatches = 0;
};

/// The window's passes averaged per (kind, chunk) over its steps and microbatches, each chunk with its shape from
/// `shapes`; the optimizer's seconds, the seconds outside the passes and the microbatches per step. Refuses (located
/// at `file`) a pass of a chunk the rank does not have and a chunk without passes (a record made without --profile).
WindowPasses window_passes(const RunRecord& rec, const std::string& file, const std::vector<ChunkShape>& shapes) {
  const StepWindow& w = rec.options.settings.window;
  WindowPasses out;
  out.chunks.resize(shapes.size());
  std::vector<double> forwards(shapes.size(), 0), backwards(shapes.size(), 0);
  double optimizer = 0, between = 0;
  int64_t microbatches = 0;
  int steps = 0;
  for (const StepSample& step : rec.steps) {
    if (step.step < w.first || step.step > w.last) continue;
    ++steps;
    optimizer += step.optimizer_seconds;
    microbatches += step.microbatches;
    double passes = 0;
    for (const PassSample& p : step.passes) passes += p.seconds;
    between += step.seconds - passes - step.optimizer_seconds;
    for (const PassSample& p : step.passes) {
      if (p.virtual_stage < 0 || static_cast<size_t>(p.virtual_stage) >= out.chunks.size())
        refuse(file, fmt::format("steps[{}].phases.passes", step.step),
               fmt::format("virtual stage {}", p.virtual_stage),
               fmt::format("a virtual stage of the rank's {}", out.chunks.size()));
      ProfiledChunk& ch = out.chunks[static_cast<size_t>(p.virtual_stage)];
      PhaseCells& to = p.backward ? ch.backward : ch.forward;
      for (int ph = 0; ph < kPassPhases; ++ph) add_cells(to[ph], p.phases[ph], 1);
      (p.backward ? backwards : forwards)[static_cast<size_t>(p.virtual_stage)] += 1;
    }
  }
  for (size_t v = 0; v < out.chunks.size(); ++v) {
    if (forwards[v] == 0 || backwards[v] == 0)
      refuse(file, "steps[].phases.passes", "no pass of virtual stage " + std::to_string(v) + " in the window",
             "a record of `run --profile` (every pass of the window timed by phase and component)");
    ProfiledChunk& ch = out.chunks[v];
    ch.shape = shapes[v];
    for (int ph = 0; ph < kPassPhases; ++ph) {
      for (int c = 0; c < kProfileComponents; ++c) {
        ch.forward[ph][c] /= forwards[v];
        ch.backward[ph][c] /= backwards[v];
      }
    }
  }
  if (steps > 0) {
    out.optimizer_seconds = optimizer / steps;
    out.between_passes_seconds = between / steps;
    out.microbatches = microbatches / steps;
  }
  return out;
}

}  // namespace

std::string record_gpu(const RunRecord& rec) {
  const std::string name = rec.device_name();
  if (name.rfind("CPU", 0) == 0) return "CPU";
  const GpuSpec* gpu = hardware_catalog().gpu_in_device_name(name);  // the longest spelling: H200, not H20
  return gpu ? gpu->name : "";
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
  std::optional<RunModel> model;
  try {
    model = run_model(recipe, layers);
  } catch (const std::invalid_argument& e) {  // the recipe's model_params.config
    refuse(file, "recipe.model_params.config", e.what(), "a config.json of the Qwen3.5 MoE / Qwen3-Next family");
  }
  if (!model || model->model.family != ModelFamily::kQwen35)
    refuse(file, "recipe.model", recipe.model, "a model of the registry (recipebench models)");
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

  const WindowPasses window = window_passes(rec, file, shapes);
  ProfiledRank out;
  out.source = file;
  out.model = model->full.name;
  out.gpu = gpu;
  out.widths = model->model;
  out.layout = recipe.layout.label.empty() ? fmt::format("TP{} PP{} EP{} DP{}", map.tp, map.pp, map.ep, map.dp)
                                           : recipe.layout.label;
  out.layout += fmt::format(" (rank {})", rank);
  out.chunks = window.chunks;
  out.optimizer_seconds = window.optimizer_seconds;
  out.between_passes_seconds = window.between_passes_seconds;
  out.microbatches = window.microbatches;
  PlanOptions po;
  po.device = s.device;
  const MemoryPlan plan = plan_memory(recipe, model->model, map, po);
  out.optimizer_params = optimizer_shards(plan, map, place.pp).shard_params();
  out.kernels = s.kernels;
  try {
    out.optimizer_bytes_per_param = optimizer_step_bytes_per_param(recipe.optimizer, s.kernels);
  } catch (const std::invalid_argument&) {
    refuse(file, "recipe.optimizer", optimizer_state_label(recipe.optimizer) + " with bench.kernels ops",
           "a profile of the fused kernels (the ops path's optimizer traffic with this state is not modelled, "
           "docs/optimizer.md)");
  }
  return out;
}

}  // namespace recipebench
