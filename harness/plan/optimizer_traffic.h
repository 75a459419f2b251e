// The optimizer step's memory traffic per parameter, by the precision-aware state form (docs/optimizer.md, "Memory
// traffic"): the step is bound by HBM bandwidth, so its seconds scale with these bytes.
#pragma once

#include <string>

#include "recipe/enums.h"
#include "recipe/recipe.h"

namespace recipebench {

/// Bytes the optimizer step reads and writes per parameter of its shard, by the state form `o` (master weights and
/// moment dtypes) and the step's `kernels` (docs/optimizer.md, "Memory traffic"; a stated formula, not a measurement):
/// - fused kernels: the gradient norm's read of g (4) + the update's read of g (4) + the master weight (FP32: read 4,
///   write 4 and the BF16 parameter written, 2 = 10; BF16 + remainder: parameter and remainder read and written,
///   2 x (2 + 2) = 8) + each moment read and written (2 x 4 for FP32, 2 x 2 for BF16): 34 for the plain FP32 state,
///   32 for BF16 + remainder masters (Megatron-LM's precision-aware defaults), 24 with BF16 moments as well;
/// - ops kernels (libtorch's operators): 54 for the plain FP32 state (the norm's extra passes 8, the clip's pass 8,
///   the master-to-parameter copy 4 over the fused 34).
/// Throws std::invalid_argument for ops kernels with a precision-aware form: their temporaries (the reconstructed
/// FP32 masters and moments) are not modelled.
double optimizer_step_bytes_per_param(const RecipeOptimizer& o, Kernels kernels);

/// The state form in words: "FP32 masters and Adam moments", "BF16 + remainder masters and Adam moments", or with
/// the moments' dtypes when either is BF16 ("..., Adam moments in bf16 / bf16").
std::string optimizer_state_label(const RecipeOptimizer& o);

}  // namespace recipebench
