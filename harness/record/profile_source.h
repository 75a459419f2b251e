// A run record as a compute profile for the step-time model (plan/compute_profile.h): the rank it measured, the
// shapes of its chunks, the mean of each chunk's forward and backward passes over the timed window by phase and
// component, and its optimizer step (docs/step-time.md, "Profiles").
#pragma once

#include <string>

#include "plan/compute_profile.h"
#include "record/run_record.h"

namespace recipebench {

/// The catalog name of the GPU a record ran on ("NVIDIA H200" -> "H200"), "CPU" for a CPU run, "" when unknown.
std::string record_gpu(const RunRecord& rec);

/// The profile a record measured: a `run --profile` record (rank 0 of its layout) or an emulated rank's
/// (`--emulate-rank R --profile`, its cut stage). Each chunk's passes are averaged over the window's steps and
/// microbatches; the optimizer's seconds are the window's mean, its parameters the rank's shard
/// (plan/step_time.h optimizer_shards). Throws InputError naming `file` and the reason when the record holds no
/// passes (not run with --profile), is not complete or emulated, ran a --model-config model, or names a model or
/// GPU the catalog does not know.
ProfiledRank profiled_rank(const RunRecord& rec, const std::string& file);

}  // namespace recipebench
