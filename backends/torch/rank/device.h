// The device a rank trains on: which one, its synchronisation and peak memory, and the facts the run record
// lists (name, memory, driver, CUDA and NCCL versions). The CUDA headers stay in device.cpp.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>

#include "backend/backend.h"

namespace recipebench::train {

/// This rank's device: the CPU, or CUDA device options.place.local_rank (one GPU per rank; docs/distributed.md).
c10::Device rank_device(const RunOptions& options);

/// Waits for the device's queued work (CUDA); nothing on the CPU.
void synchronize(const c10::Device& device);
/// Starts a new peak-memory measurement (CUDA caching allocator); nothing on the CPU.
void reset_peak_memory(const c10::Device& device);
/// Peak device memory allocated by the caching allocator since the last reset (bytes); on CPU the process's peak
/// resident set size (getrusage, bytes).
int64_t peak_memory(const c10::Device& device);

/// The device facts of this rank for the run record, after checking that the device is there: with CUDA, a
/// visible GPU for this local rank (made the current device); with several ranks, the c10d transport (NCCL for
/// CUDA, Gloo for CPU) in this build. Throws RunError naming what is missing.
BackendEnvironment describe_device(const RunOptions& options);

}  // namespace recipebench::train
