// The one place where c10d differs between libtorch 1.13 (Debian, CPU machines) and 2.x (GPU machine) for the
// distributed pieces. Include only from .cpp files (c10d and Gloo headers are heavy).
//   - 1.13: ProcessGroupGloo derives from c10d::ProcessGroup; 2.x: from c10d::Backend. Both declare the
//     collectives used here (allreduce, allgather, barrier) on ProcessGroupGloo itself, so code holds the
//     concrete type and calls it directly.
//   - reduce_scatter: ProcessGroupGloo of 1.13 refuses it; with Gloo it runs as an all-reduce followed by taking
//     this rank's shard (the same sums, twice the traffic of a true reduce-scatter).
//   - alltoall_base (variable split sizes): the same signature on ProcessGroupGloo in 1.13 and 2.x (non-const
//     tensor and vector references).
//   - send / recv (point-to-point, tagged): the same signature on ProcessGroupGloo in 1.13 and 2.x; the handle
//     type differs (WorkPtr below).
//   - a libtorch without c10d's Gloo headers (or gloo's own): RECIPEBENCH_HAVE_C10D_GLOO is 0 and
//     process_group.cpp refuses multi-rank runs with a message.
#pragma once

#if __has_include(<torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>) && __has_include(<gloo/config.h>)
#define RECIPEBENCH_HAVE_C10D_GLOO 1
#else
#define RECIPEBENCH_HAVE_C10D_GLOO 0
#endif

#if RECIPEBENCH_HAVE_C10D_GLOO

#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO 1
#endif

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/version.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace recipebench::dist::compat {

using GlooGroup = c10d::ProcessGroupGloo;
/// A collective's or send's handle: c10d::ProcessGroup::Work in 1.13, c10d::Work in 2.x (the type barrier() returns).
using WorkPtr = decltype(std::declval<GlooGroup&>().barrier());

/// A Gloo process group of `world` ranks over `store`. Its transport device: loopback when `one_host`, else the
/// interface named by GLOO_SOCKET_IFNAME when set, else c10d's default (the host name's address), as PyTorch does.
inline c10::intrusive_ptr<GlooGroup> make_gloo_group(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                     int world, bool one_host, std::chrono::milliseconds timeout) {
  auto options = GlooGroup::Options::create(timeout);
  const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
  if (one_host) options->devices.push_back(GlooGroup::createDeviceForHostname("127.0.0.1"));
  else if (ifname && *ifname) options->devices.push_back(GlooGroup::createDeviceForInterface(ifname));
  else options->devices.push_back(GlooGroup::createDefaultDevice());
  return c10::make_intrusive<GlooGroup>(store, rank, world, options);
}

/// shard = this rank's part (rank-th slice of shard.numel()) of the sum over ranks of `full`; `full` is
/// overwritten with the full sum.
inline void reduce_scatter_sum(GlooGroup& group, at::Tensor& full, at::Tensor& shard) {
  std::vector<at::Tensor> t{full};
  group.allreduce(t)->wait();
  shard.copy_(full.narrow(0, static_cast<int64_t>(group.getRank()) * shard.numel(), shard.numel()));
}

/// Variable-size all-to-all along dim 0 (see ProcessGroup::all_to_all).
inline void all_to_all(GlooGroup& group, const at::Tensor& in, at::Tensor& out, std::vector<int64_t>& out_counts,
                       std::vector<int64_t>& in_counts) {
  at::Tensor input = in, output = out;
  group.alltoall_base(output, input, out_counts, in_counts)->wait();
}

}  // namespace recipebench::dist::compat

#endif  // RECIPEBENCH_HAVE_C10D_GLOO
