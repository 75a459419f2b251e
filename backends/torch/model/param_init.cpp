#include "model/param_init.h"

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>

#include <algorithm>

#ifdef RECIPEBENCH_GDN_CUDA
#include "cuda/param_init_cuda.h"
#endif

namespace recipebench::torch_model {

namespace {

/// FNV-1a, 64-bit (Fowler, Noll, Vo), of the bytes of `s`.
uint64_t fnv1a64(const std::string& s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (const unsigned char c : s) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

/// Global index of every local index, per dimension (experts offset along dim 0, the TP layout along its dim).
std::vector<std::vector<int64_t>> global_indices(at::IntArrayRef local, at::IntArrayRef global,
                                                 const ShardPlacement& where) {
  TORCH_CHECK(local.size() == global.size(), "init: shard ", local, " of a parameter ", global);
  std::vector<std::vector<int64_t>> g(local.size());
  for (size_t d = 0; d < local.size(); ++d) {
    g[d].resize(static_cast<size_t>(local[d]));
    for (int64_t i = 0; i < local[d]; ++i) g[d][static_cast<size_t>(i)] = i;
  }
  for (auto& i : g[0]) i += where.expert_offset;
  if (where.tp_sharded) {
    const auto dim = static_cast<size_t>(where.tp.dim);
    TORCH_CHECK(dim < local.size(), "init: TP dim ", where.tp.dim, " of ", global);
    int64_t block = 0, local_offset = 0;
    for (const int64_t part : where.tp.parts) {
      TORCH_CHECK(part % where.tp_size == 0, "init: TP block ", part, " of ", global, " over TP ", where.tp_size);
      const int64_t n = part / where.tp_size;
      for (int64_t j = 0; j < n && local_offset + j < local[dim]; ++j)
        g[dim][static_cast<size_t>(local_offset + j)] = block + where.tp_rank * n + j;
      block += part;
      local_offset += n;
    }
    TORCH_CHECK(block == global[dim] && local_offset == local[dim], "init: TP layout of ", local, " in ", global);
  }
  for (size_t d = 0; d < local.size(); ++d)
    TORCH_CHECK(g[d].empty() || g[d].back() < global[d], "init: shard ", local, " outside ", global, " along dim ", d);
  return g;
}

}  // namespace

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  const init::Words4 w = init::philox4x32_10(init::Words4{{c[0], c[1], c[2], c[3]}}, k[0], k[1]);
  return {w.w[0], w.w[1], w.w[2], w.w[3]};
}

uint64_t init_stream_key(uint64_t seed, const std::string& name, int64_t expert) {
  return init::stream_key(seed, fnv1a64(name), expert);
}

InitRule init_rule(const std::string& name, at::IntArrayRef shape) {
  using K = InitRule::Kind;
  if (ends_with(name, "linear_attn.norm.weight")) return {K::Constant, 1.0};  // gated RMSNorm: plain scale
  if (ends_with(name, "norm.weight")) return {K::Constant, 0.0};              // zero-centred RMSNorms
  if (ends_with(name, ".dt_bias")) return {K::Constant, 1.0};
  if (ends_with(name, ".A_log")) return {K::LogUniform, 0.01, 16.0};
  if (ends_with(name, ".conv1d.weight")) {  // torch's Conv1d default: Kaiming uniform (a = sqrt 5), fan_in = kernel
    TORCH_CHECK(shape.size() == 3, "init: ", name, " ", shape, ", expected [channels, 1, kernel]");
    const double bound = 1.0 / std::sqrt(static_cast<double>(shape[2]));
    return {K::Uniform, -bound, bound};
  }
  constexpr double kStd = 0.02;  // Hugging Face initializer_range of the Qwen3.5 configs (model/common.h kInitStd)
  if (ends_with(name, ".experts.gate_up_proj") || ends_with(name, ".experts.down_proj"))
    return {K::Normal, kStd, 0.0, /*per_expert=*/true};
  for (const char* w :
       {"q_proj", "k_proj", "v_proj", "o_proj", "in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a", "out_proj",
        "gate_proj", "up_proj", "down_proj", "mlp.gate", "shared_expert_gate", "embed_tokens", "lm_head"})
    if (ends_with(name, std::string(w) + ".weight")) return {K::Normal, kStd};
  TORCH_CHECK(false, "init: no initialisation rule for parameter ", name, " (docs/initialization.md)");
}

void init_shard(at::Tensor& local, uint64_t seed, const std::string& name, at::IntArrayRef global_shape,
                const ShardPlacement& where) {
  if (local.is_meta()) return;
  TORCH_CHECK(local.is_contiguous() && local.dim() >= 1, "init: ", name, " shard must be contiguous, >= 1-D");
  const InitRule rule = init_rule(name, global_shape);
  if (rule.kind == InitRule::Kind::Constant) {
    local.fill_(rule.a);
    return;
  }
  const auto g = global_indices(local.sizes(), global_shape, where);
  const int64_t nd = local.dim(), last = local.size(nd - 1), lines = local.numel() / std::max<int64_t>(last, 1);
  std::vector<int64_t> gstride(static_cast<size_t>(nd), 1);
  for (int64_t d = nd - 2; d >= 0; --d) gstride[static_cast<size_t>(d)] = gstride[d + 1] * global_shape[d + 1];
  const uint64_t name_hash = fnv1a64(name);
#ifdef RECIPEBENCH_GDN_CUDA
  if (local.is_cuda()) {  // on the device: one thread per element (cuda/param_init_cuda.h)
    cuda_init_shard(local, g, gstride, rule.kind, rule.a, rule.b, rule.per_expert, seed, name_hash);
    return;
  }
#endif
  const int64_t block_lines = std::max<int64_t>(1, (int64_t{1} << 22) / std::max<int64_t>(last, 1));
  auto flat = local.view({-1});
  for (int64_t l0 = 0; l0 < lines; l0 += block_lines) {
    const int64_t nl = std::min(block_lines, lines - l0);
    auto buf = at::empty({nl * last}, at::TensorOptions().dtype(at::kFloat));
    float* out = buf.data_ptr<float>();
    at::parallel_for(0, nl, 1, [&](int64_t begin, int64_t end) {
      std::vector<int64_t> idx(static_cast<size_t>(nd), 0);
      for (int64_t l = begin; l < end; ++l) {
        int64_t rest = l0 + l, base = 0;  // the line's local multi-index over dims 0..nd-2 -> global offset
        for (int64_t d = nd - 2; d >= 0; --d) {
          const int64_t i = rest % local.size(d);
          rest /= local.size(d);
          base += g[static_cast<size_t>(d)][static_cast<size_t>(i)] * gstride[static_cast<size_t>(d)];
          idx[static_cast<size_t>(d)] = i;
        }
        // The line's elements share the expert (dims 0..nd-2), so its stream and its first counter.
        const int64_t expert = nd >= 2 ? g[0][static_cast<size_t>(idx[0])] : 0;
        const init::ElementStream s = init::element_stream(seed, name_hash, rule.per_expert, base, expert, gstride[0]);
        const auto& gl = g[static_cast<size_t>(nd - 1)];
        for (int64_t j = 0; j < last; ++j)
          out[l * last + j] = init::draw(rule.kind, rule.a, rule.b, s.key,
                                         s.counter + static_cast<uint64_t>(gl[static_cast<size_t>(j)]));
      }
    });
    flat.narrow(0, l0 * last, nl * last).copy_(buf);
  }
}

}  // namespace recipebench::torch_model
