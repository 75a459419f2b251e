// This process's host memory (Linux /proc/self/status; proc(5)): the resident set and its peak, for the model
// build's figures in the run record (docs/initialization.md). No libtorch.
#pragma once

#include <cstdint>

namespace recipebench::train {

/// Resident set size now (VmRSS), bytes; 0 where /proc/self/status cannot be read.
int64_t host_rss_bytes();

/// Peak resident set size (VmHWM), bytes; 0 where /proc/self/status cannot be read.
int64_t host_peak_rss_bytes();

/// Resets the peak resident set size to the current one (writes "5" to /proc/self/clear_refs, Linux >= 4.0).
/// Returns false where the kernel refuses (the peak then stays the process's peak so far).
bool reset_host_peak_rss();

}  // namespace recipebench::train
