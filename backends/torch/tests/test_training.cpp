// Training pieces of the torch backend: learning-rate schedule, mixed-precision Adam against an FP64 reference,
// the rows sources, and a real run in which the loss falls.
#include <torch/types.h>
#include <torch/utils.h>
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>

#include "backend/backend.h"
#include "backend/capabilities.h"
#include "catalog/models.h"
#include "data/packing.h"
#include "data/rows.h"
#include "dist/parallel_groups.h"
#include "dist/process_group.h"
#include "model/moe.h"
#include "optim/adam.h"
#include "optim/lr_schedule.h"
#include "temp_dir.h"
#include "torch_backend_registration.h"
#include "two_ranks.h"
#include "resolved_run_util.h"

using namespace recipebench;

TEST_CASE("learning rate: linear warm-up then cosine decay to min_lr", "[train][lr]") {
  RecipeOptimizer o;
  o.lr = 1e-3;
  o.min_lr = 1e-4;
  o.lr_warmup_fraction = 0.1;  // 2 of 20 steps
  CHECK(train::learning_rate(o, 0, 20) == Approx(0.5e-3));
  CHECK(train::learning_rate(o, 1, 20) == Approx(1e-3));
  CHECK(train::learning_rate(o, 2, 20) == Approx(1e-3));   // decay starts at the peak
  CHECK(train::learning_rate(o, 19, 20) == Approx(1e-4));  // ends at min_lr
  // Halfway through the decay (step 2 + 17/2): cosine is at the midpoint of lr and min_lr.
  const double mid = 0.5 * (1e-3 + 1e-4);
  CHECK(train::learning_rate(o, 10, 20) == Approx(1e-4 + 0.9e-3 * 0.5 * (1 + std::cos(M_PI * 8.0 / 17.0))));
  CHECK(train::learning_rate(o, 10, 20) < mid + 1e-4);
  o.lr_decay_style = LrDecay::kConstant;
  CHECK(train::learning_rate(o, 15, 20) == Approx(1e-3));
}

namespace {

/// One AdamW step in float64 on the host: the reference of docs/correctness.md's component test.
std::vector<double> reference_adam(const std::vector<double>& w, const std::vector<double>& g, const RecipeOptimizer& o,
                                   double lr, bool decay) {
  std::vector<double> out(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    const double m = (1 - o.adam_beta1) * g[i], v = (1 - o.adam_beta2) * g[i] * g[i];
    const double mhat = m / (1 - o.adam_beta1), vhat = v / (1 - o.adam_beta2);
    out[i] = w[i] * (decay ? 1 - lr * o.weight_decay : 1.0) - lr * mhat / (std::sqrt(vhat) + o.adam_eps);
  }
  return out;
}

double relative_l2(const std::vector<double>& a, const std::vector<double>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return std::sqrt(num / den);
}

std::vector<double> to_vec(const torch::Tensor& t) {
  auto c = t.to(torch::kFloat64).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

}  // namespace

TEST_CASE("mixed-precision Adam matches an FP64 reference and a BF16-only update does not", "[train][adam]") {
  torch::manual_seed(7);
  RecipeOptimizer o;  // the seed's settings: betas 0.9 / 0.98, wd 0.1
  const double lr = 1e-5;
  // Weights at the model's initial scale (std 0.02): an FP32 master resolves a 1e-5 update of such a weight to
  // ~1e-4 relative, BF16 (resolution ~1e-4 at 0.02) not at all. With O(1) weights even FP32 cannot reach 1e-3.
  auto w32 = torch::randn({64, 128}) * 0.02;
  auto g = torch::randn({64, 128}) * 1e-2;
  // BF16 parameter + FP32 master: the master's update (~lr, far below bf16's resolution of the weights) must match
  // the reference's update to a relative L2 error <= 1e-3 (docs/correctness.md).
  auto p = w32.to(torch::kBFloat16).set_requires_grad(true);
  const auto w_old = to_vec(p.detach());  // the master starts from the bf16 value
  std::vector<double> w_ref_from_bf16 = reference_adam(w_old, to_vec(g), o, lr, true);
  train::MixedPrecisionAdam adam({p}, o);
  p.mutable_grad() = g.clone();  // an fp32 gradient, as the FP32 accumulation would hold it
  adam.accumulate_grads();
  adam.step(lr);
  std::vector<double> du(w_old.size()), du_ref(w_old.size());
  const auto w_new = to_vec(adam.master()[0]);
  for (size_t i = 0; i < du.size(); ++i) {
    du[i] = w_new[i] - w_old[i];
    du_ref[i] = w_ref_from_bf16[i] - w_old[i];
  }
  CHECK(relative_l2(du, du_ref) < 1e-3);

  // Negative control: applying the same update directly to BF16 weights loses it to rounding.
  torch::Tensor bf = w32.to(torch::kBFloat16);
  std::vector<double> bf_new = to_vec(bf);
  for (size_t i = 0; i < bf_new.size(); ++i) bf_new[i] += du_ref[i];
  const auto rounded = to_vec(torch::tensor(std::vector<double>(bf_new)).to(torch::kBFloat16));
  std::vector<double> du_bf(w_old.size());
  for (size_t i = 0; i < du_bf.size(); ++i) du_bf[i] = rounded[i] - w_old[i];
  CHECK(relative_l2(du_bf, du_ref) > 1e-3);
}

TEST_CASE("gradient norm and clipping", "[train][adam]") {
  auto p = torch::zeros({3}).set_requires_grad(true);
  RecipeOptimizer o;
  o.clip_grad = 1.0;
  train::MixedPrecisionAdam adam({p}, o);
  p.mutable_grad() = torch::tensor({3.0f, 4.0f, 0.0f});
  adam.accumulate_grads();
  p.mutable_grad() = torch::tensor({3.0f, 4.0f, 0.0f});
  adam.accumulate_grads();  // two microbatches accumulate: (6, 8, 0)
  CHECK(adam.grad_norm() == Approx(10.0));
  CHECK(adam.clip(10.0) == Approx(0.1).epsilon(1e-5));
  CHECK(adam.grad_norm() == Approx(1.0).epsilon(1e-5));
}

TEST_CASE("a step's gradients: the first microbatch's overwrite the last step's, a parameter without one is zero",
          "[train][adam]") {
  auto a = torch::zeros({2}).set_requires_grad(true), b = torch::zeros({2}).set_requires_grad(true);
  RecipeOptimizer o;
  train::MixedPrecisionAdam adam({a, b}, o);
  a.mutable_grad() = torch::tensor({3.0f, 4.0f});
  b.mutable_grad() = torch::tensor({12.0f, 0.0f});
  adam.accumulate_grads();
  CHECK(adam.grad_norm() == Approx(13.0));
  adam.step(1e-3);
  adam.zero_grad();  // step 2: only b gets a gradient, in two microbatches
  b.mutable_grad() = torch::tensor({1.0f, 2.0f});
  adam.accumulate_grads();
  b.mutable_grad() = torch::tensor({2.0f, 2.0f});
  adam.accumulate_grads();
  CHECK(adam.grad_norm() == Approx(5.0));  // (3, 4) from b; a's accumulator zero, not step 1's (3, 4)
  const auto before = adam.master()[0].clone();
  adam.step(1e-3);
  // a moves by its moments alone (g = 0): m = 0.9 m, v = 0.999 v, and by weight decay only if a matrix (it is not)
  CHECK_FALSE(torch::equal(adam.master()[0], before));
}

TEST_CASE("synthetic rows: exact supervised ratio, deterministic, learnable structure", "[train][rows]") {
  train::SyntheticRows a(512, 128, 0.676, 42), b(512, 128, 0.676, 42);
  const train::Rows ra = a.next(4), rb = b.next(4);
  CHECK(ra.tokens == rb.tokens);
  CHECK(ra.mask == rb.mask);
  for (int64_t i = 0; i < 4; ++i) {
    int64_t s = 0;
    for (int64_t t = 0; t < 128; ++t) s += ra.mask[i * 128 + t];
    CHECK(s == std::llround(0.676 * 128));  // 87 supervised tokens per row
    CHECK(ra.mask[i * 128] == 0);           // the first token has nothing before it
  }
  // A supervised token is determined by the token before it: the same predecessor gives the same token.
  std::map<int64_t, int64_t> next_of;
  for (int64_t i = 0; i < 4 * 128; ++i)
    if (ra.mask[i]) {
      auto [it, fresh] = next_of.emplace(ra.tokens[i - 1], ra.tokens[i]);
      CHECK(it->second == ra.tokens[i]);
    }
}

TEST_CASE("dynamic batching: first-fit packing within max_tokens_per_gpu, padded tokens counted", "[train][packing]") {
  using train::Microbatch;
  // Full rows: max_tokens / row_tokens rows per microbatch (docs/layout-arithmetic.md's fixed count).
  CHECK(train::pack_first_fit({128, 128, 128, 128, 128, 128}, 256) == std::vector<Microbatch>{{0, 1}, {2, 3}, {4, 5}});
  // Variable lengths, taken in order, each into the first microbatch that still holds it (rows x longest <= 256):
  // 100 -> {0}; 60 -> {0,1} (2 x 100 = 200); 120 -> new {2} (3 x 120 = 360); 30 -> {2,3} (3 x 100 = 300 too many,
  // 2 x 120 = 240); 50 -> new {4}; 10 -> {4,5} (2 x 50 = 100).
  const std::vector<int64_t> lengths{100, 60, 120, 30, 50, 10};
  const auto mbs = train::pack_first_fit(lengths, 256);
  CHECK(mbs == std::vector<Microbatch>{{0, 1}, {2, 3}, {4, 5}});
  for (const auto& mb : mbs) CHECK(train::padded_tokens(mb, lengths) <= 256);
  CHECK(train::padded_tokens({2, 3}, lengths) == 240);
  // Short rows share a microbatch: 8 rows of 30 tokens in 256 (8 x 30 = 240).
  CHECK(train::pack_first_fit(std::vector<int64_t>(8, 30), 256).size() == 1);
  CHECK_THROWS_WITH(train::pack_first_fit({100, 300}, 256), Catch::Contains("row 1 has 300 tokens, expected 1..256"));

  // Splitting to a common count: the microbatch with most rows is halved, order kept.
  std::vector<Microbatch> m{{0, 1, 2, 3, 4}, {5}};
  train::split_to_count(m, 4);
  CHECK(m == std::vector<Microbatch>{{0, 1}, {2}, {3, 4}, {5}});
  CHECK_THROWS(train::split_to_count(m, 3));  // fewer than now
  CHECK_THROWS(train::split_to_count(m, 7));  // more microbatches than rows
}

TEST_CASE("synthetic rows with min_row_tokens: lengths in range, padding carries no loss", "[train][rows][packing]") {
  train::SyntheticRows full(64, 128, 0.5, 7), var(64, 128, 0.5, 7, 40);
  const auto a = full.next(16), b = var.next(16);
  CHECK(a.lengths == std::vector<int64_t>(16, 128));
  bool some_short = false;
  for (int64_t i = 0; i < 16; ++i) {
    const int64_t len = b.lengths[i];
    CHECK(len >= 40);
    CHECK(len <= 128);
    some_short = some_short || len < 128;
    for (int64_t t = len; t < 128; ++t) {
      CHECK(b.tokens[i * 128 + t] == 0);
      CHECK(b.mask[i * 128 + t] == 0);
    }
  }
  CHECK(some_short);
  // The first row's content up to its length is the full generator's (lengths are drawn after the content).
  CHECK(std::equal(b.tokens.begin(), b.tokens.begin() + b.lengths[0], a.tokens.begin()));
  CHECK_THROWS_WITH(train::SyntheticRows(64, 128, 0.5, 7, 200), Catch::Contains("expected 2..128"));
}

TEST_CASE("rows file: round trip and clear errors", "[train][rows]") {
  namespace fs = std::filesystem;
  const test::TempDir tmp("recipebench-rows");
  const fs::path dir = tmp.path();
  train::SyntheticRows gen(512, 64, 0.5, 1);
  const train::Rows rows = gen.next(3);
  train::write_rows_file((dir / "rows.bin").string(), rows);
  train::FileRows f((dir / "rows.bin").string(), 64, 512);
  CHECK(f.rows() == 3);
  const train::Rows back = f.next(3);
  CHECK(back.tokens == rows.tokens);
  CHECK(back.mask == rows.mask);
  CHECK(f.next(1).tokens == std::vector<int64_t>(rows.tokens.begin(), rows.tokens.begin() + 64));  // wraps around
  CHECK_THROWS_WITH(train::FileRows((dir / "rows.bin").string(), 128, 512),
                    Catch::Contains("rows of 64 tokens, expected 128 (workload.row_tokens)"));
  CHECK_THROWS_WITH(train::FileRows((dir / "rows.bin").string(), 64, 100), Catch::Contains("expected 0..99"));
  fs::resize_file(dir / "rows.bin", fs::file_size(dir / "rows.bin") - 1);
  CHECK_THROWS_WITH(train::FileRows((dir / "rows.bin").string(), 64, 512), Catch::Contains("bytes, expected"));
  std::ofstream(dir / "junk.bin") << "not rows at all, just text";
  CHECK_THROWS_WITH(train::FileRows((dir / "junk.bin").string(), 64, 512), Catch::Contains("RBROWS01"));
}

TEST_CASE("rows file: a header declaring 2^57 rows is refused by size, without overflow", "[train][rows]") {
  // Field case run-report #6: RBROWS01, rows of 128 tokens, 2^57 rows: 2^57 x 128 x 5 wraps 64 bits.
  namespace fs = std::filesystem;
  const test::TempDir tmp("recipebench-rows-huge");
  const std::string path = (fs::path(tmp.path()) / "r.bin").string();
  auto write = [&](size_t body_rows) {
    std::string h("RBROWS01", 8);
    const uint32_t row_tokens = 128;
    const uint64_t rows = uint64_t{1} << 57;
    h.append(reinterpret_cast<const char*>(&row_tokens), 4);
    h.append(reinterpret_cast<const char*>(&rows), 8);
    h.append(body_rows * 128 * 5, '\0');
    std::ofstream(path, std::ios::binary) << h;
  };
  write(0);
  CHECK_THROWS_WITH(train::FileRows(path, 128, 512),
                    path +
                        ": size does not match the header: 20 bytes, expected more than 2^64 for 144115188075855872 "
                        "rows of 128 tokens (20 + rows x 128 x 5 bytes)");
  write(1);  // one real row: 660 bytes
  CHECK_THROWS_WITH(train::FileRows(path, 128, 512), Catch::Contains("660 bytes, expected more than 2^64"));
}

namespace {
/// A one-rank CPU recipe of the tiny model: `rows` rows of `row_tokens` per step, `max_tokens` per microbatch.
Recipe tiny_cpu_recipe(int64_t row_tokens, int64_t rows, int64_t max_tokens) {
  Recipe r;
  r.model = "Qwen3.5-tiny";
  r.gpu.type = "CPU";
  r.gpu.count = 1;
  r.workload.row_tokens = row_tokens;
  r.workload.global_batch = rows;
  r.workload.precision = "fp32";
  r.layout.label = "TP1";
  r.layout.max_tokens_per_gpu = max_tokens;
  return r;
}
}  // namespace

TEST_CASE("the torch backend trains the tiny model: 20 steps, the loss falls", "[train][backend]") {
  register_torch_backend();
  auto backend = make_backend("torch");
  REQUIRE(backend);
  Recipe r = tiny_cpu_recipe(64, 8, 256);  // 4 rows per microbatch, 2 microbatches
  r.optimizer.lr = 3e-3;
  r.optimizer.min_lr = 3e-4;
  RunOptions o;
  o.settings.steps = 20;
  o.settings.seed = 3;
  const BackendEnvironment env = backend->environment(test::resolved(r, o));
  CHECK(env.device_count == 1);
  std::vector<StepSample> samples;
  backend->run(test::resolved(r, o), [&](const StepSample& s) { samples.push_back(s); });
  REQUIRE(samples.size() == 20);
  for (const auto& s : samples) {
    CHECK(s.tokens == 8 * 64);
    CHECK(s.seconds > 0);
    CHECK(std::isfinite(s.loss));
  }
  CHECK(samples[0].loss == Approx(std::log(512.0)).epsilon(0.05));  // random init: ~ln(vocab)
  CHECK(samples.back().loss < samples[0].loss - 0.5);               // it learns the permutation
  // A layout of more than one rank is refused with the arithmetic.
  r.layout.dp = 2;
  CHECK_THROWS_WITH(backend->environment(test::resolved(r, o)), Catch::Contains("needs 2 ranks"));
}

TEST_CASE("a loss that turns NaN stops the run at that step and says so", "[train][backend]") {
  register_torch_backend();
  auto backend = make_backend("torch");
  Recipe r = tiny_cpu_recipe(32, 2, 64);
  r.optimizer.lr = 1e30;  // every Adam update moves each weight by ~1e30: the logits overflow
  r.optimizer.min_lr = 1e30;
  r.optimizer.lr_warmup_fraction = 0;
  RunOptions o;
  o.settings.steps = 10;
  int ran = 0;
  try {
    backend->run(test::resolved(r, o), [&](const StepSample&) { ++ran; });
    FAIL("the run did not stop");
  } catch (const RunError& e) {
    CHECK(e.step() >= 1);
    CHECK(e.step() == ran);  // the failing step is not reported as a sample
    CHECK_THAT(e.what(), Catch::Contains("the run stops here"));
  }
}

namespace {
/// The per-step losses of a 5-step run of `r` and its final parameters (float32, RunHooks::dump_params_path).
std::pair<std::vector<double>, std::vector<float>> losses_and_params(const Recipe& r, const std::string& dump) {
  auto backend = make_backend("torch");
  RunOptions o;
  o.settings.steps = 5;
  o.settings.seed = 17;
  o.hooks.dump_params_path = dump;
  backend->environment(test::resolved(r, o));
  std::vector<double> losses;
  backend->run(test::resolved(r, o), [&](const StepSample& s) { losses.push_back(s.loss); });
  std::ifstream in(dump, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<float> params(bytes.size() / sizeof(float));
  std::memcpy(params.data(), bytes.data(), params.size() * sizeof(float));
  return {losses, params};
}
}  // namespace

TEST_CASE("recompute from the recipe: full recompute trains exactly as no recompute, selective is refused",
          "[train][backend][recompute]") {
  register_torch_backend();
  const test::TempDir tmp("recipebench-recompute");
  Recipe r = tiny_cpu_recipe(64, 4, 128);  // 2 rows per microbatch, 2 microbatches
  r.optimizer.lr = 3e-3;
  const auto [loss0, params0] = losses_and_params(r, tmp.path() + "/none.bin");
  REQUIRE(loss0.size() == 5);
  REQUIRE(!params0.empty());
  CHECK(loss0[4] < loss0[0]);  // the run trained
  struct Case {
    const char* method;
    int num_layers;
  };
  for (const Case c : {Case{"uniform", 1}, Case{"uniform", 2}, Case{"block", 1}}) {
    DYNAMIC_SECTION("full, " << c.method << ", num_layers " << c.num_layers) {
      r.layout.recompute = {"full", c.method, c.num_layers};
      const auto [loss1, params1] = losses_and_params(r, tmp.path() + "/full.bin");
      REQUIRE(loss1.size() == 5);
      for (size_t s = 0; s < 5; ++s) {
        INFO("step " << s << ": " << loss0[s] << " vs " << loss1[s]);
        CHECK(std::abs(loss1[s] - loss0[s]) / std::abs(loss0[s]) < 1e-5);
      }
      REQUIRE(params1.size() == params0.size());
      double diff = 0, norm = 0;
      for (size_t i = 0; i < params0.size(); ++i) {
        diff += std::pow(double(params1[i]) - params0[i], 2);
        norm += std::pow(double(params0[i]), 2);
      }
      CHECK(std::sqrt(diff / norm) < 1e-5);
    }
  }
  SECTION("selective is not implemented yet: the capability table refuses it at admission") {
    r.layout.recompute = {"selective", "", 0};
    const Diagnostics d =
        check_capabilities("torch", torch_backend_capabilities(), r, SourceDoc{}, Device::kCpu, DataSource::kSynthetic);
    REQUIRE(d.size() == 1);
    CHECK(d[0].path == "layout.recompute.granularity");
    CHECK(d[0].found == "selective");
    CHECK(d[0].expected == "full or none (what the torch backend runs)");
  }
}


TEST_CASE("EP2 alltoall dispatcher: forward and backward equal the unsharded experts, and a rank with no tokens works",
          "[train][ep]") {
  torch::manual_seed(7);
  const int64_t E = 4, H = 8, F = 16, N = 5, K = 2;
  torch_model::RoutedExperts ref(E, H, F, torch_model::ExpertsImpl::Loop);
  std::vector<torch::Tensor> x, w, g, idx;
  for (int r = 0; r < 2; ++r) {
    x.push_back(torch::randn({N, H}));
    w.push_back(torch::softmax(torch::randn({N, K}), -1));
    g.push_back(torch::randn({N, H}));
    // Every token picks experts 0 and 1 (rank 0's): rank 1 receives no rows.
    idx.push_back(torch::stack({torch::zeros({N}, torch::kInt64), torch::ones({N}, torch::kInt64)}, 1));
  }
  // Reference: both ranks' tokens through the one-rank experts.
  std::vector<torch::Tensor> ref_out, ref_gx;
  for (int r = 0; r < 2; ++r) {
    auto xr = x[r].clone().requires_grad_(true);
    auto out = ref(xr, idx[r], w[r]);
    (out * g[r]).sum().backward();
    ref_out.push_back(out.detach());
    ref_gx.push_back(xr.grad());
  }
  std::vector<torch::Tensor> out(2), gx(2), g_gate_up(2), g_down(2);
  const std::vector<std::string> errors = rbt_test::on_two_ranks([&](int r, dist::ProcessGroup& pg) {
    torch_model::RoutedExperts m(E, H, F, torch_model::ExpertsImpl::Loop);
    {
      torch::NoGradGuard ng;
      m->gate_up_proj.copy_(ref->gate_up_proj);
      m->down_proj.copy_(ref->down_proj);
    }
    m->shard(std::make_shared<dist::GroupExpertParallel>(pg));
    auto xr = x[r].clone().requires_grad_(true);
    auto o = m(xr, idx[r], w[r]);
    (o * g[r]).sum().backward();
    out[r] = o.detach();
    gx[r] = xr.grad();
    g_gate_up[r] = m->gate_up_proj.grad();
    g_down[r] = m->down_proj.grad();
  });
  INFO(errors[0] << errors[1]);
  REQUIRE(errors[0].empty());
  REQUIRE(errors[1].empty());
  for (int r = 0; r < 2; ++r) {
    CHECK(torch::allclose(out[r], ref_out[r], 1e-5, 1e-6));
    CHECK(torch::allclose(gx[r], ref_gx[r], 1e-5, 1e-6));
  }
  // Rank 0 holds experts 0, 1 with the gradients of both ranks' tokens; rank 1's experts got no tokens.
  REQUIRE(g_gate_up[0].defined());
  CHECK(torch::allclose(g_gate_up[0], ref->gate_up_proj.grad().narrow(0, 0, 2), 1e-5, 1e-6));
  CHECK(torch::allclose(g_down[0], ref->down_proj.grad().narrow(0, 0, 2), 1e-5, 1e-6));
  CHECK((!g_gate_up[1].defined() || g_gate_up[1].abs().max().item<float>() == 0));
}
