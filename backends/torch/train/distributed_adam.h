// The distributed optimizer of data parallelism (ZeRO-1 style, as Megatron-LM's distributed optimizer): the FP32
// gradients of all parameters live in one flat buffer; after the microbatches they are reduce-scattered over the
// data-parallel group, so each rank holds the summed gradient of its contiguous shard of the flat buffer and keeps
// the FP32 master weights and Adam moments of that shard only; after its update the shards are all-gathered and
// every parameter is the new master weight cast to its dtype. Same formula as MixedPrecisionAdam.
#pragma once

#include <torch/types.h>

#include <memory>
#include <vector>

#include "recipe/recipe.h"
#include "train/optimizer.h"

namespace recipebench::train {

class DistributedAdam : public Optimizer {
 public:
  /// Every rank of `group` (the data-parallel group) must pass the same parameters (same shapes, same order, same
  /// initial values). `groups`: the partial-sum group (the TP group for parameters replicated over TP under
  /// sequence parallel) and the shard group (the TP group for TP-sharded parameters); null when none.
  DistributedAdam(std::vector<torch::Tensor> params, const RecipeOptimizer& options, dist::ProcessGroup& group,
                  GradientGroups groups = {});

  /// Adds every parameter's .grad() into the flat FP32 gradient buffer and clears .grad().
  void accumulate_grads() override;
  /// Zeros the flat FP32 gradient buffer.
  void zero_grad() override;
  /// Sums the flat gradient buffer over the partial-sum group, reduce-scatters it (sum over the DP ranks) into this
  /// rank's shard, and returns the global squared L2 norm: the DP shards' norm (all-reduced) squared, summed over
  /// the shard group.
  double squared_grad_norm() override;
  /// Scales this rank's gradient shard by clip / norm when norm > clip (> 0). Returns the scale applied (<= 1).
  double clip(double norm) override;
  /// Adam on this rank's shard, then all-gather of the updated shards into the parameters.
  void step(double lr) override;

  int64_t shard_numel() const { return shard_n_; }

 private:
  /// A parameter's part inside this rank's shard.
  struct Segment {
    int64_t shard_offset, n;
    bool decay;
  };
  std::vector<torch::Tensor> params_, grad_views_;
  std::vector<int64_t> offsets_;
  torch::Tensor grad_flat_, param_flat_, grad_shard_, master_, exp_avg_, exp_avg_sq_;
  std::vector<Segment> segments_;
  int64_t shard_lo_ = 0, shard_n_ = 0;
  dist::ProcessGroup& group_;
  GradientGroups groups_;
  RecipeOptimizer o_;
  int64_t t_ = 0;
};

}  // namespace recipebench::train
