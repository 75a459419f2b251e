#include "recipe/result_check.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "metrics/derive.h"
#include "metrics/metrics.h"
#include "util/format.h"

namespace recipebench {

std::optional<Price> recipe_price(const Recipe& r) {
  if (r.gpu.usd_per_gpu_hour) return Price{*r.gpu.usd_per_gpu_hour, "recipe (gpu.usd_per_gpu_hour)"};
  const InstanceSpec* inst = r.gpu.instance.empty() ? nullptr : find_instance(r.gpu.instance);
  const GpuSpec* gpu = find_gpu(r.gpu.type);
  if (inst && gpu && inst->gpu != gpu->name) inst = nullptr;  // reported by check_result; price by GPU type
  if (!inst) inst = default_instance_for_gpu(r.gpu.type);
  if (!inst) return std::nullopt;
  return Price{inst->usd_per_gpu_hour(), "catalog: " + inst->label() + " on-demand $" + shortest(inst->usd_per_hour) +
                                             "/h / " + std::to_string(inst->gpus) + " GPUs"};
}

std::optional<ModelConfig> run_model(const Recipe& r) {
  const ModelConfig* m = find_model(r.model);
  if (!m) return std::nullopt;
  const Json& bench = r.doc.contains("bench") ? r.doc["bench"] : Json();
  if (bench.is_object() && bench.contains("layers") && bench["layers"].is_number_integer())
    return m->with_layers(bench["layers"].get<int64_t>());
  return *m;
}

namespace {

/// True when `given` (written with `text`) equals `computed` rounded to the printed precision of `text`.
bool agrees_to_printed_precision(double given, const std::string& text, double computed, int* decimals) {
  *decimals = printed_decimals(text);
  const double half_ulp = 0.5 * std::pow(10.0, -*decimals);
  return std::fabs(computed - given) <= half_ulp * (1 + 1e-9) + 1e-15;
}

std::string text_of(const SourceDoc& src, const std::string& pointer, double fallback) {
  const SourceNode* n = src.node(pointer);
  return n && !n->text.empty() ? n->text : shortest(fallback);
}

}  // namespace

Diagnostics check_result(const Recipe& r, const ModelConfig* model, const SourceDoc& src) {
  Diagnostics out;
  if (!model) {
    std::string names;
    for (const auto& m : model_registry()) names += (names.empty() ? "" : ", ") + m.name;
    out.push_back(src.at("/model", "unknown model '" + r.model + "'", "one of the registry's models: " + names));
  }
  const GpuSpec* gpu = find_gpu(r.gpu.type);
  if (!r.gpu.instance.empty()) {
    const InstanceSpec* inst = find_instance(r.gpu.instance);
    if (!inst && !r.gpu.usd_per_gpu_hour) {
      std::string names;
      for (const auto& i : instance_catalog()) names += (names.empty() ? "" : ", ") + i.label();
      out.push_back(src.at("/gpu/instance", "unknown instance '" + r.gpu.instance + "'",
                           "a catalog instance (" + names + ") or a price in gpu.usd_per_gpu_hour"));
    } else if (inst && gpu && inst->gpu != gpu->name) {
      out.push_back(src.at("/gpu/instance", "'" + r.gpu.instance + "' (" + inst->gpu + " GPUs)",
                           "an instance with " + gpu->name + " GPUs (gpu.type)"));
    }
  }
  if (!r.result) return out;
  const RecipeResult& res = *r.result;

  if (!res.window.inside(res.steps_per_run)) {
    const bool first_bad = res.window.first < 0 || res.window.first > res.window.last;
    out.push_back(
        src.at(first_bad ? "/result/window/0" : "/result/window/1",
               "window " + std::to_string(res.window.first) + ".." + std::to_string(res.window.last) + " with " +
                   std::to_string(res.steps_per_run) + " steps per run",
               "0 <= first <= last <= " + std::to_string(res.steps_per_run - 1) + " (steps numbered from 0)"));
  } else if (res.window.steps() < kMinWindowSteps) {
    // The rule `run` applies to --window (metrics.h window_problem): a one-step window has no sample CV.
    const std::string problem = window_problem(res.window, res.steps_per_run);
    const size_t comma = problem.find(", expected ");
    out.push_back(src.at_key("/result/window", problem.substr(0, comma), problem.substr(comma + 11)));
  } else {
    // In 128 bits: the schema bounds each factor by 2^31, so the product cannot overflow here.
    const __int128 wide = static_cast<__int128>(res.window.steps()) * r.workload.global_batch * r.workload.row_tokens;
    const int64_t expected = wide > INT64_MAX ? INT64_MAX : static_cast<int64_t>(wide);
    if (wide != res.window_tokens) {
      out.push_back(src.at("/result/window_tokens", with_commas(res.window_tokens),
                           with_commas(expected) + " = " + std::to_string(res.window.steps()) + " steps x " +
                               std::to_string(r.workload.global_batch) + " rows x " +
                               std::to_string(r.workload.row_tokens) + " tokens"));
    }
  }

  const double tps = res.tokens_per_s_per_gpu;
  const std::string tps_text = text_of(src, "/result/tokens_per_s_per_gpu", tps);
  const std::optional<Price> price = res.usd_per_million_tokens ? recipe_price(r) : std::nullopt;
  const int64_t n_active = model ? count_params(*model).active : 0;
  FigureInputs in;
  in.gpus = std::max(1, r.gpu.count);
  if (price) in.usd_per_gpu_hour = price->usd_per_gpu_hour;
  if (model && gpu) {
    in.active_params = n_active;
    in.peak_flops = gpu->peak_bf16_flops;
  }
  DerivedFigures f;
  try {
    f = derive_figures(Throughput::reported(tps), in);
  } catch (const std::invalid_argument& e) {
    out.push_back(src.at("/result/tokens_per_s_per_gpu", tps_text, e.what()));
    return out;
  }
  if (res.usd_per_million_tokens && f.usd_per_million_tokens) {
    const double usd = *f.usd_per_million_tokens;
    const std::string text = text_of(src, "/result/usd_per_million_tokens", *res.usd_per_million_tokens);
    int decimals = 0;
    if (!agrees_to_printed_precision(*res.usd_per_million_tokens, text, usd, &decimals)) {
      out.push_back(src.at("/result/usd_per_million_tokens", "$" + text,
                           "$" + fixed(usd, std::max(decimals, 2), false) + " = $" + shortest(price->usd_per_gpu_hour) +
                               "/GPU-hour (" + price->source + ") / (" + tps_text +
                               " tokens/s/GPU x 3600) x 1e6, to the printed precision"));
    }
  }
  if (!model) return out;
  const std::string which = std::to_string(model->num_layers) + "-layer " + model->name;
  if (res.active_params && *res.active_params != n_active) {
    out.push_back(src.at("/result/active_params/count", with_commas(*res.active_params),
                         with_commas(n_active) + " active parameters of the " + which +
                             " that ran (docs/metrics.md: N_active of the layers and widths that ran)"));
  }
  if (res.mfu && f.mfu) {
    const std::string text = text_of(src, "/result/mfu", *res.mfu);
    int decimals = 0;
    if (!agrees_to_printed_precision(*res.mfu, text, *f.mfu, &decimals)) {
      out.push_back(src.at("/result/mfu", text,
                           fixed(*f.mfu, std::max(decimals, 4), false) + " = 6 x " + with_commas(n_active) + " (" +
                               which + ") x " + tps_text + " / " + shortest(gpu->peak_bf16_flops) + " (" + gpu->name +
                               " dense BF16 FLOP/s), to the printed precision"));
    }
  }
  return out;
}

}  // namespace recipebench
