// The CUDA parameter fill (cuda/param_init_cuda.h, used by model/param_init.h's init_shard for CUDA tensors) against
// the CPU fill of the same shards, and its own layout independence on the GPU: a TP slice or a group of experts made
// alone on the device is bitwise that part of the whole parameter made on the device. Part of test_torch_cuda
// (cuda_test_main.cpp: skipped without a GPU).
#include "model/param_init.h"
#include "model/tensor_parallel.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace recipebench::torch_model;

namespace {

torch::Tensor whole(uint64_t seed, const std::string& name, const std::vector<int64_t>& shape, torch::Device device) {
  auto t = torch::empty(shape, torch::TensorOptions().dtype(torch::kFloat).device(device));
  init_shard(t, seed, name, shape, {});
  return t.cpu();
}

bool bitwise_equal(const torch::Tensor& a, const torch::Tensor& b) {
  const auto x = a.cpu().contiguous(), y = b.cpu().contiguous();
  return x.sizes() == y.sizes() && x.scalar_type() == y.scalar_type() &&
         std::memcmp(x.data_ptr(), y.data_ptr(), x.numel() * x.element_size()) == 0;
}

}  // namespace

TEST_CASE("the CUDA fill gives the CPU fill's values, within one float32 rounding (normal, uniform, log-uniform)",
          "[init][cuda]") {
  const torch::Device gpu(torch::kCUDA);
  struct Case {
    std::string name;
    std::vector<int64_t> shape;
  };
  for (const Case& c : std::vector<Case>{{"model.layers.0.mlp.experts.gate_up_proj", {16, 256, 512}},
                                         {"model.embed_tokens.weight", {4096, 512}},
                                         {"model.layers.0.linear_attn.conv1d.weight", {8192, 1, 4}},
                                         {"model.layers.0.linear_attn.A_log", {64}}}) {
    INFO(c.name);
    const auto cpu = whole(11, c.name, c.shape, torch::kCPU), cuda = whole(11, c.name, c.shape, gpu);
    // One float32 ulp of each value: the float64 log / cos of the C library and of CUDA may differ in their last
    // bit, which changes the float32 rounding only for a value that close to a rounding boundary.
    const auto ulp = (torch::nextafter(cpu.abs(), torch::full_like(cpu, INFINITY)) - cpu.abs());
    CHECK((cuda - cpu).abs().le(ulp).all().item<bool>());
    const double differing = (cuda != cpu).sum().item<double>() / cpu.numel();
    CHECK(differing <= 1e-4);
    CHECK(cpu.std().item<double>() > 0);  // not a constant: the comparison means something
  }
}

TEST_CASE("on the GPU, a TP slice and a group of experts made alone are bitwise those parts of the whole parameter",
          "[init][cuda]") {
  const torch::Device gpu(torch::kCUDA);
  const std::string qkv = "model.layers.0.linear_attn.in_proj_qkv.weight";
  const std::vector<int64_t> qkv_shape{40, 64};
  const TpShardSpec spec{0, {12, 12, 16}};
  const auto full = whole(5, qkv, qkv_shape, gpu);
  for (int64_t r = 0; r < 4; ++r) {
    const auto expected = tp_local_slice(full, spec, r, 4);
    auto local = torch::empty(expected.sizes(), torch::TensorOptions().dtype(torch::kFloat).device(gpu));
    ShardPlacement where;
    where.tp_sharded = true;
    where.tp = spec;
    where.tp_rank = r;
    where.tp_size = 4;
    init_shard(local, 5, qkv, qkv_shape, where);
    CHECK(bitwise_equal(local, expected));
  }
  const std::string experts = "model.layers.1.mlp.experts.down_proj";
  const auto all = whole(5, experts, {8, 32, 16}, gpu);
  auto two = torch::empty({2, 32, 16}, torch::TensorOptions().dtype(torch::kBFloat16).device(gpu));
  ShardPlacement where;
  where.expert_offset = 6;
  init_shard(two, 5, experts, {8, 32, 16}, where);
  CHECK(bitwise_equal(two, all.narrow(0, 6, 2).to(torch::kBFloat16)));  // float32, then the storage dtype
}
