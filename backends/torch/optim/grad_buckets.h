// Where a distributed optimizer's gradients sit in its flat FP32 buffer (optim/distributed_adam.h) and how that
// buffer is cut into buckets, each reduce-scattered over the data-parallel group on its own, and into each rank's
// shard (docs/distributed.md, "Gradient buckets"). Pure arithmetic on element counts: no libtorch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "settings/run_options.h"

namespace recipebench::train {

// The default bucket size, kDefaultGradBucketElements, is the harness's (settings/run_options.h: the default of
// bench.grad_reduce_bucket_elements).

/// Elements of each rank's slice of a bucket are a multiple of this when the buffer has buckets (256 bytes of FP32:
/// every slice and bucket starts on a 256-byte boundary, as NCCL's vectorised loads like).
constexpr int64_t kGradBucketSliceAlign = 64;

/// One bucket: a contiguous range of the flat buffer holding whole parameters, reduce-scattered on its own. Rank r's
/// slice of it is flat [offset + r x numel / DP, + numel / DP), which lands at [shard_offset, + numel / DP) of r's
/// shard.
struct GradBucket {
  std::vector<size_t> params;  ///< its parameters (indices into the optimizer's list), in buffer order
  int64_t offset = 0;          ///< its first element in the flat buffer
  int64_t numel = 0;           ///< its elements: its parameters' plus zero padding, a multiple of DP
  int64_t shard_offset = 0;    ///< where its slice starts in every rank's shard: the earlier buckets' numel / DP
};

/// The flat buffer of one optimizer on one DP group: every parameter's place, the buckets in launch order.
struct GradBucketLayout {
  std::vector<int64_t> param_offset;  ///< per parameter (the optimizer's order): its first element in the buffer
  std::vector<size_t> param_bucket;   ///< per parameter: the bucket holding it
  std::vector<GradBucket> buckets;    ///< in reduce-scatter launch order (bucket 0 first)
  int64_t flat_numel = 0;             ///< the buffer's elements: the buckets' numel summed
  int64_t shard_numel = 0;            ///< each rank's shard: flat_numel / DP
};

/// The layout of parameters with `numels` elements each (the optimizer's order, >= 0) on `dp` ranks (>= 1).
/// - bucket_elements <= 0: one bucket of every parameter in that order, padded to a multiple of dp (the layout
///   without overlap: rank r's shard is the r-th 1 / dp of the padded buffer).
/// - bucket_elements > 0: the parameters in reverse order (the backward pass produces the last layers' gradients
///   first), laid out in that order; a bucket closes once it holds >= bucket_elements elements (a parameter is never
///   split, so a bucket may exceed it by its last parameter); each bucket is padded to a multiple of
///   dp x kGradBucketSliceAlign. Megatron-LM's param-and-grad buffer buckets the same way.
/// No parameters: no buckets, an empty buffer. Throws std::invalid_argument when dp < 1 or a numel < 0.
GradBucketLayout make_grad_bucket_layout(const std::vector<int64_t>& numels, int dp, int64_t bucket_elements);

/// A run of one parameter's elements inside one rank's shard.
struct ShardSegment {
  size_t param = 0;          ///< the parameter (index into the optimizer's list)
  int64_t param_offset = 0;  ///< its first element inside the (flattened) parameter
  int64_t shard_offset = 0;  ///< its first element inside the shard
  int64_t n = 0;             ///< elements
};

/// Rank `rank`'s (0 <= rank < dp) segments, in shard order: for each bucket, the parameters' parts inside rank's
/// slice of it (padding belongs to no parameter). `numels` and `dp` are the ones the layout was made with.
std::vector<ShardSegment> shard_segments(const GradBucketLayout& layout, const std::vector<int64_t>& numels, int rank,
                                         int dp);

}  // namespace recipebench::train
