// Which receive of a pipeline rank is posted when, with bench.overlap_p2p_comm (docs/distributed.md, "Pipeline
// parallelism"): pure data from the rank's schedule (train/pipeline_schedule.h); no libtorch here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "train/pipeline_schedule.h"

namespace recipebench::train {

/// One receive of a pipeline rank: the input of one pass of its schedule.
struct PipelineReceive {
  int64_t action = 0;      ///< index in the rank's schedule of the pass that consumes it (waits for it)
  bool gradient = false;   ///< an output gradient for a backward pass, else hidden states for a forward pass
  bool to_higher = false;  ///< travels towards a higher pipeline rank (the link: dist/pipeline_links.h)
  /// Posted right after the wait of schedule[post_after]'s own receive, before that pass computes; -1: at the
  /// start of the step.
  int64_t post_after = -1;
};

/// The receives of pipeline rank `stage` in the order of its schedule (pipeline_schedule(pp, vpp, stage,
/// microbatches)), each with when it is posted ahead (Megatron-LM's overlap_p2p_comm: the transfer runs while the
/// passes in between compute). A forward pass of global stage g > 0 receives from g - 1, a backward pass of
/// g < PP x VPP - 1 from g + 1. Per link (kind and direction) the rank posts the link's first `depth` receives at
/// the start of the step and each later one right after the wait of the one `depth` before it on that link: so at
/// most `depth` receives of a link are in flight, every receive is posted before its pass waits for it, and a
/// link's receives are posted in the order its sender sends them (both follow the microbatch order of the 1F1B and
/// interleaved 1F1B schedules, Narayanan et al. 2021, arXiv 2104.04473), as NCCL needs (it matches a pair's sends
/// and receives on one communicator in issue order). Throws std::invalid_argument as pipeline_schedule, or for
/// depth < 1.
std::vector<PipelineReceive> pipeline_receive_plan(int pp, int vpp, int stage, int64_t microbatches, int depth);

}  // namespace recipebench::train
