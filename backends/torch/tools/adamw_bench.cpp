// The optimizer step alone on one GPU (docs/optimizer.md): MixedPrecisionAdam over N BF16 parameters with the
// fused AdamW kernels (bench.kernels: fused) and with libtorch's step (ops), in the same process, one after the
// other; each timed as a training step's optimizer work: zero_grad, one microbatch's accumulate_grads, the norm,
// the clip (active: clip_grad 0.1) and the step, after two warm-up steps.
// Prints one JSON line: milliseconds per step of each path (CUDA-synchronised wall time, mean of the timed steps),
// the bandwidth those milliseconds give for the bytes per parameter docs/optimizer.md counts (fused 40: the copy
// into the accumulator 6, the norm 4, the step 30; ops 60: the copy 6, the norm 12, the clip 8, PyTorch's AdamW 28,
// the cast to BF16 6), and ops / fused; then the fused kernels with the precision-aware state (docs/optimizer.md,
// "Precision-aware state"): BF16 + remainder masters (38 bytes: the step reads and writes hi + remainder, 4 + 4,
// instead of w 4 + 4 and p 2), and with BF16 moments too (30 bytes: m, v 2 + 2 each way).
// Exit 0 when the fused paths ran the kernels, 1 when not, 77 without a GPU.
// Usage: adamw_bench [--params N (default 1e9)] [--steps S (default 10)]
#include <torch/cuda.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "optim/adam.h"

using namespace recipebench;

namespace {

/// Tensor sizes that add up to about `total` elements like the proxy's: a few large matrices (experts, embedding),
/// many mid-size ones, some vectors.
std::vector<int64_t> tensor_sizes(int64_t total) {
  std::vector<int64_t> sizes;
  const int64_t big = total / 8;
  for (int i = 0; i < 6; ++i) sizes.push_back(big);
  int64_t left = total - 6 * big;
  for (int i = 0; left > 0; ++i) {
    // mid-size matrices with a ragged end (not a multiple of 4), every other one followed by a norm-sized vector
    const int64_t n = std::min<int64_t>(left, i % 2 ? 2048 : 2048 * 1024 + 7);
    sizes.push_back(n);
    left -= n;
  }
  return sizes;
}

/// The seconds per optimizer step of MixedPrecisionAdam on `kernels` with options `o` (clip_grad 0.1, weight decay 0.1
/// set here) over about `total` BF16 parameters.
double time_path(train::AdamKernels kernels, RecipeOptimizer o, int64_t total, int steps, bool& used_kernels) {
  const auto bf16 = torch::TensorOptions().dtype(torch::kBFloat16).device(torch::kCUDA);
  std::vector<torch::Tensor> params, grads;
  for (const int64_t n : tensor_sizes(total)) {
    params.push_back((torch::randn({n}, bf16) * 0.02).set_requires_grad(true));
    grads.push_back(torch::randn({n}, bf16) * 1e-3);
  }
  o.clip_grad = 0.1;
  o.weight_decay = 0.1;
  train::MixedPrecisionAdam adam(params, o, {}, kernels);
  used_kernels = adam.uses_cuda_kernels();
  double seconds = 0;
  for (int s = 0; s < steps + 2; ++s) {
    torch::cuda::synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    adam.zero_grad();
    for (size_t i = 0; i < params.size(); ++i) params[i].mutable_grad() = grads[i];
    adam.accumulate_grads();
    adam.clip(adam.grad_norm());
    adam.step(1e-4);
    torch::cuda::synchronize();
    if (s >= 2) seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return seconds / steps;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t total = 1'000'000'000;
  int steps = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--params")) total = static_cast<int64_t>(std::atof(argv[i + 1]));
    if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[i + 1]);
  }
  if (!torch::cuda::is_available()) {
    std::fprintf(stderr, "adamw_bench: no CUDA device\n");
    return 77;
  }
  torch::NoGradGuard no_grad;
  bool fused_used = false, ops_used = false, remainder_used = false, bf16_used = false;
  RecipeOptimizer remainder, bf16_moments;
  remainder.master_weights = bf16_moments.master_weights = MasterWeights::kBf16Remainder;
  bf16_moments.exp_avg_dtype = bf16_moments.exp_avg_sq_dtype = StateDtype::kBf16;
  const double fused = time_path(train::AdamKernels::kFused, {}, total, steps, fused_used);
  const double ops = time_path(train::AdamKernels::kOps, {}, total, steps, ops_used);
  const double rem = time_path(train::AdamKernels::kFused, remainder, total, steps, remainder_used);
  const double bf16 = time_path(train::AdamKernels::kFused, bf16_moments, total, steps, bf16_used);
  // Bytes per parameter (docs/optimizer.md): the accumulator copy (read BF16 2, write FP32 4) in both; fused: norm 4
  // + step 30; ops: norm 12 + clip 8 + PyTorch's AdamW 28 + cast to BF16 6.
  const double fused_bytes = 6 + 4 + 30, ops_bytes = 6 + 12 + 8 + 28 + 6, rem_bytes = 6 + 4 + 28,
               bf16_bytes = 6 + 4 + 20;
  const double n = static_cast<double>(total);
  std::printf("{\"params\": %lld, \"steps\": %d, \"fused_ms\": %.3f, \"fused_uses_kernels\": %s, \"fused_gb_per_s\": %.0f, "
              "\"ops_ms\": %.3f, \"ops_gb_per_s\": %.0f, \"ops_over_fused\": %.3f, \"remainder_ms\": %.3f, "
              "\"remainder_gb_per_s\": %.0f, \"remainder_bf16_moments_ms\": %.3f, \"remainder_bf16_moments_gb_per_s\": %.0f}\n",
              static_cast<long long>(total), steps, fused * 1e3, fused_used ? "true" : "false",
              fused_bytes * n / fused / 1e9, ops * 1e3, ops_bytes * n / ops / 1e9, ops / fused, rem * 1e3,
              rem_bytes * n / rem / 1e9, bf16 * 1e3, bf16_bytes * n / bf16 / 1e9);
  return fused_used && !ops_used && remainder_used && bf16_used ? 0 : 1;
}
