// The step-time model without a profile (docs/step-time.md, "Analytical mode"): each component's seconds per unit of
// work from the catalog's per-operation efficiencies of the target GPU (catalog/efficiency.yaml), so any model whose
// widths are known is timed, marked analytical. Pure arithmetic, no libtorch.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "catalog/hardware.h"
#include "layout/rank_map.h"
#include "plan/compute_profile.h"
#include "recipe/recipe.h"

namespace recipebench {

/// The curve of `op` for `gpu`: its own, else the first GPU's in catalog order that has one (then `borrowed_from`
/// names that GPU: the same fraction of the target's peak is assumed); nullptr when no GPU has one.
const EfficiencyCurve* efficiency_or_borrowed(const HardwareCatalog& catalog, const GpuSpec& gpu, Operation op,
                                              std::string& borrowed_from);

/// One forward pass's seconds of a component at the catalog's efficiencies, by part: its memory-bound kernels'
/// bytes (plan/analytical_work.h analytical_memory_bytes) at the memory-bound curve, and for a matrix component each
/// of its operations (plan/gpu_scaling.h component_operations, in that order; 0 for one without work) at its own
/// curve. total() is what analytical_costs prices the component at.
struct CatalogSeconds {
  double memory = 0;
  std::vector<double> operations;
  double total() const {
    double s = memory;
    for (double o : operations) s += o;
    return s;
  }
};

/// CatalogSeconds of component `c` of chunk `s` of `m` on `gpu` (curves as efficiency_or_borrowed finds them; each
/// curve's note appended to `notes` once). Throws std::invalid_argument as analytical_costs does.
CatalogSeconds catalog_component_seconds(const HardwareCatalog& catalog, const GpuSpec& gpu, ProfileComponent c,
                                           const ModelConfig& m, const ChunkShape& s, std::vector<std::string>& notes);

/// Unit costs of model `m` on `gpu` with no profile, at the chunk shape `shape` (its tokens, row tokens, TP and EP
/// key the curves; layer counts do not matter): per component, seconds per unit of forward work = sum over its
/// operations (plan/gpu_scaling.h component_operations) of work share / (efficiency x peak), peak the dense BF16
/// FLOP/s or for bandwidth-bound operations the HBM bandwidth; a backward pass 2 x that per unit (the input's and
/// the weights' gradients), a recompute the forward's; each pass's fixed part the weights streamed at the optimizer
/// curve's bandwidth, which also times the optimizer step. UnitCosts::sources stays empty (no profile) and
/// UnitCosts::notes says each curve used or borrowed. Throws std::invalid_argument when an operation the model runs
/// has no curve on any GPU, or the GPU lacks a peak or bandwidth.
UnitCosts analytical_costs(const HardwareCatalog& catalog, const GpuSpec& gpu, const ModelConfig& m, ChunkShape shape);

/// The one rule by which a layout's compute is priced in the analytical mode (docs/step-time.md, "Analytical mode"),
/// for predict and plan alike: `costs` made by analytical_costs are read again at `recipe`'s own shape, the first
/// pipeline rank's first chunk of `map` (its tokens per microbatch, row tokens, TP and EP key the curves), on the
/// catalog GPU `costs.gpu`; nullopt for costs of profiles (their GPU scaling is worked out per layout apart:
/// plan/step_time.h scaling_to_recipe). Throws std::invalid_argument as analytical_costs does, or when costs.gpu is
/// not in the catalog.
std::optional<UnitCosts> analytical_costs_at_layout(const UnitCosts& costs, const Recipe& recipe,
                                                    const ModelConfig& model, const RankMap& map);

}  // namespace recipebench
