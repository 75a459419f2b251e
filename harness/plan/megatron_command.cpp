#include "plan/megatron_command.h"

#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "plan/torchrun_text.h"
#include "recipe/launch_check.h"

namespace recipebench {

namespace {

/// A priced switch as the recipe's bench block, the run's settings and Megatron-LM's command say it.
struct MegatronSwitch {
  std::optional<bool> RecipeBench::*bench;
  bool RunSettings::*settings;
  const char* flag;
};

/// The one table of the priced switches' Megatron-LM flags (arguments.py), in the order megatron_command writes them.
constexpr MegatronSwitch kMegatronSwitches[] = {
    {&RecipeBench::overlap_grad_reduce, &RunSettings::overlap_grad_reduce, "--overlap-grad-reduce"},
    {&RecipeBench::overlap_param_gather, &RunSettings::overlap_param_gather, "--overlap-param-gather"},
    {&RecipeBench::overlap_p2p_comm, &RunSettings::overlap_p2p_comm, "--overlap-p2p-comm"},
    {&RecipeBench::overlap_tp_comm, &RunSettings::overlap_tp_comm, "--tp-comm-overlap"},
};

/// The one table of the recipe fields that Megatron-LM states by a flag with a value list or a dtype switch
/// (arguments.py): selective recompute's modules, and the gradient buffers' dtype: with --bf16 Megatron-LM
/// accumulates and reduces the gradients in FP32 (optimizer.grad_reduce_dtype fp32, no flag) unless
/// --grad-reduce-in-bf16 says bf16 (Megatron-Bridge's ddp.grad_reduce_in_fp32 false; docs/memory-plan.md,
/// "Analytical plan"); the flag's name is the launch check's (recipe/launch_check.h kGradReduceBf16Flag).
constexpr const char* kRecomputeModulesFlag = "--recompute-modules";

/// "--recompute-modules layernorm moe_act" for a selective recompute whose modules are not the default core_attn
/// alone; empty otherwise.
std::string recompute_modules_flag(const RecipeRecompute& rc) {
  if (rc.granularity != "selective" || rc.modules == std::vector<RecomputeModule>{RecomputeModule::kCoreAttn}) return "";
  std::string out = kRecomputeModulesFlag;
  for (RecomputeModule m : rc.modules) out += std::string(" ") + to_string(m);
  return out;
}

/// The parallel sizes and the layer split (Megatron-LM's arguments.py names).
void parallel_flags(const RecipeLayout& l, std::vector<std::string>& out) {
  out.push_back(fmt::format("--tensor-model-parallel-size {}", l.tp));
  out.push_back(fmt::format("--pipeline-model-parallel-size {}", l.pp));
  if (l.vpp > 1) out.push_back(fmt::format("--num-virtual-stages-per-pipeline-rank {}", l.vpp));
  out.push_back(fmt::format("--context-parallel-size {}", l.cp));
  out.push_back(fmt::format("--expert-model-parallel-size {}", l.ep));
  out.push_back(fmt::format("--expert-tensor-parallel-size {}", l.effective_etp()));
  if (l.first_stage_layers) out.push_back(fmt::format("--decoder-first-pipeline-num-layers {}", *l.first_stage_layers));
  if (l.last_stage_layers) out.push_back(fmt::format("--decoder-last-pipeline-num-layers {}", *l.last_stage_layers));
  if (l.sequence_parallel) out.push_back("--sequence-parallel");
  if (l.recompute.granularity != "none") {
    out.push_back("--recompute-granularity " + l.recompute.granularity);
    if (const std::string modules = recompute_modules_flag(l.recompute); !modules.empty()) out.push_back(modules);
    if (l.recompute.granularity == "full") {
      out.push_back("--recompute-method " + l.recompute.method);
      out.push_back(fmt::format("--recompute-num-layers {}", l.recompute.num_layers));
    }
  }
  out.push_back(std::string("--moe-token-dispatcher-type ") + to_string(l.dispatcher));
  if (l.dispatcher == Dispatcher::kFlex) out.push_back("--moe-enable-deepep");  // flex runs DeepEP's kernels
}

/// Batches, the optimizer-state form (--use-precision-aware-optimizer keeps BF16 + remainder masters), the
/// distributed optimizer and the overlap switches the prediction priced.
void step_flags(const Recipe& r, std::vector<std::string>& out) {
  const RecipeLayout& l = r.layout;
  out.push_back(fmt::format("--seq-length {}", r.workload.row_tokens));
  out.push_back(fmt::format("--micro-batch-size {}", *l.rows_per_microbatch));
  out.push_back(fmt::format("--global-batch-size {}", r.workload.global_batch));
  out.push_back("--bf16");
  out.push_back("--use-distributed-optimizer");
  if (r.optimizer.master_weights == MasterWeights::kBf16Remainder) out.push_back("--use-precision-aware-optimizer");
  if (r.optimizer.exp_avg_dtype == StateDtype::kBf16) out.push_back("--exp-avg-dtype bf16");
  if (r.optimizer.exp_avg_sq_dtype == StateDtype::kBf16) out.push_back("--exp-avg-sq-dtype bf16");
  if (r.optimizer.grad_reduce_dtype == StateDtype::kBf16) out.push_back(kGradReduceBf16Flag);
  for (const MegatronSwitch& w : kMegatronSwitches)
    if ((r.bench.*w.bench).value_or(false)) out.push_back(w.flag);
}

}  // namespace

std::string megatron_command(const Recipe& r) {
  if (!r.layout.rows_per_microbatch || r.gpu.per_node < 1 || r.gpu.count % r.gpu.per_node != 0)
    throw std::invalid_argument("a Megatron-LM command needs rows per microbatch and whole nodes");
  std::vector<std::string> flags;
  parallel_flags(r.layout, flags);
  step_flags(r, flags);
  std::string out = "# Megatron-LM (pretrain_gpt.py); MODEL_ARGS: the model's widths, DATA_ARGS: tokenizer and data\n";
  if (r.layout.dispatcher == Dispatcher::kFlex)
    out += "# flex with DeepEP: --moe-enable-deepep (Megatron-Core 0.13; later --moe-flex-dispatcher-backend deepep)\n";
  return torchrun_lines(out, r.gpu.count / r.gpu.per_node, r.gpu.per_node, "--nproc-per-node", "pretrain_gpt.py",
                        "${MODEL_ARGS[@]} ${DATA_ARGS[@]}", flags);
}

void command_switches(const Recipe& r, RunSettings& s) {
  if (s.backend != "command" || !r.doc.is_object() || !r.doc.contains("run") || !r.doc["run"].is_string()) return;
  const std::vector<LaunchFlag> flags = launch_flags(r.doc["run"].get<std::string>());
  for (const MegatronSwitch& w : kMegatronSwitches)
    for (const LaunchFlag& f : flags)
      if (f.name == w.flag) s.*w.settings = true;
}

}  // namespace recipebench
