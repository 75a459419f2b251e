#include "model/moe.h"

#include "compat.h"
#include "model/common.h"
#include "model/param_factory.h"
#include "model/tensor_parallel.h"

#include <torch/autograd.h>

#include <vector>

namespace recipebench::torch_model {

SwiGLUImpl::SwiGLUImpl(int64_t hidden, int64_t ffn) {
  gate_proj = register_module("gate_proj", Projection(hidden, ffn));
  up_proj = register_module("up_proj", Projection(hidden, ffn));
  down_proj = register_module("down_proj", Projection(ffn, hidden));
}

torch::Tensor SwiGLUImpl::forward(const torch::Tensor& x) { return down_proj(torch::silu(gate_proj(x)) * up_proj(x)); }

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

}  // namespace

void RoutedExpertsImpl::shard(std::shared_ptr<ExpertParallel> group) {
  TORCH_CHECK(group && group->size() >= 1 && num_experts % group->size() == 0, "expert parallelism: ", num_experts,
              " experts over an EP group of ", group ? group->size() : 0);
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

torch::Tensor RoutedExpertsImpl::forward(const torch::Tensor& x, const torch::Tensor& indices,
                                         const torch::Tensor& weights) {
  TORCH_CHECK(x.dim() == 2 && x.size(1) == hidden, "experts: x ", x.sizes(), " hidden ", hidden);
  TORCH_CHECK(indices.dim() == 2 && indices.size(0) == x.size(0) && weights.sizes() == indices.sizes(),
              "experts: indices ", indices.sizes(), " weights ", weights.sizes());
  const int64_t N = x.size(0), k = indices.size(1);
  // Sort the N * k (token, slot) assignments by expert; the stable sort keeps token order inside an expert. No step
  // reads a value on the host (single rank): the per-expert row counts come from a search in the sorted ids.
  const auto flat = indices.reshape({-1});
  const auto sorted = flat.sort(/*stable=*/true, /*dim=*/0, /*descending=*/false);
  const auto& order = std::get<1>(sorted);  // [N * k]: sorted position -> flat (token, slot) index
  const auto inv = inverse_permutation(order);
  const auto xs = DispatchRows::apply(x, order, inv, k);                // [N * k, hidden]
  const auto counts = expert_counts(std::get<0>(sorted), num_experts);  // [experts] rows per expert

  const torch::Tensor ys = ep ? dispatch_combine(*this, xs, counts) : local_ffn(xs, counts);
  // Combine: back to (token, slot) order through the inverse permutation, weighted, summed over the k slots in slot
  // order (deterministic; an index_add over tokens would add with atomics in no fixed order on CUDA).
  const auto y = PermuteRows::apply(ys, inv, order).view({N, k, hidden});
  return (y * weights.unsqueeze(-1)).sum(1);
}

torch::Tensor RoutedExpertsImpl::local_ffn(const torch::Tensor& xs, const torch::Tensor& counts) {
  const auto& x = xs;
  const bool grouped = impl == ExpertsImpl::Grouped || (impl == ExpertsImpl::Auto && compat::grouped_mm_usable(x));
  torch::Tensor ys;  // [rows, hidden], expert outputs in sorted order
  if (grouped) {
    const auto offs = counts.cumsum(0).to(torch::kInt);
    const auto gu = compat::grouped_mm(xs, gate_up_proj.transpose(1, 2), offs);  // [N * k, 2 ffn]
    const auto act = torch::silu(gu.narrow(-1, 0, ffn)) * gu.narrow(-1, ffn, ffn);
    ys = compat::grouped_mm(act, down_proj.transpose(1, 2), offs);  // [N * k, hidden]
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
    ys = parts.empty() ? torch::zeros({0, hidden}, x.options()) : torch::cat(parts, 0);
  }
  return ys;
}

SparseMoeBlockImpl::SparseMoeBlockImpl(const ModelConfig& cfg, ExpertsImpl impl) : top_k(cfg.top_k) {
  const int64_t h = cfg.hidden_size;
  gate = register_module("gate", Projection(h, cfg.num_experts));
  experts = register_module("experts", RoutedExperts(cfg.num_experts, h, cfg.expert_ffn, impl));
  shared_expert = register_module("shared_expert", SwiGLU(h, cfg.shared_expert_ffn));
  shared_expert_gate = register_module("shared_expert_gate", Projection(h, 1));
}

Routing SparseMoeBlockImpl::route(const torch::Tensor& x) { return route_topk(x, gate->weight, top_k); }

torch::Tensor SparseMoeBlockImpl::forward(const torch::Tensor& x) {
  TORCH_CHECK(x.dim() == 3, "SparseMoeBlock expects [batch, seq, hidden], got ", x.sizes());
  const auto flat = x.reshape({-1, x.size(2)});
  const Routing r = route(flat);
  // The shared expert is queued before the routed experts: under expert parallelism the alltoall dispatcher waits on
  // the host for the per-expert row counts, and the GPU works through the shared expert meanwhile
  // (docs/distributed.md). Independent computations: the result is the same in either order.
  // Tensor parallel: the shared expert column- / row-parallel on the whole sequence, back to this rank's shard.
  const auto shared_out =
      tp ? reduce_scatter_sequence(shared_expert(gather_sequence(x, *tp)), *tp).reshape(flat.sizes())
         : shared_expert(flat);
  const auto shared = torch::sigmoid(shared_expert_gate(flat)) * shared_out;
  const auto routed = experts(flat, r.indices, r.weights);
  return (routed + shared).view(x.sizes());
}

}  // namespace recipebench::torch_model
