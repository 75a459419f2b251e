// Runs a pipeline schedule (schedule/pipeline_schedule.h) on one pipeline rank: the forward and backward passes of its
// model chunks (model/pipeline_stage.h), with the activations and their gradients sent point to point between
// neighbouring stages (dist/process_group.h isend / irecv).
#pragma once

#include <torch/types.h>

#include <functional>
#include <vector>

#include "dist/pipeline_links.h"
#include "model/pipeline_stage.h"

namespace recipebench::train {

/// This rank's place in its pipeline.
struct PipelinePlace {
  int pp = 1;                           ///< pipeline ranks
  int vpp = 1;                          ///< model chunks per pipeline rank
  int stage = 0;                        ///< this rank's pipeline rank, 0..pp-1
  std::vector<int> stage_ranks;         ///< group rank of pipeline rank 0..pp-1 of this pipeline (same DP, TP, CP)
  dist::ProcessGroup* group = nullptr;  ///< the group stage_ranks refer to; null only when pp == 1
  /// The point-to-point groups by kind and direction (the same ranks as `group`); a null entry uses `group`.
  dist::PipelineLinks links;
  /// bench.overlap_p2p_comm: receives are posted ahead (schedule/pipeline_receives.h) into buffers allocated then, and
  /// waited for when their pass runs; false: each is posted and waited for right before its pass.
  bool overlap_p2p_comm = false;
};

/// One microbatch of the step: ids int64 [rows, seq] and loss mask [rows, seq] (uint8 or bool, 1 where supervised);
/// the same tensors on every pipeline rank of a DP rank.
struct PipelineMicrobatch {
  torch::Tensor ids, mask;
};

/// One step's forward and backward passes of `microbatches` on this pipeline rank, in the order of
/// pipeline_schedule(pp, vpp, stage, microbatches.size()) (1F1B for VPP 1, interleaved 1F1B for VPP > 1).
/// A forward pass of chunk v on microbatch m takes the ids (embedding chunk) or receives the hidden states
/// [rows, seq, hidden] (dtype and device of the stage's parameters) from the previous global stage, and sends its
/// output to the next global stage, or (last stage) computes the SFT loss sum. A backward pass back-propagates
/// loss sum / `denom` (last stage) or the output gradient received from the next stage, and sends its input's
/// gradient to the previous stage; `after_backward` runs after each backward pass (gradient accumulation).
/// Sends are not waited for until the end of the step; receives are, each right before its pass, which posts it
/// then too, or (PipelinePlace::overlap_p2p_comm) earlier, as soon as the one before it on its link was waited for
/// (the same bits: only when the transfer runs changes). On Gloo (tags: 2 (m x PP x VPP + receiving
/// global stage), + 1 for gradients) the schedule's orders then complete without deadlock (pipeline_schedule_runs);
/// on NCCL (no tags; a send waits on the GPU for its receive) each kind and direction goes over its own group
/// (PipelinePlace::links), whose sends and receives both ends issue in the same order. `lap(backward)` is called after
/// every pass (profiling), may be empty. `before_last_backward(chunk)`, when given, runs right before the step's last
/// backward pass of each model chunk (the one completing the chunk's gradients: bench.overlap_grad_reduce starts
/// reducing them during it). Returns the loss sum (fp64 scalar on the stage's device, not read on the
/// host: bench.fail_on_sync) of the microbatches whose loss this rank computed (0 off the last stage). Throws
/// c10::Error / std::exception on a shape mismatch or a failed peer (Gloo timeout).
torch::Tensor run_pipeline_step(torch_model::PipelineStage& stage, const std::vector<PipelineMicrobatch>& microbatches,
                                const PipelinePlace& place, double denom, const std::function<void()>& after_backward,
                                const std::function<void(bool backward)>& lap = {},
                                const std::function<void(int chunk)>& before_last_backward = {});

}  // namespace recipebench::train
