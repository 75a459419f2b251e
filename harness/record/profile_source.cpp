#include "record/profile_source.h"

#include <algorithm>
#include <cmath>
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

/// A pass and its step as measurements (docs/step-time.md, "Profiles as measurements"): the pass's cells sum to its
/// seconds (the timer charges every moment of a pass to one cell); located at steps[i].phases.passes[j].
void check_pass(const PassSample& p, const std::string& path, const std::string& file) {
  double cells = 0;
  for (int ph = 0; ph < kPassPhases; ++ph)
    for (int c = 0; c < kProfileComponents; ++c) cells += p.phases[ph][c];
  if (!(std::fabs(cells - p.seconds) <= 1e-6 * p.seconds + 1e-12))
    refuse(file, path, fmt::format("cells summing to {:.6g} s", cells),
           fmt::format("the pass's seconds, {:.6g} s (the timer charges every moment of a pass to one cell)",
                       p.seconds));
}

/// A step's passes against the step: their seconds at most the step's, and `microbatches` forward passes of each
/// of the rank's `chunks` chunks.
void check_step_passes(const StepSample& step, size_t chunks, const std::string& file) {
  const std::string path = fmt::format("steps[{}]", step.step);
  double passes = 0;
  int64_t forwards = 0;
  for (size_t j = 0; j < step.passes.size(); ++j) {
    check_pass(step.passes[j], fmt::format("{}.phases.passes[{}]", path, j), file);
    passes += step.passes[j].seconds;
    forwards += step.passes[j].backward ? 0 : 1;
  }
  if (passes > step.seconds * (1 + 1e-6))
    refuse(file, path + ".phases.passes", fmt::format("passes of {:.6g} s in all", passes),
           fmt::format("at most the step's {:.6g} s", step.seconds));
  if (step.microbatches > 0 && step.microbatches != forwards / static_cast<int64_t>(std::max<size_t>(1, chunks)))
    refuse(file, path + ".microbatches", std::to_string(step.microbatches),
           fmt::format("{} (its forward passes, {}, over the rank's {} chunk(s))",
                       forwards / static_cast<int64_t>(std::max<size_t>(1, chunks)), forwards, chunks));
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
    check_step_passes(step, shapes.size(), file);
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

/// The rank map of the record's embedded recipe as the measured rank ran it: its layout checked (an error of the
/// layout arithmetic refused at recipe.document.layout), its world held against the ranks the record says ran,
/// settings.emulate_rank a rank of it, and an emulated rank's cut stage (settings.emulated_stage_layers) within the
/// stage and equal to what its emulation block says ran. `rank` is set to the measured rank.
RankMap record_rank_map(const RunRecord& rec, const Recipe& recipe, const ModelConfig& model, const std::string& file,
                        int& rank) {
  const RunSettings& s = rec.options.settings;
  RankMap map;
  try {
    map = build_rank_map(recipe, model);
  } catch (const std::invalid_argument& e) {
    refuse(file, "recipe.document.layout", e.what(), "a layout that passes the layout check (recipebench validate)");
  }
  const std::string grid = fmt::format("TP{} CP{} PP{} DP{} EP{}", map.tp, map.cp, map.pp, map.dp, map.ep);
  if (map.world != rec.options.place.world)
    refuse(file, "recipe.document.layout", fmt::format("{}: {} ranks", grid, map.world),
           fmt::format("the {} rank(s) the record ran (settings.ranks)", rec.options.place.world));
  rank = s.emulate_rank.value_or(0);
  if (rank < 0 || rank >= map.world)
    refuse(file, "settings.emulate_rank", std::to_string(rank),
           fmt::format("a rank of the recipe's layout {} (ranks 0 to {})", grid, map.world - 1));
  if (!s.emulate_rank || !s.emulated_stage_layers) return map;
  const int pp = map.ranks[static_cast<size_t>(rank)].pp;
  const int64_t stage = map.stage_layers.at(static_cast<size_t>(pp)), kept = *s.emulated_stage_layers;
  if (kept < map.vpp || kept > stage)
    refuse(file, "settings.emulated_stage_layers", std::to_string(kept),
           fmt::format("{} to {} (the layers of pipeline stage {}, at least one per virtual stage)", map.vpp, stage,
                       pp));
  const Json& ran = rec.emulation.is_object() ? rec.emulation.value("layers_run", Json()) : Json();
  if (ran.is_number_integer() && ran.get<int64_t>() != kept)
    refuse(file, "settings.emulated_stage_layers", std::to_string(kept),
           fmt::format("{}, the layers its emulation block says ran (emulation.layers_run)", ran.dump()));
  keep_stage_layers(map, pp, kept);
  return map;
}

/// How far above the GPU's catalog figure a profile's implied rate may lie: its dense BF16 peak for a matrix
/// component (FLOP/s), its HBM bandwidth for a memory-bound one (bytes/s). The work formulas count a component's
/// main terms (component_work) and a pass's cells do not hold all of its work (the committed H200 profiles' LM head
/// reaches 1.34 to 1.40 x the peak by this count: part of its gradient work is timed outside its cells), so a rate
/// is refused past 2 x: a time that cannot have held the work (docs/step-time.md, "Profiles as measurements").
constexpr double kPeakMargin = 2.0;

/// The window's mean cells of each chunk as measurements. Every component the chunk runs (component_work > 0) has a
/// positive time in each pass's own phase (a cell left out or 0 would price it at 0 s). On a catalog GPU, its rate
/// over the forward and backward passes together, their work (a backward does twice a matrix component's forward
/// FLOP, as much memory traffic as its forward) over their seconds, is at most kPeakMargin x the GPU's figure: a pair,
/// not each pass, because a fused kernel may do a backward's work in the forward (the LM head's loss computes its
/// gradient there). Refuses located at the window's passes, the chunk, the pass and the cell.
void check_chunk_measurements(const ProfiledRank& r, const GpuSpec* gpu, const StepWindow& w, const std::string& file) {
  const auto fwd = static_cast<size_t>(PassPhase::kForward), bwd = static_cast<size_t>(PassPhase::kBackward);
  for (size_t v = 0; v < r.chunks.size(); ++v) {
    const ProfiledChunk& ch = r.chunks[v];
    const std::string passes = fmt::format("steps[{}..{}].phases.passes[virtual_stage {}", w.first, w.last, v);
    for (int c = 0; c < kProfileComponents; ++c) {
      const auto comp = static_cast<ProfileComponent>(c);
      const bool matrix = work_kind(comp) == WorkKind::kMatrix;
      const double work = component_work(comp, r.widths, ch.shape);
      if (!(work > 0)) continue;
      const double forward = ch.forward[fwd][static_cast<size_t>(c)], backward = ch.backward[bwd][static_cast<size_t>(c)];
      for (const auto& [kind, seconds] : {std::pair<const char*, double>{"forward", forward}, {"backward", backward}})
        if (!(seconds > 0))
          refuse(file, fmt::format("{}, {}].{}.{}", passes, kind, kind, to_string(comp)),
                 fmt::format("{} s (the window's mean; absent counts as 0)", seconds),
                 fmt::format("a positive time: the chunk runs {} ({:.4g} {} of work per forward)", to_string(comp),
                             work, matrix ? "FLOP" : "bytes"));
      if (!gpu) continue;  // a CPU profile: no catalog figure to hold it to
      const double pair_work = work * (matrix ? 3 : 2), seconds = forward + backward;
      const double limit = matrix ? gpu->peak_bf16_flops : gpu->memory_bandwidth;
      const char* unit = matrix ? "FLOP" : "bytes";
      if (pair_work / seconds > kPeakMargin * limit)
        refuse(file, fmt::format("{}].forward.{} + backward.{}", passes, to_string(comp), to_string(comp)),
               fmt::format("{:.4g} s for {:.4g} {}: {:.4g} {}/s", seconds, pair_work, unit, pair_work / seconds, unit),
               fmt::format("at most {} x the {}'s {} {:.4g} {}/s (catalog)", kPeakMargin, gpu->name,
                           matrix ? "dense BF16 peak" : "HBM bandwidth", limit, unit));
    }
  }
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

  int rank = 0;
  const RankMap map = record_rank_map(rec, recipe, model->model, file, rank);
  const RankPlacement place = map.ranks[static_cast<size_t>(rank)];
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
  check_chunk_measurements(out, gpu == "CPU" ? nullptr : find_gpu(gpu), s.window, file);
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
