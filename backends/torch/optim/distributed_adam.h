// The distributed optimizer of data parallelism (ZeRO-1 style, as Megatron-LM's distributed optimizer): the FP32
// gradients of all parameters live in one flat buffer; after the microbatches they are reduce-scattered over the
// data-parallel group, so each rank holds the summed gradient of its shard of the flat buffer and keeps the FP32
// master weights and Adam moments of that shard only; after its update the shards are all-gathered and every
// parameter is the new master weight cast to its dtype. Same formula as MixedPrecisionAdam.
// With bench.overlap_grad_reduce the buffer is cut into buckets (optim/grad_buckets.h), each reduce-scattered on its
// own as soon as the last microbatch's backward pass completed its gradients (docs/distributed.md, "Overlap").
// With bench.overlap_param_gather the all-gathers after the update are deferred into the next step's forward passes
// (optim/param_gather.h).
#pragma once

#include <torch/types.h>

#include <memory>
#include <vector>

#include "dist/process_group.h"
#include "optim/grad_buckets.h"
#include "optim/grad_sync_order.h"
#include "optim/optimizer.h"
#include "optim/param_gather.h"
#include "recipe/recipe.h"

namespace torch::autograd {
struct Node;
}

namespace recipebench::train {

/// bench.overlap_grad_reduce for one DistributedAdam (optim/optimizer_builder.h fills it). Without `group` the
/// optimizer does what it does without the switch: one bucket, reduce-scattered after the backward passes.
struct GradReduceOverlap {
  /// The group the buckets are reduce-scattered over: a duplicate of the optimizer's DP group with its own
  /// communicators, which nothing else uses during the backward pass (dist/parallel_groups.h grad_dp / grad_edp).
  dist::ProcessGroup* group = nullptr;
  int64_t bucket_elements = kDefaultGradBucketElements;  ///< bench.grad_reduce_bucket_elements (> 0)
  std::shared_ptr<GradSyncOrder> order;                  ///< the launch order, shared by the rank's optimizers
  std::vector<int> chunk;         ///< per parameter: its model chunk (begin_last_backward); empty: all chunk 0
  std::vector<int64_t> position;  ///< per parameter: its index in the stage's parameters() (the order's keys)
};

/// bench.overlap_param_gather for one DistributedAdam (optim/optimizer_builder.h fills it). Without `order` the
/// optimizer all-gathers its updated shards at the end of step().
struct ParamGatherOverlap {
  std::shared_ptr<ParamGatherOrder> order;  ///< the rank's deferred gathers, shared by its optimizers
  std::vector<int64_t> position;            ///< per parameter: its index in the stage's parameters() (the order's keys)
};

class DistributedAdam : public Optimizer, public BucketLauncher, public GatherLauncher {
 public:
  /// Every rank of `group` (the data-parallel group) must pass the same parameters (same shapes, same order, same
  /// initial values) and the same `overlap`. `groups`: the partial-sum group (the TP group for parameters
  /// replicated over TP under sequence parallel) and the shard group (the TP group for TP-sharded parameters); null
  /// when none. With overlap.group set, registers its buckets in overlap.order and a hook on every parameter's
  /// gradient accumulator. With gather.order set, registers its buckets there (keys from gather.position, else the
  /// parameters' indices) and step() defers its all-gathers into it. Throws std::invalid_argument when
  /// overlap.group's size is not group's or gather.position has another length than `params`.
  DistributedAdam(std::vector<torch::Tensor> params, const RecipeOptimizer& options, dist::ProcessGroup& group,
                  GradientGroups groups = {}, GradReduceOverlap overlap = {}, ParamGatherOverlap gather = {});
  ~DistributedAdam() override;
  DistributedAdam(const DistributedAdam&) = delete;
  DistributedAdam& operator=(const DistributedAdam&) = delete;

  /// Adds every parameter's .grad() into the flat FP32 gradient buffer and clears .grad(). With overlap, after the
  /// last backward pass of a chunk: its parameters' gradients are final (those without a gradient in that pass
  /// too), and the buckets this completes are launched in the order's turn.
  void accumulate_grads() override;
  /// Zeros the flat FP32 gradient buffer (and, with overlap, starts a new step of the launch order).
  void zero_grad() override;
  /// With overlap: from now until the next accumulate_grads(), the gradient accumulated into a parameter of model
  /// chunk `chunk` is its last of the step: the hook adds it into the flat buffer at once and launches the buckets
  /// it completes. Without overlap: nothing.
  void begin_last_backward(int chunk) override;
  /// Sums the flat gradient buffer over the partial-sum group, reduce-scatters it (sum over the DP ranks) into this
  /// rank's shard, and returns the global squared L2 norm: the DP shards' norm (all-reduced) squared, summed over
  /// the shard group. With overlap: launches the buckets not launched yet, waits for all, then sums the shard (not
  /// the whole buffer) over the partial-sum group (the same sums: both are linear).
  double squared_grad_norm() override;
  /// Scales this rank's gradient shard by clip / norm when norm > clip (> 0). Returns the scale applied (<= 1).
  double clip(double norm) override;
  /// Adam on this rank's shard, then all-gather of the updated shards into the parameters (one per bucket). With
  /// the gathers deferred: first finishes this optimizer's gathers still outstanding (none when the forward passes
  /// waited for them), then the update, and the gathers are left pending in the order (the parameters keep their
  /// values until the order finishes them).
  void step(double lr) override;
  /// With the gathers deferred: launches the pending ones of every optimizer sharing the order, in its order.
  void start_param_gather() override;
  /// With the gathers deferred: finishes every outstanding one of the order (launching the pending ones first).
  void finish_param_gather() override;
  /// Starts bucket `bucket`'s reduce-scatter over the overlap group (GradSyncOrder calls it in its turn).
  void launch_bucket(size_t bucket) override;
  /// Starts bucket `bucket`'s all-gather of the updated shards over the DP group (ParamGatherOrder calls it).
  void launch_gather(size_t bucket) override;
  /// Waits for bucket `bucket`'s all-gather (a DP wait on the comm clock) and copies it into its parameters.
  void finish_gather(size_t bucket) override;

  int64_t shard_numel() const { return layout_.shard_numel; }
  const GradBucketLayout& layout() const { return layout_; }
  /// True when the buckets are reduce-scattered during the backward pass (overlap.group was given).
  bool overlapped() const { return overlap_.group != nullptr; }
  /// True when step() defers the all-gathers (gather.order was given).
  bool gather_deferred() const { return gather_.order != nullptr; }

 private:
  /// The gradients summed over the group into this rank's shard: waits for the buckets launched during the backward
  /// pass and launches the rest (overlapped), or one reduce-scatter of the whole buffer.
  void reduce_grads();
  /// A parameter's part inside this rank's shard.
  struct Segment {
    int64_t shard_offset, n;
    bool decay;
  };
  struct GradHook;  ///< the hook on a parameter's gradient accumulator (distributed_adam.cpp)
  void init_shard();
  void install_hooks();
  void register_gathers();
  /// Bucket `bucket`'s parameters get their values from the gathered flat buffer.
  void copy_gathered(const GradBucket& bucket);
  /// The hook: parameter i's gradient was accumulated into its .grad().
  void on_grad_accumulated(size_t i);
  /// grad_views_[i] += .grad() of parameter i; clears .grad(). Throws std::logic_error after its bucket launched.
  void fold(size_t i);
  /// Parameter i's gradient is final: counts it in its bucket, which goes to the launch order once complete.
  void mark_ready(size_t i);
  double shard_squared_norm();
  /// True when the shard's masters and moments are FP32 (no remainder, optimizer.exp_avg(_sq)_dtype fp32).
  bool plain_state() const;
  /// The update of the FP32 state in place (PyTorch's fused AdamW on CUDA with libtorch 2.x, else
  /// adamw_update_); returns the updated shard in the parameters' dtype.
  torch::Tensor plain_update(double lr);
  /// The update on FP32 working copies of the remainder-held masters and BF16 moments (docs/optimizer.md,
  /// "Precision-aware state"), written back; returns the updated shard in the parameters' dtype.
  torch::Tensor precision_aware_update(double lr);
  /// Weight decay on the decayed segments of FP32 `w`, then adamw_update_ with FP32 `m`, `v`.
  void decay_and_update(torch::Tensor& w, torch::Tensor& m, torch::Tensor& v, double lr);
  /// This rank's shard of param_flat_ (its part of each bucket, in shard order): the BF16 half of its masters.
  torch::Tensor own_param_shard() const;

  std::vector<torch::Tensor> params_, grad_views_;
  GradBucketLayout layout_;
  /// master_: the shard's FP32 masters (undefined with remainders); remainder_: their int16 low halves (undefined
  /// without); the moments in optimizer.exp_avg_dtype / exp_avg_sq_dtype.
  torch::Tensor grad_flat_, param_flat_, grad_shard_, master_, remainder_, exp_avg_, exp_avg_sq_;
  std::vector<Segment> segments_;
  dist::ProcessGroup& group_;
  GradientGroups groups_;
  RecipeOptimizer o_;
  int64_t t_ = 0;
  // Overlap (empty without it).
  GradReduceOverlap overlap_;
  std::vector<char> armed_, ready_;  ///< per parameter: in the current last backward pass; gradient final
  std::vector<int64_t> pending_;     ///< per bucket: parameters not final yet
  std::vector<std::unique_ptr<dist::ProcessGroup::Request>> works_;   ///< per bucket: its reduce-scatter in flight
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;  ///< kept alive: they hold the hooks
  std::shared_ptr<DistributedAdam*> self_;                            ///< the hooks' way back here; null once destroyed
  // Deferred all-gathers (empty without them).
  ParamGatherOverlap gather_;
  torch::Tensor gather_shard_;  ///< the updated shard in the parameters' dtype, read by the gathers in flight
  std::vector<std::unique_ptr<dist::ProcessGroup::Request>> gathers_;  ///< per bucket: its all-gather in flight
};

}  // namespace recipebench::train
