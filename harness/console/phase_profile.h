// Where a multi-rank step's time goes (issue 15's per-phase profile; docs/distributed.md, "Where a step's time
// goes"): rank 0's waits for each kind of communication, measured without synchronising (StepSample::comm_waits),
// and the rest of the step. Pure data in, text out.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "record/run_record.h"

namespace recipebench {

/// One row: a phase's mean time per step over the window and its share of the mean step.
struct PhaseRow {
  std::string phase;       ///< "compute and other", "exposed TP", "exposed EP", "exposed DP/EDP", "pipeline waits"
  double ms_per_step = 0;  ///< milliseconds, mean over the window's steps
  double percent = 0;      ///< 100 * ms_per_step / mean step time
};

/// The phase rows of a record over its window (steps window.first..window.last that it holds), from the steps'
/// measured comm_waits: exposed TP, EP, DP/EDP communication and pipeline waits (the bubble with the transfers),
/// and "compute and other" = step time minus all four (computed: compute, the optimizer's arithmetic, host
/// synchronisations and launch gaps). The rows' ms sum to the mean step time. nullopt when no step of the window
/// has measured waits (one rank, or a record from before they were measured).
std::optional<std::vector<PhaseRow>> phase_rows(const RunRecord& record);

/// phase_rows() as one console line, "step phases on rank 0 (mean over steps 5..19): compute and other 301.2 ms
/// (91.0%), exposed TP 0.0 ms (0.0%), ...", ending in a newline; "" when phase_rows() is nullopt.
std::string format_phase_line(const RunRecord& record);

}  // namespace recipebench
