// The command backend (docs/command-backend.md): runs a recipe's own command (bench.command, else its `run:`
// block) with the recipe's env, once per node, tees its output to a log beside the run record, and reads the
// per-step lines with a log parser (logparse/log_reader.h); or reads a finished log (`recipebench import`).
// No libtorch.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "recipe/recipe.h"

namespace recipebench {

/// The command backend's capability table: Launch::kPerNode (the command decides the layout and starts its own
/// ranks); CPU or CUDA; synthetic or file rows (the command reads what it reads).
BackendCapabilities command_backend_capabilities();

/// Registers the command backend under "command".
void register_command_backend();

/// The command of `recipe`: bench.command, else `run`; nullopt when it has neither.
std::optional<std::string> recipe_command(const Recipe& recipe);

/// The shell text the backend runs: one `export NAME="value"` line per entry of the recipe's env block (in the
/// document's order; `"`, `\` and backquote escaped, so `$VAR` still expands), then `command`.
std::string command_script(const Recipe& recipe, const std::string& command);

/// The variables the command gets on top of recipebench's environment: NODE_RANK and NNODES (this node among the
/// run's nodes: GROUP_RANK or SLURM_NODEID, and SLURM_NNODES or WORLD_SIZE / LOCAL_WORLD_SIZE; else 0 and 1),
/// MASTER_ADDR and MASTER_PORT (as launch/launch.h's rank_env reads them), RECIPEBENCH_LOG (the log being written),
/// RECIPEBENCH_STEPS (the steps the record needs). `get` reads a variable (nullptr when unset).
std::vector<std::pair<std::string, std::string>> command_environment(
    const RunOptions& options, const std::function<const char*(const char*)>& get);

}  // namespace recipebench
