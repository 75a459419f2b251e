// What a run tells its observers (the console's progress table, the run-record writer, a test's recorder), in the
// manner of Google Benchmark's reporters: the run driver (run/run_driver.h) calls every reporter in turn.
#pragma once

#include <string>
#include <vector>

#include "record/run_record.h"

namespace recipebench {

/// One observer of `recipebench run`. Every method has an empty default, so a reporter overrides only what it
/// needs. Order on rank 0: start, step (once per step, in order), finish. Other ranks get only `message`.
class RunReporter {
 public:
  virtual ~RunReporter() = default;
  /// A line for the user's error stream: a refusal (located diagnostic or usage error), a warning, or a
  /// non-lead rank's failure. Has no trailing newline.
  virtual void message(const std::string& /*line*/) {}
  /// `run --dry-run`: the recipe's rank map (run/rank_map.h's format_rank_map text) under its header line.
  virtual void dry_run(const std::string& /*text*/) {}
  /// Before the backend starts: `record` holds the recipe, model and effective options (no steps yet).
  virtual void start(const RunRecord& /*record*/) {}
  /// The backend built its model (between start and the first step): every rank's build figures.
  virtual void model_built(const ModelBuild& /*build*/) {}
  /// After each step. `devices`: GPUs (or CPU ranks) the run uses, for tokens/s/GPU.
  virtual void step(const StepSample& /*sample*/, const RunRecord& /*record*/, int /*devices*/) {}
  /// After the run, complete or failed: `record` is final (metrics set when complete) and already written at
  /// `record_path` by the run driver (launch/run_guard.h's write_new_record: -2, -3... when the wanted name exists).
  /// `failure_shown`: the failure's message was already shown by another rank.
  virtual void finish(const RunRecord& /*record*/, const std::string& /*record_path*/, bool /*failure_shown*/) {}
};

/// `line` to every reporter's `message`, in order.
inline void tell(const std::vector<RunReporter*>& reporters, const std::string& line) {
  for (auto* r : reporters) r->message(line);
}

}  // namespace recipebench
