// The closed sets of the recipe (values the schema lists as enums) as C++ enums, with their YAML names.
#pragma once

#include <array>
#include <optional>
#include <string>

namespace recipebench {

/// bench.device: where the backend trains.
enum class Device { kCpu, kCuda };
/// bench.data.source: synthetic token ids, or a file of pre-tokenized rows (docs/data-format.md).
enum class DataSource { kSynthetic, kFile };
/// optimizer.lr_decay_style: the learning-rate decay after warm-up (docs/recipe-format.md).
enum class LrDecay { kCosine, kLinear, kConstant };
/// layout.dispatcher: the MoE token dispatcher (Megatron-LM --moe-token-dispatcher-type).
enum class Dispatcher { kAlltoall, kAllgather, kFlex, kDeepep };
/// bench.kernels: the torch backend's fused CUDA kernels where they apply, or libtorch operations everywhere (the
/// reference path; docs/recipe-format.md).
enum class Kernels { kFused, kOps };
/// bench.ep_dispatch: how the torch backend's MoE layers exchange token rows over expert parallelism
/// (docs/distributed.md, "Expert parallelism"): host_splits, a variable-size all-to-all whose split sizes are read
/// on the host (it synchronises), or fixed_capacity, blocks of a fixed number of rows per peer (no synchronisation).
enum class EpDispatch { kHostSplits, kFixedCapacity };
/// optimizer.master_weights: how the FP32 master weight of a BF16 parameter is held (docs/optimizer.md, "Precision-
/// aware state"): an FP32 copy (4 bytes per parameter), or the BF16 parameter itself plus a 16-bit remainder of the
/// master's low bits (2 bytes; Megatron-LM's --use-precision-aware-optimizer with store_param_remainders), the same
/// FP32 value bit for bit.
enum class MasterWeights { kFp32, kBf16Remainder };
/// optimizer.exp_avg_dtype / exp_avg_sq_dtype: the dtype the Adam moments are stored in (Megatron-LM's
/// --exp-avg-dtype / --exp-avg-sq-dtype); the update computes in FP32 either way.
enum class StateDtype { kFp32, kBf16 };
/// layout.recompute.modules: what Megatron-Core's selective recompute re-runs in the backward pass
/// (--recompute-modules; its default is core_attn alone). docs/memory-plan.md, "Analytical plan" says which of them
/// the plan prices.
enum class RecomputeModule { kCoreAttn, kLayernorm, kMoeAct, kMlp, kMoe, kSharedExperts, kMlaUpProj };

/// result.mfu_convention: the FLOPs per token a recipe's result.mfu counts (docs/metrics.md, "MFU conventions"): 6N
/// (recipebench's own), or 6N plus the attention score and value products, 12·L·H·Q·T (PaLM appendix B; TorchTitan's
/// get_num_flop_per_token; Megatron-LM's formula, Narayanan et al. 2021).
enum class MfuConvention { k6N, k6NAttention };

/// The YAML names of an enum's values, in declaration order (specialised below for each enum).
template <typename E>
struct EnumNames;
template <>
struct EnumNames<Device> {
  static constexpr std::array<const char*, 2> names{"cpu", "cuda"};
};
template <>
struct EnumNames<DataSource> {
  static constexpr std::array<const char*, 2> names{"synthetic", "file"};
};
template <>
struct EnumNames<LrDecay> {
  static constexpr std::array<const char*, 3> names{"cosine", "linear", "constant"};
};
template <>
struct EnumNames<Dispatcher> {
  static constexpr std::array<const char*, 4> names{"alltoall", "allgather", "flex", "deepep"};
};

template <>
struct EnumNames<Kernels> {
  static constexpr std::array<const char*, 2> names{"fused", "ops"};
};
template <>
struct EnumNames<EpDispatch> {
  static constexpr std::array<const char*, 2> names{"host_splits", "fixed_capacity"};
};
template <>
struct EnumNames<MasterWeights> {
  static constexpr std::array<const char*, 2> names{"fp32", "bf16_remainder"};
};
template <>
struct EnumNames<StateDtype> {
  static constexpr std::array<const char*, 2> names{"fp32", "bf16"};
};
template <>
struct EnumNames<RecomputeModule> {
  static constexpr std::array<const char*, 7> names{"core_attn", "layernorm",      "moe_act",    "mlp",
                                                    "moe",       "shared_experts", "mla_up_proj"};
};
template <>
struct EnumNames<MfuConvention> {
  static constexpr std::array<const char*, 2> names{"6N", "6N+attention"};
};

/// The YAML name of `value`, e.g. to_string(Dispatcher::kDeepep) == "deepep".
template <typename E>
std::string to_string(E value) {
  return EnumNames<E>::names[static_cast<size_t>(value)];
}

/// The value named `name`, or nullopt when it names none.
template <typename E>
std::optional<E> parse_enum(const std::string& name) {
  const auto& names = EnumNames<E>::names;
  for (size_t i = 0; i < names.size(); ++i)
    if (name == names[i]) return static_cast<E>(i);
  return std::nullopt;
}

/// Every name of the enum joined for a message: "alltoall, allgather, flex or deepep".
template <typename E>
std::string enum_choices() {
  const auto& names = EnumNames<E>::names;
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + std::string(names[i]);
  return out;
}

}  // namespace recipebench
