#include "model/moe.h"

#include "model/common.h"
#include "model/compat.h"
#include "model/component_timer.h"
#include "model/param_factory.h"
#include "model/tensor_parallel.h"

#include <torch/autograd.h>
#ifdef RECIPEBENCH_GDN_CUDA
#include "cuda/moe_combine_cuda.h"
#endif

#include <optional>
#include <vector>

namespace recipebench::torch_model {

SwiGLUImpl::SwiGLUImpl(int64_t hidden, int64_t ffn) {
  gate_proj = register_module("gate_proj", Projection(hidden, ffn));
  up_proj = register_module("up_proj", Projection(hidden, ffn));
  down_proj = register_module("down_proj", Projection(ffn, hidden));
}

torch::Tensor SwiGLUImpl::forward(const torch::Tensor& x) { return from_projections(gate_proj(x), up_proj(x)); }

torch::Tensor SwiGLUImpl::from_projections(const torch::Tensor& gate, const torch::Tensor& up) {
  return down_proj(torch::silu(gate) * up);
}

Routing route_topk(const torch::Tensor& x, const torch::Tensor& router_weight, int64_t top_k) {
  TORCH_CHECK(x.dim() == 2 && router_weight.dim() == 2 && x.size(1) == router_weight.size(1), "router: x ", x.sizes(),
              " weight ", router_weight.sizes());
  TORCH_CHECK(top_k > 0 && top_k <= router_weight.size(0), "top_k ", top_k, " of ", router_weight.size(0), " experts");
  Routing r;
  r.logits = torch::linear(x, router_weight);
  const auto probs = torch::softmax(r.logits.to(compute_dtype(x.scalar_type())), -1);
  auto [top_p, top_i] = probs.topk(top_k, -1);  // sorted, descending
  r.weights = (top_p / top_p.sum(-1, /*keepdim=*/true)).to(x.scalar_type());
  r.indices = top_i;
  return r;
}

namespace {

/// Variable-size all-to-all over the EP group as an autograd function: the backward of the all-to-all is the
/// reverse all-to-all (the gradients go back to the rows' senders, send and receive counts swapped).
struct AllToAll : torch::autograd::Function<AllToAll> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, ExpertParallel* group,
                               const std::vector<int64_t>& send, const std::vector<int64_t>& recv) {
    ctx->saved_data["group"] = reinterpret_cast<int64_t>(group);
    ctx->saved_data["send"] = send;
    ctx->saved_data["recv"] = recv;
    return group->all_to_all(x.contiguous(), send, recv);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad) {
    auto* group = reinterpret_cast<ExpertParallel*>(ctx->saved_data["group"].toInt());
    const auto send = ctx->saved_data["send"].toIntVector();
    const auto recv = ctx->saved_data["recv"].toIntVector();
    return {group->all_to_all(grad[0].contiguous(), recv, send), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

/// Rows of x in the order of a permutation: y = x[perm] (index_select). Backward: the gradient gathered through
/// the inverse permutation, grad_x = grad_y[inv] (instead of index_select's index_add, whose CUDA kernel adds with
/// atomics in no fixed order). perm, inv: int64 [rows], inverse permutations of each other.
struct PermuteRows : torch::autograd::Function<PermuteRows> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& perm,
                               const torch::Tensor& inv) {
    ctx->save_for_backward({inv});
    return x.index_select(0, perm);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad) {
    const auto inv = ctx->get_saved_variables()[0];
    return {grad[0].index_select(0, inv), torch::Tensor(), torch::Tensor()};
  }
};

/// The dispatch of tokens to their k expert slots: x [N, hidden] -> xs [N * k, hidden], xs[i] = x[order[i] / k]
/// (order: the sorted position -> flat (token, slot) index, a permutation of N * k). Backward: the gradient of each
/// (token, slot) gathered through inv (the inverse of order) and summed over the k slots in slot order, so the sum
/// is deterministic (index_select's backward would index_add k rows into each token with atomics).
struct DispatchRows : torch::autograd::Function<DispatchRows> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& order, const torch::Tensor& inv, int64_t k) {
    ctx->save_for_backward({inv});
    ctx->saved_data["k"] = k;
    return x.index_select(0, order.div(k, "floor"));
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad) {
    const auto inv = ctx->get_saved_variables()[0];
    const int64_t k = ctx->saved_data["k"].toInt();
    const auto& g = grad[0];  // [N * k, hidden], sorted order
    return {g.index_select(0, inv).view({-1, k, g.size(1)}).sum(1), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

/// Rows of x zero where `valid` is false: where(valid, x, 0), not a product (a padding row's unset or non-finite
/// values become exactly 0, and so does its gradient). x: [rows, cols]; valid: bool [rows].
torch::Tensor mask_rows(const torch::Tensor& x, const torch::Tensor& valid) {
  return torch::where(valid.unsqueeze(1), x, torch::zeros({}, x.options()));
}

/// Gathers rows through an index with padding, y[j] = fwd_valid[j] ? x[fwd[j]] : 0, whose adjoint is the same kind
/// of gather, grad_x[i] = bwd_valid[i] ? grad_y[bwd[i]] : 0 (fwd and bwd are inverse maps on the valid entries:
/// every row of x taken at most once). Deterministic: no index_add, no atomics. An empty valid tensor (numel 0)
/// means every entry of its index is valid (libtorch 1.13's autograd functions take no undefined tensor).
/// x: [rows, hidden]; fwd: int64 [out_rows]; fwd_valid: bool [out_rows] or [0]; bwd: int64 [rows]; bwd_valid: bool
/// [rows] or [0].
struct GatherPadded : torch::autograd::Function<GatherPadded> {
  static torch::Tensor gather(const torch::Tensor& x, const torch::Tensor& idx, const torch::Tensor& valid) {
    if (x.size(0) == 0) return torch::zeros({idx.size(0), x.size(1)}, x.options());
    const auto y = x.index_select(0, idx);
    return valid.numel() > 0 ? mask_rows(y, valid) : y;
  }
  /// The "every entry valid" marker on `like`'s device.
  static torch::Tensor all_valid(const torch::Tensor& like) {
    return torch::empty({0}, like.options().dtype(torch::kBool));
  }
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& fwd,
                               const torch::Tensor& fwd_valid, const torch::Tensor& bwd,
                               const torch::Tensor& bwd_valid) {
    ctx->save_for_backward({bwd, bwd_valid});
    return gather(x, fwd, fwd_valid);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad) {
    const auto saved = ctx->get_saved_variables();
    return {gather(grad[0].contiguous(), saved[0], saved[1]), torch::Tensor(), torch::Tensor(), torch::Tensor(),
            torch::Tensor()};
  }
};

/// The inverse of a permutation p of 0..n-1 (int64 [n]): the positions of 0..n-1 in p, by a sort (no scatter).
torch::Tensor inverse_permutation(const torch::Tensor& p) {
  return std::get<1>(p.sort(/*stable=*/true, /*dim=*/0, /*descending=*/false));
}

/// Rows per expert from the sorted expert ids (int64 [rows], ascending) -> int64 [experts], on their device, with
/// no host synchronisation (torch::bincount reads the maximum id on the host).
torch::Tensor expert_counts(const torch::Tensor& sorted_ids, int64_t experts) {
  const auto ends = torch::searchsorted(sorted_ids, torch::arange(experts, sorted_ids.options()), /*out_int32=*/false,
                                        /*right=*/true);  // rows of experts 0..e
  return ends - torch::cat({torch::zeros({1}, ends.options()), ends.narrow(0, 0, experts - 1)});
}

/// The alltoall dispatcher: xs [rows, hidden] sorted by (global) expert, counts [experts] rows per expert. Returns
/// the experts' outputs in the order of xs.
torch::Tensor dispatch_combine(RoutedExpertsImpl& m, const torch::Tensor& xs, const torch::Tensor& counts) {
  ExpertParallel& group = *m.ep;
  const int64_t P = group.size(), L = m.local_experts;
  // 1. The counts: row s * L + l of `got` is the number of rows rank s sends to local expert l of this rank.
  const auto counts_cpu = counts.to(torch::kCPU).to(torch::kInt64).contiguous();
  const std::vector<int64_t> per_rank_l(static_cast<size_t>(P), L);
  const auto got = group.all_to_all(counts_cpu, per_rank_l, per_rank_l).contiguous();
  std::vector<int64_t> send(static_cast<size_t>(P), 0), recv(static_cast<size_t>(P), 0);
  const auto* c = counts_cpu.data_ptr<int64_t>();
  const auto* g = got.data_ptr<int64_t>();
  for (int64_t r = 0; r < P; ++r)
    for (int64_t l = 0; l < L; ++l) {
      send[r] += c[r * L + l];
      recv[r] += g[r * L + l];
    }
  // 2. The token rows (sorted by expert, so by destination rank): received in (source rank, local expert) order.
  const auto xr = AllToAll::apply(xs, &group, send, recv);
  // 3. The local experts on the rows sorted by local expert (stable: source order inside an expert).
  const auto local_id = torch::arange(L, torch::kInt64).repeat({P});  // [P * L]
  const auto row_expert = torch::repeat_interleave(local_id, got);    // [rows received]
  const auto perm = std::get<1>(row_expert.sort(/*stable=*/true, 0, false)).to(xr.device());
  const auto inv = inverse_permutation(perm);
  const auto local_counts = got.view({P, L}).sum(0).to(xr.device());
  const auto xl = PermuteRows::apply(xr, perm, inv);
  // A rank that receives no rows still takes part in the backward's all-to-all: keep the graph connected.
  const auto yl = xl.size(0) == 0 ? xl * 0 : m.local_ffn(xl, local_counts);
  const auto yr = PermuteRows::apply(yl, inv, perm);  // back to (source rank, local expert) order
  // 4. The results back to the rows' ranks, in the order of xs.
  return AllToAll::apply(yr, &group, recv, send);
}

/// The fixed-capacity dispatcher (docs/distributed.md, "Expert parallelism"): xs [rows, hidden] sorted by (global)
/// expert, counts int64 [experts] rows per expert, both on the device. Every rank sends every EP peer exactly C =
/// max_tokens x top_k rows (real rows first, zero padding after), so the all-to-all's split sizes are known on the
/// host without reading data; the counts go by a fixed-size all-to-all of a device tensor and every index is
/// computed from them on the device. Returns the experts' outputs in the order of xs; the same values as
/// dispatch_combine (the real rows meet the experts in the same order).
torch::Tensor dispatch_fixed_capacity(RoutedExpertsImpl& m, const torch::Tensor& xs, const torch::Tensor& counts,
                                      int64_t top_k) {
  ExpertParallel& group = *m.ep;
  const int64_t P = group.size(), L = m.local_experts, rows = xs.size(0);
  const int64_t C = m.dispatch.max_tokens * top_k;
  TORCH_CHECK(rows <= C, "expert parallelism (bench.ep_dispatch fixed_capacity): this rank's microbatch has ",
              rows / top_k, " tokens, more than the bound of ", m.dispatch.max_tokens,
              " tokens per rank (layout.max_tokens_per_gpu, divided by TP with sequence parallel) that sizes the "
              "all-to-all's blocks; no token is dropped: raise max_tokens_per_gpu or use ep_dispatch host_splits");
  // 1. The counts as a device tensor, fixed size: row s * L + l of `got` is what rank s sends to local expert l here.
  const std::vector<int64_t> per_rank_l(static_cast<size_t>(P), L), per_rank_c(static_cast<size_t>(P), C);
  const auto counts64 = counts.to(torch::kInt64).contiguous();
  const auto got = group.all_to_all(counts64, per_rank_l, per_rank_l);
  // 2. The rows into P blocks of C, block r for rank r; the all-to-all of equal blocks.
  const CapacitySendPlan send = capacity_send_plan(counts64, P, C, rows);
  const auto buf =
      GatherPadded::apply(xs, send.src, send.valid, send.pos, GatherPadded::all_valid(send.pos));  // [P * C, hidden]
  const auto xr = AllToAll::apply(buf, &group, per_rank_c, per_rank_c);  // block s: from rank s
  // 3. The received rows by local expert (stable: source order inside an expert), padding last; the experts.
  const CapacityRecvPlan recv = capacity_recv_plan(got, P, C);
  const auto xl = PermuteRows::apply(xr, recv.perm, recv.inv);
  const auto yl = m.local_ffn(xl, recv.local_counts, /*padded=*/true);
  const auto yr = PermuteRows::apply(yl, recv.inv, recv.perm);  // back to (source rank, position) slots
  // 4. The results back to their senders (the same fixed blocks), then each row of xs from its slot.
  const auto back = AllToAll::apply(yr, &group, per_rank_c, per_rank_c);
  return GatherPadded::apply(back, send.pos, GatherPadded::all_valid(send.pos), send.src, send.valid);
}

}  // namespace

CapacitySendPlan capacity_send_plan(const torch::Tensor& counts, int64_t P, int64_t capacity, int64_t rows) {
  TORCH_CHECK(P >= 1 && capacity >= 1 && counts.dim() == 1 && counts.size(0) % P == 0, "capacity_send_plan: counts ",
              counts.sizes(), " over ", P, " ranks, capacity ", capacity);
  const auto opt = counts.options().dtype(torch::kInt64);
  const auto per_rank = counts.to(torch::kInt64).view({P, -1}).sum(1);  // [P] rows to each rank
  const auto ends = per_rank.cumsum(0);
  const auto starts = ends - per_rank;
  const auto slot = torch::arange(P * capacity, opt);
  const auto r = slot.div(capacity, "floor"), o = slot - r * capacity;
  CapacitySendPlan plan;
  plan.valid = o < per_rank.index_select(0, r);
  plan.src = torch::where(plan.valid, starts.index_select(0, r) + o, torch::zeros({}, opt));
  const auto i = torch::arange(rows, opt);
  // The rank of row i: the first whose end is past i (rows are sorted by expert, so by rank).
  const auto ri = torch::searchsorted(ends, i, /*out_int32=*/false, /*right=*/true).clamp_max(P - 1);
  plan.pos = ri * capacity + i - starts.index_select(0, ri);
  return plan;
}

CapacityRecvPlan capacity_recv_plan(const torch::Tensor& got, int64_t P, int64_t capacity) {
  TORCH_CHECK(P >= 1 && capacity >= 1 && got.dim() == 1 && got.size(0) % P == 0, "capacity_recv_plan: got ",
              got.sizes(), " over ", P, " ranks, capacity ", capacity);
  const auto g = got.to(torch::kInt64).view({P, -1});  // [P, L]
  const int64_t n = P * capacity;
  const auto opt = g.options();
  // The local expert of each slot: the first whose end inside its block is past the slot's position (L for the
  // padding past the block's real rows); the sort key (expert, slot) orders by (expert, source rank, position).
  const auto ends = g.cumsum(1).contiguous();                                                   // [P, L]
  const auto o = torch::arange(capacity, opt).unsqueeze(0).expand({P, capacity}).contiguous();  // [P, C]
  const auto expert = torch::searchsorted(ends, o, /*out_int32=*/false, /*right=*/true).reshape({n});
  const auto key = expert * n + torch::arange(n, opt);
  CapacityRecvPlan plan;
  plan.perm = std::get<1>(key.sort(/*stable=*/true, /*dim=*/0, /*descending=*/false));
  plan.inv = inverse_permutation(plan.perm);
  plan.local_counts = g.sum(0);
  return plan;
}

void RoutedExpertsImpl::shard(std::shared_ptr<ExpertParallel> group, EpDispatchOptions dispatch_) {
  TORCH_CHECK(group && group->size() >= 1 && num_experts % group->size() == 0, "expert parallelism: ", num_experts,
              " experts over an EP group of ", group ? group->size() : 0);
  TORCH_CHECK(dispatch_.mode != EpDispatch::FixedCapacity || dispatch_.max_tokens > 0,
              "expert parallelism: the fixed-capacity dispatcher needs a token bound per rank (got ",
              dispatch_.max_tokens, ")");
  dispatch = dispatch_;
  local_experts = num_experts / group->size();
  first_expert = group->rank() * local_experts;
  torch::NoGradGuard no_grad;
  gate_up_proj.set_(gate_up_proj.narrow(0, first_expert, local_experts).clone());
  down_proj.set_(down_proj.narrow(0, first_expert, local_experts).clone());
  ep = std::move(group);
}

RoutedExpertsImpl::RoutedExpertsImpl(int64_t num_experts_, int64_t hidden_, int64_t ffn_, ExpertsImpl impl_)
    : num_experts(num_experts_), hidden(hidden_), ffn(ffn_), impl(impl_), local_experts(num_experts_) {
  gate_up_proj = register_parameter("gate_up_proj", new_param({num_experts, 2 * ffn, hidden}));
  down_proj = register_parameter("down_proj", new_param({num_experts, hidden, ffn}));
  init_normal_(gate_up_proj, kInitStd);
  init_normal_(down_proj, kInitStd);
}

torch::Tensor RoutedExpertsImpl::forward(const torch::Tensor& x_in, const torch::Tensor& indices,
                                         const torch::Tensor& weights) {
  TORCH_CHECK(x_in.dim() == 2 && x_in.size(1) == hidden, "experts: x ", x_in.sizes(), " hidden ", hidden);
  TORCH_CHECK(indices.dim() == 2 && indices.size(0) == x_in.size(0) && weights.sizes() == indices.sizes(),
              "experts: indices ", indices.sizes(), " weights ", weights.sizes());
  const int64_t k = indices.size(1);
  // --profile: dispatch from here to the local experts, combine from their outputs to the return (component_timer.h).
  const auto x = component_enter(x_in, ProfileComponent::kMoeDispatch);
  // Sort the N * k (token, slot) assignments by expert; the stable sort keeps token order inside an expert. No step
  // reads a value on the host (single rank): the per-expert row counts come from a search in the sorted ids.
  const auto flat = indices.reshape({-1});
  const auto sorted = flat.sort(/*stable=*/true, /*dim=*/0, /*descending=*/false);
  const auto& order = std::get<1>(sorted);  // [N * k]: sorted position -> flat (token, slot) index
  const auto inv = inverse_permutation(order);
  const auto xs = DispatchRows::apply(x, order, inv, k);                // [N * k, hidden]
  const auto counts = expert_counts(std::get<0>(sorted), num_experts);  // [experts] rows per expert

  const torch::Tensor ys = !ep                                          ? local_ffn(xs, counts)
                           : dispatch.mode == EpDispatch::FixedCapacity ? dispatch_fixed_capacity(*this, xs, counts, k)
                                                                        : dispatch_combine(*this, xs, counts);
  return component_exit(combine_slots(ys, inv, order, weights, combine), ProfileComponent::kMoeCombine);
}

torch::Tensor combine_slots(const torch::Tensor& ys, const torch::Tensor& inv, const torch::Tensor& order,
                            const torch::Tensor& weights, CombineImpl impl) {
  TORCH_CHECK(ys.dim() == 2 && weights.dim() == 2 && ys.size(0) == weights.size(0) * weights.size(1) &&
                  inv.numel() == ys.size(0) && order.numel() == ys.size(0),
              "combine_slots: ys [tokens k, hidden], inv and order [tokens k], weights [tokens, k] expected, got ys ",
              ys.sizes(), ", inv ", inv.sizes(), ", order ", order.sizes(), ", weights ", weights.sizes());
#ifdef RECIPEBENCH_GDN_CUDA
  if (impl == CombineImpl::Auto && cuda_moe_combine_supports(ys, inv, weights))
    return cuda_moe_combine(ys, inv, weights);
#else
  (void)impl;  // Auto is Ops without the kernels
#endif
  // Back to (token, slot) order through the inverse permutation, weighted, summed over the k slots in slot order
  // (deterministic; an index_add over tokens would add with atomics in no fixed order on CUDA).
  const int64_t N = weights.size(0), k = weights.size(1);
  const auto y = PermuteRows::apply(ys, inv, order).view({N, k, ys.size(1)});
  return (y * weights.unsqueeze(-1)).sum(1);
}

torch::Tensor RoutedExpertsImpl::local_ffn(const torch::Tensor& xs_in, const torch::Tensor& counts, bool padded) {
  // --profile: the dispatch ends and the experts start here; the experts end and the combine starts at the return.
  const auto xs = component_enter(component_exit(xs_in, ProfileComponent::kMoeDispatch), ProfileComponent::kMoeExperts);
  const auto& x = xs;
  const bool grouped = impl == ExpertsImpl::Grouped || (impl == ExpertsImpl::Auto && compat::grouped_mm_usable(x));
  torch::Tensor ys;  // [rows, hidden], expert outputs in sorted order
  if (grouped) {
    const auto offs = counts.cumsum(0).to(torch::kInt);
    // Padding rows (past the last offset) belong to no group: _grouped_mm leaves their outputs (and the input
    // gradients of its backward) unset, so they are masked on the device, before (the gradient) and after.
    torch::Tensor real;
    if (padded)
      real = torch::arange(xs.size(0), offs.options().dtype(torch::kInt64)) < offs.narrow(0, local_experts - 1, 1);
    const auto xin = padded ? mask_rows(xs, real) : xs;
    const auto gu = compat::grouped_mm(xin, gate_up_proj.transpose(1, 2), offs);  // [N * k, 2 ffn]
    const auto act = torch::silu(gu.narrow(-1, 0, ffn)) * gu.narrow(-1, ffn, ffn);
    ys = compat::grouped_mm(act, down_proj.transpose(1, 2), offs);  // [N * k, hidden]
    if (padded) ys = mask_rows(ys, real);
  } else {
    const auto counts_cpu = counts.to(torch::kCPU);
    const auto* c = counts_cpu.data_ptr<int64_t>();
    std::vector<torch::Tensor> parts;
    int64_t start = 0;
    for (int64_t e = 0; e < local_experts; ++e) {
      if (c[e] == 0) continue;  // an expert without tokens costs nothing (and gets a zero gradient)
      const auto seg = xs.narrow(0, start, c[e]);
      const auto gu = torch::linear(seg, gate_up_proj[e]);  // [c_e, 2 ffn]
      const auto act = torch::silu(gu.narrow(-1, 0, ffn)) * gu.narrow(-1, ffn, ffn);
      parts.push_back(torch::linear(act, down_proj[e]));  // [c_e, hidden]
      start += c[e];
    }
    TORCH_CHECK(padded ? start <= xs.size(0) : start == xs.size(0), "experts: ", start, " rows counted, ", xs.size(0),
                " given");
    // The padding rows: zero outputs, kept in the graph (a rank with no real rows still joins the backward's
    // all-to-all) with a zero gradient.
    if (padded && start < xs.size(0)) {
      const auto tail = xs.narrow(0, start, xs.size(0) - start);
      parts.push_back(mask_rows(tail, torch::zeros({tail.size(0)}, tail.options().dtype(torch::kBool))));
    }
    ys = parts.empty() ? torch::zeros({0, hidden}, x.options()) : torch::cat(parts, 0);
  }
  return component_enter(component_exit(ys, ProfileComponent::kMoeExperts), ProfileComponent::kMoeCombine);
}

SparseMoeBlockImpl::SparseMoeBlockImpl(const ModelConfig& cfg, ExpertsImpl impl, bool fused_kernels)
    : top_k(cfg.top_k) {
  const int64_t h = cfg.hidden_size;
  gate = register_module("gate", Projection(h, cfg.num_experts));
  experts = register_module("experts", RoutedExperts(cfg.num_experts, h, cfg.expert_ffn, impl));
  experts->combine = fused_kernels ? CombineImpl::Auto : CombineImpl::Ops;
  shared_expert = register_module("shared_expert", SwiGLU(h, cfg.shared_expert_ffn));
  shared_expert_gate = register_module("shared_expert_gate", Projection(h, 1));
}

Routing SparseMoeBlockImpl::route(const torch::Tensor& x) { return route_topk(x, gate->weight, top_k); }

torch::Tensor SparseMoeBlockImpl::forward(const torch::Tensor& x) {
  TORCH_CHECK(x.dim() == 3, "SparseMoeBlock expects [batch, seq, hidden], got ", x.sizes());
  const auto flat = x.reshape({-1, x.size(2)});
  // --profile: the router, the shared expert and the routed experts' parts each marked (model/component_timer.h).
  Routing r = route(component_enter(flat, ProfileComponent::kMoeRouter));
  r.weights = component_exit(r.weights, ProfileComponent::kMoeRouter);
  // The shared expert is queued before the routed experts: under expert parallelism the host_splits dispatcher waits
  // on the host for the per-expert row counts, and the GPU works through the shared expert meanwhile
  // (docs/distributed.md). Independent computations: the result is the same in either order.
  // Tensor parallel: the shared expert column- / row-parallel on the whole sequence, back to this rank's shard
  // (its gate and up projections as column-parallel projections of x, model/tensor_parallel.h).
  // bench.overlap_tp_comm: the shared expert's reduce-scatter is waited for only after the routed experts.
  torch::Tensor shared_out;
  std::optional<StartedSequenceShard> started;
  if (tp) {
    const auto xin = component_enter(x, ProfileComponent::kMoeSharedExpert);
    const auto gate_up =
        column_parallel_projections(xin, {shared_expert->gate_proj->weight, shared_expert->up_proj->weight}, *tp);
    const auto partial = shared_expert->from_projections(gate_up[0], gate_up[1]);
    if (tp->overlap_comm())
      started = start_reduce_scatter_sequence(partial, *tp);
    else
      shared_out = component_exit(reduce_scatter_sequence(partial, *tp), ProfileComponent::kMoeSharedExpert);
  } else {
    shared_out = component_exit(shared_expert(component_enter(flat, ProfileComponent::kMoeSharedExpert)),
                                ProfileComponent::kMoeSharedExpert);
  }
  const auto shared_gate = torch::sigmoid(shared_expert_gate(flat));
  const auto routed = experts(flat, r.indices, r.weights);
  if (started) shared_out = component_exit(started->wait(), ProfileComponent::kMoeSharedExpert);
  const auto shared = shared_gate * shared_out.reshape(flat.sizes());
  return (routed + shared).view(x.sizes());
}

}  // namespace recipebench::torch_model
