// bench.overlap_p2p_comm in the run driver (docs/distributed.md, "Pipeline parallelism"): the console's note when
// the layout has no pipeline to overlap, and its located refusals: by a backend that runs the recipe's own command,
// and with --profile.
#pragma once

#include <optional>
#include <string>

#include "recipe/diagnostic.h"
#include "recipe/recipe.h"
#include "recipe/source_doc.h"
#include "run/backend.h"

namespace recipebench {

/// The console's line about the setting, "" when none is due: with o.overlap_p2p_comm on a layout of PP 1,
/// "recipebench run: bench.overlap_p2p_comm: true has no effect on TP1 PP1 EP1 DP1 (PP 1: nothing is sent
/// between pipeline stages)".
std::string p2p_comm_note(const RunOptions& o, const Recipe& recipe);

/// bench.overlap_p2p_comm true given to a per-node backend `backend` (it runs the recipe's own command, whose
/// pipeline is its own), from the command line (`cli`: located at <command line>, option --overlap-p2p-comm) or
/// else from the recipe (located at /bench/overlap_p2p_comm in `src`): the located diagnostic that refuses it;
/// nullopt when the setting is false or absent.
std::optional<Diagnostic> p2p_comm_per_node(const std::string& backend, const Recipe& recipe, const SourceDoc& src,
                                            const std::optional<bool>& cli);

/// bench.overlap_p2p_comm true on a layout with PP > 1 with --profile (`profile`), whose device synchronisation
/// after every pass would wait for the receives posted ahead, whose senders can in turn be waiting in theirs (two
/// pipeline ranks waiting on each other): the located diagnostic that refuses it (as p2p_comm_per_node); nullopt
/// otherwise.
std::optional<Diagnostic> p2p_comm_with_profile(bool profile, const Recipe& recipe, const SourceDoc& src,
                                                const std::optional<bool>& cli);

}  // namespace recipebench
