#include "run/admission.h"

#include <algorithm>
#include <stdexcept>

#include "backend/backend.h"
#include "launch/run_guard.h"
#include "logparse/line_parser.h"
#include "logparse/log_facts.h"
#include "logparse/log_format.h"
#include "logparse/log_reader.h"
#include "run/emulation.h"
#include "run/host_admission.h"
#include "util/exit_code.h"
#include "util/format.h"

namespace recipebench {

RankVariables read_rank_variables() {
  RankVariables v;
  try {
    v.env = rank_env();
  } catch (const std::invalid_argument& e) {
    v.problem = e.what();
  }
  return v;
}

namespace {

/// Refuses (exit 2), before any rank starts, a model outside the families a per-rank backend builds (its capability
/// table's model_families; a dry run prints such a model's rank map and says the plan is not made): the torch backend trains the Qwen3.5 / Qwen3-Next family only; the command backend runs
/// any model.
std::optional<Refusal> model_family(const Admission& a) {
  if (!a.caps || a.caps->model_families.empty()) return std::nullopt;
  const auto& f = a.caps->model_families;
  const RunModel& m = a.run.model;
  if (std::find(f.begin(), f.end(), m.model.family) != f.end()) return std::nullopt;
  return Refusal{kUsage,
                 "recipebench run: the " + a.run.settings().backend +
                     " backend trains the Qwen3.5 MoE / Qwen3-Next family only (qwen3_5_moe, qwen3_5_moe_text, "
                     "qwen3_next); " +
                     a.recipe().model + " " + family_clause(m.model) + " (" + m.counts_note +
                     "): run it with its own stack (bench.backend: command, docs/command-backend.md) or import its "
                     "log; nothing was run",
                 {}};
}

/// A log format that is not one, or whose regex does not compile (exit 1, located).
std::optional<Refusal> log_format_refusal(const Admission& a) {
  const std::optional<std::string>& format = a.run.options.command.log_format;
  if (!format) return std::nullopt;
  std::string problem = "a format recipebench reads";
  try {
    if (const auto spec = parse_log_format(*format)) {
      make_line_parser(*spec);
      return std::nullopt;
    }
  } catch (const std::invalid_argument& e) {
    problem = e.what();
  }
  const std::string expected = "megatron, torchtitan, hf or regex:<pattern with named groups> (" + problem + ")";
  return Refusal{kFailed,
                 "recipebench run: the log format cannot be read; nothing was run",
                 {setting_diagnostic(*a.validated.source, a.request.overrides.log_format.has_value(), "--log-format",
                                     "/bench/log_format", *format, expected)}};
}

/// A per-rank backend reads no log and runs no command: bench.log_format / --log-format and bench.timeout_seconds /
/// --timeout given to it are refused (located; exit 2 when the command line gave one, else 1), never ignored.
std::optional<Refusal> command_settings_refusal(const Admission& a) {
  const RunOptions& o = a.run.options;
  const RecipeBench& cl = a.request.overrides;
  const std::string why = "absent (the " + o.settings.backend +
                          " backend reads no log and runs no command: it is the command backend's setting)";
  Refusal r{kFailed,
            "recipebench run: the " + o.settings.backend + " backend would ignore the settings above; nothing was run",
            {}};
  if (const auto& f = o.command.log_format)
    r.diagnostics.push_back(setting_diagnostic(*a.validated.source, cl.log_format.has_value(), "--log-format",
                                               "/bench/log_format", *f, why));
  if (const auto& t = o.command.timeout_seconds)
    r.diagnostics.push_back(setting_diagnostic(*a.validated.source, cl.timeout_seconds.has_value(), "--timeout",
                                               "/bench/timeout_seconds", shortest(*t), why));
  if (r.diagnostics.empty()) return std::nullopt;
  if (cl.log_format || cl.timeout_seconds) r.code = kUsage;
  return r;
}

/// What the backend does not run (exit 1, one located diagnostic per field): a per-node backend every engaged
/// backend switch (settings/switches.h) and an unreadable log format, a per-rank one the command backend's settings
/// and the fields its capability table does not list. No table (no such backend): make_backend refuses it later, a
/// dry run goes on unchecked.
std::optional<Refusal> backend_capabilities(const Admission& a) {
  if (!a.caps) return std::nullopt;
  const auto& families = a.caps->model_families;  // a model the backend does not build: model_family refuses it
  if (!families.empty() && std::find(families.begin(), families.end(), a.run.model.model.family) == families.end())
    return std::nullopt;
  const std::string& name = a.run.settings().backend;
  const RecipeBench& cl = a.request.overrides;
  if (a.caps->launch == Launch::kPerNode) {  // the command decides the layout; only its log format is checked
    if (auto r = log_format_refusal(a)) return r;
    Diagnostics ignored = per_node_refusals(name, a.run.switch_context(), *a.validated.source, a.recipe().bench, cl);
    if (ignored.empty()) return std::nullopt;
    return Refusal{kFailed,
                   "recipebench run: the " + name +
                       " backend would ignore the settings above (its command's own); nothing was run",
                   std::move(ignored)};
  }
  if (auto r = command_settings_refusal(a)) return r;
  const CapabilityOverrides given{cl.device.has_value(), cl.data.path.has_value()};
  const RunSettings& s = a.run.settings();
  Diagnostics refused =
      check_capabilities(name, *a.caps, a.recipe(), *a.validated.source, s.device, s.data.source, given);
  if (refused.empty()) return std::nullopt;
  return Refusal{kFailed,
                 "recipebench run: the " + name + " backend does not run what the recipe asks for; nothing was run",
                 std::move(refused)};
}

/// The switch combinations no run can honour (settings/switches.h switch_conflicts), exit 2, located.
std::optional<Refusal> conflicting_switches(const Admission& a) {
  const SwitchContext ctx = a.run.switch_context();
  for (const SwitchConflict& c : switch_conflicts()) {
    const std::string expected = c.check(ctx);
    if (expected.empty()) continue;
    const RunSwitch& s = run_switch(c.field);
    return Refusal{
        kUsage,
        std::string("recipebench run: ") + c.why + "; nothing was run",
        {switch_diagnostic(s, *a.validated.source, a.request.overrides, switch_value_text(s, ctx.settings), expected)}};
  }
  return std::nullopt;
}

/// --emulate-rank where it cannot run: a backend that cannot emulate (exit 1, by name), with --nproc or under a
/// launcher's rank variables, a rank outside the layout or --layers outside its stage (exit 2, located).
std::optional<Refusal> emulation(const Admission& a) {
  const RunSettings& s = a.run.settings();
  if (!s.emulate_rank) return std::nullopt;
  if (!a.caps || !a.caps->emulate_rank)
    return Refusal{kFailed,
                   "recipebench run: --emulate-rank: the " + s.backend +
                       " backend cannot emulate a rank (it does not build the layout's ranks itself); nothing was run",
                   {}};
  if (a.request.nproc)
    return Refusal{kUsage, "recipebench run: --emulate-rank runs one process alone; drop --nproc", {}};
  if (a.ranks.world() > 1)
    return Refusal{kUsage,
                   "recipebench run: --emulate-rank runs one process alone, but this one is a rank of " +
                       std::to_string(a.ranks.world()) + " (launcher variables); run it without a launcher",
                   {}};
  if (!a.run.map) return std::nullopt;  // the backend refuses the layout with the reason
  if (const auto d = emulation_diagnostic(s, *a.run.map, a.recipe().layout.label))
    return Refusal{kUsage,
                   "recipebench run: " + d->path + ": " +
                       (d->path == "--emulate-rank" ? "no such rank to emulate" : "refused for this rank") +
                       "; nothing was run",
                   {*d}};  // the option at fault: a bad --layers is no missing rank
  return std::nullopt;
}

/// `recipebench import`: a log whose own lines say it is of another run than the recipe (its world size, parallel
/// degrees, global batch or sequence length; logparse/log_facts.h), exit 1, one located diagnostic each at the log
/// line, naming the recipe's field. A log that cannot be read is left to the backend (a failed record saying why).
std::optional<Refusal> log_of_another_run(const Admission& a) {
  const RunOptions& o = a.run.options;
  if (o.command.import_log.empty()) return std::nullopt;
  const Recipe& recipe = a.recipe();
  std::optional<LogFormatSpec> format;
  if (o.command.log_format) format = parse_log_format(*o.command.log_format);
  LogContext context;
  context.file = o.command.import_log;
  context.row_tokens = recipe.workload.row_tokens;
  if (recipe.workload.global_batch > 0) context.global_batch = recipe.workload.global_batch;
  context.gpus = std::max(1, recipe.gpu.count);
  ParsedLog log;
  try {
    log = read_log_file(o.command.import_log, format, context);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  Diagnostics contradictions =
      check_log_against_recipe(log, o.command.import_log, recipe, a.validated.source.get(), o.settings.window);
  if (contradictions.empty()) return std::nullopt;
  return Refusal{kFailed,
                 "recipebench import: the log is of another run than the recipe describes (above); no record was "
                 "written",
                 std::move(contradictions)};
}

/// A backend this build does not have (exit 2, naming the ones it has).
std::optional<Refusal> backend_in_build(const Admission& a) {
  const std::string& name = a.run.settings().backend;
  const std::vector<std::string> names = backend_names();
  if (std::find(names.begin(), names.end(), name) != names.end()) return std::nullopt;
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  // Declared, not built (the torch-less binary without recipebench-torch beside it: docs/architecture.md).
  const std::string where =
      a.caps ? "; recipebench-" + name + ", which runs it, is not beside this binary (a build without libtorch)" : "";
  return Refusal{kUsage,
                 "recipebench run: no backend '" + name + "' in this build (available: " +
                     (list.empty() ? "none: configure with libtorch for the torch backend" : list) + ")" + where,
                 {}};
}

/// --out, checked before step 0 by the process that writes the record (rank 0, or the launcher): a run never ends
/// unable to write it (exit 2, util/output_dir.h's reason).
std::optional<Refusal> record_folder(const Admission& a) {
  if (!a.ranks.env || a.ranks.env->rank != 0) return std::nullopt;  // placing refuses bad variables
  if (const std::string problem = out_dir_problem(a.request.out_dir); !problem.empty())
    return Refusal{kUsage, "recipebench run: " + problem, {}};
  return std::nullopt;
}

}  // namespace

const std::vector<AdmissionCheck>& admission_checks() {
  using S = AdmissionStage;
  static const std::vector<AdmissionCheck> checks{
      {"model family", S::kStart, model_family},
      {"backend capabilities", S::kAlways, backend_capabilities},
      {"switch conflicts", S::kAlways, conflicting_switches},
      {"emulated rank", S::kAlways, emulation},
      {"log of another run", S::kAlways, log_of_another_run},
      {"host", S::kStart, host_refusal},
      {"backend in this build", S::kStart, backend_in_build},
      {"record folder", S::kStart, record_folder},
  };
  return checks;
}

void admit(const Admission& a, bool dry_run) {
  for (const AdmissionCheck& c : admission_checks()) {
    if (dry_run && c.stage == AdmissionStage::kStart) continue;
    if (std::optional<Refusal> r = c.check(a)) throw std::move(*r);
  }
}

}  // namespace recipebench
