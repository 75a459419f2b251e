#include "predict_inputs.h"

#include <cmath>
#include <filesystem>
#include <iostream>
#include <set>

#include <fmt/format.h>

#include "catalog/hardware.h"
#include "commands.h"
#include "plan/analytical_costs.h"
#include "plan/megatron_command.h"
#include "plan/memory_plan.h"
#include "recipe/diagnostic.h"
#include "record/profile_source.h"
#include "settings/switches.h"

namespace recipebench::cli {

namespace {

bool has_passes(const RunRecord& rec) {
  for (const StepSample& s : rec.steps)
    if (!s.passes.empty()) return true;
  return false;
}

double window_mean_seconds(const RunRecord& rec) {
  const StepWindow& w = rec.options.settings.window;
  double sum = 0;
  int n = 0;
  for (const StepSample& s : rec.steps)
    if (s.step >= w.first && s.step <= w.last) {
      sum += s.seconds;
      ++n;
    }
  return n > 0 ? sum / n : 0;
}

/// True when `plain` ran what `profile` ran: the same recipe bytes, rank, layers and device, without --profile.
bool same_run(const RunRecord& plain, const RunRecord& profile) {
  const RunSettings& a = plain.options.settings;
  const RunSettings& b = profile.options.settings;
  return plain.recipe_sha256 == profile.recipe_sha256 && plain.recipe == profile.recipe &&
         a.emulate_rank == b.emulate_rank && a.emulated_stage_layers == b.emulated_stage_layers &&
         plain.model_layers == profile.model_layers && a.device == b.device && record_gpu(plain) == record_gpu(profile);
}

/// The plain twin's factor within a plausible range: --profile's device synchronisations slow a step by a little
/// (the seed's twins: x 0.88 to x 1.03), never by half or more; outside it the twin's window is no measurement of
/// the profile's run. Refused at the twin's file (docs/step-time.md, "Calibration").
constexpr double kMinCalibration = 0.5, kMaxCalibration = 1.5;

void check_calibration(double factor, const RunRecordInput& plain, const RunRecordInput& profile) {
  if (factor >= kMinCalibration && factor <= kMaxCalibration) return;
  throw InputError(Diagnostic{
      plain.file, 0, 0, "steps[].seconds",
      fmt::format("a window mean of {:.6g} s, x {:.6g} the profile's ({}: {:.6g} s)", window_mean_seconds(plain.record),
                  factor, profile.file, window_mean_seconds(profile.record)),
      fmt::format("{} to {} x the profile's (a plain run of the same recipe, rank and layers)", kMinCalibration,
                  kMaxCalibration)});
}

/// `files` with each file once (by its canonical path): a file given again is said (a warning) and read once, so a
/// profile is not weighted twice in the fit.
std::vector<std::string> once_each(const std::vector<std::string>& files) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const std::string& file : files) {
    std::error_code ec;
    const std::filesystem::path canonical = std::filesystem::weakly_canonical(file, ec);
    if (seen.insert(ec ? file : canonical.string()).second) {
      out.push_back(file);
      continue;
    }
    std::cerr << Diagnostic{file, 0, 0, "", "given twice", "each profile once (read once)", "warning"}.to_string()
              << "\n";
  }
  return out;
}

}  // namespace

std::optional<LoadedProfiles> load_profiles(const std::vector<std::string>& files, const std::string& model) {
  LoadedProfiles out;
  bool ok = true;
  std::vector<RunRecordInput> profiles, plain;
  for (const std::string& file : once_each(files)) {
    std::vector<RunRecordInput> runs;
    if (!add_one_run_record(file, runs)) {
      ok = false;
      continue;
    }
    for (RunRecordInput& r : runs) (has_passes(r.record) ? profiles : plain).push_back(std::move(r));
  }
  for (const RunRecordInput& in : profiles) {
    try {
      ProfiledRank r = profiled_rank(in.record, in.file);
      for (const RunRecordInput& p : plain) {
        if (!same_run(p.record, in.record)) continue;
        const double factor = window_mean_seconds(p.record) / window_mean_seconds(in.record);
        check_calibration(factor, p, in);
        calibrate(r, factor);
        r.source += fmt::format(
            " (calibrated x {:.4f} by the plain run {}: its window's mean step over the "
            "profile's, the synchronisations of --profile taken out)",
            factor, p.file);
        break;
      }
      if (r.model == model) {
        out.ranks.push_back(std::move(r));
      } else {
        out.other.push_back({in.file, r.model});
        out.family_ranks.push_back(std::move(r));
      }
    } catch (const InputError& e) {
      std::cerr << e.diagnostic().to_string() << "\n";
      ok = false;
    } catch (const std::exception& e) {
      std::cerr << in.file << ": error: " << e.what() << "\n";
      ok = false;
    }
  }
  for (const RunRecordInput& p : plain) {
    bool used = false;
    for (const RunRecordInput& in : profiles) used = used || same_run(p.record, in.record);
    if (!used) {
      std::cerr << p.file << ": error: steps[].phases.passes: none, expected a record of `run --profile` (or the "
                << "plain run of a given profile's recipe, rank and layers, which calibrates it)\n";
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  if (!out.ranks.empty())  // the model's own profiles time it: another model's are not used, and said so
    for (const auto& [file, other] : out.other)
      std::cerr << Diagnostic{file, 0, 0, "model", "a profile of " + other + ", not of " + model,
                              "a profile of the model predicted (this one is not used)", "warning"}
                       .to_string()
                << "\n";
  return out;
}

PredictSetup predict_setup_network(const Recipe& recipe, double stack_factor) {
  PredictSetup s;
  if (recipe.gpu.type == "CPU") {
    // CPU ranks on one host: a stand-in link (shared memory through Gloo), never a catalog figure.
    s.network.nvlink = Link{10e9, 20e-6, "host memory (Gloo)"};
    s.network.node_network = s.network.nvlink;
    s.network.gpus_per_node = std::max(1, recipe.gpu.count);
    s.network.source = "CPU ranks on one host: 10 GB/s, 20 us per step (an assumption, not a measurement)";
  } else {
    s.network = recipe_network(recipe);
  }
  s.options.stack_factor = stack_factor;
  merge_switches(recipe.bench, RecipeBench{}, s.options.settings);  // as `run` merges them (settings/switches.h)
  return s;
}

PredictSetup predict_setup(const Recipe& recipe, const LoadedProfiles& profiles, double stack_factor) {
  PredictSetup s = predict_setup_network(recipe, stack_factor);
  s.costs = fit_unit_costs(profiles.ranks);
  const bool cpu_profile = s.costs.gpu == "CPU", cpu_recipe = recipe.gpu.type == "CPU";
  if (cpu_profile != cpu_recipe)
    throw std::invalid_argument("a profile measured on " + s.costs.gpu + " cannot be scaled to " + recipe.gpu.type +
                                ": give a profile measured on a GPU for a GPU recipe (and the CPU for a CPU one)");
  if (!cpu_recipe && s.costs.gpu != recipe.gpu.type) {
    const GpuSpec* from = find_gpu(s.costs.gpu);
    const GpuSpec* to = find_gpu(recipe.gpu.type);
    if (from == nullptr || to == nullptr)
      throw std::invalid_argument("GPU " + (from ? recipe.gpu.type : s.costs.gpu) + " is not in the catalog");
    s.costs.notes.push_back(  // an assumption of the prediction, not a profile (sources counts the profiles)
        fmt::format("carried {} -> {} operation by operation (catalog/efficiency.yaml; docs/step-time.md, "
                    "\"Scaling to another GPU\")",
                    from->name, to->name));
  }
  return s;
}

RunSettings predicted_settings(const ResolvedRun& run, const Recipe& recipe) {
  RunSettings s = run.settings();
  command_switches(recipe, s);
  return s;
}

PredictSetup prediction_setup(const Recipe& recipe, const ModelConfig& model, const ChunkShape& shape,
                              const LoadedProfiles& loaded, double stack_factor) {
  if (!loaded.ranks.empty()) return predict_setup(recipe, loaded, stack_factor);
  if (!loaded.family_ranks.empty()) {
    LoadedProfiles sized = loaded;
    sized.ranks = loaded.family_ranks;
    PredictSetup s = predict_setup(recipe, sized, stack_factor);
    s.costs.notes.push_back(fmt::format(
        "profiles of {} (another size of the family) time {}: their seconds per unit of work are taken as its own "
        "at its widths (docs/step-time.md, \"Modes\")",
        s.costs.model, model.name));
    return s;
  }
  PredictSetup s = predict_setup_network(recipe, stack_factor);
  const GpuSpec* gpu = find_gpu(recipe.gpu.type);
  if (gpu == nullptr)
    throw std::invalid_argument("the analytical mode needs a catalog GPU; " + recipe.gpu.type + " is none");
  s.costs = analytical_costs(hardware_catalog(), *gpu, model, shape);
  return s;
}

namespace {

/// A memory plan's peak in GB with one decimal, or "below 0.1 GB" (a tiny CPU model's plan shown as 0.0 GB reads as
/// none).
std::string plan_gb(double bytes) { return bytes < 0.05e9 ? "below 0.1 GB" : fmt::format("{:.1f} GB", bytes / 1e9); }

}  // namespace

std::string emulation_commands(const std::string& file, const Recipe& recipe, const ModelConfig& model,
                               const RankMap& map) {
  const MemoryPlan plan = plan_memory(recipe, model, map);
  const GpuSpec* h200 = find_gpu("H200");
  const Device device = recipe_device(recipe);  // the machine the recipe names: a CPU recipe's ranks run on CPU
  std::string out;
  for (size_t k : plan.kinds) {
    const RankMemory& rm = plan.ranks[k];
    int rank = 0;
    for (const RankPlacement& r : map.ranks)
      if (r.pp == rm.pp_rank) {
        rank = r.rank;
        break;
      }
    std::string layers;
    if (device == Device::kCuda && h200 != nullptr && rm.peak > h200->memory_bytes && rm.layers > map.vpp) {
      int64_t fit = static_cast<int64_t>(std::floor(static_cast<double>(rm.layers) * h200->memory_bytes / rm.peak));
      fit = std::max<int64_t>(map.vpp, fit / map.vpp * map.vpp);
      layers = fmt::format(" --layers {}", fit);
    }
    out += fmt::format(
        "  recipebench run {} --emulate-rank {} --profile --device {} --steps 3 --window 1:2{}   # {}, "
        "pipeline rank {}, plan {}\n",
        file, rank, to_string(device), layers, rm.kind, rm.pp_rank, plan_gb(rm.peak));
  }
  return out;
}

}  // namespace recipebench::cli
