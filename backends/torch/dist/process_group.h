// The run's process group: rendezvous through c10d's TCPStore (rank 0 hosts it) and a c10d Gloo group over all
// ranks (CPU). The c10d headers stay in process_group.cpp (see compat_c10d.h).
#pragma once

#include <ATen/core/Tensor.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace recipebench::dist {

class ProcessGroup {
 public:
  /// Joins the run: rank 0 listens at master_addr:master_port, every rank connects; waits up to `timeout` for all
  /// ranks and uses it as the collectives' timeout. Throws std::exception (c10::Error) on failure.
  ProcessGroup(int rank, int world, const std::string& master_addr, int master_port, std::chrono::seconds timeout);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return world_; }

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

  /// A group of the given ranks of this group (this rank among them), named `name` (unique in the run): its own
  /// Gloo group over this group's store. Only the members call it, each with the same name and ranks.
  std::unique_ptr<ProcessGroup> subgroup(const std::string& name, const std::vector<int>& ranks);

  /// Records a failure of this rank in the store. True when it is the run's first failure (this rank shows its
  /// message); false when another rank failed first, or when the store is gone (rank 0 exited).
  bool report_failure(const std::string& message);
  /// The first failure's message ("rank R: ...") when one was reported and the store answers, else "".
  std::string first_failure();

 private:
  struct Impl;
  ProcessGroup(std::unique_ptr<Impl> impl, int rank, int world);
  std::unique_ptr<Impl> impl_;
  int rank_, world_;

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
  /// and returns without waiting for the receiver (Gloo: the data moves once the matching receive is posted).
  std::unique_ptr<Request> isend(const at::Tensor& t, int dst, int tag);
  /// Starts receiving into `t` (contiguous; the sender's number of bytes) from rank `src` under `tag`.
  std::unique_ptr<Request> irecv(at::Tensor& t, int src, int tag);
};

}  // namespace recipebench::dist
