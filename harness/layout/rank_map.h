// Which part of the model and the batch every rank holds: the rank map of a layout (for `run --dry-run`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "catalog/models.h"
#include "recipe/recipe.h"

namespace recipebench {

/// Decoder layers [first, first + count) held by one virtual pipeline stage of a rank.
struct LayerRange {
  int virtual_stage = 0;  ///< 0..VPP-1 on this pipeline rank
  int64_t first = 0;
  int64_t count = 0;
};

/// One rank's coordinates. Attention grid (Megatron-LM order tp-cp-dp-pp, TP fastest):
/// rank = tp + TP (cp + CP (dp + DP pp)). Expert grid over the same ranks ("MoE parallel folding"):
/// rank = etp + ETP (ep + EP (edp + EDP pp)), EDP = world / (ETP EP PP). Source: Megatron-Core
/// parallel_state.RankGenerator with order "tp-cp-ep-dp-pp".
struct RankPlacement {
  int rank = 0, node = 0, local_rank = 0;
  int tp = 0, cp = 0, dp = 0, pp = 0;
  int etp = 0, ep = 0, edp = 0;
  std::vector<LayerRange> layers;  ///< one entry per virtual stage, in model order on this rank
  int64_t microbatches = 0;        ///< per step, per DP rank
};

/// The whole map: grid sizes, the per-stage layer split and every rank.
struct RankMap {
  int world = 0, tp = 1, cp = 1, dp = 1, pp = 1, vpp = 1, etp = 1, ep = 1, edp = 1, per_node = 1;
  std::vector<int64_t> stage_layers;  ///< decoder layers per pipeline stage
  int64_t rows_per_microbatch = 0, microbatches = 0;
  std::string schedule;  ///< "no pipeline", "1F1B", "interleaved 1F1B (VPP 2)"
  std::vector<RankPlacement> ranks;
  /// Index in `ranks` of each pipeline stage's first rank, filled by build_rank_map (empty in a map made by hand):
  /// a stage's layers without a scan of every rank (plan/memory_plan.h, plan's search of 65,536 GPUs).
  std::vector<size_t> stage_first_rank;
  /// True for build_stage_map's map: `ranks` holds each stage's first rank only, in stage order; any other rank's
  /// placement is rank_placement's arithmetic.
  bool stages_only = false;
};

/// Builds the rank map of a validated recipe's layout for `model`. Layers of virtual stage v on pipeline rank p
/// follow Megatron-Core's get_transformer_layer_offset: each stage's layers split evenly over its VPP chunks and
/// chunk v of every stage taken in pipeline order before chunk v + 1. Throws std::invalid_argument when the
/// layout's arithmetic does not hold (validate reports the same problems with locations), or when `model` is known
/// by its stated counts only (ModelFamily::kStated: no layer count to split).
RankMap build_rank_map(const Recipe& recipe, const ModelConfig& model);

/// Rank `rank`'s placement in `map` by the grids' arithmetic (attention: TP fastest, then CP, DP, PP; experts: ETP,
/// EP, EDP, PP), with its stage's layers and the map's microbatches: what build_rank_map puts at index `rank`.
/// Throws std::invalid_argument for a rank outside the world.
RankPlacement rank_placement(const RankMap& map, int rank);

/// build_rank_map's map with only each pipeline stage's first rank in `ranks` (stage_first_rank indexes them), in
/// O(PP) instead of O(GPUs): what the memory plan and the switches' rules read (plan's search plans every layout on
/// it and builds the whole map only for the layouts that fit). Not for the groups (plan/topology.h needs every rank);
/// not counted by rank_map_builds. Throws as build_rank_map.
RankMap build_stage_map(const Recipe& recipe, const ModelConfig& model);

/// The tokens per rank that size the fixed-capacity EP dispatcher's blocks (bench.ep_dispatch fixed_capacity):
/// layout.max_tokens_per_gpu / TP, a sequence-parallel rank routing its 1 / TP of the microbatch's tokens
/// (docs/distributed.md, "Expert parallelism"). The torch backend sizes its all-to-all by it and the step-time model
/// prices it (plan/pass_collectives.h).
int64_t ep_capacity_tokens(const RecipeLayout& layout);

/// How many times this process has called build_rank_map (a debug counter: a run builds its rank map once, in its
/// resolved run, settings/resolved_run.h; tests hold it to that).
int64_t rank_map_builds();

/// Keeps `layers` decoder layers on every rank of pipeline stage `pp` (an emulated rank's `--layers`,
/// docs/emulation.md): virtual stage v keeps the first layers / VPP (+ 1 for v < layers % VPP) of its own, so each
/// kept layer has its real index (and kind: attention or Gated DeltaNet). stage_layers[pp] becomes `layers`; the
/// other stages are unchanged. Throws std::invalid_argument when `layers` is below VPP (a virtual stage would be
/// empty) or above the stage's layers.
void keep_stage_layers(RankMap& map, int pp, int64_t layers);

/// The map as text: a header with the grid and schedule, then one line per rank.
std::string format_rank_map(const RankMap& map);

}  // namespace recipebench
