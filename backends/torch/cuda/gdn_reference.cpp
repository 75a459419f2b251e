// Float64 per-token gated delta rule, forward and backward (see gdn_reference.h). The backward of one token, with
// S_prev the state before it, a = e^g, S' = a S_prev, p = S'^T k, u = beta (v - p), S = S' + k u^T, o = scale S^T q,
// and dS the gradient of S (from later tokens and the final state):
//   dq = scale S dO;  dS += scale q dO^T;  du = dS^T k;  dk = dS u;  dv = beta du;  dbeta = du.(v - p);
//   dp = -beta du;  dS' = dS + k dp^T;  dk += S' dp;  dg = a sum(S_prev * dS');  dS_prev = a dS'.
#include "gdn_reference.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

namespace recipebench::gdn::reference {
namespace {

constexpr int D = 128;
constexpr int kCheckpoint = 64;

struct Head {
  const Inputs& in;
  int row, hv, hk;
  int64_t t0, t1;
  std::vector<double> dq_h, dk_h;  // [len, 128] this value head's share of dq, dk

  const float* q(int64_t t) const { return &in.q[(t * in.k_heads + hk) * D]; }
  const float* k(int64_t t) const { return &in.k[(t * in.k_heads + hk) * D]; }
  const float* v(int64_t t) const { return &in.v[(t * in.v_heads + hv) * D]; }
  /// Index of token t's gate and beta ([tokens, v_heads]).
  int64_t gi(int64_t t) const { return t * in.v_heads + hv; }
  /// Offset of this head's D x D state in h0/ht/dh0 ([rows, v_heads, D, D]).
  size_t soff() const { return (static_cast<size_t>(row) * in.v_heads + hv) * D * D; }
  double a(int64_t t) const { return std::exp(static_cast<double>(in.g[gi(t)])); }
};

// One token's forward update of S (D x D, row-major [k][v]); writes p (S'^T k) and u.
void step(std::vector<double>& S, const float* k, const float* v, double a, double beta, double* p, double* u) {
  for (auto& x : S) x *= a;
  for (int j = 0; j < D; ++j) p[j] = 0;
  for (int i = 0; i < D; ++i)
    for (int j = 0; j < D; ++j) p[j] += S[i * D + j] * k[i];
  for (int j = 0; j < D; ++j) u[j] = beta * (v[j] - p[j]);
  for (int i = 0; i < D; ++i)
    for (int j = 0; j < D; ++j) S[i * D + j] += k[i] * u[j];
}

/// Forward over the head's tokens: writes o and the final state ht; returns the state before every
/// kCheckpoint-th token (the backward recomputes the states between checkpoints).
std::vector<std::vector<double>> forward_head(const Head& h, Result& r) {
  const Inputs& in = h.in;
  const size_t soff = h.soff();
  std::vector<double> S(D * D, 0.0);
  if (!in.h0.empty()) std::copy(in.h0.begin() + soff, in.h0.begin() + soff + D * D, S.begin());
  std::vector<std::vector<double>> ckpt;
  double p[D], u[D];
  for (int64_t t = h.t0; t < h.t1; ++t) {
    if ((t - h.t0) % kCheckpoint == 0) ckpt.push_back(S);
    step(S, h.k(t), h.v(t), h.a(t), in.beta[h.gi(t)], p, u);
    const float* q = h.q(t);
    for (int j = 0; j < D; ++j) {
      double o = 0;
      for (int i = 0; i < D; ++i) o += S[i * D + j] * q[i];
      r.o[(t * in.v_heads + h.hv) * D + j] = in.scale * o;
    }
  }
  std::copy(S.begin(), S.end(), r.ht.begin() + soff);
  return ckpt;
}

/// The backward of token i (t = t0 + i) given Sp (the state before it), St (after it) and dS (the gradient of St,
/// turned into that of Sp in place): writes dq, dk into the head's shares and dv, dbeta, dg into `r`.
void backward_token(Head& h, int64_t i, const std::vector<double>& Sp, const std::vector<double>& St,
                    std::vector<double>& dS, const std::vector<float>& d_o, Result& r) {
  const Inputs& in = h.in;
  const int64_t t = h.t0 + i;
  const double a = h.a(t), beta = in.beta[h.gi(t)];
  const float *q = h.q(t), *k = h.k(t), *v = h.v(t), *dO = &d_o[(t * in.v_heads + h.hv) * D];
  double* dq = &h.dq_h[i * D];
  double* dk = &h.dk_h[i * D];
  for (int ii = 0; ii < D; ++ii) {
    double acc = 0;
    for (int j = 0; j < D; ++j) acc += St[ii * D + j] * dO[j];
    dq[ii] = in.scale * acc;
  }
  for (int ii = 0; ii < D; ++ii)
    for (int j = 0; j < D; ++j) dS[ii * D + j] += in.scale * q[ii] * dO[j];
  double pp[D], uu[D], du[D], dp[D];
  for (int j = 0; j < D; ++j) {
    pp[j] = 0;
    for (int ii = 0; ii < D; ++ii) pp[j] += a * Sp[ii * D + j] * k[ii];
    uu[j] = beta * (v[j] - pp[j]);
    du[j] = 0;
    for (int ii = 0; ii < D; ++ii) du[j] += dS[ii * D + j] * k[ii];
  }
  double dbeta = 0;
  for (int j = 0; j < D; ++j) {
    r.dv[(t * in.v_heads + h.hv) * D + j] = beta * du[j];
    dbeta += du[j] * (v[j] - pp[j]);
    dp[j] = -beta * du[j];
  }
  r.dbeta[h.gi(t)] = dbeta;
  for (int ii = 0; ii < D; ++ii) {
    double acc = 0, acc2 = 0;
    for (int j = 0; j < D; ++j) {
      acc += dS[ii * D + j] * uu[j];
      acc2 += a * Sp[ii * D + j] * dp[j];
    }
    dk[ii] = acc + acc2;
  }
  double da = 0;
  for (int ii = 0; ii < D; ++ii)
    for (int j = 0; j < D; ++j) {
      double& x = dS[ii * D + j];
      x += k[ii] * dp[j];
      da += Sp[ii * D + j] * x;
      x *= a;
    }
  r.dg[h.gi(t)] = a * da;
}

/// Backward over the head's tokens, last segment first: recomputes each segment's states from its checkpoint,
/// then runs backward_token over them in reverse; writes dh0 when asked for.
void backward_head(Head& h, const std::vector<std::vector<double>>& ckpt, const std::vector<float>& d_o,
                   const std::vector<float>& dht, Result& r) {
  const Inputs& in = h.in;
  const size_t soff = h.soff();
  std::vector<double> dS(D * D, 0.0);
  if (!dht.empty()) std::copy(dht.begin() + soff, dht.begin() + soff + D * D, dS.begin());
  const int64_t len = h.t1 - h.t0;
  h.dq_h.assign(len * D, 0.0);
  h.dk_h.assign(len * D, 0.0);
  std::vector<std::vector<double>> states;  // states[i] = state before token seg + i
  double p[D], u[D];
  for (int64_t seg = (len - 1) / kCheckpoint * kCheckpoint; seg >= 0; seg -= kCheckpoint) {
    const int64_t end = std::min(len, seg + kCheckpoint);
    states.assign(1, ckpt[seg / kCheckpoint]);
    for (int64_t i = seg; i < end; ++i) {
      states.push_back(states.back());
      const int64_t t = h.t0 + i;
      step(states.back(), h.k(t), h.v(t), h.a(t), in.beta[h.gi(t)], p, u);
    }
    for (int64_t i = end - 1; i >= seg; --i) backward_token(h, i, states[i - seg], states[i - seg + 1], dS, d_o, r);
  }
  if (!r.dh0.empty()) std::copy(dS.begin(), dS.end(), r.dh0.begin() + soff);
}

void run_head(Head& h, const std::vector<float>& d_o, const std::vector<float>& dht, Result& r) {
  const std::vector<std::vector<double>> ckpt = forward_head(h, r);
  if (d_o.empty()) return;
  backward_head(h, ckpt, d_o, dht, r);
}

}  // namespace

Result run(const Inputs& in, const std::vector<float>& d_o, const std::vector<float>& dht, int threads) {
  const int rows = static_cast<int>(in.cu_seqlens.size()) - 1, Hk = in.k_heads, Hv = in.v_heads;
  const int64_t N = in.cu_seqlens.back();
  Result r;
  r.o.assign(N * Hv * D, 0.0);
  r.ht.assign(static_cast<size_t>(rows) * Hv * D * D, 0.0);
  if (!d_o.empty()) {
    r.dq.assign(N * Hk * D, 0.0);
    r.dk.assign(N * Hk * D, 0.0);
    r.dv.assign(N * Hv * D, 0.0);
    r.dg.assign(N * Hv, 0.0);
    r.dbeta.assign(N * Hv, 0.0);
    r.dh0.assign(static_cast<size_t>(rows) * Hv * D * D, 0.0);
  }
  std::vector<Head> heads;
  for (int n = 0; n < rows; ++n)
    for (int hv = 0; hv < Hv; ++hv)
      heads.push_back(Head{in, n, hv, hv / (Hv / Hk), in.cu_seqlens[n], in.cu_seqlens[n + 1], {}, {}});
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (int w = 0; w < std::max(1, threads); ++w)
    pool.emplace_back([&] {
      for (size_t i; (i = next++) < heads.size();) run_head(heads[i], d_o, dht, r);
    });
  for (auto& t : pool) t.join();
  if (d_o.empty()) return r;
  for (const auto& h : heads)  // the value heads' shares of dq, dk, in head order (deterministic)
    for (int64_t i = 0; i < h.t1 - h.t0; ++i)
      for (int j = 0; j < D; ++j) {
        r.dq[((h.t0 + i) * Hk + h.hk) * D + j] += h.dq_h[i * D + j];
        r.dk[((h.t0 + i) * Hk + h.hk) * D + j] += h.dk_h[i * D + j];
      }
  return r;
}

}  // namespace recipebench::gdn::reference
