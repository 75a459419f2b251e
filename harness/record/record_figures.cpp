// A run record's figures re-derived from its steps and inputs, and compared with the ones it stores.
#include <cmath>

#include "catalog/hardware.h"
#include "catalog/models.h"
#include "metrics/derive.h"
#include "metrics/metrics.h"
#include "record/run_record_check.h"
#include "util/format.h"

namespace recipebench {

namespace {

/// The figures docs/metrics.md defines, derived from a record's steps and inputs. The one place the report
/// re-derives figures, through the shared derive_figures (metrics/derive.h).
struct RecordFigures {
  WindowMetrics window;
  std::optional<double> mfu, usd_per_million_tokens;
  double gpu_hours = 0;
};

RecordFigures derive_record_figures(const RunRecord& r) {
  std::vector<double> seconds;
  std::vector<int64_t> tokens;
  for (const StepSample& s : r.steps) {
    seconds.push_back(s.seconds);
    tokens.push_back(s.tokens);
  }
  RecordFigures f;
  f.window = window_metrics(seconds, tokens, r.options.settings.window, r.device_count());
  const RunMetrics& m = *r.metrics;
  FigureInputs in;
  in.gpus = r.device_count();
  in.wall_seconds = r.wall_seconds;
  if (m.active_params > 0 && m.peak_flops > 0) {
    in.active_params = m.active_params;
    in.peak_flops = m.peak_flops;
  }
  if (m.usd_per_gpu_hour && *m.usd_per_gpu_hour > 0) in.usd_per_gpu_hour = *m.usd_per_gpu_hour;
  const DerivedFigures d =
      derive_figures(Throughput::measured(static_cast<double>(f.window.tokens), f.window.seconds), in);
  f.mfu = d.mfu;
  f.usd_per_million_tokens = d.usd_per_million_tokens;
  f.gpu_hours = d.gpu_hours.value_or(0);
  return f;
}

bool nearly_equal(double a, double b) { return std::fabs(a - b) <= 1e-6 * std::max(std::fabs(a), std::fabs(b)) + 1e-12; }

std::string shown(const std::optional<double>& v) { return v ? fixed(*v, 6) : "null"; }

}  // namespace

Diagnostics record_figures_problems(const RunRecord& r, const std::string& file) {
  Diagnostics out;
  auto add = [&](const std::string& field, std::string found, std::string expected) {
    out.push_back(Diagnostic{file, 0, 0, "metrics." + field, std::move(found), std::move(expected)});
  };
  RecordFigures f;
  try {
    f = derive_record_figures(r);
  } catch (const std::invalid_argument& e) {  // e.g. a window whose steps sum to 0 s
    add("window_seconds", fixed(r.metrics->window.seconds, 6),
        std::string("figures derivable from the steps: ") + e.what());
    return out;
  }
  const RunMetrics& m = *r.metrics;
  const std::string from_steps = " (derived from steps " + std::to_string(r.options.settings.window.first) + ".." +
                                 std::to_string(r.options.settings.window.last) + ")";
  if (m.window.tokens != f.window.tokens)
    add("window_tokens", std::to_string(m.window.tokens), std::to_string(f.window.tokens) + from_steps);
  const std::pair<const char*, std::pair<double, double>> measured[] = {
      {"window_seconds", {m.window.seconds, f.window.seconds}},
      {"mean_step_seconds", {m.window.mean_step_seconds, f.window.mean_step_seconds}},
      {"tokens_per_s_per_gpu", {m.window.tokens_per_s_per_gpu, f.window.tokens_per_s_per_gpu}},
      {"step_time_cv_percent", {m.window.step_time_cv_percent, f.window.step_time_cv_percent}},
      {"gpu_hours", {m.gpu_hours, f.gpu_hours}}};
  for (const auto& [field, v] : measured)
    if (!nearly_equal(v.first, v.second)) add(field, fixed(v.first, 6), fixed(v.second, 6) + from_steps);
  if (m.mfu.has_value() != f.mfu.has_value() || (m.mfu && !nearly_equal(*m.mfu, *f.mfu)))
    add("mfu", shown(m.mfu), shown(f.mfu) + " (6 x mfu_inputs.active_params x tokens/s/GPU / mfu_inputs.peak_flops)");
  if (m.usd_per_million_tokens.has_value() != f.usd_per_million_tokens.has_value() ||
      (m.usd_per_million_tokens && !nearly_equal(*m.usd_per_million_tokens, *f.usd_per_million_tokens)))
    add("usd_per_million_tokens", shown(m.usd_per_million_tokens),
        shown(f.usd_per_million_tokens) + " (price.usd_per_gpu_hour / (tokens/s/GPU x 3600) x 1e6)");
  // The MFU inputs themselves: N of the registry model at the layers that ran, the catalog's peak for the GPU.
  const ModelConfig* reg = r.model_config.is_null() ? find_model(r.model_name) : nullptr;
  if (reg && m.active_params > 0) {
    const int64_t n = count_params(reg->with_layers(r.model_layers)).active;
    if (n != m.active_params)
      add("mfu_inputs.active_params", std::to_string(m.active_params),
          std::to_string(n) + " (" + r.model_name + " at " + std::to_string(r.model_layers) + " layers)");
  }
  const Json& g = r.recipe.contains("gpu") && r.recipe["gpu"].is_object() ? r.recipe["gpu"] : Json();
  const bool typed = g.is_object() && g.contains("type") && g["type"].is_string();
  const double memory_gb =
      typed && g.contains("memory_gb") && g["memory_gb"].is_number() ? g["memory_gb"].get<double>() : 0;
  const GpuSpec* gpu = typed ? resolve_gpu(g["type"].get<std::string>(), memory_gb) : nullptr;
  if (gpu && m.peak_flops > 0 && !nearly_equal(m.peak_flops, gpu->peak_bf16_flops))
    add("mfu_inputs.peak_flops", fixed(m.peak_flops, 0),
        fixed(gpu->peak_bf16_flops, 0) + " (the catalog's " + gpu->name + ")");
  return out;
}

}  // namespace recipebench
