#include "run/run_driver.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>

#include "backend/backend.h"
#include "catalog/hf_config.h"
#include "catalog/models.h"
#include "launch/launch.h"
#include "launch/run_guard.h"
#include "layout/rank_map.h"
#include "logparse/line_parser.h"
#include "logparse/log_format.h"
#include "logparse/log_reader.h"
#include "plan/memory_plan.h"
#include "recipe/run_model.h"
#include "recipe/validate.h"
#include "record/run_metrics.h"
#include "run/emulation.h"
#include "settings/switches.h"
#include "util/exit_code.h"
#include "util/format.h"
#include "util/host.h"

namespace recipebench {

namespace {

using Clock = std::chrono::system_clock;

/// A refusal before the backend starts: the message for the user and the exit code. Thrown and caught only here.
struct Refusal {
  int code;
  std::string message;
};

/// The reporters as one.
struct Reporters {
  const std::vector<RunReporter*>& all;
  void message(const std::string& line) const {
    for (auto* r : all) r->message(line);
  }
};

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

/// The recipe, validated; its diagnostics reported. Throws Refusal when it is missing or fails a check.
ValidatedRecipe load_recipe(const RunRequest& q, const Reporters& report) {
  ValidatedRecipe v;
  if (q.recipe_text) {
    v = validate_recipe_text(*q.recipe_text, q.recipe_path);
  } else {
    if (!std::filesystem::exists(q.recipe_path))
      throw Refusal{kUsage, "recipebench run: no such recipe file: " + q.recipe_path};
    if (!std::filesystem::is_regular_file(q.recipe_path))  // a FIFO or a device would hang or never end
      throw Refusal{kUsage, "recipebench run: " + q.recipe_path + ": not a regular file"};
    v = validate_recipe_file(q.recipe_path);
  }
  for (const auto& d : v.errors) report.message(d.to_string());
  if (!v.ok()) throw Refusal{kFailed, "recipebench run: the recipe failed validation; nothing was run"};
  return v;
}

/// True for a backend that launches the recipe's own command once per node (backend/capabilities.h).
bool per_node(const std::string& backend) {
  const BackendCapabilities* caps = backend_capabilities(backend);
  return caps && caps->launch == Launch::kPerNode;
}

/// The settings outside the switch table from one bench block (the recipe's, then the command line's overlay).
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

/// Effective settings: the recipe's bench block, then the request's overlay, then the environment's hooks
/// (apply_environment_hooks). Throws Refusal when the window does not fit or a hook variable does not parse.
RunOptions effective_options(const Recipe& recipe, const RunRequest& q) {
  RunOptions o;
  o.settings.device = recipe_device(recipe);  // bench.device, else gpu.type's: a GPU recipe runs on CUDA
  apply_bench_fields(recipe.bench, o);
  apply_bench_fields(q.overrides, o);
  merge_switches(recipe.bench, q.overrides, o.settings);
  if (q.overrides.data.path) o.settings.data.source = DataSource::kFile;  // --data
  if (q.import_log) o.command.import_log = *q.import_log;
  // A command's GPUs are the recipe's (gpu.type, gpu.count): on CUDA unless the recipe or the command line says.
  if (per_node(o.settings.backend) && !recipe.bench.device && !q.overrides.device) o.settings.device = Device::kCuda;
  o.settings.profile = q.profile;
  if (q.emulate_rank) {  // --layers then cuts the emulated rank's stage, not the model (run/emulation.h)
    o.settings.emulate_rank = q.emulate_rank;
    o.settings.emulated_stage_layers = q.overrides.layers;
    o.settings.layers = recipe.bench.layers;
  }
  try {
    apply_environment_hooks(o);  // RECIPEBENCH_DIST_TIMEOUT and the test hooks (docs/distributed.md)
  } catch (const std::invalid_argument& e) {
    throw Refusal{kUsage, std::string("recipebench run: ") + e.what()};
  }
  // The one window rule, also applied by validate to result.window (metrics.h window_problem).
  if (const std::string problem = window_problem(o.settings.window, o.settings.steps); !problem.empty())
    throw Refusal{kUsage, "recipebench run: " + problem};
  return o;
}

/// The model that runs (recipe/run_model.h): --model-config's widths or the registry's, --layers or bench.layers.
RunModel resolve_model(const RunRequest& q, const Recipe& recipe) {
  std::optional<ModelConfig> widths;
  if (q.model_config) {
    try {
      widths = load_hf_config(*q.model_config);
    } catch (const std::invalid_argument& e) {
      throw Refusal{kFailed, std::string("recipebench run: ") + e.what()};
    }
  }
  const std::optional<int64_t> layers = q.emulate_rank ? std::nullopt : q.overrides.layers;
  try {
    if (auto m = run_model(recipe, layers, widths ? &*widths : nullptr)) return *m;
  } catch (const std::invalid_argument& e) {  // model_params.config (validate reports it first)
    throw Refusal{kFailed, std::string("recipebench run: ") + e.what()};
  }
  throw Refusal{kFailed, "recipebench run: unknown model '" + recipe.model + "' (give --model-config)"};
}

/// Refuses (exit 2), before any rank starts, a model outside the families a per-rank backend builds (its capability
/// table's model_families): the torch backend trains the Qwen3.5 / Qwen3-Next family only; the command backend runs
/// any model.
void refuse_model_family(const RunOptions& o, const Recipe& recipe, const RunModel& m) {
  const BackendCapabilities* caps = backend_capabilities(o.settings.backend);
  if (!caps || caps->model_families.empty()) return;
  const auto& f = caps->model_families;
  if (std::find(f.begin(), f.end(), m.model.family) != f.end()) return;
  throw Refusal{kUsage, "recipebench run: the " + o.settings.backend +
                            " backend trains the Qwen3.5 MoE / Qwen3-Next family only (qwen3_5_moe, "
                            "qwen3_5_moe_text, qwen3_next); " +
                            recipe.model + " " + family_clause(m.model) + " (" + m.counts_note +
                            "): run it with its own stack (bench.backend: command, docs/command-backend.md) or "
                            "import its log; nothing was run"};
}

/// The rank map of the model that runs, nullopt when the layout does not hold for it (the backend refuses it).
std::optional<RankMap> rank_map_or_none(const Recipe& recipe, const ModelConfig& model) {
  try {
    return build_rank_map(recipe, model);
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

/// The memory plan's options of a run with settings `s` on `device` (the current code; bench.kernels, ep_dispatch
/// and overlap_param_gather as the run applies them).
PlanOptions plan_options(const RunSettings& s, Device device) {
  PlanOptions p;
  p.device = device;
  p.fused_kernels = s.kernels == Kernels::kFused;
  p.ep_dispatch = s.ep_dispatch;
  p.overlap_param_gather = s.overlap_param_gather;
  return p;
}

/// This host's devices and memory: the request's (tests), else this machine's.
HostDevices host_of(const RunRequest& q) { return q.host ? *q.host : host_devices(); }

/// The run's per-rank memory plan as text, on its device: held against the recipe's GPU on CUDA, against the memory
/// this host has available on the CPU (`run` and `run --dry-run` print this same text). Throws
/// std::invalid_argument for a layout the rank map refuses.
std::string run_plan_text(const Recipe& recipe, const ModelConfig& model, const RunOptions& o,
                          const HostDevices& host) {
  MemoryPlan plan =
      plan_memory(recipe, model, build_rank_map(recipe, model), plan_options(o.settings, o.settings.device));
  if (o.settings.device == Device::kCpu && host.available_bytes > 0) {
    plan.gpu = "the CPU: this host's available";
    plan.gpu_memory = static_cast<double>(host.available_bytes);
  }
  return format_memory_plan(plan);
}

/// The rank map and the per-rank memory plan (docs/memory-plan.md) on the run's device (`run` prints the same plan).
std::string dry_run_text(const std::string& path, const Recipe& recipe, const ModelConfig& model, const RunOptions& o,
                         const HostDevices& host) {
  try {
    if (model.family != ModelFamily::kQwen35) {  // the plan models the torch backend's family only
      const std::string head = "recipebench run --dry-run: " + path + "\n  model " + model.name + " (" +
                               family_label(model) + "), " + recipe.layout.label + "\n";
      return head +
             (model.architecture_known()
                  ? format_rank_map(build_rank_map(recipe, model))
                  : "  rank map: not built (the model's layers are not known, only its counts)\n") +
             "  memory plan: not made (it models recipebench's torch backend, Qwen3.5 MoE / Qwen3-Next only)\n";
    }
    return "recipebench run --dry-run: " + path + "\n  model " + model.name + " (" + std::to_string(model.num_layers) +
           " layers), " + recipe.layout.label + "\n" + format_rank_map(build_rank_map(recipe, model)) +
           run_plan_text(recipe, model, o, host);
  } catch (const std::invalid_argument& e) {
    throw Refusal{kFailed, std::string("recipebench run --dry-run: ") + e.what()};
  }
}

/// Refuses (exit 1, a located diagnostic) a log format that is not one or whose regex does not compile.
void check_log_format(const RunRequest& q, const ValidatedRecipe& v, const RunOptions& o, const Reporters& report) {
  const std::optional<std::string>& format = o.command.log_format;
  if (!format) return;
  std::string problem = "a format recipebench reads";
  try {
    if (const auto spec = parse_log_format(*format)) {
      make_line_parser(*spec);
      return;
    }
  } catch (const std::invalid_argument& e) {
    problem = e.what();
  }
  const std::string expected = "megatron, torchtitan, hf or regex:<pattern with named groups> (" + problem + ")";
  const Diagnostic d = setting_diagnostic(*v.source, q.overrides.log_format.has_value(), "--log-format",
                                          "/bench/log_format", *format, expected);
  report.message(d.to_string());
  throw Refusal{kFailed, "recipebench run: the log format cannot be read; nothing was run"};
}

/// A per-rank backend reads no log and runs no command: bench.log_format / --log-format and bench.timeout_seconds /
/// --timeout given to it are refused (located; exit 2 when the command line gave one, else 1), never ignored.
void refuse_command_settings(const RunRequest& q, const ValidatedRecipe& v, const RunOptions& o,
                             const Reporters& report) {
  const std::string why = "absent (the " + o.settings.backend +
                          " backend reads no log and runs no command: it is the "
                          "command backend's setting)";
  Diagnostics refused;
  bool on_command_line = false;
  if (const auto& f = o.command.log_format) {
    refused.push_back(setting_diagnostic(*v.source, q.overrides.log_format.has_value(), "--log-format",
                                         "/bench/log_format", *f, why));
    on_command_line = on_command_line || q.overrides.log_format.has_value();
  }
  if (const auto& t = o.command.timeout_seconds) {
    refused.push_back(setting_diagnostic(*v.source, q.overrides.timeout_seconds.has_value(), "--timeout",
                                         "/bench/timeout_seconds", shortest(*t), why));
    on_command_line = on_command_line || q.overrides.timeout_seconds.has_value();
  }
  if (refused.empty()) return;
  for (const auto& d : refused) report.message(d.to_string());
  throw Refusal{on_command_line ? kUsage : kFailed, "recipebench run: the " + o.settings.backend +
                                                        " backend would ignore the settings above; nothing was run"};
}

/// Refuses (exit 1, one located diagnostic per field) what the backend does not run, before any rank starts: a
/// per-node backend every engaged backend switch (settings/switches.h), a per-rank one the fields its capability table
/// does not list. Returns the backend's capability table, or nullptr when no backend of that name is registered or
/// declared (then make_backend refuses it, or a dry run goes on unchecked).
const BackendCapabilities* check_backend_capabilities(const RunRequest& q, const ValidatedRecipe& v,
                                                      const RunOptions& o, const SwitchContext& ctx,
                                                      const Reporters& report) {
  const std::string& name = o.settings.backend;
  const BackendCapabilities* caps = backend_capabilities(name);
  if (!caps) return nullptr;
  if (caps->launch == Launch::kPerNode) {  // the command decides the layout; only its log format is checked
    check_log_format(q, v, o, report);
    const Diagnostics ignored = per_node_refusals(name, ctx, *v.source, v.recipe->bench, q.overrides);
    if (ignored.empty()) return caps;
    for (const auto& d : ignored) report.message(d.to_string());
    throw Refusal{kFailed, "recipebench run: the " + name +
                               " backend would ignore the settings above (its command's own); nothing was run"};
  }
  refuse_command_settings(q, v, o, report);
  const CapabilityOverrides given{q.overrides.device.has_value(), q.overrides.data.path.has_value()};
  const Diagnostics refused =
      check_capabilities(name, *caps, *v.recipe, *v.source, o.settings.device, o.settings.data.source, given);
  if (refused.empty()) return caps;
  for (const auto& d : refused) report.message(d.to_string());
  throw Refusal{kFailed,
                "recipebench run: the " + name + " backend does not run what the recipe asks for; nothing was run"};
}

std::unique_ptr<Backend> backend_or_refuse(const std::string& name) {
  auto backend = make_backend(name);
  if (backend) return backend;
  std::string names;
  for (const auto& n : backend_names()) names += (names.empty() ? "" : ", ") + n;
  throw Refusal{kUsage, "recipebench run: no backend '" + name + "' in this build (available: " +
                            (names.empty() ? "none: configure with libtorch for the torch backend" : names) + ")"};
}

/// This process's place from its launcher's variables (launch/launch.h) into the run's options.
void apply_rank_env(const RankEnv& ranks, RunOptions& o) {
  o.place.rank = ranks.rank;
  o.place.world = ranks.world;
  o.place.local_rank = ranks.local_rank;
  o.place.master_addr = ranks.master_addr;
  o.place.master_port = ranks.master_port;
}

/// Places this process among the ranks (sets o.rank, o.world...), or starts the ranks here and returns their
/// exit code: with nproc > 1, or on CUDA when a multi-rank layout was started without rank variables (one
/// process per GPU). Throws Refusal when the rank count does not fit.
std::optional<int> place_ranks(const RunRequest& q, const Recipe& recipe, RunOptions& o,
                               const std::function<void(int status)>& on_lead_died) {
  RankEnv ranks;
  try {
    ranks = rank_env();
  } catch (const std::invalid_argument& e) {
    throw Refusal{kUsage, std::string("recipebench run: rank variables: ") + e.what()};
  }
  std::optional<int> nproc = q.nproc;
  const int64_t world = recipe.layout.world();
  if (!nproc && o.settings.device == Device::kCuda && ranks.world == 1 && world > 1 && !launched_by_recipebench())
    nproc = static_cast<int>(world);
  if (nproc && *nproc > 1 && !launched_by_recipebench()) {
    const std::string n = std::to_string(*nproc);
    if (ranks.world > 1)
      throw Refusal{kUsage, "recipebench run: --nproc " + n + " but this process is already rank " +
                                std::to_string(ranks.rank) + " of " + std::to_string(ranks.world) + " (" +
                                ranks.source + " variables); drop --nproc"};
    if (*nproc != world)
      throw Refusal{kUsage, "recipebench run: --nproc " + n + " but the recipe's layout " + recipe.layout.label +
                                " needs " + std::to_string(world) + " ranks (TP x CP x DP x PP)"};
    try {
      return launch_local(*nproc, 10.0, on_lead_died);
    } catch (const std::invalid_argument& e) {  // the ranks do not fit this host: refused before forking
      throw Refusal{kUsage, std::string("recipebench run: ") + e.what()};
    }
  }
  apply_rank_env(ranks, o);
  return std::nullopt;
}

/// A per-node backend's place (backend/capabilities.h): this process is one node's launcher when it is its node's
/// local rank 0 (or alone); any other rank of a launcher (torchrun, srun) returns exit code 0 at once. An import
/// runs nothing and is placed nowhere. Throws Refusal on --nproc or malformed rank variables.
std::optional<int> place_node(const RunRequest& q, RunOptions& o, const Reporters& report) {
  if (q.nproc)
    throw Refusal{kUsage, "recipebench run: --nproc with the " + o.settings.backend +
                              " backend, which starts no ranks (its command does); drop --nproc"};
  if (!o.command.import_log.empty()) return std::nullopt;
  RankEnv ranks;
  try {
    ranks = rank_env();
  } catch (const std::invalid_argument& e) {
    throw Refusal{kUsage, std::string("recipebench run: rank variables: ") + e.what()};
  }
  apply_rank_env(ranks, o);
  if (ranks.local_rank == 0) return std::nullopt;
  report.message("recipebench run: rank " + std::to_string(ranks.rank) + " is local rank " +
                 std::to_string(ranks.local_rank) + ": the " + o.settings.backend +
                 " backend launches its command once per node, from local rank 0");
  return kOk;
}

/// Sets the recipe's environment variables in this process before the backend starts (the CUDA caching
/// allocator reads PYTORCH_CUDA_ALLOC_CONF at its first use). Values that need a shell ($...) are skipped with a
/// message. Returns what was set.
Json apply_recipe_env(const Recipe& recipe, const Reporters& report) {
  Json applied = Json::object();
  if (!recipe.doc.contains("env") || !recipe.doc["env"].is_object()) return applied;
  for (const auto& [k, v] : recipe.doc["env"].items()) {
    const std::string value = v.get<std::string>();
    if (value.find('$') != std::string::npos) {
      report.message("recipebench run: env " + k + " needs a shell to expand (" + value + "); not set");
      continue;
    }
    setenv(k.c_str(), value.c_str(), 1);
    applied[k] = value;
  }
  return applied;
}

/// --out, checked before step 0 by the process that writes the record (rank 0, or the launcher): a run never ends
/// unable to write it. Throws Refusal (usage) with the reason.
void check_out_dir(const std::string& dir) {
  int rank = 0;
  try {
    rank = rank_env().rank;
  } catch (const std::invalid_argument&) {
    return;  // place_ranks refuses the variables
  }
  if (rank != 0) return;
  if (const std::string problem = out_dir_problem(dir); !problem.empty())
    throw Refusal{kUsage, "recipebench run: " + problem};
}

/// The record before the first step: recipe, options, model, start time, host.
RunRecord new_record(const RunRequest& q, const Recipe& recipe, const RunModel& m, const RunOptions& o,
                     Clock::time_point launch) {
  RunRecord rec;
  rec.recipe_path = q.recipe_path;
  rec.recipe_sha256 = q.recipe_text ? sha256_hex(*q.recipe_text) : sha256_file(q.recipe_path);
  rec.recipe = recipe.doc;
  rec.options = o;
  rec.model_name = m.model.name;
  rec.model_layers = m.model.num_layers;
  rec.model_layers_full = m.full.num_layers;
  if (q.model_config) rec.model_config = Json{{"path", *q.model_config}, {"sha256", sha256_file(*q.model_config)}};
  rec.started_at = utc_timestamp(launch);
  rec.environment = host_environment(q.build);
  return rec;
}

/// True for the process that reports progress and writes the run record: rank 0, or an emulated rank (alone).
bool writes_record(const RunOptions& o) { return o.place.rank == 0 || o.settings.emulate_rank.has_value(); }

/// The record's emulation block of an emulated run (run/emulation.h): the rank's place in the rank map it runs and
/// the memory plan of its pipeline rank; null for a real run or a layout the rank map refuses.
Json emulation_of(const Recipe& recipe, const RunModel& m, const RunOptions& o, const std::optional<RankMap>& map) {
  if (!o.settings.emulate_rank || !map) return nullptr;
  const RankMap ran = emulated_rank_map(*map, o.settings);
  const MemoryPlan plan = plan_memory(recipe, m.model, ran, plan_options(o.settings, o.settings.device));
  return emulation_block(recipe, *map, ran, plan, o.settings);
}

/// How the backend's part ended, for this rank.
struct Execution {
  int devices = 1;
  bool failure_shown = false;  ///< another rank showed the failure (or, before the start, rank 0 will)
  bool started = false;        ///< the backend accepted the run (environment() returned)
};

/// A backend's failure without a library's stack trace (libtorch's "Exception raised from ... (most recent call
/// first):" and the "frame #N:" lines after it): the console and the record keep what failed, e.g. "[enforce fail
/// at alloc_cpu.cpp:75] ... DefaultCPUAllocator: can't allocate memory". Other messages are kept as they are.
std::string without_stack_trace(const std::string& message) {
  const size_t at = message.find("Exception raised from ");
  if (at == std::string::npos) return message;  // no trace: the message as the backend wrote it, lines and all
  std::string m = message.substr(0, at);
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ' || m.back() == '\r')) m.pop_back();
  return m.empty() ? message : m;
}

/// Runs the backend's steps into `rec`, reporting each step on rank 0. A RunError marks the record failed.
Execution execute(Backend& backend, const Recipe& recipe, const ModelConfig& model, RunRecord& rec,
                  const std::vector<RunReporter*>& reporters, bool steps_from_log) {
  const RunOptions& o = rec.options;
  const bool lead = writes_record(o);
  Execution x;
  try {
    throw_if_interrupted(-1, o.settings.steps);
    const BackendEnvironment env = backend.environment(recipe, o);
    x.started = true;
    x.devices = std::max(1, env.device_count);
    rec.environment.device = env;
    backend.on_model_built = [&](const ModelBuild& b) {
      rec.model_build = b;
      if (lead)
        for (auto* r : reporters) r->model_built(b);
    };
    backend.run(recipe, model, o, [&](const StepSample& s) {
      rec.steps.push_back(s);
      if (lead)
        for (auto* r : reporters) r->step(s, rec, x.devices);
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
void merge_backend_report(const Backend& backend, RunRecord& rec, const Reporters& report) {
  const BackendReport r = backend.report();
  for (const std::string& note : r.notes) report.message(note);
  rec.log = r.log;
  if (r.wall_seconds) rec.wall_seconds = *r.wall_seconds;
  if (rec.error) rec.error->log_tail = r.log_tail;
}

/// The run's per-rank memory plan (docs/memory-plan.md: its model, device and bench.kernels), before step 0. A layout
/// the rank map refuses has no plan: nothing is said (the backend refuses the layout next, with the reason).
void report_memory_plan(const Recipe& recipe, const ModelConfig& model, const RunOptions& o, const HostDevices& host,
                        const Reporters& report) {
  std::string plan;
  try {
    plan = run_plan_text(recipe, model, o, host);
  } catch (const std::invalid_argument&) {
    return;
  }
  while (!plan.empty() && plan.back() == '\n') plan.pop_back();
  report.message(plan);
}

/// Places this process: one launch per node for a per-node backend (its command's output teed to a log beside
/// the record), else the ranks of launch/launch.h. Returns an exit code when this process has nothing more to do.
std::optional<int> place(const RunRequest& q, const Recipe& recipe, RunOptions& o, const std::string& record_path,
                         const Reporters& report, const std::function<void(int status)>& on_lead_died) {
  if (o.settings.emulate_rank) {  // one process, alone: no launcher, no rendezvous (refuse_emulation checked it)
    o.place.rank = *o.settings.emulate_rank;
    o.place.world = static_cast<int>(recipe.layout.world());
    return std::nullopt;
  }
  if (!per_node(o.settings.backend)) return place_ranks(q, recipe, o, on_lead_died);
  const auto placed = place_node(q, o, report);
  const std::string base = record_path.substr(0, record_path.size() - 5);  // without ".json"
  const int rank = o.place.rank;
  o.command.log_path = base + (rank == 0 ? "" : "-rank" + std::to_string(rank)) + ".log";
  return placed;
}

/// Refuses --emulate-rank where it cannot run: a backend that cannot emulate (exit 1, by name), with --nproc or
/// under a launcher's rank variables, a rank outside the layout or --layers outside its stage (exit 2, located).
void refuse_emulation(const RunRequest& q, const RunOptions& o, const Recipe& recipe,
                      const std::optional<RankMap>& map, const BackendCapabilities* caps, const Reporters& report) {
  if (!o.settings.emulate_rank) return;
  const std::string& name = o.settings.backend;
  if (!caps || !caps->emulate_rank)
    throw Refusal{kFailed, "recipebench run: --emulate-rank: the " + name +
                               " backend cannot emulate a rank (it does not build the layout's ranks itself); "
                               "nothing was run"};
  if (q.nproc) throw Refusal{kUsage, "recipebench run: --emulate-rank runs one process alone; drop --nproc"};
  int world = 1;
  try {
    world = rank_env().world;
  } catch (const std::invalid_argument&) {
  }
  if (world > 1)
    throw Refusal{kUsage, "recipebench run: --emulate-rank runs one process alone, but this one is a rank of " +
                              std::to_string(world) + " (launcher variables); run it without a launcher"};
  if (!map) return;  // the backend refuses the layout with the reason
  if (const auto d = emulation_diagnostic(o.settings, *map, recipe.layout.label)) {
    report.message(d->to_string());
    throw Refusal{kUsage, "recipebench run: --emulate-rank: no such rank to emulate; nothing was run"};
  }
}

/// `recipebench import`: refuses (exit 1, no record) a log whose own lines say it is of another run than the
/// recipe: its world size, parallel degrees, global batch or sequence length (logparse/log_facts.h), one located
/// diagnostic each, at the log line and naming the recipe's field and where it is. A log that cannot be read is
/// left to the backend (a failed record saying why).
void refuse_log_of_another_run(const ValidatedRecipe& v, const RunOptions& o, const Reporters& report) {
  if (o.command.import_log.empty()) return;
  std::optional<LogFormatSpec> format;
  if (o.command.log_format) format = parse_log_format(*o.command.log_format);
  LogContext context;
  context.file = o.command.import_log;
  context.row_tokens = v.recipe->workload.row_tokens;
  if (v.recipe->workload.global_batch > 0) context.global_batch = v.recipe->workload.global_batch;
  context.gpus = std::max(1, v.recipe->gpu.count);
  ParsedLog log;
  try {
    log = read_log_file(o.command.import_log, format, context);
  } catch (const std::exception&) {
    return;
  }
  const Diagnostics contradictions =
      check_log_against_recipe(log, o.command.import_log, *v.recipe, v.source.get(), o.settings.window);
  if (contradictions.empty()) return;
  for (const auto& d : contradictions) report.message(d.to_string());
  throw Refusal{kFailed,
                "recipebench import: the log is of another run than the recipe describes (above); no "
                "record was written"};
}

/// Bytes in GB (1e9), one decimal: the memory plan's unit.
std::string gb_text(double bytes) { return fixed(bytes / 1e9, 1); }

/// How the run came to its device, for messages: "--device cpu", "bench.device cpu" or "gpu.type B200".
std::string device_source(const RunRequest& q, const Recipe& recipe, Device device) {
  if (q.overrides.device) return "--device " + to_string(device);
  if (recipe.bench.device) return "bench.device " + to_string(device);
  return "gpu.type " + recipe.gpu.type;
}

/// The CPU memory the ranks of `model` that this host runs need by the plan (bytes; every rank of a pipeline stage
/// holds the stage's peak), nullopt when the layout has no plan.
std::optional<double> cpu_plan_bytes(const Recipe& recipe, const ModelConfig& model, const RunOptions& o,
                                     int64_t ranks_here) {
  try {
    const MemoryPlan plan =
        plan_memory(recipe, model, build_rank_map(recipe, model), plan_options(o.settings, Device::kCpu));
    if (ranks_here == 1) return plan.worst().peak;
    double total = 0;
    for (const RankMemory& r : plan.ranks)
      total += r.peak * static_cast<double>(recipe.layout.world() / recipe.layout.pp);
    return total;
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

/// "" when `ranks` CPU ranks of the run's model fit this host (cores, and the plan's memory within `available`;
/// unknown memory is not checked), else why not, with the figures.
std::string cpu_fit_problem(const Recipe& recipe, const ModelConfig& model, const RunOptions& o, int64_t ranks,
                            uint64_t available) {
  if (ranks > 1) {
    HostCapacity cap = host_capacity();
    cap.available_bytes = available;
    if (std::string p = ranks_fit_problem(static_cast<int>(ranks), cap); !p.empty()) return p;
  }
  const std::optional<double> need = cpu_plan_bytes(recipe, model, o, ranks);
  if (!need || available == 0 || *need <= static_cast<double>(available)) return "";
  return "the memory plan needs " + gb_text(*need) + " GB" +
         (ranks > 1 ? " for its " + std::to_string(ranks) + " ranks on this host" : "") + ", more than the " +
         gb_text(static_cast<double>(available)) + " GB this host has available";
}

/// Advice that works here for a CPU run too large for this host: the most layers (--layers K) whose plan fits, or
/// "" when none does.
std::string fewer_layers_advice(const Recipe& recipe, const RunModel& m, const RunOptions& o, int64_t ranks,
                                uint64_t available) {
  for (int64_t k = m.model.num_layers - 1; k >= 1; --k) {
    const ModelConfig model = m.full.with_layers(k);
    const std::optional<double> need = cpu_plan_bytes(recipe, model, o, ranks);
    if (need && *need <= static_cast<double>(available))
      return "; --layers " + std::to_string(k) + " fits (its plan needs " + gb_text(*need) + " GB)";
  }
  return "";
}

/// Refuses (exit 1) before the backend is made, any rank starts or a record is written, a run this host cannot
/// start or hold, with a backend that starts its own ranks (Launch::kPerRank): on CUDA fewer CUDA devices than the
/// ranks this process runs or starts (suggesting --device cpu only when the CPU run fits this host); on the CPU,
/// for a backend the memory plan models, a plan that needs more memory than the host has available (the plan's
/// figure; --layers K suggested only when K's plan fits). `q.host` stands in for this machine in tests.
void refuse_what_the_host_cannot_run(const RunRequest& q, const Recipe& recipe, const RunModel& m, const RunOptions& o,
                                     const BackendCapabilities* caps) {
  if (!caps || caps->launch != Launch::kPerRank || o.settings.emulate_rank) return;
  RankEnv env;
  try {
    env = rank_env();
  } catch (const std::invalid_argument&) {
    return;  // place_ranks refuses the variables
  }
  const HostDevices host = host_of(q);
  const int64_t world = recipe.layout.world();
  const bool launched = env.world > 1 || launched_by_recipebench();  // one rank of a launch: itself only
  const Device device = o.settings.device;
  const int64_t here = launched ? 1 : q.nproc ? *q.nproc : device == Device::kCuda ? world : 1;
  const std::string source = device_source(q, recipe, device);
  if (device == Device::kCuda) {
    if (host.cuda_devices >= here) return;
    const std::string gpus = std::to_string(here) + " " + (recipe.gpu.type == "CPU" ? "" : recipe.gpu.type + " ") +
                             (here == 1 ? "GPU" : "GPUs");
    std::string advice = "recipebench run --dry-run shows its rank map and memory plan";
    if (!launched && cpu_fit_problem(recipe, m.model, o, world, host.available_bytes).empty() &&
        std::count(caps->devices.begin(), caps->devices.end(), Device::kCpu))
      advice += "; --device cpu" + (world > 1 ? " --nproc " + std::to_string(world) : std::string()) +
                " runs it on this host's CPU";
    throw Refusal{kFailed, "recipebench run: the run needs " + gpus + " (CUDA, from " + source + "); this host has " +
                               (host.cuda_devices == 0 ? std::string("no CUDA device")
                                                       : std::to_string(host.cuda_devices) + " CUDA device" +
                                                             (host.cuda_devices == 1 ? "" : "s")) +
                               " (" + advice + "); nothing was run"};
  }
  if (!caps->memory_plan) return;
  if (!launched && !q.nproc && world > 1) {  // advice that works here: --nproc only when the ranks fit this host
    const std::string problem = cpu_fit_problem(recipe, m.model, o, world, host.available_bytes);
    const std::string n = std::to_string(world);
    throw Refusal{kFailed, "recipebench run: the layout " + recipe.layout.label + " needs " + n +
                               " ranks (on the CPU, " + source + "): " +
                               (problem.empty() ? "--nproc " + n + " starts them on this host"
                                                : "they do not fit this host (" + problem +
                                                      "); torchrun or srun start them on several hosts") +
                               "; nothing was run"};
  }
  if ((q.nproc && *q.nproc != world) || launched_by_recipebench() || host.available_bytes == 0)
    return;  // place_ranks refuses the count; a rank of recipebench's launch was held against the host as a whole
  const int64_t ranks = launched ? 1 : here;
  const std::optional<double> need = cpu_plan_bytes(recipe, m.model, o, ranks);
  if (!need || *need <= static_cast<double>(host.available_bytes)) return;
  const std::optional<double> per_rank = cpu_plan_bytes(recipe, m.model, o, 1);
  throw Refusal{kFailed,
                "recipebench run: " + source + ": the memory plan's peak is " + gb_text(*per_rank) + " GB per rank" +
                    (ranks > 1 ? " (" + std::to_string(ranks) + " ranks on this host: " + gb_text(*need) + " GB)"
                               : std::string()) +
                    ", more than the " + gb_text(static_cast<double>(host.available_bytes)) +
                    " GB this host has available" + fewer_layers_advice(recipe, m, o, ranks, host.available_bytes) +
                    "; nothing was run"};
}

/// Refuses (Refusal, exit status 2, after the located diagnostic) the switch combinations no run can honour
/// (settings/switches.h, switch_conflicts).
void refuse_conflicting_switches(const RunRequest& q, const ValidatedRecipe& v, const SwitchContext& ctx,
                                 const Reporters& report) {
  for (const SwitchConflict& c : switch_conflicts()) {
    const std::string expected = c.check(ctx);
    if (expected.empty()) continue;
    const RunSwitch& s = run_switch(c.field);
    report.message(
        switch_diagnostic(s, *v.source, q.overrides, switch_value_text(s, ctx.settings), expected).to_string());
    throw Refusal{kUsage, std::string("recipebench run: ") + c.why + "; nothing was run"};
  }
}

/// The run's record once this process is placed: steps, figures, the reporters' finish (rank 0; the others
/// return without a record).
RunOutcome run_placed(Backend& backend, const RunRequest& q, const Recipe& recipe, const RunModel& m,
                      const RunOptions& o, const BackendCapabilities& caps, RunRecord& rec, RunOutcome out,
                      const SwitchContext& ctx, const std::vector<RunReporter*>& reporters,
                      std::chrono::steady_clock::time_point launch_steady) {
  const Reporters report{reporters};
  const bool lead = writes_record(o);  // only rank 0 (or an emulated rank) reports and writes the run record
  const bool node = caps.launch == Launch::kPerNode;
  rec.options = o;
  // A per-node backend's command gets the env block through its shell (run/command_backend.h's command_script).
  rec.environment.recipe_env_applied =
      node ? recipe.doc.value("env", Json::object()) : apply_recipe_env(recipe, report);
  if (lead) {
    for (const std::string& note : switch_notes(ctx, recipe.bench, q.overrides)) report.message(note);
    for (auto* r : reporters) r->start(rec);
    if (caps.memory_plan) {  // a backend that builds the model itself: the plan, then what the wait before step 0 is
      report_memory_plan(recipe, m.model, o, host_of(q), report);
      report.message("building the model (" + m.model.name + ", " + std::to_string(m.model.num_layers) +
                     " layers) on " + (o.settings.device == Device::kCuda ? "CUDA" : "the CPU") +
                     "; the steps follow once it is built");
    }
  }
  const Execution x = execute(backend, recipe, m.model, rec, reporters, node);
  if (!x.started && lead) {  // refused before the run started: nothing was measured, so no record is written
    report.message("recipebench run: " + rec.error->message + "; nothing was run (no run record written)");
    out.exit_code = kFailed;
    out.record_path.clear();
    return out;
  }
  if (!lead) {
    if (rec.complete()) return out;
    if (!x.failure_shown)
      report.message("recipebench run: rank " + std::to_string(o.place.rank) + " failed: " + rec.error->message);
    out.exit_code = kFailed;
    return out;
  }
  rec.finished_at = utc_timestamp(Clock::now());
  rec.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - launch_steady).count();
  merge_backend_report(backend, rec, report);
  if (rec.complete()) rec.metrics = compute_metrics(rec, recipe, m.model, x.devices);
  summarise_emulation(rec);
  // Bytes of a log that are not UTF-8 are written as U+FFFD; the name is the one the record took.
  out.record_path =
      write_new_record(out.record_path, rec.to_json().dump(2, ' ', false, Json::error_handler_t::replace) + "\n");
  for (auto* r : reporters) r->finish(rec, out.record_path, x.failure_shown);
  out.exit_code = rec.complete() || rec.status == RunStatus::kEmulated ? kOk : kFailed;
  out.record = std::move(rec);
  return out;
}

/// Everything after validation: settings, model, checks, dry run, backend, ranks, then run_placed.
RunOutcome drive(const RunRequest& q, const ValidatedRecipe& v, const std::vector<RunReporter*>& reporters,
                 Clock::time_point launch, std::chrono::steady_clock::time_point launch_steady) {
  const Reporters report{reporters};
  const Recipe& recipe = *v.recipe;
  RunOptions o = effective_options(recipe, q);
  const RunModel m = resolve_model(q, recipe);
  refuse_model_family(o, recipe, m);
  const std::optional<RankMap> map = rank_map_or_none(recipe, m.model);
  const SwitchContext ctx{recipe, o.settings, map};
  const BackendCapabilities* caps = check_backend_capabilities(q, v, o, ctx, report);
  refuse_conflicting_switches(q, v, ctx, report);
  refuse_emulation(q, o, recipe, map, caps, report);
  refuse_log_of_another_run(v, o, report);
  o.effects = layout_effects(ctx);
  RunOutcome out;
  if (q.dry_run) {  // the run's device (recipe_device: gpu.type when bench.device is absent), as `run` plans it
    const std::string text = dry_run_text(q.recipe_path, recipe, m.model, o, host_of(q));
    for (auto* r : reporters) r->dry_run(text);
    return out;
  }
  refuse_what_the_host_cannot_run(q, recipe, m, o, caps);
  auto backend = backend_or_refuse(o.settings.backend);
  check_out_dir(q.out_dir);
  RunRecord rec = new_record(q, recipe, m, o, launch);
  rec.emulation = emulation_of(recipe, m, o, map);
  if (caps->launch == Launch::kPerRank) rec.capabilities = caps->to_json();
  const std::string stem = std::filesystem::path(q.recipe_path).stem().string();
  out.record_path = q.out_dir + "/" + stem + "-" + utc_timestamp(launch, "%Y%m%dT%H%M%SZ") + ".json";
  // Rank 0 killed by a signal writes no record: the launcher writes the failed one (launch/run_guard.h).
  auto on_lead_died = [&](int status) {
    rec.options = o;
    rec.options.place.world = q.nproc.value_or(static_cast<int>(recipe.layout.world()));
    const std::string path = write_lead_died_record(rec, q.out_dir, stem, launch, launch_steady, status);
    report.message("  run record (status failed): " + path);
  };
  if (auto launched = place(q, recipe, o, out.record_path, report, on_lead_died)) {
    out.exit_code = *launched;
    return out;
  }
  return run_placed(*backend, q, recipe, m, o, *caps, rec, std::move(out), ctx, reporters, launch_steady);
}

}  // namespace

RunOutcome run_recipe(const RunRequest& request, const std::vector<RunReporter*>& reporters) {
  // SIGINT / SIGTERM are noted, then end the run with a failed record; a dry run writes no record and keeps the
  // signals' default action, so it stops at once whatever it is computing.
  if (!request.dry_run) watch_interrupts();
  const auto launch = Clock::now();
  const auto launch_steady = std::chrono::steady_clock::now();
  const Reporters report{reporters};
  try {
    const ValidatedRecipe v = load_recipe(request, report);
    return drive(request, v, reporters, launch, launch_steady);
  } catch (const Refusal& r) {
    report.message(r.message);
    RunOutcome out;
    out.exit_code = r.code;
    return out;
  }
}

}  // namespace recipebench
