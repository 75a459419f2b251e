// `recipebench run [RECIPE] [--backend B] [--steps N] [--window A:B] [--out DIR] [--layers N] [--device D] ...`:
// parses the command line into a RunRequest and hands it to the run driver (run/run_driver.h) with the
// run-record writer and the console's progress table as reporters.
#include <CLI/CLI.hpp>

#include <deque>
#include <memory>
#include <type_traits>
#include <variant>

#include "backend_handoff.h"
#include "commands.h"
#include "console/console_reporter.h"
#include "default_recipe.h"
#include "option_checks.h"
#include "run/run_driver.h"
#include "settings/switches.h"

namespace recipebench::cli {

StepWindow parse_window(const std::string& s) {
  const auto colon = s.find(':');
  try {
    if (colon == std::string::npos) throw std::invalid_argument(s);
    return StepWindow{std::stoi(s.substr(0, colon)), std::stoi(s.substr(colon + 1))};
  } catch (const std::exception&) {
    throw CLI::ValidationError("--window", "expected FIRST:LAST step numbers, e.g. 5:19, got '" + s + "'");
  }
}

namespace {

/// One switch's command-line value as CLI11 leaves it: a boolean flag's value, or any other value's text.
struct SwitchArg {
  const RunSwitch* row = nullptr;
  CLI::Option* option = nullptr;  ///< counted: set means the command line overrides the recipe's bench.<field>
  bool flag = false;
  std::string text;
};

/// What CLI11 fills in; turned into a RunRequest once parsing is done.
struct Args {
  std::string recipe;
  std::optional<std::string> window, device;
  std::deque<SwitchArg> switches;  ///< one per row of run_switches(); a deque keeps their addresses
  RunRequest request;
};

/// The command-line value of switch `a` into the request's overlay of the recipe's bench block (CLI11 checked it).
void set_override(const SwitchArg& a, RecipeBench& overrides) {
  const bool boolean = std::holds_alternative<SwitchMember<bool>>(a.row->member);
  set_switch_text(*a.row, boolean ? (a.flag ? "true" : "false") : a.text, overrides);
}

/// The names of a closed set, for CLI11's IsMember check.
template <typename E>
std::vector<std::string> names_of() {
  const auto& n = EnumNames<E>::names;
  return std::vector<std::string>(n.begin(), n.end());
}

/// One option per switch (settings/switches.h): a boolean is a flag, `--x` or `--x=true|false` (a bare `--x` never
/// takes the next argument); an integer is range-checked; a closed set takes one of its names.
void add_switch_options(CLI::App& cmd, Args& a) {
  for (const RunSwitch& row : run_switches()) {
    SwitchArg& arg = a.switches.emplace_back();
    arg.row = &row;
    std::visit(
        [&](const auto& m) {
          using T = typename std::decay_t<decltype(*(RecipeBench{}.*(m.bench)))>;
          if constexpr (std::is_same_v<T, bool>) {
            arg.option = cmd.add_flag(row.option, arg.flag, std::string("[=true|false] ") + row.help);
          } else if constexpr (std::is_integral_v<T>) {
            arg.option = cmd.add_option(row.option, arg.text, row.help)->check(integer_in(row.min, row.max));
          } else {
            arg.option = cmd.add_option(row.option, arg.text, row.help)->check(CLI::IsMember(names_of<T>()));
          }
        },
        row.member);
  }
}

void add_options(CLI::App& cmd, Args& a) {
  RunRequest& q = a.request;
  RecipeBench& b = q.overrides;
  cmd.add_option("recipe", a.recipe, "Recipe file (default: the embedded " + std::string(kDefaultRecipeName) + ")");
  cmd.add_option("--backend", b.backend, "Backend (default: the recipe's bench.backend, else torch)");
  cmd.add_option("--window", a.window, "Timed window FIRST:LAST, both included (default 5:19)");
  cmd.add_option("--out", q.out_dir, "Folder for the run record (default reports/runs)");
  cmd.add_option("--layers", b.layers,
                 "Decoder layers of a proxy run (default: the model's); with --emulate-rank, the layers of the "
                 "emulated rank's pipeline stage that run (default: all of them)")
      ->check(integer_in(1, 65536));  // bench.layers' bound (schema layerCount): a dry run stays milliseconds
  cmd.add_option("--emulate-rank", q.emulate_rank,
                 "Run rank R of the recipe's layout alone, at the model's real widths, every collective stood in "
                 "(a record of status emulated, never ranked; docs/emulation.md)")
      ->check(integer_in(0, 2'147'483'647));
  cmd.add_option("--device", a.device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  cmd.add_option("--seed", b.seed, "Data and initialisation seed");
  add_switch_options(cmd, a);
  cmd.add_option("--model-config", q.model_config,
                 "Hugging Face config.json of the model to build instead of the registry's widths");
  cmd.add_flag("--profile", q.profile,
               "Synchronise between forward, backward and optimizer to time each phase (adds device syncs)");
  cmd.add_option("--nproc", q.nproc,
                 "Ranks to start on this host (one process each; CPU: Gloo). Without it the rank comes from "
                 "torchrun-style (RANK, WORLD_SIZE...) or Slurm variables (docs/distributed.md)")
      ->check(integer_in(1, 1024));
  cmd.add_flag("--oversubscribe", q.oversubscribe,
               "With --nproc: start the ranks even past 4 per core of this host (tests of large layouts on a small "
               "host; the timings mean nothing). Without it such a --nproc is refused");
  cmd.add_option("--log-format", b.log_format,
                 "Command backend: how to read its step lines, megatron, torchtitan, hf or regex:<pattern> "
                 "(default: the recipe's bench.log_format, else detected; refused by a backend that reads no log)");
  cmd.add_option("--timeout", b.timeout_seconds,
                 "Command backend: stop the command's process group after this many seconds (default: the "
                 "recipe's bench.timeout_seconds, else none; refused by a backend that runs no command)")
      ->check(finite_positive());
  cmd.add_option("--data", b.data.path, "Pre-tokenized rows file (docs/data-format.md) instead of synthetic rows");
  cmd.add_flag("--dry-run", q.dry_run,
               "Print the rank map (each rank's TP, CP, DP, PP, ETP, EP, EDP coordinates, layers per virtual stage, "
               "microbatches, schedule) and exit; needs no GPU and runs nothing");
}

}  // namespace

void add_run_command(CLI::App& app, std::function<int()>& run, std::vector<std::string> args) {
  auto* cmd = app.add_subcommand("run", "Run a recipe's training steps on a backend and write a run record");
  auto a = std::make_shared<Args>();
  add_options(*cmd, *a);
  cmd->callback([&run, a, args = std::move(args)] {
    RunRequest q = a->request;
    if (a->window) q.overrides.window = parse_window(*a->window);
    if (a->device) q.overrides.device = parse_enum<Device>(*a->device);  // one of them: CLI11 checked it
    for (const SwitchArg& s : a->switches)
      if (s.option->count() > 0) set_override(s, q.overrides);
    if (a->recipe.empty()) {
      q.recipe_path = std::string("<embedded>/") + kDefaultRecipeName;
      q.recipe_text = std::string(kDefaultRecipeYaml);
    } else {
      q.recipe_path = a->recipe;
    }
    q.build = BuildInfo{RECIPEBENCH_VERSION, RECIPEBENCH_GIT_COMMIT, RECIPEBENCH_BUILD_TYPE};
    run = [q, args]() -> int {
      hand_off_run(q, args);  // a backend this binary only declares: returns only when nothing is handed on
      if (refuse_output_folder(q.out_dir)) return kUsage;  // before the recipe is read
      ConsoleReporter console;
      return run_recipe(q, {&console}).exit_code;
    };
  });
}

}  // namespace recipebench::cli
