#include "model/tensor_parallel.h"

#include "model/common.h"
#include "model/qwen35_moe.h"

#include <torch/autograd.h>

#include <numeric>
#include <utility>

namespace recipebench::torch_model {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

TensorParallel* group_of(AutogradContext* ctx) {
  return reinterpret_cast<TensorParallel*>(ctx->saved_data["tp"].toInt());
}

/// x [batch, s, ...] -> [batch, T s, ...]: the ranks' sequence shards in rank order.
torch::Tensor all_gather_seq(const torch::Tensor& x, TensorParallel& tp) {
  const int64_t T = tp.size();
  const auto xt = x.transpose(0, 1).contiguous();  // [s, batch, ...]: rank blocks are contiguous along dim 0
  auto full = torch::empty({T * xt.numel()}, xt.options());
  tp.all_gather(xt.reshape({-1}), full);
  auto shape = xt.sizes().vec();
  shape[0] *= T;
  return full.view(shape).transpose(0, 1).contiguous();
}

/// The buffers of a reduce-scatter along the sequence of x [batch, s, ...] (partial sums) over T ranks.
struct SequenceScatter {
  torch::Tensor sent;                ///< x in [s, batch, ...] order, flat (rank blocks contiguous)
  torch::Tensor shard;               ///< empty, sent.numel() / T elements
  std::vector<int64_t> shard_shape;  ///< [s / T, batch, ...]
};

/// `owned`: x is the caller's own tensor, which the collective may overwrite (else `sent` is a copy). Throws
/// c10::Error when s is not divisible by T.
SequenceScatter sequence_scatter(const torch::Tensor& x, int64_t T, bool owned) {
  TORCH_CHECK(x.dim() >= 2 && x.size(1) % T == 0, "sequence parallel: sequence length ", x.dim() >= 2 ? x.size(1) : 0,
              " is not divisible by TP = ", T);
  SequenceScatter b;
  b.sent = x.transpose(0, 1).contiguous().reshape({-1});
  if (!owned) b.sent = b.sent.clone();  // own copy: the reduce-scatter may overwrite it
  b.shard = torch::empty({b.sent.numel() / T}, b.sent.options());
  b.shard_shape = x.transpose(0, 1).sizes().vec();
  b.shard_shape[0] /= T;
  return b;
}

/// A filled shard [s / T, batch, ...] (flat) back in [batch, s / T, ...] order.
torch::Tensor batch_major(const torch::Tensor& shard, const std::vector<int64_t>& shard_shape) {
  return shard.view(shard_shape).transpose(0, 1).contiguous();
}

/// x [batch, s, ...] (partial sums) -> [batch, s / T, ...]: this rank's sequence shard of the sum over ranks.
torch::Tensor reduce_scatter_seq(const torch::Tensor& x, TensorParallel& tp) {
  SequenceScatter b = sequence_scatter(x, tp.size(), false);
  tp.reduce_scatter_sum(b.sent, b.shard);
  return batch_major(b.shard, b.shard_shape);
}

struct GatherSequence : torch::autograd::Function<GatherSequence> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, TensorParallel* tp) {
    ctx->saved_data["tp"] = reinterpret_cast<int64_t>(tp);
    return all_gather_seq(x, *tp);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    return {reduce_scatter_seq(grad[0], *group_of(ctx)), torch::Tensor()};
  }
};

struct ReduceScatterSequence : torch::autograd::Function<ReduceScatterSequence> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, TensorParallel* tp) {
    ctx->saved_data["tp"] = reinterpret_cast<int64_t>(tp);
    return reduce_scatter_seq(x, *tp);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    return {all_gather_seq(grad[0], *group_of(ctx)), torch::Tensor()};
  }
};

/// x [batch, s, ...] (partial sums) -> the flat [s / T, batch, ...] shard buffer, filled once the reduce-scatter
/// stored in *started (also holding the buffer sent) was waited for.
struct StartReduceScatterSequence : torch::autograd::Function<StartReduceScatterSequence> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, TensorParallel* tp,
                               StartedSequenceShard* started) {
    ctx->saved_data["tp"] = reinterpret_cast<int64_t>(tp);
    SequenceScatter b = sequence_scatter(x, tp->size(), false);
    ctx->saved_data["shard_shape"] = b.shard_shape;
    started->sent = b.sent;
    started->pending = tp->start_reduce_scatter_sum(b.sent, b.shard);
    return b.shard;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const auto shape = ctx->saved_data["shard_shape"].toIntVector();
    const auto g = grad[0].view(shape).transpose(0, 1);  // [batch, s / T, ...]
    return {all_gather_seq(g, *group_of(ctx)), torch::Tensor(), torch::Tensor()};
  }
};

/// Inputs: x [batch, s, in] (this rank's sequence shard), the group, the weights W_i [out_i, in]; outputs
/// x_full W_i^T [batch, T s, out_i]. Saves x_full (what the projections' own backward would save) and the weights.
struct ColumnParallelProjections : torch::autograd::Function<ColumnParallelProjections> {
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& x, TensorParallel* tp,
                               at::TensorList weights) {
    ctx->saved_data["tp"] = reinterpret_cast<int64_t>(tp);
    ctx->set_materialize_grads(false);  // an output without a gradient adds no product (its grad stays undefined)
    const auto x_full = all_gather_seq(x, *tp);
    variable_list out, saved{x_full};
    for (const auto& w : weights) {
      out.push_back(torch::linear(x_full, w));
      saved.push_back(w);
    }
    ctx->save_for_backward(saved);
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    TensorParallel& tp = *group_of(ctx);
    const auto saved = ctx->get_saved_variables();
    const auto& x_full = saved[0];
    const int64_t in = x_full.size(-1);
    const auto x2 = x_full.reshape({-1, in});
    // dx_full = sum_i dy_i W_i, accumulated into the first product in the order of the weights.
    std::vector<torch::Tensor> dy(grad.size());
    torch::Tensor dx;
    for (size_t i = 0; i < grad.size(); ++i) {
      if (!grad[i].defined()) continue;
      const auto& w = saved[i + 1];
      dy[i] = grad[i].reshape({-1, w.size(0)});
      dx = dx.defined() ? dx.addmm_(dy[i], w) : dy[i].mm(w);
    }
    if (!dx.defined()) dx = torch::zeros_like(x2);
    // [s, batch, in] with rank blocks contiguous along the sequence (the layout of all_gather_seq's buffer).
    SequenceScatter b = sequence_scatter(dx.view(x_full.sizes()), tp.size(), /*owned=*/true);
    std::unique_ptr<PendingCollective> pending;
    if (tp.overlap_comm()) pending = tp.start_reduce_scatter_sum(b.sent, b.shard);
    variable_list out{torch::Tensor(), torch::Tensor()};  // x's gradient, then the group's (none)
    for (const auto& d : dy) out.push_back(d.defined() ? d.t().mm(x2) : torch::Tensor());
    if (pending)
      pending->wait();
    else
      tp.reduce_scatter_sum(b.sent, b.shard);
    out[0] = batch_major(b.shard, b.shard_shape);
    return out;
  }
};

/// Inputs: logits [N, V/T] (compute dtype), targets [N]; output nll [N].
struct VocabParallelCrossEntropy : torch::autograd::Function<VocabParallelCrossEntropy> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& logits, const torch::Tensor& targets,
                               int64_t vocab_start, TensorParallel* tp) {
    const int64_t local_vocab = logits.size(-1);
    auto max = std::get<0>(logits.max(-1)).contiguous();  // [N]
    tp->all_reduce_max(max);
    const auto shifted = logits - max.unsqueeze(-1);
    const auto e = shifted.exp();
    const auto mine = targets.ge(vocab_start).logical_and(targets.lt(vocab_start + local_vocab));
    const auto local_target = (targets - vocab_start).masked_fill(mine.logical_not(), 0);
    const auto target_logit = shifted.gather(-1, local_target.unsqueeze(-1)).squeeze(-1) * mine.to(logits.dtype());
    auto sums = torch::stack({e.sum(-1), target_logit}).contiguous();  // [2, N]: one all-reduce for both
    tp->all_reduce_sum(sums);
    const auto sum_exp = sums[0];
    ctx->save_for_backward({e / sum_exp.unsqueeze(-1), local_target, mine});
    return sum_exp.log() - sums[1];
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const auto saved = ctx->get_saved_variables();
    const auto& softmax = saved[0];
    const auto& local_target = saved[1];
    const auto& mine = saved[2];
    const auto g = grad[0];
    auto d = softmax * g.unsqueeze(-1);
    d.scatter_add_(-1, local_target.unsqueeze(-1), (-g * mine.to(g.dtype())).unsqueeze(-1));
    return {d, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor tp_local_slice(const torch::Tensor& full, const TpShardSpec& spec, int64_t rank, int64_t size) {
  const int64_t total = std::accumulate(spec.parts.begin(), spec.parts.end(), int64_t{0});
  TORCH_CHECK(spec.dim < full.dim() && total == full.size(spec.dim), "TP shard: blocks of ", total, " along dim ",
              spec.dim, " of ", full.sizes());
  std::vector<torch::Tensor> chunks;
  int64_t offset = 0;
  for (const int64_t part : spec.parts) {
    TORCH_CHECK(part % size == 0, "TP shard: a block of ", part, " along dim ", spec.dim, " of ", full.sizes(),
                " is not divisible by TP = ", size);
    const int64_t n = part / size;
    chunks.push_back(full.narrow(spec.dim, offset + rank * n, n));
    offset += part;
  }
  return torch::cat(chunks, spec.dim).contiguous();
}

torch::Tensor tp_gather_param(const torch::Tensor& local, const TpShardSpec& spec, TensorParallel& tp) {
  const int64_t T = tp.size();
  const auto c = local.contiguous();
  auto all = torch::empty({T * c.numel()}, c.options());
  tp.all_gather(c.reshape({-1}), all);
  std::vector<torch::Tensor> ranks;
  for (int64_t r = 0; r < T; ++r) ranks.push_back(all.narrow(0, r * c.numel(), c.numel()).view(c.sizes()));
  std::vector<torch::Tensor> blocks;
  int64_t local_offset = 0;
  for (const int64_t part : spec.parts) {
    const int64_t n = part / T;
    for (int64_t r = 0; r < T; ++r) blocks.push_back(ranks[static_cast<size_t>(r)].narrow(spec.dim, local_offset, n));
    local_offset += n;
  }
  return torch::cat(blocks, spec.dim);
}

torch::Tensor gather_sequence(const torch::Tensor& x, TensorParallel& tp) { return GatherSequence::apply(x, &tp); }

std::vector<torch::Tensor> column_parallel_projections(const torch::Tensor& x, const std::vector<torch::Tensor>& weights,
                                                       TensorParallel& tp) {
  TORCH_CHECK(!weights.empty(), "column-parallel projections: no weight");
  TORCH_CHECK(x.dim() == 3, "column-parallel projections: x ", x.sizes(), " is not [batch, seq / TP, in]");
  for (const auto& w : weights)
    TORCH_CHECK(w.dim() == 2 && w.size(1) == x.size(2), "column-parallel projections: weight ", w.sizes(),
                " for x ", x.sizes());
  return ColumnParallelProjections::apply(x, &tp, at::TensorList(weights));
}

std::vector<torch::Tensor> project_whole_sequence(const torch::Tensor& x, const std::vector<torch::Tensor>& weights,
                                                  TensorParallel* tp) {
  if (tp) return column_parallel_projections(x, weights, *tp);
  std::vector<torch::Tensor> out;
  for (const auto& w : weights) out.push_back(torch::linear(x, w));
  return out;
}

torch::Tensor reduce_scatter_sequence(const torch::Tensor& x, TensorParallel& tp) {
  return ReduceScatterSequence::apply(x, &tp);
}

StartedSequenceShard start_reduce_scatter_sequence(const torch::Tensor& x, TensorParallel& tp) {
  StartedSequenceShard started;
  started.flat = StartReduceScatterSequence::apply(x, &tp, &started);
  started.shape = x.sizes().vec();
  started.shape[1] /= tp.size();
  return started;
}

StartedSequenceShard::~StartedSequenceShard() {
  if (!pending) return;
  try {
    const torch::NoGradGuard no_grad;
    pending->wait();
  } catch (...) {  // NOLINT(bugprone-empty-catch): the error in flight is the one to report
  }
}

torch::Tensor StartedSequenceShard::wait() {
  TORCH_CHECK(pending, "a started sequence reduce-scatter waited for twice");
  {
    // Gloo fills the shard by a copy in the wait: not an operation of the graph (flat keeps its history).
    const torch::NoGradGuard no_grad;
    pending->wait();
  }
  pending.reset();
  sent = torch::Tensor();
  auto shard_shape = shape;  // [s / T, batch, ...]
  std::swap(shard_shape[0], shard_shape[1]);
  return batch_major(flat, shard_shape);
}

torch::Tensor vocab_parallel_embedding(const torch::Tensor& ids, const torch::Tensor& weight, int64_t vocab_start,
                                       TensorParallel& tp) {
  TORCH_CHECK(ids.dim() == 2 && weight.dim() == 2, "vocab-parallel embedding: ids ", ids.sizes(), " weight ",
              weight.sizes());
  const auto mine = ids.ge(vocab_start).logical_and(ids.lt(vocab_start + weight.size(0)));
  const auto local_ids = (ids - vocab_start).masked_fill(mine.logical_not(), 0);
  const auto partial = torch::embedding(weight, local_ids) * mine.unsqueeze(-1).to(weight.dtype());
  return reduce_scatter_sequence(partial, tp);
}

torch::Tensor vocab_parallel_cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets,
                                           int64_t vocab_start, TensorParallel& tp) {
  TORCH_CHECK(logits.dim() == 2 && targets.dim() == 1 && targets.size(0) == logits.size(0),
              "vocab-parallel cross-entropy: logits ", logits.sizes(), " targets ", targets.sizes());
  return VocabParallelCrossEntropy::apply(logits.to(compute_dtype(logits.scalar_type())), targets, vocab_start, &tp);
}

namespace {

void shard(std::vector<TpParam>& out, torch::Tensor& p, TpShardSpec spec, const TensorParallel& tp) {
  torch::NoGradGuard no_grad;
  p.set_(tp_local_slice(p, spec, tp.rank(), tp.size()));
  out.push_back(TpParam{p, std::move(spec)});
}

void check_divisible(int64_t n, int64_t T, const char* what) {
  TORCH_CHECK(n % T == 0, "tensor parallelism: ", what, " = ", n, " is not divisible by TP = ", T);
}

}  // namespace

std::vector<TpParam> shard_tensor_parallel(Qwen35MoeForCausalLMImpl& model, std::shared_ptr<TensorParallel> tp) {
  TORCH_CHECK(tp && tp->size() >= 1, "tensor parallelism: no group");
  const int64_t T = tp->size();
  const ModelConfig& c = model.cfg;
  check_divisible(c.vocab_size, T, "vocab_size");
  check_divisible(c.num_attention_heads, T, "attention heads");
  check_divisible(c.num_kv_heads, T, "KV heads");
  check_divisible(c.linear_num_key_heads, T, "Gated DeltaNet key heads");
  check_divisible(c.linear_num_value_heads, T, "Gated DeltaNet value heads");
  check_divisible(c.shared_expert_ffn, T, "shared expert FFN");
  std::vector<TpParam> out;
  auto rows = [](int64_t n) { return TpShardSpec{0, {n}}; };
  auto cols = [](int64_t n) { return TpShardSpec{1, {n}}; };

  auto& text = *model.model;
  shard(out, text.embed_tokens->weight, rows(c.vocab_size), *tp);
  text.tp = tp;
  for (auto& layer : text.decoder_layers) {
    if (layer->is_full_attention()) {
      auto& a = *layer->self_attn;
      shard(out, a.q_proj->weight, rows(2 * a.num_heads * a.head_dim), *tp);  // per head: query rows, gate rows
      shard(out, a.k_proj->weight, rows(a.num_kv_heads * a.head_dim), *tp);
      shard(out, a.v_proj->weight, rows(a.num_kv_heads * a.head_dim), *tp);
      shard(out, a.o_proj->weight, cols(a.num_heads * a.head_dim), *tp);
      a.num_heads /= T;
      a.num_kv_heads /= T;
      a.tp = tp;
    } else {
      auto& g = *layer->linear_attn;
      const int64_t kd = g.num_k_heads * g.head_k_dim, vd = g.num_v_heads * g.head_v_dim, hv = g.num_v_heads;
      shard(out, g.in_proj_qkv->weight, TpShardSpec{0, {kd, kd, vd}}, *tp);
      shard(out, g.conv1d->weight, TpShardSpec{0, {kd, kd, vd}}, *tp);
      shard(out, g.in_proj_z->weight, rows(vd), *tp);
      shard(out, g.in_proj_b->weight, rows(hv), *tp);
      shard(out, g.in_proj_a->weight, rows(hv), *tp);
      shard(out, g.dt_bias, rows(hv), *tp);
      shard(out, g.A_log, rows(hv), *tp);
      shard(out, g.out_proj->weight, cols(vd), *tp);
      g.num_k_heads /= T;
      g.num_v_heads /= T;
      g.tp = tp;
    }
    auto& moe = *layer->mlp;
    auto& se = *moe.shared_expert;
    shard(out, se.gate_proj->weight, rows(c.shared_expert_ffn), *tp);
    shard(out, se.up_proj->weight, rows(c.shared_expert_ffn), *tp);
    shard(out, se.down_proj->weight, cols(c.shared_expert_ffn), *tp);
    moe.tp = tp;
  }
  shard(out, model.lm_head->weight, rows(c.vocab_size), *tp);
  model.tp = tp;
  return out;
}

}  // namespace recipebench::torch_model
