// Tensor parallelism with sequence parallelism (model/tensor_parallel.h) on two ranks run as threads over c10d Gloo:
// the vocab-parallel cross-entropy against the plain one, and the whole tiny model sharded over TP 2 against the
// one-rank model (loss, TP-sharded gradients, replicated gradients after their sum over TP).
#include <torch/types.h>
#include <torch/utils.h>
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "backend/capabilities.h"
#include "catalog/models.h"
#include "dist/parallel_groups.h"
#include "dist/process_group.h"
#include "launch/launch.h"
#include "layout/rank_map.h"
#include "model/qwen35_moe.h"
#include "model/tensor_parallel.h"
#include "torch_backend_registration.h"
#include "two_ranks.h"
#include "resolved_run_util.h"

using namespace recipebench;

namespace {

/// Runs body(rank, tp) on two ranks (threads) of one Gloo group, the group as TensorParallel (two_ranks.h) with
/// bench.overlap_tp_comm `overlap`.
std::vector<std::string> on_two_ranks(const std::function<void(int, torch_model::TensorParallel&)>& body,
                                      bool overlap = false) {
  return rbt_test::on_two_ranks([&](int r, dist::ProcessGroup& pg) {
    dist::GroupTensorParallel tp(pg, overlap);
    body(r, tp);
  });
}

double rel_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kDouble) - b.to(torch::kDouble)).norm().item<double>() /
         std::max(1e-30, b.to(torch::kDouble).norm().item<double>());
}

}  // namespace

TEST_CASE("vocab-parallel cross-entropy over TP 2 equals the plain cross-entropy, loss and logit gradients",
          "[train][tp]") {
  torch::manual_seed(11);
  const int64_t N = 7, V = 12;
  const auto logits = torch::randn({N, V}) * 3;
  const auto targets = torch::randint(0, V, {N}, torch::kInt64);
  const auto g = torch::rand({N});  // the incoming gradient per token (e.g. mask / count)
  auto full = logits.clone().requires_grad_(true);
  const auto ref = -torch::log_softmax(full, -1).gather(-1, targets.unsqueeze(-1)).squeeze(-1);
  (ref * g).sum().backward();
  std::vector<torch::Tensor> nll(2), grad(2);
  const auto errors = on_two_ranks([&](int r, torch_model::TensorParallel& tp) {
    auto local = logits.narrow(1, r * V / 2, V / 2).clone().requires_grad_(true);
    auto out = torch_model::vocab_parallel_cross_entropy(local, targets, r * V / 2, tp);
    (out * g).sum().backward();
    nll[static_cast<size_t>(r)] = out.detach();
    grad[static_cast<size_t>(r)] = local.grad();
  });
  INFO(errors[0] << errors[1]);
  REQUIRE(errors[0].empty());
  REQUIRE(errors[1].empty());
  for (int r = 0; r < 2; ++r) {
    CHECK(rel_diff(nll[r], ref.detach()) < 1e-6);  // both ranks have the whole loss
    CHECK(rel_diff(grad[r], full.grad().narrow(1, r * V / 2, V / 2)) < 1e-6);
  }
}

namespace {

/// What one rank of column_parallel_projections gave: its outputs, its shard's gradient, its weights' gradients.
struct ColumnParallelRank {
  std::vector<torch::Tensor> outputs, weight_grads;
  torch::Tensor x_grad;
};

/// column_parallel_projections over TP 2 of x [B, S, H] (rank r holds positions [r S / 2, (r + 1) S / 2)) with the
/// weights' row halves (rank r: rows [r out / 2, (r + 1) out / 2)), backward with the given output gradients (the
/// same row halves); with or without bench.overlap_tp_comm. The second weight's output gets no gradient when
/// `drop_second_grad` (an output the loss does not use).
std::vector<ColumnParallelRank> column_parallel_on_two_ranks(const torch::Tensor& x,
                                                             const std::vector<torch::Tensor>& weights,
                                                             const std::vector<torch::Tensor>& out_grads, bool overlap,
                                                             bool drop_second_grad) {
  std::vector<ColumnParallelRank> ranks(2);
  const auto errors = on_two_ranks(
      [&](int r, torch_model::TensorParallel& tp) {
        const int64_t s = x.size(1) / 2;
        auto xr = x.narrow(1, r * s, s).clone().requires_grad_(true);
        std::vector<torch::Tensor> w;
        for (const auto& full : weights) {
          const int64_t n = full.size(0) / 2;
          w.push_back(full.narrow(0, r * n, n).clone().requires_grad_(true));
        }
        const auto y = torch_model::column_parallel_projections(xr, w, tp);
        auto loss = torch::zeros({}, x.options());
        for (size_t i = 0; i < y.size(); ++i) {
          if (drop_second_grad && i == 1) continue;
          const int64_t n = out_grads[i].size(-1) / 2;
          loss = loss + (y[i] * out_grads[i].narrow(-1, r * n, n)).sum();
        }
        loss.backward();
        auto& out = ranks[static_cast<size_t>(r)];
        for (size_t i = 0; i < y.size(); ++i) {
          out.outputs.push_back(y[i].detach());
          out.weight_grads.push_back(w[i].grad());
        }
        out.x_grad = xr.grad();
      },
      overlap);
  INFO(errors[0] << errors[1]);
  REQUIRE(errors[0].empty());
  REQUIRE(errors[1].empty());
  return ranks;
}

bool same_bits(const torch::Tensor& a, const torch::Tensor& b) {
  return a.defined() == b.defined() && (!a.defined() || torch::equal(a, b));
}

}  // namespace

TEST_CASE(
    "column-parallel projections over TP 2: the gathered sequence's projections and gradients, the same bits with "
    "and without overlap_tp_comm",
    "[train][tp][overlap_tp]") {
  torch::manual_seed(17);
  const int64_t B = 2, S = 8, H = 6;
  const auto x = torch::randn({B, S, H}, torch::kDouble);
  const std::vector<torch::Tensor> weights = {torch::randn({4, H}, torch::kDouble),
                                              torch::randn({10, H}, torch::kDouble)};
  const std::vector<torch::Tensor> out_grads = {torch::randn({B, S, 4}, torch::kDouble),
                                                torch::randn({B, S, 10}, torch::kDouble)};
  const bool drop = GENERATE(false, true);
  INFO("the second output " << (drop ? "without" : "with") << " a gradient");
  // The one-rank reference: the projections of the whole sequence and their gradients.
  auto xf = x.clone().requires_grad_(true);
  std::vector<torch::Tensor> wf;
  auto loss = torch::zeros({}, x.options());
  for (size_t i = 0; i < weights.size(); ++i) {
    wf.push_back(weights[i].clone().requires_grad_(true));
    const auto y = torch::linear(xf, wf.back());
    if (!(drop && i == 1)) loss = loss + (y * out_grads[i]).sum();
  }
  loss.backward();

  const auto off = column_parallel_on_two_ranks(x, weights, out_grads, false, drop);
  const auto on = column_parallel_on_two_ranks(x, weights, out_grads, true, drop);
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r);
    const auto& a = off[static_cast<size_t>(r)];
    const auto& b = on[static_cast<size_t>(r)];
    CHECK(rel_diff(a.x_grad, xf.grad().narrow(1, r * S / 2, S / 2)) < 1e-12);
    for (size_t i = 0; i < weights.size(); ++i) {
      INFO("weight " << i);
      const int64_t n = weights[i].size(0) / 2;
      // Every rank has the whole sequence's projections by its rows.
      CHECK(rel_diff(a.outputs[i], torch::linear(x, weights[i].narrow(0, r * n, n))) < 1e-12);
      if (drop && i == 1) {
        CHECK_FALSE(a.weight_grads[i].defined());
      } else {
        CHECK(rel_diff(a.weight_grads[i], wf[i].grad().narrow(0, r * n, n)) < 1e-12);
      }
      CHECK(same_bits(a.outputs[i], b.outputs[i]));
      CHECK(same_bits(a.weight_grads[i], b.weight_grads[i]));
    }
    CHECK(same_bits(a.x_grad, b.x_grad));
  }
}

TEST_CASE(
    "a started sequence reduce-scatter, waited for after other work, gives reduce_scatter_sequence's shard and "
    "gradient bit for bit",
    "[train][tp][overlap_tp]") {
  torch::manual_seed(23);
  const int64_t B = 2, S = 8, H = 5;
  // Each rank's partial sums, and the gradient each rank's shard gets.
  const std::vector<torch::Tensor> partial = {torch::randn({B, S, H}, torch::kDouble),
                                              torch::randn({B, S, H}, torch::kDouble)};
  const auto shard_grad = torch::randn({B, S, H}, torch::kDouble);  // rank r: positions [r S / 2, (r + 1) S / 2)
  auto run = [&](bool started) {
    std::vector<torch::Tensor> shard(2), grad(2);
    const auto errors = on_two_ranks([&](int r, torch_model::TensorParallel& tp) {
      auto x = partial[static_cast<size_t>(r)].clone().requires_grad_(true);
      torch::Tensor y;
      if (started) {
        auto in_flight = torch_model::start_reduce_scatter_sequence(x, tp);
        const auto meanwhile = torch::mm(torch::randn({64, 64}), torch::randn({64, 64}));  // independent work
        static_cast<void>(meanwhile);
        y = in_flight.wait();
      } else {
        y = torch_model::reduce_scatter_sequence(x, tp);
      }
      (y * shard_grad.narrow(1, r * S / 2, S / 2)).sum().backward();
      shard[static_cast<size_t>(r)] = y.detach();
      grad[static_cast<size_t>(r)] = x.grad();
    });
    INFO(errors[0] << errors[1]);
    REQUIRE(errors[0].empty());
    REQUIRE(errors[1].empty());
    return std::pair{shard, grad};
  };
  const auto [shard_now, grad_now] = run(false);
  const auto [shard_later, grad_later] = run(true);
  const auto sum = partial[0] + partial[1];
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r);
    CHECK(rel_diff(shard_later[r], sum.narrow(1, r * S / 2, S / 2)) < 1e-15);
    CHECK(rel_diff(grad_later[r], shard_grad) < 1e-15);  // the all-gathered gradient of every position
    CHECK(torch::equal(shard_now[r], shard_later[r]));
    CHECK(torch::equal(grad_now[r], grad_later[r]));
  }
}

namespace {

/// A float64 model of `cfg` with the parameters of `ref`.
torch_model::Qwen35MoeForCausalLM copy_of(const torch_model::Qwen35MoeForCausalLM& ref, const ModelConfig& cfg) {
  torch_model::Qwen35MoeForCausalLM m(cfg);
  m->to(torch::kDouble);
  torch::NoGradGuard no_grad;
  const auto src = ref->parameters();
  const auto dst = m->parameters();
  for (size_t i = 0; i < src.size(); ++i) dst[i].copy_(src[i]);
  return m;
}

/// The replicated parameters' gradients summed over TP (what the backend's optimizer does before its update).
void sum_replicated_grads(torch_model::Qwen35MoeForCausalLMImpl& m, const std::vector<torch_model::TpParam>& sharded,
                          torch_model::TensorParallel& tp) {
  for (const auto& p : m.parameters()) {
    bool is_sharded = false;
    for (const auto& t : sharded)
      if (t.param.is_same(p)) is_sharded = true;
    if (!is_sharded && p.grad().defined()) {
      auto g = p.grad().contiguous();
      tp.all_reduce_sum(g);
      p.mutable_grad() = g;
    }
  }
}

}  // namespace

TEST_CASE(
    "the tiny model over TP 2 with sequence parallel: the one-rank loss, sharded gradients and replicated "
    "gradients summed over TP",
    "[train][tp]") {
  const ModelConfig* cfg = find_model("Qwen3.5-tiny");
  REQUIRE(cfg);
  torch::manual_seed(5);
  // float64, so that the comparison sees the sharding and not float32 rounding (the gradients of A_log and dt_bias
  // are sums with much cancellation: float32 gives relative differences up to ~1e-3 there).
  torch_model::Qwen35MoeForCausalLM ref(*cfg);
  ref->to(torch::kDouble);
  std::vector<torch_model::Qwen35MoeForCausalLM> models = {copy_of(ref, *cfg), copy_of(ref, *cfg)};
  const int64_t B = 2, S = 32;
  const auto ids = torch::randint(0, cfg->vocab_size, {B, S}, torch::kInt64);
  const auto mask = torch::rand({B, S}).gt(0.3);
  const auto ref_loss = ref->sft_loss_sum(ids, mask);
  ref_loss.sum.backward();
  const auto ref_named = ref->named_parameters();

  std::vector<torch::Tensor> loss(2);
  std::vector<std::vector<torch_model::TpParam>> sharded(2);
  std::vector<torch::Tensor> embed_full(2), norm_grad_before_sum(2);
  const auto errors = on_two_ranks([&](int r, torch_model::TensorParallel& tp) {
    auto& m = models[static_cast<size_t>(r)];
    auto holder = std::shared_ptr<torch_model::TensorParallel>(&tp, [](torch_model::TensorParallel*) {});
    sharded[static_cast<size_t>(r)] = torch_model::shard_tensor_parallel(*m, holder);
    const auto s = m->sft_loss_sum(ids, mask);
    s.sum.backward();
    loss[static_cast<size_t>(r)] = s.sum.detach();
    // Negative control: a replicated parameter's gradient before the sum over TP is only this rank's part.
    norm_grad_before_sum[static_cast<size_t>(r)] = m->model->decoder_layers[0]->input_layernorm->weight.grad().clone();
    sum_replicated_grads(*m, sharded[static_cast<size_t>(r)], tp);
    // The sharded embedding gathered back to the one-rank layout.
    const auto& embed_spec = sharded[static_cast<size_t>(r)][0].spec;  // the embedding is sharded first
    embed_full[static_cast<size_t>(r)] =
        torch_model::tp_gather_param(m->model->embed_tokens->weight.detach(), embed_spec, tp);
  });
  INFO(errors[0] << errors[1]);
  REQUIRE(errors[0].empty());
  REQUIRE(errors[1].empty());
  for (int r = 0; r < 2; ++r) {
    CHECK(std::abs(loss[r].item<double>() - ref_loss.sum.item<double>()) / ref_loss.sum.item<double>() < 1e-12);
    CHECK(rel_diff(embed_full[r], ref->model->embed_tokens->weight.detach()) == 0);
    CHECK(rel_diff(norm_grad_before_sum[r], ref->model->decoder_layers[0]->input_layernorm->weight.grad()) > 1e-2);
    const auto named = models[static_cast<size_t>(r)]->named_parameters();
    int sharded_count = 0, replicated_count = 0;
    for (const auto& item : named) {
      const auto& p = item.value();
      const auto& ref_grad = ref_named[item.key()].grad();
      REQUIRE(ref_grad.defined());
      REQUIRE(p.grad().defined());
      const torch_model::TpShardSpec* spec = nullptr;
      for (const auto& t : sharded[static_cast<size_t>(r)])
        if (t.param.is_same(p)) spec = &t.spec;
      const auto expected = spec ? torch_model::tp_local_slice(ref_grad, *spec, r, 2) : ref_grad;
      INFO(item.key() << (spec ? " (TP-sharded)" : " (replicated)") << " rank " << r);
      CHECK(rel_diff(p.grad(), expected) < 1e-9);
      ++(spec ? sharded_count : replicated_count);
    }
    // 4 layers: 3 Gated DeltaNet (8 sharded each), 1 attention (4), 4 shared experts (3), embedding, lm_head.
    CHECK(sharded_count == 3 * 8 + 4 + 4 * 3 + 2);
    CHECK(replicated_count > 0);
  }
}

TEST_CASE("the torch backend refuses the TP layouts it cannot run, with the reason", "[train][tp]") {
  register_torch_backend();
  auto backend = make_backend("torch");
  REQUIRE(backend);
  Recipe r;
  r.model = "Qwen3.5-tiny";
  r.gpu.type = "CPU";
  r.gpu.count = 2;
  r.workload.row_tokens = 64;
  r.workload.global_batch = 4;
  r.workload.precision = "fp32";
  r.layout.label = "TP2";
  r.layout.tp = 2;
  r.layout.etp = 1;
  r.layout.sequence_parallel = true;
  r.layout.max_tokens_per_gpu = 128;
  RunOptions o;
  o.place.world = 2;
  CHECK_NOTHROW(backend->environment(test::resolved(r, o)));
  SECTION("without sequence parallel") {
    r.layout.sequence_parallel = false;
    CHECK_THROWS_WITH(backend->environment(test::resolved(r, o)), Catch::Contains("without sequence parallel"));
  }
  SECTION("a sequence not divisible by TP") {
    r.workload.row_tokens = 63;
    CHECK_THROWS_WITH(backend->environment(test::resolved(r, o)),
                      Catch::Contains("63-token rows, not divisible by TP 2 under sequence parallel"));
  }
  SECTION("ETP absent (= TP): the capability table's, at admission") {
    r.layout.etp.reset();
    const Diagnostics d =
        check_capabilities("torch", torch_backend_capabilities(), r, SourceDoc{}, Device::kCpu, DataSource::kSynthetic);
    REQUIRE(d.size() == 1);
    CHECK(d[0].found == "2 (layout.etp absent: ETP = TP)");
    CHECK(d[0].expected == "1 (what the torch backend runs)");
  }
  SECTION("heads not divisible by TP") {
    r.layout.tp = 8;  // the tiny model has 4 attention heads
    r.gpu.count = 8;
    o.place.world = 8;
    CHECK_THROWS_WITH(backend->environment(test::resolved(r, o)), Catch::Contains("not divisible by TP"));
  }
  SECTION("CP > 1: the capability table's, at admission") {
    r.layout.cp = 2;
    const Diagnostics d =
        check_capabilities("torch", torch_backend_capabilities(), r, SourceDoc{}, Device::kCpu, DataSource::kSynthetic);
    REQUIRE(d.size() == 1);
    CHECK(d[0].path == "layout.cp");
    CHECK(d[0].found == "2");
  }
}

TEST_CASE("the layout's groups from the rank map: TP fastest, TP folded into EP", "[train][tp]") {
  Recipe r;
  r.model = "Qwen3.5-tiny";
  r.gpu.count = 4;
  r.workload.row_tokens = 128;
  r.workload.global_batch = 8;
  r.layout.tp = 2;
  r.layout.dp = 2;
  r.layout.ep = 2;
  r.layout.etp = 1;
  r.layout.max_tokens_per_gpu = 256;
  const RankMap map = build_rank_map(r, *find_model("Qwen3.5-tiny"));
  using V = std::vector<int>;
  using dist::GroupKind;
  CHECK(dist::group_members(map, 1, GroupKind::kTp) == V{0, 1});
  CHECK(dist::group_members(map, 2, GroupKind::kTp) == V{2, 3});
  CHECK(dist::group_members(map, 1, GroupKind::kDp) == V{1, 3});
  CHECK(dist::group_members(map, 1, GroupKind::kEp) == V{0, 1});
  CHECK(dist::group_members(map, 1, GroupKind::kEdp) == V{1, 3});
  r.layout.ep = 4;  // one EP group over TP x DP, EDP 1
  const RankMap map4 = build_rank_map(r, *find_model("Qwen3.5-tiny"));
  CHECK(dist::group_members(map4, 2, GroupKind::kEp) == V{0, 1, 2, 3});
  CHECK(dist::group_members(map4, 2, GroupKind::kEdp) == V{2});
  r.layout.ep = 1;  // every rank holds every expert: EDP over the whole run
  const RankMap map1 = build_rank_map(r, *find_model("Qwen3.5-tiny"));
  CHECK(dist::group_members(map1, 2, GroupKind::kEp) == V{2});
  CHECK(dist::group_members(map1, 2, GroupKind::kEdp) == V{0, 1, 2, 3});
  CHECK(dist::group_members(map, 1, GroupKind::kPp) == V{1});            // PP 1: each rank is its own pipeline
  CHECK_THROWS_AS(dist::parse_group_kind("cp"), std::invalid_argument);  // no CP groups yet
  CHECK(dist::parse_group_kind("edp") == GroupKind::kEdp);
  // With PP 2 on 8 ranks (TP 2 x DP 2 per stage): a pipeline is the ranks with the same (tp, dp), one per stage.
  r.gpu.count = 8;
  r.layout.pp = 2;
  r.layout.ep = 2;
  const RankMap map8 = build_rank_map(r, *find_model("Qwen3.5-tiny"));
  CHECK(dist::group_members(map8, 1, GroupKind::kPp) == V{1, 5});
  CHECK(dist::group_members(map8, 6, GroupKind::kPp) == V{2, 6});
  CHECK(dist::group_members(map8, 5, GroupKind::kEp) == V{4, 5});  // EP within stage 1
  CHECK(dist::group_members(map8, 5, GroupKind::kEdp) == V{5, 7});
}
