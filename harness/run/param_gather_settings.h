// bench.overlap_param_gather in the run driver (docs/distributed.md, "Overlap"): whether the layout leaves it
// anything to defer, the console's note when it does not, and its located refusal by a backend that runs the
// recipe's own command.
#pragma once

#include <optional>
#include <string>

#include "catalog/models.h"
#include "recipe/diagnostic.h"
#include "recipe/recipe.h"
#include "recipe/source_doc.h"
#include "run/backend.h"

namespace recipebench {

/// Whether bench.overlap_param_gather changes anything on `recipe`'s layout for `model`: true when DP > 1 or
/// EDP > 1 (a distributed optimizer all-gathers its updated shards over a group of several ranks), the layouts where
/// bench.overlap_grad_reduce applies. nullopt when the layout does not hold for the model (the backend refuses it
/// with the reason).
std::optional<bool> overlap_param_gather_applies(const Recipe& recipe, const ModelConfig& model);

/// The console's line about the setting, "" when none is due: with o.overlap_param_gather and
/// o.overlap_param_gather_applies false, "recipebench run: bench.overlap_param_gather: true has no effect on
/// TP1 PP1 EP1 DP1 (DP 1 and EDP 1: no parameter is all-gathered)".
std::string param_gather_note(const RunOptions& o, const Recipe& recipe);

/// bench.overlap_param_gather true given to a per-node backend `backend` (it runs the recipe's own command, whose
/// optimizer is its own), from the command line (`cli`: located at <command line>, option --overlap-param-gather)
/// or else from the recipe (located at /bench/overlap_param_gather in `src`): the located diagnostic that refuses
/// it; nullopt when the setting is false or absent.
std::optional<Diagnostic> param_gather_per_node(const std::string& backend, const Recipe& recipe, const SourceDoc& src,
                                                const std::optional<bool>& cli);

}  // namespace recipebench
