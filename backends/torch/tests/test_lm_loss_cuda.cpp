// The chunked LM loss's fused cross-entropy kernels (cuda/cross_entropy_kernels.h) against its libtorch-ops path on
// the same GPU and inputs (model/chunked_lm_loss.h, LmLossImpl): both take the same BF16 logits from one GEMM and
// compute in FP32, so the loss agrees to FP32 rounding and the gradients to one BF16 rounding of the logit gradient.
// Part of test_torch_cuda (cuda_test_main.cpp: skipped without a GPU).
#include "model/chunked_lm_loss.h"
#include "test_util.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <catch2/catch.hpp>

#ifdef RECIPEBENCH_GDN_CUDA
#include "cuda/gemm_accumulate_cuda.h"
#endif

using namespace recipebench::torch_model;
using rbt_test::rel_err;

namespace {

struct LossAndGrads {
  torch::Tensor loss, dh, dw;
};

LossAndGrads run(const torch::Tensor& h0, const torch::Tensor& w0, const torch::Tensor& t, const torch::Tensor& m,
                 int64_t chunk, LmLossImpl impl) {
  const auto h = h0.clone().requires_grad_(true), w = w0.clone().requires_grad_(true);
  const auto r = lm_loss_sum(h, w, t, m, nullptr, 0, chunk, impl);
  (r.sum * 0.5).backward();  // a non-unit incoming gradient: the backward's scaling is covered too
  return {r.sum.detach(), h.grad(), w.grad()};
}

}  // namespace

TEST_CASE("fused cross-entropy kernels match the libtorch-ops path (vocab 50,000 and an odd 50,007, 3 chunks)") {
  for (const int64_t vocab : {50000, 50007}) {  // 50,007: rows not 16-byte aligned, the scalar path
    INFO("vocab " << vocab);
    torch::manual_seed(11);
    const auto cuda = torch::TensorOptions().device(torch::kCUDA);
    const int64_t n = 700, hidden = 256;
    const auto h = torch::randn({n, hidden}, cuda.dtype(torch::kBFloat16));
    const auto w = (torch::randn({vocab, hidden}, cuda.dtype(torch::kBFloat16)) * 0.2).to(torch::kBFloat16);
    const auto t = torch::randint(vocab, {n}, cuda.dtype(torch::kLong));
    const auto m = torch::rand({n}, cuda) < 0.7;
    const auto fused = run(h, w, t, m, 256, LmLossImpl::Auto), ops = run(h, w, t, m, 256, LmLossImpl::Ops);
    CHECK(fused.loss.item<double>() == Approx(ops.loss.item<double>()).epsilon(1e-6));
    CHECK(rel_err(fused.dh, ops.dh) < 2e-3);
    CHECK(rel_err(fused.dw, ops.dw) < 2e-3);
    // Negative control: the loss of other targets is not within the bound.
    const auto other = run(h, w, (t + 1) % vocab, m, 256, LmLossImpl::Auto);
    CHECK(rel_err(other.dh, ops.dh) > 1e-1);
  }
}

TEST_CASE("the fused loss equals the FP64 cross-entropy of the same BF16 logits") {
  torch::manual_seed(5);
  const auto cuda = torch::TensorOptions().device(torch::kCUDA);
  const int64_t n = 300, hidden = 128, vocab = 4096;
  const auto h = torch::randn({n, hidden}, cuda.dtype(torch::kBFloat16));
  const auto w = torch::randn({vocab, hidden}, cuda.dtype(torch::kBFloat16));
  const auto t = torch::randint(vocab, {n}, cuda.dtype(torch::kLong));
  const auto m = torch::ones({n}, cuda.dtype(torch::kBool));
  const auto logits = torch::mm(h, w.t()).to(torch::kDouble);  // the BF16 GEMM's logits, exactly
  const auto reference = (torch::logsumexp(logits, 1) - logits.gather(1, t.unsqueeze(1)).squeeze(1)).sum();
  const auto fused = lm_loss_sum(h, w, t, m, nullptr, 0, n, LmLossImpl::Auto).sum;  // one chunk: the same GEMM
  CHECK(fused.item<double>() == Approx(reference.item<double>()).epsilon(1e-6));
}

#ifdef RECIPEBENCH_GDN_CUDA
TEST_CASE("cuBLAS accumulates the weight gradient x^T y into FP32 exactly as float64 does, to FP32 rounding") {
  torch::manual_seed(3);
  const auto cuda = torch::TensorOptions().device(torch::kCUDA);
  for (const int64_t M : {4096, 50007}) {  // 50,007: an odd leading dimension
    INFO("M " << M);
    const int64_t K = 300, N = 256;
    const auto x = torch::randn({K, M}, cuda.dtype(torch::kBFloat16));
    const auto y = torch::randn({K, N}, cuda.dtype(torch::kBFloat16));
    const auto start = torch::randn({M, N}, cuda.dtype(torch::kFloat));
    REQUIRE(cuda_accumulate_tn_supports(start, x, y));
    auto acc = start.clone();
    cuda_accumulate_tn_(acc, x, y);
    const auto exact = start.to(torch::kDouble) + torch::mm(x.to(torch::kDouble).t(), y.to(torch::kDouble));
    CHECK(rel_err(acc, exact) < 1e-5);  // exact BF16 products, FP32 sums over K = 300
    // A second accumulation adds the product again (beta = 1), and repeats bit for bit.
    auto twice = acc.clone(), again = start.clone();
    cuda_accumulate_tn_(twice, x, y);
    cuda_accumulate_tn_(again, x, y);
    CHECK(torch::equal(again, acc));
    CHECK(rel_err(twice, exact + torch::mm(x.to(torch::kDouble).t(), y.to(torch::kDouble))) < 1e-5);
    // Negative control: y's rows shifted by one pair each row of x with another row of y: far off.
    auto swapped = start.clone();
    cuda_accumulate_tn_(swapped, x, torch::roll(y, 1, 0));
    CHECK(rel_err(swapped, exact) > 1e-1);
  }
}
#endif
