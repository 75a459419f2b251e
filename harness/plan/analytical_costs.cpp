#include "plan/analytical_costs.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "plan/analytical_work.h"
#include "plan/gpu_scaling.h"

namespace recipebench {

namespace {


/// Reached rate of `op` on `gpu` at `key` (FLOP/s or bytes/s), with the note of where its curve came from (once).
double reached_rate(const HardwareCatalog& catalog, const GpuSpec& gpu, Operation op, double key,
                    std::vector<std::string>& notes) {
  std::string borrowed;
  const EfficiencyCurve* curve = efficiency_or_borrowed(catalog, gpu, op, borrowed);
  if (curve == nullptr)
    throw std::invalid_argument(std::string("no efficiency of ") + to_string(op) +
                                " for any GPU in the catalog: the analytical mode cannot time it");
  const double peak = operation_peak(gpu, op);
  if (!(peak > 0)) throw std::invalid_argument("the catalog has no peak of " + gpu.name);
  const std::string note =
      borrowed.empty() ? fmt::format("{} on {}: the catalog's curve ({})", to_string(op), gpu.name, curve->source)
                       : fmt::format("{} on {}: no curve of its own; {}'s fraction of peak assumed ({})", to_string(op),
                                     gpu.name, borrowed, curve->source);
  if (std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(note);
  return curve->at(key) * peak;
}

}  // namespace

const EfficiencyCurve* efficiency_or_borrowed(const HardwareCatalog& catalog, const GpuSpec& gpu, Operation op,
                                              std::string& borrowed_from) {
  borrowed_from.clear();
  if (const EfficiencyCurve* own = catalog.efficiency(gpu.name, op)) return own;
  for (const EfficiencyCurve& e : catalog.efficiencies)
    if (e.operation == op) {
      borrowed_from = e.gpu;
      return &e;
    }
  return nullptr;
}

CatalogSeconds catalog_component_seconds(const HardwareCatalog& catalog, const GpuSpec& gpu, ProfileComponent c,
                                           const ModelConfig& m, const ChunkShape& s, std::vector<std::string>& notes) {
  CatalogSeconds out;
  // The bytes its memory-bound kernels really move (plan/analytical_work.h): the whole of a memory-bound
  // component, beside the FLOP of a matrix one.
  out.memory = analytical_memory_bytes(c, m, s) / reached_rate(catalog, gpu, Operation::kMemoryBound, 0, notes);
  const bool matrix = work_kind(c) == WorkKind::kMatrix;
  for (const OperationWork& w : component_operations(c, m, s))
    out.operations.push_back(matrix && w.work > 0 ? w.work / reached_rate(catalog, gpu, w.operation, w.key, notes) : 0);
  return out;
}

UnitCosts analytical_costs(const HardwareCatalog& catalog, const GpuSpec& gpu, const ModelConfig& m, ChunkShape shape) {
  shape.gdn_layers = std::max<int64_t>(shape.gdn_layers, 1);
  shape.attention_layers = std::max<int64_t>(shape.attention_layers, 1);
  shape.dense_mlp_layers = every_component_layers(m);
  shape.embedding = shape.lm_head = true;
  UnitCosts u;
  u.analytical = true;
  u.gpu = gpu.name;
  u.model = m.name;
  u.weight_stream_bytes_per_s = reached_rate(catalog, gpu, Operation::kOptimizer, 0, u.notes);
  std::string kernels;  // "embedding 1, gdn 14, ...": the forward kernels of each component the model runs
  reached_rate(catalog, gpu, Operation::kMemoryBound, 0, u.notes);  // its note before the matrix curves'
  for (int c = 0; c < kProfileComponents; ++c) {
    const ProfileComponent comp = static_cast<ProfileComponent>(c);
    const double total = component_work(comp, m, shape);
    if (!(total > 0)) continue;
    const double per_unit = catalog_component_seconds(catalog, gpu, comp, m, shape, u.notes).total() / total;
    kernels += fmt::format("{}{} {}", kernels.empty() ? "" : ", ", to_string(comp), forward_kernels(comp, m));
    u.forward_pass[kForwardIndex][c] = per_unit;
    u.backward_pass[kBackwardIndex][c] = 2 * per_unit;
    u.backward_pass[kRecomputeIndex][c] = per_unit;
    u.measured_forward[c] = true;
    u.measured_backward[kBackwardIndex][c] = u.measured_backward[kRecomputeIndex][c] = true;
    const bool weights = component_params(comp, m, shape) > 0;
    for (int kind = 0; kind < 2; ++kind) {
      u.fixed_seconds_per_unit[kind][c] = weights ? 1 / u.weight_stream_bytes_per_s : 0;
      u.launch_seconds_per_run[kind][c] = (kind + 1) * forward_kernels(comp, m) * kSecondsPerKernelLaunch;
    }
  }
  u.notes.push_back(fmt::format(
      "host: each kernel launch {:.1f} us (measured on the torch backend's H200 profiles, plan/analytical_work.h), "
      "kernels per layer of a fused stack (forward, twice that backward): {}",
      kSecondsPerKernelLaunch * 1e6, kernels));
  return u;
}

std::optional<UnitCosts> analytical_costs_at_layout(const UnitCosts& costs, const Recipe& recipe,
                                                    const ModelConfig& model, const RankMap& map) {
  if (!costs.analytical) return std::nullopt;
  const GpuSpec* gpu = find_gpu(costs.gpu);
  if (gpu == nullptr) throw std::invalid_argument("GPU " + costs.gpu + " is not in the catalog");
  UnitCosts at = analytical_costs(hardware_catalog(), *gpu, model,
                                  chunk_shapes(map, model, 0, recipe.workload.row_tokens).front());
  at.notes = costs.notes;  // the notes the prediction was set up with (calibration, stand-ins) stay
  return at;
}

}  // namespace recipebench
