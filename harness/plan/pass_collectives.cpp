#include "plan/pass_collectives.h"

#include <algorithm>
#include <stdexcept>

#include "plan/memory_plan.h"
#include "plan/selective_recompute.h"
#include "plan/step_time.h"

namespace recipebench {

WireBytes wire_bytes(const std::string& precision) {
  if (precision == "bf16" || precision == "fp16" || precision == "fp8") return {2, 4, 2};
  if (precision == "fp32") return {4, 4, 4};
  if (precision == "fp64") return {8, 8, 8};
  throw std::invalid_argument("workload.precision: " + precision + ", expected bf16, fp16, fp8, fp32 or fp64");
}

const char* to_string(CollectiveRole role) {
  switch (role) {
    case CollectiveRole::kLayerEntry:
      return "layer entry";
    case CollectiveRole::kLayerExit:
      return "layer exit";
    case CollectiveRole::kEmbedding:
      return "embedding";
    case CollectiveRole::kOutputLayer:
      return "output layer";
    case CollectiveRole::kRoutingCounts:
      return "routing counts";
    case CollectiveRole::kRoutingMap:
      return "routing map";
    case CollectiveRole::kDispatch:
      return "dispatch";
    case CollectiveRole::kCombine:
      return "combine";
    case CollectiveRole::kContextExchange:
      return "context exchange";
    case CollectiveRole::kPipelineSend:
      return "pipeline send";
    case CollectiveRole::kPipelineRecv:
      return "pipeline receive";
    case CollectiveRole::kGradientReduce:
      return "gradient reduce-scatter";
    case CollectiveRole::kParameterGather:
      return "parameter all-gather";
  }
  return "?";
}

CollectiveSizes collective_sizes(const Recipe& recipe, EpDispatch dispatch) {
  CollectiveSizes s;
  s.wire = wire_bytes(recipe.workload.precision);
  s.dispatch = dispatch;
  s.dispatcher = recipe.layout.dispatcher;
  s.capacity_tokens = ep_capacity_tokens(recipe.layout);
  return s;
}

namespace {

/// TP's collectives of one pass (see pass_collectives).
void add_tp(const ModelConfig& m, const ChunkShape& s, bool backward, const RecomputedCollectives& rc,
            const CollectiveSizes& sizes, std::vector<CollectiveUse>& out) {
  if (s.tp <= 1) return;
  const double full = static_cast<double>(s.tokens) * static_cast<double>(m.hidden_size) * sizes.wire.activation;
  const double layers = static_cast<double>(s.layers());
  const Collective gather = Collective::kAllGather, scatter = Collective::kReduceScatter;
  const auto add = [&](Collective op, CollectiveRole role, double calls) {
    if (calls > 0) out.push_back({GroupKind::kTp, op, role, s.tp, calls, full});
  };
  // The forward-kind phases' pairs (mixer and feed-forward): the forward itself, or the backward's recompute (full
  // recompute: (f + f) x layers, the same figure as f x layers x 2).
  const double pairs = backward ? (rc.mixer_tp + rc.feed_forward_tp) * layers : layers * 2;
  add(gather, CollectiveRole::kLayerEntry, pairs);
  add(scatter, CollectiveRole::kLayerExit, pairs);
  if (backward) {
    add(scatter, CollectiveRole::kLayerEntry, layers * 2);
    add(gather, CollectiveRole::kLayerExit, layers * 2);
  }
  if (s.embedding) add(backward ? gather : scatter, CollectiveRole::kEmbedding, 1);
  if (s.lm_head) add(backward ? scatter : gather, CollectiveRole::kOutputLayer, 1);
}

/// EP's collectives of one pass with the alltoall dispatcher (see pass_collectives).
void add_ep_alltoall(const ModelConfig& m, const ChunkShape& s, bool backward, double recompute_fraction,
                     const CollectiveSizes& sizes, std::vector<CollectiveUse>& out) {
  const double layers = moe_layers(m, s);
  const double rows = sizes.dispatch == EpDispatch::kFixedCapacity
                          ? static_cast<double>(s.ep) * static_cast<double>(sizes.capacity_tokens * m.top_k)
                          : static_cast<double>(s.tokens) / s.tp * static_cast<double>(m.top_k);
  const double row_bytes = rows * static_cast<double>(m.hidden_size) * sizes.wire.activation;
  const double counts_bytes = static_cast<double>(m.num_experts) * 8;  // EP x local experts int64 values
  const double forward_phases = backward ? recompute_fraction : 1.0;
  const double phases = backward ? 1.0 + recompute_fraction : 1.0;
  if (forward_phases * layers > 0)
    out.push_back({GroupKind::kEp, Collective::kAllToAll, CollectiveRole::kRoutingCounts, s.ep, forward_phases * layers,
                   counts_bytes});
  out.push_back({GroupKind::kEp, Collective::kAllToAll, CollectiveRole::kDispatch, s.ep, phases * layers, row_bytes});
  out.push_back({GroupKind::kEp, Collective::kAllToAll, CollectiveRole::kCombine, s.ep, phases * layers, row_bytes});
}

/// EP's collectives of one pass with the allgather dispatcher (see pass_collectives): the gathered buffer holds every
/// EP rank's T / TP tokens once (not top-k times).
void add_ep_allgather(const ModelConfig& m, const ChunkShape& s, bool backward, double recompute_fraction,
                      const CollectiveSizes& sizes, std::vector<CollectiveUse>& out) {
  const double layers = moe_layers(m, s);
  const double gathered = static_cast<double>(s.ep) * static_cast<double>(s.tokens) / s.tp;  // tokens of the group
  const double token_bytes = gathered * static_cast<double>(m.hidden_size) * sizes.wire.activation;
  const double map_bytes = gathered * static_cast<double>(m.num_experts) * 5;  // FP32 probability + bool per expert
  const double forward_phases = backward ? recompute_fraction : 1.0;
  const Collective gather = Collective::kAllGather, scatter = Collective::kReduceScatter;
  const auto add = [&](Collective op, CollectiveRole role, double calls, double bytes) {
    if (calls > 0) out.push_back({GroupKind::kEp, op, role, s.ep, calls, bytes});
  };
  add(gather, CollectiveRole::kRoutingMap, forward_phases * layers, map_bytes);
  add(gather, CollectiveRole::kDispatch, forward_phases * layers, token_bytes);
  add(scatter, CollectiveRole::kCombine, forward_phases * layers, token_bytes);
  if (backward) {
    add(scatter, CollectiveRole::kDispatch, layers, token_bytes);
    add(gather, CollectiveRole::kCombine, layers, token_bytes);
  }
}

/// EP's collectives of one pass (see pass_collectives): flex (DeepEP) is priced as alltoall.
void add_ep(const ModelConfig& m, const ChunkShape& s, bool backward, double recompute_fraction,
            const CollectiveSizes& sizes, std::vector<CollectiveUse>& out) {
  if (s.ep <= 1 || !(moe_layers(m, s) > 0)) return;  // a dense layer's MLP issues none
  if (sizes.dispatcher == Dispatcher::kAllgather)
    add_ep_allgather(m, s, backward, recompute_fraction, sizes, out);
  else
    add_ep_alltoall(m, s, backward, recompute_fraction, sizes, out);
}

/// CP's ring exchange of one pass (see pass_collectives): each ring step a send and a receive of one K,V chunk.
void add_cp(const ModelConfig& m, const ChunkShape& s, bool backward, double recompute_fraction,
            const CollectiveSizes& sizes, std::vector<CollectiveUse>& out) {
  if (s.cp <= 1 || s.attention_layers == 0) return;
  const double layers = static_cast<double>(s.attention_layers);
  const double ring_steps = s.cp - 1;
  // The forward-kind phases (the forward, a backward's recompute) pass the keys and values once around the ring; a
  // backward phase passes them again and their gradients.
  const double steps = layers * ring_steps * (backward ? recompute_fraction + 2.0 : 1.0);
  if (steps <= 0) return;
  const double bytes = context_exchange_bytes(m, s, sizes.wire);
  out.push_back({GroupKind::kCp, Collective::kSend, CollectiveRole::kContextExchange, s.cp, steps, bytes});
  out.push_back({GroupKind::kCp, Collective::kRecv, CollectiveRole::kContextExchange, s.cp, steps, bytes});
}

/// `uses` with every call count multiplied by `times`, appended to `out`.
void add_times(const std::vector<CollectiveUse>& uses, double times, std::vector<CollectiveUse>& out) {
  for (CollectiveUse u : uses) {
    u.calls *= times;
    if (u.calls > 0) out.push_back(u);
  }
}

/// The pipeline's sends and receives of pipeline rank `pp` per step (see step_collectives).
void add_pipeline(const RankMap& map, const ModelConfig& m, int64_t row_tokens, int pp, const WireBytes& wire,
                  std::vector<CollectiveUse>& out) {
  if (map.pp <= 1) return;
  const double bytes = pipeline_transfer_bytes(map, m, row_tokens, wire);
  const double mb = static_cast<double>(map.microbatches);
  const double chunks = map.vpp;
  const double forward_sends = chunks - (pp == map.pp - 1 ? 1 : 0);  // every chunk's output but the model's last
  const double backward_sends = chunks - (pp == 0 ? 1 : 0);          // every chunk's input gradient but the first
  const double transfers = mb * (forward_sends + backward_sends);
  out.push_back({GroupKind::kPp, Collective::kSend, CollectiveRole::kPipelineSend, 2, transfers, bytes});
  out.push_back({GroupKind::kPp, Collective::kRecv, CollectiveRole::kPipelineRecv, 2, transfers, bytes});
}

}  // namespace

std::vector<CollectiveUse> pass_collectives(const ModelConfig& m, const ChunkShape& s, bool backward,
                                            const RecomputedCollectives& recompute, const CollectiveSizes& sizes) {
  std::vector<CollectiveUse> out;
  add_tp(m, s, backward, recompute, sizes, out);
  add_ep(m, s, backward, recompute.ep, sizes, out);
  add_cp(m, s, backward, recompute.cp, sizes, out);
  return out;
}

std::vector<CollectiveUse> pass_collectives(const ModelConfig& m, const ChunkShape& s, bool backward,
                                            double recompute_fraction, const CollectiveSizes& sizes) {
  return pass_collectives(m, s, backward, RecomputedCollectives::all(recompute_fraction), sizes);
}

double context_exchange_bytes(const ModelConfig& m, const ChunkShape& s, const WireBytes& wire) {
  return 2.0 * static_cast<double>(s.tokens) * static_cast<double>(m.num_kv_heads * m.head_dim) / s.tp *
         wire.activation;
}

std::vector<CollectiveUse> optimizer_collectives(const OptimizerShards& shards, const WireBytes& wire) {
  std::vector<CollectiveUse> out;
  const auto add = [&](GroupKind group, int ranks, double params) {
    out.push_back(
        {group, Collective::kReduceScatter, CollectiveRole::kGradientReduce, ranks, 1, params * wire.gradient});
    out.push_back({group, Collective::kAllGather, CollectiveRole::kParameterGather, ranks, 1, params * wire.parameter});
  };
  if (shards.dense_groups > 1) add(GroupKind::kDp, shards.dense_groups, shards.dense);
  if (shards.experts > 0 && shards.expert_groups > 1) add(GroupKind::kEdp, shards.expert_groups, shards.experts);
  return out;
}

double pipeline_transfer_bytes(const RankMap& map, const ModelConfig& m, int64_t row_tokens, const WireBytes& wire) {
  const double tokens = static_cast<double>(map.rows_per_microbatch * row_tokens / map.cp);
  return tokens / map.tp * static_cast<double>(m.hidden_size) * wire.activation;
}

std::vector<CollectiveUse> step_collectives(const Recipe& recipe, const ModelConfig& m, const RankMap& map,
                                            const MemoryPlan& memory, int pp, const CollectiveSizes& sizes) {
  std::vector<CollectiveUse> out;
  const double mb = static_cast<double>(map.microbatches);
  for (const ChunkShape& s : chunk_shapes(map, m, pp, recipe.workload.row_tokens)) {
    add_times(pass_collectives(m, s, false, 0, sizes), mb, out);
    add_times(pass_collectives(m, s, true, recomputed_collectives(recipe.layout.recompute, m, s), sizes), mb, out);
  }
  add_pipeline(map, m, recipe.workload.row_tokens, pp, sizes.wire, out);
  const std::vector<CollectiveUse> optimizer = optimizer_collectives(optimizer_shards(memory, map, pp), sizes.wire);
  out.insert(out.end(), optimizer.begin(), optimizer.end());
  return out;
}

}  // namespace recipebench
