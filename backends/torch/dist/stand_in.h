// The stand-in transport of an emulated rank (docs/emulation.md, "What is stood in"): the results of a group's
// collectives computed from this rank's own tensors alone, as if every member of the group held what this rank holds
// (the replicated-peer assumption), so that one process runs one rank of a cluster layout without its peers. Shapes,
// dtypes and devices are exactly those of the real collective's results; values are representative, not the real
// run's. Libtorch operations only (no c10d).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

namespace recipebench::dist::stand_in {

/// The sum over `size` members each holding `t`: t *= size (in place).
void all_reduce_sum(at::Tensor& t, int size);
/// shard = size x full's slot `rank` (full.numel() == size x shard.numel(), both 1-D contiguous; `full` unchanged).
void reduce_scatter_sum(const at::Tensor& full, const at::Tensor& shard, int rank, int size);
/// Every slot of `full` (full.numel() == size x shard.numel(), 1-D) gets `shard`: each member is taken to hold this
/// rank's shard.
void all_gather(const at::Tensor& shard, const at::Tensor& full, int size);
/// The variable-size all-to-all along dim 0 (ProcessGroup::all_to_all's contract): `out`'s block from member r
/// (out_counts[r] rows) is filled with the rows `in` sends to this rank itself (block `rank` of in, in_counts[rank]
/// rows), repeated as often as needed and cut to length; zeros when that block is empty. With the MoE dispatcher's
/// counts exchange this makes every member send this rank's experts what this rank routes to them, so its experts
/// receive EP x its own routed tokens (docs/emulation.md, "Expert parallelism"). Throws std::invalid_argument when a
/// count list is not one entry per member or does not add up to the rows.
void all_to_all(const at::Tensor& in, at::Tensor& out, const std::vector<int64_t>& out_counts,
                const std::vector<int64_t>& in_counts, int rank);

/// The values a pipeline receive delivers: fixed pseudo-random values (standard normal, drawn once per shape from
/// a generator of its own, so neither the run's random state nor the step's work changes with it), copied into `t`.
class Receiver {
 public:
  /// Fills `t` (contiguous) with this shape's values.
  void fill(at::Tensor& t);

 private:
  std::map<std::tuple<std::vector<int64_t>, int, int, int>, at::Tensor> values_;  ///< shape, dtype, device
};

}  // namespace recipebench::dist::stand_in
