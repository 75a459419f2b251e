// The console's summary of an emulated rank's record (run/emulation.h, docs/emulation.md): the rank it stood for,
// its place, the layers it ran, the window's mean step, its peak memory against the plan, and each group's traffic
// per step.
#pragma once

#include <string>

#include "record/run_record.h"

namespace recipebench {

/// The summary as lines of text (each ending in a newline); "" for a record without an emulation block.
std::string format_emulation(const RunRecord& r);

}  // namespace recipebench
