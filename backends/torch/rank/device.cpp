#include "rank/device.h"

#include <sys/resource.h>
#include <torch/types.h>
#include <torch/utils.h>
#include <torch/cuda.h>

#include <string>

#include "dist/process_group.h"
#include "util/format.h"

// RECIPEBENCH_TORCH_CUDA is set by CMake when libtorch was built with CUDA (libc10_cuda present).
#ifdef RECIPEBENCH_TORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>
#if __has_include(<nccl.h>)
#include <nccl.h>
#define RECIPEBENCH_HAVE_NCCL_H 1
#endif
#endif

namespace recipebench::train {

c10::Device rank_device(const RunOptions& o) {
  return o.settings.device == Device::kCuda ? c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(o.place.local_rank))
                                            : c10::Device(c10::kCPU);
}

void synchronize(const c10::Device& device) {
#ifdef RECIPEBENCH_TORCH_CUDA
  if (device.is_cuda()) cudaDeviceSynchronize();
#else
  (void)device;
#endif
}

void reset_peak_memory(const c10::Device& device) {
#ifdef RECIPEBENCH_TORCH_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device.index() < 0 ? 0 : device.index());
#else
  (void)device;
#endif
}

int64_t peak_memory(const c10::Device& device) {
#ifdef RECIPEBENCH_TORCH_CUDA
  if (device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index() < 0 ? 0 : device.index());
    return stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)].peak;
  }
#endif
  (void)device;
  struct rusage u {};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;
}

namespace {

/// The CUDA device of this local rank (one GPU per rank), made current, and its facts.
void describe_cuda_device(const RunOptions& o, BackendEnvironment& env) {
  const auto count = static_cast<int>(torch::cuda::device_count());
  if (count < 1) throw RunError("--device cuda but no CUDA device is visible (torch::cuda::device_count() = 0)");
  if (o.place.local_rank >= count)
    throw RunError("rank " + std::to_string(o.place.rank) + " is local rank " + std::to_string(o.place.local_rank) +
                   " of its host but only " + std::to_string(count) + " CUDA device(s) are visible: one GPU " +
                   "per rank needs at least " + std::to_string(o.place.local_rank + 1));
#ifdef RECIPEBENCH_TORCH_CUDA
  c10::cuda::set_device(static_cast<c10::DeviceIndex>(o.place.local_rank));
  const cudaDeviceProp* p = at::cuda::getCurrentDeviceProperties();
  env.device_name = p->name;
  env.device_memory_bytes = static_cast<double>(p->totalGlobalMem);
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  env.driver = "CUDA driver API " + std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10);
  env.cuda = std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10);
#ifdef RECIPEBENCH_HAVE_NCCL_H
  env.nccl = std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." + std::to_string(NCCL_PATCH);
#endif
#else
  (void)env;
#endif
}

}  // namespace

BackendEnvironment describe_device(const RunOptions& o) {
  BackendEnvironment env;
  const bool emulated = o.settings.emulate_rank.has_value();  // one device stands for one rank of the layout
  env.device_count = emulated ? 1 : o.place.world;
  const bool cuda = o.settings.device == Device::kCuda;
  if (cuda)
    describe_cuda_device(o, env);
  else
    env.device_name = "CPU (" + counted(torch::get_num_threads(), "thread") + ")";
  if (emulated && !dist::transport_available(dist::Transport::kStandIn))
    throw RunError("this build's libtorch has no c10d: an emulated rank (--emulate-rank) is not available");
  if (!emulated && o.place.world > 1 && !dist::transport_available(cuda ? dist::Transport::kNccl : dist::Transport::kGloo))
    throw RunError(cuda ? "this build has no c10d NCCL (a CUDA libtorch with torch/csrc/distributed/c10d/"
                          "ProcessGroupNCCL.hpp and nccl.h): a CUDA run on " +
                              std::to_string(o.place.world) + " ranks needs it"
                        : "this build's libtorch has no c10d Gloo headers (torch/csrc/distributed/c10d/"
                          "ProcessGroupGloo.hpp, gloo/config.h): a CPU run on " +
                              std::to_string(o.place.world) + " ranks needs them");
  return env;
}

}  // namespace recipebench::train
