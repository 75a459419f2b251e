// The fused gated RMSNorm kernels (cuda/gated_norm_kernels.h) against the float64 gated RMSNorm of the same BF16
// inputs and against the libtorch-ops path (model/rms_norm.h, GatedNormImpl::Ops) on the same GPU, for every
// supported row width and a row count that leaves the grid's warps unevenly loaded. Part of test_torch_cuda
// (cuda_test_main.cpp: skipped without a GPU).
#include "model/rms_norm.h"
#include "test_util.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <catch2/catch.hpp>

using namespace recipebench::torch_model;
using rbt_test::rel_err;

namespace {

struct NormRun {
  torch::Tensor y, dx, dz, dw;
};

NormRun norm_run(const torch::Tensor& x0, const torch::Tensor& z0, const torch::Tensor& w0, const torch::Tensor& dy,
                 GatedNormImpl impl) {
  const auto x = x0.clone().requires_grad_(true), z = z0.clone().requires_grad_(true);
  const auto w = w0.clone().requires_grad_(true);
  const auto y = gated_rms_norm(x, z, w, 1e-6, impl);
  y.backward(dy);
  return {y.detach(), x.grad(), z.grad(), w.grad()};
}

}  // namespace

TEST_CASE("fused gated RMSNorm matches the float64 norm of its BF16 inputs (dims 64, 128, 256)") {
  const auto cuda = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kBFloat16);
  for (const int64_t dim : {64, 128, 256}) {
    INFO("dim " << dim);
    torch::manual_seed(dim);
    const int64_t rows = 70001;  // more rows than the grid's 8,192 warps: each warp walks 8 or 9 of them
    const auto x = torch::randn({rows, dim}, cuda), z = torch::randn({rows, dim}, cuda);
    const auto w = (1.0 + 0.3 * torch::randn({dim}, cuda.dtype(torch::kFloat))).to(torch::kBFloat16);
    const auto dy = torch::randn({rows, dim}, cuda);
    const NormRun fused = norm_run(x, z, w, dy, GatedNormImpl::Auto);
    const auto d = [](const torch::Tensor& t) { return t.to(torch::kDouble); };
    const NormRun exact = norm_run(d(x), d(z), d(w), d(dy), GatedNormImpl::Ops);
    // One BF16 rounding of each output and input gradient; dw: an FP32 sum over 70,001 rows, rounded once to BF16.
    CHECK(rel_err(fused.y, exact.y) < 4e-3);
    CHECK(rel_err(fused.dx, exact.dx) < 4e-3);
    CHECK(rel_err(fused.dz, exact.dz) < 4e-3);
    CHECK(rel_err(fused.dw, exact.dw) < 4e-3);
    const NormRun ops = norm_run(x, z, w, dy, GatedNormImpl::Ops);
    CHECK(rel_err(fused.y, ops.y) < 1e-2);
    CHECK(rel_err(fused.dx, ops.dx) < 2e-2);
    CHECK(rel_err(fused.dz, ops.dz) < 2e-2);
    CHECK(rel_err(fused.dw, ops.dw) < 2e-2);
    // Negative control: the gate and the input swapped is another function, far outside the bounds.
    CHECK(rel_err(norm_run(z, x, w, dy, GatedNormImpl::Auto).y, exact.y) > 1e-1);
    // The same bits on a second run (the weight gradient's partials are summed in a fixed order).
    const NormRun again = norm_run(x, z, w, dy, GatedNormImpl::Auto);
    CHECK(torch::equal(again.y, fused.y));
    CHECK(torch::equal(again.dx, fused.dx));
    CHECK(torch::equal(again.dw, fused.dw));
  }
}
