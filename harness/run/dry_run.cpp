#include "run/dry_run.h"

#include <stdexcept>

#include "plan/memory_plan.h"

namespace recipebench {

std::string run_plan_text(const ResolvedRun& r, const HostDevices& host) {
  if (!r.map) return "";
  const RunSettings& s = r.settings();
  MemoryPlan plan = plan_memory(*r.recipe, r.model.model, *r.map, plan_options(s, s.device));
  if (s.device == Device::kCpu && host.available_bytes > 0) {
    plan.gpu = "the CPU: this host's available";
    plan.gpu_memory = static_cast<double>(host.available_bytes);
  }
  return format_memory_plan(plan);
}

std::string dry_run_text(const std::string& path, const ResolvedRun& r, const HostDevices& host) {
  const ModelConfig& model = r.model.model;
  const Recipe& recipe = *r.recipe;
  const bool layers_known = model.architecture_known();
  if (layers_known && !r.map) throw std::invalid_argument(r.map_problem);
  if (!layers_known)
    return "recipebench run --dry-run: " + path + "\n  model " + model.name + " (" + family_label(model) + "), " +
           recipe.layout.label + "\n  rank map: not built (the model's layers are not known, only its counts)\n" +
           "  memory plan: not made (no layers to plan)\n";
  if (model.family != ModelFamily::kQwen35)  // a config.json family: the plan is the analytical one (its header)
    return "recipebench run --dry-run: " + path + "\n  model " + model.name + " (" + family_label(model) + "), " +
           recipe.layout.label + "\n" + format_rank_map(*r.map) + run_plan_text(r, host);
  return "recipebench run --dry-run: " + path + "\n  model " + model.name + " (" + std::to_string(model.num_layers) +
         " layers), " + recipe.layout.label + "\n" + format_rank_map(*r.map) + run_plan_text(r, host);
}

}  // namespace recipebench
