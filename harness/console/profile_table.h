// The --profile table: where a step's time goes, per model component (issue-11 style breakdown; docs/metrics.md,
// "Profile"). Pure data in, text out.
#pragma once

#include <string>
#include <vector>

#include "record/run_record.h"

namespace recipebench {

/// One row of the profile: a component's mean time per step over the window and its share of the mean step.
struct ProfileRow {
  std::string component;   ///< "GDN layers", "attention layers", "MoE blocks", "LM head + loss", "optimizer", "other"
  double ms_per_step = 0;  ///< milliseconds, mean over the window's steps
  double percent = 0;      ///< 100 * ms_per_step / mean step time
};

/// The profile rows of a complete --profile run, over its window (steps window.first..window.last that the record
/// holds): GDN, attention, MoE, LM head + loss (StepSample::components), optimizer (StepSample::optimizer_seconds)
/// and other = step time minus all of them (embedding, norms, residual adds, loss all-reduce, pipeline
/// communication, synchronisation gaps). The rows' ms sum to the mean step time. Empty when the record has no step
/// in the window.
std::vector<ProfileRow> profile_rows(const RunRecord& record);

/// profile_rows() as an aligned text table with a header line and a closing "step" row (100%).
std::string format_profile_table(const RunRecord& record);

}  // namespace recipebench
