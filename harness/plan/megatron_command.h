// A proposed layout as the Megatron-LM launch people run it (docs/step-time.md, "Commands for your stack"): the
// parallel sizes, the layer split, VPP, sequence parallel, recompute, the optimizer-state form, the dispatcher,
// microbatching, the overlap switches and the GPUs, in the flags the launch check reads (recipe/launch_check.h), so
// `validate` holds the command to the recipe it is written into. No libtorch here.
#pragma once

#include <string>

#include "recipe/recipe.h"

namespace recipebench {

/// The `run` command of `r` (a planned recipe: layout, workload, optimizer, gpu and bench switches set) for
/// Megatron-LM's pretrain_gpt.py under torchrun: `--nnodes` x `--nproc-per-node` = gpu.count, one flag per line.
/// The model's own flags (widths, tokenizer, data) are left to ${MODEL_ARGS[@]} and ${DATA_ARGS[@]}, which the user
/// sets. Throws std::invalid_argument for a layout without rows per microbatch or GPUs per node.
std::string megatron_command(const Recipe& r);

}  // namespace recipebench
