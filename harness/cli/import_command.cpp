// `recipebench import LOG --recipe RECIPE [--format F] [--out DIR] [--steps N] [--window A:B]`: a log of a run made
// outside recipebench read by the command backend's parsers (docs/command-backend.md) into a run record, written
// like `run`'s (atomically, a new name) with its figures computed by the same code. Exit 0 when the record is
// complete, 1 when it is failed (a log with too few steps or unreadable lines), 2 on usage errors.
#include <CLI/CLI.hpp>

#include <filesystem>
#include <memory>

#include "commands.h"
#include "console/console_reporter.h"
#include "option_checks.h"
#include "run/run_driver.h"

namespace recipebench::cli {

namespace {

struct ImportArgs {
  std::string log, recipe;
  std::optional<std::string> window;
  RunRequest request;
};

}  // namespace

void add_import_command(CLI::App& app, std::function<int()>& run) {
  auto* cmd = app.add_subcommand("import", "Turn the training log of a run made outside recipebench into a run record");
  auto a = std::make_shared<ImportArgs>();
  RecipeBench& overrides = a->request.overrides;
  cmd->add_option("log", a->log,
                  "The training log (Megatron-LM, TorchTitan, Hugging Face Trainer-style or any "
                  "format a regex reads)")
      ->required();
  cmd->add_option("--recipe", a->recipe, "The recipe the run followed (model, GPUs, workload, layout)")->required();
  cmd->add_option("--log-format", overrides.log_format,
                  "megatron, torchtitan, hf or regex:<pattern with named groups> (default: the recipe's "
                  "bench.log_format, else detected)");
  cmd->add_option("--out", a->request.out_dir, "Folder for the run record (default reports/runs)");
  cmd->add_option("--steps", overrides.steps, "Steps the record keeps (default: the recipe's bench.steps, else 20)")
      ->check(integer_in(1, 2'147'483'647));
  cmd->add_option("--window", a->window, "Timed window FIRST:LAST, both included (default 5:19)");
  cmd->callback([&run, a] {
    RunRequest q = a->request;
    if (a->window) q.overrides.window = parse_window(*a->window);
    if (!std::filesystem::is_regular_file(a->log))
      throw CLI::ValidationError("log", "no such log file (or not a regular file): " + a->log);
    q.recipe_path = a->recipe;
    q.overrides.backend = "command";
    q.import_log = a->log;
    q.build = BuildInfo{RECIPEBENCH_VERSION, RECIPEBENCH_GIT_COMMIT, RECIPEBENCH_BUILD_TYPE};
    run = [q]() -> int {
      if (refuse_output_folder(q.out_dir)) return kUsage;  // before the log is read
      ConsoleReporter console;
      return run_recipe(q, {&console}).exit_code;
    };
  });
}

}  // namespace recipebench::cli
