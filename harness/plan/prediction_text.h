// The step-time model's prediction (plan/step_time.h) as text for the console and as JSON
// (`recipebench predict --format json`, docs/step-time.md "Output").
#pragma once

#include <string>

#include "plan/step_time.h"
#include "util/json.h"

namespace recipebench {

/// The JSON form: {"step_seconds", "tokens_per_s_per_gpu", "mfu", "usd_per_million_tokens", "gpu_hours",
/// "steps_for_gpu_hours", "critical_pp_rank", "breakdown": the critical rank's parts (seconds per step: compute by
/// component, recompute, tp, ep, pipeline_idle, p2p_wait, dp, optimizer), "ranks": [the same per pipeline rank, with
/// its mean forward / backward pass], "assumptions": [...]}. Figures in seconds, $ and fractions (mfu).
Json prediction_to_json(const StepPrediction& p);

/// The console's text: the figures, the critical rank's breakdown (ms per step), one line per pipeline rank and the
/// assumptions, each line indented by two spaces.
std::string prediction_text(const StepPrediction& p);

/// The profile's achieved FLOP/s of each matrix component ({component: {"forward": FLOP/s, "backward": FLOP/s}}),
/// on the profile's own GPU (achieved_flops).
Json achieved_flops_json(const UnitCosts& costs);
/// The same as one line: "profile's achieved TFLOP/s on H200 (forward / backward): gdn 210 / 180, ..." ("the
/// analytical mode's implied TFLOP/s ..." when no profile was read: `costs.sources` empty).
std::string achieved_flops_text(const UnitCosts& costs);

/// One line of the breakdown of `r` ("compute 6.12 s (gdn 1.2, experts 2.0, ...), TP 0.31, EP 0.52, ...").
std::string breakdown_line(const RankStepTime& r);

}  // namespace recipebench
