#include "run/execution.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "launch/run_guard.h"
#include "plan/memory_plan.h"
#include "record/run_metrics.h"
#include "run/dry_run.h"
#include "run/emulation.h"
#include "util/exit_code.h"
#include "util/format.h"
#include "util/host.h"

namespace recipebench {

namespace {

using Clock = std::chrono::system_clock;

RunEnvironment host_environment(const BuildInfo& b) {
  struct utsname u {};
  uname(&u);
  RunEnvironment e;
  e.host = host_name();
  e.os = std::string(u.sysname) + " " + u.release + " " + u.machine;
  e.cpu_cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  e.compiler = std::string("g++ ") + __VERSION__;
  e.recipebench_version = b.version;
  e.recipebench_commit = b.commit;
  e.build_type = b.build_type;
  return e;
}

/// True for the process that reports progress and writes the run record: rank 0, or an emulated rank (alone).
bool writes_record(const RunOptions& o) { return o.place.rank == 0 || o.settings.emulate_rank.has_value(); }

/// Sets the recipe's environment variables in this process before the backend starts (the CUDA caching allocator
/// reads PYTORCH_CUDA_ALLOC_CONF at its first use). Values that need a shell ($...) are skipped with a message.
/// Returns what was set.
Json apply_recipe_env(const Recipe& recipe, const std::vector<RunReporter*>& reporters) {
  Json applied = Json::object();
  if (!recipe.doc.contains("env") || !recipe.doc["env"].is_object()) return applied;
  for (const auto& [k, v] : recipe.doc["env"].items()) {
    const std::string value = v.get<std::string>();
    if (value.find('$') != std::string::npos) {
      tell(reporters, "recipebench run: env " + k + " needs a shell to expand (" + value + "); not set");
      continue;
    }
    setenv(k.c_str(), value.c_str(), 1);
    applied[k] = value;
  }
  return applied;
}

/// How the backend's part ended, for this rank.
struct Execution {
  int devices = 1;
  bool failure_shown = false;  ///< another rank showed the failure (or, before the start, rank 0 will)
  bool started = false;        ///< the backend accepted the run (environment() returned)
};

/// A backend's failure without a library's stack trace (libtorch's "Exception raised from ... (most recent call
/// first):" and the "frame #N:" lines after it): the console and the record keep what failed. Other messages are
/// kept as they are.
std::string without_stack_trace(const std::string& message) {
  const size_t at = message.find("Exception raised from ");
  if (at == std::string::npos) return message;  // no trace: the message as the backend wrote it, lines and all
  std::string m = message.substr(0, at);
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ' || m.back() == '\r')) m.pop_back();
  return m.empty() ? message : m;
}

/// Runs the backend's steps into `rec`, reporting each step on the process that writes the record. A RunError marks
/// the record failed.
Execution execute(Backend& backend, const ResolvedRun& r, RunRecord& rec, const std::vector<RunReporter*>& reporters,
                  bool steps_from_log) {
  const RunOptions& o = r.options;
  const bool lead = writes_record(o);
  Execution x;
  try {
    throw_if_interrupted(-1, o.settings.steps);
    const BackendEnvironment env = backend.environment(r);
    x.started = true;
    x.devices = std::max(1, env.device_count);
    rec.environment.device = env;
    backend.on_model_built = [&](const ModelBuild& b) {
      rec.model_build = b;
      if (lead)
        for (auto* rep : reporters) rep->model_built(b);
    };
    backend.run(r, [&](const StepSample& s) {
      rec.steps.push_back(s);
      if (lead)
        for (auto* rep : reporters) rep->step(s, rec, x.devices);
      throw_if_interrupted(s.step, o.settings.steps);  // SIGINT / SIGTERM: a failed record saying where
    });
    if (steps_from_log)  // a log may hold fewer steps than asked for; the backend checked that the window fits
      rec.options.settings.steps = static_cast<int>(rec.steps.size());
    else if (static_cast<int>(rec.steps.size()) != o.settings.steps)
      throw RunError("the backend ran " + std::to_string(rec.steps.size()) + " of " + std::to_string(o.settings.steps) +
                     " steps");
    rec.status = o.settings.emulate_rank ? RunStatus::kEmulated : RunStatus::kComplete;
  } catch (const RunError& e) {
    rec.status = RunStatus::kFailed;
    rec.error =
        RunFailure{e.step() >= 0 ? std::optional<int>(e.step()) : std::nullopt, without_stack_trace(e.what()), {}};
    // Another rank failed first and shows its message; this rank only stops (rank 0 still writes the record).
    // A refusal before the run (the same check fails on every rank) is shown by rank 0 only.
    x.failure_shown = e.secondary() || (!lead && !x.started);
  }
  return x;
}

/// What the backend adds to the record (backend/backend.h's BackendReport): the log block, an imported log's wall
/// time, and a failed run's last log lines; its notes are told once.
void merge_backend_report(const Backend& backend, RunRecord& rec, const std::vector<RunReporter*>& reporters) {
  const BackendReport r = backend.report();
  for (const std::string& note : r.notes) tell(reporters, note);
  rec.log = r.log;
  if (r.wall_seconds) rec.wall_seconds = *r.wall_seconds;
  if (rec.error) rec.error->log_tail = r.log_tail;
}

/// Before step 0, on the process that writes the record: the switches' notes, the reporters' start, and for a
/// backend that builds the model itself its memory plan and what the wait before step 0 is.
void announce(const RunRequest& q, const ResolvedRun& r, const BackendCapabilities& caps, const RunRecord& rec,
              const std::vector<RunReporter*>& reporters) {
  for (const std::string& note : switch_notes(r.switch_context(), r.recipe->bench, q.overrides)) tell(reporters, note);
  for (auto* rep : reporters) rep->start(rec);
  if (!caps.memory_plan) return;
  std::string plan;
  try {
    plan = run_plan_text(r, q.host ? *q.host : host_devices());
  } catch (const std::invalid_argument&) {  // no plan of this layout: the backend refuses it next, with the reason
  }
  while (!plan.empty() && plan.back() == '\n') plan.pop_back();
  if (!plan.empty()) tell(reporters, plan);
  const ModelConfig& m = r.model.model;
  tell(reporters, "building the model (" + m.name + ", " + std::to_string(m.num_layers) + " layers) on " +
                      (r.settings().device == Device::kCuda ? "CUDA" : "the CPU") +
                      "; the steps follow once it is built");
}

}  // namespace

RunRecord new_record(const RunRequest& q, const ResolvedRun& r, Clock::time_point launch) {
  RunRecord rec;
  rec.recipe_path = q.recipe_path;
  rec.recipe_sha256 = q.recipe_text ? sha256_hex(*q.recipe_text) : sha256_file(q.recipe_path);
  rec.recipe = r.recipe->doc;
  rec.options = r.options;
  rec.model_name = r.model.model.name;
  rec.model_layers = r.model.model.num_layers;
  rec.model_layers_full = r.model.full.num_layers;
  if (q.model_config) rec.model_config = Json{{"path", *q.model_config}, {"sha256", sha256_file(*q.model_config)}};
  rec.started_at = utc_timestamp(launch);
  rec.environment = host_environment(q.build);
  return rec;
}

Json emulation_of(const ResolvedRun& r) {
  const RunSettings& s = r.settings();
  if (!s.emulate_rank || !r.map) return nullptr;
  const RankMap ran = emulated_rank_map(*r.map, s);
  const MemoryPlan plan = plan_memory(*r.recipe, r.model.model, ran, plan_options(s, s.device));
  return emulation_block(*r.recipe, *r.map, ran, plan, s);
}

RunOutcome run_placed(Backend& backend, const RunRequest& q, const ResolvedRun& r, const BackendCapabilities& caps,
                      RunRecord& rec, RunOutcome out, const std::vector<RunReporter*>& reporters,
                      std::chrono::steady_clock::time_point launch_steady) {
  const RunOptions& o = r.options;
  const bool lead = writes_record(o);  // only rank 0 (or an emulated rank) reports and writes the run record
  const bool node = caps.launch == Launch::kPerNode;
  rec.options = o;
  // A per-node backend's command gets the env block through its shell (backends/command's command_script).
  rec.environment.recipe_env_applied =
      node ? r.recipe->doc.value("env", Json::object()) : apply_recipe_env(*r.recipe, reporters);
  if (lead) announce(q, r, caps, rec, reporters);
  const Execution x = execute(backend, r, rec, reporters, node);
  if (!x.started && lead) {  // refused before the run started: nothing was measured, so no record is written
    tell(reporters, "recipebench run: " + rec.error->message + "; nothing was run (no run record written)");
    out.exit_code = kFailed;
    out.record_path.clear();
    return out;
  }
  if (!lead) {
    if (rec.complete()) return out;
    if (!x.failure_shown)
      tell(reporters, "recipebench run: rank " + std::to_string(o.place.rank) + " failed: " + rec.error->message);
    out.exit_code = kFailed;
    return out;
  }
  rec.finished_at = utc_timestamp(Clock::now());
  rec.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - launch_steady).count();
  merge_backend_report(backend, rec, reporters);
  if (rec.complete()) rec.metrics = compute_metrics(rec, *r.recipe, r.model.model, x.devices);
  summarise_emulation(rec);
  // Bytes of a log that are not UTF-8 are written as U+FFFD; the name is the one the record took.
  out.record_path =
      write_new_record(out.record_path, rec.to_json().dump(2, ' ', false, Json::error_handler_t::replace) + "\n");
  for (auto* rep : reporters) rep->finish(rec, out.record_path, x.failure_shown);
  out.exit_code = rec.complete() || rec.status == RunStatus::kEmulated ? kOk : kFailed;
  out.record = std::move(rec);
  return out;
}

}  // namespace recipebench
