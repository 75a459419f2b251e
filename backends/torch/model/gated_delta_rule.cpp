#include "model/gated_delta_rule.h"

#include "model/common.h"

#include <cmath>
#include <limits>
#include <vector>

namespace recipebench::torch_model {

namespace {

/// Checks shapes and brings the inputs to [batch, heads, seq, ...] in the compute dtype, q/k repeated to the
/// value heads and q scaled.
struct Prepared {
  torch::Tensor q, k, v, g, beta, state;  // q, k: [b, hv, t, dk]; v: [b, hv, t, dv]; g, beta: [b, hv, t]
  int64_t b, t, hv, dk, dv;
};

Prepared prepare(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& g,
                 const torch::Tensor& beta, const torch::Tensor& initial_state, double scale) {
  TORCH_CHECK(q.dim() == 4 && k.sizes() == q.sizes(), "gated delta rule: q ", q.sizes(), " k ", k.sizes());
  TORCH_CHECK(v.dim() == 4 && v.size(0) == q.size(0) && v.size(1) == q.size(1), "gated delta rule: v ", v.sizes());
  Prepared p;
  p.b = q.size(0);
  p.t = q.size(1);
  p.hv = v.size(2);
  p.dk = q.size(3);
  p.dv = v.size(3);
  const int64_t hk = q.size(2);
  TORCH_CHECK(p.hv % hk == 0, "value heads ", p.hv, " not a multiple of key heads ", hk);
  TORCH_CHECK(g.sizes() == torch::IntArrayRef({p.b, p.t, p.hv}) && beta.sizes() == g.sizes(), "gated delta rule: g ",
              g.sizes(), " beta ", beta.sizes(), " expected [", p.b, ", ", p.t, ", ", p.hv, "]");
  const auto ct = compute_dtype(v.scalar_type());
  const double s = scale > 0 ? scale : 1.0 / std::sqrt(static_cast<double>(p.dk));
  auto qq = q, kk = k;
  if (p.hv != hk) {
    qq = qq.repeat_interleave(p.hv / hk, 2);
    kk = kk.repeat_interleave(p.hv / hk, 2);
  }
  p.q = qq.transpose(1, 2).to(ct) * s;
  p.k = kk.transpose(1, 2).to(ct);
  p.v = v.transpose(1, 2).to(ct);
  p.g = g.transpose(1, 2).to(ct);
  p.beta = beta.transpose(1, 2).to(ct);
  if (initial_state.defined()) {
    TORCH_CHECK(initial_state.sizes() == torch::IntArrayRef({p.b, p.hv, p.dk, p.dv}), "initial state ",
                initial_state.sizes(), " expected [", p.b, ", ", p.hv, ", ", p.dk, ", ", p.dv, "]");
    p.state = initial_state.to(ct);
  } else {
    p.state = torch::zeros({p.b, p.hv, p.dk, p.dv}, p.v.options());
  }
  return p;
}

}  // namespace

GatedDeltaRuleOutput recurrent_gated_delta_rule(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                                const torch::Tensor& g, const torch::Tensor& beta,
                                                const torch::Tensor& initial_state, bool output_final_state,
                                                double scale) {
  Prepared p = prepare(q, k, v, g, beta, initial_state, scale);
  auto state = p.state;  // [b, h, dk, dv]
  std::vector<torch::Tensor> outs;
  outs.reserve(p.t);
  for (int64_t i = 0; i < p.t; ++i) {
    const auto q_t = p.q.select(2, i), k_t = p.k.select(2, i), v_t = p.v.select(2, i);  // [b, h, d]
    const auto a_t = p.g.select(2, i).exp().unsqueeze(-1).unsqueeze(-1);                // [b, h, 1, 1]
    const auto beta_t = p.beta.select(2, i).unsqueeze(-1);                              // [b, h, 1]
    state = state * a_t;
    const auto predicted = torch::matmul(k_t.unsqueeze(-2), state).squeeze(-2);  // S'^T k: [b, h, dv]
    const auto u = (v_t - predicted) * beta_t;                                   // [b, h, dv]
    state = state + k_t.unsqueeze(-1) * u.unsqueeze(-2);                         // + k u^T
    outs.push_back(torch::matmul(q_t.unsqueeze(-2), state).squeeze(-2));         // S^T q: [b, h, dv]
  }
  GatedDeltaRuleOutput r;
  r.output = (p.t > 0 ? torch::stack(outs, 1) : torch::zeros({p.b, 0, p.hv, p.dv}, p.v.options()))
                 .to(v.scalar_type());  // [b, t, h, dv]
  if (output_final_state) r.final_state = state;
  return r;
}

namespace {

/// x [b, h, t, d] (or a gate [b, h, t]) zero-padded along t to n chunks of c and split: [b, h, n, c, d] ([b, h, n, c]).
torch::Tensor in_chunks(const torch::Tensor& x, int64_t n, int64_t c) {
  const bool gate = x.dim() == 3;
  const int64_t pad = n * c - x.size(2);
  const std::vector<int64_t> padding = gate ? std::vector<int64_t>{0, pad} : std::vector<int64_t>{0, 0, 0, pad};
  const auto padded = pad ? torch::constant_pad_nd(x, padding) : x;
  if (gate) return padded.reshape({x.size(0), x.size(1), n, c});
  return padded.reshape({x.size(0), x.size(1), n, c, x.size(-1)});
}

/// The chunked form's sequential part: S_i before each chunk i, U_i, and the state after the last chunk.
struct ChunkScan {
  std::vector<torch::Tensor> states, us;  ///< [b*h, dk, dv] and [b*h, c, dv] per chunk
  torch::Tensor final_state;              ///< [b*h, dk, dv]
};

/// S_{i+1} = S_i * e^{G_C} + (diag(e^(G_C - G)) K_i)^T U_i with U_i = U0_i - W_i S_i, from S_0 = `state0`
/// ([b, h, dk, dv]); u0 [b, h, n, c, dv], w [b, h, n, c, dk], k_decayed [b, h, n, c, dk], chunk_decay
/// [b, h, n, 1, 1]. The loop keeps 3 kernels per chunk (a batched matmul-add for U_i, a scale and a batched
/// matmul-add for the state) on chunk-major contiguous copies.
ChunkScan scan_states(const torch::Tensor& u0, const torch::Tensor& w, const torch::Tensor& k_decayed,
                      const torch::Tensor& chunk_decay, const torch::Tensor& state0) {
  const int64_t b = u0.size(0), h = u0.size(1), n = u0.size(2), bh = b * h;
  auto chunk_major = [&](const torch::Tensor& x) {  // [b, h, n, c, d] -> [n, b*h, c, d], contiguous
    return x.permute({2, 0, 1, 3, 4}).reshape({n, bh, x.size(3), x.size(4)}).contiguous();
  };
  const auto u0_cm = chunk_major(u0), w_cm = chunk_major(w);
  const auto kt_cm = chunk_major(k_decayed).transpose(-1, -2).contiguous();  // [n, b*h, dk, c]
  const auto decay_cm = chunk_decay.permute({2, 0, 1, 3, 4}).reshape({n, bh, 1, 1}).contiguous();
  ChunkScan scan;
  auto state = state0.reshape({bh, state0.size(-2), state0.size(-1)});
  scan.states.reserve(n);
  scan.us.reserve(n);
  for (int64_t i = 0; i < n; ++i) {
    const auto u = torch::baddbmm(u0_cm[i], w_cm[i], state, /*beta=*/1, /*alpha=*/-1);  // U0 - W S
    scan.states.push_back(state);
    scan.us.push_back(u);
    state = torch::baddbmm(state * decay_cm[i], kt_cm[i], u);
  }
  scan.final_state = state;
  return scan;
}

}  // namespace

GatedDeltaRuleOutput chunk_gated_delta_rule(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                            const torch::Tensor& g, const torch::Tensor& beta, int64_t chunk_size,
                                            const torch::Tensor& initial_state, bool output_final_state, double scale) {
  TORCH_CHECK(chunk_size > 0, "chunk size must be positive, got ", chunk_size);
  Prepared p = prepare(q, k, v, g, beta, initial_state, scale);
  const int64_t c = chunk_size;
  const int64_t pad = (c - p.t % c) % c;
  const int64_t n = (p.t + pad) / c;
  const int64_t b = p.b, h = p.hv, dk = p.dk, dv = p.dv;

  // Zero-pad the sequence to whole chunks and split it: [b, h, n, c, d], gates [b, h, n, c].
  const auto qc = in_chunks(p.q, n, c), kc = in_chunks(p.k, n, c), vc = in_chunks(p.v, n, c);
  const auto betac = in_chunks(p.beta, n, c);
  const auto gcum = in_chunks(p.g, n, c).cumsum(-1);  // G_r: [b, h, n, c]

  // D_rs = exp(G_r - G_s) on and below the diagonal, 0 above (masked before exp: no overflow).
  const auto opts = torch::TensorOptions().dtype(torch::kBool).device(p.v.device());
  const auto above = torch::ones({c, c}, opts).triu(1);
  const auto decay = (gcum.unsqueeze(-1) - gcum.unsqueeze(-2))
                         .masked_fill(above, -std::numeric_limits<double>::infinity())
                         .exp();  // [b, h, n, c, c]

  const auto kbeta = kc * betac.unsqueeze(-1);                                                    // diag(beta) K
  const auto a_strict = (torch::matmul(kbeta, kc.transpose(-1, -2)) * decay).tril(-1);            // A
  const auto rhs = torch::cat({vc * betac.unsqueeze(-1), kbeta * gcum.exp().unsqueeze(-1)}, -1);  // [.., c, dv + dk]
  const auto sol = torch::linalg_solve_triangular(a_strict, rhs, /*upper=*/false, /*left=*/true,
                                                  /*unitriangular=*/true);  // (I + A)^-1 rhs
  const auto u0 = sol.narrow(-1, 0, dv);  // (I + A)^-1 diag(beta) V          [b, h, n, c, dv]
  const auto w = sol.narrow(-1, dv, dk);  // (I + A)^-1 diag(beta e^G) K      [b, h, n, c, dk]

  const auto intra = torch::matmul(qc, kc.transpose(-1, -2)) * decay;  // (Q K^T) * D
  const auto q_decayed = qc * gcum.exp().unsqueeze(-1);                // diag(e^G) Q
  const auto g_last = gcum.narrow(-1, c - 1, 1);                       // G_C: [b, h, n, 1]
  const auto k_decayed = kc * (g_last - gcum).exp().unsqueeze(-1);     // diag(e^(G_C - G)) K
  const auto chunk_decay = g_last.exp().unsqueeze(-1);                 // [b, h, n, 1, 1]

  // The only sequential part is the state (scan_states); the outputs O_i = diag(e^G) Q_i S_i + ((Q K^T) * D)_i U_i
  // are then two batched matmuls over all chunks at once.
  const ChunkScan scan = scan_states(u0, w, k_decayed, chunk_decay, p.state);
  torch::Tensor out_chunks;  // [b, h, n, c, dv]
  if (n > 0) {
    const auto s_all = torch::stack(scan.states, 0).reshape({n, b, h, dk, dv}).permute({1, 2, 0, 3, 4});
    const auto u_all = torch::stack(scan.us, 0).reshape({n, b, h, c, dv}).permute({1, 2, 0, 3, 4});
    out_chunks = torch::matmul(q_decayed, s_all) + torch::matmul(intra, u_all);
  }
  const auto state = scan.final_state.reshape({b, h, dk, dv});
  GatedDeltaRuleOutput r;
  const auto out =
      n > 0 ? out_chunks.reshape({b, h, n * c, dv}).narrow(2, 0, p.t) : torch::zeros({b, h, 0, dv}, p.v.options());
  r.output = out.transpose(1, 2).contiguous().to(v.scalar_type());  // [b, t, h, dv]
  if (output_final_state) r.final_state = state;
  return r;
}

}  // namespace recipebench::torch_model
