// The run driver: everything `recipebench run` does between parsing its command line and exiting. The recipe is
// validated, its effective settings resolved (bench block, then the request's overrides), the ranks found or
// started, the backend run, the metrics computed, and each event handed to the reporters (run/reporter.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "metrics/metrics.h"
#include "recipe/enums.h"
#include "run/reporter.h"
#include "run/run_record.h"

namespace recipebench {

/// The facts of the binary that ran, for the run record's environment block.
struct BuildInfo {
  std::string version = "unknown", commit = "unknown", build_type = "unknown";
};

/// One `recipebench run` invocation as data: the recipe and the command line's overrides (unset = the recipe's
/// bench block, else the defaults of RunOptions).
struct RunRequest {
  std::string recipe_path;                 ///< the recipe file, or the label of `recipe_text` ("<embedded>/...")
  std::optional<std::string> recipe_text;  ///< recipe YAML already in memory (the embedded default recipe)
  std::optional<std::string> backend, data_path, model_config;
  std::optional<Device> device;
  std::optional<int> steps, nproc;
  std::optional<StepWindow> window;
  std::optional<int64_t> layers;
  std::optional<uint64_t> seed;
  std::optional<bool> deterministic;                   ///< --deterministic true|false (bench.deterministic)
  std::optional<Kernels> kernels;                      ///< --kernels fused|ops (bench.kernels)
  std::optional<bool> overlap_grad_reduce;             ///< --overlap-grad-reduce (bench.overlap_grad_reduce)
  std::optional<int64_t> grad_reduce_bucket_elements;  ///< --grad-reduce-bucket-elements (bench.grad_reduce_...)
  std::optional<bool> fail_on_sync;                    ///< --fail-on-sync[=true|false] (bench.fail_on_sync)
  std::optional<bool> overlap_param_gather;  ///< --overlap-param-gather[=true|false] (bench.overlap_param_gather)
  std::optional<bool> overlap_p2p_comm;                ///< --overlap-p2p-comm (bench.overlap_p2p_comm)
  std::optional<bool> overlap_tp_comm;                 ///< --overlap-tp-comm (bench.overlap_tp_comm)
  std::optional<EpDispatch> ep_dispatch;               ///< --ep-dispatch host_splits|fixed_capacity (bench.ep_dispatch)
  std::optional<std::string> log_format;  ///< --format (bench.log_format): the command backend's log parser
  std::optional<double> timeout_seconds;  ///< --timeout (bench.timeout_seconds): the command backend's limit, s
  std::optional<std::string> import_log;  ///< `recipebench import LOG`: the command backend reads LOG, runs nothing
  bool profile = false;
  bool dry_run = false;                  ///< report the rank map and stop; runs nothing
  std::string out_dir = "reports/runs";  ///< folder of the run record
  BuildInfo build;
};

/// What the driver did. `record` is set on rank 0 once a run started (complete or failed).
struct RunOutcome {
  int exit_code = 0;  ///< ExitCode (util/exit_code.h): 0 complete, 1 failed, 2 usage error
  std::optional<RunRecord> record;
  std::string record_path;  ///< where the record was reported (empty when none)
};

/// Runs `request`, calling every reporter in order on each event (a RecordWriter before a ConsoleReporter
/// writes the record before the console names it). Refusals (a recipe failing validation, a window outside
/// the steps, an unknown model or backend, a rank count that does not fit the layout) are reported through
/// RunReporter::message and give exit code 1 or 2 without starting the backend. A backend's RunError gives a
/// failed record and exit code 1. With request.nproc > 1 this process starts the ranks (run/launch.h) and
/// returns their exit code. Throws only on I/O failures (e.g. the record's folder cannot be written).
RunOutcome run_recipe(const RunRequest& request, const std::vector<RunReporter*>& reporters);

}  // namespace recipebench
