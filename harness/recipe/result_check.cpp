#include "recipe/result_check.h"

#include <algorithm>
#include <cctype>
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
  if (!inst || !inst->priced()) return std::nullopt;  // a catalog instance without a published price
  return Price{inst->usd_per_gpu_hour(), "catalog: " + inst->label() + " on-demand $" + shortest(inst->usd_per_hour) +
                                             "/h / " + std::to_string(inst->gpus) + " GPUs"};
}

std::optional<Diagnostic> gpu_type_problem(const std::string& type, double memory_gb, const SourceDoc& src) {
  if (type == "CPU" || resolve_gpu(type, memory_gb)) return std::nullopt;
  const auto family = gpus_of_family(type, 0);
  if (!family.empty()) {  // a family the memory does not single out: name its members
    std::string names;
    for (const GpuSpec* g : family) names += (names.empty() ? "" : ", ") + g->name;
    return src.at("/gpu/type",
                  "'" + type + "' with memory_gb " + shortest(memory_gb) + ", which is not one of " + names,
                  "one of " + names + " (gpu.type names the GPU, or its family with the memory_gb of one of them)");
  }
  return src.at("/gpu/type", "unknown GPU '" + type + "'",
                "a GPU of the hardware catalog (" + hardware_catalog().gpu_names() +
                    ") or CPU; a GPU of your own is added with --catalog FILE (docs/catalog.md)");
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

/// The recipe's gpu.instance is known to the catalog and carries the recipe's GPU type (the model: check_model,
/// recipe/model_check.h).
void check_catalog_names(const Recipe& r, const GpuSpec* gpu, const SourceDoc& src, Diagnostics& out) {
  if (r.gpu.instance.empty()) return;
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

/// gpu.type is CPU or a GPU of the hardware catalog (docs/catalog.md), by name or alias, or a family its memory
/// singles out (gpu_type_problem).
void check_gpu_type(const Recipe& r, const GpuSpec* gpu, const SourceDoc& src, Diagnostics& out) {
  if (gpu) return;
  if (auto d = gpu_type_problem(r.gpu.type, r.gpu.memory_gb, src)) out.push_back(std::move(*d));
}

/// result.usd_per_million_tokens is only stated where a price is known to check it by.
void check_price_known(const Recipe& r, const RecipeResult& res, const SourceDoc& src, Diagnostics& out) {
  if (!res.usd_per_million_tokens || recipe_price(r)) return;
  const InstanceSpec* inst = r.gpu.instance.empty() ? nullptr : find_instance(r.gpu.instance);
  if (!inst) inst = default_instance_for_gpu(r.gpu.type);
  const std::string why = inst ? "the catalog has no on-demand price for " + inst->label() + " (" + inst->source + ")"
                               : "the catalog has no instance of " + r.gpu.type;
  out.push_back(src.at("/result/usd_per_million_tokens", "a $ figure with no price to check it by (" + why + ")",
                       "gpu.usd_per_gpu_hour, or a gpu.instance with a catalog price (docs/catalog.md)"));
}

/// result.window lies inside the run, is long enough for a CV, and result.window_tokens is its token count.
void check_window(const Recipe& r, const RecipeResult& res, const SourceDoc& src, Diagnostics& out) {
  if (!res.window.inside(res.steps_per_run)) {
    const bool first_bad = res.window.first < 0 || res.window.first > res.window.last;
    out.push_back(
        src.at(first_bad ? "/result/window/0" : "/result/window/1",
               "window " + std::to_string(res.window.first) + ".." + std::to_string(res.window.last) + " with " +
                   counted(res.steps_per_run, "step") + " per run",
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
    if (res.window_tokens_stated && wide != res.window_tokens) {  // derived when not stated (recipe.h)
      out.push_back(src.at("/result/window_tokens", with_commas(res.window_tokens),
                           with_commas(expected) + " = " + std::to_string(res.window.steps()) + " steps x " +
                               counted(r.workload.global_batch, "row") + " x " +
                               counted(r.workload.row_tokens, "token")));
    }
  }
}

/// True when `text` is a real calendar date YYYY-MM-DD (proleptic Gregorian: month 1..12, day within the month,
/// 29 February in leap years only).
bool calendar_date(const std::string& text) {
  if (text.size() != 10 || text[4] != '-' || text[7] != '-') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return false;
  const int year = std::stoi(text.substr(0, 4)), month = std::stoi(text.substr(5, 2)), day = std::stoi(text.substr(8));
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month < 1 || month > 12 || day < 1) return false;
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return day <= kDays[month - 1] + (month == 2 && leap ? 1 : 0);
}

/// The claims a result makes that its own figures bound (docs/layout-arithmetic.md, "Result fields that must agree"):
/// result.measured is a real date; result.gpu_hours is at least the timed window's GPU-hours, GPUs x window
/// seconds / 3600, where window seconds = window_tokens / (tokens/s/GPU x GPUs).
void check_claims(const Recipe& r, const RecipeResult& res, const SourceDoc& src, Diagnostics& out) {
  if (!calendar_date(res.measured))
    out.push_back(src.at("/result/measured", res.measured, "a real calendar date YYYY-MM-DD"));
  if (!res.gpu_hours || res.tokens_per_s_per_gpu <= 0 || res.window_tokens <= 0) return;
  const double gpus = static_cast<double>(r.gpu.count);
  const double window_seconds = static_cast<double>(res.window_tokens) / (res.tokens_per_s_per_gpu * gpus);
  const double window_gpu_hours = gpus * window_seconds / 3600;
  if (*res.gpu_hours * (1 + 1e-9) >= window_gpu_hours) return;
  const SourceNode* n = src.node("/result/gpu_hours");
  out.push_back(src.at("/result/gpu_hours", n && !n->text.empty() ? n->text : shortest(*res.gpu_hours),
                       ">= " + fixed(window_gpu_hours, 2, false) + " = " + std::to_string(r.gpu.count) + " GPUs x " +
                           fixed(window_seconds, 1, false) + " s of the timed window / 3600"));
}

/// The inputs check_result derives a result's figures from: the reported throughput as written, the price and
/// the active parameters of the model that ran.
struct ResultInputs {
  double tps = 0;        // tokens/s/GPU as reported
  std::string tps_text;  // as written in the file
  std::optional<Price> price;
  int64_t n_active = 0;
  int64_t row_tokens = 0;  // workload.row_tokens: T of the attention FLOPs
  FigureInputs figures;
};

ResultInputs result_inputs(const Recipe& r, const ModelConfig* model, const GpuSpec* gpu, const SourceDoc& src) {
  const RecipeResult& res = *r.result;
  ResultInputs ri;
  ri.tps = res.tokens_per_s_per_gpu;
  ri.tps_text = text_of(src, "/result/tokens_per_s_per_gpu", ri.tps);
  ri.price = res.usd_per_million_tokens ? recipe_price(r) : std::nullopt;
  ri.n_active = model ? count_params(*model).active : 0;
  ri.row_tokens = r.workload.row_tokens;
  ri.figures.gpus = std::max(1, r.gpu.count);
  if (ri.price) ri.figures.usd_per_gpu_hour = ri.price->usd_per_gpu_hour;
  if (model && gpu) {
    ri.figures.active_params = ri.n_active;
    ri.figures.peak_flops = gpu->peak_bf16_flops;
  }
  return ri;
}

/// result.usd_per_million_tokens equals the derived $/1M tokens to its printed precision.
void check_price(const RecipeResult& res, const ResultInputs& ri, const DerivedFigures& f, const SourceDoc& src,
                 Diagnostics& out) {
  if (!res.usd_per_million_tokens || !f.usd_per_million_tokens) return;
  const double usd = *f.usd_per_million_tokens;
  const std::string text = text_of(src, "/result/usd_per_million_tokens", *res.usd_per_million_tokens);
  int decimals = 0;
  if (agrees_to_printed_precision(*res.usd_per_million_tokens, text, usd, &decimals)) return;
  out.push_back(src.at("/result/usd_per_million_tokens", "$" + text,
                       "$" + fixed(usd, std::max(decimals, 2), false) + " = $" + shortest(ri.price->usd_per_gpu_hour) +
                           "/GPU-hour (" + ri.price->source + ") / (" + ri.tps_text +
                           " tokens/s/GPU x 3600) x 1e6, to the printed precision"));
}

/// result.mfu by the 6N+attention convention (result.mfu_convention; docs/metrics.md, "MFU conventions"): (6 x N +
/// attention FLOPs per token on the recipe's rows) x tokens/s/GPU / peak, to its printed precision. A model of stated
/// counts has no known layers or heads: the convention is refused there.
void check_mfu_with_attention(const RecipeResult& res, const ModelConfig& model, const GpuSpec* gpu,
                              const ResultInputs& ri, const std::string& which, const SourceDoc& src,
                              Diagnostics& out) {
  if (!model.architecture_known()) {
    out.push_back(src.at("/result/mfu_convention", "6N+attention for " + which,
                         "6N (the attention FLOPs need the model's layers and heads: give model_params.config)"));
    return;
  }
  const double attention = attention_flops_per_token(model, ri.row_tokens);
  const double mfu = mfu_with_extra(static_cast<double>(ri.n_active), attention, ri.tps, gpu->peak_bf16_flops);
  const std::string text = text_of(src, "/result/mfu", *res.mfu);
  int decimals = 0;
  if (agrees_to_printed_precision(*res.mfu, text, mfu, &decimals)) return;
  out.push_back(src.at("/result/mfu", text + " (6N+attention)",
                       fixed(mfu, std::max(decimals, 4), false) + " = (6 x " + with_commas(ri.n_active) + " + " +
                           with_commas(static_cast<int64_t>(attention)) + " attention FLOPs per token of " +
                           std::to_string(ri.row_tokens) + "-token rows) (" + which + ") x " + ri.tps_text + " / " +
                           shortest(gpu->peak_bf16_flops) + " (" + gpu->name +
                           " dense BF16 FLOP/s), to the printed precision"));
}

/// result.active_params is the count of the model that ran, and result.mfu the derived MFU to its printed precision.
void check_model_figures(const RecipeResult& res, const ModelConfig& model, const GpuSpec* gpu, const ResultInputs& ri,
                         const DerivedFigures& f, const SourceDoc& src, Diagnostics& out) {
  const std::string which = model.architecture_known() ? std::to_string(model.num_layers) + "-layer " + model.name
                                                       : model.name + " (stated counts)";
  if (res.active_params && *res.active_params != ri.n_active) {
    out.push_back(src.at("/result/active_params/count", with_commas(*res.active_params),
                         with_commas(ri.n_active) + " active parameters of the " + which +
                             " that ran (docs/metrics.md: N_active of the layers and widths that ran)"));
  }
  if (!res.mfu || !f.mfu) return;
  if (res.mfu_convention == MfuConvention::k6NAttention) {
    check_mfu_with_attention(res, model, gpu, ri, which, src, out);
    return;
  }
  const std::string text = text_of(src, "/result/mfu", *res.mfu);
  int decimals = 0;
  if (agrees_to_printed_precision(*res.mfu, text, *f.mfu, &decimals)) return;
  out.push_back(src.at("/result/mfu", text,
                       fixed(*f.mfu, std::max(decimals, 4), false) + " = 6 x " + with_commas(ri.n_active) + " (" +
                           which + ") x " + ri.tps_text + " / " + shortest(gpu->peak_bf16_flops) + " (" + gpu->name +
                           " dense BF16 FLOP/s), to the printed precision"));
}

}  // namespace

Diagnostics check_result(const Recipe& r, const ModelConfig* model, const SourceDoc& src) {
  Diagnostics out;
  const GpuSpec* gpu = find_gpu(r.gpu.type);
  check_gpu_type(r, gpu, src, out);
  check_catalog_names(r, gpu, src, out);
  if (!r.result) return out;
  const RecipeResult& res = *r.result;
  check_window(r, res, src, out);
  check_claims(r, res, src, out);
  check_price_known(r, res, src, out);

  const ResultInputs ri = result_inputs(r, model, gpu, src);
  DerivedFigures f;
  try {
    f = derive_figures(Throughput::reported(ri.tps), ri.figures);
  } catch (const std::invalid_argument& e) {
    out.push_back(src.at("/result/tokens_per_s_per_gpu", ri.tps_text, e.what()));
    return out;
  }
  check_price(res, ri, f, src, out);
  if (model) check_model_figures(res, *model, gpu, ri, f, src, out);
  return out;
}

}  // namespace recipebench
