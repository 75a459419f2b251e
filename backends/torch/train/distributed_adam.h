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

namespace recipebench::dist {
class ProcessGroup;
}

namespace recipebench::train {

class DistributedAdam {
 public:
  /// Every rank of `group` must pass the same parameters (same shapes, same order, same initial values).
  DistributedAdam(std::vector<torch::Tensor> params, const RecipeOptimizer& options, dist::ProcessGroup& group);

  /// Adds every parameter's .grad() into the flat FP32 gradient buffer and clears .grad().
  void accumulate_grads();
  /// Zeros the flat FP32 gradient buffer.
  void zero_grad();
  /// Reduce-scatters the accumulated gradients (sum over ranks) into this rank's shard and returns the global L2
  /// norm (sum of the shards' squared norms, all-reduced). Call once per step, after the last microbatch.
  double grad_norm();
  /// Scales this rank's gradient shard by clip / norm when norm > clip (> 0). Returns the scale applied (<= 1).
  double clip(double norm);
  /// Adam on this rank's shard, then all-gather of the updated shards into the parameters.
  void step(double lr);

  int64_t shard_numel() const { return shard_n_; }

  /// The flat FP32 gradient buffer (the parameters one after the other, padded to group size x shard_numel()),
  /// before grad_norm()'s reduce-scatter: tensor parallelism sums the replicated parameters' gradients over TP here.
  torch::Tensor& grad_buffer() { return grad_flat_; }

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
  RecipeOptimizer o_;
  int64_t t_ = 0;
};

}  // namespace recipebench::train
