// The precision-aware optimizer state (docs/optimizer.md, "Precision-aware state"): an FP32 master weight held as
// its BF16 parameter plus a 16-bit remainder, and Adam moments stored in BF16, as libtorch operations for the CPU and
// libtorch's paths (the fused CUDA kernels do the same in registers: cuda/adamw_kernels.h).
#pragma once

#include <torch/types.h>

#include "recipe/enums.h"

namespace recipebench::train {

/// Splits FP32 `master` (any shape) into its BF16 half and a 16-bit remainder, written into `hi` (BF16) and
/// `remainder` (int16) of the same shape, so that reconstruct_master(hi, remainder) is `master` bit for bit.
/// The rule (docs/optimizer.md): with the master's bits u = (h << 16) | l, hi = h + 1 when l >= 0x8000 (the master
/// rounded half away from zero to BF16), else h; remainder = l read as a signed 16-bit integer (negative exactly when
/// hi was rounded up). Every bit pattern (NaN, infinities, denormals, -0) round-trips: the arithmetic is modulo 2^16.
/// The same split as Megatron-LM's precision-aware optimizer with store_param_remainders (Transformer Engine's
/// FusedAdam), written from the rule above. Throws c10::Error on other dtypes or shapes.
void split_master(const torch::Tensor& master, torch::Tensor& hi, torch::Tensor& remainder);

/// The FP32 master weight of BF16 `hi` and int16 `remainder` (split_master's inverse), a new FP32 tensor of their
/// shape: bits ((hi - (remainder < 0)) mod 2^16) << 16 | (remainder mod 2^16).
torch::Tensor reconstruct_master(const torch::Tensor& hi, const torch::Tensor& remainder);

/// The dtype the optimizer computes in (and keeps its gradient buffers, masters and FP32-declared moments in) for a
/// parameter of dtype `param`: kFloat64 for an FP64 parameter (workload.precision fp64: float64 end to end, no FP32
/// copy, docs/determinism.md "Precision"), else kFloat32.
torch::ScalarType optimizer_float_type(torch::ScalarType param);

/// The libtorch dtype of an optimizer.exp_avg_dtype / exp_avg_sq_dtype for a parameter of dtype `param`: kBFloat16
/// for bf16, else optimizer_float_type(param) (fp32 moments of an FP64 parameter are kept in FP64).
torch::ScalarType state_scalar_type(StateDtype dtype, torch::ScalarType param);

}  // namespace recipebench::train
