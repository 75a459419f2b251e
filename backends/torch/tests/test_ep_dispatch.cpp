// The fixed-capacity expert-parallel dispatcher (bench.ep_dispatch fixed_capacity; docs/distributed.md, "Expert
// parallelism"): its device-side plans against a plain host reference, the padding rows of the local experts, and
// the dispatcher on two ranks (threads over Gloo) against the host-splits dispatcher (bitwise in float64) and the
// unsharded experts.
#include <torch/types.h>
#include <torch/utils.h>
#include <catch2/catch.hpp>

#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "dist/parallel_groups.h"
#include "dist/process_group.h"
#include "launch/launch.h"
#include "model/moe.h"
#include "two_ranks.h"

using namespace recipebench;
using torch_model::EpDispatch;

namespace {

std::vector<int64_t> to_vec(const torch::Tensor& t) {
  const auto c = t.to(torch::kCPU).to(torch::kInt64).contiguous();
  return {c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel()};
}

std::vector<bool> to_bools(const torch::Tensor& t) {
  const auto v = to_vec(t);
  return {v.begin(), v.end()};
}

/// The host reference of capacity_send_plan: rows sorted by rank, block r of the buffer takes rank r's rows in order.
struct SendRef {
  std::vector<int64_t> src, pos;
  std::vector<bool> valid;
};
SendRef send_reference(const std::vector<int64_t>& counts, int64_t P, int64_t C) {
  const int64_t L = static_cast<int64_t>(counts.size()) / P;
  SendRef r;
  r.src.assign(static_cast<size_t>(P * C), 0);
  r.valid.assign(static_cast<size_t>(P * C), false);
  int64_t row = 0;
  for (int64_t q = 0; q < P; ++q) {
    int64_t n = 0;
    for (int64_t l = 0; l < L; ++l) n += counts[static_cast<size_t>(q * L + l)];
    for (int64_t o = 0; o < n; ++o, ++row) {
      r.src[static_cast<size_t>(q * C + o)] = row;
      r.valid[static_cast<size_t>(q * C + o)] = true;
      r.pos.push_back(q * C + o);
    }
  }
  return r;
}

/// The host reference of capacity_recv_plan: slots listed by (local expert, source rank, position), padding last.
std::vector<int64_t> recv_reference(const std::vector<int64_t>& got, int64_t P, int64_t C) {
  const int64_t L = static_cast<int64_t>(got.size()) / P;
  std::vector<int64_t> perm;
  for (int64_t l = 0; l < L; ++l)
    for (int64_t s = 0; s < P; ++s) {
      int64_t first = 0;
      for (int64_t j = 0; j < l; ++j) first += got[static_cast<size_t>(s * L + j)];
      for (int64_t o = 0; o < got[static_cast<size_t>(s * L + l)]; ++o) perm.push_back(s * C + first + o);
    }
  for (int64_t s = 0; s < P; ++s) {
    int64_t real = 0;
    for (int64_t l = 0; l < L; ++l) real += got[static_cast<size_t>(s * L + l)];
    for (int64_t o = real; o < C; ++o) perm.push_back(s * C + o);
  }
  return perm;
}

}  // namespace

TEST_CASE("fixed-capacity send plan: the host reference, with an expert and a rank that get no rows",
          "[train][ep][capacity]") {
  struct Case {
    std::vector<int64_t> counts;
    int64_t P, C;
  };
  const std::vector<Case> cases = {
      {{3, 0, 0, 0}, 2, 5},              // rank 1 gets no row, expert 1 none either
      {{1, 2, 0, 3}, 2, 6},              // expert 2 gets none; block 1 full up to 3 of 6
      {{0, 0, 2, 2}, 2, 4},              // rank 0 gets none; block 1 exactly full
      {{2, 0, 1, 0, 0, 3}, 3, 6},        // three ranks, L = 2
      {{0, 0, 0, 0, 0, 0, 0, 0}, 4, 2},  // no row at all
  };
  for (const auto& c : cases) {
    int64_t rows = 0;
    for (auto n : c.counts) rows += n;
    INFO("counts " << torch::tensor(c.counts) << " P " << c.P << " C " << c.C);
    const auto plan = torch_model::capacity_send_plan(torch::tensor(c.counts), c.P, c.C, rows);
    const SendRef ref = send_reference(c.counts, c.P, c.C);
    CHECK(to_bools(plan.valid) == ref.valid);
    // A padding slot's source is unused (masked); the real ones must match.
    const auto src = to_vec(plan.src);
    for (size_t j = 0; j < src.size(); ++j)
      if (ref.valid[j]) CHECK(src[j] == ref.src[j]);
    CHECK(to_vec(plan.pos) == ref.pos);
    CHECK(plan.src.size(0) == c.P * c.C);
  }
  CHECK_THROWS(torch_model::capacity_send_plan(torch::tensor(std::vector<int64_t>{1, 2, 3}), 2, 4, 6));
}

TEST_CASE("fixed-capacity receive plan: the host reference, with an expert and a source that send no rows",
          "[train][ep][capacity]") {
  struct Case {
    std::vector<int64_t> got;
    int64_t P, C;
  };
  const std::vector<Case> cases = {
      {{2, 0, 0, 0}, 2, 3},        // local expert 1 gets nothing; source 1 sends nothing
      {{1, 2, 0, 3}, 2, 4},        // source 0: expert 0 1 row, expert 1 2 rows; source 1: expert 1 3 rows
      {{0, 0, 0, 0}, 2, 3},        // this rank receives no row (all padding)
      {{2, 0, 1, 0, 3, 1}, 3, 4},  // three sources, source 1 fills its block with expert 1
      {{1, 1, 1, 1}, 4, 1},        // L = 1, every block exactly full
  };
  for (const auto& c : cases) {
    INFO("got " << torch::tensor(c.got) << " P " << c.P << " C " << c.C);
    const auto plan = torch_model::capacity_recv_plan(torch::tensor(c.got), c.P, c.C);
    CHECK(to_vec(plan.perm) == recv_reference(c.got, c.P, c.C));
    // inv is perm's inverse.
    const auto perm = to_vec(plan.perm), inv = to_vec(plan.inv);
    for (size_t i = 0; i < perm.size(); ++i) CHECK(inv[static_cast<size_t>(perm[i])] == static_cast<int64_t>(i));
    const int64_t L = static_cast<int64_t>(c.got.size()) / c.P;
    std::vector<int64_t> local(static_cast<size_t>(L), 0);
    for (int64_t s = 0; s < c.P; ++s)
      for (int64_t l = 0; l < L; ++l) local[static_cast<size_t>(l)] += c.got[static_cast<size_t>(s * L + l)];
    CHECK(to_vec(plan.local_counts) == local);
  }
}

TEST_CASE("local experts with padding rows: zero outputs and zero gradients past the counted rows, even non-finite",
          "[train][ep][capacity]") {
  torch::manual_seed(3);
  const int64_t E = 3, H = 4, F = 6;
  torch_model::RoutedExperts m(E, H, F, torch_model::ExpertsImpl::Loop);
  m->to(torch::kFloat64);
  const auto counts = torch::tensor(std::vector<int64_t>{2, 0, 1});
  auto base = torch::randn({6, H}, torch::kFloat64);
  base.narrow(0, 3, 3).fill_(std::numeric_limits<double>::quiet_NaN());  // padding rows holding garbage
  auto xs = base.clone().requires_grad_(true);
  const auto ys = m->local_ffn(xs, counts, /*padded=*/true);
  REQUIRE(ys.sizes() == torch::IntArrayRef({6, H}));
  CHECK(torch::equal(ys.narrow(0, 3, 3), torch::zeros({3, H}, torch::kFloat64)));
  // The real rows: the same as without padding.
  auto real = base.narrow(0, 0, 3).clone().requires_grad_(true);
  const auto ys_real = m->local_ffn(real, counts);
  CHECK(torch::equal(ys.narrow(0, 0, 3), ys_real));
  auto g = torch::randn({6, H}, torch::kFloat64);
  (ys * g).sum().backward();
  CHECK(torch::equal(xs.grad().narrow(0, 3, 3), torch::zeros({3, H}, torch::kFloat64)));
  CHECK_FALSE(torch::isnan(m->gate_up_proj.grad()).any().item<bool>());
  CHECK_FALSE(torch::isnan(m->down_proj.grad()).any().item<bool>());
  // Without padding the counts must cover every row.
  CHECK_THROWS(m->local_ffn(base, counts));
}

namespace {

/// What one rank's EP2 experts give: output, input gradient, expert gradients.
struct RankResult {
  torch::Tensor out, gx, g_gate_up, g_down;
};

/// Both ranks' tokens through EP2 experts with dispatcher `mode` (token bound `max_tokens`), in `dtype`.
std::vector<RankResult> run_ep2(const torch_model::RoutedExperts& ref, const std::vector<torch::Tensor>& x,
                                const std::vector<torch::Tensor>& idx, const std::vector<torch::Tensor>& w,
                                const std::vector<torch::Tensor>& g, EpDispatch mode, int64_t max_tokens,
                                std::vector<std::string>* errors_out = nullptr) {
  std::vector<RankResult> res(2);
  const auto errors = rbt_test::on_two_ranks([&](int r, dist::ProcessGroup& pg) {
    torch_model::RoutedExperts m(ref->num_experts, ref->hidden, ref->ffn, torch_model::ExpertsImpl::Loop);
    m->to(ref->gate_up_proj.scalar_type());
    {
      torch::NoGradGuard ng;
      m->gate_up_proj.copy_(ref->gate_up_proj);
      m->down_proj.copy_(ref->down_proj);
    }
    m->shard(std::make_shared<dist::GroupExpertParallel>(pg), {mode, max_tokens});
    auto xr = x[static_cast<size_t>(r)].clone().requires_grad_(true);
    auto o = m(xr, idx[static_cast<size_t>(r)], w[static_cast<size_t>(r)]);
    (o * g[static_cast<size_t>(r)]).sum().backward();
    res[static_cast<size_t>(r)] = {o.detach(), xr.grad(), m->gate_up_proj.grad(), m->down_proj.grad()};
  });
  if (errors_out) {
    *errors_out = errors;
  } else {
    INFO(errors[0] << errors[1]);
    REQUIRE(errors[0].empty());
    REQUIRE(errors[1].empty());
  }
  return res;
}

bool same(const torch::Tensor& a, const torch::Tensor& b) {
  if (!a.defined() || !b.defined()) return a.defined() == b.defined();
  return torch::equal(a, b);
}

}  // namespace

TEST_CASE(
    "EP2 fixed capacity: bitwise the host-splits dispatcher in float64, the unsharded experts' values, a rank "
    "with no rows, and a microbatch past the bound refused",
    "[train][ep][capacity]") {
  torch::manual_seed(11);
  const int64_t E = 4, H = 8, F = 16, N = 6, K = 2;
  torch_model::RoutedExperts ref(E, H, F, torch_model::ExpertsImpl::Loop);
  ref->to(torch::kFloat64);
  for (const bool to_rank0 : {false, true}) {
    DYNAMIC_SECTION((to_rank0 ? "every token to rank 0's experts (rank 1 receives no row)" : "random routing")) {
      std::vector<torch::Tensor> x, w, g, idx;
      for (int r = 0; r < 2; ++r) {
        x.push_back(torch::randn({N, H}, torch::kFloat64));
        w.push_back(torch::softmax(torch::randn({N, K}, torch::kFloat64), -1));
        g.push_back(torch::randn({N, H}, torch::kFloat64));
        if (to_rank0)
          idx.push_back(torch::stack({torch::zeros({N}, torch::kInt64), torch::ones({N}, torch::kInt64)}, 1));
        else
          idx.push_back(std::get<1>(torch::rand({N, E}).topk(K, -1)));
      }
      const auto host = run_ep2(ref, x, idx, w, g, EpDispatch::HostSplits, 0);
      const auto fixed = run_ep2(ref, x, idx, w, g, EpDispatch::FixedCapacity, N);      // exactly the bound
      const auto roomy = run_ep2(ref, x, idx, w, g, EpDispatch::FixedCapacity, 3 * N);  // mostly padding
      for (int r = 0; r < 2; ++r) {
        INFO("rank " << r);
        const auto& h = host[static_cast<size_t>(r)];
        for (const auto* f : {&fixed[static_cast<size_t>(r)], &roomy[static_cast<size_t>(r)]}) {
          CHECK(same(f->out, h.out));
          CHECK(same(f->gx, h.gx));
          CHECK(same(f->g_gate_up, h.g_gate_up));
          CHECK(same(f->g_down, h.g_down));
        }
        // And the unsharded experts' values.
        auto xr = x[static_cast<size_t>(r)].clone().requires_grad_(true);
        const auto o = ref(xr, idx[static_cast<size_t>(r)], w[static_cast<size_t>(r)]);
        CHECK(torch::allclose(fixed[static_cast<size_t>(r)].out, o, 1e-12, 1e-12));
      }
      if (to_rank0) {
        // Rank 1's experts got no row: no gradient, or an exactly zero one.
        const auto& gu = fixed[1].g_gate_up;
        CHECK((!gu.defined() || gu.abs().max().item<double>() == 0));
      }
    }
  }
  SECTION("a microbatch with more tokens than the bound is refused on every rank, never dropped") {
    std::vector<torch::Tensor> x, w, g, idx;
    for (int r = 0; r < 2; ++r) {
      x.push_back(torch::randn({N, H}, torch::kFloat64));
      w.push_back(torch::softmax(torch::randn({N, K}, torch::kFloat64), -1));
      g.push_back(torch::randn({N, H}, torch::kFloat64));
      idx.push_back(std::get<1>(torch::rand({N, E}).topk(K, -1)));
    }
    std::vector<std::string> errors;
    run_ep2(ref, x, idx, w, g, EpDispatch::FixedCapacity, N - 1, &errors);
    for (const auto& e : errors) {
      CHECK_THAT(e, Catch::Contains("microbatch has 6 tokens, more than the bound of 5 tokens per rank") &&
                        Catch::Contains("no token is dropped"));
    }
  }
  SECTION("the fixed-capacity dispatcher needs a bound") {
    auto errors = rbt_test::on_two_ranks([&](int, dist::ProcessGroup& pg) {
      torch_model::RoutedExperts m(E, H, F, torch_model::ExpertsImpl::Loop);
      m->shard(std::make_shared<dist::GroupExpertParallel>(pg), {EpDispatch::FixedCapacity, 0});
    });
    for (const auto& e : errors) CHECK_THAT(e, Catch::Contains("needs a token bound per rank"));
  }
}
