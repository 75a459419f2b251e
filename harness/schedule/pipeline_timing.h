// The pipeline schedules (schedule/pipeline_schedule.h) played in time: each pass with its duration, each transfer
// between neighbouring stages with its time, giving the step's pipeline seconds and each rank's busy and idle
// time. Pure data, no libtorch; a building block of the step-time model (issue 30).
#pragma once

#include <cstdint>
#include <vector>

#include "schedule/pipeline_schedule.h"

namespace recipebench {

/// Durations of one microbatch's passes, seconds, indexed [pipeline rank 0..PP-1][chunk 0..VPP-1] (the chunk's
/// global stage is chunk x PP + rank). The backward includes any recomputation.
struct PassDurations {
  std::vector<std::vector<double>> forward;
  std::vector<std::vector<double>> backward;
};

/// Every rank and chunk with the same durations (seconds).
PassDurations uniform_pass_durations(int pp, int vpp, double forward_s, double backward_s);

/// The transfers between stages and what the result keeps.
struct PipelineTimingOptions {
  /// Seconds of one transfer (an activation forward or its gradient backward) between neighbouring ranks: every
  /// link, unless link_p2p_seconds is given.
  double p2p_seconds = 0;
  /// Per link, PP entries: [r] is the link between pipeline rank r and rank (r + 1) mod PP, both directions
  /// ([PP - 1] joins the last rank to the first: used by chunk boundaries with VPP > 1 only). Empty: p2p_seconds.
  std::vector<double> link_p2p_seconds;
  /// false (the default, as the executor without receives posted ahead): a receive is posted when the rank reaches
  /// the pass, so the transfer starts no earlier than that and the rank waits all of it: start = max(rank free,
  /// input's pass end) + p2p. true (receives posted ahead): the executor's own receive plan
  /// (schedule/pipeline_receives.h, kPipelineReceivesAhead in flight per link): a link's first receive is posted by
  /// its pass as without; receive j is posted when the rank starts the pass of receive j - depth, and its transfer
  /// runs behind the rank's compute from when it is both posted and sent: start = max(rank free, max(posted,
  /// input's pass end) + p2p).
  bool overlap_p2p = false;
  bool keep_actions = false;  ///< fill PipelineTiming::actions
};

/// One pass as it ran.
struct TimedPipelineAction {
  int rank = 0;          ///< pipeline rank
  int global_stage = 0;  ///< chunk x PP + rank
  PipelineAction action;
  double start = 0, end = 0;  ///< seconds from the step's start
};

/// The timed step of the pipeline.
struct PipelineTiming {
  double step_seconds = 0;                   ///< max over ranks of the last pass's end
  std::vector<double> end_seconds;           ///< [rank]: when its last pass ends
  std::vector<double> busy_seconds;          ///< [rank]: its passes' durations summed
  std::vector<double> idle_seconds;          ///< [rank]: step_seconds - busy (bubble and exposed transfers)
  std::vector<double> p2p_wait_seconds;      ///< [rank]: the part of idle spent in transfers after the input was sent
  std::vector<TimedPipelineAction> actions;  ///< with keep_actions: rank by rank, each in its schedule's order
};

/// Plays pipeline_schedule(pp, vpp, rank, microbatches) of every rank in time. The model: each rank runs its
/// passes one at a time in its schedule's order, from 0 s; sends never block (a pass's output leaves when it ends);
/// a receive waits. Forward (m, g) needs forward (m, g - 1) and its transfer (g > 0); backward (m, g) needs the
/// rank's forward (m, g) and backward (m, g + 1) with its transfer, the last global stage's backward only its
/// forward. With PP > 1 stage g - 1 (and g + 1) is always on another rank (g = chunk x PP + rank), so every such
/// dependency pays a transfer; with PP 1 none does. When the transfer starts: PipelineTimingOptions::overlap_p2p.
/// No other cost is modelled (no send time on the sender, no contention between transfers of one link).
/// Throws std::invalid_argument as pipeline_schedule, for durations not of shape [pp][vpp], and for a negative
/// (or NaN) duration or transfer time.
///
/// Bounded cost at any count: above pipeline_played_microbatches(pp, vpp) microbatches (and without keep_actions)
/// the schedule is played at three counts a period (PP microbatches) apart, of the same residue as `microbatches`;
/// past its warm-up the step is periodic, each period adding the same seconds to the step, to each rank's busy time
/// and to its transfer waits, so the figures are carried to `microbatches` by that period's increment (the steady
/// state in closed form: time and memory O(PP x VPP), not O(microbatches)). Where the three plays do not show one
/// increment (no steady state yet), the whole schedule is played up to kPipelineMaxPlayed microbatches, and above
/// it std::invalid_argument says so.
PipelineTiming time_pipeline(int pp, int vpp, int64_t microbatches, const PassDurations& durations,
                             const PipelineTimingOptions& options = {});

/// time_pipeline playing every pass whatever the count (time and memory O(microbatches x PP x VPP)): the reference
/// the steady-state form is checked against (tests/test_pipeline_timing.cpp).
PipelineTiming play_pipeline(int pp, int vpp, int64_t microbatches, const PassDurations& durations,
                             const PipelineTimingOptions& options = {});

/// The most microbatches time_pipeline plays pass by pass before it uses the steady state: 4 x PP x VPP + 64 plus
/// two periods (PP microbatches each).
int64_t pipeline_played_microbatches(int pp, int vpp);

/// The most microbatches time_pipeline plays in full when the steady state is not shown (2^16: ~0.1 s, ~15 MB).
constexpr int64_t kPipelineMaxPlayed = int64_t{1} << 16;

}  // namespace recipebench
