// What a backward pass runs again under layout.recompute (docs/step-time.md, "Recompute" and "Selective
// recompute"): per profile component the fraction of its forward seconds, and the collectives issued again. Full
// recompute re-runs the recomputed layers whole; selective recompute (Megatron-Core's --recompute-granularity
// selective --recompute-modules, megatron/core/transformer/transformer_config.py recompute_modules) only its
// modules, each mapped to the components and the share of them it is. Pure arithmetic, no libtorch.
#pragma once

#include <string>
#include <vector>

#include "catalog/hardware.h"
#include "catalog/models.h"
#include "plan/compute_profile.h"
#include "plan/pass_collectives.h"
#include "recipe/recipe.h"

namespace recipebench {

/// The norms' share of the `other` component: the two RMSNorms' 4 h of the 10 h elements per token and layer that
/// `other`'s memory-bound kernels move (two norms 2 h each, two residual adds 3 h each: plan/analytical_work.h's
/// table), taken for the layernorm module in the analytical mode and for a profile alike.
constexpr double kNormShareOfOther = 0.4;

/// The catalog and GPU whose efficiencies split a component between modules.
struct SplitGpu {
  const HardwareCatalog& catalog;
  const GpuSpec& gpu;
};

/// Whether the step-time model prices selective recompute of `r` for `m`: every module, but mla_up_proj only where
/// the model has multi-latent attention (elsewhere it re-runs nothing and is said so).
bool recompute_module_timed(const ModelConfig& m, RecomputeModule r);

/// Per component of chunk `s` of `m`, the fraction of its forward seconds (work and kernel launches alike) the
/// backward pass runs again under `r`:
///   full:  recompute_fraction(r, layers) in every component (pass_cells leaves out the embedding and the LM head);
///   selective, each module's share summed per component and capped at 1:
///     core_attn      attention: its core (the score and value products) over the whole attention mixer, both at the
///                    catalog's efficiencies on `gpu` (CatalogSeconds of plan/analytical_costs.h: core seconds /
///                    total; the projections and the memory-bound norms, rotary and gate are not re-run);
///     layernorm      other: kNormShareOfOther (both norms of every layer);
///     moe_act        moe_experts: its memory-bound seconds (the SwiGLU activation) over its total, on `gpu`;
///     mlp            dense_mlp: 1 (the dense layers' MLP whole);
///     moe            moe_router, moe_shared_expert, moe_dispatch, moe_experts, moe_combine, moe_rest: 1 each;
///     shared_experts moe_shared_expert: 1;
///     mla_up_proj    attention (MLA only): the up projections' parameters (q_b_proj, kv_b_proj) over the mixer's,
///                    times the projections' seconds over the total on `gpu` (RoPE's application not counted);
///   none: 0.
/// Throws std::invalid_argument as catalog_component_seconds does (an operation without any curve).
ComponentCells recomputed_shares(const RecipeRecompute& r, const ModelConfig& m, const ChunkShape& s,
                                 const SplitGpu& gpu);

/// The collectives the backward pass of chunk `s` issues again under `r`: full recompute all of them in the
/// recomputed layers (RecomputedCollectives::all(recompute_fraction)); selective those inside its modules:
/// core_attn CP's ring exchange (ring attention runs inside the attention core), mlp the dense layers' feed-forward
/// TP pair, moe the MoE layers' feed-forward TP pair and EP's dispatch, combine and routing collectives,
/// shared_experts the MoE layers' feed-forward TP pair (where the model has a shared expert: its column- and
/// row-parallel layers hold it); layernorm, moe_act and mla_up_proj none.
RecomputedCollectives recomputed_collectives(const RecipeRecompute& r, const ModelConfig& m, const ChunkShape& s);

/// The GPU whose catalog efficiencies (the process's catalog) split a component between modules: the profiles'
/// (`profile_gpu`), else the recipe's, else the catalog's first GPU (a CPU profile of a CPU recipe). Throws
/// std::invalid_argument for an empty catalog.
SplitGpu recompute_split_gpu(const std::string& profile_gpu, const std::string& recipe_gpu);

/// The assumption line of selective recompute for `m`: the modules priced and the seconds basis of each, the GPU
/// whose efficiencies split them (`split_gpu`, recompute_split_gpu's), those that re-run nothing in this model; empty
/// for another granularity.
std::string selective_recompute_assumption(const RecipeRecompute& r, const ModelConfig& m,
                                           const std::string& split_gpu);

}  // namespace recipebench
