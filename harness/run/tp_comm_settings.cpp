#include "run/tp_comm_settings.h"

#include "run/setting_diagnostic.h"

namespace recipebench {

std::string tp_comm_note(const RunOptions& o, const Recipe& recipe) {
  if (!o.overlap_tp_comm || recipe.layout.tp > 1) return "";
  return "recipebench run: bench.overlap_tp_comm: true has no effect on " + recipe.layout.label +
         " (TP 1: nothing is reduce-scattered over tensor parallelism)";
}

std::optional<Diagnostic> tp_comm_per_node(const std::string& backend, const Recipe& recipe, const SourceDoc& src,
                                           const std::optional<bool>& cli) {
  if (!(cli ? *cli : recipe.bench.overlap_tp_comm.value_or(false))) return std::nullopt;
  return setting_diagnostic(src, cli.has_value(), "--overlap-tp-comm", "/bench/overlap_tp_comm", "true",
                            "false or absent " + runs_own_command(backend, "tensor parallelism is"));
}

}  // namespace recipebench
