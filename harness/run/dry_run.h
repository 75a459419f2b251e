// What `run --dry-run` shows, and the memory plan `run` prints before step 0 (docs/memory-plan.md): both from the
// resolved run's model and rank map, on the run's device.
#pragma once

#include <string>

#include "settings/resolved_run.h"
#include "util/host.h"

namespace recipebench {

/// The run's per-rank memory plan as text (plan/memory_plan.h format_memory_plan), on its device: held against the
/// recipe's GPU on CUDA, against the memory `host` has available on the CPU. "" when the run has no rank map.
std::string run_plan_text(const ResolvedRun& r, const HostDevices& host);

/// `run --dry-run`'s text: the model and layout, the rank map and the per-rank memory plan (for a model outside the
/// torch backend's family: the rank map where its layers are known, and why no plan is made). Throws
/// std::invalid_argument with the rank map's reason when the layout does not hold for the model that runs.
std::string dry_run_text(const std::string& path, const ResolvedRun& r, const HostDevices& host);

}  // namespace recipebench
