// Facts about this process's machine and clock, for run records and reports.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace recipebench {

/// UTC time formatted with strftime's `format` (default ISO 8601: "2026-11-29T21:30:08Z").
std::string utc_timestamp(std::chrono::system_clock::time_point t = std::chrono::system_clock::now(),
                          const char* format = "%Y-%m-%dT%H:%M:%SZ");

/// This machine's host name (gethostname), or "unknown".
std::string host_name();

/// What this host offers a run before anything is built: its CUDA devices and the memory new processes can take.
struct HostDevices {
  int cuda_devices = 0;          ///< GPUs of the NVIDIA driver a process here can use (cuda_device_count)
  uint64_t available_bytes = 0;  ///< MemAvailable of /proc/meminfo, bytes; 0 when it cannot be read (not checked)
};

/// The CUDA devices a process started here sees, without libtorch: the GPUs the NVIDIA driver lists
/// (/proc/driver/nvidia/gpus/), limited by CUDA_VISIBLE_DEVICES when it is set (empty or "-1": none).
int cuda_device_count();

/// Memory available to new processes (MemAvailable of /proc/meminfo) in bytes; 0 when it cannot be read.
uint64_t host_available_bytes();

/// cuda_device_count() and host_available_bytes() of this machine.
HostDevices host_devices();

}  // namespace recipebench
