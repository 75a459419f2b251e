// Registers the libtorch backend under the name "torch", and declares what it runs. No libtorch here, so the CLI
// can include it cheaply (a build without libtorch still checks dry runs against the declaration).
#pragma once

#include "backend/capabilities.h"

namespace recipebench {

/// What the torch backend runs (docs/backends.md): the Qwen3.5 MoE / Qwen3-Next family, no context parallelism (CP 1),
/// experts with ETP 1 (TP folded into EP), the alltoall dispatcher, no offload, full activation recompute (uniform or
/// block) or none, on CPU (Gloo between ranks) or CUDA (NCCL), with synthetic or file rows; BF16 compute on CUDA (FP32
/// on CPU), FP32, or FP64 (the parity tests' reference runs: no float32 rounding to flip a router's choice;
/// rank/run_context.h compute_dtype).
inline BackendCapabilities torch_backend_capabilities() {
  BackendCapabilities c;
  c.cp = {1};
  c.etp = {1};
  c.dispatchers = {Dispatcher::kAlltoall};
  c.offload = {"none"};
  c.recompute = {"full", "none"};
  c.precisions = {"bf16", "fp32", "fp64"};
  c.devices = {Device::kCpu, Device::kCuda};
  c.data_sources = {DataSource::kSynthetic, DataSource::kFile};
  // optim/optimizer_builder.h: DistributedAdam over DP for the dense parameters, over EDP for the experts.
  c.dense_optimizer_sharding = OptimizerSharding::kDp;
  c.expert_optimizer_sharding = OptimizerSharding::kEdp;
  c.model_families = {ModelFamily::kQwen35};  // backends/torch/model: Qwen3.5 MoE / Qwen3-Next only
  c.memory_plan = true;                       // harness/plan models this backend's memory
  c.emulate_rank = true;                      // dist/stand_in.h: one rank alone (docs/emulation.md)
  return c;
}

/// Adds the torch backend, with torch_backend_capabilities(), to the backend registry (backend/backend.h).
void register_torch_backend();

}  // namespace recipebench
