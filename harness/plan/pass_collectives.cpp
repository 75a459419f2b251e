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

double expected_destinations(int64_t experts, int64_t top_k, int64_t destinations) {
  if (experts < 1 || top_k < 1 || destinations < 1 || top_k > experts)
    throw std::invalid_argument("expected destinations: " + std::to_string(experts) + " experts, top-" +
                                std::to_string(top_k) + ", " + std::to_string(destinations) +
                                " destinations, expected each >= 1 and top-k <= experts");
  if (destinations == 1) return 1;
  const double e = static_cast<double>(experts), elsewhere = e - e / static_cast<double>(destinations);
  double none = 1;  // the chance that a given destination holds none of the token's experts
  for (int64_t i = 0; i < top_k && none > 0; ++i)
    none *= std::max(0.0, (elsewhere - static_cast<double>(i)) / (e - static_cast<double>(i)));
  return static_cast<double>(destinations) * (1 - none);
}

FlexFanout flex_fanout(const ModelConfig& m, const ChunkShape& s, int nodes) {
  FlexFanout f;
  f.ranks = s.etp * expected_destinations(m.num_experts, m.top_k, s.ep);
  f.nodes = nodes > 1 ? expected_destinations(m.num_experts, m.top_k, nodes) : 1.0;
  return f;
}

DispatchWork dispatch_work(const ModelConfig& m, const ChunkShape& s, Dispatcher dispatcher, const FlexFanout& fanout) {
  DispatchWork w;
  const bool flex = dispatcher == Dispatcher::kFlex || dispatcher == Dispatcher::kDeepep;
  if (dispatcher == Dispatcher::kAllgather || (!flex && s.etp == 1)) return w;  // alltoall at ETP 1: exactly 1, 1
  const double k = static_cast<double>(m.top_k), etp = s.etp;
  const double a2a_dispatch = 8 * k, a2a_combine = 6 * k + 2;  // bytes per token over h (analytical_work.h)
  if (flex) {
    const double received = 2 * k + 2 * (fanout.ranks / etp);  // D = fanout.ranks / ETP tokens read or written
    w.dispatch = etp * received / a2a_dispatch;
    w.combine = etp * received / a2a_combine;
  } else {
    w.dispatch = (4 * k + 4 * k * etp) / a2a_dispatch;
    w.combine = (4 * k * etp + 2 * k + 2) / a2a_combine;
  }
  return w;
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

/// ETP's all-gather of the rows a rank received (after the dispatch) and reduce-scatter of the experts' partial
/// outputs (before the combine), of the gathered buffer's `bytes`, with the alltoall dispatcher (see
/// pass_collectives); a backward phase the mirror.
void add_etp(const ChunkShape& s, bool backward, double recompute_fraction, double bytes,
             std::vector<CollectiveUse>& out) {
  const double layers_forward = backward ? recompute_fraction : 1.0;
  const auto add = [&](Collective op, CollectiveRole role, double calls) {
    if (calls > 0) out.push_back({GroupKind::kEtp, op, role, s.etp, calls, bytes});
  };
  add(Collective::kAllGather, CollectiveRole::kDispatch, layers_forward);
  add(Collective::kReduceScatter, CollectiveRole::kCombine, layers_forward);
  if (backward) {
    add(Collective::kReduceScatter, CollectiveRole::kDispatch, 1);
    add(Collective::kAllGather, CollectiveRole::kCombine, 1);
  }
}

/// EP's collectives of one pass with the alltoall dispatcher (see pass_collectives), and ETP's where ETP > 1.
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
  if (s.ep > 1) {
    if (forward_phases * layers > 0)
      out.push_back({GroupKind::kEp, Collective::kAllToAll, CollectiveRole::kRoutingCounts, s.ep,
                     forward_phases * layers, counts_bytes});
    out.push_back({GroupKind::kEp, Collective::kAllToAll, CollectiveRole::kDispatch, s.ep, phases * layers, row_bytes});
    out.push_back({GroupKind::kEp, Collective::kAllToAll, CollectiveRole::kCombine, s.ep, phases * layers, row_bytes});
  }
  if (s.etp <= 1) return;
  std::vector<CollectiveUse> etp;  // per layer, then times the layers
  add_etp(s, backward, recompute_fraction, s.etp * row_bytes, etp);
  for (CollectiveUse& u : etp) {
    u.calls *= layers;
    out.push_back(u);
  }
}

/// EP's collectives of one pass with the flex dispatcher (see pass_collectives): DeepEP's fused dispatch and
/// combine over the ETP x EP group, each token once per destination rank (and node).
void add_ep_flex(const ModelConfig& m, const ChunkShape& s, bool backward, double recompute_fraction,
                 const CollectiveSizes& sizes, std::vector<CollectiveUse>& out) {
  const double layers = moe_layers(m, s);
  const FlexFanout fan = flex_fanout(m, s, sizes.flex_nodes);
  const double token_bytes =
      static_cast<double>(s.tokens) / s.tp * static_cast<double>(m.hidden_size) * sizes.wire.activation;
  const double phases = backward ? 1.0 + recompute_fraction : 1.0;
  const double node_bytes = sizes.flex_nodes > 1 ? token_bytes * fan.nodes : 0.0;
  const int ranks = s.etp * s.ep;
  for (CollectiveRole role : {CollectiveRole::kDispatch, CollectiveRole::kCombine})
    out.push_back(
        {GroupKind::kEtpEp, Collective::kAllToAll, role, ranks, phases * layers, token_bytes * fan.ranks, node_bytes});
}

/// EP's collectives of one pass with the allgather dispatcher (see pass_collectives): the gathered buffer holds every
/// rank's T / TP tokens of the ETP x EP group once (not top-k times).
void add_ep_allgather(const ModelConfig& m, const ChunkShape& s, bool backward, double recompute_fraction,
                      const CollectiveSizes& sizes, std::vector<CollectiveUse>& out) {
  const double layers = moe_layers(m, s);
  const int ranks = s.etp * s.ep;
  const GroupKind group = s.etp > 1 ? GroupKind::kEtpEp : GroupKind::kEp;  // the same ranks at ETP 1
  const double gathered = static_cast<double>(ranks) * static_cast<double>(s.tokens) / s.tp;  // tokens of the group

  const double token_bytes = gathered * static_cast<double>(m.hidden_size) * sizes.wire.activation;
  const double map_bytes = gathered * static_cast<double>(m.num_experts) * 5;  // FP32 probability + bool per expert
  const double forward_phases = backward ? recompute_fraction : 1.0;
  const Collective gather = Collective::kAllGather, scatter = Collective::kReduceScatter;
  const auto add = [&](Collective op, CollectiveRole role, double calls, double bytes) {
    if (calls > 0) out.push_back({group, op, role, ranks, calls, bytes});
  };
  add(gather, CollectiveRole::kRoutingMap, forward_phases * layers, map_bytes);
  add(gather, CollectiveRole::kDispatch, forward_phases * layers, token_bytes);
  add(scatter, CollectiveRole::kCombine, forward_phases * layers, token_bytes);
  if (backward) {
    add(scatter, CollectiveRole::kDispatch, layers, token_bytes);
    add(gather, CollectiveRole::kCombine, layers, token_bytes);
  }
}

/// EP's (and ETP's) collectives of one pass by the dispatcher (see pass_collectives).
void add_ep(const ModelConfig& m, const ChunkShape& s, bool backward, double recompute_fraction,
            const CollectiveSizes& sizes, std::vector<CollectiveUse>& out) {
  if (s.ep * s.etp <= 1 || !(moe_layers(m, s) > 0)) return;  // a dense layer's MLP issues none
  if (sizes.dispatcher == Dispatcher::kAllgather)
    add_ep_allgather(m, s, backward, recompute_fraction, sizes, out);
  else if (sizes.dispatcher == Dispatcher::kFlex || sizes.dispatcher == Dispatcher::kDeepep)
    add_ep_flex(m, s, backward, recompute_fraction, sizes, out);
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
