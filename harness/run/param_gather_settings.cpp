#include "run/param_gather_settings.h"

#include "run/grad_reduce_settings.h"
#include "run/setting_diagnostic.h"

namespace recipebench {

std::optional<bool> overlap_param_gather_applies(const Recipe& recipe, const ModelConfig& model) {
  // The optimizers that reduce-scatter their gradients are the ones that all-gather their parameters.
  return overlap_grad_reduce_applies(recipe, model);
}

std::string param_gather_note(const RunOptions& o, const Recipe& recipe) {
  if (!o.overlap_param_gather || o.overlap_param_gather_applies != false) return "";
  return "recipebench run: bench.overlap_param_gather: true has no effect on " + recipe.layout.label +
         " (DP 1 and EDP 1: no parameter is all-gathered)";
}

std::optional<Diagnostic> param_gather_per_node(const std::string& backend, const Recipe& recipe, const SourceDoc& src,
                                                const std::optional<bool>& cli) {
  if (!(cli ? *cli : recipe.bench.overlap_param_gather.value_or(false))) return std::nullopt;
  return setting_diagnostic(src, cli.has_value(), "--overlap-param-gather", "/bench/overlap_param_gather", "true",
                            "false or absent " + runs_own_command(backend, "optimizer is"));
}

}  // namespace recipebench
