// The run driver: everything `recipebench run` does between parsing its command line and exiting. The recipe is
// validated, its effective settings resolved (bench block, then the request's overrides), the ranks found or
// started, the backend run, the metrics computed, and each event handed to the reporters (console/reporter.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "console/reporter.h"
#include "metrics/metrics.h"
#include "recipe/enums.h"
#include "recipe/recipe.h"
#include "record/run_record.h"
#include "util/host.h"

namespace recipebench {

/// The facts of the binary that ran, for the run record's environment block.
struct BuildInfo {
  std::string version = "unknown", commit = "unknown", build_type = "unknown";
};

/// One `recipebench run` invocation as data: the recipe and the command line's overrides, one overlay of the
/// recipe's bench block (a field set in `overrides` wins over the recipe's; unset ones are the recipe's, else the
/// defaults of RunSettings). `overrides.data.path` set means --data (rows from that file).
struct RunRequest {
  std::string recipe_path;                 ///< the recipe file, or the label of `recipe_text` ("<embedded>/...")
  std::optional<std::string> recipe_text;  ///< recipe YAML already in memory (the embedded default recipe)
  RecipeBench overrides;                   ///< --backend, --steps, --window, ..., every switch's option, --data,
                                           ///< --format (log_format), --timeout (timeout_seconds)
  std::optional<std::string> model_config;  ///< --model-config: a Hugging Face config.json instead of the registry's
  std::optional<int> nproc;                 ///< --nproc: ranks to start on this host
  bool oversubscribe = false;               ///< --oversubscribe: --nproc may start more than 4 ranks per core
  std::optional<int> emulate_rank;          ///< --emulate-rank: run this rank of the layout alone (run/emulation.h)
  std::optional<std::string> import_log;    ///< `recipebench import LOG`: the command backend reads LOG, runs nothing
  bool profile = false;
  bool dry_run = false;                  ///< report the rank map and stop; runs nothing
  std::string out_dir = "reports/runs";  ///< folder of the run record
  BuildInfo build;
  /// This host's CUDA devices and available memory, held against the run before anything is built; nullopt: this
  /// machine's (util/host.h host_devices; tests give their own).
  std::optional<HostDevices> host;
};

/// What the driver did. `record` is set on rank 0 once a run started (complete or failed).
struct RunOutcome {
  int exit_code = 0;  ///< ExitCode (util/exit_code.h): 0 complete, 1 failed, 2 usage error
  std::optional<RunRecord> record;
  std::string record_path;  ///< where the record was written (empty when none)
};

/// Runs `request`, calling every reporter in order on each event. On rank 0 the driver writes the run record
/// (atomically, schema/run-record.schema.json) before the reporters' finish, which get its final path. Refusals (a
/// recipe failing validation, a window outside the steps, an unknown model or backend, a rank count that does not fit
/// the layout) are reported through RunReporter::message and give exit code 1 or 2 without starting the backend. A
/// backend's RunError gives a failed record and exit code 1. With request.nproc > 1 this process starts the ranks
/// (launch/launch.h) and returns their exit code. Throws only on I/O failures (e.g. the record's folder cannot be
/// written).
RunOutcome run_recipe(const RunRequest& request, const std::vector<RunReporter*>& reporters);

/// The backend `request` runs on, as run_recipe resolves it (settings/resolved_run.h merged_options: --backend, else
/// the recipe's bench.backend, else torch), read without reporting anything; nullopt when the recipe is missing or
/// fails validation (run_recipe then reports why). Throws nothing.
std::optional<std::string> run_backend(const RunRequest& request);

}  // namespace recipebench
