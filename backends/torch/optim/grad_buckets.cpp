#include "optim/grad_buckets.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace recipebench::train {

namespace {

int64_t round_up(int64_t n, int64_t multiple) { return (n + multiple - 1) / multiple * multiple; }

/// Closes `b` (its parameters already placed from b.offset on, `used` elements): pads it and appends it.
void close_bucket(GradBucketLayout& l, GradBucket& b, int64_t used, int64_t multiple, int dp) {
  b.numel = round_up(used, multiple);
  b.shard_offset = l.shard_numel;
  l.flat_numel += b.numel;
  l.shard_numel += b.numel / dp;
  for (size_t p : b.params) l.param_bucket[p] = l.buckets.size();
  l.buckets.push_back(std::move(b));
  b = GradBucket{};
  b.offset = l.flat_numel;
}

}  // namespace

GradBucketLayout make_grad_bucket_layout(const std::vector<int64_t>& numels, int dp, int64_t bucket_elements) {
  if (dp < 1) throw std::invalid_argument("gradient buckets: DP " + std::to_string(dp) + ", expected >= 1");
  for (int64_t n : numels)
    if (n < 0) throw std::invalid_argument("gradient buckets: a parameter of " + std::to_string(n) + " elements");
  GradBucketLayout l;
  l.param_offset.assign(numels.size(), 0);
  l.param_bucket.assign(numels.size(), 0);
  if (numels.empty()) return l;
  const bool bucketed = bucket_elements > 0;
  const int64_t multiple = bucketed ? int64_t{dp} * kGradBucketSliceAlign : dp;
  GradBucket b;
  int64_t used = 0;  // elements of `b` taken by its parameters
  for (size_t k = 0; k < numels.size(); ++k) {
    const size_t i = bucketed ? numels.size() - 1 - k : k;
    l.param_offset[i] = b.offset + used;
    b.params.push_back(i);
    used += numels[i];
    if (bucketed && used >= bucket_elements && k + 1 < numels.size()) {
      close_bucket(l, b, used, multiple, dp);
      used = 0;
    }
  }
  close_bucket(l, b, used, multiple, dp);
  return l;
}

std::vector<ShardSegment> shard_segments(const GradBucketLayout& layout, const std::vector<int64_t>& numels, int rank,
                                         int dp) {
  std::vector<ShardSegment> out;
  for (const GradBucket& b : layout.buckets) {
    const int64_t slice = b.numel / dp;
    const int64_t lo = b.offset + int64_t{rank} * slice, hi = lo + slice;  // rank's slice of the flat buffer
    for (size_t p : b.params) {
      const int64_t p_lo = std::max(layout.param_offset[p], lo);
      const int64_t p_hi = std::min(layout.param_offset[p] + numels[p], hi);
      if (p_hi <= p_lo) continue;
      out.push_back(ShardSegment{p, p_lo - layout.param_offset[p], b.shard_offset + (p_lo - lo), p_hi - p_lo});
    }
  }
  return out;
}

}  // namespace recipebench::train
