// The process groups of a layout on one rank (tensor-, data-, expert- and expert-data-parallel), with membership
// taken from the layout's rank map (harness/layout/rank_map.h: Megatron-LM order, TP fastest; the expert grid of
// "MoE parallel folding"), and the tensor-parallel group of the model over a c10d group.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dist/process_group.h"
#include "model/moe.h"
#include "model/tensor_parallel.h"

namespace recipebench {
struct RankMap;
}

namespace recipebench::dist {

/// One rank's groups. A group spanning the whole run is the run's group itself; the others are Gloo subgroups over
/// the run's store (a group of one rank is a one-rank group).
struct LayoutGroups {
  ProcessGroup* tp = nullptr;   ///< ranks with the same (cp, dp, pp): the attention grid's TP group
  ProcessGroup* dp = nullptr;   ///< ranks with the same (tp, cp, pp): the dense parameters' data-parallel group
  ProcessGroup* ep = nullptr;   ///< ranks with the same (etp, edp, pp): the expert-parallel group
  ProcessGroup* edp = nullptr;  ///< ranks with the same (etp, ep, pp): the ranks holding the same experts
  ProcessGroup* pp = nullptr;   ///< ranks with the same (tp, cp, dp): this rank's pipeline; null when PP = 1
  /// The pipeline's point-to-point groups by kind and direction (train/pipeline_executor.h PipelinePlace::p2p), on
  /// NCCL with PP > 1: the run's group for activations towards higher pipeline ranks and three more groups of all
  /// ranks for the rest; null elsewhere (Gloo matches by tag: the run's group carries everything).
  ProcessGroup* p2p[2][2] = {{nullptr, nullptr}, {nullptr, nullptr}};
  int dp_rank = 0;              ///< this rank's DP coordinate (which block of the global batch it trains on)
  std::vector<std::unique_ptr<ProcessGroup>> owned;
};

/// The members (run ranks, ascending) of `rank`'s group of `kind`: "tp" (same cp, dp, pp), "dp" (same tp, cp, pp),
/// "ep" (same etp, edp, pp), "edp" (same etp, ep, pp) or "pp" (same tp, cp, dp). Throws std::invalid_argument for another kind or a rank
/// outside the map.
std::vector<int> group_members(const RankMap& map, int rank, const std::string& kind);

/// Creates this rank's groups of `map` (kind "tp", "dp", "ep", "edp", "pp" in that order, then the gradients'
/// pipeline group on NCCL; every rank of the run calls it with the same map). Throws std::exception when a subgroup cannot be formed.
LayoutGroups make_layout_groups(ProcessGroup& world, const RankMap& map);

/// The MoE layers' ExpertParallel over a c10d group (model/moe.h): a variable-size all-to-all along dim 0.
struct GroupExpertParallel : torch_model::ExpertParallel {
  explicit GroupExpertParallel(ProcessGroup& g) : group(g) {}
  int64_t rank() const override { return group.rank(); }
  int64_t size() const override { return group.size(); }
  /// x [sum(send_counts), ...] -> [sum(recv_counts), ...]: send_counts[r] rows to rank r, recv_counts[r] from it.
  at::Tensor all_to_all(const at::Tensor& x, const std::vector<int64_t>& send_counts,
                        const std::vector<int64_t>& recv_counts) override {
    int64_t rows = 0;
    for (auto n : recv_counts) rows += n;
    auto shape = x.sizes().vec();
    shape[0] = rows;
    auto out = at::empty(shape, x.options());
    group.all_to_all(x.contiguous(), out, recv_counts, send_counts);
    return out;
  }
  ProcessGroup& group;
};

/// The model's TensorParallel over a c10d group (model/tensor_parallel.h).
struct GroupTensorParallel : torch_model::TensorParallel {
  explicit GroupTensorParallel(ProcessGroup& g) : group(g) {}
  int64_t rank() const override { return group.rank(); }
  int64_t size() const override { return group.size(); }
  void all_reduce_sum(at::Tensor& t) override { group.all_reduce_sum(t); }
  void all_reduce_max(at::Tensor& t) override { group.all_reduce_max(t); }
  void all_gather(const at::Tensor& shard, at::Tensor& full) override { group.all_gather(shard, full); }
  void reduce_scatter_sum(at::Tensor& full, at::Tensor& shard) override { group.reduce_scatter_sum(full, shard); }
  ProcessGroup& group;
};

}  // namespace recipebench::dist
