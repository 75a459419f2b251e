// Metric definitions (docs/metrics.md) against hand-computed values.
#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>

#include "metrics/derive.h"
#include "metrics/metrics.h"

using namespace recipebench;

TEST_CASE("step-time CV uses the sample standard deviation", "[metrics]") {
  // mean 2, deviations -1, 0, 1: sample variance (1 + 0 + 1) / 2 = 1, CV = 100 * 1 / 2 = 50%.
  CHECK(step_time_cv_percent({1.0, 2.0, 3.0}) == Approx(50.0));
  CHECK(step_time_cv_percent({4.0, 4.0, 4.0, 4.0}) == 0.0);
  CHECK_THROWS_AS(step_time_cv_percent({1.0}), std::invalid_argument);
}

TEST_CASE("window metrics take steps w0..w1 inclusive", "[metrics]") {
  // 20 steps: warm-up steps 0..4 are slow and must not count.
  std::vector<double> t(20, 2.0);
  for (int i = 0; i < 5; ++i) t[i] = 100.0;
  t[10] = 3.0;
  std::vector<int64_t> tokens(20, 128 * 8192);
  const WindowMetrics m = window_metrics(t, tokens, StepWindow{5, 19}, 64);
  CHECK(m.window.steps() == 15);
  CHECK(m.tokens == 15728640);
  CHECK(m.seconds == Approx(14 * 2.0 + 3.0));
  CHECK(m.tokens_per_s_per_gpu == Approx(15728640.0 / 31.0 / 64.0));
  const double mean = 31.0 / 15.0;
  double ss = 14 * (2.0 - mean) * (2.0 - mean) + (3.0 - mean) * (3.0 - mean);
  CHECK(m.step_time_cv_percent == Approx(100.0 * std::sqrt(ss / 14.0) / mean));
  CHECK_THROWS_AS(window_metrics(t, tokens, StepWindow{5, 20}, 64), std::invalid_argument);
  CHECK_THROWS_AS(window_metrics(t, std::vector<int64_t>(19, 1), StepWindow{5, 19}, 64), std::invalid_argument);
}

TEST_CASE("MFU, $ per 1M tokens and GPU-hours", "[metrics]") {
  // 6 x 1e9 params x 1000 tokens/s = 6e12 FLOP/s of 1e15 -> 0.6%.
  CHECK(mfu_6n(1e9, 1000.0, 1e15) == Approx(0.006));
  // $3.6 per GPU-hour at 1000 tokens/s/GPU: 3.6e6 tokens per hour -> $1 per 1M tokens.
  CHECK(usd_per_million_tokens(3.6, 1000.0) == Approx(1.0));
  CHECK(gpu_hours(64, 1800.0) == Approx(32.0));
  CHECK_THROWS_AS(usd_per_million_tokens(3.6, 0.0), std::invalid_argument);
  CHECK_THROWS_AS(tokens_per_s_per_gpu(1.0, 0.0, 8), std::invalid_argument);
}

#include "util/format.h"

TEST_CASE("number formatting used by messages and reports", "[format]") {
  CHECK(with_commas(16331407360LL) == "16,331,407,360");
  CHECK(fixed(1232.53, 1) == "1,232.5");
  CHECK(fixed(3.5, 2) == "3.50");
  CHECK(shortest(180.0) == "180");
  CHECK(shortest(0.0537) == "0.0537");
  CHECK(shortest(2.25e15) == "2.25e+15");
  CHECK(printed_decimals("1075.50") == 2);
  CHECK(printed_decimals("3") == 0);
  CHECK(printed_decimals("8.6e-05") == 6);
}

TEST_CASE("derive_figures gives tokens/s/GPU, MFU, $ and GPU-hours from one window", "[metrics][derive]") {
  // proxy-mfu-depth (docs/metrics.md): the 4-layer Qwen3.5-35B-A3B proxy, N = 752,328,704, one H200.
  FigureInputs in;
  in.gpus = 1;
  in.active_params = 752328704;
  in.peak_flops = 989.4e12;
  in.usd_per_gpu_hour = 7.912;  // AWS p5en.48xlarge $63.296 / 8
  in.wall_seconds = 7200;
  // 15 steps x 2 rows x 8,192 tokens = 245,760 tokens in 13.0229... s gives 18,871.26 tokens/s.
  const double seconds = 245760.0 / 18871.26;
  const DerivedFigures f = derive_figures(Throughput::measured(245760.0, seconds), in);
  CHECK(f.tokens_per_s_per_gpu == Approx(18871.26).epsilon(1e-12));
  REQUIRE(f.mfu);
  CHECK(*f.mfu == Approx(6.0 * 752328704 * 18871.26 / 989.4e12).epsilon(1e-12));
  CHECK(std::round(*f.mfu * 1e4) / 1e4 == 0.0861);
  REQUIRE(f.usd_per_million_tokens);
  CHECK(std::round(*f.usd_per_million_tokens * 100) / 100 == 0.12);  // 7.912 / (18871.26 x 3600) x 1e6 = 0.1165
  REQUIRE(f.gpu_hours);
  CHECK(*f.gpu_hours == Approx(2.0));
  // The seed page's B200 row: 1,232.53 tokens/s/GPU at $14.2416/GPU-hour -> $3.21; 48 GPUs for 30 min = 24 GPU-h.
  FigureInputs b200;
  b200.gpus = 48;
  b200.usd_per_gpu_hour = 14.2416;
  b200.wall_seconds = 1800;
  const DerivedFigures g = derive_figures(Throughput::reported(1232.53), b200);
  CHECK(g.tokens_per_s_per_gpu == 1232.53);
  CHECK(std::round(*g.usd_per_million_tokens * 100) / 100 == 3.21);
  CHECK(*g.gpu_hours == Approx(24.0));
  CHECK_FALSE(g.mfu);  // no N / peak given: no MFU
  // The window divides by GPUs: 48 GPUs, 1e6 tokens in 10 s -> 2083.33 tokens/s/GPU.
  CHECK(derive_figures(Throughput::measured(1e6, 10), b200).tokens_per_s_per_gpu == Approx(1e6 / 10 / 48));
}

TEST_CASE("derive_figures refuses inputs that cannot give a figure", "[metrics][derive]") {
  FigureInputs in;
  CHECK_THROWS_AS(derive_figures(Throughput::measured(100, 0), in), std::invalid_argument);
  CHECK_THROWS_AS(derive_figures(Throughput::reported(-5), in), std::invalid_argument);
  CHECK_THROWS_AS(derive_figures(Throughput::reported(NAN), in), std::invalid_argument);
  in.usd_per_gpu_hour = 0;
  CHECK_THROWS_WITH(derive_figures(Throughput::reported(10), in), Catch::Contains("expected a finite number > 0"));
  in.usd_per_gpu_hour = NAN;
  CHECK_THROWS_AS(derive_figures(Throughput::reported(10), in), std::invalid_argument);
  in.usd_per_gpu_hour.reset();
  in.gpus = 0;
  CHECK_THROWS_AS(derive_figures(Throughput::reported(10), in), std::invalid_argument);
}
