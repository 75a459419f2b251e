// The CLI's subcommands. Each adds itself to the app and returns the exit code through `run`.
#pragma once

#include <functional>

#include <string>
#include <vector>

#include "report/leaderboard.h"
#include "util/exit_code.h"

namespace CLI {
class App;
}

namespace recipebench::cli {

/// Registers a subcommand on `app`; sets `run` to the function that executes it after parsing.
void add_validate_command(CLI::App& app, std::function<int()>& run);
void add_report_command(CLI::App& app, std::function<int()>& run);
void add_models_command(CLI::App& app, std::function<int()>& run);
/// `args`: the command line after the program's name, handed on unchanged when `run` becomes the binary that has the
/// run's backend (backend_handoff.h).
void add_run_command(CLI::App& app, std::function<int()>& run, std::vector<std::string> args);
void add_compare_command(CLI::App& app, std::function<int()>& run);
void add_converge_command(CLI::App& app, std::function<int()>& run);
void add_import_command(CLI::App& app, std::function<int()>& run);
void add_predict_command(CLI::App& app, std::function<int()>& run);
void add_plan_command(CLI::App& app, std::function<int()>& run);

/// "5:19" -> {5, 19} (`run --window`, `import --window`); throws CLI::ValidationError otherwise.
StepWindow parse_window(const std::string& text);

/// The output-folder rule of every command that writes files into a folder the user names (`report`, `plan`,
/// `import`, `run`: --out), applied first, before anything is read, searched or created: util/output_folder.h.
/// Prints `<command line>: error: --out: <found>, expected <expected>` and returns true when `out` is refused.
bool refuse_output_folder(const std::string& out);

/// Reads and checks the run record `file` (record/run_record_check.h) and appends it to `runs`; skips a
/// leaderboard.json an earlier report wrote. Prints each problem as a located diagnostic; false when the file is
/// refused.
bool add_run_record(const std::string& file, std::vector<RunRecordInput>& runs);

/// add_run_record for a command that takes run records only (`predict --profile`, `converge`): an earlier report's
/// leaderboard.json is refused too ("FILE: error: schema: a leaderboard ..., expected a run record ..."), never
/// skipped without a word. True when one record was appended.
bool add_one_run_record(const std::string& file, std::vector<RunRecordInput>& runs);

}  // namespace recipebench::cli
