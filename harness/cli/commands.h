// The CLI's subcommands. Each adds itself to the app and returns the exit code through `run`.
#pragma once

#include <functional>

#include "util/exit_code.h"

namespace CLI {
class App;
}

namespace recipebench::cli {

/// Registers a subcommand on `app`; sets `run` to the function that executes it after parsing.
void add_validate_command(CLI::App& app, std::function<int()>& run);
void add_report_command(CLI::App& app, std::function<int()>& run);
void add_models_command(CLI::App& app, std::function<int()>& run);
void add_run_command(CLI::App& app, std::function<int()>& run);

}  // namespace recipebench::cli
