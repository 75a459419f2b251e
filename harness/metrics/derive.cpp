#include "metrics/derive.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "metrics/metrics.h"

namespace recipebench {

namespace {

void require_positive(const std::optional<double>& v, const char* what) {
  if (v && !(std::isfinite(*v) && *v > 0))
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(*v) + ", expected a finite number > 0");
}

}  // namespace

DerivedFigures derive_figures(const Throughput& t, const FigureInputs& in) {
  if (in.gpus <= 0) throw std::invalid_argument("GPUs: " + std::to_string(in.gpus) + ", expected > 0");
  require_positive(in.peak_flops, "peak FLOP/s");
  require_positive(in.usd_per_gpu_hour, "price ($/GPU-hour)");
  if (in.active_params && *in.active_params <= 0)
    throw std::invalid_argument("active parameters: " + std::to_string(*in.active_params) + ", expected > 0");
  if (in.wall_seconds && !(std::isfinite(*in.wall_seconds) && *in.wall_seconds >= 0))
    throw std::invalid_argument("wall time: " + std::to_string(*in.wall_seconds) + " s, expected a finite time >= 0");

  DerivedFigures f;
  if (t.window_tokens && t.window_seconds)
    f.tokens_per_s_per_gpu = tokens_per_s_per_gpu(*t.window_tokens, *t.window_seconds, in.gpus);
  else if (t.tokens_per_s_per_gpu)
    f.tokens_per_s_per_gpu = *t.tokens_per_s_per_gpu;
  else
    throw std::invalid_argument("derive_figures: neither a window nor a tokens/s/GPU figure");
  if (!(std::isfinite(f.tokens_per_s_per_gpu) && f.tokens_per_s_per_gpu > 0))
    throw std::invalid_argument("tokens/s/GPU: " + std::to_string(f.tokens_per_s_per_gpu) +
                                ", expected a finite number > 0");

  if (in.active_params && in.peak_flops)
    f.mfu = mfu_6n(static_cast<double>(*in.active_params), f.tokens_per_s_per_gpu, *in.peak_flops);
  if (in.usd_per_gpu_hour)
    f.usd_per_million_tokens = usd_per_million_tokens(*in.usd_per_gpu_hour, f.tokens_per_s_per_gpu);
  if (in.wall_seconds) f.gpu_hours = gpu_hours(in.gpus, *in.wall_seconds);
  return f;
}

}  // namespace recipebench
