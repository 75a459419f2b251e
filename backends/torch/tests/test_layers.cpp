// Each layer against a plain per-token C++ implementation written from the formulas (float64):
// RMSNorm, gated attention, Gated DeltaNet (with the per-token recurrence), sparse MoE.
#include "catalog/models.h"
#include "model/compat.h"
#include "model/gated_attention.h"
#include "model/gated_deltanet.h"
#include "model/moe.h"
#include "model/rms_norm.h"
#include "test_util.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

using namespace recipebench::torch_model;
using rbt_test::rel_err;
using recipebench::ModelConfig;
using Vec = std::vector<double>;

namespace {

/// Small config for layer tests (not the registry's tiny member: odd sizes catch mixed-up dims).
ModelConfig small_config() {
  ModelConfig c;
  c.name = "test";
  c.hidden_size = 24;
  c.num_layers = 4;
  c.vocab_size = 50;
  c.num_attention_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 8;
  c.rope_dims = 4;
  c.rope_theta = 100.0;  // a small theta so that every rotary pair turns noticeably over a few positions
  c.linear_num_key_heads = 2;
  c.linear_num_value_heads = 4;
  c.linear_key_head_dim = 6;
  c.linear_value_head_dim = 5;
  c.linear_conv_kernel = 4;
  c.gdn_chunk_size = 8;
  c.num_experts = 8;
  c.top_k = 2;
  c.expert_ffn = 10;
  c.shared_expert_ffn = 12;
  return c;
}

/// y = W x for W: [out, in] (float64 tensor), x: in values.
Vec matvec(const torch::Tensor& w, const Vec& x) {
  const auto a = w.accessor<double, 2>();
  Vec y(a.size(0), 0.0);
  for (int64_t o = 0; o < a.size(0); ++o)
    for (int64_t i = 0; i < a.size(1); ++i) y[o] += a[o][i] * x[i];
  return y;
}

Vec row(const torch::Tensor& x3, int64_t b, int64_t t) {
  const auto a = x3.accessor<double, 3>();
  Vec v(a.size(2));
  for (int64_t i = 0; i < a.size(2); ++i) v[i] = a[b][t][i];
  return v;
}

Vec to_vec(const torch::Tensor& t) {
  const auto c = t.contiguous();
  return Vec(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double silu(double x) { return x * sigmoid(x); }
double softplus(double x) { return std::log1p(std::exp(x)); }

/// In place: zero-centred RMSNorm of v[off, off + n) with weight w.
void zc_rms(Vec& v, int64_t off, int64_t n, const Vec& w, double eps) {
  double ms = 0;
  for (int64_t i = 0; i < n; ++i) ms += v[off + i] * v[off + i];
  const double r = 1.0 / std::sqrt(ms / n + eps);
  for (int64_t i = 0; i < n; ++i) v[off + i] *= r * (1.0 + w[i]);
}

torch::Tensor out_tensor(const std::vector<std::vector<Vec>>& rows) {
  const int64_t b = rows.size(), s = rows[0].size(), h = rows[0][0].size();
  auto t = torch::empty({b, s, h}, torch::kDouble);
  auto a = t.accessor<double, 3>();
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < s; ++j)
      for (int64_t k = 0; k < h; ++k) a[i][j][k] = rows[i][j][k];
  return t;
}

/// Gated attention of docs/model.md, token by token.
torch::Tensor attention_reference(GatedAttentionImpl& m, const ModelConfig& c, const torch::Tensor& x) {
  const int64_t B = x.size(0), S = x.size(1), H = c.num_attention_heads, KV = c.num_kv_heads, D = c.head_dim;
  const int64_t R = c.rope_dims;
  const Vec wq = to_vec(m.q_norm->weight), wk = to_vec(m.k_norm->weight);
  std::vector<std::vector<Vec>> out(B, std::vector<Vec>(S));
  for (int64_t b = 0; b < B; ++b) {
    std::vector<Vec> q(S, Vec(H * D)), gate(S, Vec(H * D)), k(S), v(S);
    for (int64_t t = 0; t < S; ++t) {
      const Vec xt = row(x, b, t);
      const Vec qg = matvec(m.q_proj->weight, xt);  // per head: D query values, then D gate values
      for (int64_t h = 0; h < H; ++h)
        for (int64_t d = 0; d < D; ++d) {
          q[t][h * D + d] = qg[h * 2 * D + d];
          gate[t][h * D + d] = qg[h * 2 * D + D + d];
        }
      k[t] = matvec(m.k_proj->weight, xt);
      v[t] = matvec(m.v_proj->weight, xt);
      for (int64_t h = 0; h < H; ++h) zc_rms(q[t], h * D, D, wq, c.rms_norm_eps);
      for (int64_t h = 0; h < KV; ++h) zc_rms(k[t], h * D, D, wk, c.rms_norm_eps);
      // Rotate the pairs (j, j + R/2) of the first R dims by angle t * theta^(-2j/R).
      auto rope = [&](Vec& vec, int64_t off) {
        for (int64_t j = 0; j < R / 2; ++j) {
          const double ang = t * std::pow(c.rope_theta, -2.0 * j / R);
          const double x1 = vec[off + j], x2 = vec[off + j + R / 2];
          vec[off + j] = x1 * std::cos(ang) - x2 * std::sin(ang);
          vec[off + j + R / 2] = x2 * std::cos(ang) + x1 * std::sin(ang);
        }
      };
      for (int64_t h = 0; h < H; ++h) rope(q[t], h * D);
      for (int64_t h = 0; h < KV; ++h) rope(k[t], h * D);
    }
    for (int64_t t = 0; t < S; ++t) {
      Vec o(H * D, 0.0);
      for (int64_t h = 0; h < H; ++h) {
        const int64_t kvh = h / (H / KV);
        Vec score(t + 1);
        for (int64_t s = 0; s <= t; ++s) {
          double dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += q[t][h * D + d] * k[s][kvh * D + d];
          score[s] = dot / std::sqrt(static_cast<double>(D));
        }
        const double mx = *std::max_element(score.begin(), score.end());
        double z = 0;
        for (auto& e : score) z += (e = std::exp(e - mx));
        for (int64_t s = 0; s <= t; ++s)
          for (int64_t d = 0; d < D; ++d) o[h * D + d] += score[s] / z * v[s][kvh * D + d];
        for (int64_t d = 0; d < D; ++d) o[h * D + d] *= sigmoid(gate[t][h * D + d]);
      }
      out[b][t] = matvec(m.o_proj->weight, o);
    }
  }
  return out_tensor(out);
}

/// Gated DeltaNet of docs/model.md, token by token, with its own recurrence.
torch::Tensor gdn_reference(GatedDeltaNetImpl& m, const ModelConfig& c, const torch::Tensor& x) {
  const int64_t B = x.size(0), S = x.size(1), HK = c.linear_num_key_heads, HV = c.linear_num_value_heads;
  const int64_t DK = c.linear_key_head_dim, DV = c.linear_value_head_dim, K = c.linear_conv_kernel;
  const int64_t KD = HK * DK, VD = HV * DV, C = 2 * KD + VD;
  const auto conv = m.conv1d->weight.accessor<double, 3>();
  const Vec a_log = to_vec(m.A_log), dt_bias = to_vec(m.dt_bias), nw = to_vec(m.norm->weight);
  std::vector<std::vector<Vec>> out(B, std::vector<Vec>(S));
  for (int64_t b = 0; b < B; ++b) {
    std::vector<Vec> mixed(S);
    for (int64_t t = 0; t < S; ++t) mixed[t] = matvec(m.in_proj_qkv->weight, row(x, b, t));
    std::vector<std::vector<Vec>> state(HV, std::vector<Vec>(DK, Vec(DV, 0.0)));  // S[h][i][j]: key i -> value j
    for (int64_t t = 0; t < S; ++t) {
      const Vec xt = row(x, b, t);
      Vec y(C, 0.0);  // causal depthwise conv + SiLU
      for (int64_t ch = 0; ch < C; ++ch) {
        double acc = 0;
        for (int64_t j = 0; j < K; ++j) {
          const int64_t src = t - (K - 1) + j;
          if (src >= 0) acc += conv[ch][0][j] * mixed[src][ch];
        }
        y[ch] = silu(acc);
      }
      auto l2 = [](Vec& vec, int64_t off, int64_t n) {
        double ss = 0;
        for (int64_t i = 0; i < n; ++i) ss += vec[off + i] * vec[off + i];
        for (int64_t i = 0; i < n; ++i) vec[off + i] /= std::sqrt(ss + 1e-6);
      };
      for (int64_t h = 0; h < HK; ++h) {
        l2(y, h * DK, DK);       // q
        l2(y, KD + h * DK, DK);  // k
      }
      const Vec bl = matvec(m.in_proj_b->weight, xt), al = matvec(m.in_proj_a->weight, xt);
      const Vec z = matvec(m.in_proj_z->weight, xt);
      Vec o(VD, 0.0);
      for (int64_t h = 0; h < HV; ++h) {
        const int64_t kh = h / (HV / HK);
        const double beta = sigmoid(bl[h]);
        const double g = -std::exp(a_log[h]) * softplus(al[h] + dt_bias[h]);
        const double* q = &y[kh * DK];
        const double* k = &y[KD + kh * DK];
        const double* v = &y[2 * KD + h * DV];
        auto& st = state[h];
        for (auto& r : st)
          for (auto& e : r) e *= std::exp(g);
        for (int64_t j = 0; j < DV; ++j) {
          double pred = 0;
          for (int64_t i = 0; i < DK; ++i) pred += st[i][j] * k[i];
          const double u = beta * (v[j] - pred);
          for (int64_t i = 0; i < DK; ++i) st[i][j] += k[i] * u;
        }
        for (int64_t j = 0; j < DV; ++j) {
          double acc = 0;
          for (int64_t i = 0; i < DK; ++i) acc += st[i][j] * q[i] / std::sqrt(static_cast<double>(DK));
          o[h * DV + j] = acc;
        }
        // Gated RMSNorm per value head: norm(o) * w * silu(z).
        double ms = 0;
        for (int64_t j = 0; j < DV; ++j) ms += o[h * DV + j] * o[h * DV + j];
        const double r = 1.0 / std::sqrt(ms / DV + c.rms_norm_eps);
        for (int64_t j = 0; j < DV; ++j) o[h * DV + j] *= r * nw[j] * silu(z[h * DV + j]);
      }
      out[b][t] = matvec(m.out_proj->weight, o);
    }
  }
  return out_tensor(out);
}

/// Sparse MoE of docs/model.md, token by token. `used` counts the tokens routed to each expert.
torch::Tensor moe_reference(SparseMoeBlockImpl& m, const ModelConfig& c, const torch::Tensor& x,
                            std::vector<int>* used = nullptr) {
  const int64_t B = x.size(0), S = x.size(1), E = c.num_experts, I = c.expert_ffn;
  if (used) used->assign(E, 0);
  std::vector<std::vector<Vec>> out(B, std::vector<Vec>(S));
  auto swiglu = [](const torch::Tensor& wg, const torch::Tensor& wu, const torch::Tensor& wd, const Vec& xt) {
    const Vec g = matvec(wg, xt), u = matvec(wu, xt);
    Vec a(g.size());
    for (size_t i = 0; i < g.size(); ++i) a[i] = silu(g[i]) * u[i];
    return matvec(wd, a);
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < S; ++t) {
      const Vec xt = row(x, b, t);
      const Vec logits = matvec(m.gate->weight, xt);
      const double mx = *std::max_element(logits.begin(), logits.end());
      Vec p(E);
      double z = 0;
      for (int64_t e = 0; e < E; ++e) z += (p[e] = std::exp(logits[e] - mx));
      for (auto& e : p) e /= z;
      std::vector<int64_t> order(E);
      std::iota(order.begin(), order.end(), 0);
      std::sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return p[i] > p[j]; });
      double top_sum = 0;
      for (int64_t j = 0; j < c.top_k; ++j) top_sum += p[order[j]];
      Vec y = swiglu(m.shared_expert->gate_proj->weight, m.shared_expert->up_proj->weight,
                     m.shared_expert->down_proj->weight, xt);
      const double sg = sigmoid(matvec(m.shared_expert_gate->weight, xt)[0]);
      for (auto& e : y) e *= sg;
      for (int64_t j = 0; j < c.top_k; ++j) {
        const int64_t e = order[j];
        if (used) ++(*used)[e];
        const auto gu = m.experts->gate_up_proj[e];
        const Vec ye = swiglu(gu.narrow(0, 0, I), gu.narrow(0, I, I), m.experts->down_proj[e], xt);
        for (size_t i = 0; i < y.size(); ++i) y[i] += p[e] / top_sum * ye[i];
      }
      out[b][t] = y;
    }
  return out_tensor(out);
}

}  // namespace

TEST_CASE("zero-centred RMSNorm follows its formula and computes in fp32 for bf16", "[layers][norm]") {
  torch::manual_seed(1);
  RMSNorm norm(16, 1e-6);
  rbt_test::randomize(*norm);
  norm->to(torch::kDouble);
  const auto x = torch::randn({3, 5, 16}, torch::kDouble);
  const auto y = norm(x);
  const Vec w = to_vec(norm->weight);
  std::vector<std::vector<Vec>> ref(3, std::vector<Vec>(5));
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t t = 0; t < 5; ++t) {
      ref[b][t] = row(x, b, t);
      zc_rms(ref[b][t], 0, 16, w, 1e-6);
    }
  CHECK(rel_err(y, out_tensor(ref)) < 1e-14);
  // A zero weight is the identity scale (1 + 0), not zero.
  CHECK(rel_err(zero_centred_rms_norm(x, torch::zeros({16}, torch::kDouble), 1e-6),
                x * torch::rsqrt(x.pow(2).mean(-1, true) + 1e-6)) < 1e-14);
  // bf16 input: normalised in fp32, rounded once at the end.
  const auto xb = torch::randn({4, 16}).to(torch::kBFloat16);
  const auto wf = torch::randn({16}) * 0.1;
  const auto xf = xb.to(torch::kFloat);
  const auto expect = (xf * torch::rsqrt(xf.pow(2).mean(-1, true) + 1e-6) * (1 + wf)).to(torch::kBFloat16);
  const auto got = zero_centred_rms_norm(xb, wf.to(torch::kBFloat16).to(torch::kFloat), 1e-6);
  REQUIRE(got.scalar_type() == torch::kBFloat16);
  CHECK(torch::equal(got, expect));
}

TEST_CASE("gated attention equals a per-token loop implementation (float64)", "[layers][attention]") {
  torch::manual_seed(2);
  const auto cfg = small_config();
  GatedAttention attn(cfg, AttentionImpl::Math);
  rbt_test::randomize(*attn);
  attn->to(torch::kDouble);
  const auto x = torch::randn({2, 7, cfg.hidden_size}, torch::kDouble);
  const auto y = attn(x);
  REQUIRE(y.sizes() == x.sizes());
  const auto ref = attention_reference(*attn, cfg, x);
  CHECK(ref.abs().max().item<double>() > 1e-2);
  CHECK(rel_err(y, ref) < 1e-12);
  // Causality: changing the last token leaves the earlier outputs alone.
  auto x2 = x.clone();
  x2.select(1, 6).normal_();
  const auto y2 = attn(x2);
  CHECK(torch::allclose(y2.narrow(1, 0, 6), y.narrow(1, 0, 6), 0, 1e-14));
  CHECK(rel_err(y2.select(1, 6), y.select(1, 6)) > 1e-3);
  // Explicit positions 0..S-1 are the default.
  CHECK(rel_err(attn(x, torch::arange(7)), y) < 1e-15);
  if (!compat::kHasSdpa) {
    GatedAttention sdpa(cfg, AttentionImpl::Sdpa);
    CHECK_THROWS(sdpa(x.to(torch::kFloat)));
  }
}

TEST_CASE("RoPE is partial and uses the rotate-half pairing", "[layers][attention]") {
  // head_dim 6, rope over the first 4: pairs (0, 2) and (1, 3); dims 4, 5 pass through.
  const auto [cos, sin] = rope_cos_sin(torch::tensor({3}, torch::kLong), 4, 10000.0, torch::kDouble);
  const auto x = torch::arange(1, 7, torch::kDouble).view({1, 1, 1, 6});
  const auto y = apply_partial_rope(x, cos, sin).view({6});
  const double a0 = 3.0, a1 = 3.0 / 100.0;  // 3 * 10000^(-0/4), 3 * 10000^(-2/4)
  const double expect[6] = {1 * std::cos(a0) - 3 * std::sin(a0),
                            2 * std::cos(a1) - 4 * std::sin(a1),
                            3 * std::cos(a0) + 1 * std::sin(a0),
                            4 * std::cos(a1) + 2 * std::sin(a1),
                            5,
                            6};
  for (int i = 0; i < 6; ++i) CHECK(y[i].item<double>() == Approx(expect[i]).epsilon(1e-14));
}

TEST_CASE("Gated DeltaNet equals a per-token loop implementation (float64)", "[layers][gdn]") {
  torch::manual_seed(3);
  const auto cfg = small_config();
  GatedDeltaNet gdn(cfg);  // chunked kernel, chunk 8
  rbt_test::randomize(*gdn);
  gdn->to(torch::kDouble);
  const auto x = torch::randn({2, 19, cfg.hidden_size}, torch::kDouble);  // 19: two whole chunks and a part
  const auto y = gdn(x);
  REQUIRE(y.sizes() == x.sizes());
  const auto ref = gdn_reference(*gdn, cfg, x);
  CHECK(ref.abs().max().item<double>() > 1e-2);
  CHECK(rel_err(y, ref) < 1e-11);
  gdn->kernel = GdnKernel::Recurrent;
  CHECK(rel_err(gdn(x), ref) < 1e-11);
  // Causality of the conv and the recurrence.
  auto x2 = x.clone();
  x2.select(1, 18).normal_();
  gdn->kernel = GdnKernel::Chunked;
  CHECK(torch::allclose(gdn(x2).narrow(1, 0, 18), y.narrow(1, 0, 18), 0, 1e-14));
}

TEST_CASE("Gated DeltaNet parameters have the Hugging Face names and shapes", "[layers][gdn]") {
  const auto cfg = small_config();
  GatedDeltaNet gdn(cfg);
  const auto p = gdn->named_parameters();
  const int64_t conv = 2 * 12 + 20;
  CHECK(p["in_proj_qkv.weight"].sizes() == torch::IntArrayRef({conv, 24}));
  CHECK(p["in_proj_z.weight"].sizes() == torch::IntArrayRef({20, 24}));
  CHECK(p["in_proj_b.weight"].sizes() == torch::IntArrayRef({4, 24}));
  CHECK(p["in_proj_a.weight"].sizes() == torch::IntArrayRef({4, 24}));
  CHECK(p["conv1d.weight"].sizes() == torch::IntArrayRef({conv, 1, 4}));
  CHECK(p["dt_bias"].sizes() == torch::IntArrayRef({4}));
  CHECK(p["A_log"].sizes() == torch::IntArrayRef({4}));
  CHECK(p["norm.weight"].sizes() == torch::IntArrayRef({5}));
  CHECK(p["out_proj.weight"].sizes() == torch::IntArrayRef({24, 20}));
  CHECK(p.size() == 9);
}

TEST_CASE("sparse MoE equals a per-token loop, including experts that get no token (float64)", "[layers][moe]") {
  torch::manual_seed(4);
  const auto cfg = small_config();
  SparseMoeBlock moe(cfg, ExpertsImpl::Loop);
  rbt_test::randomize(*moe);
  moe->to(torch::kDouble);
  for (const int64_t seq : {3, 20}) {
    const auto x = torch::randn({1, seq, cfg.hidden_size}, torch::kDouble);
    std::vector<int> used;
    const auto ref = moe_reference(*moe, cfg, x, &used);
    const auto y = moe(x);
    INFO("tokens " << seq);
    REQUIRE(y.sizes() == x.sizes());
    CHECK(ref.abs().max().item<double>() > 1e-2);
    CHECK(rel_err(y, ref) < 1e-13);
    const auto idle = std::count(used.begin(), used.end(), 0);
    if (seq == 3) CHECK(idle >= 2);  // 3 tokens x top-2 of 8 experts: at least two experts get nothing
  }
  // An expert that receives no token gets an exact zero gradient; a used one does not.
  const auto x = torch::randn({1, 3, cfg.hidden_size}, torch::kDouble);
  std::vector<int> used;
  moe_reference(*moe, cfg, x, &used);
  moe->zero_grad();
  (moe(x) * torch::randn_like(x)).sum().backward();
  const auto grad = moe->experts->gate_up_proj.grad();
  for (int64_t e = 0; e < cfg.num_experts; ++e) {
    INFO("expert " << e << " tokens " << used[e]);
    const double n = grad[e].norm().item<double>();
    if (used[e] == 0)
      CHECK(n == 0.0);
    else
      CHECK(n > 0.0);
  }
}

TEST_CASE("router renormalises the top-k softmax weights", "[layers][moe]") {
  torch::manual_seed(5);
  const auto x = torch::randn({6, 8}, torch::kDouble);
  const auto w = torch::randn({5, 8}, torch::kDouble);
  const auto r = route_topk(x, w, 3);
  CHECK(r.indices.sizes() == torch::IntArrayRef({6, 3}));
  CHECK(torch::allclose(r.weights.sum(-1), torch::ones({6}, torch::kDouble), 0, 1e-15));
  const auto p = torch::softmax(torch::matmul(x, w.t()), -1);
  const auto top = std::get<0>(p.topk(3, -1));
  CHECK(rel_err(r.weights, top / top.sum(-1, true)) < 1e-15);
  CHECK(torch::equal(r.indices, std::get<1>(p.topk(3, -1))));
}

TEST_CASE("grouped experts path needs libtorch 2.x on CUDA bf16", "[layers][moe]") {
  const auto cfg = small_config();
  SparseMoeBlock moe(cfg, ExpertsImpl::Grouped);
  const auto x = torch::randn({1, 4, cfg.hidden_size});
  CHECK_FALSE(compat::grouped_mm_usable(x));  // CPU fp32 never qualifies
  if (!compat::kHasGroupedMm) CHECK_THROWS(moe(x));
  // Auto picks the loop on CPU and agrees with Loop.
  SparseMoeBlock loop(cfg, ExpertsImpl::Loop);
  moe->experts->impl = ExpertsImpl::Auto;
  {
    torch::NoGradGuard no_grad;
    auto dst = moe->named_parameters();
    for (const auto& kv : loop->named_parameters()) dst[kv.key()].copy_(kv.value());
  }
  CHECK(torch::equal(moe(x), loop(x)));
}
