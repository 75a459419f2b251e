#include "plan/memory_check.h"

#include <stdexcept>

#include "plan/memory_plan.h"
#include "recipe/run_model.h"
#include "recipe/source_doc.h"

namespace recipebench {

std::optional<Diagnostic> check_memory_fits(const Recipe& recipe, const std::string& file) {
  const std::optional<RunModel> ran = run_model(recipe);
  if (!ran) return std::nullopt;
  const ModelConfig& model = ran->model;
  PlanOptions o;  // the recipe's bench block (ep_dispatch and overlap_param_gather: plan_memory reads them)
  o.device = recipe.bench.device.value_or(Device::kCuda);
  o.fused_kernels = recipe.bench.kernels.value_or(Kernels::kFused) == Kernels::kFused;  // bench.kernels
  MemoryPlan plan;
  try {
    plan = plan_memory(recipe, model, build_rank_map(recipe, model), o);
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
  if (plan.fits()) return std::nullopt;
  Diagnostic d;
  try {
    d = load_yaml_file(file).at("/layout/max_tokens_per_gpu", "", "");
  } catch (const InputError&) {
    d.file = file;
    d.path = "layout";
  }
  d.found = "the memory plan does not fit: " + memory_overflow_message(plan);
  d.expected = "a peak within the GPU's memory (recipebench run " + file + " --dry-run shows the plan)";
  return d;
}

}  // namespace recipebench
