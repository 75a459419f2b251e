// The fixed-capacity dispatcher's local experts on the GPU (bench.ep_dispatch fixed_capacity; docs/distributed.md,
// "Expert parallelism"): BF16 rows sorted by local expert with padding rows after the counted ones go through the
// grouped GEMM, which leaves rows past its last offset unset; the padding's outputs and input gradients must be
// exactly zero even when the padding holds NaN, and the counted rows must equal the call without padding. Without a
// GPU the binary exits with kSkip, which CTest reports as skipped (SKIP_RETURN_CODE), never passed.
#include "model/compat.h"
#include "model/moe.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <catch2/catch.hpp>

#include <limits>
#include <vector>

using namespace recipebench::torch_model;

TEST_CASE("CUDA grouped-GEMM experts with padding rows: zero outputs and gradients past the counted rows",
          "[cuda][moe][capacity]") {
  torch::manual_seed(5);
  // 35B-A3B expert widths, 8 local experts, 3 of them without rows; 1,500 counted rows, 548 rows of padding.
  const int64_t E = 8, H = 2048, F = 512, rows = 2048;
  RoutedExperts m(E, H, F, ExpertsImpl::Grouped);
  m->to(torch::kCUDA, torch::kBFloat16);
  REQUIRE(compat::grouped_mm_usable(m->gate_up_proj));
  const auto counts = torch::tensor(std::vector<int64_t>{400, 0, 300, 0, 500, 200, 0, 100}).to(torch::kCUDA);
  const int64_t real = 1500;
  const auto opts = torch::TensorOptions().dtype(torch::kBFloat16).device(torch::kCUDA);
  auto base = torch::randn({rows, H}, opts);
  base.narrow(0, real, rows - real).fill_(std::numeric_limits<float>::quiet_NaN());
  auto xs = base.clone().requires_grad_(true);
  const auto ys = m->local_ffn(xs, counts, /*padded=*/true);
  REQUIRE(ys.sizes() == torch::IntArrayRef({rows, H}));
  CHECK(torch::equal(ys.narrow(0, real, rows - real), torch::zeros({rows - real, H}, opts)));
  auto x_real = base.narrow(0, 0, real).clone().requires_grad_(true);
  const auto ys_real = m->local_ffn(x_real, counts);
  CHECK(torch::equal(ys.narrow(0, 0, real), ys_real));
  const auto g = torch::randn({rows, H}, opts);
  (ys.to(torch::kFloat32) * g.to(torch::kFloat32)).sum().backward();
  CHECK(torch::equal(xs.grad().narrow(0, real, rows - real), torch::zeros({rows - real, H}, opts)));
  CHECK_FALSE(torch::isnan(m->gate_up_proj.grad()).any().item<bool>());
  CHECK_FALSE(torch::isnan(m->down_proj.grad()).any().item<bool>());
  // Negative control: counts that claim one row more (the last expert's 101st row, the first NaN row) let that row
  // through: the mask follows the counts, so the zeros above are the mask's work.
  const auto counts_plus = torch::tensor(std::vector<int64_t>{400, 0, 300, 0, 500, 200, 0, 101}).to(torch::kCUDA);
  torch::NoGradGuard no_grad;
  const auto ys_plus = m->local_ffn(base, counts_plus, /*padded=*/true);
  CHECK(torch::isnan(ys_plus[real]).all().item<bool>());
  CHECK(torch::equal(ys_plus.narrow(0, real + 1, rows - real - 1), torch::zeros({rows - real - 1, H}, opts)));
}
