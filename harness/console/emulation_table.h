// The console's summary of an emulated rank's record (run/emulation.h, docs/emulation.md): the rank it stood for,
// its place, the layers it ran, the window's mean step, its peak memory against the plan, and each group's traffic
// per step.
#pragma once

#include <string>

#include "record/run_record.h"

namespace recipebench {

/// The summary as lines of text (each ending in a newline); "" for a record without an emulation block.
std::string format_emulation(const RunRecord& r);

/// "1.23 GB", "45.6 MB", "789 kB", "12 B" (decimal units, 3 significant figures at most).
std::string bytes_text(double bytes);

}  // namespace recipebench
