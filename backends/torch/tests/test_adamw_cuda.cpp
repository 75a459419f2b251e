// MixedPrecisionAdam on CUDA (train/adam.h): the fused multi-tensor kernels (cuda/adamw_cuda.h, AdamKernels::kFused)
// and PyTorch's fused AdamW (kOps) against the per-tensor libtorch step on the CPU, over three steps with two
// microbatches, clipping, a parameter without a gradient, tensors of several chunks with a ragged tail; the fused
// kernels bitwise repeatable and the BF16 parameters exactly their rounded masters. Part of test_torch_cuda
// (cuda_test_main.cpp: skipped without a GPU).
#include <torch/torch.h>

#include <catch2/catch.hpp>

#include <vector>

#include "train/adam.h"

using namespace recipebench;

namespace {

/// Decayed and not decayed, one of 3 chunks with a ragged tail (adamw_kernels.h: 32,768 elements per chunk), one
/// too short for a float4, and (the last) one whose BF16 parameter starts 2 bytes into its buffer.
std::vector<torch::Tensor> initial_weights() {
  torch::manual_seed(11);
  return {torch::randn({32, 48}), torch::randn({48}), torch::randn({3, 70001 / 3 + 1}), torch::randn({3}),
          torch::randn({40, 25})};
}

/// The parameters on `dev` in BF16; the last one a contiguous view one element into a larger buffer, so that its
/// slot takes the kernels' scalar (not float4) path.
std::vector<torch::Tensor> make_params(const std::vector<torch::Tensor>& init, torch::Device dev) {
  std::vector<torch::Tensor> ps;
  for (size_t i = 0; i + 1 < init.size(); ++i) ps.push_back(init[i].to(dev, torch::kBFloat16).set_requires_grad(true));
  const auto& last = init.back();
  auto buffer = torch::zeros({last.numel() + 1}, torch::TensorOptions().dtype(torch::kBFloat16).device(dev));
  auto view = buffer.narrow(0, 1, last.numel()).view(last.sizes());
  view.copy_(last.to(torch::kBFloat16));
  ps.push_back(view.set_requires_grad(true));
  return ps;
}

/// Three steps: step 0 one microbatch, step 1 two microbatches, step 2 the first parameter without a gradient;
/// gradients large enough that clip_grad (0.5) scales them. Returns the gradient norms.
std::vector<double> train3(train::MixedPrecisionAdam& adam, std::vector<torch::Tensor>& params, double lr) {
  torch::manual_seed(5);
  std::vector<double> norms;
  for (int step = 0; step < 3; ++step) {
    adam.zero_grad();
    for (int micro = 0; micro < (step == 1 ? 2 : 1); ++micro) {
      for (size_t i = 0; i < params.size(); ++i) {
        const auto g = (torch::randn(params[i].sizes()) * 1e-2).to(torch::kBFloat16);
        if (step == 2 && i == 0) continue;
        params[i].mutable_grad() = g.to(params[i].device());
      }
      adam.accumulate_grads();
    }
    const double norm = adam.grad_norm();
    norms.push_back(norm);
    adam.clip(norm);
    adam.step(lr);
  }
  return norms;
}

RecipeOptimizer clipping_options() {
  RecipeOptimizer o;
  o.clip_grad = 0.5;
  o.weight_decay = 0.1;
  return o;
}

}  // namespace

TEST_CASE("CUDA AdamW: the fused kernels and PyTorch's fused step equal the per-tensor step", "[cuda][adam]") {
  const auto init = initial_weights();
  const RecipeOptimizer o = clipping_options();
  auto cpu_params = make_params(init, torch::kCPU);
  train::MixedPrecisionAdam cpu(cpu_params, o);
  const auto cpu_norms = train3(cpu, cpu_params, 1e-3);
  for (const auto kernels : {train::AdamKernels::kFused, train::AdamKernels::kOps}) {
    INFO((kernels == train::AdamKernels::kFused ? "fused kernels" : "PyTorch's fused AdamW"));
    auto gpu_params = make_params(init, torch::kCUDA);
    train::MixedPrecisionAdam gpu(gpu_params, o, {}, kernels);
    REQUIRE(gpu.uses_cuda_kernels() == (kernels == train::AdamKernels::kFused));
    const auto gpu_norms = train3(gpu, gpu_params, 1e-3);
    for (size_t s = 0; s < cpu_norms.size(); ++s) {
      CHECK(cpu_norms[s] > 0.5);  // clipping applied every step
      CHECK(gpu_norms[s] == Approx(cpu_norms[s]).epsilon(1e-5));
    }
    for (size_t i = 0; i < init.size(); ++i) {
      const auto a = cpu.master()[i].to(torch::kFloat64), b = gpu.master()[i].to(torch::kCPU, torch::kFloat64);
      const auto moved = (a - init[i].to(torch::kBFloat16).to(torch::kFloat64)).norm().item<double>();
      CHECK(moved > 1e-4);  // the weights did move
      // FP32 operations in another order (and fused multiply-adds): 3.9e-5 seen for PyTorch's kernel on an H200
      // (2026-11-29); the bound stays 10x inside docs/correctness.md's 1e-3 bound on the optimizer update.
      CHECK((a - b).norm().item<double>() / moved < 1e-4);
      // The parameter is its master weight rounded to BF16, exactly.
      CHECK(torch::equal(gpu_params[i].detach(), gpu.master()[i].to(torch::kBFloat16)));
    }
  }
}

TEST_CASE("CUDA AdamW: the fused kernels repeat bitwise; a different learning rate is caught", "[cuda][adam]") {
  const auto init = initial_weights();
  const RecipeOptimizer o = clipping_options();
  auto p1 = make_params(init, torch::kCUDA), p2 = make_params(init, torch::kCUDA), p3 = make_params(init, torch::kCUDA);
  train::MixedPrecisionAdam a1(p1, o), a2(p2, o), a3(p3, o);
  REQUIRE(a1.uses_cuda_kernels());
  const auto n1 = train3(a1, p1, 1e-3), n2 = train3(a2, p2, 1e-3);
  train3(a3, p3, 1.1e-3);  // negative control: the comparison above must see a 10% change of the update
  CHECK(n1 == n2);
  auto cpu_params = make_params(init, torch::kCPU);
  train::MixedPrecisionAdam cpu(cpu_params, o);
  train3(cpu, cpu_params, 1e-3);
  for (size_t i = 0; i < init.size(); ++i) {
    CHECK(torch::equal(a1.master()[i], a2.master()[i]));
    CHECK(torch::equal(p1[i], p2[i]));
    const auto ref = cpu.master()[i].to(torch::kFloat64);
    const auto moved = (ref - init[i].to(torch::kBFloat16).to(torch::kFloat64)).norm().item<double>();
    const auto off = (a3.master()[i].to(torch::kCPU, torch::kFloat64) - ref).norm().item<double>() / moved;
    CHECK(off > 1e-2);
  }
}
