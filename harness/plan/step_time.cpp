#include "plan/step_time.h"

#include <algorithm>
#include <cmath>
#include <regex>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "layout/parallel_group.h"
#include "metrics/metrics.h"
#include "plan/analytical_costs.h"
#include "plan/memory_plan.h"
#include "plan/optimizer_traffic.h"
#include "plan/pass_collectives.h"
#include "plan/selective_recompute.h"
#include "plan/topology.h"
#include "recipe/result_check.h"
#include "schedule/pipeline_timing.h"
#include "settings/switches.h"

namespace recipebench {

namespace {


const RankPlacement& first_rank_of_stage(const RankMap& map, int pp) {
  if (map.stage_first_rank.size() == static_cast<size_t>(map.pp) && pp >= 0 && pp < map.pp) {  // the map's index
    const size_t i = map.stage_first_rank[static_cast<size_t>(pp)];
    if (i < map.ranks.size() && map.ranks[i].pp == pp) return map.ranks[i];
  }
  for (const RankPlacement& r : map.ranks)
    if (r.pp == pp) return r;
  throw std::invalid_argument("rank map without pipeline rank " + std::to_string(pp));
}

/// The rank after `q` in its pipeline (same TP, CP, DP coordinates, pipeline rank + 1 mod PP).
int next_in_pipeline(const RankMap& map, const RankPlacement& q) {
  const int next = (q.pp + 1) % map.pp;
  const std::vector<int> pipeline = group_members(map, q.rank, GroupKind::kPp);
  for (int r : pipeline)
    if ((map.stages_only ? rank_placement(map, r) : map.ranks[static_cast<size_t>(r)]).pp == next) return r;
  throw std::invalid_argument("rank map without the pipeline neighbour of rank " + std::to_string(q.rank));
}

/// "3.2 Tb/s" / "400 Gb/s" / "3,200 Gbps" / "50 GB/s" in `text` -> bytes/s, and whether it is per GPU.
std::optional<std::pair<double, bool>> network_rate(const std::string& text) {
  static const std::regex re(R"(([0-9][0-9,]*(?:\.[0-9]+)?)\s*(Tb/s|Tbps|Gb/s|Gbps|TB/s|GB/s)(.{0,30}))",
                             std::regex::icase);
  std::smatch m;
  if (!std::regex_search(text, m, re)) return std::nullopt;
  std::string digits = m[1].str();
  digits.erase(std::remove(digits.begin(), digits.end(), ','), digits.end());
  double v = std::stod(digits);
  const std::string unit = m[2].str();
  const char prefix = static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0])));
  const bool bytes = unit.size() > 1 && unit[1] == 'B';
  v *= prefix == 'T' ? 1e12 : 1e9;
  if (!bytes) v /= 8;
  const std::string tail = m[3].str();
  const bool per_gpu = tail.find("per GPU") != std::string::npos || tail.find("/GPU") != std::string::npos;
  return std::make_pair(v, per_gpu);
}

}  // namespace

NetworkModel recipe_network(const Recipe& recipe) {
  const GpuSpec* gpu = find_gpu(recipe.gpu.type);
  if (gpu == nullptr) throw std::invalid_argument("GPU " + recipe.gpu.type + " is not in the catalog");
  NetworkModel n;
  n.nvlink = nvlink_link(*gpu);
  const InstanceSpec* inst = recipe.gpu.instance.empty() ? nullptr : find_instance(recipe.gpu.instance);
  if (inst == nullptr) inst = default_instance_for_gpu(recipe.gpu.type);
  n.gpus_per_node = recipe.gpu.per_node > 0 ? recipe.gpu.per_node : inst ? inst->gpus : 8;
  n.source = fmt::format("{}: {:.0f} GB/s per GPU one direction ({}), step latency {:.1f} us", n.nvlink.name,
                         n.nvlink.bandwidth_bytes_per_s / 1e9, gpu->source, n.nvlink.latency_s * 1e6);
  std::string stated;
  if (recipe.doc.contains("stack") && recipe.doc["stack"].is_object() && recipe.doc["stack"].contains("network") &&
      recipe.doc["stack"]["network"].is_string())
    stated = recipe.doc["stack"]["network"].get<std::string>();
  if (const auto rate = network_rate(stated)) {
    n.node_network.bandwidth_bytes_per_s = rate->second ? rate->first * n.gpus_per_node : rate->first;
    n.node_network.latency_s = kNetworkStepLatencySeconds;
    n.node_network.name = "inter-node network";
    n.source += fmt::format("; across nodes {:.0f} GB/s per node from stack.network (\"{}\")",
                            n.node_network.bandwidth_bytes_per_s / 1e9, stated);
  } else if (inst != nullptr && inst->network_bytes_per_s > 0) {
    n.node_network = node_network_link(*inst);
    n.source += fmt::format("; across nodes {:.0f} GB/s per node ({}: {})", n.node_network.bandwidth_bytes_per_s / 1e9,
                            inst->label(), inst->network_source);
    join_nvlink_domain(n, *inst);  // GB200 NVL72: NVLink across the rack's 18 instances (plan/topology.h)
  } else if (recipe.gpu.count > n.gpus_per_node) {
    throw std::invalid_argument("no inter-node bandwidth for " + recipe.gpu.type +
                                ": state it in stack.network (e.g. \"3.2 Tb/s per node\") or name a catalog instance");
  }
  return n;
}

OptimizerShards optimizer_shards(const MemoryPlan& plan, const RankMap& map, int pp) {
  const RankMemory& rm = plan.ranks.at(static_cast<size_t>(pp));
  OptimizerShards s;
  s.dense = static_cast<double>(rm.dense_params);
  s.experts = static_cast<double>(rm.expert_params);
  if (plan.experts_in_distributed_optimizer) {
    s.dense += s.experts;
    s.experts = 0;
  }
  s.dense_groups = std::max(1, map.dp);
  s.expert_groups = std::max(1, plan.expert_state_shards);
  return s;
}

double recompute_fraction(const RecipeRecompute& r, int64_t chunk_layers) {
  if (r.granularity != "full" || chunk_layers <= 0) return 0;
  if (r.method == "block")
    return static_cast<double>(std::min<int64_t>(r.num_layers, chunk_layers)) / static_cast<double>(chunk_layers);
  return 1;
}

namespace {

/// What predict_step shares between its parts.
struct StepInputs {
  const Recipe& recipe;
  const ModelConfig& model;
  const RankMap& map;
  const UnitCosts& costs;
  const NetworkModel& network;
  const StepTimeOptions& options;
  const std::optional<GpuScaling>& scaling;  ///< profile GPU -> recipe GPU; nullopt on the same GPU
  CollectiveSizes sizes;                     ///< the recipe's wire bytes and the run's dispatcher

  /// Target seconds / profile seconds of component c, the stack factor included.
  double scale(int c) const { return (scaling ? scaling->scale[c] : 1.0) * options.stack_factor; }
  /// The same for the optimizer step.
  double optimizer_scale() const { return (scaling ? scaling->optimizer_scale : 1.0) * options.stack_factor; }

  Link link_of(const std::vector<int>& members) const {
    return group_link(map, members, network.gpus_per_node, network.nvlink, network.node_network);
  }
};

/// Collectives of one pass on one chunk, seconds (exposed part).
struct PassComm {
  double tp = 0, ep = 0, cp = 0;
};

/// The links of a pipeline rank's TP, EP, CP, ETP and ETP x EP groups (of its first rank), and for the flex
/// dispatcher the ETP x EP group's placement: its nodes, the most of its ranks on one, the network share across them.
struct PassLinks {
  Link tp, ep, cp, etp, etp_ep;  ///< each group's slowest link (group_link)
  Link nvlink;                    ///< flex's NVLink leg, and the alltoall dispatcher's across nodes
  int flex_nodes = 1, flex_ranks_per_node = 1;
  int ep_nodes = 1, ep_ranks_per_node = 1;  ///< the EP group's nodes and the most of its ranks on one
  const Link& of(GroupKind g) const {
    switch (g) {
      case GroupKind::kTp:
        return tp;
      case GroupKind::kCp:
        return cp;
      case GroupKind::kEtp:
        return etp;
      case GroupKind::kEtpEp:
        return etp_ep;
      default:
        return ep;
    }
  }
};

/// The seconds of one call of `u` on its group's link: a flex dispatch or combine (group kEtpEp, an all-to-all) by
/// deepep_seconds on the group's NVLink and network legs, an EP all-to-all across nodes by split_all_to_all_seconds
/// (its on-node peers over NVLink, the rest over the network), any other by collective_seconds.
double use_seconds(const CollectiveUse& u, const CollectiveSizes& sizes, const PassLinks& links) {
  const bool flex = sizes.dispatcher == Dispatcher::kFlex || sizes.dispatcher == Dispatcher::kDeepep;
  if (flex && u.group == GroupKind::kEtpEp && u.op == Collective::kAllToAll)
    return deepep_seconds(u.bytes, u.node_bytes, links.flex_ranks_per_node, links.flex_nodes, links.nvlink,
                          links.etp_ep);
  if (u.group == GroupKind::kEp && u.op == Collective::kAllToAll && links.ep_nodes > 1)
    return split_all_to_all_seconds(u.bytes, links.ep_ranks_per_node, links.ep_nodes, links.nvlink, links.ep);
  return collective_seconds(u.op, u.bytes, u.ranks, links.of(u.group));
}

/// The seconds of one pass's collectives (pass_collectives: TP's sequence-parallel gathers and scatters, EP's
/// dispatch and combine, CP's ring exchange) on their groups' links. With overlap_tp_comm a backward pass's
/// reduce-scatters at the column-parallel entries (one per mixer, one per shared expert) run beside the weight
/// gradients: hidden up to half the backward seconds of the mixers and the shared expert. CP's ring steps (a send
/// and a receive at once: the sends' seconds) run beside the attention layers' compute, as ring attention overlaps
/// each step's exchange with the previous chunk's attention: exposed beyond the pass's attention seconds.
PassComm pass_comm(const StepInputs& in, const ChunkShape& s, const PhaseCells& cells, bool backward,
                   const RecomputedCollectives& recompute, const PassLinks& links, const CollectiveSizes& sizes) {
  PassComm out;
  double entry_scatters = 0;
  for (const CollectiveUse& u : pass_collectives(in.model, s, backward, recompute, sizes)) {
    if (u.op == Collective::kRecv) continue;  // a ring step's receive runs beside its send
    const double seconds = u.calls * use_seconds(u, sizes, links);
    (u.group == GroupKind::kTp ? out.tp : u.group == GroupKind::kCp ? out.cp : out.ep) += seconds;
    if (u.group == GroupKind::kTp && u.role == CollectiveRole::kLayerEntry && u.op == Collective::kReduceScatter)
      entry_scatters += seconds;
  }
  if (backward && in.options.settings.overlap_tp_comm) {
    const double hide = 0.5 * (cells[kBackwardIndex][static_cast<int>(ProfileComponent::kGdn)] +
                               cells[kBackwardIndex][static_cast<int>(ProfileComponent::kAttention)] +
                               cells[kBackwardIndex][static_cast<int>(ProfileComponent::kMoeSharedExpert)] +
                               cells[kBackwardIndex][static_cast<int>(ProfileComponent::kDenseMlp)]);
    out.tp -= std::min(entry_scatters, hide);
  }
  double attention = 0;
  for (int ph = 0; ph < kPassPhases; ++ph) attention += cells[ph][static_cast<int>(ProfileComponent::kAttention)];
  out.cp = std::max(0.0, out.cp - attention);
  return out;
}

/// The nodes a group's `members` (ascending) span, and the most of them on one node (rank r on node r / gpus_per_node).
std::pair<int, int> group_nodes(const std::vector<int>& members, int gpus_per_node) {
  std::vector<int> per_node;
  int last_node = -1;
  for (int r : members) {  // ascending: a node's ranks together
    const int node = r / std::max(1, gpus_per_node);
    if (node != last_node) per_node.push_back(0), last_node = node;
    ++per_node.back();
  }
  if (per_node.empty()) return {1, 1};
  return {static_cast<int>(per_node.size()), *std::max_element(per_node.begin(), per_node.end())};
}

/// The links of pipeline rank `p`'s groups (its first rank's), with the ETP x EP group's placement for flex and the
/// EP group's for the alltoall dispatcher's all-to-alls across nodes.
PassLinks stage_links(const StepInputs& in, int p) {
  const RankMap& map = in.map;
  const RankPlacement& q = first_rank_of_stage(map, p);
  const auto link = [&](GroupKind g, bool used) {
    return used ? in.link_of(group_members(map, q.rank, g)) : in.network.nvlink;
  };
  PassLinks links{link(GroupKind::kTp, true),       link(GroupKind::kEp, map.ep > 1),
                  link(GroupKind::kCp, map.cp > 1), link(GroupKind::kEtp, map.etp > 1),
                  link(GroupKind::kEtpEp, map.ep * map.etp > 1), in.network.nvlink};
  if (map.ep * map.etp > 1)
    std::tie(links.flex_nodes, links.flex_ranks_per_node) =
        group_nodes(group_members(map, q.rank, GroupKind::kEtpEp), in.network.gpus_per_node);
  if (map.ep > 1)
    std::tie(links.ep_nodes, links.ep_ranks_per_node) =
        group_nodes(group_members(map, q.rank, GroupKind::kEp), in.network.gpus_per_node);
  return links;
}

/// Pipeline rank `p`'s passes: each chunk's forward and backward durations (compute + exposed TP, EP and CP), and the
/// rank's compute by component, recompute, exposed TP, EP and CP per step and mean passes into `rt`. The flex
/// dispatcher and ETP > 1 scale the moe_dispatch and moe_combine seconds by dispatch_work (plan/pass_collectives.h).
void time_stage_passes(const StepInputs& in, int p, PassDurations& durations, RankStepTime& rt) {
  const RankMap& map = in.map;
  const PassLinks links = stage_links(in, p);
  CollectiveSizes sizes = in.sizes;
  sizes.flex_nodes = links.flex_nodes;
  PassCostOptions o;
  for (int c = 0; c < kProfileComponents; ++c) o.scale[c] = in.scale(c);
  const ComponentCells scale = o.scale;
  const double mb = static_cast<double>(map.microbatches);
  const RecipeRecompute& recompute = in.recipe.layout.recompute;
  const SplitGpu split_gpu = recompute_split_gpu(in.costs.gpu, in.recipe.gpu.type);
  const std::vector<ChunkShape> shapes = chunk_shapes(map, in.model, p, in.recipe.workload.row_tokens);
  rt.pp_rank = p;
  for (int v = 0; v < map.vpp; ++v) {
    const ChunkShape& s = shapes[static_cast<size_t>(v)];
    o.recompute = recomputed_shares(recompute, in.model, s, split_gpu);  // plan/selective_recompute.h
    if (moe_layers(in.model, s) > 0) {  // the dispatcher's permutations (1 and 1: alltoall at ETP 1)
      const DispatchWork work =
          dispatch_work(in.model, s, sizes.dispatcher, flex_fanout(in.model, s, links.flex_nodes));
      o.scale[static_cast<int>(ProfileComponent::kMoeDispatch)] =
          scale[static_cast<int>(ProfileComponent::kMoeDispatch)] * work.dispatch;
      o.scale[static_cast<int>(ProfileComponent::kMoeCombine)] =
          scale[static_cast<int>(ProfileComponent::kMoeCombine)] * work.combine;
    }
    const PhaseCells fwd = pass_cells(in.costs, in.model, s, false, o);
    const PhaseCells bwd = pass_cells(in.costs, in.model, s, true, o);
    const PassComm fc = pass_comm(in, s, fwd, false, RecomputedCollectives{}, links, sizes);
    const PassComm bc = pass_comm(in, s, bwd, true, recomputed_collectives(recompute, in.model, s), links, sizes);
    durations.forward[p][v] = cells_seconds(fwd) + fc.tp + fc.ep + fc.cp;
    durations.backward[p][v] = cells_seconds(bwd) + bc.tp + bc.ep + bc.cp;
    for (int c = 0; c < kProfileComponents; ++c) {
      for (int ph = 0; ph < kPassPhases; ++ph) rt.compute[c] += mb * (fwd[ph][c] + bwd[ph][c]);
      rt.recompute += mb * bwd[kRecomputeIndex][c];
    }
    rt.tp_exposed += mb * (fc.tp + bc.tp);
    rt.ep_exposed += mb * (fc.ep + bc.ep);
    rt.cp_exposed += mb * (fc.cp + bc.cp);
    rt.forward_pass += durations.forward[p][v] / map.vpp;
    rt.backward_pass += durations.backward[p][v] / map.vpp;
  }
}

/// Seconds of one transfer between pipeline rank `p` and the next: the chunk's sequence-parallel shard of hidden
/// states, T / TP x h BF16 values, on the link between the two ranks.
double p2p_seconds(const StepInputs& in, int p) {
  const RankPlacement& q = first_rank_of_stage(in.map, p);
  const double bytes = pipeline_transfer_bytes(in.map, in.model, in.recipe.workload.row_tokens, in.sizes.wire);
  return collective_seconds(Collective::kSend, bytes, 2, in.link_of({q.rank, next_in_pipeline(in.map, q)}));
}

/// Pipeline rank `p`'s distributed optimizer: gradients reduce-scattered (FP32) and parameters all-gathered (BF16),
/// over DP for the dense parameters (with the experts when they are not apart) and over EDP for the experts apart;
/// the exposed seconds as the overlap switches leave them (hidden behind the rank's last microbatch's backward passes
/// and its first microbatch's forward passes, up to their length), and the optimizer step on the rank's shard.
void time_stage_optimizer(const StepInputs& in, const MemoryPlan& memory, int p, const PassDurations& durations,
                          RankStepTime& rt) {
  const RankMap& map = in.map;
  const RankPlacement& q = first_rank_of_stage(map, p);
  const OptimizerShards shards = optimizer_shards(memory, map, p);
  double rs = 0, ag = 0;
  for (const CollectiveUse& u : optimizer_collectives(shards, in.sizes.wire)) {
    const double seconds =
        u.calls * collective_seconds(u.op, u.bytes, u.ranks, in.link_of(group_members(map, q.rank, u.group)));
    (u.role == CollectiveRole::kGradientReduce ? rs : ag) += seconds;
  }
  double last_backward = 0, first_forward = 0;
  for (int v = 0; v < map.vpp; ++v) {
    last_backward += durations.backward[p][v];
    first_forward += durations.forward[p][v];
  }
  rt.dp_exposed = (in.options.settings.overlap_grad_reduce ? std::max(0.0, rs - last_backward) : rs) +
                  (in.options.settings.overlap_param_gather ? std::max(0.0, ag - first_forward) : ag);
  const double bytes = optimizer_step_bytes_per_param(in.recipe.optimizer, in.costs.kernels) * shards.shard_params();
  const double bandwidth = in.costs.weight_stream_bytes_per_s;
  rt.optimizer = bandwidth > 0 ? bytes / bandwidth * in.optimizer_scale() : 0;
}

/// tokens/s/GPU, MFU, $ per 1M tokens and GPU-hours of `out.step_seconds` (docs/metrics.md's formulas).
/// What timed the step, for a refusal: the profiles read (or the analytical mode's catalog efficiencies) and a
/// stack factor other than 1, e.g. "the analytical mode's catalog efficiencies x stack factor 0.01".
std::string timing_inputs_text(const StepInputs& in) {
  std::string s = in.costs.sources.empty() ? std::string("the analytical mode's catalog efficiencies")
                                           : fmt::format("the profiles ({})", fmt::join(in.costs.sources, ", "));
  if (in.options.stack_factor != 1) s += fmt::format(" x stack factor {}", in.options.stack_factor);
  return s;
}

void add_figures(const StepInputs& in, StepPrediction& out) {
  const Recipe& recipe = in.recipe;
  out.tokens_per_step = static_cast<double>(recipe.workload.global_batch) * recipe.workload.row_tokens;
  const int world = static_cast<int>(in.map.world);
  out.tokens_per_s_per_gpu = tokens_per_s_per_gpu(out.tokens_per_step, out.step_seconds, world);
  const GpuSpec* gpu = find_gpu(recipe.gpu.type);
  if (gpu != nullptr && gpu->peak_bf16_flops > 0)
    out.mfu =
        mfu_6n(static_cast<double>(count_params(in.model).active), out.tokens_per_s_per_gpu, gpu->peak_bf16_flops);
  if (const std::optional<Price> price = recipe_price(recipe))  // the recipe's, its instance's or its GPU's default
    out.usd_per_million_tokens = usd_per_million_tokens(price->usd_per_gpu_hour, out.tokens_per_s_per_gpu);
  out.steps_for_gpu_hours = recipe.result ? recipe.result->steps_per_run : 20;
  out.gpu_hours = gpu_hours(world, out.steps_for_gpu_hours * out.step_seconds);
  // No prediction past physics: a step that is not a finite positive time, or one faster than the GPU's peak, says
  // the inputs (profiles, stack factor, catalog) time less than the work; never printed or written as a figure.
  if (!(std::isfinite(out.step_seconds) && out.step_seconds > 0 && std::isfinite(out.gpu_hours)))
    throw BeyondPhysics(fmt::format("a predicted step of {} s, expected a finite time > 0 s (from {})",
                                            out.step_seconds, timing_inputs_text(in)));
  if (out.mfu && !(*out.mfu <= 1))
    throw BeyondPhysics(fmt::format(
        "a predicted MFU of {:.1f}%, expected at most 100% of the {}'s dense BF16 peak: {} time less than the work",
        *out.mfu * 100, recipe.gpu.type, timing_inputs_text(in)));
}

/// The flex dispatcher's assumption line (docs/step-time.md, "flex and ETP"): its group, each token's fanout on the
/// first pipeline rank's first chunk, the legs it is timed on and the permutations' factors.
std::string flex_assumption(const StepInputs& in) {
  const PassLinks links = stage_links(in, 0);
  const ChunkShape s = chunk_shapes(in.map, in.model, 0, in.recipe.workload.row_tokens).front();
  const FlexFanout fan = flex_fanout(in.model, s, links.flex_nodes);
  const DispatchWork work = dispatch_work(in.model, s, in.sizes.dispatcher, fan);
  const std::string legs =
      links.flex_nodes > 1
          ? fmt::format("across {} nodes each token also once per destination node ({:.2f} of them), the slower of "
                        "the network leg (the nodes' all-to-all at the network's per-GPU share) and the {} leg ({} "
                        "ranks a node)",
                        links.flex_nodes, fan.nodes, links.nvlink.name, links.flex_ranks_per_node)
          : "within one node: one all-to-all on " + links.nvlink.name;
  return fmt::format(
      "EP dispatcher {} (Megatron-Core's MoEFlexTokenDispatcher with DeepEP's normal kernels, over the ETP x EP group "
      "of {} ranks): each token sent once per destination rank, {:.2f} of them a token (ETP x the EP ranks its top-{} "
      "experts fall on, uniform routing: {} x {:.2f}) where alltoall sends {} rows; {}; at the link model's bandwidth "
      "(DeepEP's README measured its normal kernels within an H800 node at 153-158 GB/s of its ~160 GB/s and across "
      "nodes at 43-58 GB/s of a 50 GB/s CX7 RDMA NIC); the sender's permutation fused into the kernel: moe_dispatch x {:.3f}, moe_combine x "
      "{:.3f} of alltoall's permutation bytes{}",
      to_string(in.sizes.dispatcher), in.map.etp * in.map.ep, fan.ranks, in.model.top_k, in.map.etp,
      fan.ranks / in.map.etp, in.model.top_k, legs, work.dispatch, work.combine,
      in.map.etp > 1 ? "; no ETP all-gather: the ETP ranks are destinations, the combine sums their partial outputs"
                     : "");
}

/// The ETP > 1 assumption line of the alltoall dispatcher (docs/step-time.md, "flex and ETP").
std::string etp_assumption(const StepInputs& in) {
  const ChunkShape s = chunk_shapes(in.map, in.model, 0, in.recipe.workload.row_tokens).front();
  const DispatchWork work = dispatch_work(in.model, s, in.sizes.dispatcher, FlexFanout{});
  return fmt::format(
      "ETP {} (Megatron-Core's expert tensor parallelism, MoEAlltoAllTokenDispatcher): per MoE layer an all-gather "
      "over the ETP group of the rows each rank received after the dispatch (ETP x its rows) and a reduce-scatter of "
      "the experts' partial outputs before the combine, a backward the mirror, on the ETP group's link; the experts' "
      "FLOP per rank unchanged (ETP x the rows at 1 / ETP of the width: fc1 by columns, fc2 by rows), their weights "
      "/ ETP, the grouped GEMMs at ETP x the rows per expert; the sort by local expert over the gathered rows: "
      "moe_dispatch x {:.3f}, moe_combine x {:.3f} of ETP 1's permutation bytes",
      in.map.etp, work.dispatch, work.combine);
}

/// The assumption line of EP's dispatch: the dispatcher's collectives and their sizing.
std::string ep_assumption(const StepInputs& in) {
  const Dispatcher d = in.sizes.dispatcher;
  if (d == Dispatcher::kFlex || d == Dispatcher::kDeepep) return flex_assumption(in);
  if (d == Dispatcher::kAllgather)
    return std::string("EP dispatcher allgather (Megatron-LM's MoEAllGatherTokenDispatcher): every EP rank's tokens "
                       "all-gathered with the routing map and probabilities, the experts' outputs reduce-scattered "
                       "back (EP x the tokens of a rank, each once)") +
           (in.map.etp > 1 ? fmt::format("; over the ETP x EP group of {} ranks (ETP {}): ETP x EP x the tokens of a "
                                         "rank, the reduce-scatter summing the ETP ranks' partial outputs",
                                         in.map.etp * in.map.ep, in.map.etp)
                           : "");
  const std::string sizing =
      in.sizes.dispatch == EpDispatch::kFixedCapacity
          ? fmt::format("EP dispatch fixed_capacity: each all-to-all sends EP blocks of {} tokens x top-k "
                        "rows, padding included (layout.max_tokens_per_gpu / TP)",
                        in.sizes.capacity_tokens)
          : std::string("EP dispatch host_splits, routing balanced: each rank's experts get its own "
                        "tokens' top-k slots over the EP group");
  return in.map.etp > 1 ? sizing + "; " + etp_assumption(in) : sizing;
}

std::vector<std::string> assumptions(const StepInputs& in) {
  const StepTimeOptions& o = in.options;
  std::vector<std::string> a;
  if (in.costs.sources.empty())
    a.push_back(
        fmt::format("compute: analytical, no profile: each component's work by docs/step-time.md's formulas "
                    "at the catalog's efficiencies on {} (catalog/efficiency.yaml; the curves in the notes)",
                    in.costs.gpu));
  else
    a.push_back(
        fmt::format("compute: {} profile(s) on {} ({}); each component a fixed part per pass ({}) plus its work by "
                    "docs/step-time.md's formulas at the measured seconds per unit",
                    in.costs.sources.size(), in.costs.gpu, in.costs.model,
                    in.costs.fixed_fitted ? "fitted over the profiles' microbatch sizes"
                                          : "the weights streamed at the profile's optimizer bandwidth"));
  for (const std::string& note : in.costs.notes) a.push_back(note);
  for (const std::string& source : in.costs.sources)  // a calibrated profile's factor (docs/step-time.md)
    if (source.find(" (calibrated x ") != std::string::npos) a.push_back("profile " + source);
  a.push_back(fmt::format(
      "optimizer step: {:g} bytes per parameter of the shard ({}, docs/optimizer.md) at {:.2f} "
      "TB/s ({} optimizer bandwidth)",
      optimizer_step_bytes_per_param(in.recipe.optimizer, in.costs.kernels), optimizer_state_label(in.recipe.optimizer),
      in.costs.weight_stream_bytes_per_s / 1e12, in.costs.sources.empty() ? "the catalog's" : "the profiles'"));
  if (o.stack_factor != 1) a.push_back(fmt::format("stack factor {:.3f} on every compute second", o.stack_factor));
  if (in.map.ep > 1 || (in.map.etp > 1 && in.model.num_experts > 0)) a.push_back(ep_assumption(in));
  if (in.map.cp > 1)
    a.push_back(fmt::format(
        "CP {}: ring attention's exchange of keys and values, {} ring step(s) per attention layer per forward, twice "
        "that per backward (keys and values, and their gradients), each a send and a receive of 2 x T x "
        "{} KV heads x {} / TP values, hidden behind the attention layers' compute up to its seconds; Gated "
        "DeltaNet's state passing between CP ranks not modelled",
        in.map.cp, in.map.cp - 1, in.model.num_kv_heads, in.model.head_dim));
  a.push_back(
      fmt::format("collectives as the torch backend issues them (plan/pass_collectives.h), {:g}-byte "
                  "activations and parameters, {:g}-byte gradients ({})",
                  in.sizes.wire.activation, in.sizes.wire.gradient, in.recipe.workload.precision));
  if (in.recipe.layout.recompute.granularity == "selective")
    a.push_back(selective_recompute_assumption(in.recipe.layout.recompute, in.model,
                                               recompute_split_gpu(in.costs.gpu, in.recipe.gpu.type).gpu.name));
  a.push_back("network: " + in.network.source +
              "; collectives ring / alpha-beta with nccl-tests' bus factors (plan/collective_time.h), a group on its "
              "slowest link");
  std::string priced;
  for (const RunSwitch* s : priced_switches())
    priced += fmt::format("{}bench.{} {}", priced.empty() ? "" : ", ", s->field, switch_value_text(*s, o.settings));
  a.push_back("overlap (the priced switches, settings/switches.h): " + priced + "; EP all-to-alls always exposed");
  a.push_back(
      "not modelled: the gradient norm's all-reduces, TP all-reduce of sequence-parallel replicated weights' "
      "gradients, data loading");
  return a;
}

}  // namespace

std::optional<GpuScaling> scaling_to_recipe(const Recipe& recipe, const ModelConfig& model, const RankMap& map,
                                            const UnitCosts& costs) {
  if (costs.gpu == "CPU" || recipe.gpu.type == "CPU") return std::nullopt;
  const GpuSpec* from = find_gpu(costs.gpu);
  const GpuSpec* to = find_gpu(recipe.gpu.type);
  if (from == nullptr || to == nullptr)
    throw std::invalid_argument("GPU " + (from ? recipe.gpu.type : costs.gpu) + " is not in the catalog");
  if (from == to) return std::nullopt;
  const ChunkShape shape = chunk_shapes(map, model, 0, recipe.workload.row_tokens).front();
  return per_operation_scaling(hardware_catalog(), *from, *to, model, shape);
}

StepPrediction predict_step(const Recipe& recipe, const ModelConfig& model, const RankMap& map, const UnitCosts& given,
                            const NetworkModel& network, const StepTimeOptions& options) {
  // The analytical mode's costs read at this layout's shape, the one rule predict and plan share.
  const std::optional<UnitCosts> at_layout = analytical_costs_at_layout(given, recipe, model, map);
  const UnitCosts& costs = at_layout ? *at_layout : given;
  const std::optional<GpuScaling> scaling = scaling_to_recipe(recipe, model, map, costs);
  const StepInputs in{recipe,  model,   map,     costs,
                      network, options, scaling, collective_sizes(recipe, options.settings.ep_dispatch)};
  const int pp = map.pp;
  PassDurations durations;
  durations.forward.assign(pp, std::vector<double>(map.vpp, 0));
  durations.backward.assign(pp, std::vector<double>(map.vpp, 0));
  std::vector<RankStepTime> ranks(pp);
  PipelineTimingOptions po;
  po.link_p2p_seconds.assign(pp, 0);
  po.overlap_p2p = options.settings.overlap_p2p_comm;
  const MemoryPlan memory = plan_memory(recipe, model, map);
  for (int p = 0; p < pp; ++p) {
    time_stage_passes(in, p, durations, ranks[p]);
    if (pp > 1) po.link_p2p_seconds[p] = p2p_seconds(in, p);
    time_stage_optimizer(in, memory, p, durations, ranks[p]);
  }

  const PipelineTiming timing = time_pipeline(pp, map.vpp, map.microbatches, durations, po);
  const std::vector<double>& end = timing.end_seconds;  // each rank's last pass (its steady state carried)
  StepPrediction out;
  for (int p = 0; p < pp; ++p) {
    RankStepTime& rt = ranks[p];
    rt.pipeline_idle = end[p] - timing.busy_seconds[p];
    rt.p2p_wait = timing.p2p_wait_seconds[p];
    rt.step = end[p] + rt.dp_exposed + rt.optimizer;
    if (rt.step > ranks[out.critical_pp_rank].step) out.critical_pp_rank = p;
  }
  out.ranks = ranks;
  out.step_seconds = ranks[out.critical_pp_rank].step;
  add_figures(in, out);
  out.assumptions = assumptions(in);
  out.gpu_scaling = scaling;
  return out;
}

}  // namespace recipebench
