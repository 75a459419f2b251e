// bench.overlap_tp_comm in the run driver (docs/distributed.md, "Overlap"): the console's note when the layout has
// no tensor parallelism to overlap, and its located refusal by a backend that runs the recipe's own command.
#pragma once

#include <optional>
#include <string>

#include "recipe/diagnostic.h"
#include "recipe/recipe.h"
#include "recipe/source_doc.h"
#include "run/backend.h"

namespace recipebench {

/// The console's line about the setting, "" when none is due: with o.overlap_tp_comm on a layout of TP 1,
/// "recipebench run: bench.overlap_tp_comm: true has no effect on TP1 PP1 EP1 DP1 (TP 1: nothing is
/// reduce-scattered over tensor parallelism)".
std::string tp_comm_note(const RunOptions& o, const Recipe& recipe);

/// bench.overlap_tp_comm true given to a per-node backend `backend` (it runs the recipe's own command, whose tensor
/// parallelism is its own), from the command line (`cli`: located at <command line>, option --overlap-tp-comm) or
/// else from the recipe (located at /bench/overlap_tp_comm in `src`): the located diagnostic that refuses it;
/// nullopt when the setting is false or absent.
std::optional<Diagnostic> tp_comm_per_node(const std::string& backend, const Recipe& recipe, const SourceDoc& src,
                                           const std::optional<bool>& cli);

}  // namespace recipebench
