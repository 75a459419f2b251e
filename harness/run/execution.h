// A placed run's execution (docs/architecture.md, "From YAML to leaderboard", step 3): the record before step 0, the
// backend's steps handed to the reporters, the figures, and the record written atomically by the process that
// writes it (rank 0, or an emulated rank).
#pragma once

#include <chrono>
#include <vector>

#include "backend/backend.h"
#include "backend/capabilities.h"
#include "console/reporter.h"
#include "run/run_driver.h"
#include "settings/resolved_run.h"

namespace recipebench {

/// The record before the first step: the recipe (its text's SHA-256), the options, the model that runs, the start
/// time `launch` and this host's environment.
RunRecord new_record(const RunRequest& q, const ResolvedRun& r, std::chrono::system_clock::time_point launch);

/// The record's emulation block of an emulated run (run/emulation.h): the rank's place in the rank map it runs and
/// the memory plan of its pipeline rank; null for a real run or a run without a rank map.
Json emulation_of(const ResolvedRun& r);

/// Runs the placed run `r` (r.options.place set) on `backend` into `rec`, the reporters told of each event on the
/// process that writes the record; that process writes it (to out.record_path, atomically: a new name if taken)
/// before the reporters' finish. A run the backend refused before step 0 writes no record (exit 1). Returns the
/// outcome: exit 0 for a complete or emulated run, 1 for a failed one. Throws only on I/O failures.
RunOutcome run_placed(Backend& backend, const RunRequest& q, const ResolvedRun& r, const BackendCapabilities& caps,
                      RunRecord& rec, RunOutcome out, const std::vector<RunReporter*>& reporters,
                      std::chrono::steady_clock::time_point launch_steady);

}  // namespace recipebench
