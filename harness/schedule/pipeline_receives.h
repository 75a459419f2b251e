// Which receive of a pipeline rank is posted when, with bench.overlap_p2p_comm (docs/distributed.md, "Pipeline
// parallelism"): pure data from the rank's schedule (schedule/pipeline_schedule.h); no libtorch here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "schedule/pipeline_schedule.h"

namespace recipebench {

/// Receives posted ahead per link with bench.overlap_p2p_comm: one, the next one right after the last one's wait, so
/// each transfer overlaps the passes run between them. The pipeline executor (backends/torch/pipeline) posts by it,
/// and the step-time model's pipeline timing (schedule/pipeline_timing.h) plays the same plan.
constexpr int kPipelineReceivesAhead = 1;

/// One receive of a pipeline rank: the input of one pass of its schedule.
struct PipelineReceive {
  int64_t action = 0;      ///< index in the rank's schedule of the pass that consumes it (waits for it)
  bool gradient = false;   ///< an output gradient for a backward pass, else hidden states for a forward pass
  bool to_higher = false;  ///< travels towards a higher pipeline rank (the link: dist/pipeline_links.h)
  /// Whether it is posted ahead: false for the first receive of its link in the step, which its own pass posts
  /// right before waiting for it (as without bench.overlap_p2p_comm).
  bool ahead = false;
  /// With `ahead`: posted right after the wait of schedule[post_after]'s receive (an earlier one of the same link),
  /// before that pass computes; -1 otherwise.
  int64_t post_after = -1;
};

/// The receives of pipeline rank `stage` in the order of its schedule (pipeline_schedule(pp, vpp, stage,
/// microbatches)), each with when it is posted ahead (Megatron-LM's overlap_p2p_comm: the transfer runs while the
/// passes in between compute). A forward pass of global stage g > 0 receives from g - 1, a backward pass of
/// g < PP x VPP - 1 from g + 1. Per link (kind and direction) the link's first receive is posted by its own pass
/// (NCCL creates a pair's communicator on its first use there, which blocks until the peer uses it too: posted
/// earlier, two ranks could each wait for the other's first use of another link), and receive j >= 1 right after
/// the wait of receive max(0, j - depth) of that link: so at most `depth` receives of a link are in flight, every
/// receive is posted before its pass waits for it, and a link's receives are posted in the order its sender sends
/// them (both follow the microbatch order of the 1F1B and interleaved 1F1B schedules, Narayanan et al. 2021,
/// arXiv 2104.04473), as NCCL needs (it matches a pair's sends and receives on one communicator in issue order).
/// Throws std::invalid_argument as pipeline_schedule, or for depth < 1.
std::vector<PipelineReceive> pipeline_receive_plan(int pp, int vpp, int stage, int64_t microbatches, int depth);

}  // namespace recipebench
