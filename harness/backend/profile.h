// --profile's pass profile (docs/metrics.md, "Profile"): each pass of a step's pipeline schedule (a forward or a
// backward of one microbatch through one model chunk) with its wall time split by phase (forward, backward,
// recompute) and by model component. The components are exclusive: at every moment of a pass exactly one of them
// (or `other`) is charged, so a pass's cells add up to its seconds. Pure data, no libtorch: the torch backend's
// timer (backends/torch/model/component_timer.h) fills it, the run record, the console and the step-time model
// read it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "util/json.h"

namespace recipebench {

/// The model components a pass's time is charged to (a closed set), innermost first where they nest: the MoE
/// block's parts (router .. combine) inside the block (`moe_rest`: what the block does outside its parts, the
/// shared expert's gate and the sum).
enum class ProfileComponent {
  kEmbedding,        ///< the token embedding (vocab-parallel lookup and its reduction under TP)
  kGdn,              ///< a Gated DeltaNet layer's token mixer: projections, convolution, delta rule, gated norm
  kAttention,        ///< a gated attention layer's token mixer: projections, rotary embedding, attention, gate
  kMoeRouter,        ///< the router: logits, softmax, top-k, the weights' normalisation
  kMoeSharedExpert,  ///< the shared expert's SwiGLU (TP: column / row parallel, its reduce-scatter)
  kMoeDispatch,      ///< sorting by expert, the rows' copies to their slots, the EP all-to-alls of counts and rows
  kMoeExperts,       ///< the routed experts' grouped GEMMs and activation
  kMoeCombine,       ///< the rows back (EP all-to-all), to token order, weighted and summed over the top-k slots
  kMoeRest,          ///< the rest of the MoE block: the shared expert's gate, the sum of routed and shared
  kLmHeadLoss,       ///< the output layer and the cross-entropy (TP: the sequence gather, vocab-parallel loss)
  kOther,            ///< everything else of the pass: norms, residuals, casts, receives, gradient copies
  /// A dense SwiGLU MLP (gate, up, down; TP column / row parallel): the feed-forward of a dense layer of a
  /// config.json family (Llama, DeepSeek-V3's leading layers). The torch backend's model has none; only the
  /// analytical mode (plan/analytical_costs.h) times it. Last, so that the indices of the others stay.
  kDenseMlp,
};
constexpr int kProfileComponents = 12;

/// "embedding", "gdn", "attention", "moe_router", "moe_shared_expert", "moe_dispatch", "moe_experts", "moe_combine",
/// "moe_rest", "lm_head_loss", "other", "dense_mlp": the record's keys.
const char* to_string(ProfileComponent c);
/// The component named `name` (to_string's spelling), or nullopt.
std::optional<ProfileComponent> profile_component_named(const std::string& name);

/// What a pass was doing: its forward, its backward, or (in a backward pass of a recomputed chunk) the forward
/// run again to rebuild the activations (docs/distributed.md, "Recompute").
enum class PassPhase { kForward, kBackward, kRecompute };
constexpr int kPassPhases = 3;
/// PassPhase's values as indices of the per-phase arrays (PhaseCells and the like).
constexpr int kForwardIndex = static_cast<int>(PassPhase::kForward);
constexpr int kBackwardIndex = static_cast<int>(PassPhase::kBackward);
constexpr int kRecomputeIndex = static_cast<int>(PassPhase::kRecompute);
/// "forward", "backward", "recompute".
const char* to_string(PassPhase p);
std::optional<PassPhase> pass_phase_named(const std::string& name);

/// Seconds per component of one phase, indexed by ProfileComponent.
using ComponentCells = std::array<double, kProfileComponents>;
/// Every cell 1: the identity of a per-component scale.
constexpr ComponentCells unit_cells() {
  ComponentCells c{};
  for (size_t i = 0; i < c.size(); ++i) c[i] = 1;
  return c;
}
inline constexpr ComponentCells kUnitCells = unit_cells();

/// One pass of a step's pipeline schedule under --profile. seconds = the sum of every cell (the timer charges
/// every moment of the pass to one cell; measured between device synchronisations, seconds).
struct PassSample {
  bool backward = false;    ///< a backward pass (its phases: backward, recompute), else a forward (forward only)
  int virtual_stage = 0;    ///< the rank's model chunk, 0..VPP-1
  int64_t microbatch = 0;   ///< 0..microbatches-1 in the step's order
  double seconds = 0;       ///< wall time of the pass
  std::array<ComponentCells, kPassPhases> phases{};  ///< indexed by PassPhase

  double phase_seconds(PassPhase p) const;
  double component_seconds(ProfileComponent c) const;  ///< over the phases
};

/// {phase: {component: seconds / divisor}} of `cells` (indexed by PassPhase, then ProfileComponent), a phase only
/// where it has time and in it only the components with time: the record's form of a pass's or a step's cells.
Json phase_cells_json(const std::array<ComponentCells, kPassPhases>& cells, double divisor = 1);

/// The record's form of a pass (schema/run-record.schema.json, steps[].phases.passes[]): {kind: "forward" |
/// "backward", virtual_stage, microbatch, seconds, <phase>: {<component>: seconds}}, a phase only where it has time
/// and in it only the components with time.
Json to_json(const PassSample& p);

}  // namespace recipebench
