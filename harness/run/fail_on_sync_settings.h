// bench.fail_on_sync in the run driver (docs/distributed.md, "Host synchronisation"): the console's note on a CPU run
// (nothing to check there) and the located refusals of the setting where it cannot mean what it says: with
// --profile (which synchronises the device between phases by design) and on a backend that runs the recipe's own
// command (whose synchronisation is the command's).
#pragma once

#include <optional>
#include <string>

#include "recipe/diagnostic.h"
#include "recipe/recipe.h"
#include "recipe/source_doc.h"
#include "run/backend.h"

namespace recipebench {

/// The console's line about the setting, "" when none is due: with o.fail_on_sync on the CPU,
/// "recipebench run: bench.fail_on_sync: no CUDA device, nothing to check (...)".
std::string fail_on_sync_note(const RunOptions& o);

/// The located diagnostic refusing bench.fail_on_sync true, from the command line (`cli`: located at
/// <command line>, option --fail-on-sync) or else from the recipe (located at /bench/fail_on_sync in `src`), with
/// `expected` as the diagnostic's expected text; nullopt when the effective setting is false.
std::optional<Diagnostic> refuse_fail_on_sync(const Recipe& recipe, const SourceDoc& src, const std::optional<bool>& cli,
                                              const std::string& expected);

/// bench.fail_on_sync true given to a per-node backend `backend` (it runs the recipe's own command): the located
/// diagnostic that refuses it; nullopt when the setting is false or absent.
std::optional<Diagnostic> fail_on_sync_per_node(const std::string& backend, const Recipe& recipe, const SourceDoc& src,
                                                const std::optional<bool>& cli);

/// bench.fail_on_sync true with --profile (`profile`), whose device synchronisations between phases and components
/// would fail the run by design: the located diagnostic that refuses it; nullopt otherwise.
std::optional<Diagnostic> fail_on_sync_with_profile(bool profile, const Recipe& recipe, const SourceDoc& src,
                                                    const std::optional<bool>& cli);

}  // namespace recipebench
