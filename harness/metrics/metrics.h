// Throughput, variability, utilisation and cost metrics, defined once (docs/metrics.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace recipebench {

/// The timed window of a run: steps w0..w1, both included, steps numbered from 0 (default 5..19).
struct StepWindow {
  int first = 5;
  int last = 19;
  int steps() const { return last - first + 1; }
  /// True when 0 <= first <= last < total_steps.
  bool inside(int total_steps) const { return first >= 0 && first <= last && last < total_steps; }
};

/// Fewest steps a timed window holds: the step-time CV is a sample standard deviation (n - 1 >= 1).
constexpr int kMinWindowSteps = 2;

/// The one rule for a timed window, used by `run` (--window, bench.window) and `validate` (result.window):
/// 0 <= first <= last < total_steps and at least kMinWindowSteps steps. Returns "" when the window keeps it,
/// else what is wrong, e.g. "window 19..19 holds 1 step, expected at least 2 (the step-time CV is a sample
/// standard deviation: n - 1 >= 1)".
std::string window_problem(const StepWindow& w, int total_steps);

/// Tokens of the window: window steps x global batch rows x row tokens (padding excluded).
int64_t window_tokens(const StepWindow& w, int64_t global_batch, int64_t row_tokens);

/// tokens/s/GPU = sum(tokens over window) / sum(step seconds over window) / GPUs.
/// Throws std::invalid_argument when seconds <= 0 or gpus <= 0.
double tokens_per_s_per_gpu(double window_tokens, double window_seconds, int gpus);

/// Sample mean of step times (seconds). Throws std::invalid_argument on an empty list.
double mean(const std::vector<double>& x);

/// Step-time CV in percent: 100 x sample standard deviation (n - 1) / mean.
/// Throws std::invalid_argument with fewer than 2 samples or a non-positive mean.
double step_time_cv_percent(const std::vector<double>& step_seconds);

/// MFU (fraction) = 6 x N_active x tokens/s/GPU / peak dense BF16 FLOP/s of the GPU.
/// The 6N rule: forward 2N + backward 4N FLOP per token of the weight matrices (Kaplan et al. 2020, arXiv
/// 2001.08361); PaLM's appendix B (arXiv 2204.02311) adds attention to it (attention_flops_per_token). Throws
/// std::invalid_argument when peak_flops <= 0.
double mfu_6n(double active_params, double tokens_per_s_per_gpu, double peak_flops);

/// The attention FLOPs per token that MFU conventions other than 6N add (docs/metrics.md, "MFU conventions"): the
/// score product (Q·K^T) and the value product (softmax·V) of `attention_layers` layers of `heads` heads over a
/// `row_tokens`-token row, forward and backward (x 3): 6 x L x H x T x (d_qk + d_v). With d_qk = d_v = Q it is PaLM's
/// 12·L·H·Q·T (arXiv 2204.02311, appendix B), TorchTitan's `12 * l * h * q * t` and the s/(6h) term of Megatron-LM's
/// formula (Narayanan et al. 2021, arXiv 2104.04473, section 5.1: 72·B·s·l·h²·(s/(6h)) = 12·B·s²·l·h). Not halved
/// for causal masking, as those count it.
double attention_flops_per_token(double attention_layers, double heads, double qk_head_dim, double v_head_dim,
                                 double row_tokens);

/// MFU (fraction) by a convention that adds `extra_flops_per_token` to 6N: (6 x N_active + extra) x tokens/s/GPU /
/// peak. Throws std::invalid_argument when peak_flops <= 0.
double mfu_with_extra(double active_params, double extra_flops_per_token, double tokens_per_s_per_gpu,
                      double peak_flops);

/// $ per 1M tokens = price per GPU-hour / (tokens/s/GPU x 3600) x 1e6.
/// Throws std::invalid_argument when tokens_per_s_per_gpu <= 0.
double usd_per_million_tokens(double usd_per_gpu_hour, double tokens_per_s_per_gpu);

/// GPU-hours = GPUs x wall seconds (process launch to finish, startup included) / 3600.
double gpu_hours(int gpus, double wall_seconds);

/// The window statistics of a run, from per-step samples (index = step number).
struct WindowMetrics {
  StepWindow window;
  int64_t tokens = 0;            ///< sum of tokens over the window
  double seconds = 0;            ///< sum of step times over the window, s
  double mean_step_seconds = 0;  ///< mean step time over the window, s
  double tokens_per_s_per_gpu = 0;
  double step_time_cv_percent = 0;
};

/// Computes WindowMetrics from every step's time (s) and tokens. Throws std::invalid_argument when the
/// window is not inside the steps, the vectors differ in length, or the window has fewer than 2 steps.
WindowMetrics window_metrics(const std::vector<double>& step_seconds, const std::vector<int64_t>& step_tokens,
                             const StepWindow& window, int gpus);

}  // namespace recipebench
