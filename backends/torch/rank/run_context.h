// Where one rank of a training run stands: its device and compute dtype, the run's process group, the layout's
// rank map and this rank's place in it, its parallel groups and its place in its pipeline.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "dist/parallel_groups.h"
#include "dist/process_group.h"
#include "layout/rank_map.h"
#include "pipeline/pipeline_executor.h"

namespace recipebench::train {

/// One rank's run. Made in two steps: open_run (device, dtype, the rendezvous) and place_rank (the layout's
/// groups); finish() ends a successful run on every rank.
struct RunContext {
  c10::Device device{c10::kCPU};
  c10::ScalarType dtype = c10::kFloat;  ///< compute dtype: BF16 on CUDA for a bf16 recipe, else FP32
  int rank = 0, world = 1;
  std::unique_ptr<dist::ProcessGroup> group;  ///< the run's group over all ranks; null on one rank
  RankMap map;                                ///< every rank's coordinates and layers (harness/layout/rank_map.h)
  RankPlacement me;                           ///< this rank's entry of `map`
  dist::LayoutGroups groups;                  ///< TP, DP, EP, EDP, PP groups; empty on one rank
  PipelinePlace place;                        ///< this rank's pipeline (stage ranks, point-to-point groups)

  /// Waits for the device's queued work (CUDA; nothing on the CPU).
  void synchronize() const;
  /// Waits until every rank got here (several ranks only).
  void barrier() const;
  /// The maximum of `v` over the ranks (`v` on one rank).
  int64_t max_over_ranks(int64_t v) const;
  /// --emulate-rank: this process is rank `rank` of `world` alone, `group` the stand-in transport's
  /// (dist/stand_in.h, docs/emulation.md).
  bool emulated() const { return group && group->transport() == dist::Transport::kStandIn; }
  /// True when this rank holds a last pipeline stage (the output layer and the loss).
  bool last_stage() const { return me.pp == map.pp - 1; }
  /// Every rank's `v`, in rank order (a collective; {v} on one rank and on an emulated rank).
  std::vector<int64_t> gather_over_ranks(int64_t v) const;
  /// A clean end on every rank: the device's work done, subgroups first, then the run's group (its store lives on
  /// rank 0). No collective may follow.
  void finish();
};

/// The dtype of the parameters and activations for `precision` (workload.precision) on `device`, from
/// torch_compute_bytes (plan/memory_plan.h, the rule's one place): bf16 -> BF16 on CUDA, FP32 on the CPU; fp32 ->
/// FP32; fp64 -> FP64 (reference runs: the parity tests compare layouts in float64). The optimizer keeps FP32 master
/// weights in every case. Throws RunError for any other precision (the backend's capabilities refuse it before a rank
/// starts).
c10::ScalarType compute_dtype(const std::string& precision, c10::Device device);

/// The device (rank_device), the compute dtype (compute_dtype) and, with several ranks, the run's process group: the
/// rendezvous at rank 0's TCPStore (NCCL between GPUs, Gloo between CPU ranks; options.place.dist_timeout_seconds
/// bounds it and every collective), or for an emulated rank (settings.emulate_rank) the stand-in transport's group
/// of place.world ranks. Throws RunError when the rendezvous fails.
RunContext open_run(const Recipe& recipe, const RunOptions& options);

/// How a rank's groups and pipeline links are made (its part of the run's switches).
struct ParallelConfig {
  /// The gradient reduce-scatter groups grad_dp / grad_edp (bench.overlap_grad_reduce; dist/parallel_groups.h).
  bool grad_reduce_groups = false;
  /// bench.overlap_p2p_comm: the pipeline posts each receive ahead (PipelinePlace::overlap_p2p_comm; PP > 1).
  bool overlap_p2p_comm = false;
  /// --layers with --emulate-rank: this rank's pipeline stage keeps this many of its layers (layout/rank_map.h
  /// keep_stage_layers; docs/emulation.md).
  std::optional<int64_t> emulated_stage_layers;
};

/// Places this rank on `map` (the resolved run's rank map of the model that runs, settings/resolved_run.h; an
/// emulated rank's stage cut to config.emulated_stage_layers) and forms its groups and pipeline place (a collective:
/// every rank calls it) as `config` says. Throws RunError when the map is not the run's world or the cut does not
/// hold, std::exception when a group cannot be formed.
void place_rank(RunContext& ctx, const RankMap& map, const ParallelConfig& config = {});

}  // namespace recipebench::train
