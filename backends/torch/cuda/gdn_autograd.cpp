// libtorch autograd function around the GDN CUDA kernels (see gdn_autograd.h). The forward keeps its inputs (bf16 q,
// k, v; fp32 g, beta; the initial state), the chunk table and the kernels' intermediates (gdn::saved_bytes: the
// chunk states, W, T, v_new, the cumulative gates), which the backward reads instead of recomputing them
// (docs/gdn-kernels.md, "Stored vs recomputed").
#include "cuda/gdn_autograd.h"

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/autograd.h>

#include <cmath>

#include "cuda/gdn_kernels.h"
#include "cuda/glue_util.h"

namespace recipebench::torch_model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// Shape, chunk table (host and device) of one call.
struct Plan {
  gdn::Shape shape;
  gdn::ChunkTable table;
  torch::Tensor table_dev;  // int32 on the device
  gdn::DeviceChunkTable view() const { return gdn::device_view(table, table_dev.data_ptr<int>()); }
};

/// The call's plan. The device table is `table_dev` when given (the backward pass reuses the forward's), else the
/// host table copied from pinned memory without blocking: a copy from pageable memory makes the host wait for the
/// GPU (libtorch's synchronising copy; bench.fail_on_sync names it), once per GDN layer and pass.
Plan make_plan(const torch::Tensor& q, const torch::Tensor& v, double scale, std::vector<int64_t> cu,
               const torch::Tensor& table_dev = {}) {
  const int64_t b = q.size(0), s = q.size(1);
  if (cu.empty())
    for (int64_t i = 0; i <= b; ++i) cu.push_back(i * s);
  TORCH_CHECK(b == 1 || static_cast<int64_t>(cu.size()) == b + 1, "GDN: cu_seqlens needs batch 1, got batch ", b);
  TORCH_CHECK(cu.back() == b * s, "GDN: cu_seqlens ends at ", cu.back(), ", expected ", b * s, " tokens");
  Plan p;
  p.table = gdn::make_chunk_table(cu);
  p.shape = gdn::Shape{static_cast<int>(b * s), static_cast<int>(cu.size()) - 1, static_cast<int>(q.size(2)),
                       static_cast<int>(v.size(2)),
                       static_cast<float>(scale > 0 ? scale : 1.0 / std::sqrt(static_cast<double>(q.size(3))))};
  if (table_dev.defined()) {
    p.table_dev = table_dev;
    return p;
  }
  const auto host = gdn::pack_chunk_table(p.table);
  const auto pinned = torch::tensor(host.empty() ? std::vector<int>{0} : host, torch::kInt32).pin_memory();
  p.table_dev = pinned.to(torch::TensorOptions().device(q.device()), /*non_blocking=*/true);
  return p;
}

torch::Tensor workspace(size_t bytes, const torch::Device& d) {
  return torch::empty({static_cast<int64_t>(std::max<size_t>(bytes, 1))}, torch::dtype(torch::kUInt8).device(d));
}

struct GdnFunction : torch::autograd::Function<GdnFunction> {
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& q_in, const torch::Tensor& k_in,
                               const torch::Tensor& v_in, const torch::Tensor& g_in, const torch::Tensor& beta_in,
                               const torch::Tensor& h0_in, double scale, std::vector<int64_t> cu) {
    const c10::cuda::CUDAGuard guard(q_in.device());
    const auto q = q_in.to(torch::kBFloat16).contiguous(), k = k_in.to(torch::kBFloat16).contiguous();
    const auto v = v_in.to(torch::kBFloat16).contiguous();
    const auto g = g_in.to(torch::kFloat32).contiguous(), beta = beta_in.to(torch::kFloat32).contiguous();
    // No initial state arrives as an empty placeholder (see cuda_chunk_gated_delta_rule).
    const auto h0 = h0_in.numel() > 0 ? h0_in.to(torch::kFloat32).contiguous() : torch::Tensor();
    Plan p = make_plan(q, v, scale, cu);
    auto o = torch::empty(v.sizes(), v.options());
    auto ht = torch::empty({p.shape.rows, p.shape.v_heads, gdn::kHeadDim, gdn::kHeadDim}, g.options());
    auto kept = workspace(gdn::saved_bytes(p.shape, p.table.chunks()), q.device());
    auto ws = workspace(gdn::forward_workspace_bytes(p.shape, p.table.chunks(), /*keep=*/true), q.device());
    check_launch(gdn::forward(p.shape, p.view(), bf16_ptr(q), bf16_ptr(k), bf16_ptr(v), g.data_ptr<float>(),
                              beta.data_ptr<float>(), h0.defined() ? h0.data_ptr<float>() : nullptr, bf16_mut(o),
                              ht.data_ptr<float>(), kept.data_ptr(), ws.data_ptr(),
                              c10::cuda::getCurrentCUDAStream().stream()),
                 "GDN CUDA kernels: forward");
    ctx->save_for_backward({q, k, v, g, beta, h0, p.table_dev, kept});
    ctx->saved_data["cu"] = c10::IValue(cu);
    ctx->saved_data["scale"] = static_cast<double>(p.shape.scale);
    ctx->saved_data["dtypes"] = c10::IValue(
        std::vector<int64_t>{static_cast<int64_t>(q_in.scalar_type()), static_cast<int64_t>(k_in.scalar_type()),
                             static_cast<int64_t>(v_in.scalar_type()), static_cast<int64_t>(g_in.scalar_type()),
                             static_cast<int64_t>(beta_in.scalar_type()), static_cast<int64_t>(h0_in.scalar_type())});
    return {o.to(v_in.scalar_type()), ht};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &q = saved[0], &k = saved[1], &v = saved[2], &g = saved[3], &beta = saved[4], &h0 = saved[5];
    const c10::cuda::CUDAGuard guard(q.device());
    const std::vector<int64_t> cu = ctx->saved_data["cu"].toIntVector();
    Plan p = make_plan(q, v, ctx->saved_data["scale"].toDouble(), cu, saved[6]);
    const auto d_o = grads[0].defined() ? grads[0].to(torch::kBFloat16).contiguous() : torch::zeros_like(v);
    const auto dht = grads[1].defined() ? grads[1].to(torch::kFloat32).contiguous() : torch::Tensor();
    auto dq = torch::empty_like(q), dk = torch::empty_like(k), dv = torch::empty_like(v);
    auto dg = torch::empty_like(g), dbeta = torch::empty_like(beta);
    auto dh0 = h0.defined() ? torch::empty_like(h0) : torch::Tensor();
    const auto& kept = saved[7];
    auto ws = workspace(gdn::backward_workspace_bytes(p.shape, p.table.chunks(), /*from_saved=*/true), q.device());
    check_launch(
        gdn::backward(p.shape, p.view(), bf16_ptr(q), bf16_ptr(k), bf16_ptr(v), g.data_ptr<float>(),
                      beta.data_ptr<float>(), h0.defined() ? h0.data_ptr<float>() : nullptr, bf16_ptr(d_o),
                      dht.defined() ? dht.data_ptr<float>() : nullptr, bf16_mut(dq), bf16_mut(dk), bf16_mut(dv),
                      dg.data_ptr<float>(), dbeta.data_ptr<float>(), dh0.defined() ? dh0.data_ptr<float>() : nullptr,
                      kept.data_ptr(), ws.data_ptr(), c10::cuda::getCurrentCUDAStream().stream()),
        "GDN CUDA kernels: backward");
    const auto dt = ctx->saved_data["dtypes"].toIntVector();
    auto as = [&](const torch::Tensor& t, int i) {
      return t.defined() ? t.to(static_cast<c10::ScalarType>(dt[i])) : t;
    };
    return {as(dq, 0), as(dk, 1), as(dv, 2), as(dg, 3), as(dbeta, 4), as(dh0, 5), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

bool cuda_gated_delta_rule_supports(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
  auto ok_type = [](const torch::Tensor& t) {
    return t.scalar_type() == torch::kFloat32 || t.scalar_type() == torch::kBFloat16 || t.scalar_type() == torch::kHalf;
  };
  return q.is_cuda() && k.device() == q.device() && v.device() == q.device() && q.dim() == 4 &&
         k.sizes() == q.sizes() && v.dim() == 4 && q.size(3) == gdn::kHeadDim && v.size(3) == gdn::kHeadDim &&
         v.size(0) == q.size(0) && v.size(1) == q.size(1) && q.size(2) > 0 && v.size(2) % q.size(2) == 0 &&
         ok_type(q) && ok_type(k) && ok_type(v);
}

GatedDeltaRuleOutput cuda_chunk_gated_delta_rule(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                                 const torch::Tensor& g, const torch::Tensor& beta,
                                                 const torch::Tensor& initial_state, bool output_final_state,
                                                 double scale, const std::vector<int64_t>& cu_seqlens) {
  TORCH_CHECK(cuda_gated_delta_rule_supports(q, k, v), "GDN CUDA kernels: unsupported q ", q.sizes(), " ",
              q.scalar_type(), ", k ", k.sizes(), ", v ", v.sizes(), " on ", q.device(),
              " (need CUDA, head dims 128, v_heads a multiple of k_heads, no fp64)");
  TORCH_CHECK(g.sizes() == v.sizes().slice(0, 3) && beta.sizes() == g.sizes(), "GDN CUDA kernels: g ", g.sizes(),
              " and beta ", beta.sizes(), ", expected ", v.sizes().slice(0, 3));
  // Function::apply records every Tensor argument's metadata, which an undefined tensor does not have: without an
  // initial state, pass an empty placeholder (no gradient flows to it).
  const auto h0 = initial_state.defined() ? initial_state : torch::empty({0}, g.options().dtype(torch::kFloat32));
  auto out = GdnFunction::apply(q, k, v, g, beta, h0, scale, cu_seqlens);
  return GatedDeltaRuleOutput{out[0], output_final_state ? out[1] : torch::Tensor()};
}

}  // namespace recipebench::torch_model
