// bench.overlap_grad_reduce inside the distributed optimizer (optim/distributed_adam.h) on two ranks run as threads
// over c10d Gloo: the hooks launch every bucket's reduce-scatter during the last microbatch's backward pass (none
// during the earlier ones), and the update equals the one without overlap bit for bit (two ranks: every sum is a + b,
// whatever the bucket; clipping off, so the norm's order of summation does not enter the update). And
// bench.overlap_param_gather: the all-gathers deferred into the next step's forward passes (optim/param_gather.h)
// leave the parameters at their old values until each module's wait, and end with the same parameters.
#include <torch/types.h>
#include <torch/utils.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/activation.h>
#include <catch2/catch.hpp>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "dist/process_group.h"
#include "launch/launch.h"
#include "optim/distributed_adam.h"
#include "optim/grad_sync_order.h"
#include "optim/param_gather.h"
#include "two_ranks.h"

using namespace recipebench;

namespace {

/// A three-layer MLP 8 -> 16 -> 16 -> 4 with biases (parameters of 128, 16, 256, 16, 64, 4 elements), the same
/// initial values on every rank and every call: set from a formula, not from torch's global generator, which the two
/// rank threads share.
torch::nn::Sequential make_mlp() {
  torch::nn::Sequential m(torch::nn::Linear(8, 16), torch::nn::Tanh(), torch::nn::Linear(16, 16), torch::nn::Tanh(),
                          torch::nn::Linear(16, 4));
  torch::NoGradGuard no_grad;
  double k = 1;
  for (auto& p : m->parameters()) {
    p.copy_((torch::sin(torch::arange(p.numel(), torch::kFloat32) * 0.37 * k) * 0.3).reshape(p.sizes()));
    k += 1;
  }
  return m;
}

/// Rank r's microbatch m of step s: [6, 8] inputs, from a formula (as make_mlp).
torch::Tensor batch(int r, int s, int m) {
  return torch::cos(torch::arange(48, torch::kFloat32) * 0.1 * (1 + 100 * s + 10 * m + r)).reshape({6, 8});
}

}  // namespace

/// What one rank saw.
struct RankSeen {
  size_t buckets_plain = 0, buckets_overlapped = 0;
  std::vector<size_t> launched_after_backward;  ///< per microbatch of every step
  std::vector<double> norm_plain, norm_overlapped;
  bool same_parameters = false;
};

TEST_CASE("overlapped bucket reduce-scatters launch during the last backward pass and give the same update",
          "[train][overlap]") {
  RecipeOptimizer o;
  o.lr = 1e-2;
  o.clip_grad = 0;
  std::vector<RankSeen> seen(2);
  const auto errors = rbt_test::on_two_ranks(
      [&](int r, dist::ProcessGroup& pg) {
        RankSeen& me = seen[static_cast<size_t>(r)];
        auto plain = make_mlp(), overlapped = make_mlp();
        auto grad_group = pg.subgroup("grad-test", {0, 1});
        auto order = std::make_shared<train::GradSyncOrder>();
        train::GradReduceOverlap ov;
        ov.group = grad_group.get();
        ov.bucket_elements = 50;  // buckets {b2, w2} (68 elements), {b1, w1} (272), {b0, w0} (144)
        ov.order = order;
        train::DistributedAdam a(plain->parameters(), o, pg), b(overlapped->parameters(), o, pg, {}, ov);
        me.buckets_plain = a.layout().buckets.size();
        me.buckets_overlapped = b.layout().buckets.size();
        for (int s = 0; s < 3; ++s) {
          a.zero_grad();
          b.zero_grad();
          for (int m = 0; m < 2; ++m) {
            const auto x = batch(r, s, m);
            plain->forward(x).pow(2).sum().backward();
            a.accumulate_grads();
            if (m == 1) b.begin_last_backward(0);
            overlapped->forward(x).pow(2).sum().backward();
            me.launched_after_backward.push_back(order->launched());  // before accumulate_grads: the hooks' doing
            b.accumulate_grads();
          }
          me.norm_plain.push_back(a.grad_norm());
          me.norm_overlapped.push_back(b.grad_norm());
          a.step(o.lr);
          b.step(o.lr);
        }
        const auto pa = plain->parameters(), pb = overlapped->parameters();
        me.same_parameters = true;
        for (size_t i = 0; i < pa.size(); ++i) me.same_parameters = me.same_parameters && torch::equal(pa[i], pb[i]);
        grad_group->finish();
      },
      /*finish=*/true);
  REQUIRE(errors == std::vector<std::string>{"", ""});
  for (const auto& me : seen) {
    CHECK(me.buckets_plain == 1);
    CHECK(me.buckets_overlapped == 3);
    // Per step: no bucket after the first microbatch's backward pass, all three after the last one's.
    CHECK(me.launched_after_backward == std::vector<size_t>{0, 3, 0, 3, 0, 3});
    REQUIRE(me.norm_plain.size() == 3);
    for (size_t s = 0; s < 3; ++s) CHECK(std::abs(me.norm_plain[s] - me.norm_overlapped[s]) <= 1e-6 * me.norm_plain[s]);
    CHECK(me.norm_plain[0] > 0);
    CHECK(me.same_parameters);
  }
}

namespace {

/// Whether every parameter of `a` equals (bitwise) its counterpart in `b`, over the indices [first, last).
bool equal_params(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b, size_t first, size_t last) {
  bool same = true;
  for (size_t i = first; i < last; ++i) same = same && torch::equal(a[i], b[i]);
  return same;
}

/// What one rank saw of the deferred gathers.
struct GatherSeen {
  std::vector<size_t> launched_at_start;  ///< per step: gathers launched once the step started
  std::vector<char> stale_after_step;     ///< per step: the deferred model still had the step's old parameters
  std::vector<char> first_layer_only;     ///< per step > 0: after the first layer's wait, its parameters were
                                          ///< updated and the last layer's not yet
  size_t outstanding_after_last = 0;      ///< gathers pending after the last step, before finish_param_gather()
  bool same_parameters = false;
};

}  // namespace

TEST_CASE(
    "deferred parameter all-gathers: the update reaches each layer at its wait, the last one at the finish, "
    "the parameters are the ones gathered at the step's end",
    "[train][overlap][param_gather]") {
  RecipeOptimizer o;
  o.lr = 1e-2;
  o.clip_grad = 0;
  std::vector<GatherSeen> seen(2);
  const auto errors = rbt_test::on_two_ranks(
      [&](int r, dist::ProcessGroup& pg) {
        GatherSeen& me = seen[static_cast<size_t>(r)];
        auto plain = make_mlp(), deferred = make_mlp();
        auto grad_group = pg.subgroup("grad-gather-test", {0, 1});
        train::GradReduceOverlap ov;  // three buckets: {b2, w2} (key 4), {b1, w1} (key 2), {b0, w0} (key 0)
        ov.group = grad_group.get();
        ov.bucket_elements = 50;
        ov.order = std::make_shared<train::GradSyncOrder>();
        auto gathers = std::make_shared<train::ParamGatherOrder>();
        train::DistributedAdam a(plain->parameters(), o, pg), b(deferred->parameters(), o, pg, {}, ov, {gathers, {}});
        const auto pa = plain->parameters(), pb = deferred->parameters();
        for (int s = 0; s < 3; ++s) {
          a.zero_grad();
          b.zero_grad();
          b.start_param_gather();
          me.launched_at_start.push_back(gathers->launched());
          for (int m = 0; m < 2; ++m) {
            const auto x = batch(r, s, m);
            plain->forward(x).pow(2).sum().backward();
            a.accumulate_grads();
            // The forward's waits, as a pipeline stage's before each module: Linear k holds parameters 2k, 2k + 1.
            gathers->wait_through(1);
            if (m == 0 && s > 0)
              me.first_layer_only.push_back(equal_params(pa, pb, 0, 2) && !equal_params(pa, pb, 4, 6));
            gathers->wait_through(3);
            gathers->wait_through(5);
            if (m == 1) b.begin_last_backward(0);
            deferred->forward(x).pow(2).sum().backward();
            b.accumulate_grads();
          }
          a.grad_norm();
          b.grad_norm();
          a.step(o.lr);
          b.step(o.lr);
          me.stale_after_step.push_back(!equal_params(pa, pb, 0, pa.size()));
        }
        me.outstanding_after_last = gathers->outstanding();
        b.finish_param_gather();
        me.same_parameters = equal_params(pa, pb, 0, pa.size());
        grad_group->finish();
      },
      /*finish=*/true);
  REQUIRE(errors == std::vector<std::string>{"", ""});
  for (const auto& me : seen) {
    CHECK(me.launched_at_start == std::vector<size_t>{0, 3, 6});  // step 0 has nothing pending
    CHECK(me.stale_after_step == std::vector<char>{1, 1, 1});
    CHECK(me.first_layer_only == std::vector<char>{1, 1});
    CHECK(me.outstanding_after_last == 3);
    CHECK(me.same_parameters);
  }
}
