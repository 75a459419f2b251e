#include "run/ep_dispatch_settings.h"

#include "run/fail_on_sync_settings.h"
#include "run/setting_diagnostic.h"

namespace recipebench {

std::string ep_dispatch_note(const RunOptions& o, const Recipe& recipe, bool given) {
  if (!given || recipe.layout.ep > 1) return "";
  return "recipebench run: bench.ep_dispatch: " + to_string(o.ep_dispatch) + " has no effect on " +
         recipe.layout.label + " (EP 1: every expert is local, no row is dispatched)";
}

std::optional<Diagnostic> ep_dispatch_per_node(const std::string& backend, const Recipe& recipe, const SourceDoc& src,
                                               const std::optional<EpDispatch>& cli) {
  const auto given = cli ? cli : recipe.bench.ep_dispatch;
  if (!given) return std::nullopt;
  return setting_diagnostic(src, cli.has_value(), "--ep-dispatch", "/bench/ep_dispatch", to_string(*given),
                            "absent " + runs_own_command(backend, "expert dispatch is"));
}

std::optional<Diagnostic> fail_on_sync_with_host_splits(const RunOptions& o, const Recipe& recipe, const SourceDoc& src,
                                                        const std::optional<bool>& cli_fail_on_sync) {
  if (!o.fail_on_sync || o.device != Device::kCuda || recipe.layout.ep <= 1 || o.ep_dispatch != EpDispatch::kHostSplits)
    return std::nullopt;
  return refuse_fail_on_sync(recipe, src, cli_fail_on_sync,
                             "false or absent with bench.ep_dispatch host_splits on EP " +
                                 std::to_string(recipe.layout.ep) +
                                 " (its all-to-all's split sizes are read on the host, which the check fails on): "
                                 "use --ep-dispatch fixed_capacity");
}

}  // namespace recipebench
