#include "model/chunked_lm_loss.h"

#include "model/common.h"
#include "model/tensor_parallel.h"

#include <torch/autograd.h>

#ifdef RECIPEBENCH_GDN_CUDA
#include "cuda/cross_entropy_cuda.h"
#include "cuda/gemm_accumulate_cuda.h"
#endif

#include <algorithm>

namespace recipebench::torch_model {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// What one chunk's pass needs besides its rows.
struct LmLossArgs {
  TensorParallel* tp;
  int64_t vocab_start, chunk;
  bool grad_hidden, grad_weight;
  LmLossImpl impl;
};

/// The chunk's weight gradient added into the FP32 accumulator (or accumulated in place when gw has d's dtype).
void add_weight_grad(torch::Tensor& gw, const torch::Tensor& d, const torch::Tensor& h) {
  if (gw.scalar_type() == d.scalar_type())
    gw.addmm_(d.t(), h);
  else
    gw.add_(torch::mm(d.t(), h));  // the chunk's product in the compute dtype, summed over chunks in FP32
}

/// One chunk of rows: writes its per-token nll into `nll` (the chunk's slice, compute dtype) and, when asked, its
/// logit gradient times weight into `gh` (the chunk's rows) and times h added into `gw` (FP32 accumulator).
/// h: [c, H]; t: int64 [c] full-vocabulary targets; m: bool [c] supervised.
void lm_loss_chunk(const torch::Tensor& h, const torch::Tensor& weight, const torch::Tensor& t, const torch::Tensor& m,
                   const LmLossArgs& a, torch::Tensor nll, torch::Tensor gh, torch::Tensor& gw) {
  const auto ct = nll.scalar_type();
  const int64_t V = weight.size(0);
  auto p = torch::mm(h, weight.t()).to(ct);  // [c, V] logits in the compute dtype (a new tensor unless ct == dtype)
  // The target's logit, on the rank that holds the target's vocabulary row (every rank without TP).
  const auto held = t.ge(a.vocab_start).logical_and(t.lt(a.vocab_start + V)).logical_and(m);
  const auto local_t = (t - a.vocab_start).masked_fill(held.logical_not(), 0);
  const auto heldf = held.to(ct);
  const auto target_logit = p.gather(1, local_t.unsqueeze(1)).squeeze(1) * heldf;
  auto row_max = std::get<0>(p.max(1)).contiguous();  // [c]
  if (a.tp) a.tp->all_reduce_max(row_max);
  p.sub_(row_max.unsqueeze(1)).exp_();                              // exp(logit - max), in place
  auto sums = torch::stack({p.sum(1), target_logit}).contiguous();  // [2, c]: one all-reduce for both
  if (a.tp) a.tp->all_reduce_sum(sums);
  const auto sum_exp = sums[0];
  nll.copy_(sum_exp.log() + row_max - sums[1]);
  if (!a.grad_hidden && !a.grad_weight) return;
  // d loss / d logits = softmax - one-hot(target) on supervised rows, 0 on the others.
  p.mul_((m.to(ct) / sum_exp).unsqueeze(1));
  const auto rows = torch::arange(p.size(0), t.options());
  p.index_put_({rows, local_t}, p.index({rows, local_t}) - heldf);  // one entry per row: no accumulation
  const auto d = p.to(h.scalar_type());
  if (a.grad_hidden) torch::mm_out(gh, d, weight);
  if (a.grad_weight) add_weight_grad(gw, d, h);
}

#ifdef RECIPEBENCH_GDN_CUDA
/// lm_loss_chunk with the fused kernels: the BF16 logits are read for the row statistics, the statistics are
/// combined over TP (each rank's sum rescaled to the global maximum), and the logits are overwritten by their
/// gradient, whose weight product cuBLAS adds into the FP32 accumulator (cuda_accumulate_tn_). Same arguments and
/// results as lm_loss_chunk (the weight gradient without the chunk product's BF16 rounding).
void lm_loss_chunk_fused(const torch::Tensor& h, const torch::Tensor& weight, const torch::Tensor& t,
                         const torch::Tensor& m, const LmLossArgs& a, torch::Tensor nll, torch::Tensor gh,
                         torch::Tensor& gw) {
  const int64_t V = weight.size(0);
  auto p = torch::mm(h, weight.t());  // [c, V] BF16 logits
  const auto held = t.ge(a.vocab_start).logical_and(t.lt(a.vocab_start + V)).logical_and(m);
  const auto local_t = (t - a.vocab_start).masked_fill(held.logical_not(), 0);
  RowStats st = cuda_row_stats(p, local_t, held);
  auto row_max = st.row_max;
  if (a.tp) {
    row_max = st.row_max.clone();
    a.tp->all_reduce_max(row_max);
    st.sum_exp.mul_((st.row_max - row_max).exp_());  // this rank's sum relative to the global maximum
  }
  auto sums = torch::stack({st.sum_exp, st.target_logit});  // [2, c]: one all-reduce for both
  if (a.tp) a.tp->all_reduce_sum(sums);
  const auto sum_exp = sums[0].contiguous();
  nll.copy_(sum_exp.log() + row_max - sums[1]);
  if (!a.grad_hidden && !a.grad_weight) return;
  cuda_logit_grad_(p, local_t, held, row_max, sum_exp, m.to(torch::kFloat));
  if (a.grad_hidden) torch::mm_out(gh, p, weight);
  if (!a.grad_weight) return;
  // The FP32 accumulator takes the chunk's product straight from cuBLAS (no BF16 [V, H] product, no separate add).
  if (cuda_accumulate_tn_supports(gw, p, h))
    cuda_accumulate_tn_(gw, p, h);
  else
    add_weight_grad(gw, p, h);
}

bool fused_chunk_applies(const torch::Tensor& h, const torch::Tensor& nll, LmLossImpl impl) {
  return impl == LmLossImpl::Auto && h.is_cuda() && h.scalar_type() == torch::kBFloat16 &&
         nll.scalar_type() == torch::kFloat;
}
#endif

/// Inputs hidden [N, H], weight [V, H] (differentiable), targets, mask; output: the scalar loss sum.
struct LmLoss : torch::autograd::Function<LmLoss> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& hidden, const torch::Tensor& weight,
                               const torch::Tensor& targets, const torch::Tensor& mask, TensorParallel* tp,
                               int64_t vocab_start, int64_t chunk, bool grad_hidden, bool grad_weight, int64_t impl) {
    const LmLossArgs a{tp, vocab_start, chunk, grad_hidden, grad_weight, LmLossImpl(impl)};
    const auto ct = compute_dtype(hidden.scalar_type());
    const int64_t N = hidden.size(0);
    auto nll = torch::empty({N}, hidden.options().dtype(ct));
    torch::Tensor gh, gw;
    if (grad_hidden) gh = torch::empty_like(hidden);
    if (grad_weight) gw = torch::zeros(weight.sizes(), weight.options().dtype(ct));
    for (int64_t s = 0; s < N; s += chunk) {
      const int64_t c = std::min(chunk, N - s);
      auto chunk_fn = lm_loss_chunk;
#ifdef RECIPEBENCH_GDN_CUDA
      if (fused_chunk_applies(hidden, nll, a.impl)) chunk_fn = lm_loss_chunk_fused;
#endif
      chunk_fn(hidden.narrow(0, s, c), weight, targets.narrow(0, s, c), mask.narrow(0, s, c), a, nll.narrow(0, s, c),
               grad_hidden ? gh.narrow(0, s, c) : torch::Tensor(), gw);
    }
    ctx->saved_data["gh"] = gh;
    ctx->saved_data["gw"] = gw;
    ctx->saved_data["weight_dtype"] = static_cast<int64_t>(weight.scalar_type());
    return torch::where(mask, nll, torch::zeros_like(nll)).sum();
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const auto& g = grad[0];  // scalar, compute dtype
    auto saved = [&](const char* key) {
      const auto& v = ctx->saved_data[key];
      return v.isTensor() ? v.toTensor() : torch::Tensor();
    };
    auto gh = saved("gh"), gw = saved("gw");
    const auto wdt = static_cast<c10::ScalarType>(ctx->saved_data["weight_dtype"].toInt());
    torch::Tensor dh, dw;
    // Scaled in the compute dtype (a BF16 scale would round 1 / count), in place where that is the saved tensor:
    // the saved gradients are used once.
    if (gh.defined()) dh = gh.to(g.scalar_type()).mul_(g).to(gh.scalar_type());
    // The weight gradient scaled and rounded to the weight's dtype in one pass (FP32 product, one rounding: what
    // gw.mul_(g).to(wdt) computes, without writing the FP32 product back).
    if (gw.defined() && wdt == gw.scalar_type()) {
      dw = gw.mul_(g);
    } else if (gw.defined()) {
      dw = torch::empty(gw.sizes(), gw.options().dtype(wdt));
      at::mul_out(dw, gw, g);
    }
    ctx->saved_data.clear();
    return {dh,
            dw,
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor()};
  }
};

}  // namespace

LmLossSum lm_loss_sum(const torch::Tensor& hidden, const torch::Tensor& weight, const torch::Tensor& targets,
                      const torch::Tensor& mask, TensorParallel* tp, int64_t vocab_start, int64_t chunk_tokens,
                      LmLossImpl impl) {
  TORCH_CHECK(hidden.dim() == 2 && weight.dim() == 2 && hidden.size(1) == weight.size(1) && targets.dim() == 1 &&
                  targets.size(0) == hidden.size(0) && mask.sizes() == targets.sizes(),
              "LM loss: hidden ", hidden.sizes(), " weight ", weight.sizes(), " targets ", targets.sizes(), " mask ",
              mask.sizes());
  TORCH_CHECK(hidden.scalar_type() == weight.scalar_type(), "LM loss: hidden ", hidden.scalar_type(), " weight ",
              weight.scalar_type());
  TORCH_CHECK(chunk_tokens >= 1, "LM loss: chunk_tokens must be >= 1, got ", chunk_tokens);
  const bool grad = torch::GradMode::is_enabled();
  const auto m = mask.to(torch::kBool);
  LmLossSum r;
  r.sum = LmLoss::apply(hidden.contiguous(), weight, targets.to(torch::kInt64), m, tp, vocab_start, chunk_tokens,
                        grad && hidden.requires_grad(), grad && weight.requires_grad(), static_cast<int64_t>(impl));
  r.count = m.sum();
  return r;
}

}  // namespace recipebench::torch_model
