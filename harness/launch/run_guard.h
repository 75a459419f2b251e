// What makes every run leave exactly one true record: the output folder checked before step 0, record names
// that no other run can take, SIGINT/SIGTERM turned into a `failed` record, and words for how a rank died.
#pragma once

#include <chrono>
#include <string>

#include "record/run_record.h"

namespace recipebench {

/// Checks `dir` as a run's --out before any step: the output-folder rule of every command that writes
/// (util/output_folder.h), then creates it when missing and requires a folder this process can create files in.
/// Returns "" when it is usable, else the reason, e.g. "--out: /srv: a system folder, expected a folder of your own
/// (...)" or "reports/x is not a folder, expected a folder for run records (--out)".
std::string out_dir_problem(const std::string& dir);

/// Writes `content` as a new run record in `dir`, named `<stem>-<UTC time to the second>Z.json` (e.g.
/// qwen3.5-tiny-cpu-20261130T104501Z.json), or `<stem>-<time>Z-2.json`, `-3`... when a record of that name
/// exists: the file is written to a temporary, flushed, then link(2)ed to its name, which fails rather than
/// replace an existing file, so two runs started in the same second never share a record and a reader never
/// sees a partial one. Returns the record's path. Throws std::runtime_error with the path and the reason.
std::string write_new_record(const std::string& dir, const std::string& stem,
                             std::chrono::system_clock::time_point started, const std::string& content);

/// The same for a wanted path `DIR/NAME.json`: written as it, or as `DIR/NAME-2.json`, `-3`... when taken.
std::string write_new_record(const std::string& wanted, const std::string& content);

/// Installs handlers for SIGINT and SIGTERM that only note the signal (interrupt_signal()); each handler is
/// reset after its first signal, so a second Ctrl-C stops the process at once. Forgets a signal noted before (by an
/// earlier run in this process).
void watch_interrupts();

/// The signal noted by watch_interrupts() (SIGINT or SIGTERM), or 0.
int interrupt_signal();

/// Throws RunError("interrupted by SIGINT at step 5 of 20 (steps 0..4 completed)", 5) when a signal was noted,
/// after step `last_done` (-1: before step 0) of `steps`. Does nothing after the last step: that run is complete.
void throw_if_interrupted(int last_done, int steps);

/// Writes the `failed` record of a run whose rank 0 was killed (`status`: its waitpid status) with
/// write_new_record: `base` (recipe, settings, model, environment, started_at) with status failed, no steps (rank
/// 0 kept them) and error {"step": null, "message": "rank 0 died of signal 9 (SIGKILL); ..."}; finished_at and
/// wall_seconds are now. Returns the record's path; throws std::runtime_error when it cannot be written.
std::string write_lead_died_record(RunRecord base, const std::string& dir, const std::string& stem,
                                   std::chrono::system_clock::time_point started,
                                   std::chrono::steady_clock::time_point started_steady, int status);

/// "SIGKILL", "SIGINT", ... or "signal N".
std::string signal_name(int sig);

/// How a child ended, from its waitpid status: "exited with status 1", "died of signal 9 (SIGKILL)".
std::string wait_status_text(int status);

}  // namespace recipebench
