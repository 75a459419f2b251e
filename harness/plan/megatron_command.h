// A proposed layout as the Megatron-LM launch people run it (docs/step-time.md, "Commands for your stack"): the
// parallel sizes, the layer split, VPP, sequence parallel, recompute, the optimizer-state form, the dispatcher,
// microbatching, the overlap switches and the GPUs, in the flags the launch check reads (recipe/launch_check.h), so
// `validate` holds the command to the recipe it is written into. No libtorch here.
#pragma once

#include <string>

#include "recipe/recipe.h"
#include "settings/run_options.h"

namespace recipebench {

/// The `run` command of `r` (a planned recipe: layout, workload, optimizer, gpu and bench switches set) for
/// Megatron-LM's pretrain_gpt.py under torchrun: `--nnodes` x `--nproc-per-node` = gpu.count, one flag per line.
/// The model's own flags (widths, tokenizer, data) are left to ${MODEL_ARGS[@]} and ${DATA_ARGS[@]}, which the user
/// sets. Throws std::invalid_argument for a layout without rows per microbatch or GPUs per node.
std::string megatron_command(const Recipe& r);

/// The switches the step-time model prices that a recipe run by its own command (`bench.backend: command`) sets by
/// that command's flags: each on in `s` where the recipe's `run:` command passes its Megatron-LM flag
/// (--overlap-grad-reduce, --overlap-param-gather, --overlap-p2p-comm, --tp-comm-overlap: the one table
/// megatron_command writes them from). The command backend refuses the bench fields themselves (its switches are the
/// command's), so predict, --calibrate and so plan's written proposals read them here (docs/step-time.md, "One rule
/// for predict and plan"). Nothing for another backend or a recipe without `run:`.
void command_switches(const Recipe& r, RunSettings& s);

}  // namespace recipebench
