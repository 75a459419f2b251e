#include "run/p2p_comm_settings.h"

#include <string>

#include "run/setting_diagnostic.h"

namespace recipebench {

std::string p2p_comm_note(const RunOptions& o, const Recipe& recipe) {
  if (!o.overlap_p2p_comm || recipe.layout.pp > 1) return "";
  return "recipebench run: bench.overlap_p2p_comm: true has no effect on " + recipe.layout.label +
         " (PP 1: nothing is sent between pipeline stages)";
}

namespace {

/// The located diagnostic refusing bench.overlap_p2p_comm true (`cli` first, else the recipe's field) with
/// `expected`; nullopt when the effective setting is false.
std::optional<Diagnostic> refuse_p2p_comm(const Recipe& recipe, const SourceDoc& src, const std::optional<bool>& cli,
                                          const std::string& expected) {
  if (!(cli ? *cli : recipe.bench.overlap_p2p_comm.value_or(false))) return std::nullopt;
  return setting_diagnostic(src, cli.has_value(), "--overlap-p2p-comm", "/bench/overlap_p2p_comm", "true", expected);
}

}  // namespace

std::optional<Diagnostic> p2p_comm_per_node(const std::string& backend, const Recipe& recipe, const SourceDoc& src,
                                            const std::optional<bool>& cli) {
  return refuse_p2p_comm(recipe, src, cli, "false or absent " + runs_own_command(backend, "pipeline is"));
}

std::optional<Diagnostic> p2p_comm_with_profile(bool profile, const Recipe& recipe, const SourceDoc& src,
                                                const std::optional<bool>& cli) {
  if (!profile || recipe.layout.pp < 2) return std::nullopt;
  return refuse_p2p_comm(recipe, src, cli,
                         "false or absent with --profile on PP " + std::to_string(recipe.layout.pp) +
                             " (it synchronises the device after every pass, which would wait for the receives "
                             "posted ahead)");
}

}  // namespace recipebench
