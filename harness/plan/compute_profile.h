// The compute half of the step-time model (docs/step-time.md): a measured profile of one or more ranks (each pass
// of their schedule by phase and component, backend/profile.h) turned into seconds per unit of work, and the
// seconds of any other rank's passes from its work. A component's work is FLOP for matrix work and bytes for
// memory-bound work, from the formulas below; its seconds per unit are the profile's measured seconds over the
// profile's own work. Pure arithmetic, no libtorch.
#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/profile.h"
#include "catalog/hardware.h"
#include "catalog/models.h"
#include "layout/rank_map.h"
#include "recipe/recipe.h"

namespace recipebench {

/// Bytes of one activation or weight element as the step-time model counts them: BF16 on GPUs (docs/step-time.md,
/// "Work"); the one place of that figure for the work formulas, the collectives and the weights' streaming.
constexpr double kActivationBytes = 2;

/// How a component's time follows its work: matrix work by its FLOP, memory-bound work by its bytes
/// (docs/step-time.md, "Work"); plan/gpu_scaling.h splits each further into operations to carry it to another GPU.
enum class WorkKind { kMatrix, kMemory };

/// The declared kind of each component: matrix for gdn, attention, moe_router, moe_shared_expert, moe_experts and
/// lm_head_loss; memory for embedding, moe_dispatch, moe_combine, moe_rest and other.
WorkKind work_kind(ProfileComponent c);

/// "matrix" or "memory".
const char* to_string(WorkKind k);

/// One microbatch through one model chunk of one rank: what its work depends on.
struct ChunkShape {
  int64_t gdn_layers = 0;        ///< Gated DeltaNet decoder layers of the chunk
  int64_t attention_layers = 0;  ///< full-attention decoder layers of the chunk
  bool embedding = false;        ///< the chunk holds the token embedding (chunk 0 of the first pipeline rank)
  bool lm_head = false;          ///< the chunk holds the output layer and the loss (last chunk of the last rank)
  int64_t tokens = 0;            ///< tokens of the microbatch (rows x row tokens / CP), padding included
  int64_t row_tokens = 0;        ///< tokens of one row: the causal attention's sequence length
  int tp = 1;                    ///< TP; with sequence parallel the MoE block, norms and sends see tokens / TP
  int ep = 1;                    ///< EP: the chunk holds experts / EP of each MoE layer
  int etp = 1;                   ///< ETP: each of those experts split over ETP ranks (fc1 by columns, fc2 by rows)
  int cp = 1;                    ///< CP: the row's tokens over CP ranks (tokens is already divided by it)
  /// Decoder layers of the chunk whose feed-forward is a dense SwiGLU MLP (a config.json family's dense layers:
  /// all of Llama's, DeepSeek-V3's first_k_dense_replace); the others' is the MoE block. 0 for Qwen3.5.
  int64_t dense_mlp_layers = 0;

  int64_t layers() const { return gdn_layers + attention_layers; }
};

/// The chunk's decoder layers with an MoE block: its layers less the dense-MLP ones; 0 for a model without experts.
double moe_layers(const ModelConfig& m, const ChunkShape& s);

/// The dense-MLP layers a shape of one GDN and one attention layer (the shape the analytical mode and the GPU
/// scaling price every component on) takes so that both its feed-forward kinds are priced: 1 when `m` has dense
/// MLP layers, else 0 (the other layer then carries the MoE block where the model has one).
int64_t every_component_layers(const ModelConfig& m);

/// The work of component `c` in one forward pass of `s` on one rank of `m` (BF16 activations, 2 bytes):
///   gdn        G (2 P_gdn + Hv 4 dk dv) T / TP        (projections; the delta rule's state update and read-out)
///   attention  A (2 P_attn + S Hq (d_qk + d_v)) T / TP (projections; causal QK^T and AV over S / 2 keys on average)
///   moe_router M 2 h E T / TP;   moe_shared_expert M 6 h Fs T / TP;   moe_experts M 6 h F k T / TP (balanced
///              routing: a rank's experts receive its own tokens' k slots over the EP group, whatever EP and ETP:
///              with ETP > 1 the ETP ranks' rows gathered, ETP x as many rows at F / ETP wide)
///   dense_mlp  D 6 h I T / TP (a dense SwiGLU's gate, up and down GEMMs)
///   lm_head_loss 2 h V T / TP (vocab-parallel)                                           [FLOP]
///   embedding h 2 T / TP;  moe_dispatch and moe_combine M k h 2 T / TP;  moe_rest M h 2 T / TP;
///   other L h 2 T / TP                                                                   [bytes]
/// with G, A, L the chunk's GDN, attention and all layers, M its MoE layers (moe_layers), D its dense-MLP layers,
/// T its tokens, S the row's tokens, P_gdn / P_attn the active weights of one mixer (count_params: GQA or MLA
/// for a config.json family), Hv, dk, dv the GDN value heads and head widths, Hq the attention heads, d_qk / d_v
/// their score and value widths (attention_head_dims: head_dim for both but MLA's qk_nope + qk_rope and v_head_dim),
/// h hidden, E experts, k top-k, F / Fs the routed / shared expert widths, I the dense MLP's width, V the
/// vocabulary. Formulas: docs/step-time.md ("Work"). 0 where the chunk has no such component.
double component_work(ProfileComponent c, const ModelConfig& m, const ChunkShape& s);

/// How many times a pass of chunk `s` runs component `c`: its layers of that kind (gdn G, attention A, the MoE parts
/// M (the shared expert where the model has one), dense_mlp D, other L), 1 for the embedding or the LM head where
/// the chunk holds it, else 0.
double component_runs(ProfileComponent c, const ModelConfig& m, const ChunkShape& s);

/// The weights of component `c` in the chunk on one rank (elements): a mixer's projections / TP, the router, the
/// shared expert / TP, the chunk's experts / (EP x ETP), a dense MLP / TP, the output layer and the embedding / TP
/// (vocab-parallel); 0 for
/// the memory-bound parts without weights.
double component_params(ProfileComponent c, const ModelConfig& m, const ChunkShape& s);

/// Every weight of the chunk on one rank (elements): component_params summed.
double chunk_params(const ModelConfig& m, const ChunkShape& s);

/// Bytes of its weights a pass streams through HBM whatever its tokens (docs/step-time.md, "Per-pass costs"): the
/// forward reads each BF16 weight once (2 bytes), the backward reads it for the input gradient and writes its
/// gradient (2 + 2 bytes).
double weight_bytes_per_pass(ProfileComponent c, const ModelConfig& m, const ChunkShape& s, bool backward);

/// Seconds of one forward pass and one backward pass of one chunk, by phase and component (backend/profile.h).
using PhaseCells = std::array<ComponentCells, kPassPhases>;

/// A measured chunk: its shape and the mean cells of its forward and backward passes (seconds).
struct ProfiledChunk {
  ChunkShape shape;
  PhaseCells forward{}, backward{};
};

/// A measured rank: where it ran and what it measured (one record of `run --profile`, or of an emulated rank).
struct ProfiledRank {
  std::string source;  ///< the record's file
  std::string model;   ///< registry name of the model whose widths ran
  std::string gpu;     ///< catalog name of the device it ran on ("H200"), or "CPU"
  std::string layout;  ///< the layout it stood for, e.g. "TP2 PP8 VPP2 EP8 DP4 (rank 20)"
  ModelConfig widths;  ///< the model that ran (its layer count is the proxy's when cut)
  std::vector<ProfiledChunk> chunks;
  /// Per step, the seconds outside the passes and the optimizer (the gradients' accumulation after each backward,
  /// zeroing, the step's bookkeeping): the window's mean of step seconds - passes - optimizer.
  double between_passes_seconds = 0;
  int64_t microbatches = 0;      ///< per step
  double optimizer_seconds = 0;  ///< the optimizer's step, seconds
  double optimizer_params = 0;   ///< parameters whose state that step updated (the rank's shards), elements
  /// The bytes that step moved per parameter: optimizer_step_bytes_per_param of the record's optimizer state form
  /// and kernels (plan/optimizer_traffic.h); 34 for the plain FP32 state with the fused kernels.
  double optimizer_bytes_per_param = 34;
  Kernels kernels = Kernels::kFused;  ///< the kernels the profile ran (bench.kernels)
};

/// Multiplies every measured second of `r` (its chunks' cells, the seconds between passes, its optimizer step) by
/// `factor`: a profile
/// calibrated by a plain run of the same recipe (docs/step-time.md, "Calibration"). Throws std::invalid_argument
/// for a factor that is not positive and finite.
void calibrate(ProfiledRank& r, double factor);

/// Seconds per unit of work of every (phase, component) the profile measured, and of the optimizer.
struct UnitCosts {
  std::array<ComponentCells, kPassPhases> forward_pass{};   ///< seconds per unit in a forward pass
  std::array<ComponentCells, kPassPhases> backward_pass{};  ///< seconds per unit in a backward pass
  std::array<std::array<bool, kProfileComponents>, kPassPhases> measured_backward{};  ///< backward_pass known
  std::array<bool, kProfileComponents> measured_forward{};                            ///< forward_pass[forward] known
  /// The bandwidth the rank's weights stream at: the optimizer steps' bytes (ProfiledRank::optimizer_bytes_per_param
  /// times their parameters, docs/optimizer.md) over their seconds, bytes/s; 0 when no optimizer step was measured
  /// (then no per-pass cost and no optimizer step predicted). A target's optimizer step moves its own state form's
  /// bytes at this bandwidth.
  double weight_stream_bytes_per_s = 0;
  Kernels kernels = Kernels::kFused;  ///< the profiles' kernels: the target's optimizer traffic is counted for them
  /// Each pass's fixed cost, [0 forward, 1 backward][component]: seconds per byte of the weights it streams
  /// (weight_bytes_per_pass), or for a component without weights seconds per layer of the chunk. With profiles of
  /// one microbatch size: 1 / weight_stream_bytes_per_s for the matrix components and the embedding, 0 for the
  /// rest; with two or more sizes: fitted with the work by least squares (fixed_fitted).
  std::array<ComponentCells, 2> fixed_seconds_per_unit{};
  bool fixed_fitted = false;  ///< some fixed cost came from a fit over several microbatch sizes
  /// Each pass's host cost of launching a component's kernels, [0 forward, 1 backward][component]: seconds per run
  /// of the component in the pass (component_runs); a recompute costs the forward's. The analytical mode's
  /// (plan/analytical_work.h: kernels x kSecondsPerKernelLaunch); 0 for a profile, whose seconds hold it.
  std::array<ComponentCells, 2> launch_seconds_per_run{};
  /// Seconds outside the passes per microbatch and per weight of the rank (between_passes_seconds over
  /// microbatches x chunk_params of every chunk): added to each backward pass by its chunk's weights.
  double between_seconds_per_param = 0;
  std::string gpu;    ///< where it was measured (ProfiledRank::gpu)
  std::string model;  ///< whose widths
  std::vector<std::string> sources;  ///< one per profile read (its file, and its calibration when it has one)
  std::vector<std::string> notes;    ///< how the costs were carried to the recipe (the GPU scaling); not profiles
  /// Set by the analytical mode (plan/analytical_costs.h): its curves are keyed by the chunk's shape, so every
  /// layout is timed with the costs read at its own shape (analytical_costs_at_layout), by predict and plan alike.
  bool analytical = false;
};

/// Pools the ranks' measurements: the weights' streaming bandwidth from the optimizer steps; then for each pass
/// kind and component, its seconds as a fixed part (UnitCosts::fixed_seconds_per_unit) plus seconds per unit of
/// work over every chunk of every rank: with one microbatch size the fixed part is the weights' streaming and the
/// rest over the work gives the unit cost (at least 0); with several sizes both by least squares (docs/step-time.md,
/// "Per-pass costs"). The recompute phase per unit of work and the seconds between passes over the weights likewise.
/// Throws std::invalid_argument for no ranks, ranks of different models, devices or kernels, or a rank without
/// chunks.
UnitCosts fit_unit_costs(const std::vector<ProfiledRank>& ranks);

/// The profile's achieved throughput of each matrix component in its forward and backward passes' own phases:
/// its work (FLOP, component_work; twice that for a backward: the input's and the weights' gradients) over its
/// measured seconds less its fixed part, FLOP/s, indexed [0 forward, 1 backward][component];
/// 0 for memory-bound components and those not measured.
std::array<ComponentCells, 2> achieved_flops(const UnitCosts& costs);

/// What a target pass of a chunk costs beside its shape.
struct PassCostOptions {
  /// Per component, the fraction of its forward seconds run again in the chunk's backward pass (plan/
  /// selective_recompute.h recomputed_shares: full recompute the recomputed layers' fraction of the chunk, 1 with
  /// `uniform`, in every decoder component; selective the recomputed modules' share of each component; none 0).
  ComponentCells recompute{};
  /// Per component: target seconds = profile seconds x this (GPU scaling x any stack factor); 1 = the profile's GPU.
  ComponentCells scale = kUnitCells;
};

/// A layout's work in a component the profiles never measured (e.g. an LM head from profiles of middle stages only):
/// the profiles given cannot time it. what() names the component; the command places it at the profile file (or
/// the --profile option when several were given together).
struct ProfileGap : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

/// The seconds of one forward (`backward` false) or backward pass of a chunk of shape `s`, by phase and component:
/// each component's fixed part (costs.fixed_seconds_per_unit of its streamed weights or layers, and
/// costs.launch_seconds_per_run per run) plus its work at the fitted seconds per unit; a backward pass's `other` also carries the seconds between passes for the
/// chunk's weights. A backward pass's recompute phase is the decoder components' recompute cost (the profile's
/// recompute seconds per unit where it measured them, else its forward's: the chunk's forward run again) x
/// o.recompute of the component (the embedding and the LM head never). Throws ProfileGap when the shape has work in a cell the profile never measured (e.g. an LM
/// head from a profile of middle stages only), naming the component.
PhaseCells pass_cells(const UnitCosts& costs, const ModelConfig& m, const ChunkShape& s, bool backward,
                      const PassCostOptions& o = {});

/// The sum of all cells.
double cells_seconds(const PhaseCells& cells);

/// The chunk shapes of pipeline rank `pp` of `map` for `m`: one per virtual stage, in order, with `row_tokens` and
/// rows_per_microbatch x row_tokens / CP tokens. Throws std::invalid_argument for pp outside the map.
std::vector<ChunkShape> chunk_shapes(const RankMap& map, const ModelConfig& m, int pp, int64_t row_tokens);

}  // namespace recipebench
