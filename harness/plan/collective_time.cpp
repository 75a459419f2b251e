#include "plan/collective_time.h"

#include <algorithm>
#include <stdexcept>

#include "util/format.h"

namespace recipebench {

namespace {

void check_group_size(int n) {
  if (n < 1) throw std::invalid_argument("collective: group size " + std::to_string(n) + ", expected >= 1");
}

void check_link(const Link& link) {
  if (!(link.bandwidth_bytes_per_s > 0))
    throw std::invalid_argument("collective: link '" + link.name + "' bandwidth " +
                                shortest(link.bandwidth_bytes_per_s) + " bytes/s, expected > 0");
  if (!(link.latency_s >= 0))
    throw std::invalid_argument("collective: link '" + link.name + "' latency " + shortest(link.latency_s) +
                                " s, expected >= 0");
}

}  // namespace

std::string collective_name(CollectiveKind kind) { return collective_row(kind).text_name; }

double bus_factor(CollectiveKind kind, int n) {
  check_group_size(n);
  if (n == 1) return 0;
  const double share = double(n - 1) / n;
  switch (kind) {
    case Collective::kAllReduce:
      return 2 * share;
    case Collective::kReduceScatter:
    case Collective::kAllGather:
    case Collective::kAllToAll:
      return share;
    case Collective::kSend:
    case Collective::kRecv:
      return 1;
    case Collective::kBarrier:
      return 0;
  }
  return 0;
}

int latency_steps(CollectiveKind kind, int n) {
  check_group_size(n);
  if (n == 1) return 0;
  switch (kind) {
    case Collective::kAllReduce:
    case Collective::kBarrier:
      return 2 * (n - 1);
    case Collective::kReduceScatter:
    case Collective::kAllGather:
    case Collective::kAllToAll:
      return n - 1;
    case Collective::kSend:
    case Collective::kRecv:
      return 1;
  }
  return 0;
}

double collective_seconds(CollectiveKind kind, double bytes, int group_size, const Link& link) {
  if (!(bytes >= 0))
    throw std::invalid_argument("collective " + collective_name(kind) + ": " + shortest(bytes) +
                                " bytes, expected >= 0");
  check_group_size(group_size);
  check_link(link);
  if (group_size == 1 || bytes == 0) return 0;
  return latency_steps(kind, group_size) * link.latency_s +
         bytes * bus_factor(kind, group_size) / link.bandwidth_bytes_per_s;
}

double deepep_seconds(double rank_bytes, double node_bytes, int ranks_per_node, int nodes, const Link& nvlink,
                      const Link& network) {
  if (nodes < 1) throw std::invalid_argument("deepep: " + std::to_string(nodes) + " nodes, expected >= 1");
  const double within = collective_seconds(Collective::kAllToAll, rank_bytes, ranks_per_node, nvlink);
  if (nodes == 1) return within;
  return std::max(within, collective_seconds(Collective::kAllToAll, node_bytes, nodes, network));
}

double split_all_to_all_seconds(double bytes, int ranks_per_node, int nodes, const Link& nvlink, const Link& network) {
  check_group_size(ranks_per_node);
  const double group = static_cast<double>(ranks_per_node) * std::max(1, nodes);
  return deepep_seconds(bytes * ranks_per_node / group, bytes, ranks_per_node, nodes, nvlink, network);
}

std::string scale_up_name(const GpuSpec& gpu) {
  const std::string name = gpu.scale_up.substr(0, gpu.scale_up.find(" ("));
  return name.empty() ? "scale-up link" : name;
}

Link nvlink_link(const GpuSpec& gpu) {
  return Link{gpu.nvlink_bandwidth / 2, kNvlinkStepLatencySeconds, scale_up_name(gpu)};
}

Link node_network_link(const InstanceSpec& instance) {
  if (!(instance.network_bytes_per_s > 0))
    throw std::invalid_argument("collective: instance " + instance.label() + " has no inter-node network figure");
  return Link{instance.network_bytes_per_s, kNetworkStepLatencySeconds, "inter-node network"};
}

bool group_spans_nodes(const RankMap& map, const std::vector<int>& members, int gpus_per_node) {
  if (gpus_per_node < 1)
    throw std::invalid_argument("collective group: " + std::to_string(gpus_per_node) + " GPUs per node, expected >= 1");
  if (members.empty()) throw std::invalid_argument("collective group: no members");
  for (int r : members)
    if (r < 0 || r >= map.world)
      throw std::invalid_argument("collective group: rank " + std::to_string(r) + " outside 0.." +
                                  std::to_string(map.world - 1));
  const int node = members.front() / gpus_per_node;
  return std::any_of(members.begin(), members.end(), [&](int r) { return r / gpus_per_node != node; });
}

Link group_link(const RankMap& map, const std::vector<int>& members, int gpus_per_node, const Link& nvlink,
                const Link& node_network) {
  check_link(nvlink);
  if (!group_spans_nodes(map, members, gpus_per_node)) return nvlink;
  check_link(node_network);
  Link share = node_network;
  share.bandwidth_bytes_per_s = node_network.bandwidth_bytes_per_s / gpus_per_node;
  share.latency_s = std::max(nvlink.latency_s, node_network.latency_s);
  if (nvlink.bandwidth_bytes_per_s < share.bandwidth_bytes_per_s) {
    share.bandwidth_bytes_per_s = nvlink.bandwidth_bytes_per_s;
    share.name = nvlink.name;
  }
  return share;
}

}  // namespace recipebench
