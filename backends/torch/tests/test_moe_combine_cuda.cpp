// The fused MoE combine kernels (cuda/moe_combine_kernels.h, through model/moe.h's combine_slots) against the float64
// combine of the same BF16 inputs and against the libtorch-ops path on the same GPU: the output, the expert rows'
// gradient (bitwise the ops path's: both round w g once) and the routing weights' gradient, at the 35B-A3B width and
// at a width that is not a multiple of the block's 2,048 columns. Part of test_torch_cuda (cuda_test_main.cpp:
// skipped without a GPU).
#include "model/moe.h"
#include "test_util.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <catch2/catch.hpp>

#ifdef RECIPEBENCH_GDN_CUDA
#include "cuda/moe_combine_cuda.h"
#endif

using namespace recipebench::torch_model;
using rbt_test::rel_err;

namespace {

struct CombineRun {
  torch::Tensor out, dys, dw;
};

CombineRun combine_run(const torch::Tensor& ys0, const torch::Tensor& inv, const torch::Tensor& order,
                       const torch::Tensor& w0, const torch::Tensor& g, CombineImpl impl) {
  const auto ys = ys0.clone().requires_grad_(true), w = w0.clone().requires_grad_(true);
  const auto out = combine_slots(ys, inv, order, w, impl);
  out.backward(g);
  return {out.detach(), ys.grad(), w.grad()};
}

}  // namespace

TEST_CASE("fused MoE combine matches the float64 combine and the ops path (hidden 2,048 and 136, top-8)",
          "[cuda][moe][combine]") {
  const auto cuda = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kBFloat16);
  for (const int64_t hidden : {2048, 136}) {
    INFO("hidden " << hidden);
    torch::manual_seed(hidden);
    const int64_t tokens = 1001, k = 8;
    const auto ys = torch::randn({tokens * k, hidden}, cuda);
    const auto order = torch::randperm(tokens * k, cuda.dtype(torch::kLong));  // sorted position -> (token, slot)
    const auto inv = torch::argsort(order);                                   // (token, slot) -> sorted position
    const auto w = torch::softmax(torch::randn({tokens, k}, cuda.dtype(torch::kFloat)), 1).to(torch::kBFloat16);
    const auto g = torch::randn({tokens, hidden}, cuda);
#ifdef RECIPEBENCH_GDN_CUDA
    REQUIRE(cuda_moe_combine_supports(ys, inv, w));  // the fused path runs below, not the ops fallback
#else
    FAIL("the CUDA kernels were not built: nothing fused to test");
#endif
    const CombineRun fused = combine_run(ys, inv, order, w, g, CombineImpl::Auto);
    const auto d = [](const torch::Tensor& t) { return t.to(torch::kDouble); };
    const CombineRun exact = combine_run(d(ys), inv, order, d(w), d(g), CombineImpl::Ops);
    // One BF16 rounding of the output and of each gradient (the weights': an FP32 dot product over `hidden`).
    CHECK(rel_err(fused.out, exact.out) < 4e-3);
    CHECK(rel_err(fused.dys, exact.dys) < 4e-3);
    CHECK(rel_err(fused.dw, exact.dw) < 4e-3);
    const CombineRun ops = combine_run(ys, inv, order, w, g, CombineImpl::Ops);
    CHECK(rel_err(fused.out, ops.out) < 1e-2);
    CHECK(torch::equal(fused.dys, ops.dys));  // bf16(w g) in both
    CHECK(rel_err(fused.dw, ops.dw) < 2e-2);
    // Negative control: the slots of each token rotated by one is another assignment, far outside the bounds.
    const auto w_rotated = torch::roll(w, 1, 1);
    CHECK(rel_err(combine_run(ys, inv, order, w_rotated, g, CombineImpl::Auto).out, exact.out) > 1e-1);
    // The same bits on a second run (slot order, a fixed reduction order for the weights' gradient).
    const CombineRun again = combine_run(ys, inv, order, w, g, CombineImpl::Auto);
    CHECK(torch::equal(again.out, fused.out));
    CHECK(torch::equal(again.dys, fused.dys));
    CHECK(torch::equal(again.dw, fused.dw));
  }
}
