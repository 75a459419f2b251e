// The collectives a layout's ranks issue, per pass and per step, with the bytes nccl-tests counts for each
// (layout/collective.h): one list the step-time model times (plan/step_time.h) and the tests hold to a run's
// recorded traffic (docs/step-time.md, "Collectives"). Pure arithmetic, no libtorch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "catalog/models.h"
#include "layout/collective.h"
#include "layout/parallel_group.h"
#include "layout/rank_map.h"
#include "plan/compute_profile.h"
#include "recipe/enums.h"
#include "recipe/recipe.h"

namespace recipebench {

struct MemoryPlan;       // plan/memory_plan.h
struct OptimizerShards;  // plan/step_time.h

/// Bytes per element of each kind of buffer a run moves (docs/step-time.md, "Collectives").
struct WireBytes {
  double activation = 2;  ///< hidden states, their gradients, routed rows
  double gradient = 4;    ///< the distributed optimizer's gradient buffers
  double parameter = 2;   ///< the parameters the distributed optimizer gathers
};

/// The wire bytes of a run of `precision` (workload.precision): bf16, fp16 and fp8 (whose communication stays
/// 16-bit): activations and parameters 2, gradients 4 (FP32 buffers); fp32: 4 each; fp64: 8 each. Throws
/// std::invalid_argument for another precision.
WireBytes wire_bytes(const std::string& precision);

/// Why a collective runs (a closed set): where in the layer or step it sits.
enum class CollectiveRole {
  kLayerEntry,       ///< TP: a mixer's or MoE block's sequence-parallel all-gather (its backward: reduce-scatter)
  kLayerExit,        ///< TP: a mixer's or MoE block's reduce-scatter (its backward: all-gather)
  kEmbedding,        ///< TP: the embedding's reduce-scatter (its backward: all-gather)
  kOutputLayer,      ///< TP: the output layer's sequence gather (its backward: reduce-scatter)
  kRoutingCounts,    ///< EP: the rows per expert each rank sends, before a dispatch (alltoall dispatcher)
  kRoutingMap,       ///< EP: the routing map and probabilities gathered with the tokens (allgather dispatcher)
  kDispatch,         ///< EP: the routed rows to their experts' ranks
  kCombine,          ///< EP: the experts' outputs back
  kContextExchange,  ///< CP: one ring step of an attention layer's keys and values (their gradients in a backward)
  kPipelineSend,     ///< PP: hidden states (forward) or their gradients (backward) to a pipeline neighbour
  kPipelineRecv,     ///< PP: the same from a neighbour
  kGradientReduce,   ///< DP / EDP: the distributed optimizer's gradient reduce-scatter
  kParameterGather,  ///< DP / EDP: the distributed optimizer's parameter all-gather
};

/// "layer entry", "layer exit", "embedding", "output layer", "routing counts", "routing map", "dispatch", "combine",
/// "context exchange", "pipeline send", "pipeline receive", "gradient reduce-scatter", "parameter all-gather".
const char* to_string(CollectiveRole role);

/// One collective a rank issues: its group, operation and role, how many calls and the bytes of one call
/// (nccl-tests' size, layout/collective.h).
struct CollectiveUse {
  GroupKind group = GroupKind::kTp;
  Collective op = Collective::kAllGather;
  CollectiveRole role = CollectiveRole::kLayerEntry;
  int ranks = 1;     ///< the group's size
  double calls = 0;  ///< per pass (pass_collectives) or per step (step_collectives)
  double bytes = 0;  ///< of one call
  /// flex (DeepEP's internode kernels) only: of `bytes`' tokens, what one call sends once per destination node over
  /// the inter-node network (nccl-tests' all-to-all size over the group's nodes); 0 within one node.
  double node_bytes = 0;
};

/// What the collectives' sizes depend on beyond a chunk's shape.
struct CollectiveSizes {
  WireBytes wire;
  EpDispatch dispatch = EpDispatch::kHostSplits;    ///< the torch backend's all-to-all sizing (bench.ep_dispatch)
  Dispatcher dispatcher = Dispatcher::kAlltoall;    ///< layout.dispatcher (deepep is flex: Megatron's flex runs DeepEP)
  int64_t capacity_tokens = 0;  ///< fixed_capacity: tokens per rank sizing each peer's block (ep_capacity_tokens)
  /// flex: the nodes (NVLink domains) the ETP x EP group spans, from the rank map's placement (1 = DeepEP's intranode
  /// kernels); the step-time model sets it per pipeline rank.
  int flex_nodes = 1;
};

/// The expected number of distinct destinations that one token's `top_k` experts fall on, the `experts` spread
/// evenly over `destinations` (EP ranks, or nodes) and the token's experts drawn uniformly without repetition
/// (balanced routing, no group-limited routing): n (1 - C(E - E / n, k) / C(E, k)), the product
/// prod_{i < k} (E - E / n - i) / (E - i) for the chance that a destination gets none. 1 for one destination; k when
/// every expert has its own destination (E = n). Throws std::invalid_argument for experts, top_k or destinations < 1,
/// or top_k > experts.
double expected_destinations(int64_t experts, int64_t top_k, int64_t destinations);

/// Where one token of a rank goes with the flex dispatcher (Megatron-Core's MoEFlexTokenDispatcher with DeepEP's
/// normal kernels over the ETP x EP group): its destination ranks, ETP x expected_destinations(E, k, EP) (each EP
/// rank that holds one of its experts, and every ETP rank of it), and its destination nodes, expected_destinations(E,
/// k, nodes) (1 for one node).
struct FlexFanout {
  double ranks = 1, nodes = 1;
};
FlexFanout flex_fanout(const ModelConfig& m, const ChunkShape& s, int nodes);

/// What the dispatcher's permutations move beside the communication, as factors of alltoall's at ETP 1 (the
/// moe_dispatch and moe_combine components' seconds are multiplied by them: docs/step-time.md, "flex and ETP"), by
/// the bytes per token of the analytical count (analytical_work.h: alltoall's dispatch 8 k h, combine 6 k h + 2 h):
///   alltoall:  dispatch 4 k h + 4 k h ETP (the permutation before the all-to-all; the sort by local expert of the
///              ETP ranks' gathered rows), combine 4 k h ETP + 2 k h + 2 h (sorted back; the k slots weighted, summed);
///   flex:      dispatch ETP (2 D h + 2 k h) (the sender's permutation is DeepEP's kernel reading the token rows: its
///              bytes are the communication's; the receiver reads its received tokens, D = fanout.ranks / ETP a token
///              of the sender's, and writes their ETP x k rows in its experts' order), combine ETP (2 k h + 2 D h)
///              (the rows weighted and summed back into the received tokens; the copies' sum is DeepEP's combine
///              kernel);
///   allgather: 1 and 1 (its own pricing: not changed here).
/// Exactly 1 and 1 for alltoall at ETP 1.
struct DispatchWork {
  double dispatch = 1, combine = 1;
};
DispatchWork dispatch_work(const ModelConfig& m, const ChunkShape& s, Dispatcher dispatcher, const FlexFanout& fanout);

/// The sizes of `recipe`'s collectives: wire_bytes(workload.precision), layout.dispatcher, and `dispatch` (the run's
/// effective bench.ep_dispatch) with ep_capacity_tokens. Throws as wire_bytes.
CollectiveSizes collective_sizes(const Recipe& recipe, EpDispatch dispatch);

/// What a backward pass's recompute phase issues again, each as a fraction of the chunk's layers that hold it
/// (docs/step-time.md, "Selective recompute"): full recompute re-runs every one in its recomputed layers' fraction
/// (all(fraction)); selective recompute only those inside its modules (plan/selective_recompute.h).
struct RecomputedCollectives {
  double mixer_tp = 0;         ///< of the chunk's layers: the mixer's TP entry gather and exit scatter
  double feed_forward_tp = 0;  ///< of the chunk's layers: the feed-forward's (MoE block or dense MLP) TP pair
  double ep = 0;               ///< of its MoE layers: EP's dispatch, combine and routing counts / map
  double cp = 0;               ///< of its attention layers: CP's ring exchange of keys and values
  static RecomputedCollectives all(double fraction) { return {fraction, fraction, fraction, fraction}; }
};

/// The collectives of one microbatch's pass through chunk `s` of a rank of `m` (calls per pass), T the chunk's tokens
/// and h the hidden size:
///   TP > 1, per decoder layer and forward-kind phase (forward; backward's recompute x its fraction `recompute`):
///     two sequence-parallel all-gathers of [T, h] (entries) and two reduce-scatters of [T, h] (exits), one pair for
///     the mixer (GDN, gated attention, GQA or MLA) and one for the feed-forward (MoE block or dense MLP); a backward
///     phase the mirror (two reduce-scatters at the entries, two all-gathers at the exits); the embedding's
///     reduce-scatter (forward) and all-gather (backward); the output layer's all-gather (forward) and
///     reduce-scatter (backward).
///   EP > 1 (or ETP > 1), per MoE layer (moe_layers: none for a dense MLP layer) and phase, by layout.dispatcher:
///     alltoall: the dispatch's and the combine's all-to-all over EP of the rank's routed rows (host_splits: T / TP x
///     top-k rows, balanced routing; fixed_capacity: EP blocks of capacity_tokens x top-k rows, padding included),
///     and per forward-kind phase the routing counts' all-to-all (EP x local experts int64 values); with ETP > 1
///     (Megatron-Core's MoEAlltoAllTokenDispatcher: dispatch_postprocess, combine_preprocess) per forward-kind phase
///     an all-gather over the ETP group of the rows received (ETP x those rows: the gathered buffer) after the
///     dispatch and a reduce-scatter of the same buffer before the combine (the row-parallel fc2's partial sums), a
///     backward phase the mirror;
///     flex / deepep (Megatron-Core's MoEFlexTokenDispatcher with DeepEP's normal kernels, one group of ETP x EP
///     ranks): the dispatch's and the combine's fused all-to-all of the rank's T / TP tokens, each sent once per
///     destination rank (flex_fanout(m, s, sizes.flex_nodes).ranks of them: T / TP x ranks x h values over ETP x EP
///     ranks, group kEtpEp), across nodes each once per destination node as well (node_bytes: T / TP x nodes x h);
///     no routing counts' exchange of its own (DeepEP's layout is in its kernels), no ETP gather (the ETP ranks are
///     destinations of the group); bench.ep_dispatch does not size it;
///     allgather (Megatron-LM's MoEAllGatherTokenDispatcher, over the ETP x EP group): the dispatch an all-gather of
///     every rank's T / TP tokens (each token once, ETP x EP x T / TP x h values: nccl-tests' size of the gathered
///     buffer), the combine a reduce-scatter of the same buffer back; a backward phase the mirror (reduce-scatter at
///     the dispatch, all-gather at the combine); per forward-kind phase the all-gather of the routing map and
///     probabilities (ETP x EP x T / TP x E x 5 bytes: an FP32 probability and a bool per expert).
///   CP > 1, per attention layer (Megatron-LM / Transformer Engine's ring attention, the P2P exchange): per
///     forward-kind phase CP - 1 ring steps, each a send and a receive of the rank's keys and values (2 x T x
///     num_kv_heads x head_dim / TP values); per backward phase 2 (CP - 1) (the keys and values again, and their
///     gradients). Gated DeltaNet layers' state passing between CP ranks is not listed (not modelled).
/// TP and alltoall EP as the torch backend issues them (docs/step-time.md, "Collectives"; held to a run's traffic by
/// tests/test_emulation.cpp); ETP > 1, the flex and allgather dispatchers and CP by the formulas above (the torch
/// backend runs none of them).
std::vector<CollectiveUse> pass_collectives(const ModelConfig& m, const ChunkShape& s, bool backward,
                                            const RecomputedCollectives& recompute, const CollectiveSizes& sizes);
/// The same with full recompute of `recompute_fraction` of the chunk's layers (RecomputedCollectives::all).
std::vector<CollectiveUse> pass_collectives(const ModelConfig& m, const ChunkShape& s, bool backward,
                                            double recompute_fraction, const CollectiveSizes& sizes);

/// The bytes of one CP ring step of one attention layer: the keys and values of the rank's T tokens, 2 x T x
/// num_kv_heads x head_dim / TP activation values (docs/step-time.md, "Collectives").
double context_exchange_bytes(const ModelConfig& m, const ChunkShape& s, const WireBytes& wire);

/// The pipeline transfer of one microbatch between neighbours: the chunk's sequence-parallel shard of hidden states,
/// rows per microbatch x row tokens / CP / TP x h activation values (bytes of one send or receive).
double pipeline_transfer_bytes(const RankMap& map, const ModelConfig& m, int64_t row_tokens, const WireBytes& wire);

/// The distributed optimizer's collectives of a rank per step, from its shards (optimizer_shards of its pipeline
/// rank): the gradient reduce-scatter (wire.gradient) and the parameter all-gather (wire.parameter) of the rank's
/// full buffers, one each over DP of the dense parameters (with the experts when they are not apart) and over EDP of
/// the experts apart; none for a group of one rank.
std::vector<CollectiveUse> optimizer_collectives(const OptimizerShards& shards, const WireBytes& wire);

/// The collectives of one step of a rank of pipeline rank `pp` (calls per step): every chunk's forward and backward
/// passes over map.microbatches, the pipeline's sends and receives (each chunk's output forward but the model's
/// last, each chunk's input gradient backward but the model's first), and the distributed optimizer's gradient
/// reduce-scatter and parameter all-gather over DP (the dense parameters of `memory`'s rank, with the experts when
/// they are not apart) and EDP (the experts apart), of the rank's full buffers. Throws std::invalid_argument for pp
/// outside the map, as chunk_shapes.
std::vector<CollectiveUse> step_collectives(const Recipe& recipe, const ModelConfig& m, const RankMap& map,
                                            const MemoryPlan& memory, int pp, const CollectiveSizes& sizes);

}  // namespace recipebench
