// The process groups of a layout on one rank (tensor-, data-, expert- and expert-data-parallel), with membership
// taken from the layout's rank map (harness/layout/rank_map.h: Megatron-LM order, TP fastest; the expert grid of
// "MoE parallel folding"), and the tensor-parallel group of the model over a c10d group.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dist/comm_clock.h"
#include "layout/parallel_group.h"
#include "dist/pipeline_links.h"
#include "dist/process_group.h"
#include "model/moe.h"
#include "model/tensor_parallel.h"


namespace recipebench::dist {

// The kinds of group and their members: one definition in the harness (layout/parallel_group.h), shared with the
// step-time model.
using recipebench::GroupKind;
using recipebench::group_members;
using recipebench::parse_group_kind;
using recipebench::to_string;

/// One rank's groups. A group spanning the whole run is the run's group itself; the others are subgroups over
/// the run's store (a group of one rank is a one-rank group).
struct LayoutGroups {
  ProcessGroup* tp = nullptr;   ///< GroupKind::kTp
  ProcessGroup* dp = nullptr;   ///< GroupKind::kDp
  ProcessGroup* ep = nullptr;   ///< GroupKind::kEp
  ProcessGroup* edp = nullptr;  ///< GroupKind::kEdp
  ProcessGroup* pp = nullptr;   ///< GroupKind::kPp: this rank's pipeline; null when PP = 1
  /// The members of `dp` / `edp` in a group of their own (own communicators, even when `dp` is the run's group):
  /// the gradient buckets' reduce-scatters of bench.overlap_grad_reduce, in flight during the backward pass while
  /// the TP, EP and pipeline collectives run on the other groups. Null unless asked for and of more than one rank
  /// (grad_edp also when the experts are not apart from the dense parameters: EP = TP = 1).
  ProcessGroup* grad_dp = nullptr;
  ProcessGroup* grad_edp = nullptr;
  PipelineLinks links;  ///< the pipeline's point-to-point groups (NCCL with PP > 1)
  int dp_rank = 0;      ///< this rank's DP coordinate (which block of the global batch it trains on)
  std::vector<std::unique_ptr<ProcessGroup>> owned;
};

/// Creates this rank's groups of `map` (kinds tp, dp, ep, edp, pp in that order, then the pipeline's
/// point-to-point groups on NCCL, then, with `grad_groups`, grad_dp and grad_edp; every rank of the run calls it
/// with the same map and flag). Throws std::exception when a subgroup cannot be formed.
LayoutGroups make_layout_groups(ProcessGroup& world, const RankMap& map, bool grad_groups = false);

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
    const CommWait wait(CommKind::kExpertParallel);
    group.all_to_all(x.contiguous(), out, recv_counts, send_counts);
    return out;
  }
  ProcessGroup& group;
};

/// The model's TensorParallel over a c10d group (model/tensor_parallel.h); `overlap` is bench.overlap_tp_comm.
struct GroupTensorParallel : torch_model::TensorParallel {
  explicit GroupTensorParallel(ProcessGroup& g, bool overlap_tp_comm = false) : group(g), overlap(overlap_tp_comm) {}
  int64_t rank() const override { return group.rank(); }
  int64_t size() const override { return group.size(); }
  void all_reduce_sum(at::Tensor& t) override {
    const CommWait wait(CommKind::kTensorParallel);
    group.all_reduce_sum(t);
  }
  void all_reduce_max(at::Tensor& t) override {
    const CommWait wait(CommKind::kTensorParallel);
    group.all_reduce_max(t);
  }
  void all_gather(const at::Tensor& shard, at::Tensor& full) override {
    const CommWait wait(CommKind::kTensorParallel);
    group.all_gather(shard, full);
  }
  void reduce_scatter_sum(at::Tensor& full, at::Tensor& shard) override {
    const CommWait wait(CommKind::kTensorParallel);
    group.reduce_scatter_sum(full, shard);
  }
  std::unique_ptr<torch_model::PendingCollective> start_reduce_scatter_sum(const at::Tensor& full,
                                                                          const at::Tensor& shard) override;
  bool overlap_comm() const override { return overlap; }
  ProcessGroup& group;
  bool overlap;
};

}  // namespace recipebench::dist
