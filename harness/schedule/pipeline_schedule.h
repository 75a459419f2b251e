// Pipeline-parallel schedules as pure data: the order of forward and backward passes of microbatches on one
// pipeline rank. No libtorch here (the executor, pipeline/pipeline_executor.h, runs the order with tensors).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace recipebench {

/// One pass of one microbatch through one model chunk (virtual stage) of a pipeline rank.
struct PipelineAction {
  enum class Kind { Forward, Backward };
  Kind kind = Kind::Forward;
  int64_t microbatch = 0;  ///< 0..microbatches-1, in the step's (DP rank's) order
  int chunk = 0;           ///< 0..VPP-1: the rank's model chunk; its global stage is chunk x PP + pipeline rank

  bool operator==(const PipelineAction& o) const {
    return kind == o.kind && microbatch == o.microbatch && chunk == o.chunk;
  }
};

/// Warm-up forwards of pipeline rank `stage` (0..pp-1) before its first backward.
/// VPP 1 (1F1B, PipeDream-Flush: Narayanan et al., "Memory-Efficient Pipeline-Parallel DNN Training", ICML 2021):
/// min(PP - stage - 1, microbatches).
/// VPP > 1 (interleaved 1F1B: Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
/// Using Megatron-LM", SC 2021, section 2.2; Megatron-LM's schedule): in virtual microbatches (microbatch, chunk
/// pairs), min(2 (PP - stage - 1) + (VPP - 1) PP, microbatches x VPP). (Megatron-LM has run every forward first
/// when microbatches == PP; here the formula holds for that case too, and the orders still complete.)
/// Throws std::invalid_argument for pp < 1, vpp < 1, stage outside 0..pp-1, microbatches < 1, or VPP > 1 with
/// microbatches not a multiple of PP (or PP = 1).
int64_t pipeline_warmup(int pp, int vpp, int stage, int64_t microbatches);

/// The order of passes on pipeline rank `stage`: warm-up forwards (pipeline_warmup), then the steady phase
/// alternating one forward and one backward, then the cool-down backwards; 2 x microbatches x VPP actions.
/// PP = 1 gives F0 B0 F1 B1 ... (the one-rank order).
/// VPP 1: forwards and backwards both in microbatch order.
/// VPP > 1 (Megatron-LM's interleaved order): the forwards run in groups of PP microbatches, chunk 0 of a group, then
/// chunk 1 of the same group, ..., then the next group; the backwards in the same groups with the chunks in reverse
/// order (VPP-1 first). Forward k is microbatch (k / (PP VPP)) PP + k mod PP on chunk (k mod (PP VPP)) / PP.
/// Dependencies the executor relies on (see pipeline_schedule_runs): forward (m, global stage g) needs forward
/// (m, g - 1); backward (m, g) needs its forward and backward (m, g + 1). With sends that never block and receives
/// that wait, the orders of all ranks together complete (tests/test_pipeline_schedule.cpp checks it).
/// Throws std::invalid_argument as pipeline_warmup.
std::vector<PipelineAction> pipeline_schedule(int pp, int vpp, int stage, int64_t microbatches);

/// Plays the schedules of all `pp` ranks against each other with non-blocking sends (a pass's output is available
/// to its neighbour as soon as the pass ran) and blocking receives (a pass waits for its input). Returns "" when
/// every rank finishes, else a description of where the ranks are stuck (a deadlock). For tests and checks.
std::string pipeline_schedule_runs(int pp, int vpp, const std::vector<std::vector<PipelineAction>>& orders,
                                   int64_t microbatches);

/// "F0.1" (forward of microbatch 0 on chunk 1) / "B3.0": the order as text, for messages and tests.
std::string format_pipeline_order(const std::vector<PipelineAction>& order);

}  // namespace recipebench
