// The one place where c10d differs between libtorch 1.13 (Debian, CPU machines) and 2.x (GPU machine) for the
// distributed pieces. Include only from .cpp files (c10d, Gloo and NCCL headers are heavy).
//   - The collectives' base class: 1.13's ProcessGroupGloo / ProcessGroupNCCL derive from c10d::ProcessGroup,
//     2.x's from c10d::Backend. Both declare the virtual collectives used here (allreduce, _allgather_base,
//     _reduce_scatter_base, alltoall_base, barrier), so code holds compat::Group and calls them through it.
//   - reduce_scatter: ProcessGroupGloo of 1.13 refuses it; with Gloo it runs as an all-reduce followed by taking
//     this rank's shard (the same sums, twice the traffic of a true reduce-scatter). NCCL runs the true one.
//   - all_gather into one flat tensor: NCCL's _allgather_base; Gloo's allgather into a list of views (1.13's Gloo
//     has no _allgather_base).
//   - alltoall_base (variable split sizes): the same signature in 1.13 and 2.x (non-const tensor and vector
//     references), on Gloo and NCCL.
//   - send / recv (point-to-point, tagged): the same signature in 1.13 and 2.x; the handle type differs (WorkPtr
//     below).
//   - a libtorch without c10d's Gloo headers (or gloo's own): RECIPEBENCH_HAVE_C10D_GLOO is 0; without
//     ProcessGroupNCCL.hpp, nccl.h or a CUDA build, RECIPEBENCH_HAVE_C10D_NCCL is 0. process_group.cpp refuses
//     a multi-rank run on a transport this build lacks, with a message.
#pragma once

#include <torch/version.h>

#if __has_include(<torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>) && __has_include(<gloo/config.h>)
#define RECIPEBENCH_HAVE_C10D_GLOO 1
#else
#define RECIPEBENCH_HAVE_C10D_GLOO 0
#endif

// NCCL: a CUDA build of libtorch (RECIPEBENCH_TORCH_CUDA, set by CMake) with c10d's NCCL header and nccl.h.
#if defined(RECIPEBENCH_TORCH_CUDA) && __has_include(<torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>) && \
    __has_include(<nccl.h>)
#define RECIPEBENCH_HAVE_C10D_NCCL 1
#else
#define RECIPEBENCH_HAVE_C10D_NCCL 0
#endif

#if RECIPEBENCH_HAVE_C10D_GLOO || RECIPEBENCH_HAVE_C10D_NCCL
#define RECIPEBENCH_HAVE_C10D 1
#else
#define RECIPEBENCH_HAVE_C10D 0
#endif

#if RECIPEBENCH_HAVE_C10D

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#if RECIPEBENCH_HAVE_C10D_GLOO
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO 1
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif

#if RECIPEBENCH_HAVE_C10D_NCCL
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL 1
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <chrono>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace recipebench::dist::compat {

#if TORCH_VERSION_MAJOR >= 2
using Group = c10d::Backend;
#else
using Group = c10d::ProcessGroup;
#endif
/// A collective's or send's handle: c10d::ProcessGroup::Work in 1.13, c10d::Work in 2.x (the type barrier() returns).
using WorkPtr = decltype(std::declval<Group&>().barrier());

#if RECIPEBENCH_HAVE_C10D_GLOO
/// A Gloo process group of `world` ranks over `store`. Its transport device: loopback when `one_host`, else the
/// interface named by GLOO_SOCKET_IFNAME when set, else c10d's default (the host name's address), as PyTorch does.
inline c10::intrusive_ptr<Group> make_gloo_group(const c10::intrusive_ptr<c10d::Store>& store, int rank, int world,
                                                 bool one_host, std::chrono::milliseconds timeout) {
  using Gloo = c10d::ProcessGroupGloo;
  auto options = Gloo::Options::create(timeout);
  const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
  if (one_host)
    options->devices.push_back(Gloo::createDeviceForHostname("127.0.0.1"));
  else if (ifname && *ifname)
    options->devices.push_back(Gloo::createDeviceForInterface(ifname));
  else
    options->devices.push_back(Gloo::createDefaultDevice());
  return c10::make_intrusive<Gloo>(store, rank, world, options);
}
#endif

#if RECIPEBENCH_HAVE_C10D_NCCL
/// An NCCL process group of `world` ranks over `store` (its communicator is created at the first collective, on
/// the current CUDA device: set it before). `timeout` bounds every collective (NCCL's watchdog aborts after it).
inline c10::intrusive_ptr<Group> make_nccl_group(const c10::intrusive_ptr<c10d::Store>& store, int rank, int world,
                                                 std::chrono::milliseconds timeout) {
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world, options);
}
#endif

}  // namespace recipebench::dist::compat

#endif  // RECIPEBENCH_HAVE_C10D
