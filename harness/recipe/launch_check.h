// The recipe's `run` command against its own fields (docs/launch-check.md): the launch command is what the measured
// run ran, so a Megatron-LM / slime / torchrun flag in it that disagrees with the recipe's layout, workload,
// optimizer or GPU fields means one of the two is not what was measured: validate warns, and fails with --strict.
#pragma once

#include <string>
#include <vector>

#include "catalog/models.h"
#include "recipe/diagnostic.h"
#include "recipe/recipe.h"
#include "recipe/source_doc.h"

namespace recipebench {

/// One flag of a launch command with a literal value: "--tensor-model-parallel-size 2" or "--lr=1e-5", or a switch
/// ("--sequence-parallel", value empty).
struct LaunchFlag {
  std::string name;     ///< with its dashes, e.g. "--tensor-model-parallel-size"
  std::string value;    ///< the next word (or what follows '='), quotes removed; empty for a switch
  bool literal = true;  ///< false when the value holds a shell expansion that the run block's own assignments do
                        ///< not resolve ($NAME unset in the block, ${...[@]}, $(...), `...`): not compared
  std::string written;  ///< the value as written when a variable was resolved ("$TP"); empty otherwise
  int line = 1;         ///< line of the command (1-based) where the flag is written
  size_t offset = 0;    ///< byte offset of the flag's word in the command
  int command = 0;      ///< which simple command of the command text (0-based) it is an argument of
  /// The words after the value up to the next flag, as written: the further values of a flag that takes several
  /// (argparse's nargs='*', e.g. Megatron-LM's --recompute-modules core_attn moe_act). Only such flags read them.
  std::vector<std::string> more_values;
  bool more_literal = true;  ///< false when one of more_values holds a shell expansion
};

/// The flags of a shell command as the shell hands them to the programs it runs (recipe/shell_words.h): the words
/// after the program of every simple command whose program is not a builtin or text utility (echo, cat, export,
/// ...); here-document bodies, redirection targets and comments are not words. A word starting with "--" is a flag,
/// and the word after it its value unless that word is itself a flag (then the flag is a switch). A flag given twice
/// in one command comes twice, in order (the last one is what argparse keeps). A value of $NAME or ${NAME} (alone or
/// within the word) is resolved from the last NAME=value (or `export NAME=value`) written earlier in the command
/// text with a literal value; the flag keeps the value as written in LaunchFlag::written. The string a shell runs
/// with -c (`srun ... bash -c "torchrun ..."`) is read as commands too, its flags located where they are written.
std::vector<LaunchFlag> launch_flags(const std::string& command);

/// Megatron-LM's switch for optimizer.grad_reduce_dtype bf16 (with --bf16 it reduces in FP32 unless given): the
/// launch check's row (kFieldFlags) and the Megatron emitter (plan/megatron_command.h) both read this name.
inline constexpr const char* kGradReduceBf16Flag = "--grad-reduce-in-bf16";
/// Megatron-LM's switch for optimizer.grad_reduce_dtype fp32 (its default with --bf16).
inline constexpr const char* kGradReduceFp32Flag = "--accumulate-allreduce-grads-in-fp32";

/// The run command's disagreements with the recipe, each a diagnostic of severity "warning".
struct LaunchCheck {
  Diagnostics stated;    ///< with a field the recipe writes: the recipe contradicts itself (validate --strict fails)
  Diagnostics unstated;  ///< with a field the recipe leaves to its default or out (e.g. written before the field
                         ///< existed), or a compared flag whose value is a variable the run block does not set (not
                         ///< compared, said so): a warning, also with --strict
};

/// Compares every flag of `r`'s `run` command (src.value["run"]) that names a recipe field with the value the
/// recipe gives (or its default): the parallel sizes (TP, PP, VPP, CP, EP, ETP), the layer split, sequence parallel,
/// recompute, max tokens per GPU, global batch, the MoE dispatcher, the optimizer's
/// schedule and Adam settings, the precision-aware state (--use-precision-aware-optimizer, --exp-avg-dtype,
/// --exp-avg-sq-dtype, --no-store-param-remainders) and the GPUs (slime's --actor-num-nodes x
/// --actor-num-gpus-per-node, torchrun's --nnodes x --nproc-per-node). Each disagreement is located at the recipe's
/// field (at its nearest written ancestor when the field is absent), naming the flag, its value and its line in the
/// file (traced through the scalar's style, recipe/scalar_source.h; left out when it cannot be traced), in
/// LaunchCheck::stated or ::unstated. A flag given twice in one command is judged by its last value (argparse keeps
/// the last); integers are compared by value as Python's int() reads them ("+2" is 2). A flag the table does not
/// know is not compared; a known flag whose value the block's assignments do not resolve is a warning saying so.
/// Also: --seq-length / --micro-batch-size against workload.row_tokens / layout.rows_per_microbatch unless the
/// command batches dynamically (--use-dynamic-batch-size); the model's shape flags (--num-layers, --hidden-size,
/// --num-experts, --moe-router-topk, ...) against `model` (the model that ran, recipe/run_model.h; nullptr or a
/// model of stated counts: not compared); a Megatron-LM switch the recipe sets that the command leaves out
/// (--sequence-parallel, --use-precision-aware-optimizer), unless an unresolved expansion could pass it;
/// --num-layers-per-virtual-pipeline-stage as VPP = layers / PP / value; TorchTitan's --parallelism.* and
/// --training.* flags; torchrun's elastic --nnodes MIN:MAX against its MAX. No `run`: no diagnostics.
LaunchCheck check_launch_command(const Recipe& r, const SourceDoc& src, const ModelConfig* model = nullptr);

}  // namespace recipebench
