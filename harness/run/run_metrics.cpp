#include "run/run_metrics.h"

#include <algorithm>
#include <vector>

#include "catalog/hardware.h"
#include "recipe/result_check.h"

namespace recipebench {

RunMetrics compute_metrics(const RunRecord& rec, const Recipe& recipe, const ModelConfig& model, int devices) {
  std::vector<double> seconds;
  std::vector<int64_t> tokens;
  RunMetrics m;
  for (const auto& s : rec.steps) {
    seconds.push_back(s.seconds);
    tokens.push_back(s.tokens);
    m.peak_memory_bytes = std::max(m.peak_memory_bytes, s.peak_memory_bytes);
  }
  m.window = window_metrics(seconds, tokens, rec.options.window, devices);
  m.active_params = count_params(model).active;
  if (const GpuSpec* gpu = rec.options.device == "cuda" ? find_gpu(recipe.gpu.type) : nullptr) {
    m.peak_flops = gpu->peak_bf16_flops;
    m.mfu = mfu_6n(static_cast<double>(m.active_params), m.window.tokens_per_s_per_gpu, m.peak_flops);
    if (auto price = recipe_price(recipe)) {
      m.usd_per_gpu_hour = price->usd_per_gpu_hour;
      m.price_source = price->source;
      m.usd_per_million_tokens = usd_per_million_tokens(price->usd_per_gpu_hour, m.window.tokens_per_s_per_gpu);
    }
  }
  m.gpu_hours = gpu_hours(devices, rec.wall_seconds);
  // Harness overhead: loop time outside the steps and their data preparation, per step of the window, as a
  // fraction of the window's step time (the tail of step i is recorded with step i + 1).
  double overhead = 0;
  for (int i = rec.options.window.first + 1; i <= rec.options.window.last; ++i) overhead += rec.steps[i].overhead_seconds;
  const int tails = rec.options.window.last - rec.options.window.first;
  m.harness_overhead_fraction = tails > 0 ? overhead / tails / m.window.mean_step_seconds : 0.0;
  return m;
}

}  // namespace recipebench
