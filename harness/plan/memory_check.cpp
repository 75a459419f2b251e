#include "plan/memory_check.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <stdexcept>

#include "layout/rank_map.h"
#include "recipe/layout_check.h"
#include "recipe/run_model.h"
#include "recipe/source_doc.h"
#include "settings/resolved_run.h"

namespace recipebench {

namespace {

/// The plan of a changed recipe, nullopt when the change breaks the layout arithmetic or the rank map.
std::optional<MemoryPlan> plan_of(Recipe r, const ModelConfig& model, const PlanOptions& o) {
  r.gpu.count = static_cast<int>(r.layout.world());
  try {
    require_layout(r, &model);
    return plan_memory(r, model, build_rank_map(r, model), o);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

/// One field's candidate values, tried in order: each sets the field on a copy of the recipe and names its value.
struct FieldChanges {
  std::string field;
  std::vector<std::pair<std::string, std::function<void(Recipe&)>>> changes;
};

FieldChanges pp_changes(const Recipe& recipe) {
  FieldChanges f{"layout.pp", {}};
  for (int pp = recipe.layout.pp + 1; pp <= 2 * recipe.layout.pp; ++pp)
    f.changes.push_back({std::to_string(pp), [pp](Recipe& r) { r.layout.pp = pp; }});
  return f;
}

FieldChanges ep_changes(const Recipe& recipe) {
  FieldChanges f{"layout.ep", {}};
  for (int ep : {2 * recipe.layout.ep, 4 * recipe.layout.ep})
    f.changes.push_back({std::to_string(ep), [ep](Recipe& r) { r.layout.ep = ep; }});
  return f;
}

FieldChanges dp_changes(const Recipe& recipe) {
  const int dp = 2 * recipe.layout.dp;
  return {"layout.dp", {{std::to_string(dp), [dp](Recipe& r) { r.layout.dp = dp; }}}};
}

FieldChanges tp_changes(const Recipe& recipe) {
  const int tp = 2 * recipe.layout.tp;
  return {"layout.tp", {{std::to_string(tp), [tp](Recipe& r) { r.layout.tp = tp; }}}};
}

FieldChanges recompute_changes(const Recipe& recipe) {
  FieldChanges f{"layout.recompute", {}};
  if (recipe.layout.recompute.granularity == "none")
    f.changes.push_back({"full (uniform, 1 layer)", [](Recipe& r) {
                           r.layout.recompute.granularity = "full";
                           r.layout.recompute.method = "uniform";
                           r.layout.recompute.num_layers = 1;
                         }});
  return f;
}

FieldChanges max_tokens_changes(const Recipe& recipe) {
  FieldChanges f{"layout.max_tokens_per_gpu", {}};
  const int64_t row = recipe.workload.row_tokens;
  for (int64_t t = recipe.layout.max_tokens_per_gpu / 2; row > 0 && t >= row; t /= 2) {
    const int64_t tokens = t / row * row;
    f.changes.push_back({std::to_string(tokens), [tokens, row](Recipe& r) {
                           r.layout.max_tokens_per_gpu = tokens;
                           if (r.layout.rows_per_microbatch)
                             r.layout.rows_per_microbatch = static_cast<int>(tokens / row);
                         }});
  }
  return f;
}

/// The fields that act on the worst rank's largest term, most direct first.
std::vector<FieldChanges> fields_for(const Recipe& recipe, const MemoryPlan& plan) {
  const RankMemory& w = plan.worst();
  const double states = std::max({w.params, w.grads, w.optimizer});
  if (states >= w.activations_in_flight && states >= w.transient)
    return {pp_changes(recipe), ep_changes(recipe), dp_changes(recipe)};
  if (w.activations_in_flight >= w.transient)
    return {recompute_changes(recipe), max_tokens_changes(recipe), pp_changes(recipe)};
  return {max_tokens_changes(recipe), tp_changes(recipe)};
}

/// "layout.pp 8 (64 GPUs): the worst rank needs 150.1 GB".
std::string fix_text(const LayoutFix& f) {
  return f.field + " " + f.value + " (" + std::to_string(f.gpus) + " GPUs): the worst rank needs " + gigabytes_text(f.peak) + " GB";
}

/// Where the diagnostic points: the field's value in the file, else the layout block.
std::string pointer_of(const std::string& field) {
  std::string p = "/" + field;
  std::replace(p.begin(), p.end(), '.', '/');
  return p;
}

}  // namespace

std::string plan_not_modelled_reason(const Recipe& recipe) {
  if (recipe.bench.backend && *recipe.bench.backend != "torch")
    return "it runs on the " + *recipe.bench.backend + " backend (bench.backend)";
  const Json& stack = recipe.doc.contains("stack") && recipe.doc["stack"].is_object() ? recipe.doc["stack"] : Json();
  const bool measured = recipe.status == "measured" || recipe.status == "verified";
  for (const char* field : {"framework", "megatron_lm"}) {
    if (!stack.is_object() || !stack.contains(field) || !stack[field].is_string()) continue;
    const std::string name = stack[field].get<std::string>();
    if (name.find("recipebench") != std::string::npos) return "";
    return std::string(measured ? "it was measured with " : "it is written for ") + name + " (stack." + field + ")";
  }
  return "";
}

std::vector<LayoutFix> layout_fixes(const Recipe& recipe, const ModelConfig& model, const PlanOptions& o,
                                    const MemoryPlan& plan) {
  std::vector<LayoutFix> fixes;
  for (const FieldChanges& f : fields_for(recipe, plan)) {
    std::optional<LayoutFix> best;
    for (const auto& [value, apply] : f.changes) {
      Recipe r = recipe;
      apply(r);
      const std::optional<MemoryPlan> p = plan_of(r, model, o);
      if (!p) continue;
      const LayoutFix fix{f.field, value, r.layout.world(), p->worst().peak, p->fits()};
      if (!best || fix.peak < best->peak) best = fix;
      if (fix.fits) {
        best = fix;
        break;
      }
    }
    if (best) fixes.push_back(*best);
  }
  std::stable_partition(fixes.begin(), fixes.end(), [](const LayoutFix& f) { return f.fits; });
  return fixes;
}

namespace {

/// The warning that the plan is not made: a model known by its stated counts only has no widths to plan.
Diagnostic not_planned(const Recipe& recipe, const RunModel& ran, const std::string& file) {
  Diagnostic d;
  try {
    const SourceDoc src = load_yaml_file(file);
    d = src.at("/model", "", "");
  } catch (const InputError&) {
    d.file = file;
  }
  d.path = "model";
  d.found =
      "the memory plan is not checked: " + recipe.model + " " + family_clause(ran.model) + " (" + ran.counts_note + ")";
  d.expected =
      "model_params.config (a config.json: its widths give the analytical plan of the recipe's own stack) or a model "
      "of the registry (docs/memory-plan.md); else check the memory with the recipe's own stack";
  d.severity = "warning";
  return d;
}

}  // namespace

std::optional<Diagnostic> check_memory_fits(const Recipe& recipe, const std::string& file, bool strict,
                                            const std::optional<MemoryReserve>& reserve) {
  const std::optional<RunModel> ran = run_model(recipe);
  if (!ran) return std::nullopt;
  if (ran->model.family == ModelFamily::kStated) return not_planned(recipe, *ran, file);
  const ModelConfig& model = ran->model;
  // The run `run` would make of the recipe as it stands (no command line): its settings and rank map.
  const ResolvedRun run = resolve_run(recipe, merged_options(recipe, RecipeBench{}), *ran);
  if (!run.map) return std::nullopt;
  PlanOptions o = plan_options(run.settings(), run.settings().device);
  o.reserve = reserve;
  MemoryPlan plan;
  try {
    plan = plan_memory(recipe, model, *run.map, o);
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
  if (plan.fits()) return std::nullopt;
  const std::vector<LayoutFix> fixes = layout_fixes(recipe, model, o, plan);
  std::string expected;
  if (!fixes.empty() && fixes.front().fits) {
    expected = "a layout whose peak and reserve fit the " + plan.gpu + "'s " + gigabytes_text(plan.gpu_memory) + " GB: ";
    for (size_t i = 0; i < fixes.size() && fixes[i].fits; ++i) expected += (i ? "; or " : "") + fix_text(fixes[i]);
  } else {
    expected = "a peak and reserve within the " + plan.gpu + "'s " + gigabytes_text(plan.gpu_memory) +
               " GB, which no change of one field "
               "gives";
    for (size_t i = 0; i < fixes.size(); ++i) expected += (i ? "; " : " (") + fix_text(fixes[i]);
    if (!fixes.empty()) expected += ")";
  }
  expected += " (recipebench run " + file + " --dry-run shows the plan)";
  // The analytical plan is the recipe's own stack's (Megatron-Core's distributed optimizer): no other stack to name.
  const std::string reason = plan.analytical ? "" : plan_not_modelled_reason(recipe);
  if (!reason.empty())
    expected += "; the plan is recipebench's torch backend's and " + reason +
                ", whose memory it does not model: a warning, also with --strict";
  if (plan.analytical)
    expected += "; the analytical plan is formulas never held against a measured peak: a warning, also with --strict";
  Diagnostic d;
  const std::string field = fixes.empty() ? "layout" : fixes.front().field;
  try {
    const SourceDoc src = load_yaml_file(file);
    d = src.at(src.node(pointer_of(field)) ? pointer_of(field) : "/layout", "", "");
  } catch (const InputError&) {
    d.file = file;
  }
  d.path = field;
  d.found = (plan.analytical ? "the analytical memory plan of " + recipe.model + " (" + ran->counts_note +
                                   "), the recipe's own stack as Megatron-Core's distributed optimizer holds it "
                                   "(docs/memory-plan.md), does not fit: "
                             : std::string("the memory plan of recipebench's torch backend does not fit: ")) +
            memory_overflow_message(plan);
  d.expected = expected;
  // The analytical plan is a formula never held against a measured peak: a warning, also with --strict.
  d.severity = strict && reason.empty() && !plan.analytical ? "error" : "warning";
  return d;
}

}  // namespace recipebench
