// A proposed layout as a TorchTitan launch (docs/step-time.md, "Commands for your stack"), where TorchTitan runs it:
// the parallel degrees, the pipeline schedule and layers per stage (VPP), activation checkpointing and the batches,
// in the flags the launch check reads (recipe/launch_check.h). No libtorch here.
#pragma once

#include <string>
#include <vector>

#include "catalog/models.h"
#include "recipe/recipe.h"

namespace recipebench {

/// Why TorchTitan cannot run `r` (a planned recipe of model `m`), one clause per reason; empty when it can. Its
/// limits (torchtitan/config/job_config.py, torchtitan/models): no Qwen3.5 / Qwen3-Next model (Gated DeltaNet) among
/// its models; FP32 masters and moments only (no precision-aware optimizer); activation checkpointing none or full
/// (every layer; its selective modes are op-level or every N-th layer, not Megatron-LM's core_attn nor a block of a
/// stage's first layers); the all-to-all token dispatch only; stages of even layers (layers per stage); ETP 1 or TP.
std::vector<std::string> torchtitan_refusals(const Recipe& r, const ModelConfig& m);

/// The `run` command of `r` for TorchTitan's torchtitan.train under torchrun (`--nnodes` x `--nproc_per_node` =
/// gpu.count), one flag per line; the model, tokenizer and data are left to ${CONFIG_FILE} (the user's TOML, with
/// model.name and model.flavor). Throws std::invalid_argument where torchtitan_refusals(r, m) is not empty or the
/// layout has no rows per microbatch or partial nodes.
std::string torchtitan_command(const Recipe& r, const ModelConfig& m);

}  // namespace recipebench
