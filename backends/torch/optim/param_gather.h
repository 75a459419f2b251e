// The deferred all-gathers of the distributed optimizers' updated parameters (bench.overlap_param_gather,
// docs/distributed.md "Overlap"; Megatron-LM's overlap_param_gather): a step's update leaves its buckets pending,
// the next step launches them at its start in the forward passes' order, and each module's forward waits for the
// buckets holding its parameters. One order per rank, shared by its optimizers, so that every member of a group
// launches the group's buckets in the same order (a collective group matches its members' calls by order). Pure
// bookkeeping: no libtorch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace recipebench::train {

/// What owns buckets of parameters to all-gather.
class GatherLauncher {
 public:
  virtual ~GatherLauncher() = default;
  /// Starts bucket `bucket`'s all-gather of the updated shards (asynchronous).
  virtual void launch_gather(size_t bucket) = 0;
  /// Waits for bucket `bucket`'s all-gather and copies the gathered values into its parameters.
  virtual void finish_gather(size_t bucket) = 0;
};

/// The buckets of every distributed optimizer of a rank in the forward passes' order. Each step: defer() by each
/// optimizer after its update; launch() at the next step's start; wait_through() before each module's forward;
/// finish() before anything reads the parameters outside a forward pass (the run's end). Not thread-safe: the
/// training loop's thread only.
class ParamGatherOrder {
 public:
  /// Registers bucket `bucket` of `owner`; `key` is where the forward passes first need it: the smallest index, in
  /// the stage's parameters() order (the forward's order), of its parameters. Smaller keys launch first, ties in
  /// registration order. Every member of a group registers the group's buckets with the same keys. Throws
  /// std::logic_error after the first defer() (the order is fixed then) or when the bucket was added before.
  void add(GatherLauncher* owner, size_t bucket, int64_t key);
  /// `owner`'s update is done and its all-gathers are deferred: its buckets are pending. Throws std::logic_error
  /// when one of them is still pending or in flight (the previous step's gathers were not finished).
  void defer(const GatherLauncher* owner);
  /// Launches every pending bucket, in order. Idempotent: nothing when none is pending (the first step).
  void launch();
  /// Before the forward of a module whose parameters' largest index (the stage's order) is `last`: launches the
  /// pending buckets (launch()), then finishes, in order, every bucket in flight whose key is <= `last` (the buckets
  /// holding the module's parameters among them).
  void wait_through(int64_t last);
  /// Launches the pending buckets of `owner` (every owner's when null) and finishes every one of them in flight.
  /// After it the parameters hold the last update.
  void finish(const GatherLauncher* owner = nullptr);
  /// Buckets pending or in flight.
  size_t outstanding() const;
  /// Buckets launched since the object was made (for tests).
  size_t launched() const { return launched_; }
  /// (owner, bucket) in launch order.
  std::vector<std::pair<const GatherLauncher*, size_t>> order() const;

 private:
  enum class State { kIdle, kPending, kInFlight };
  struct Entry {
    GatherLauncher* owner;
    size_t bucket;
    int64_t key;
    State state = State::kIdle;
  };
  void seal();
  void launch(Entry& e);
  void finish(Entry& e);
  std::vector<Entry> entries_;
  size_t next_wait_ = 0;  ///< entries_[0, next_wait_) were passed by wait_through() since the last launch()
  size_t launched_ = 0;
  bool sealed_ = false;
};

}  // namespace recipebench::train
