// bench.ep_dispatch in the run driver (docs/distributed.md, "Expert parallelism" and "Host synchronisation"): the
// console's note when the layout has no expert parallelism, its refusal by a backend that runs the recipe's own
// command, and the refusal of bench.fail_on_sync with the host_splits dispatcher on CUDA (which would fail it).
#pragma once

#include <optional>
#include <string>

#include "recipe/diagnostic.h"
#include "recipe/recipe.h"
#include "recipe/source_doc.h"
#include "run/backend.h"

namespace recipebench {

/// The console's line about the setting, "" when none is due: when bench.ep_dispatch was given (`given`: in the
/// recipe or on the command line) and the layout has EP 1, "recipebench run: bench.ep_dispatch: fixed_capacity has
/// no effect on TP1 PP1 EP1 DP2 (EP 1: every expert is local, no row is dispatched)".
std::string ep_dispatch_note(const RunOptions& o, const Recipe& recipe, bool given);

/// bench.ep_dispatch given to a per-node backend `backend` (it runs the recipe's own command, whose dispatcher is
/// its own): the located diagnostic, at <command line> (--ep-dispatch, `cli`) or at /bench/ep_dispatch in `src`;
/// nullopt when it is not given.
std::optional<Diagnostic> ep_dispatch_per_node(const std::string& backend, const Recipe& recipe, const SourceDoc& src,
                                               const std::optional<EpDispatch>& cli);

/// bench.fail_on_sync true on CUDA (o.device) with EP > 1 (recipe.layout.ep) and the host_splits dispatcher
/// (o.ep_dispatch), whose split sizes are read on the host so the check would fail at the first MoE layer: the
/// located diagnostic (at --fail-on-sync when `cli_fail_on_sync` set it, else at /bench/fail_on_sync) saying to use
/// --ep-dispatch fixed_capacity; nullopt otherwise.
std::optional<Diagnostic> fail_on_sync_with_host_splits(const RunOptions& o, const Recipe& recipe, const SourceDoc& src,
                                                        const std::optional<bool>& cli_fail_on_sync);

}  // namespace recipebench
