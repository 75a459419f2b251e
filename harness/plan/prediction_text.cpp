#include "plan/prediction_text.h"

#include <fmt/format.h>

#include "catalog/hardware.h"
#include "util/format.h"

namespace recipebench {

namespace {

double compute_seconds(const RankStepTime& r) {
  double s = 0;
  for (double v : r.compute) s += v;
  return s;
}

Json rank_json(const RankStepTime& r) {
  Json compute = Json::object();
  for (int c = 0; c < kProfileComponents; ++c)
    if (r.compute[c] > 0) compute[to_string(static_cast<ProfileComponent>(c))] = r.compute[c];
  return Json{{"pp_rank", r.pp_rank},
              {"step_seconds", r.step},
              {"compute_seconds", compute_seconds(r)},
              {"compute", compute},
              {"recompute_seconds", r.recompute},
              {"tp_exposed_seconds", r.tp_exposed},
              {"ep_exposed_seconds", r.ep_exposed},
              {"cp_exposed_seconds", r.cp_exposed},
              {"pipeline_idle_seconds", r.pipeline_idle},
              {"p2p_wait_seconds", r.p2p_wait},
              {"dp_exposed_seconds", r.dp_exposed},
              {"optimizer_seconds", r.optimizer},
              {"forward_pass_seconds", r.forward_pass},
              {"backward_pass_seconds", r.backward_pass}};
}

}  // namespace

Json prediction_to_json(const StepPrediction& p) {
  Json ranks = Json::array();
  for (const RankStepTime& r : p.ranks) ranks.push_back(rank_json(r));
  Json j{{"step_seconds", p.step_seconds},
         {"tokens_per_step", p.tokens_per_step},
         {"tokens_per_s_per_gpu", p.tokens_per_s_per_gpu},
         {"mfu", p.mfu ? Json(*p.mfu) : Json()},
         {"usd_per_million_tokens", p.usd_per_million_tokens ? Json(*p.usd_per_million_tokens) : Json()},
         {"gpu_hours", p.gpu_hours},
         {"steps_for_gpu_hours", p.steps_for_gpu_hours},
         {"critical_pp_rank", p.critical_pp_rank},
         {"breakdown", rank_json(p.ranks.at(static_cast<size_t>(p.critical_pp_rank)))},
         {"ranks", ranks},
         {"assumptions", p.assumptions}};
  return j;
}

Json achieved_flops_json(const UnitCosts& costs) {
  const auto a = achieved_flops(costs);
  Json j = Json::object();
  for (int c = 0; c < kProfileComponents; ++c)
    if (a[0][c] > 0 || a[1][c] > 0)
      j[to_string(static_cast<ProfileComponent>(c))] = Json{{"forward", a[0][c]}, {"backward", a[1][c]}};
  return j;
}

namespace {

/// One achieved rate in TFLOP/s, or, above the GPU's dense BF16 peak (`peak` > 0), "n/a" with what it implies: a
/// rate no GPU reaches says the work formula does not describe the pass (docs/step-time.md: the LM head's backward).
std::string rate_text(double flops, double peak, bool* implausible) {
  if (peak > 0 && flops > peak) {
    *implausible = true;
    return fmt::format("n/a ({:.0f} implied)", flops / 1e12);
  }
  return fmt::format("{:.0f}", flops / 1e12);
}

}  // namespace

std::string achieved_flops_text(const UnitCosts& costs) {
  const auto a = achieved_flops(costs);
  const GpuSpec* gpu = find_gpu(costs.gpu);
  const double peak = gpu ? gpu->peak_bf16_flops : 0;
  bool implausible = false;
  std::string parts;
  for (int c = 0; c < kProfileComponents; ++c)
    if (a[0][c] > 0 || a[1][c] > 0)
      parts += fmt::format("{}{} {} / {}", parts.empty() ? "" : ", ", to_string(static_cast<ProfileComponent>(c)),
                           rate_text(a[0][c], peak, &implausible), rate_text(a[1][c], peak, &implausible));
  // No profile read (the analytical mode): the rates are the catalog's efficiencies restated, nothing achieved.
  const char* whose = costs.sources.empty() ? "the analytical mode's implied" : "profile's achieved";
  std::string text = fmt::format("{} TFLOP/s on {} (forward / backward, by docs/step-time.md's work): {}", whose,
                                 costs.gpu, parts);
  if (implausible)
    text += fmt::format(
        "; n/a: a rate above the {}'s {:.0f} TFLOP/s peak is implausible (the pass does other work "
        "than its formula counts: not comparable)",
        costs.gpu, peak / 1e12);
  return text;
}

std::string breakdown_line(const RankStepTime& r) {
  std::string parts;
  for (int c = 0; c < kProfileComponents; ++c) {
    if (r.compute[c] <= 0) continue;
    parts += fmt::format("{}{} {:.3f}", parts.empty() ? "" : ", ", to_string(static_cast<ProfileComponent>(c)),
                         r.compute[c]);
  }
  // CP's exposed exchange only where the layout has one (CP 1 lines read as before).
  const std::string cp = r.cp_exposed > 0 ? fmt::format(", CP {:.3f}", r.cp_exposed) : "";
  return fmt::format(
      "compute {:.3f} s ({}; of which recompute {:.3f}), exposed TP {:.3f}, EP {:.3f}{}, pipeline idle {:.3f} "
      "(transfers {:.3f}), DP {:.3f}, optimizer {:.3f}",
      compute_seconds(r), parts, r.recompute, r.tp_exposed, r.ep_exposed, cp, r.pipeline_idle, r.p2p_wait,
      r.dp_exposed, r.optimizer);
}

std::string prediction_text(const StepPrediction& p) {
  std::string out;
  out +=
      fmt::format("  step time          {:.3f} s (predicted by the step-time model, not measured)\n", p.step_seconds);
  out += fmt::format("  tokens/s/GPU       {}\n", fixed(p.tokens_per_s_per_gpu, 1));
  out += fmt::format("  MFU                {}\n", p.mfu ? fmt::format("{:.1f}%", *p.mfu * 100) : "-");
  // Two decimals, or two significant digits where that shows less (a one-GPU proxy's $0.039, 0.0016 GPU-hours).
  out += fmt::format("  $ per 1M tokens    {}\n",
                     p.usd_per_million_tokens ? fixed_significant(*p.usd_per_million_tokens, 2, 2) : "-");
  out += fmt::format("  GPU-hours          {} ({} steps, startup not modelled)\n", fixed_significant(p.gpu_hours, 2, 2),
                     p.steps_for_gpu_hours);
  out += fmt::format("  the step ends on pipeline rank {}: {}\n", p.critical_pp_rank,
                     breakdown_line(p.ranks.at(static_cast<size_t>(p.critical_pp_rank))));
  if (p.ranks.size() > 1) {
    out += "  per pipeline rank (s): step, mean forward / backward pass, compute, pipeline idle\n";
    for (const RankStepTime& r : p.ranks)
      out += fmt::format("    pp {:>2}  {:8.3f}  {:7.4f} / {:7.4f}  {:8.3f}  {:7.3f}\n", r.pp_rank, r.step,
                         r.forward_pass, r.backward_pass, compute_seconds(r), r.pipeline_idle);
  }
  out += "  assumptions:\n";
  for (const std::string& a : p.assumptions) out += "    - " + a + "\n";
  return out;
}

}  // namespace recipebench
