#include "plan/selective_recompute.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "plan/analytical_costs.h"
#include "plan/step_time.h"

namespace recipebench {

namespace {

constexpr int kAttentionCell = static_cast<int>(ProfileComponent::kAttention);

bool has_mla(const ModelConfig& m) {
  return m.family == ModelFamily::kTransformer && m.attention == AttentionKind::kMla;
}

/// The attention mixer's forward seconds on `gpu` at the catalog's efficiencies (catalog_component_seconds): its
/// operations are the projections' dense GEMMs, then the attention core (plan/gpu_scaling.h component_operations).
CatalogSeconds attention_seconds(const ModelConfig& m, const ChunkShape& s, const SplitGpu& gpu) {
  std::vector<std::string> notes;  // the prediction's notes say the curves already
  return catalog_component_seconds(gpu.catalog, gpu.gpu, ProfileComponent::kAttention, m, s, notes);
}

/// The attention core's share of the attention mixer (core_attn).
double core_attention_share(const ModelConfig& m, const ChunkShape& s, const SplitGpu& gpu) {
  const CatalogSeconds a = attention_seconds(m, s, gpu);
  const double total = a.total();
  return total > 0 && a.operations.size() > 1 ? a.operations[1] / total : 0;
}

/// MLA's up projections' share of the attention mixer (mla_up_proj): q_b_proj (q_lora_rank -> heads x (nope +
/// rope), where q_lora_rank > 0) and kv_b_proj (kv_lora_rank -> heads x (nope + v)) of the mixer's parameters,
/// times the projections' share of its seconds.
double mla_up_projection_share(const ModelConfig& m, const ChunkShape& s, const SplitGpu& gpu) {
  if (!has_mla(m)) return 0;
  const double heads = static_cast<double>(m.num_attention_heads);
  const double q_up = m.q_lora_rank > 0 ? static_cast<double>(m.q_lora_rank) * heads *
                                              static_cast<double>(m.qk_nope_head_dim + m.qk_rope_head_dim)
                                        : 0;
  const double kv_up =
      static_cast<double>(m.kv_lora_rank) * heads * static_cast<double>(m.qk_nope_head_dim + m.v_head_dim);
  const double params = static_cast<double>(count_params(m).attention_layer);
  const CatalogSeconds a = attention_seconds(m, s, gpu);
  const double total = a.total();
  if (!(params > 0) || !(total > 0) || a.operations.empty()) return 0;
  return std::min(1.0, (q_up + kv_up) / params) * a.operations[0] / total;
}

/// The routed experts' activation share of moe_experts (moe_act): its memory-bound seconds over its total.
double expert_activation_share(const ModelConfig& m, const ChunkShape& s, const SplitGpu& gpu) {
  std::vector<std::string> notes;
  const CatalogSeconds e =
      catalog_component_seconds(gpu.catalog, gpu.gpu, ProfileComponent::kMoeExperts, m, s, notes);
  const double total = e.total();
  return total > 0 ? e.memory / total : 0;
}

/// Adds module `r`'s share of each component to `out` (see recomputed_shares).
void add_module_shares(RecomputeModule r, const ModelConfig& m, const ChunkShape& s, const SplitGpu& gpu,
                       ComponentCells& out) {
  const auto add = [&](ProfileComponent c, double share) { out[static_cast<int>(c)] += share; };
  switch (r) {
    case RecomputeModule::kCoreAttn:
      if (s.attention_layers > 0) add(ProfileComponent::kAttention, core_attention_share(m, s, gpu));
      return;
    case RecomputeModule::kLayernorm:
      add(ProfileComponent::kOther, kNormShareOfOther);
      return;
    case RecomputeModule::kMoeAct:
      if (moe_layers(m, s) > 0) add(ProfileComponent::kMoeExperts, expert_activation_share(m, s, gpu));
      return;
    case RecomputeModule::kMlp:
      add(ProfileComponent::kDenseMlp, 1);
      return;
    case RecomputeModule::kMoe:
      for (ProfileComponent c : {ProfileComponent::kMoeRouter, ProfileComponent::kMoeSharedExpert,
                                 ProfileComponent::kMoeDispatch, ProfileComponent::kMoeExperts,
                                 ProfileComponent::kMoeCombine, ProfileComponent::kMoeRest})
        add(c, 1);
      return;
    case RecomputeModule::kSharedExperts:
      add(ProfileComponent::kMoeSharedExpert, 1);
      return;
    case RecomputeModule::kMlaUpProj:
      if (s.attention_layers > 0) add(ProfileComponent::kAttention, mla_up_projection_share(m, s, gpu));
      return;
  }
}

}  // namespace

bool recompute_module_timed(const ModelConfig& m, RecomputeModule r) {
  return r != RecomputeModule::kMlaUpProj || has_mla(m);
}

ComponentCells recomputed_shares(const RecipeRecompute& r, const ModelConfig& m, const ChunkShape& s,
                                 const SplitGpu& gpu) {
  ComponentCells out{};
  if (r.granularity == "full") {
    const double f = recompute_fraction(r, s.layers());
    for (double& c : out) c = f;
    return out;
  }
  if (r.granularity != "selective") return out;
  std::vector<RecomputeModule> seen;  // a module named twice is run again once
  for (RecomputeModule mod : r.modules) {
    if (std::find(seen.begin(), seen.end(), mod) != seen.end()) continue;
    seen.push_back(mod);
    add_module_shares(mod, m, s, gpu, out);
  }
  for (double& c : out) c = std::min(1.0, c);
  return out;
}

RecomputedCollectives recomputed_collectives(const RecipeRecompute& r, const ModelConfig& m, const ChunkShape& s) {
  if (r.granularity != "selective") return RecomputedCollectives::all(recompute_fraction(r, s.layers()));
  RecomputedCollectives out;
  const double layers = static_cast<double>(s.layers());
  if (!(layers > 0)) return out;
  const bool moe = r.recomputes(RecomputeModule::kMoe);
  const bool shared = r.recomputes(RecomputeModule::kSharedExperts) && m.shared_expert_ffn > 0;
  const double dense = r.recomputes(RecomputeModule::kMlp) ? static_cast<double>(s.dense_mlp_layers) : 0;
  out.feed_forward_tp = (dense + (moe || shared ? moe_layers(m, s) : 0)) / layers;
  out.ep = moe ? 1 : 0;
  out.cp = r.recomputes(RecomputeModule::kCoreAttn) ? 1 : 0;
  return out;
}

SplitGpu recompute_split_gpu(const std::string& profile_gpu, const std::string& recipe_gpu) {
  const HardwareCatalog& c = hardware_catalog();
  if (const GpuSpec* g = find_gpu(profile_gpu)) return {c, *g};
  if (const GpuSpec* g = find_gpu(recipe_gpu)) return {c, *g};
  if (c.gpus.empty()) throw std::invalid_argument("a hardware catalog without GPUs");
  return {c, c.gpus.front()};
}

std::string selective_recompute_assumption(const RecipeRecompute& r, const ModelConfig& m,
                                           const std::string& split_gpu) {
  if (r.granularity != "selective") return "";
  std::vector<std::string> priced, idle;
  for (RecomputeModule mod : r.modules) {
    if (!recompute_module_timed(m, mod)) {
      idle.push_back(to_string(mod));
      continue;
    }
    switch (mod) {
      case RecomputeModule::kCoreAttn:
        priced.push_back("core_attn (the attention core's share of attention; CP's ring exchange again)");
        break;
      case RecomputeModule::kLayernorm:
        priced.push_back(fmt::format("layernorm ({:.0f}% of other: the two norms)", kNormShareOfOther * 100));
        break;
      case RecomputeModule::kMoeAct:
        priced.push_back("moe_act (the activation's memory-bound share of moe_experts)");
        break;
      case RecomputeModule::kMlp:
        priced.push_back("mlp (dense_mlp whole; its TP pair again)");
        break;
      case RecomputeModule::kMoe:
        priced.push_back("moe (the MoE block's components whole; its TP pair and EP collectives again)");
        break;
      case RecomputeModule::kSharedExperts:
        priced.push_back("shared_experts (moe_shared_expert whole; its TP pair again)");
        break;
      case RecomputeModule::kMlaUpProj:
        priced.push_back("mla_up_proj (the up projections' share of attention)");
        break;
    }
  }
  std::string out = fmt::format(
      "selective recompute: {} run again in each backward pass, timed as their forward's seconds under recompute "
      "(a component's shares split at the catalog's efficiencies on {}; docs/step-time.md, \"Selective "
      "recompute\")",
      priced.empty() ? std::string("no module") : fmt::format("{}", fmt::join(priced, ", ")), split_gpu);
  if (!idle.empty())
    out += fmt::format("; {}: nothing to run again in this model (no multi-latent attention)", fmt::join(idle, ", "));
  return out;
}

}  // namespace recipebench
