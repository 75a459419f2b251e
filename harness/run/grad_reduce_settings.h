// bench.overlap_grad_reduce and bench.grad_reduce_bucket_elements in the run driver: whether the layout leaves them
// anything to change, what the console says when it does not, and their refusal by a backend that runs the
// recipe's own command (docs/distributed.md, "Overlap").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "catalog/models.h"
#include "recipe/diagnostic.h"
#include "recipe/recipe.h"
#include "recipe/source_doc.h"
#include "run/backend.h"

namespace recipebench {

/// Whether bench.overlap_grad_reduce changes anything on `recipe`'s layout for `model`: true when DP > 1 or
/// EDP > 1 (a distributed optimizer has a group of several ranks to reduce-scatter over; with EP = TP = 1 the
/// experts are among the dense parameters and EDP = DP). nullopt when the layout does not hold for the model (the
/// backend refuses it with the reason).
std::optional<bool> overlap_grad_reduce_applies(const Recipe& recipe, const ModelConfig& model);

/// The console's line about the setting, "" when none is due: "bench.overlap_grad_reduce: true has no effect on
/// TP1 PP1 EP1 DP1 (DP 1 and EDP 1: no gradient is reduce-scattered)" when o.overlap_grad_reduce_applies is false,
/// or that a bucket size given (`bucket_size_given`) has no effect while o.overlap_grad_reduce is false.
std::string grad_reduce_note(const RunOptions& o, const Recipe& recipe, bool bucket_size_given);

/// One located diagnostic per field a per-node backend `backend` (it runs the recipe's own command, whose gradient
/// reduction is its own) would ignore: bench.overlap_grad_reduce true or bench.grad_reduce_bucket_elements, from
/// the recipe (located at the field in `src`) or from the command line (`cli_overlap`, `cli_bucket`: located at
/// <command line>). Empty when neither is set.
Diagnostics check_grad_reduce_per_node(const std::string& backend, const Recipe& recipe, const SourceDoc& src,
                                       const std::optional<bool>& cli_overlap,
                                       const std::optional<int64_t>& cli_bucket);

}  // namespace recipebench
