// The fused causal conv1d + SiLU kernels (cuda/conv_silu_kernels.h) against the float64 convolution of the same BF16
// inputs and against the libtorch-ops path (model/gated_deltanet.h, ConvSiluImpl::Ops) on the same GPU. Shapes cross
// the kernels' tiles: seq not a multiple of the 64-step time tile, channels not a multiple of the 128-thread block,
// two batch rows, every supported width. Part of test_torch_cuda (cuda_test_main.cpp: skipped without a GPU).
#include "model/gated_deltanet.h"
#include "test_util.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <catch2/catch.hpp>

using namespace recipebench::torch_model;
using rbt_test::rel_err;

namespace {

struct ConvRun {
  torch::Tensor y, dx, dw;
};

/// Output and gradients for an incoming gradient dy, in the inputs' dtype (`impl` chooses the path).
ConvRun conv_run(const torch::Tensor& x0, const torch::Tensor& w0, const torch::Tensor& dy, ConvSiluImpl impl) {
  const auto x = x0.clone().requires_grad_(true), w = w0.clone().requires_grad_(true);
  const auto y = causal_depthwise_conv1d_silu(x, w, impl);
  y.backward(dy);
  return {y.detach(), x.grad(), w.grad()};
}

}  // namespace

TEST_CASE("fused conv1d + SiLU matches the float64 convolution of its BF16 inputs (widths 2 to 4, odd tiles)") {
  const auto cuda = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kBFloat16);
  for (const int64_t k : {2, 3, 4}) {
    INFO("kernel width " << k);
    torch::manual_seed(100 + k);
    const int64_t batch = 2, seq = 200, channels = 300;  // 4 tiles of 64 steps (the last 8), 3 blocks of 128
    const auto x = torch::randn({batch, seq, channels}, cuda);
    const auto w = (torch::randn({channels, 1, k}, cuda) * 0.5).to(torch::kBFloat16);
    const auto dy = torch::randn({batch, seq, channels}, cuda);
    const ConvRun fused = conv_run(x, w, dy, ConvSiluImpl::Auto);
    const ConvRun exact =
        conv_run(x.to(torch::kDouble), w.to(torch::kDouble), dy.to(torch::kDouble), ConvSiluImpl::Ops);
    // One BF16 rounding of each output and input gradient (relative 2^-9 at most); the weight gradient is an FP32 sum
    // of 400 terms per channel, rounded once to BF16.
    CHECK(rel_err(fused.y, exact.y) < 4e-3);
    CHECK(rel_err(fused.dx, exact.dx) < 4e-3);
    CHECK(rel_err(fused.dw, exact.dw) < 4e-3);
    // The libtorch-ops path on the same BF16 tensors (it also rounds the pre-activation and its gradient to BF16).
    const ConvRun ops = conv_run(x, w, dy, ConvSiluImpl::Ops);
    CHECK(rel_err(fused.y, ops.y) < 1e-2);
    CHECK(rel_err(fused.dx, ops.dx) < 2e-2);
    CHECK(rel_err(fused.dw, ops.dw) < 2e-2);
    // Negative control: the weights reversed in time are a different convolution, far outside the bounds.
    CHECK(rel_err(conv_run(x, w.flip(2), dy, ConvSiluImpl::Auto).y, exact.y) > 1e-1);
  }
}

TEST_CASE("fused conv1d + SiLU: causal at the start of each row, and the same bits on every run") {
  const auto cuda = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kBFloat16);
  torch::manual_seed(7);
  const int64_t batch = 3, seq = 130, channels = 129;
  const auto x = torch::randn({batch, seq, channels}, cuda), w = torch::randn({channels, 1, 4}, cuda);
  const auto dy = torch::randn({batch, seq, channels}, cuda);
  // Changing row 1 from step 70 on changes nothing before step 70 and nothing in the other rows.
  auto x2 = x.clone();
  x2.select(0, 1).narrow(0, 70, seq - 70).normal_();
  const auto y = conv_run(x, w, dy, ConvSiluImpl::Auto).y, y2 = conv_run(x2, w, dy, ConvSiluImpl::Auto).y;
  CHECK(torch::equal(y.narrow(1, 0, 70), y2.narrow(1, 0, 70)));
  CHECK(torch::equal(y.select(0, 0), y2.select(0, 0)));
  CHECK(torch::equal(y.select(0, 2), y2.select(0, 2)));
  CHECK_FALSE(torch::equal(y.select(0, 1), y2.select(0, 1)));
  const ConvRun a = conv_run(x, w, dy, ConvSiluImpl::Auto), b = conv_run(x, w, dy, ConvSiluImpl::Auto);
  CHECK(torch::equal(a.y, b.y));
  CHECK(torch::equal(a.dx, b.dx));
  CHECK(torch::equal(a.dw, b.dw));
}
