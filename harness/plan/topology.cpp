#include "plan/topology.h"

#include <fmt/format.h>

namespace recipebench {

int nvlink_island(const InstanceSpec* inst, int per_node) {
  if (inst == nullptr || inst->nvlink_domain <= inst->gpus) return per_node;
  return per_node == inst->gpus || per_node == inst->nvlink_domain ? inst->nvlink_domain : per_node;
}

void join_nvlink_domain(NetworkModel& n, const InstanceSpec& inst) {
  const int island = nvlink_island(&inst, n.gpus_per_node);
  if (inst.nvlink_domain <= inst.gpus || island != inst.nvlink_domain) return;
  const int instances = inst.nvlink_domain / inst.gpus;
  n.gpus_per_node = island;
  n.node_network.bandwidth_bytes_per_s = inst.network_bytes_per_s * instances;
  n.source += fmt::format(
      "; NVLink domain of {} GPUs ({} instances of {}): NVLink inside it, across domains {:.0f} "
      "GB/s per domain (the {} instances' networks summed)",
      island, instances, inst.gpus, n.node_network.bandwidth_bytes_per_s / 1e9, instances);
}

}  // namespace recipebench
