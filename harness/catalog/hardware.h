// Hardware catalog: GPUs (peak dense BF16, memory, bandwidths) and cloud instances with their prices.
#pragma once

#include <string>
#include <vector>

namespace recipebench {

/// One GPU model. Figures are vendor datasheet values, dense (never the 2x "with sparsity" figures).
struct GpuSpec {
  std::string name;             ///< recipe spelling: "B200", "H200", "H100"
  std::string full_name;        ///< e.g. "NVIDIA H100 SXM"
  double peak_bf16_flops = 0;   ///< dense BF16 tensor-core peak, FLOP/s
  double memory_bytes = 0;      ///< HBM capacity, bytes (1 GB = 1e9 bytes)
  double memory_bandwidth = 0;  ///< HBM bandwidth, bytes/s
  double nvlink_bandwidth = 0;  ///< NVLink bandwidth per GPU (both directions), bytes/s
  std::string source;           ///< datasheet the figures come from
};

/// One cloud instance type with its on-demand price.
struct InstanceSpec {
  std::string provider;     ///< "AWS"
  std::string name;         ///< "p6-b200.48xlarge"
  std::string gpu;          ///< GpuSpec::name
  int gpus = 0;             ///< GPUs per instance
  double usd_per_hour = 0;  ///< on-demand price of the whole instance, $/hour
  std::string source;       ///< where the price comes from
  /// Inter-node network bandwidth of the whole instance, one direction, bytes/s: the line rates of its network
  /// cards summed (AWS quotes "3,200 Gbps" for 32 x 100 Gbps EFA on p5, 8 x 400 Gbps on p6-b200). A collective
  /// across nodes shares it between the instance's GPUs (plan/collective_time.h). 0: unknown.
  double network_bytes_per_s = 0;
  std::string network_source;  ///< where the network figure comes from

  /// $ per GPU-hour = instance price / GPUs per instance.
  double usd_per_gpu_hour() const { return usd_per_hour / gpus; }
  /// "AWS p6-b200.48xlarge"
  std::string label() const { return provider + " " + name; }
};

/// Per-step latency of a ring collective over NVLink within a node, seconds: NCCL's own tuning model, hwLat[NVLINK]
/// for the Ring algorithm with the Simple protocol (3.4 us; NVIDIA/nccl src/graph/tuning.cc). A model constant of
/// NCCL's, not a measurement of ours; it sets the alpha of the alpha-beta model (plan/collective_time.h).
constexpr double kNvlinkStepLatencySeconds = 3.4e-6;
/// Per-step latency of a ring collective across the inter-node network, seconds: the same table's hwLat[NET] for
/// Ring / Simple (14 us; NVIDIA/nccl src/graph/tuning.cc). Assumed to hold for AWS EFA as for InfiniBand.
constexpr double kNetworkStepLatencySeconds = 14e-6;

const std::vector<GpuSpec>& gpu_catalog();
const std::vector<InstanceSpec>& instance_catalog();

/// GPU by recipe name ("H200"; "H100 SXM" also finds H100). nullptr when unknown.
const GpuSpec* find_gpu(const std::string& name);

/// Instance by "AWS p6-b200.48xlarge" or "p6-b200.48xlarge" (case-insensitive). nullptr when unknown.
const InstanceSpec* find_instance(const std::string& name);

/// The default instance of a GPU type (the one the catalog prices it by), or nullptr.
const InstanceSpec* default_instance_for_gpu(const std::string& gpu_name);

}  // namespace recipebench
