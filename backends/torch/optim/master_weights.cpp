#include "optim/master_weights.h"

#include <torch/types.h>
#include <torch/utils.h>

namespace recipebench::train {

namespace {

constexpr int64_t k16 = 65536;        // 2^16
constexpr int64_t k32 = 4294967296;   // 2^32

/// The 32 bits of FP32 `x` as non-negative int64 values.
torch::Tensor bits_of(const torch::Tensor& x) {
  const auto i = x.contiguous().view(torch::kInt32).to(torch::kInt64);
  return torch::where(i < 0, i + k32, i);
}

/// Values in [0, 2^n) as the signed n-bit (n = 16 or 32) integers with those bits, in `dtype`.
torch::Tensor as_signed(const torch::Tensor& u, int64_t modulus, torch::ScalarType dtype) {
  return torch::where(u >= modulus / 2, u - modulus, u).to(dtype);
}

}  // namespace

void split_master(const torch::Tensor& master, torch::Tensor& hi, torch::Tensor& remainder) {
  TORCH_CHECK(master.scalar_type() == torch::kFloat32 && hi.scalar_type() == torch::kBFloat16 &&
                  remainder.scalar_type() == torch::kInt16 && master.sizes() == hi.sizes() &&
                  master.sizes() == remainder.sizes(),
              "split_master: FP32 master, BF16 hi and int16 remainder of one shape expected");
  torch::NoGradGuard no_grad;
  const auto u = bits_of(master);
  const auto low = torch::remainder(u, k16);
  const auto high = torch::div(u, k16, "floor");
  const auto up = torch::remainder(high + (low >= k16 / 2).to(torch::kInt64), k16);
  hi.copy_(as_signed(up, k16, torch::kInt16).view(torch::kBFloat16).view(hi.sizes()));
  remainder.copy_(as_signed(low, k16, torch::kInt16).view(remainder.sizes()));
}

torch::Tensor reconstruct_master(const torch::Tensor& hi, const torch::Tensor& remainder) {
  TORCH_CHECK(hi.scalar_type() == torch::kBFloat16 && remainder.scalar_type() == torch::kInt16 &&
                  hi.sizes() == remainder.sizes(),
              "reconstruct_master: BF16 hi and int16 remainder of one shape expected");
  torch::NoGradGuard no_grad;
  auto h = hi.contiguous().view(torch::kInt16).to(torch::kInt64);
  const auto r = remainder.to(torch::kInt64);
  h = torch::remainder(h - (r < 0).to(torch::kInt64), k16);
  const auto u = h * k16 + torch::remainder(r, k16);
  return as_signed(u, k32, torch::kInt32).view(torch::kFloat32).view(hi.sizes());
}

torch::ScalarType optimizer_float_type(torch::ScalarType param) {
  return param == torch::kFloat64 ? torch::kFloat64 : torch::kFloat32;
}

torch::ScalarType state_scalar_type(StateDtype dtype, torch::ScalarType param) {
  return dtype == StateDtype::kBf16 ? torch::kBFloat16 : optimizer_float_type(param);
}

}  // namespace recipebench::train
