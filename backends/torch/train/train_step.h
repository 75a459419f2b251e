// One training step on one rank: forward and backward passes of its microbatches in the pipeline schedule's order,
// the loss over all ranks, the gradient norm, clipping and the optimizer update, between barrier-synchronised
// step boundaries (the timed region).
#pragma once

#include <chrono>
#include <vector>

#include "data/step_batcher.h"
#include "optim/optimizer.h"
#include "rank/model_builder.h"
#include "rank/run_context.h"
#include "train/host_sync_check.h"

namespace recipebench::train {

/// What one step measured on this rank.
struct StepResult {
  double loss = 0;       ///< mean per-token loss over the step's supervised tokens (all ranks)
  double grad_norm = 0;  ///< global L2 norm of the gradients before clipping
  std::chrono::steady_clock::time_point start, end;                         ///< the timed region's boundaries
  double forward_seconds = 0, backward_seconds = 0, optimizer_seconds = 0;  ///< with `profile` only, else 0
  ComponentSeconds components;  ///< with `profile` only: time inside GDN, attention, MoE, LM head + loss
  std::vector<PassSample> passes;  ///< with `profile` only: each pass of the schedule by phase and component
};

/// The debug checks of one step: bench.fail_on_sync and its test hook.
struct StepChecks {
  const HostSyncCheck* host_sync = nullptr;  ///< checks the no-synchronisation region (first forward to the norm)
  bool inject_sync = false;                  ///< RunHooks::inject_sync_step is this step: a .item() in that region
  bool kill_mid_step = false;  ///< FailKind::kKill on this rank at this step: SIGKILL to itself after its passes
  bool nan_loss = false;       ///< FailKind::kNanLoss on this rank at this step: its own loss sum made NaN
};

/// Step `step` at learning rate `lr`: per-token normalisation over the whole global batch (each microbatch's loss
/// sum divided by the step's supervised-token count before its backward pass); the passes run in the pipeline
/// schedule's order (PP 1: forward and backward of each microbatch in turn; pipeline/pipeline_executor.h). The
/// parameter all-gathers the optimizer deferred from the last step (bench.overlap_param_gather) are launched at the
/// step's start, inside its timed region; the step's own are left pending (Optimizer::finish_param_gather). With
/// `profile` the device is synchronised after every pass to time the phases, and at every component boundary
/// (model/component_timer.h) to time the components. The passes (from the first forward pass to the optimizer's
/// gradient norm) read nothing on the host; with `checks.host_sync` they run in its region (bench.fail_on_sync).
/// Throws RunError (at `step`) when the loss or the gradient norm is not finite or a pass synchronised under the
/// check; std::exception when a peer fails.
StepResult train_step(const RunContext& ctx, RankModel& model, Optimizer& optimizer, const StepBatch& batch, double lr,
                      int step, bool profile, const StepChecks& checks = {});

}  // namespace recipebench::train
