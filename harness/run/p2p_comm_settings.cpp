#include "run/p2p_comm_settings.h"

namespace recipebench {

std::string p2p_comm_note(const RunOptions& o, const Recipe& recipe) {
  if (!o.overlap_p2p_comm || recipe.layout.pp > 1) return "";
  return "recipebench run: bench.overlap_p2p_comm: true has no effect on " + recipe.layout.label +
         " (PP 1: nothing is sent between pipeline stages)";
}

std::optional<Diagnostic> p2p_comm_per_node(const std::string& backend, const Recipe& recipe, const SourceDoc& src,
                                            const std::optional<bool>& cli) {
  if (!(cli ? *cli : recipe.bench.overlap_p2p_comm.value_or(false))) return std::nullopt;
  const std::string expected =
      "false or absent (the " + backend + " backend runs the recipe's own command: its pipeline is the command's)";
  if (cli) return Diagnostic{"<command line>", 0, 0, "--overlap-p2p-comm", "true", expected};
  return src.at("/bench/overlap_p2p_comm", "true", expected);
}

}  // namespace recipebench
