// Facts about this process's machine and clock, for run records and reports.
#pragma once

#include <chrono>
#include <string>

namespace recipebench {

/// UTC time formatted with strftime's `format` (default ISO 8601: "2026-11-29T21:30:08Z").
std::string utc_timestamp(std::chrono::system_clock::time_point t = std::chrono::system_clock::now(),
                          const char* format = "%Y-%m-%dT%H:%M:%SZ");

/// This machine's host name (gethostname), or "unknown".
std::string host_name();

}  // namespace recipebench
