// Run records: what one `recipebench run` measured, as JSON (schema/run-record.schema.json).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "metrics/metrics.h"
#include "recipe/diagnostic.h"
#include "run/backend.h"
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

/// One run, complete or failed. status: "complete" (every step ran, metrics present) or "failed"
/// (error holds the step and the message; metrics absent).
struct RunRecord {
  std::string recipe_path, recipe_sha256;
  Json recipe;  ///< the recipe document as validated (the leaderboard reads model, gpu, workload, layout)
  RunOptions options;
  std::string model_name;
  int64_t model_layers = 0, model_layers_full = 0;
  Json model_config;                    ///< null (registry widths) or {"path", "sha256"} of a config.json
  std::string started_at, finished_at;  ///< UTC ISO 8601
  double wall_seconds = 0;              ///< process launch to finish, startup included
  Json environment;                     ///< host, device, versions, compiler, recipebench commit
  Json capabilities;                    ///< the backend's capability table the run was checked against (null for a
                                        ///< per-node backend, which runs the recipe's own command)
  Json log;  ///< null, or where the figures were parsed from: {"source", "path", "sha256", "parser", ...}
  std::vector<StepSample> steps;
  std::optional<RunMetrics> metrics;
  std::optional<ModelBuild> model_build;  ///< absent when the backend reported no model build
  std::string status = "failed";
  Json error;  ///< null, or {"step": n, "message": "..."}
  Json to_json() const;

  /// The record that to_json() wrote, read back typed (schema/run-record.schema.json). `file` names the record
  /// in errors. Throws InputError located by file and field path, e.g.
  /// `r.json: error: metrics.tokens_per_s_per_gpu: string 'fast', expected a number`, when a field the record
  /// must hold is missing, of another type, or an integer out of its type's range. It checks types, not figures:
  /// check_run_record() (run/run_record_check.h) checks the figures against the steps.
  static RunRecord from_json(const Json& j, const std::string& file);

  // Facts from `environment` (checked by from_json; defaults when the writer left them out).
  std::string build_type() const;   ///< CMake build type of the recipebench that ran ("Release"); "" if unknown
  int device_count() const;         ///< devices (GPUs, or CPU ranks) the run used; 1 when not recorded
  std::string device_name() const;  ///< e.g. "NVIDIA H200"; "?" when not recorded
};

/// SHA-256 of a file's bytes as 64 hex digits (OpenSSL EVP). Throws std::runtime_error if unreadable.
std::string sha256_file(const std::string& path);
/// SHA-256 of a string as 64 hex digits.
std::string sha256_hex(const std::string& bytes);

}  // namespace recipebench
