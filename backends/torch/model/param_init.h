// Rank-local, layout-independent initialisation of the model's parameters (docs/initialization.md): every element
// of a parameter is a function of (seed, the parameter's global name, its expert, its index in the global tensor)
// through a counter-based generator (Philox4x32-10), so any rank computes exactly its own TP slice, pipeline stage
// or experts, and the global tensors are bitwise the same for every layout.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "model/init_draw.h"
#include "model/tensor_parallel.h"

namespace recipebench::torch_model {

/// Philox4x32 with 10 rounds (Salmon, Moraes, Dror, Shaw 2011, "Parallel Random Numbers: As Easy as 1, 2, 3",
/// SC'11): a bijection of the 128-bit counter under the 64-bit key. Deterministic and platform independent.
std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

/// The 64-bit key of one stream: FNV-1a of the parameter's global name, mixed with the seed and the expert index
/// (-1: not an expert's) by SplitMix64 finalisers (docs/initialization.md).
uint64_t init_stream_key(uint64_t seed, const std::string& name, int64_t expert);

/// The distribution of a parameter's initial values (Hugging Face's Qwen3.5 initialisation; docs/initialization.md).
struct InitRule {
  using Kind = init::DrawKind;  ///< Normal N(0, a^2), Uniform U(a, b), LogUniform log U(a, b), Constant a
  Kind kind = Kind::Constant;
  double a = 0, b = 0;
  bool per_expert = false;  ///< dim 0 indexes experts: one stream per expert, counters within the expert
};

/// The rule of the parameter called `name` (Hugging Face name, e.g. "model.layers.0.linear_attn.A_log") of global
/// shape `shape`. Throws c10::Error for a name the table does not know (no parameter is initialised by default).
InitRule init_rule(const std::string& name, at::IntArrayRef shape);

/// Where a rank's shard lies in its global parameter.
struct ShardPlacement {
  int64_t expert_offset = 0;  ///< global index of the shard's first expert (stacked expert parameters; EP)
  bool tp_sharded = false;    ///< the shard is a TP slice laid out by `tp` (tp_local_slice's layout)
  TpShardSpec tp;
  int64_t tp_rank = 0, tp_size = 1;
};

/// Fills `local` (any device and dtype; contiguous) with its part of the global parameter `name` of `global_shape`
/// under `seed`: element values are computed in float64 from the element's global index (model/init_draw.h), rounded
/// to float32, then to local's dtype. A CUDA tensor is filled on its device when the CUDA kernels were built
/// (cuda/param_init_cuda.h; one thread per element), else on the CPU in blocks of at most ~4M elements (the host
/// holds one block) and copied. Bitwise equal to tp_local_slice / expert narrowing of the fill of the whole
/// parameter on the same kind of device (CPU and CUDA fills may differ in the last float32 bit: init_draw.h). Nothing
/// for a meta tensor. Throws c10::Error when the placement does not fit the shapes.
void init_shard(at::Tensor& local, uint64_t seed, const std::string& name, at::IntArrayRef global_shape,
                const ShardPlacement& where);

}  // namespace recipebench::torch_model
