// bench.overlap_grad_reduce inside the distributed optimizer (train/distributed_adam.h) on two ranks run as threads
// over c10d Gloo: the hooks launch every bucket's reduce-scatter during the last microbatch's backward pass (none
// during the earlier ones), and the update equals the one without overlap bit for bit (two ranks: every sum is a + b,
// whatever the bucket; clipping off, so the norm's order of summation does not enter the update).
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "dist/process_group.h"
#include "run/launch.h"
#include "train/distributed_adam.h"
#include "train/grad_sync_order.h"
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
