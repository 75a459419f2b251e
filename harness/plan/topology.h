// Where NVLink ends (docs/catalog.md, "NVLink domains"): an instance's NVLink domain can join more GPUs than the
// instance holds (GB200 / GB300 NVL72: 18 instances of 4 GPUs in one rack). Inside a domain collectives run on
// NVLink; across domains on the network of the domain's instances, summed. No libtorch here.
#pragma once

#include "catalog/hardware.h"
#include "plan/step_time.h"

namespace recipebench {

/// The GPUs NVLink joins in a cluster of `per_node` GPUs per node on instance `inst` (nullptr: none known): the
/// instance's NVLink domain when per_node is its GPUs or its domain (72 for GB200 NVL72 with per_node 4 or 72), else
/// per_node (a stated per_node of another size is taken as the user's own machines).
int nvlink_island(const InstanceSpec* inst, int per_node);

/// `n` (NVLink within a node, `inst`'s network across nodes) made to span `inst`'s NVLink domain when it is larger
/// than the instance: gpus_per_node becomes the domain and the network across domains the instances' figures summed
/// over it (GB200 NVL72: 72 GPUs, 18 x 1,600 Gbps = 28.8 Tbps, the same 400 Gbps per GPU), said in n.source.
/// Unchanged when nvlink_island(inst, n.gpus_per_node) is n.gpus_per_node.
void join_nvlink_domain(NetworkModel& n, const InstanceSpec& inst);

}  // namespace recipebench
