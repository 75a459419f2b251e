// The equations of the GDN CUDA kernels (docs/gdn-kernels.md: prep, state, output; dv_local, dstate, grad1, grad2),
// written once more in float64 on the CPU, against the per-token recurrence of gdn_reference.h; and that
// reference's backward against central finite differences. CPU only (no CUDA, no libtorch).
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <tuple>
#include <vector>

#include "gdn_reference.h"

namespace ref = recipebench::gdn::reference;

namespace {

constexpr int D = 128, C = 64;
using Mat = std::vector<double>;  // row-major

/// op(A)[m x k] * op(B)[k x n]; ta / tb: A / B stored transposed.
Mat mm(const Mat& A, int m, int k, bool ta, const Mat& B, int n, bool tb) {
  Mat c(static_cast<size_t>(m) * n, 0.0);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int x = 0; x < k; ++x) s += (ta ? A[x * m + i] : A[i * k + x]) * (tb ? B[j * k + x] : B[x * n + j]);
      c[i * n + j] = s;
    }
  return c;
}

double rel(const std::vector<double>& a, const std::vector<double>& b) {
  double n = 0, d = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    n += (a[i] - b[i]) * (a[i] - b[i]);
    d += b[i] * b[i];
  }
  return std::sqrt(n / d);
}

/// One chunk of one head (zero-padded to C tokens) with what the kernels compute from it.
struct Chunk {
  int len = 0;
  Mat Q, K, V, dO, T, W, U0, U, S, dS;  // S: state at the start, dS: gradient of the state at the end
  std::vector<double> G, B;
};

/// prep: G, T = (I + A)^-1, W, U0.
void prep(Chunk& c) {
  const Mat KK = mm(c.K, C, D, false, c.K, C, true);
  c.T.assign(C * C, 0.0);
  for (int j = 0; j < C; ++j)  // forward substitution, column by column
    for (int i = j; i < C; ++i) {
      double s = 0;
      for (int x = j; x < i; ++x) s += c.B[i] * std::exp(c.G[i] - c.G[x]) * KK[i * C + x] * c.T[x * C + j];
      c.T[i * C + j] = i == j ? 1.0 : -s;
    }
  Mat Kb = c.K, Vb = c.V;
  for (int r = 0; r < C; ++r)
    for (int j = 0; j < D; ++j) {
      Kb[r * D + j] *= c.B[r] * std::exp(c.G[r]);
      Vb[r * D + j] *= c.B[r];
    }
  c.W = mm(c.T, C, C, false, Kb, D, false);
  c.U0 = mm(c.T, C, C, false, Vb, D, false);
}

/// M = scale (Q K^T) * e^(G_r - G_s), s <= r.
Mat intra(const Chunk& c, double scale) {
  const Mat QK = mm(c.Q, C, D, false, c.K, C, true);
  Mat M(C * C, 0.0);
  for (int r = 0; r < C; ++r)
    for (int s = 0; s <= r; ++s) M[r * C + s] = scale * std::exp(c.G[r] - c.G[s]) * QK[r * C + s];
  return M;
}

/// Khat = diag(e^(G_C - G)) K.
Mat khat(const Chunk& c) {
  Mat Kh = c.K;
  for (int r = 0; r < C; ++r)
    for (int j = 0; j < D; ++j) Kh[r * D + j] *= std::exp(c.G[C - 1] - c.G[r]);
  return Kh;
}

std::vector<Chunk> make_chunks(const ref::Inputs& in, const std::vector<float>& d_o) {
  const int T = static_cast<int>(in.cu_seqlens.back());
  std::vector<Chunk> cs;
  for (int t0 = 0; t0 < T; t0 += C) {
    Chunk c;
    c.len = std::min(C, T - t0);
    c.Q = c.K = c.V = c.dO = Mat(C * D, 0.0);
    c.G = c.B = std::vector<double>(C, 0.0);
    double acc = 0;
    for (int r = 0; r < C; ++r) {
      if (r < c.len) {
        acc += in.g[t0 + r];
        c.B[r] = in.beta[t0 + r];
        for (int j = 0; j < D; ++j) {
          const int i = (t0 + r) * D + j;
          c.Q[r * D + j] = in.q[i];
          c.K[r * D + j] = in.k[i];
          c.V[r * D + j] = in.v[i];
          c.dO[r * D + j] = d_o[i];
        }
      }
      c.G[r] = acc;
    }
    prep(c);
    cs.push_back(std::move(c));
  }
  return cs;
}

/// state + output kernels: o [T, D]; returns the final state.
Mat forward(std::vector<Chunk>& cs, const ref::Inputs& in, std::vector<double>& o) {
  Mat S(in.h0.begin(), in.h0.end());
  for (size_t n = 0; n < cs.size(); ++n) {
    Chunk& c = cs[n];
    c.S = S;
    const Mat WS = mm(c.W, C, D, false, S, D, false);
    c.U = c.U0;
    for (int i = 0; i < C * D; ++i) c.U[i] -= WS[i];
    const Mat up = mm(khat(c), D, C, true, c.U, D, false);
    for (int i = 0; i < D * D; ++i) S[i] = std::exp(c.G[C - 1]) * S[i] + up[i];
    const Mat QS = mm(c.Q, C, D, false, c.S, D, false), MU = mm(intra(c, in.scale), C, C, false, c.U, D, false);
    for (int r = 0; r < c.len; ++r)
      for (int j = 0; j < D; ++j) o[(n * C + r) * D + j] = in.scale * std::exp(c.G[r]) * QS[r * D + j] + MU[r * D + j];
  }
  return S;
}

/// dv_local + dstate kernels: each chunk's dS and dU; returns the gradient of the initial state.
Mat reverse_scan(std::vector<Chunk>& cs, const std::vector<float>& dht, double scale, std::vector<Mat>& dU) {
  Mat dS(dht.begin(), dht.end());
  dU.assign(cs.size(), Mat());
  for (int n = static_cast<int>(cs.size()) - 1; n >= 0; --n) {
    Chunk& c = cs[n];
    c.dS = dS;
    dU[n] = mm(intra(c, scale), C, C, true, c.dO, D, false);
    const Mat x = mm(khat(c), C, D, false, dS, D, false);
    for (int i = 0; i < C * D; ++i) dU[n][i] += x[i];
    Mat Qt = c.Q;
    for (int r = 0; r < C; ++r)
      for (int j = 0; j < D; ++j) Qt[r * D + j] *= scale * std::exp(c.G[r]);
    const Mat a = mm(Qt, D, C, true, c.dO, D, false), b = mm(c.W, D, C, true, dU[n], D, false);
    for (int i = 0; i < D * D; ++i) dS[i] = std::exp(c.G[C - 1]) * dS[i] + a[i] - b[i];
  }
  return dS;
}

/// Gradients of one chunk (grad1 + grad2): dq, dk, dv [C, D], dG, dbeta [C].
struct ChunkGrads {
  Mat dq, dk, dv;
  std::vector<double> dG, dB;
};

/// grad1: output and state terms (dq, dk from M and Khat, dW, gate terms).
void grad_output_state(const Chunk& c, const Mat& dU, double scale, ChunkGrads& g, Mat& dW) {
  const Mat dM = mm(c.dO, C, D, false, c.U, C, true), QK = mm(c.Q, C, D, false, c.K, C, true);
  Mat X = mm(c.dO, C, D, false, c.S, D, true), P(C * C, 0.0);
  for (int r = 0; r < C; ++r)
    for (int s = 0; s <= r; ++s) {
      const double e = scale * std::exp(c.G[r] - c.G[s]), dmm = dM[r * C + s] * e * QK[r * C + s];
      P[r * C + s] = dM[r * C + s] * e;
      g.dG[r] += dmm;
      g.dG[s] -= dmm;
    }
  for (int r = 0; r < C; ++r)
    for (int j = 0; j < D; ++j) {
      X[r * D + j] *= scale * std::exp(c.G[r]);
      g.dG[r] += X[r * D + j] * c.Q[r * D + j];
    }
  const Mat PK = mm(P, C, C, false, c.K, D, false);
  for (int i = 0; i < C * D; ++i) g.dq[i] = X[i] + PK[i];
  g.dk = mm(P, C, C, true, c.Q, D, false);
  dW = mm(dU, C, D, false, c.S, D, true);
  for (auto& x : dW) x = -x;
  double sds = 0, ts = 0;
  for (int i = 0; i < D * D; ++i) sds += c.S[i] * c.dS[i];
  const Mat dKh = mm(c.U, C, D, false, c.dS, D, true);
  for (int r = 0; r < C; ++r) {
    const double f = std::exp(c.G[C - 1] - c.G[r]);
    double t = 0;
    for (int j = 0; j < D; ++j) {
      g.dk[r * D + j] += f * dKh[r * D + j];
      t += f * dKh[r * D + j] * c.K[r * D + j];
    }
    g.dG[r] -= t;
    ts += t;
  }
  g.dG[c.len - 1] += ts + std::exp(c.G[C - 1]) * sds;
}

/// grad2: the WY-representation terms (dv, dbeta, dk from W and A, gate terms).
void grad_wy(const Chunk& c, const Mat& dU, const Mat& dW, ChunkGrads& g) {
  const Mat Y1 = mm(c.T, C, C, true, dU, D, false), Y2 = mm(c.T, C, C, true, dW, D, false);
  Mat Kb = c.K, Vb = c.V;
  for (int r = 0; r < C; ++r) {
    const double eg = std::exp(c.G[r]), cb = c.B[r] * eg;
    double a = 0;
    for (int j = 0; j < D; ++j) {
      g.dB[r] += Y1[r * D + j] * c.V[r * D + j];
      g.dv[r * D + j] = c.B[r] * Y1[r * D + j];
      g.dk[r * D + j] += cb * Y2[r * D + j];
      a += Y2[r * D + j] * c.K[r * D + j];
      Kb[r * D + j] *= cb;
      Vb[r * D + j] *= c.B[r];
    }
    g.dB[r] += eg * a;
    g.dG[r] += cb * a;
  }
  Mat dT = mm(dU, C, D, false, Vb, C, true);
  const Mat dT2 = mm(dW, C, D, false, Kb, C, true);
  for (int i = 0; i < C * C; ++i) dT[i] += dT2[i];
  const Mat Z = mm(c.T, C, C, true, dT, C, false), ZT = mm(Z, C, C, false, c.T, C, true);
  const Mat KK = mm(c.K, C, D, false, c.K, C, true);
  Mat dX(C * C, 0.0);
  for (int r = 0; r < C; ++r)
    for (int s = 0; s < r; ++s) {
      const double da = -ZT[r * C + s], e = std::exp(c.G[r] - c.G[s]), daa = da * c.B[r] * e * KK[r * C + s];
      g.dB[r] += da * e * KK[r * C + s];
      g.dG[r] += daa;
      g.dG[s] -= daa;
      dX[r * C + s] = da * c.B[r] * e;
    }
  const Mat a1 = mm(dX, C, C, false, c.K, D, false), a2 = mm(dX, C, C, true, c.K, D, false);
  for (int i = 0; i < C * D; ++i) g.dk[i] += a1[i] + a2[i];
}

/// One row, one key head = one value head, with an initial state.
ref::Inputs make_inputs(int T, unsigned seed, std::vector<float>& d_o, std::vector<float>& dht) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd;
  ref::Inputs in;
  in.k_heads = in.v_heads = 1;
  in.scale = 1 / std::sqrt(static_cast<double>(D));
  in.cu_seqlens = {0, T};
  auto normed = [&] {
    std::vector<float> x(T * D);
    for (int r = 0; r < T; ++r) {
      double ss = 0;
      for (int j = 0; j < D; ++j) ss += (x[r * D + j] = nd(rng)) * x[r * D + j];
      for (int j = 0; j < D; ++j) x[r * D + j] = static_cast<float>(x[r * D + j] / std::sqrt(ss));
    }
    return x;
  };
  in.q = normed();
  in.k = normed();
  for (auto* v : {&in.v, &d_o}) {
    v->resize(T * D);
    for (auto& x : *v) x = nd(rng);
  }
  in.g.resize(T);
  in.beta.resize(T);
  for (auto& x : in.g) x = -0.5f * std::log1p(std::exp(nd(rng)));
  for (auto& x : in.beta) x = 1.f / (1.f + std::exp(-nd(rng)));
  for (auto* v : {&in.h0, &dht}) {
    v->resize(D * D);
    for (auto& x : *v) x = 0.5f * nd(rng);
  }
  return in;
}

}  // namespace

TEST_CASE("The GDN kernels' chunk equations equal the per-token recurrence (float64)", "[gdn]") {
  std::vector<float> d_o, dht;
  const int T = 150;  // two full chunks and a partial one
  const auto in = make_inputs(T, 3, d_o, dht);
  const auto r = ref::run(in, d_o, dht, 1);
  auto cs = make_chunks(in, d_o);
  std::vector<double> o(T * D), dq(T * D), dk(T * D), dv(T * D), dg(T), db(T);
  const Mat ht = forward(cs, in, o);
  std::vector<Mat> dU;
  const Mat dh0 = reverse_scan(cs, dht, in.scale, dU);
  for (size_t n = 0; n < cs.size(); ++n) {
    const Chunk& c = cs[n];
    ChunkGrads g{Mat(C * D, 0.0), Mat(C * D, 0.0), Mat(C * D, 0.0), std::vector<double>(C, 0.0),
                 std::vector<double>(C, 0.0)};
    Mat dW;
    grad_output_state(c, dU[n], in.scale, g, dW);
    grad_wy(c, dU[n], dW, g);
    double acc = 0;
    for (int t = c.len - 1; t >= 0; --t) {  // dg = reverse cumulative sum of dG inside the chunk
      acc += g.dG[t];
      dg[n * C + t] = acc;
      db[n * C + t] = g.dB[t];
      for (int j = 0; j < D; ++j) {
        dq[(n * C + t) * D + j] = g.dq[t * D + j];
        dk[(n * C + t) * D + j] = g.dk[t * D + j];
        dv[(n * C + t) * D + j] = g.dv[t * D + j];
      }
    }
  }
  using Pair = std::tuple<const char*, const std::vector<double>*, const std::vector<double>*>;
  const std::vector<Pair> pairs = {{"o", &o, &r.o},    {"ht", &ht, &r.ht},      {"dh0", &dh0, &r.dh0},
                                   {"dq", &dq, &r.dq}, {"dk", &dk, &r.dk},      {"dv", &dv, &r.dv},
                                   {"dg", &dg, &r.dg}, {"dbeta", &db, &r.dbeta}};
  for (const auto& [name, a, b] : pairs) {
    INFO(name);
    CHECK(rel(*a, *b) < 1e-12);
  }
}

TEST_CASE("The float64 reference's backward equals central finite differences", "[gdn]") {
  std::vector<float> d_o, dht;
  auto in = make_inputs(70, 5, d_o, dht);
  in.cu_seqlens = {0, 30, 70};  // two packed rows: each needs its own initial state
  in.h0.resize(2 * D * D, 0.25f);
  dht.resize(2 * D * D, -0.5f);
  const auto r = ref::run(in, d_o, dht, 2);
  auto loss = [&](const ref::Inputs& x) {
    const auto y = ref::run(x, {}, {}, 2);
    double l = 0;
    for (size_t i = 0; i < y.o.size(); ++i) l += y.o[i] * d_o[i];
    for (size_t i = 0; i < y.ht.size(); ++i) l += y.ht[i] * dht[i];
    return l;
  };
  auto fd = [&](std::vector<float> ref::Inputs::*field, size_t i) {
    ref::Inputs a = in, b = in;
    (a.*field)[i] += 1e-2f;
    (b.*field)[i] -= 1e-2f;
    return (loss(a) - loss(b)) / ((a.*field)[i] - (b.*field)[i]);
  };
  CHECK(fd(&ref::Inputs::g, 7) == Approx(r.dg[7]).epsilon(1e-3));
  CHECK(fd(&ref::Inputs::g, 45) == Approx(r.dg[45]).epsilon(1e-3));
  CHECK(fd(&ref::Inputs::beta, 33) == Approx(r.dbeta[33]).epsilon(1e-3));
  CHECK(fd(&ref::Inputs::q, 1000) == Approx(r.dq[1000]).epsilon(1e-3));
  CHECK(fd(&ref::Inputs::k, 5000) == Approx(r.dk[5000]).epsilon(1e-3));
  CHECK(fd(&ref::Inputs::v, 8000) == Approx(r.dv[8000]).epsilon(1e-3));
  CHECK(fd(&ref::Inputs::h0, 20000) == Approx(r.dh0[20000]).epsilon(1e-3));
}
