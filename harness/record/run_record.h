// Run records: what one `recipebench run` measured, as JSON (schema/run-record.schema.json).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "metrics/metrics.h"
#include "recipe/diagnostic.h"
#include "recipe/enums.h"
#include "util/json.h"

namespace recipebench {

/// The metrics of docs/metrics.md computed from a run's samples. Measured figures come from the samples;
/// MFU and $ are computed (null when the model or the GPU's peak / price is unknown, e.g. CPU runs).
struct RunMetrics {
  WindowMetrics window;
  std::optional<double> mfu;                     ///< fraction
  std::optional<double> usd_per_million_tokens;  ///< $
  std::optional<double> usd_per_gpu_hour;
  std::string price_source;
  double peak_flops = 0;
  int64_t active_params = 0;
  double gpu_hours = 0;
  int64_t peak_memory_bytes = 0;
  double harness_overhead_fraction = 0;  ///< measured: loop time outside steps and data, / mean step time
  Json to_json() const;
};

/// How a run ended: complete (every step ran, metrics present), failed (an error, no metrics) or emulated (every step
/// of one rank ran alone with its collectives stood in, docs/emulation.md: no metrics, never ranked). A closed set.
enum class RunStatus { kComplete, kFailed, kEmulated };
template <>
struct EnumNames<RunStatus> {
  static constexpr std::array<const char*, 3> names{"complete", "failed", "emulated"};
};

/// Why a run stopped (the record's `error` block).
struct RunFailure {
  std::optional<int> step;            ///< the step (0-based) that failed; nullopt before the first step
  std::string message;                ///< what happened, for the user
  std::vector<std::string> log_tail;  ///< the command backend: the last lines (at most 50) of the command's log
  /// {"step": n | null, "message": "...", "log_tail": [...] (when any)}.
  Json to_json() const;
};

/// Where and with what the run happened (the record's `environment` block).
struct RunEnvironment {
  std::string host, compiler, recipebench_version, recipebench_commit;
  std::optional<std::string> os;          ///< "Linux 6.1.0 x86_64"
  std::optional<int> cpu_cores;           ///< the host's online cores
  std::optional<std::string> build_type;  ///< CMake's, "Release"
  /// The devices the backend used, once it accepted the run (its environment(); memory in bytes).
  std::optional<BackendEnvironment> device;
  Json recipe_env_applied;  ///< null, or the recipe's env block as set for the run
  /// The block as schema/run-record.schema.json has it; absent members are left out.
  Json to_json() const;
};

/// One run, complete or failed (RunStatus).
struct RunRecord {
  std::string recipe_path, recipe_sha256;
  Json recipe;  ///< the recipe document as validated (the leaderboard reads model, gpu, workload, layout)
  RunOptions options;
  std::string model_name;
  int64_t model_layers = 0, model_layers_full = 0;
  Json model_config;                    ///< null (registry widths) or {"path", "sha256"} of a config.json
  std::string started_at, finished_at;  ///< UTC ISO 8601
  double wall_seconds = 0;              ///< process launch to finish, startup included
  RunEnvironment environment;           ///< host, device, versions, compiler, recipebench commit
  Json capabilities;                    ///< the backend's capability table the run was checked against (null for a
                                        ///< per-node backend, which runs the recipe's own command)
  Json log;  ///< null, or where the figures were parsed from: {"source", "path", "sha256", "parser", ...}
  std::vector<StepSample> steps;
  std::optional<RunMetrics> metrics;
  std::optional<ModelBuild> model_build;  ///< absent when the backend reported no model build
  /// An emulated rank's block (run/emulation.h: the rank, its place and layers, the plan, the window's traffic);
  /// null for a real run. Kept as written when read back.
  Json emulation;
  RunStatus status = RunStatus::kFailed;
  std::optional<RunFailure> error;  ///< set when failed
  Json to_json() const;

  /// The record that to_json() wrote, read back typed (schema/run-record.schema.json). `file` names the record
  /// in errors. Throws InputError located by file and field path, e.g.
  /// `r.json: error: metrics.tokens_per_s_per_gpu: string 'fast', expected a number`, when a field the record
  /// must hold is missing, of another type, or an integer out of its type's range. It checks types, not figures:
  /// check_run_record() (record/run_record_check.h) checks the figures against the steps.
  static RunRecord from_json(const Json& j, const std::string& file);

  // Facts from `environment` (defaults when the writer left them out).
  std::string build_type() const;   ///< CMake build type of the recipebench that ran ("Release"); "" if unknown
  int device_count() const;         ///< devices (GPUs, or CPU ranks) the run used; 1 when not recorded
  std::string device_name() const;  ///< e.g. "NVIDIA H200"; "?" when not recorded
  bool complete() const { return status == RunStatus::kComplete; }
};

/// SHA-256 of a file's bytes as 64 hex digits (OpenSSL EVP). Throws std::runtime_error if unreadable.
std::string sha256_file(const std::string& path);
/// SHA-256 of a string as 64 hex digits.
std::string sha256_hex(const std::string& bytes);

}  // namespace recipebench
