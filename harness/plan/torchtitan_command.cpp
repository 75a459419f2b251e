#include "plan/torchtitan_command.h"

#include <stdexcept>

#include <fmt/format.h>

#include "plan/optimizer_traffic.h"  // optimizer_state_label
#include "plan/torchrun_text.h"

namespace recipebench {

std::vector<std::string> torchtitan_refusals(const Recipe& r, const ModelConfig& m) {
  const RecipeLayout& l = r.layout;
  std::vector<std::string> out;
  if (m.family == ModelFamily::kQwen35)
    out.push_back("no Qwen3.5 / Qwen3-Next model (Gated DeltaNet) among torchtitan/models");
  if (r.optimizer.master_weights != MasterWeights::kFp32 || r.optimizer.exp_avg_dtype != StateDtype::kFp32 ||
      r.optimizer.exp_avg_sq_dtype != StateDtype::kFp32)
    out.push_back("optimizer state " + optimizer_state_label(r.optimizer) +
                  " (TorchTitan keeps FP32 masters and moments: no precision-aware optimizer)");
  const bool full_all = l.recompute.granularity == "full" && l.recompute.method == "uniform" && l.recompute.num_layers == 1;
  if (l.recompute.granularity != "none" && !full_all)
    out.push_back("recompute " + l.recompute.granularity +
                  (l.recompute.method.empty() ? "" : " " + l.recompute.method + " " + std::to_string(l.recompute.num_layers)) +
                  " (TorchTitan's activation checkpointing is none, full over every layer, or op-level / every N-th "
                  "layer selective)");
  if (l.dispatcher != Dispatcher::kAlltoall)
    out.push_back("dispatcher " + to_string(l.dispatcher) + " (TorchTitan's MoE dispatches by all-to-all)");
  if (l.first_stage_layers || l.last_stage_layers)
    out.push_back("lighter first and last stages (TorchTitan splits stages of even layers per stage)");
  if (l.effective_etp() != 1 && l.effective_etp() != l.tp)
    out.push_back(fmt::format("ETP {} (TorchTitan runs ETP 1 or TP)", l.effective_etp()));
  return out;
}

std::string torchtitan_command(const Recipe& r, const ModelConfig& m) {
  if (!torchtitan_refusals(r, m).empty())
    throw std::invalid_argument("TorchTitan does not run this layout: " + torchtitan_refusals(r, m).front());
  const RecipeLayout& l = r.layout;
  if (!l.rows_per_microbatch || r.gpu.per_node < 1 || r.gpu.count % r.gpu.per_node != 0 || l.dp < 1)
    throw std::invalid_argument("a TorchTitan command needs rows per microbatch and whole nodes");
  std::vector<std::string> f = {
      fmt::format("--parallelism.tensor_parallel_degree {}", l.tp),
      fmt::format("--parallelism.context_parallel_degree {}", l.cp),
      fmt::format("--parallelism.pipeline_parallel_degree {}", l.pp)};
  if (l.pp > 1) {
    f.push_back(std::string("--parallelism.pipeline_parallel_schedule ") + (l.vpp > 1 ? "Interleaved1F1B" : "1F1B"));
    f.push_back(fmt::format("--parallelism.pipeline_parallel_layers_per_stage {}", m.num_layers / (l.pp * l.vpp)));
    f.push_back(fmt::format("--parallelism.pipeline_parallel_microbatch_size {}", *l.rows_per_microbatch));
  }
  f.push_back(fmt::format("--parallelism.expert_parallel_degree {}", l.ep));
  f.push_back(fmt::format("--parallelism.expert_tensor_parallel_degree {}", l.effective_etp()));
  f.push_back(fmt::format("--parallelism.data_parallel_shard_degree {}", l.dp));
  f.push_back("--parallelism.data_parallel_replicate_degree 1");
  f.push_back(fmt::format("--training.seq_len {}", r.workload.row_tokens));
  f.push_back(fmt::format("--training.global_batch_size {}", r.workload.global_batch));
  // Unpipelined: the local batch is one microbatch (the rest by gradient accumulation); pipelined: each DP rank's
  // share of the step, cut into microbatches of pipeline_parallel_microbatch_size.
  f.push_back(fmt::format("--training.local_batch_size {}",
                          l.pp > 1 ? r.workload.global_batch / l.dp : *l.rows_per_microbatch));
  f.push_back("--activation_checkpoint.mode " + std::string(l.recompute.granularity == "full" ? "full" : "none"));
  return torchrun_lines(
      "# TorchTitan (torchtitan.train); CONFIG_FILE: the model's TOML (model.name / flavor, tokenizer, data)\n",
      r.gpu.count / r.gpu.per_node, r.gpu.per_node, "--nproc_per_node", "-m torchtitan.train",
      "--job.config_file ${CONFIG_FILE}", f);
}

}  // namespace recipebench
