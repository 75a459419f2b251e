// The memory plan as text: `run --dry-run`'s table and validate's overflow message.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "plan/memory_plan.h"
#include "util/format.h"

namespace recipebench {

std::string gigabytes_text(double bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.1f", bytes / 1e9);
  return s;
}

namespace {

std::string row(const std::string& label, const std::vector<std::string>& cells) {
  char s[96];
  std::snprintf(s, sizeof s, "  %-44s", label.c_str());
  std::string out = s;
  for (const auto& c : cells) {
    std::snprintf(s, sizeof s, " %16s", c.c_str());
    out += s;
  }
  return out + "\n";
}

/// The plan's header and its table: one column per kind of pipeline rank (plan.kinds), one row per term.
std::string plan_table(const MemoryPlan& plan) {
  std::vector<const RankMemory*> k;
  for (size_t i : plan.kinds) k.push_back(&plan.ranks[i]);
  auto cells = [&](auto f) {
    std::vector<std::string> c;
    for (const RankMemory* r : k) c.push_back(f(*r));
    return c;
  };
  std::string out =
      plan.analytical
          ? "memory plan per GPU (GB; analytical: the recipe's stack, not recipebench's torch backend, which does not "
            "build this model; parameters from the exact counts, activations by Korthikanti et al. 2022's per-layer "
            "formula for each layer kind, gradients and optimizer state as Megatron-Core's distributed optimizer "
            "holds them, loss and reserve as the torch backend's; "
            "docs/memory-plan.md, \"Analytical plan\"):\n"
          : "memory plan per GPU (GB; torch backend; docs/memory-plan.md):\n";
  out += row("", cells([](const RankMemory& r) { return r.kind + " " + std::to_string(r.pp_rank); }));
  out += row("holds", cells([](const RankMemory& r) {
               return std::string(r.embedding ? "emb" : "") + (r.embedding && r.output_layer ? "+" : "") +
                      (r.output_layer ? "output" : "") + (r.embedding || r.output_layer ? ", " : "") +
                      counted(r.layers, "layer");
             }));
  out += row("parameters (dense + experts, billions)", cells([](const RankMemory& r) {
               return gigabytes_text(static_cast<double>(r.dense_params)) + " + " + gigabytes_text(static_cast<double>(r.expert_params));
             }));
  out += row("parameters", cells([](const RankMemory& r) { return gigabytes_text(r.params); }));
  out += row(plan.grad_term, cells([](const RankMemory& r) { return gigabytes_text(r.grads); }));
  out += row(plan.optimizer_row, cells([](const RankMemory& r) { return gigabytes_text(r.optimizer); }));
  out += row("activations per microbatch", cells([](const RankMemory& r) { return gigabytes_text(r.activations_per_microbatch); }));
  out += row("microbatches (VPP: chunk passes) in flight",
             cells([](const RankMemory& r) { return std::to_string(r.microbatches_in_flight); }));
  out += row("activations at the peak", cells([](const RankMemory& r) { return gigabytes_text(r.activations_in_flight); }));
  out += row("transient at the peak", cells([](const RankMemory& r) { return gigabytes_text(r.transient); }));
  out += row("peak", cells([](const RankMemory& r) { return gigabytes_text(r.peak); }));
  return out;
}

/// The lines under the table: where the peak is and whether it fits, the reserve, how the experts' state is
/// sharded, what is not modelled and the fixed_capacity dispatch's rows.
std::string plan_verdict(const MemoryPlan& plan) {
  std::string out;
  const RankMemory& w = plan.worst();
  char line[512];
  const std::string verdict = plan.fits()             ? "fits"
                              : plan.inside_reserve() ? "does NOT fit with its reserve"
                                                      : "does NOT fit; largest term: " + plan.largest_term();
  std::snprintf(line, sizeof line, "  peak at: %s (%s); %s memory %s GB: %s\n", w.peak_phase.c_str(),
                w.transient_term.c_str(), plan.gpu.c_str(), gigabytes_text(plan.gpu_memory).c_str(), verdict.c_str());
  out += line;
  out += "  reserve beside the peak: " + plan.reserve.text(w.peak) + "; " + gigabytes_text(std::abs(plan.spare_bytes())) +
         (plan.spare_bytes() >= 0 ? " GB to spare" : " GB short") + " (docs/memory-plan.md, \"Reserve\")\n";
  if (plan.experts_in_distributed_optimizer)
    out += "  (EP 1, TP 1: the experts are in the DP-sharded distributed optimizer with the dense parameters)\n";
  else if (plan.expert_state_shards > 1)
    out += "  (experts' optimizer state sharded over EDP = " + std::to_string(plan.expert_state_shards) +
           " ranks; dense over DP)\n";
  if (!plan.not_modelled.empty()) {
    out += "  not modelled:";
    for (size_t i = 0; i < plan.not_modelled.size(); ++i) out += (i ? "; " : " ") + plan.not_modelled[i];
    out += "\n";
  }
  if (plan.ep_capacity_rows > 0)
    out += "  (bench.ep_dispatch fixed_capacity: each MoE layer's experts run on and keep " +
           std::to_string(plan.ep_capacity_rows) +
           " received rows, padding included: EP x max_tokens_per_gpu / TP x top_k)\n";
  return out;
}

}  // namespace

std::string format_memory_plan(const MemoryPlan& plan) { return plan_table(plan) + plan_verdict(plan); }

std::string memory_overflow_message(const MemoryPlan& plan) {
  if (plan.fits()) return "";
  const RankMemory& w = plan.worst();
  const std::string needs =
      "the " + w.kind + " (pipeline rank " + std::to_string(w.pp_rank) + ") needs " + gigabytes_text(w.peak) + " GB at its peak";
  const std::string largest = "largest term: " + plan.largest_term() + " (" +
                              gigabytes_text(std::max({w.params, w.grads, w.optimizer, w.activations_in_flight, w.transient})) +
                              " GB)";
  if (plan.inside_reserve())
    return needs + " and a reserve of " + plan.reserve.text(w.peak) + " beside it (CUDA context, NCCL buffers, the " +
           "plan's error; docs/memory-plan.md, \"Reserve\"), " + gigabytes_text(-plan.spare_bytes()) + " GB more than the " +
           plan.gpu + "'s " + gigabytes_text(plan.gpu_memory) + " GB; " + largest;
  return needs + ", more than the " + plan.gpu + "'s " + gigabytes_text(plan.gpu_memory) + " GB; " + largest;
}

std::string memory_plan_text(const Recipe& recipe, const ModelConfig& model, const PlanOptions& o) {
  return format_memory_plan(plan_memory(recipe, model, build_rank_map(recipe, model), o));
}

}  // namespace recipebench
