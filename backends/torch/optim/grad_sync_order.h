// The one order in which a rank launches its gradient buckets' reduce-scatters (bench.overlap_grad_reduce,
// docs/distributed.md): fixed before the first step and the same on every rank, whatever order the backward pass
// makes the buckets ready in. A collective group matches its members' calls by order, so two ranks launching the
// same group's buckets in different orders would sum the wrong buffers or hang. Pure bookkeeping: no libtorch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace recipebench::train {

/// What owns buckets: launches one bucket's reduce-scatter (asynchronous; waited for by its owner).
class BucketLauncher {
 public:
  virtual ~BucketLauncher() = default;
  virtual void launch_bucket(size_t bucket) = 0;
};

/// The buckets of every optimizer of a rank in one launch order. A bucket launches once it is ready and every
/// bucket before it launched. Each step: reset(), then ready() per bucket as the backward pass completes it, then
/// flush() before the gradients are read. Not thread-safe: one thread at a time (the autograd engine's, then the
/// caller's after backward returned).
class GradSyncOrder {
 public:
  /// Registers bucket `bucket` of `owner`; `key` is where the backward pass is expected to complete it (the
  /// smallest index, in the stage's parameters() order, of its parameters): larger keys launch first, ties in
  /// registration order. Every rank must register the same buckets with the same keys. An owner's buckets must
  /// come out in its own index order (larger keys for lower indices); seal() checks it.
  void add(BucketLauncher* owner, size_t bucket, int64_t key);
  /// Fixes the order (add() is refused after it). Throws std::logic_error when an owner's buckets would launch out
  /// of its index order.
  void seal();
  /// A new step: no bucket ready or launched. Seals the order if not sealed yet.
  void reset();
  /// Bucket `bucket` of `owner` has its final gradients: launches it and every following ready bucket in order,
  /// unless an earlier bucket is not ready yet. Throws std::logic_error for an unknown or already ready bucket.
  void ready(BucketLauncher* owner, size_t bucket);
  /// Launches every bucket not launched yet, in order (ready or not: the backward pass is over). Idempotent.
  void flush();
  /// Buckets launched since reset().
  size_t launched() const { return next_; }
  /// (owner, bucket) in launch order.
  std::vector<std::pair<BucketLauncher*, size_t>> order() const;

 private:
  struct Entry {
    BucketLauncher* owner;
    size_t bucket;
    int64_t key;
    bool ready = false;
  };
  void launch_ready_prefix();
  std::vector<Entry> entries_;
  std::map<std::pair<BucketLauncher*, size_t>, size_t> index_;  ///< (owner, bucket) -> entries_ index; once sealed
  size_t next_ = 0;                                             ///< entries_[0, next_) launched
  bool sealed_ = false;
};

}  // namespace recipebench::train
