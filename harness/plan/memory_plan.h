// Per-rank memory plan of a recipe's layout on the torch backend: parameters, gradients, optimizer state,
// activations per microbatch, microbatches in flight and the peak, per kind of pipeline rank, against the GPU's
// memory. Formulas and sources: docs/memory-plan.md. No libtorch here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "catalog/models.h"
#include "layout/rank_map.h"
#include "plan/activation_memory.h"
#include "recipe/recipe.h"
#include "settings/run_options.h"

namespace recipebench {

/// The memory of one pipeline rank (every TP / DP / EP rank of a stage holds the same amounts). Bytes.
struct RankMemory {
  int pp_rank = 0;
  std::string kind;  ///< "first stage", "middle stage", "last stage", "only stage"
  bool embedding = false, output_layer = false;
  int64_t layers = 0;         ///< decoder layers over all virtual stages of the rank
  int64_t dense_params = 0;   ///< non-expert parameters on the rank (its TP shard)
  int64_t expert_params = 0;  ///< routed-expert parameters on the rank (its EP share)
  double params = 0;          ///< parameters in their dtype
  double grads = 0;           ///< FP32 gradient accumulators (and the DP / EDP-sharded reduce-scatter targets)
  double optimizer = 0;       ///< master weights and Adam moments (dense 1 / DP, experts 1 / EDP), + all-gather buffers
  double activations_per_microbatch = 0;  ///< saved for backward, one microbatch through all the rank's layers
  int64_t microbatches_in_flight = 0;     ///< forwards whose backward has not run, at most (a VPP chunk counts 1/VPP)
  double activations_in_flight = 0;       ///< the saved activations of the in-flight microbatch-chunks
  double transient = 0;        ///< the largest short-lived term at the peak (loss, recompute, step gradients)
  std::string transient_term;  ///< what it is
  double peak = 0;             ///< params + grads + optimizer + activations in flight + transient
  std::string peak_phase;      ///< when the peak occurs
};

/// Memory a process holds on its device beyond the plan's peak (docs/memory-plan.md, "Reserve"): a fixed part (on
/// CUDA the CUDA context, NCCL's buffers and the caching allocator's cache, none of which the plan counts) and a
/// fraction of the peak (the plan's error against measured peaks). Bytes.
struct MemoryReserve {
  double fixed_bytes = 0;  ///< bytes whatever the peak
  double fraction = 0;     ///< of the plan's peak
  bool stated = false;     ///< given by the user (--memory-reserve), not the measured default
  /// The bytes held back beside a plan whose peak is `peak` bytes: fixed_bytes + fraction x peak.
  double bytes(double peak) const { return fixed_bytes + fraction * peak; }
  /// "16.1 GB (3.0 GB + 8% of the peak)" for the measured reserve, "10.0 GB (--memory-reserve)" for a stated one.
  std::string text(double peak) const;
};

/// The reserve measured for `device` (docs/memory-plan.md, "Reserve"): on CUDA 3 GB (the upper end of the CUDA
/// context and NCCL buffers, 1-3 GB per GPU) + 8% of the peak (the largest measured peak over its plan among the
/// committed emulated ranks, 1.076: reports/bench/h200-2026-12-02-emulate); on the CPU 8% of the peak only.
MemoryReserve measured_reserve(Device device);

/// A reserve of `gb` GB (1e9 bytes) whatever the peak (`--memory-reserve GB`). Throws std::invalid_argument for a
/// negative or non-finite figure.
MemoryReserve stated_reserve(double gb);

/// The one rule of fitting a device (plan, `validate --strict` and `run`'s host check read it): a peak of `peak`
/// bytes fits `capacity` bytes when peak + reserve.bytes(peak) <= capacity.
bool fits_with_reserve(double peak, double capacity, const MemoryReserve& reserve);

/// The whole plan.
struct MemoryPlan {
  std::string gpu;        ///< recipe's gpu.type
  double gpu_memory = 0;  ///< bytes, from the hardware catalog (else the recipe's gpu.memory_gb)
  bool experts_in_distributed_optimizer = false;  ///< EP 1 and TP 1: experts sharded over DP like dense
  int expert_state_shards = 1;   ///< EDP when the experts are apart and EDP > 1 (their own distributed optimizer)
  int64_t ep_capacity_rows = 0;  ///< fixed_capacity with EP > 1: rows per MoE layer's experts (MicrobatchShape)
  /// What the optimizer state holds (optimizer.master_weights and the moments' dtypes), e.g. "FP32 masters and Adam
  /// moments": the largest term's name.
  std::string optimizer_state = "FP32 masters and Adam moments";
  /// The plan table's row label of the optimizer state (at most about 44 characters).
  std::string optimizer_row = "optimizer state (FP32 masters, moments)";
  /// The model is not one the torch backend builds (a config.json family): the plan is the analytical plan of the
  /// recipe's own stack (parameters from the exact counts, activations by transformer_layer_activation_bytes:
  /// Korthikanti et al. 2022, gradients and optimizer state as Megatron-Core's distributed optimizer holds them),
  /// its loss and reserve terms read as the torch backend holds them.
  bool analytical = false;
  /// The gradients' row label and largest-term name: "gradients (FP32)", or "gradients (BF16)" for the analytical
  /// plan of a recipe whose optimizer.grad_reduce_dtype is bf16 with BF16 parameters.
  std::string grad_term = "gradients (FP32)";
  /// The recipe's fields that change the memory and that the plan does not price, each e.g. "layout.recompute.modules
  /// mlp (its activations are planned as kept)"; printed as "not modelled: ...".
  std::vector<std::string> not_modelled;
  std::vector<RankMemory> ranks;  ///< one per pipeline rank, in pipeline order
  std::vector<size_t> kinds;      ///< indices of ranks shown: first, the middle rank with the largest peak, last

  /// The rank with the largest peak.
  const RankMemory& worst() const;
  MemoryReserve reserve;  ///< held back beside the peak (PlanOptions::reserve)

  /// True when every rank's peak (as the backend holds the optimizer state) and the reserve fit the GPU's memory
  /// (fits_with_reserve).
  bool fits() const { return fits_with_reserve(worst().peak, gpu_memory, reserve); }
  /// The worst rank's peak fits the memory, but not with the reserve beside it.
  bool inside_reserve() const { return !fits() && worst().peak <= gpu_memory; }
  /// Bytes left on the device beside the worst rank's peak and the reserve (negative when it does not fit).
  double spare_bytes() const { return gpu_memory - worst().peak - reserve.bytes(worst().peak); }
  /// The term of the worst rank that is largest (e.g. "activations in flight (12 microbatch-chunks)").
  std::string largest_term() const;
};

/// Bytes per parameter and activation element the torch backend computes in for `precision` (workload.precision):
/// bf16 -> 2 on CUDA and 4 on the CPU (FP32: no BF16 matrix units there), fp32 -> 4, fp64 -> 8 (reference runs);
/// 0 for a precision it does not run (its capabilities refuse it). The one place of that rule: the plan and the
/// backend's compute dtype (rank/run_context.h) both read it; docs/backends.md.
int torch_compute_bytes(const std::string& precision, bool cuda);

/// How the planned run runs beside its recipe: the device and the settings that change the backend's memory.
struct PlanOptions {
  /// CUDA (BF16 parameters when workload.precision is bf16, fused attention) or the CPU (FP32); fp64 plans FP64
  /// parameters and activations on either.
  Device device = Device::kCuda;
  TorchMemoryImpl impl = kCurrentTorchMemoryImpl;  ///< the backend's code (an older one for an older run record)
  bool fused_kernels = true;                       ///< bench.kernels fused; false: ops
  /// bench.ep_dispatch; nullopt: the recipe's, else host_splits. With fixed_capacity and EP > 1 each MoE layer's
  /// experts keep ep_capacity_rows rows (MicrobatchShape).
  std::optional<EpDispatch> ep_dispatch;
  /// bench.overlap_param_gather; nullopt: the recipe's, else false. With it each distributed optimizer keeps its
  /// updated shard in the parameters' dtype through the next step (a copy unless the parameters are FP32).
  std::optional<bool> overlap_param_gather;
  /// Held back beside the peak; nullopt: measured_reserve(device).
  std::optional<MemoryReserve> reserve;
};

/// The memory plan's options of a run with effective settings `s` (settings/run_options.h) on `device`: bench.kernels,
/// ep_dispatch and overlap_param_gather as the run applies them. The one place a run's settings become PlanOptions.
PlanOptions plan_options(const RunSettings& s, Device device);

/// The plan of a validated recipe on its rank map for `model` (the model that runs: bench.layers applied), run as
/// `o` says. Throws std::invalid_argument for a layout the rank map refuses.
MemoryPlan plan_memory(const Recipe& recipe, const ModelConfig& model, const RankMap& map, const PlanOptions& o = {});

/// The plan as a table in GB (1 GB = 1e9 bytes), one column per kind of rank, and a fit line.
std::string format_memory_plan(const MemoryPlan& plan);

/// `bytes` in decimal gigabytes with one decimal, no unit: 80e9 -> "80.0" (the memory plan's cells and messages).
std::string gigabytes_text(double bytes);

/// `run --dry-run`'s memory section (also printed by `run` before step 0): the plan of `recipe` for `model` run as
/// `o` says (its impl is the current code), as text. Throws std::invalid_argument for a layout the rank map refuses.
std::string memory_plan_text(const Recipe& recipe, const ModelConfig& model, const PlanOptions& o);

/// The "does not fit" message of the worst rank, empty when the plan fits: names the GPU, the peak and the
/// largest term.
std::string memory_overflow_message(const MemoryPlan& plan);

}  // namespace recipebench
