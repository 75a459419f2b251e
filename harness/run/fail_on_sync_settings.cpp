#include "run/fail_on_sync_settings.h"

#include "run/setting_diagnostic.h"

namespace recipebench {

std::string fail_on_sync_note(const RunOptions& o) {
  if (!o.fail_on_sync || o.device != Device::kCpu) return "";
  return "recipebench run: bench.fail_on_sync: no CUDA device, nothing to check (device cpu: the step never waits "
         "for a GPU)";
}

std::optional<Diagnostic> refuse_fail_on_sync(const Recipe& recipe, const SourceDoc& src,
                                              const std::optional<bool>& cli, const std::string& expected) {
  if (!(cli ? *cli : recipe.bench.fail_on_sync.value_or(false))) return std::nullopt;
  return setting_diagnostic(src, cli.has_value(), "--fail-on-sync", "/bench/fail_on_sync", "true", expected);
}

std::optional<Diagnostic> fail_on_sync_per_node(const std::string& backend, const Recipe& recipe, const SourceDoc& src,
                                                const std::optional<bool>& cli) {
  return refuse_fail_on_sync(recipe, src, cli, "false or absent " + runs_own_command(backend, "synchronisation is"));
}

std::optional<Diagnostic> fail_on_sync_with_profile(bool profile, const Recipe& recipe, const SourceDoc& src,
                                                    const std::optional<bool>& cli) {
  if (!profile) return std::nullopt;
  return refuse_fail_on_sync(recipe, src, cli,
                             "false or absent with --profile (it synchronises the device between the phases and "
                             "components it times)");
}

}  // namespace recipebench
