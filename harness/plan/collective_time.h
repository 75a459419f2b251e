// The time of one NCCL collective by an alpha-beta model (latency per step + bytes over bandwidth), and the link a
// group of ranks runs it on (NVLink within a node, the inter-node network across nodes). Pure arithmetic, no
// libtorch; a building block of the step-time model (issue 30).
#pragma once

#include <string>
#include <vector>

#include "catalog/hardware.h"
#include "layout/collective.h"
#include "layout/rank_map.h"

namespace recipebench {

/// The collectives the model times: the layout's table (layout/collective.h), shared with the backends' traffic.
using CollectiveKind = Collective;

/// "all-reduce", "reduce-scatter", "all-gather", "all-to-all", "send/recv", "barrier" (collective_row's text_name).
std::string collective_name(CollectiveKind kind);

/// One link of the alpha-beta model as a rank sees it.
struct Link {
  double bandwidth_bytes_per_s = 0;  ///< bus bandwidth one rank gets, one direction, bytes/s (beta = 1 / it)
  double latency_s = 0;              ///< latency of one step of the algorithm, seconds (alpha)
  std::string name;                  ///< "NVLink", "inter-node network": for breakdowns and assumptions
};

/// nccl-tests' bus-bandwidth factor of `kind` on `n` ranks (busbw = algbw x factor; NVIDIA/nccl-tests
/// doc/PERFORMANCE.md): ring all-reduce 2(n-1)/n; reduce-scatter, all-gather and all-to-all (n-1)/n; send and recv
/// 1; a barrier 0 (it moves no bytes). 0 for n = 1. Throws std::invalid_argument for n < 1.
double bus_factor(CollectiveKind kind, int n);

/// Latency steps of `kind` on `n` ranks: ring all-reduce 2(n-1) (a reduce-scatter then an all-gather around the
/// ring), reduce-scatter / all-gather / all-to-all n-1, send and recv 1, a barrier 2(n-1) (an all-reduce of one
/// element); 0 for n = 1. The step counts of NCCL's ring
/// model (NVIDIA/nccl src/graph/tuning.cc, nsteps). Throws std::invalid_argument for n < 1.
int latency_steps(CollectiveKind kind, int n);

/// Seconds of one collective of `bytes` (nccl-tests' "size": all-reduce the buffer, reduce-scatter the full input,
/// all-gather the full output, all-to-all what one rank sends to all ranks, its own share included; send/recv the
/// message) on a group of `group_size` ranks over `link`:
///   seconds = latency_steps(kind, n) x link.latency_s + bytes x bus_factor(kind, n) / link.bandwidth_bytes_per_s.
/// A group of one rank and a collective of 0 bytes cost 0 (nothing moves). Throws std::invalid_argument, naming the
/// value, for negative (or NaN) bytes, group_size < 1, bandwidth <= 0 (or NaN), negative latency.
double collective_seconds(CollectiveKind kind, double bytes, int group_size, const Link& link);

/// Seconds of one DeepEP normal-mode dispatch or combine (Megatron-Core's flex dispatcher) over a group spanning
/// `nodes` nodes (NVLink domains) with at most `ranks_per_node` of its ranks on one: the kernel forwards each token
/// once per destination node over the inter-node network (RDMA) and from there once per destination rank over
/// NVLink, the two legs pipelined through its channels, so the slower leg is the call's time (deepseek-ai/DeepEP's README, "Normal
/// kernels with NVLink and RDMA forwarding"; docs/step-time.md, "flex and ETP"):
///   seconds = max(collective_seconds(all-to-all, rank_bytes, ranks_per_node, nvlink),
///                 collective_seconds(all-to-all, node_bytes, nodes, network))
/// rank_bytes the rank's tokens once per destination rank, node_bytes once per destination node (nccl-tests' all-to-all
/// sizes, the rank's own share included); `network` the per-GPU share group_link gives a group across nodes. One node:
/// the NVLink leg alone (DeepEP's intranode kernels). Throws as collective_seconds (ranks_per_node < 1 included),
/// and std::invalid_argument for nodes < 1.
double deepep_seconds(double rank_bytes, double node_bytes, int ranks_per_node, int nodes, const Link& nvlink,
                      const Link& network);

/// Seconds of one NCCL all-to-all of `bytes` (what one rank sends to all ranks, its own share included) on a group
/// of `nodes` x `ranks_per_node` ranks spanning several nodes (NVLink domains): NCCL runs it as concurrent sends and
/// receives to every peer (nccl-tests src/alltoall.cu: ncclSend / ncclRecv in one group), the peers on the rank's
/// node over NVLink and the others over the network, so the slower leg is the call's time:
///   seconds = max(collective_seconds(all-to-all, bytes x ranks_per_node / G, ranks_per_node, nvlink),
///                 collective_seconds(all-to-all, bytes, nodes, network)),   G = nodes x ranks_per_node,
/// i.e. (ranks_per_node - 1) / G of the bytes on NVLink and (G - ranks_per_node) / G on the network (`network`: the
/// per-GPU share group_link gives a group across nodes). One node: the NVLink all-to-all alone. Throws as
/// deepep_seconds.
double split_all_to_all_seconds(double bytes, int ranks_per_node, int nodes, const Link& nvlink, const Link& network);

/// NVLink of `gpu` as a Link: bandwidth one direction = GpuSpec::nvlink_bandwidth / 2 (the catalog's figure counts
/// both directions: 900 GB/s -> 450e9 bytes/s on H100 / H200), latency kNvlinkStepLatencySeconds.
Link nvlink_link(const GpuSpec& gpu);

/// The scale-up link's name: the catalog's scale_up up to its parenthesis ("NVLink 4", "Infinity Fabric"), or
/// "scale-up link" when the catalog names none.
std::string scale_up_name(const GpuSpec& gpu);

/// The inter-node network of `instance` as the whole node sees it: bandwidth InstanceSpec::network_bytes_per_s,
/// latency kNetworkStepLatencySeconds. group_link shares it between the node's GPUs. Throws std::invalid_argument
/// when the instance has no network figure.
Link node_network_link(const InstanceSpec& instance);

/// True when the group's ranks sit on more than one node, rank r being on node r / gpus_per_node (the rank map's
/// placement, RankPlacement::node). Throws std::invalid_argument for an empty group, a member outside
/// 0..map.world-1, or gpus_per_node < 1.
bool group_spans_nodes(const RankMap& map, const std::vector<int>& members, int gpus_per_node);

/// The slowest link the group runs its collectives on. Within one node: `nvlink`. Across nodes: the inter-node
/// network with each GPU's share of its node's bandwidth, node_network.bandwidth_bytes_per_s / gpus_per_node
/// (the rule: every GPU of a node talks across nodes at once, as the DP or EP groups of all local ranks of a
/// layout do in the same phase, so each gets its rail's share; a lone group that could use all the node's cards
/// is timed as slow), the latency the larger of the two, and NVLink kept when it is the slower (never in the
/// catalog). Throws std::invalid_argument as group_spans_nodes, and for a bandwidth <= 0 of a link it uses.
Link group_link(const RankMap& map, const std::vector<int>& members, int gpus_per_node, const Link& nvlink,
                const Link& node_network);

}  // namespace recipebench
