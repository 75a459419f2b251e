// What a training log says about the run that wrote it (docs/command-backend.md, "What the log says about its
// run"): its world size, parallel degrees, global batch and sequence length, as the stack printed them in its header
// (Megatron-LM's "using world size" line and arguments block, TorchTitan's device mesh, batch line and config,
// the Hugging Face Trainer's total train batch size), and the check of those facts (and of each step line's global
// batch) against the recipe the log is imported with.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "metrics/metrics.h"
#include "recipe/diagnostic.h"
#include "recipe/recipe.h"
#include "recipe/source_doc.h"

namespace recipebench {

struct ParsedLog;

/// One fact a log states: its value and where it printed it.
struct LogFact {
  int64_t value = 0;
  int64_t line = 0;     ///< 1-based line of the log
  int column = 0;       ///< 1-based column of the value in the cleaned line (ANSI codes, rank prefix removed)
  std::string printed;  ///< the name the log gives it: "world size", "global_batch_size", "device mesh tp", ...
};

/// The facts a log states about its run; a fact the log does not print is absent. When a log states a fact
/// twice (a restarted run), the last statement is kept.
struct LogRunFacts {
  std::optional<LogFact> world_size;    ///< GPUs of the run
  std::optional<LogFact> global_batch;  ///< rows per optimizer step
  std::optional<LogFact> row_tokens;    ///< tokens per row (Megatron-LM seq_length, TorchTitan sequence length)
  std::optional<LogFact> tp, pp, vpp, cp, ep, dp;
  /// Reads one cleaned line (no ANSI codes, no rank prefix; not a step line) numbered `line`: Megatron-LM's
  /// "using world size: 48, data-parallel size: 4, ..., tensor-model-parallel size: 2, pipeline-model-parallel
  /// size: 6" and its arguments block ("  global_batch_size ........ 256"); TorchTitan's "Building 3-D device mesh
  /// with ['pp', 'dp_shard', 'tp'], [2, 4, 2]", "... local batch size 8, global batch size 64, ..., sequence
  /// length 8192, ..." and "Running with args: {...}" ('tensor_parallel_degree': 2, ...); the Hugging Face
  /// Trainer's "Total train batch size (w. parallel, distributed & accumulation) = 64".
  void read(const std::string& text, int64_t line);
};

/// What the log states that contradicts `recipe`, one located diagnostic per fact (`log_file`:line:col, the name the
/// log gives it, the log's value, expected the recipe's value with its field and, when `recipe_source` is given,
/// its file:line:col): world size against gpu.count, global batch against workload.global_batch, sequence length
/// against workload.row_tokens, each degree against layout.tp / pp / vpp / cp / ep / dp; then, when a step of the
/// timed `window` prints a global batch other than workload.global_batch, the first kept step that does (a batch-size
/// rampup before the window labels no figure). Empty when the log agrees or states nothing.
Diagnostics check_log_against_recipe(const ParsedLog& log, const std::string& log_file, const Recipe& recipe,
                                     const SourceDoc* recipe_source, StepWindow window);

}  // namespace recipebench
