// The run's process group: rendezvous through c10d's TCPStore (rank 0 hosts it) and a c10d group over all ranks:
// Gloo for CPU ranks, NCCL for one-GPU-per-rank runs; or, for an emulated rank (docs/emulation.md), the stand-in
// transport of dist/stand_in.h with no peers at all. Every group notes its traffic (dist/traffic.h). The c10d
// headers stay in process_group.cpp (see compat_c10d.h).
#pragma once

#include <ATen/core/Tensor.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "dist/traffic.h"

namespace recipebench::dist {

namespace stand_in {
class Receiver;
}

/// The collectives' transport: Gloo (CPU tensors, TCP), NCCL (CUDA tensors of this rank's GPU) or the stand-in of an
/// emulated rank (any device; results from this rank's own tensors, dist/stand_in.h).
enum class Transport { kGloo, kNccl, kStandIn };

/// Whether this build has the transport (Gloo: c10d's and gloo's headers; NCCL: a CUDA libtorch with c10d's NCCL
/// header and nccl.h; see compat_c10d.h).
bool transport_available(Transport t);

/// A group of ranks and its collectives. With NCCL, tensors may still be passed on the CPU (small counts and
/// scalars): they are copied to the rank's GPU for the collective and back. Every collective blocks until its
/// result can be read by the caller's next operation (Gloo: done; NCCL: ordered before the current CUDA stream's
/// next kernel, so reading a CPU copy or calling .item() waits for it). A failed peer or a timeout makes a Gloo
/// collective throw; an NCCL one does not (its wait never throws): NCCL's watchdog aborts the process after the
/// timeout, unless this process's failure watcher (the run's NCCL group polls the store for another rank's failure)
/// aborts the NCCL groups first (docs/distributed.md, Failures).
class ProcessGroup {
 public:
  /// Joins the run: rank 0 listens at master_addr:master_port, every rank connects; waits up to `timeout` for all
  /// ranks and uses it as the collectives' timeout. With Transport::kNccl, `cuda_device` is this rank's GPU (the
  /// current CUDA device is set to it). Throws std::exception (c10::Error) on failure, std::runtime_error when
  /// this build has no such transport.
  ProcessGroup(int rank, int world, const std::string& master_addr, int master_port, std::chrono::seconds timeout,
               Transport transport = Transport::kGloo, int cuda_device = -1);
  /// Rank `rank` of a run of `world` ranks, alone: the stand-in transport (Transport::kStandIn), no rendezvous and
  /// no store. Every collective returns at once with the results dist/stand_in.h describes; a receive gets fixed
  /// pseudo-random values of the right shape. Throws std::invalid_argument when rank is outside [0, world).
  static std::unique_ptr<ProcessGroup> make_stand_in(int rank, int world);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return world_; }
  /// The run ranks of the members, in this group's rank order (the run's group: 0..world-1).
  const std::vector<int>& members() const { return members_; }
  /// What this group's operations moved (each noted as it is issued).
  TrafficLog& traffic() { return *traffic_; }

  void all_reduce_sum(at::Tensor& t);
  void all_reduce_max(at::Tensor& t);
  /// shard = this rank's slice of the sum over ranks of `full` (full.numel() == size() x shard.numel());
  /// `full` may be overwritten.
  void reduce_scatter_sum(at::Tensor& full, at::Tensor& shard);
  /// full = the ranks' shards one after the other (1-D, contiguous, full.numel() == size() x shard.numel()).
  void all_gather(const at::Tensor& shard, at::Tensor& full);
  void barrier();
  /// Variable-size all-to-all along dim 0 (c10d alltoall_base with split sizes): the first in_counts[0] rows of
  /// `in` go to rank 0, the next in_counts[1] to rank 1, ...; `out` receives out_counts[r] rows from rank r, in
  /// rank order. Both contiguous.
  void all_to_all(const at::Tensor& in, at::Tensor& out, std::vector<int64_t> out_counts,
                  std::vector<int64_t> in_counts);

  Transport transport() const;

  /// A group of the given ranks of this group (this rank among them), named `name` (unique in the run): its own
  /// group (same transport and GPU) over this group's store. Only the members call it, each with the same name and
  /// ranks.
  std::unique_ptr<ProcessGroup> subgroup(const std::string& name, const std::vector<int>& ranks);

  /// Ends a successful run's use of the group, on every member: an NCCL group is shut down (its communicators
  /// destroyed, its watchdog stopped), then the members check in at the store and the store's host (rank 0 of
  /// the run) waits, up to the timeout, until all have, so it never closes the store under a member still using
  /// it. Call it on subgroups before the run's group. No collective may follow.
  void finish();

  /// Records a failure of this rank in the store. True when it is the run's first failure (this rank shows its
  /// message); false when another rank failed first, or when the store is gone (rank 0 exited).
  bool report_failure(const std::string& message);
  /// The first failure's message ("rank R: ...") when one was reported and the store answers, else "".
  std::string first_failure();

 private:
  struct Impl;
  ProcessGroup(std::unique_ptr<Impl> impl, int rank, int world, std::vector<int> members);
  bool standing_in() const { return receiver_ != nullptr; }
  std::unique_ptr<Impl> impl_;  ///< c10d's store and group; null with the stand-in transport
  int rank_, world_;
  std::vector<int> members_;
  std::unique_ptr<TrafficLog> traffic_;
  std::unique_ptr<stand_in::Receiver> receiver_;  ///< the stand-in transport's receives; null on c10d

  // Point-to-point (pipeline parallelism).
 public:
  /// A send or receive in flight. wait() blocks until it completed; it throws std::exception (c10::Error) when the
  /// peer failed or the group's timeout passed. The request keeps its tensor alive until then.
  class Request {
   public:
    virtual ~Request() = default;
    virtual void wait() = 0;
  };
  /// Starts sending `t` (contiguous) to rank `dst` of this group under `tag` (>= 0; the receiver gives the same tag)
  /// and returns without waiting for the receiver (Gloo: the data moves once the matching receive is posted; NCCL:
  /// tags are not used, a pair's sends and receives match in issue order, and a CPU tensor goes through a GPU copy).
  std::unique_ptr<Request> isend(const at::Tensor& t, int dst, int tag);
  /// Starts receiving into `t` (contiguous; the sender's number of bytes) from rank `src` under `tag`.
  std::unique_ptr<Request> irecv(at::Tensor& t, int src, int tag);
  /// Starts reduce_scatter_sum(full, shard) and returns without waiting (the gradient buckets of
  /// bench.overlap_grad_reduce): NCCL runs it on the group's own stream, ordered after the work queued so far on
  /// the caller's current stream, and wait() orders the current stream after it; Gloo runs it on the group's
  /// thread (an all-reduce of `full`, then this rank's slice copied into `shard` by wait()). Both 1-D and
  /// contiguous (views into larger buffers are fine); neither may be touched until wait() returned. Calls on one
  /// group must be issued in the same order on every member, as every collective's.
  std::unique_ptr<Request> ireduce_scatter_sum(const at::Tensor& full, const at::Tensor& shard);
  /// Starts all_gather(shard, full) and returns without waiting (the deferred parameter all-gathers of
  /// bench.overlap_param_gather): NCCL runs it on the group's own stream, ordered after the work queued so far on
  /// the caller's current stream, and wait() orders the current stream after it; Gloo runs it on the group's thread.
  /// Both 1-D and contiguous (views into larger buffers are fine); `shard` may not change and `full` may not be
  /// read until wait() returned. Calls on one group must be issued in the same order on every member.
  std::unique_ptr<Request> iall_gather(const at::Tensor& shard, const at::Tensor& full);
};

}  // namespace recipebench::dist
