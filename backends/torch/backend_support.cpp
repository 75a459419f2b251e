#include "backend_support.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "layout/rank_map.h"
#include "recipe/layout_check.h"

namespace recipebench::torch_backend {

namespace {

/// The layout's name in messages: "the recipe's layout TP2".
std::string layout_name(const RecipeLayout& l) { return "the recipe's layout " + l.label; }

/// TP > 1 runs with sequence parallel only, and the dimensions this backend shards without padding (the shared
/// expert's FFN, the vocabulary) must be divisible by TP. Heads and rows are the layout's rules (layout_check).
void check_tensor_parallel(const Recipe& recipe, const ModelConfig* model) {
  const auto& l = recipe.layout;
  if (l.tp <= 1) return;
  const std::string tp = std::to_string(l.tp);
  if (!l.sequence_parallel)
    throw RunError(layout_name(l) + " has TP = " + tp +
                   " without sequence parallel: the torch backend runs TP > 1 with sequence parallel only "
                   "(layout.sequence_parallel: true); the model is MoE, and without it every TP rank would route "
                   "the same tokens through the experts (docs/distributed.md)");
  if (!model) return;
  const std::pair<const char*, int64_t> dims[] = {{"shared expert FFN", model->shared_expert_ffn},
                                                  {"vocabulary", model->vocab_size}};
  for (const auto& [what, n] : dims)
    if (n % l.tp != 0)
      throw RunError(layout_name(l) + " has TP = " + tp + " but " + model->name + " has " + std::to_string(n) + " " +
                     what + ", not divisible by TP: the torch backend shards it over TP without padding");
}

}  // namespace

torch_model::RecomputeOptions recompute_options(const RecipeLayout& l) {
  const RecipeRecompute& r = l.recompute;
  torch_model::RecomputeOptions o;
  if (r.granularity.empty() || r.granularity == "none") return o;
  // The capability table (torch_backend_registration.cpp: recompute full, none) refuses every other granularity
  // before any rank starts (run/admission.h); here only what it lets through is converted.
  if (r.granularity != "full")
    throw std::logic_error("layout.recompute.granularity " + r.granularity +
                           " reached the torch backend: its capability table admits full and none only");
  if (r.method.empty() || r.method == "uniform")
    o.method = torch_model::RecomputeOptions::Method::Uniform;
  else if (r.method == "block")
    o.method = torch_model::RecomputeOptions::Method::Block;
  else
    throw RunError("layout.recompute.method " + r.method + " is not one of uniform, block");
  if (r.num_layers < 0)
    throw RunError("layout.recompute.num_layers is " + std::to_string(r.num_layers) + ", expected >= 1");
  o.num_layers = r.num_layers == 0 ? 1 : r.num_layers;
  return o;
}

void check_backend_support(const Recipe& recipe, const ModelConfig* model) {
  // CP, ETP, the recompute granularity, the dispatcher, offload and precision are the capability table's
  // (harness/backend/capabilities.h), checked once at admission; this is what the table cannot say.
  check_tensor_parallel(recipe, model);
}

void check_run_ranks(const Recipe& recipe, const RunOptions& o) {
  const auto& l = recipe.layout;
  const int64_t world = l.world();
  if (world == o.place.world) return;
  throw RunError(layout_name(l) + " needs " + std::to_string(world) + " ranks (" +
                 (l.tp > 1 ? "TP = " + std::to_string(l.tp) + " x " : std::string()) + "DP = " + std::to_string(l.dp) +
                 (l.pp > 1 ? " x PP = " + std::to_string(l.pp) : std::string()) + ") but this run has " +
                 std::to_string(o.place.world) + " (start it with --nproc " + std::to_string(world) +
                 ", torchrun or srun: docs/distributed.md)");
}

void check_resolved_layout(const ResolvedRun& r) {
  const std::string layout = layout_name(r.recipe->layout);
  const ModelConfig& model = r.model.model;
  if (!r.map) throw RunError(layout + " with " + std::to_string(model.num_layers) + " layers: " + r.map_problem);
  if (!r.layout_problem.empty()) throw RunError(layout + " with " + model.name + ": " + r.layout_problem);
}

}  // namespace recipebench::torch_backend
