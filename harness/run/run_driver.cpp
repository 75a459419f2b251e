#include "run/run_driver.h"

#include <chrono>
#include <filesystem>
#include <memory>

#include "backend/backend.h"
#include "catalog/hf_config.h"
#include "launch/launch.h"
#include "launch/run_guard.h"
#include "recipe/run_model.h"
#include "recipe/validate.h"
#include "run/admission.h"
#include "run/dry_run.h"
#include "run/execution.h"
#include "run/placement.h"
#include "settings/resolved_run.h"
#include "util/exit_code.h"
#include "util/host.h"

namespace recipebench {

namespace {

using Clock = std::chrono::system_clock;

/// The recipe, validated; its diagnostics reported. Throws Refusal when it is missing or fails a check.
ValidatedRecipe load_recipe(const RunRequest& q, const std::vector<RunReporter*>& reporters) {
  ValidatedRecipe v;
  if (q.recipe_text) {
    v = validate_recipe_text(*q.recipe_text, q.recipe_path);
  } else {
    if (!std::filesystem::exists(q.recipe_path))
      throw Refusal{kUsage, "recipebench run: no such recipe file: " + q.recipe_path, {}};
    if (!std::filesystem::is_regular_file(q.recipe_path))  // a FIFO or a device would hang or never end
      throw Refusal{kUsage, "recipebench run: " + q.recipe_path + ": not a regular file", {}};
    v = validate_recipe_file(q.recipe_path);
  }
  for (const auto& d : v.errors) tell(reporters, d.to_string());
  if (!v.ok()) throw Refusal{kFailed, "recipebench run: the recipe failed validation; nothing was run", {}};
  return v;
}

/// The run's options: the recipe's bench block and the request's overlay merged (settings/resolved_run.h), then
/// what only `run` says (--import, --profile, --emulate-rank) and the environment's hooks. Throws Refusal when the
/// window does not fit the steps or a hook variable does not parse.
RunOptions run_options(const Recipe& recipe, const RunRequest& q) {
  RunOptions o = merged_options(recipe, q.overrides);
  if (q.import_log) o.command.import_log = *q.import_log;
  // A command's GPUs are the recipe's (gpu.type, gpu.count): on CUDA unless the recipe or the command line says.
  const BackendCapabilities* caps = backend_capabilities(o.settings.backend);
  if (caps && caps->launch == Launch::kPerNode && !recipe.bench.device && !q.overrides.device)
    o.settings.device = Device::kCuda;
  o.settings.profile = q.profile;
  if (q.emulate_rank) {  // --layers then cuts the emulated rank's stage, not the model (run/emulation.h)
    o.settings.emulate_rank = q.emulate_rank;
    o.settings.emulated_stage_layers = q.overrides.layers;
    o.settings.layers = recipe.bench.layers;
  }
  try {
    apply_environment_hooks(o);  // RECIPEBENCH_DIST_TIMEOUT and the test hooks (docs/distributed.md)
  } catch (const std::invalid_argument& e) {
    throw Refusal{kUsage, std::string("recipebench run: ") + e.what(), {}};
  }
  // The one window rule, also applied by validate to result.window (metrics.h window_problem).
  if (const std::string problem = window_problem(o.settings.window, o.settings.steps); !problem.empty())
    throw Refusal{kUsage, "recipebench run: " + problem, {}};
  return o;
}

/// The model that runs (recipe/run_model.h): --model-config's widths or the registry's, --layers or bench.layers.
RunModel run_model_of(const RunRequest& q, const Recipe& recipe) {
  std::optional<ModelConfig> widths;
  if (q.model_config) {
    try {
      widths = load_hf_config(*q.model_config);
    } catch (const std::invalid_argument& e) {
      throw Refusal{kFailed, e.what(), {}};  // located: FILE[:LINE:COL]: error: ... (load_hf_config)
    }
  }
  const std::optional<int64_t> layers = q.emulate_rank ? std::nullopt : q.overrides.layers;
  try {
    if (auto m = run_model(recipe, layers, widths ? &*widths : nullptr)) return *m;
  } catch (const std::invalid_argument& e) {  // model_params.config (validate reports it first)
    throw Refusal{kFailed, std::string("recipebench run: ") + e.what(), {}};
  }
  throw Refusal{kFailed, "recipebench run: unknown model '" + recipe.model + "' (give --model-config)", {}};
}

/// `run --dry-run`: the rank map and the per-rank memory plan on the run's device, to the reporters.
RunOutcome dry_run(const RunRequest& q, const ResolvedRun& r, const std::vector<RunReporter*>& reporters) {
  std::string text;
  try {
    text = dry_run_text(q.recipe_path, r, q.host ? *q.host : host_devices());
  } catch (const std::invalid_argument& e) {
    throw Refusal{kFailed, std::string("recipebench run --dry-run: ") + e.what(), {}};
  }
  for (auto* rep : reporters) rep->dry_run(text);
  return RunOutcome{};
}

/// Load -> resolve -> admit -> dry run | place -> execute -> finish.
RunOutcome drive(const RunRequest& q, const ValidatedRecipe& v, const std::vector<RunReporter*>& reporters,
                 Clock::time_point launch, std::chrono::steady_clock::time_point launch_steady) {
  const Recipe& recipe = *v.recipe;
  ResolvedRun r = resolve_run(recipe, run_options(recipe, q), run_model_of(q, recipe));
  const RankVariables ranks = read_rank_variables();
  const BackendCapabilities* caps = backend_capabilities(r.settings().backend);
  admit(Admission{q, v, r, caps, ranks}, q.dry_run);
  if (q.dry_run) return dry_run(q, r, reporters);
  auto backend = make_backend(r.settings().backend);  // admitted: the build has it
  RunRecord rec = new_record(q, r, launch);
  rec.emulation = emulation_of(r);
  if (caps->launch == Launch::kPerRank) rec.capabilities = caps->to_json();
  const std::string stem = std::filesystem::path(q.recipe_path).stem().string();
  RunOutcome out;
  out.record_path = q.out_dir + "/" + stem + "-" + utc_timestamp(launch, "%Y%m%dT%H%M%SZ") + ".json";
  // Rank 0 killed by a signal writes no record: the launcher writes the failed one (launch/run_guard.h).
  auto on_lead_died = [&](int status) {
    rec.options = r.options;
    rec.options.place.world = q.nproc.value_or(static_cast<int>(recipe.layout.world()));
    const std::string path = write_lead_died_record(rec, q.out_dir, stem, launch, launch_steady, status);
    tell(reporters, "  run record (status failed): " + path);
  };
  if (auto launched = place(q, recipe, ranks, r.options, out.record_path, reporters, on_lead_died)) {
    out.exit_code = *launched;
    return out;
  }
  return run_placed(*backend, q, r, *caps, rec, std::move(out), reporters, launch_steady);
}

}  // namespace

std::optional<std::string> run_backend(const RunRequest& q) {
  try {
    std::error_code ec;
    if (!q.recipe_text && !std::filesystem::is_regular_file(q.recipe_path, ec)) return std::nullopt;
    const ValidatedRecipe v =
        q.recipe_text ? validate_recipe_text(*q.recipe_text, q.recipe_path) : validate_recipe_file(q.recipe_path);
    if (!v.ok()) return std::nullopt;
    return merged_options(*v.recipe, q.overrides).settings.backend;
  } catch (const std::exception&) {  // run_recipe reads it again and reports what failed
    return std::nullopt;
  }
}

RunOutcome run_recipe(const RunRequest& request, const std::vector<RunReporter*>& reporters) {
  // SIGINT / SIGTERM are noted, then end the run with a failed record; a dry run writes no record and keeps the
  // signals' default action, so it stops at once whatever it is computing.
  if (!request.dry_run) watch_interrupts();
  const auto launch = Clock::now();
  const auto launch_steady = std::chrono::steady_clock::now();
  try {
    const ValidatedRecipe v = load_recipe(request, reporters);
    return drive(request, v, reporters, launch, launch_steady);
  } catch (const Refusal& r) {
    for (const Diagnostic& d : r.diagnostics) tell(reporters, d.to_string());
    tell(reporters, r.message);
    RunOutcome out;
    out.exit_code = r.code;
    return out;
  }
}

}  // namespace recipebench
