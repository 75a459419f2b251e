#include "plan/prediction_basis.h"

#include <cmath>

#include <fmt/format.h>

#include "catalog/hardware.h"
#include "plan/error_bands.h"
#include "plan/memory_plan.h"
#include "plan/selective_recompute.h"
#include "recipe/enums.h"
#include "settings/switches.h"
#include "util/format.h"

namespace recipebench {

std::string to_string(PredictionMode mode) {
  switch (mode) {
    case PredictionMode::kProfiledSameGpu:
      return "profiled, same GPU";
    case PredictionMode::kProfiledOtherGpu:
      return "profiled on another GPU, scaled";
    case PredictionMode::kProfiledCpu:
      return "profiled on the CPU";
    case PredictionMode::kAnalytical:
      return "analytical, no profile";
  }
  return "?";
}

namespace {

PredictionMode mode_of(const UnitCosts& costs, const Recipe& recipe) {
  if (costs.sources.empty()) return PredictionMode::kAnalytical;
  if (costs.gpu == "CPU") return PredictionMode::kProfiledCpu;
  return costs.gpu == recipe.gpu.type ? PredictionMode::kProfiledSameGpu : PredictionMode::kProfiledOtherGpu;
}

/// "; with a stack factor fitted on a measured run (...) checked at X% mean ... over N row(s)" where the table holds
/// the mode's calibrated band of the pair (of the family where one is) and the prediction is not calibrated.
std::string calibrate_hint(const std::vector<ErrorBand>& bands, PredictionMode mode, bool calibrated,
                           const std::string& from, const std::string& to, const std::string& family) {
  if (calibrated) return "";
  const ErrorBand* c = find_error_band(bands, mode, true, from, to, family);
  return c == nullptr ? ""
                      : fmt::format(
                            "; with a stack factor fitted on a measured run (--calibrate on the target "
                            "GPU, or another GPU's factor by --stack-factor) checked at {:.1f}% mean "
                            "absolute error over {} row(s)",
                            100 * c->mean_abs_error, c->rows);
}

/// The error the mode showed where it was checked (the validation's table, plan/error_bands.h), in words: the band
/// of this pair (of model family `family` where one is), else that it was never checked there and the bands of the
/// mode that were; and where the mode was never checked on rows of `family` (not "": a model of stated counts), so.
std::string error_band(PredictionMode mode, double stack_factor, const std::string& from, const std::string& to,
                       const std::string& family) {
  if (mode == PredictionMode::kProfiledCpu) return "not checked against measurements (CPU development runs)";
  const bool calibrated = stack_factor != 1;
  const std::vector<ErrorBand>& bands = error_bands();
  const std::string unchecked_family =  // the family clause: where the mode was never checked on the model's family
      family.empty() || checked_on_family(bands, mode, calibrated, family)
          ? ""
          : "; never checked on a " + family + " model";
  if (const ErrorBand* b = find_error_band(bands, mode, calibrated, from, to, family)) {
    const bool other_family = !family.empty() && !b->family.empty() && b->family != family;
    return (other_family ? "checked on " + to + " only on a " + b->family + " model: " : std::string("checked: ")) +
           error_band_text(*b) + calibrate_hint(bands, mode, calibrated, from, to, family) + unchecked_family;
  }
  std::string checked;
  for (const ErrorBand& b : bands)
    if (b.mode == mode && b.calibrated == calibrated)
      checked += fmt::format("{}{}{}: {:.1f}% mean absolute error over {} row(s) ({})", checked.empty() ? "" : "; ",
                             b.from.empty() ? "" : b.from + " -> ", b.to, 100 * b.mean_abs_error, b.rows, b.source);
  const std::string pair = mode == PredictionMode::kAnalytical ? to : from + " -> " + to;
  return "never checked on " + pair +
         (checked.empty() ? std::string(" (no check of this mode)") : "; checked only " + checked) + unchecked_family;
}

/// The switches the step-time model does not price that the run sets away from their defaults.
void unpriced_switches(const RunSettings& s, std::vector<std::string>& out) {
  static const RunSettings defaults;
  for (const RunSwitch& row : run_switches()) {
    if (row.pricing == SwitchPricing::kPriced || row.owner != SwitchOwner::kBackend) continue;
    const std::string value = switch_value_text(row, s);
    if (value == switch_value_text(row, defaults)) continue;
    out.push_back(
        fmt::format("bench.{}: {} (not priced: the profiles' runs timed their own setting)", row.field, value));
  }
}

/// Every field of the recipe the step-time model does not price, with what it does instead.
std::vector<std::string> not_modelled(const Recipe& recipe, const ModelConfig& model, const RunSettings& s) {
  const RecipeLayout& l = recipe.layout;
  std::vector<std::string> out;
  if (l.cp > 1)
    out.push_back(
        fmt::format("layout.cp: {} (ring attention's exchange of keys and values is priced, see the assumptions; "
                    "Gated DeltaNet's state passing between CP ranks is not, and the profiles' torch backend runs CP "
                    "1: each pass is timed as CP 1's work on the rank's tokens)",
                    l.cp));
  if (l.tp > 1 && !l.sequence_parallel)
    out.push_back(
        fmt::format("layout.sequence_parallel: false with TP {} (priced as sequence parallel: TP's all-gathers and "
                    "reduce-scatters, the MoE block and the norms on T / TP tokens; without it, all-reduces and T)",
                    l.tp));
  if (l.effective_etp() > 1)
    out.push_back(
        fmt::format("layout.etp: {} (the experts' split over ETP ranks and the dispatcher's collectives of it are "
                    "priced, see the assumptions; not priced: the routing probabilities gathered beside the rows, a "
                    "reduce-scatter in FP32 where Megatron-LM's moe_router_dtype is fp32, and the grouped GEMMs' "
                    "rate at 1 / ETP of the width: priced at the rows' rate)",
                    l.effective_etp()));
  if (l.dispatcher == Dispatcher::kFlex || l.dispatcher == Dispatcher::kDeepep)
    out.push_back("layout.dispatcher: " + to_string(l.dispatcher) +
                  " (DeepEP's dispatch and combine are priced, see the assumptions; not priced: the SMs its kernels "
                  "hold while compute runs, the host's wait for the receive counts, the routing indices and weights "
                  "sent with each row, and routing other than uniform: skewed, or group-limited to fewer nodes)");
  for (RecomputeModule r : l.recompute.modules)  // the others are priced (plan/selective_recompute.h)
    if (l.recompute.granularity == "selective" && !recompute_module_timed(model, r))
      out.push_back("layout.recompute.modules: " + to_string(r) +
                    " (the model has no multi-latent attention: nothing timed as run again)");
  if (!l.offload.empty() && l.offload != "none")
    out.push_back("layout.offload: " + l.offload + " (host offload traffic is not priced)");
  const std::string& precision = recipe.workload.precision;
  if (precision != "bf16" && precision != "fp32" && precision != "fp64")
    out.push_back("workload.precision: " + precision + " (priced as the profiles' precision)");
  unpriced_switches(s, out);
  return out;
}

std::optional<MeasuredBeside> measured_beside(const Recipe& recipe, const StepPrediction& p) {
  const bool measured = recipe.status == "measured" || recipe.status == "verified";
  if (!measured || !recipe.result || !(recipe.result->tokens_per_s_per_gpu > 0)) return std::nullopt;
  const RecipeResult& r = *recipe.result;
  MeasuredBeside m;
  m.tokens_per_s_per_gpu = r.tokens_per_s_per_gpu;
  m.mfu = r.mfu;
  m.usd_per_million_tokens = r.usd_per_million_tokens;
  m.measured = r.measured;
  m.error = (p.tokens_per_s_per_gpu - m.tokens_per_s_per_gpu) / m.tokens_per_s_per_gpu;
  return m;
}

std::string signed_percent(double fraction) { return fmt::format("{:+.1f}%", 100 * fraction); }

/// {"lines": [...], "single_ratio", "components": {name: ratio}, "optimizer", "operations": [{operation, key,
/// from_efficiency, to_efficiency, ratio, fallback, from_source, to_source}]}.
Json scaling_json(const GpuScaling& s, const std::string& from, const std::string& to) {
  Json ops = Json::array();
  for (const OperationScale& o : s.operations)
    ops.push_back(Json{{"operation", to_string(o.operation)},
                       {"key", o.key},
                       {"from_efficiency", o.from_efficiency},
                       {"to_efficiency", o.to_efficiency},
                       {"ratio", o.ratio},
                       {"fallback", o.fallback},
                       {"from_source", o.from_source},
                       {"to_source", o.to_source}});
  Json components = Json::object();
  for (int c = 0; c < kProfileComponents; ++c) components[to_string(static_cast<ProfileComponent>(c))] = s.scale[c];
  return Json{{"lines", scaling_lines(s, from, to)},
              {"single_ratio", s.single_ratio},
              {"components", components},
              {"optimizer", s.optimizer_scale},
              {"operations", ops}};
}

}  // namespace

PredictionBasis prediction_basis(const Recipe& recipe, const ModelConfig& model, const RankMap& map,
                                 const RunSettings& settings, const UnitCosts& costs, double stack_factor,
                                 const StepPrediction& p) {
  PredictionBasis b;
  b.mode = mode_of(costs, recipe);
  b.profile_gpu = costs.gpu;
  b.target_gpu = recipe.gpu.type;
  if (p.gpu_scaling) b.scaling = *p.gpu_scaling;
  b.stack_factor = stack_factor;
  b.error_band = error_band(b.mode, stack_factor, costs.gpu, recipe.gpu.type,
                            model.family == ModelFamily::kStated ? "" : family_label(model));
  if (b.mode != PredictionMode::kProfiledCpu) {
    const MemoryPlan plan = plan_memory(recipe, model, map, plan_options(settings, Device::kCuda));
    b.memory = PredictedMemory{plan.worst().peak, plan.gpu_memory, plan.largest_term(), plan.reserve};
    b.memory_analytical = plan.analytical;
  }
  b.not_modelled = not_modelled(recipe, model, settings);
  if (model.family == ModelFamily::kTransformer) {
    b.not_modelled.push_back(
        "model: " + model.name + " " + family_clause(model) +
        ", which no recipebench backend builds: its passes are the work of its layer kinds (" +
        (model.attention == AttentionKind::kMla ? "MLA attention, its latent projections as dense GEMMs"
                                                : "GQA attention") +
        (model.dense_layers > 0 ? ", dense SwiGLU MLP" : "") + (model.num_experts > 0 ? ", MoE" : "") +
        ") at the catalog's per-operation efficiencies, as a stack of Megatron-like kernels would run them" +
        (model.model_type == "mistral" || model.model_type == "gpt_oss"
             ? "; its sliding-window attention is timed as full causal attention"
             : ""));
  }
  b.measured = measured_beside(recipe, p);
  return b;
}

std::string basis_text(const PredictionBasis& b) {
  std::string out = "  how obtained: " + to_string(b.mode) +
                    (b.mode == PredictionMode::kAnalytical
                         ? ": each component's work at the catalog's per-operation efficiencies of " + b.target_gpu +
                               " (catalog/efficiency.yaml), nothing measured"
                         : ": profiles measured on " + b.profile_gpu);
  if (b.scaling)
    out += fmt::format(", carried to {} operation by operation (catalog/efficiency.yaml; one ratio of dense BF16 "
                       "peaks would be x {:.3f} for everything)",
                       b.target_gpu, b.scaling->single_ratio);
  if (b.stack_factor != 1)
    out += fmt::format("; every compute second x {:.3f} ({})", b.stack_factor,
                       b.calibration.empty() ? "--stack-factor" : "fitted by --calibrate");
  out += "\n";
  if (b.scaling)
    for (const std::string& line : scaling_lines(*b.scaling, b.profile_gpu, b.target_gpu))
      out += "    " + line + "\n";
  for (const std::string& line : b.calibration) out += "  " + line + "\n";
  out += "  trust: " + b.error_band + "\n";
  if (b.measured) {
    const MeasuredBeside& m = *b.measured;
    out += fmt::format("  measured (the recipe's result{}): {} tokens/s/GPU",
                       m.measured.empty() ? "" : ", " + m.measured, fixed(m.tokens_per_s_per_gpu, 1));
    if (m.mfu) out += fmt::format(", MFU {:.1f}%", 100 * *m.mfu);
    if (m.usd_per_million_tokens) out += ", $" + shortest(*m.usd_per_million_tokens) + " per 1M tokens";
    out += "; the prediction is " + signed_percent(m.error) + " of it\n";
  }
  if (b.memory) {
    const PredictedMemory& m = *b.memory;
    out += fmt::format("  memory ({}, docs/memory-plan.md): peak {:.1f} GB and reserve {} of {:.1f} GB",
                       b.memory_analytical ? "the analytical plan of the recipe's stack (Korthikanti et al. 2022 "
                                             "activations; not the torch backend's, which does not build this model)"
                                           : "the torch backend's plan",
                       m.peak_bytes / 1e9, m.reserve.text(m.peak_bytes), m.gpu_bytes / 1e9);
    out += m.fits() ? ": fits\n"
                    : " (largest term: " + m.largest_term +
                          "): DOES NOT FIT; the figures below are of a run that would run out of memory\n";
  }
  for (const std::string& n : b.not_modelled) out += "  not modelled: " + n + "\n";
  return out;
}

Json basis_json(const PredictionBasis& b) {
  Json j{{"mode", to_string(b.mode)},       {"profile_gpu", b.profile_gpu},
         {"target_gpu", b.target_gpu},      {"error_band", b.error_band},
         {"stack_factor", b.stack_factor},  {"not_modelled", b.not_modelled},
         {"calibration", b.calibration}};
  j["scaling"] = b.scaling ? scaling_json(*b.scaling, b.profile_gpu, b.target_gpu) : Json();
  j["memory"] = b.memory ? Json{{"plan", b.memory_analytical ? "analytical" : "torch backend"},
                                {"peak_bytes", b.memory->peak_bytes},
                                {"gpu_bytes", b.memory->gpu_bytes},
                                {"fits", b.memory->fits()},
                                {"largest_term", b.memory->largest_term}}
                         : Json();
  if (b.measured) {
    const MeasuredBeside& m = *b.measured;
    j["measured"] =
        Json{{"tokens_per_s_per_gpu", m.tokens_per_s_per_gpu},
             {"mfu", m.mfu ? Json(*m.mfu) : Json()},
             {"usd_per_million_tokens", m.usd_per_million_tokens ? Json(*m.usd_per_million_tokens) : Json()},
             {"measured", m.measured},
             {"error", m.error}};
  } else {
    j["measured"] = nullptr;
  }
  return j;
}

}  // namespace recipebench
