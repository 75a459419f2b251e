#include "metrics/metrics.h"

#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

namespace recipebench {

std::string window_problem(const StepWindow& w, int total_steps) {
  const std::string range = std::to_string(w.first) + ".." + std::to_string(w.last);
  if (!w.inside(total_steps))
    return "window " + range + " with " + std::to_string(total_steps) + (total_steps == 1 ? " step" : " steps") +
           ", expected 0 <= first <= last <= " + std::to_string(total_steps - 1) + " (steps numbered from 0)";
  if (w.steps() < kMinWindowSteps)
    return "window " + range + " holds " + std::to_string(w.steps()) + " step, expected at least " +
           std::to_string(kMinWindowSteps) + " (the step-time CV is a sample standard deviation: n - 1 >= 1)";
  return "";
}

int64_t window_tokens(const StepWindow& w, int64_t global_batch, int64_t row_tokens) {
  return static_cast<int64_t>(w.steps()) * global_batch * row_tokens;
}

double tokens_per_s_per_gpu(double window_tokens, double window_seconds, int gpus) {
  if (window_seconds <= 0) throw std::invalid_argument("tokens/s/GPU: window time must be > 0 s");
  if (gpus <= 0) throw std::invalid_argument("tokens/s/GPU: GPUs must be > 0");
  return window_tokens / window_seconds / gpus;
}

double mean(const std::vector<double>& x) {
  if (x.empty()) throw std::invalid_argument("mean of no samples");
  return std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size());
}

double step_time_cv_percent(const std::vector<double>& t) {
  if (t.size() < 2) throw std::invalid_argument("step-time CV needs at least 2 steps, got " + std::to_string(t.size()));
  const double m = mean(t);
  if (m <= 0) throw std::invalid_argument("step-time CV: mean step time must be > 0");
  double ss = 0;
  for (double v : t) ss += (v - m) * (v - m);
  return 100.0 * std::sqrt(ss / static_cast<double>(t.size() - 1)) / m;
}

double mfu_6n(double active_params, double tps_per_gpu, double peak_flops) {
  if (peak_flops <= 0) throw std::invalid_argument("MFU: peak FLOP/s must be > 0");
  return 6.0 * active_params * tps_per_gpu / peak_flops;
}

double attention_flops_per_token(double attention_layers, double heads, double qk_head_dim, double v_head_dim,
                                 double row_tokens) {
  return 6.0 * attention_layers * heads * row_tokens * (qk_head_dim + v_head_dim);
}

double mfu_with_extra(double active_params, double extra_flops_per_token, double tps_per_gpu, double peak_flops) {
  if (peak_flops <= 0) throw std::invalid_argument("MFU: peak FLOP/s must be > 0");
  return (6.0 * active_params + extra_flops_per_token) * tps_per_gpu / peak_flops;
}

double usd_per_million_tokens(double usd_per_gpu_hour, double tps_per_gpu) {
  if (tps_per_gpu <= 0) throw std::invalid_argument("$/1M tokens: tokens/s/GPU must be > 0");
  return usd_per_gpu_hour / (tps_per_gpu * 3600.0) * 1e6;
}

double gpu_hours(int gpus, double wall_seconds) { return gpus * wall_seconds / 3600.0; }

WindowMetrics window_metrics(const std::vector<double>& step_seconds, const std::vector<int64_t>& step_tokens,
                             const StepWindow& window, int gpus) {
  if (step_seconds.size() != step_tokens.size())
    throw std::invalid_argument("window metrics: " + std::to_string(step_seconds.size()) + " step times but " +
                                std::to_string(step_tokens.size()) + " token counts");
  if (!window.inside(static_cast<int>(step_seconds.size())))
    throw std::invalid_argument("window " + std::to_string(window.first) + ".." + std::to_string(window.last) +
                                " is not inside steps 0.." + std::to_string(static_cast<int>(step_seconds.size()) - 1));
  if (window.steps() < kMinWindowSteps)
    throw std::invalid_argument(window_problem(window, static_cast<int>(step_seconds.size())));
  WindowMetrics m;
  m.window = window;
  std::vector<double> t(step_seconds.begin() + window.first, step_seconds.begin() + window.last + 1);
  for (int i = window.first; i <= window.last; ++i) m.tokens += step_tokens[i];
  m.seconds = std::accumulate(t.begin(), t.end(), 0.0);
  m.mean_step_seconds = mean(t);
  m.tokens_per_s_per_gpu = tokens_per_s_per_gpu(static_cast<double>(m.tokens), m.seconds, gpus);
  m.step_time_cv_percent = step_time_cv_percent(t);
  return m;
}

}  // namespace recipebench
