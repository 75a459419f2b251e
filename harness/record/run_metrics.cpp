#include "record/run_metrics.h"

#include <algorithm>
#include <vector>

#include "catalog/hardware.h"
#include "metrics/derive.h"
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
  m.window = window_metrics(seconds, tokens, rec.options.settings.window, devices);
  m.active_params = count_params(model).active;  // N of the model that ran (its layers and widths)
  FigureInputs in;
  in.gpus = devices;
  in.active_params = m.active_params;
  in.wall_seconds = rec.wall_seconds;
  if (const GpuSpec* gpu = rec.options.settings.device == Device::kCuda ? find_gpu(recipe.gpu.type) : nullptr) {
    m.peak_flops = gpu->peak_bf16_flops;
    in.peak_flops = m.peak_flops;
    if (auto price = recipe_price(recipe)) {
      m.usd_per_gpu_hour = price->usd_per_gpu_hour;
      m.price_source = price->source;
      in.usd_per_gpu_hour = price->usd_per_gpu_hour;
    }
  }
  const DerivedFigures f =
      derive_figures(Throughput::measured(static_cast<double>(m.window.tokens), m.window.seconds), in);
  m.mfu = f.mfu;
  m.usd_per_million_tokens = f.usd_per_million_tokens;
  m.gpu_hours = *f.gpu_hours;
  // Harness overhead: loop time outside the steps and their data preparation, per step of the window, as a
  // fraction of the window's step time (the tail of step i is recorded with step i + 1).
  double overhead = 0;
  for (int i = rec.options.settings.window.first + 1; i <= rec.options.settings.window.last; ++i)
    overhead += rec.steps[i].overhead_seconds;
  const int tails = rec.options.settings.window.last - rec.options.settings.window.first;
  m.harness_overhead_fraction = tails > 0 ? overhead / tails / m.window.mean_step_seconds : 0.0;
  return m;
}

}  // namespace recipebench
