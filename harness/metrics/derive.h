// The derived figures of a run or a recipe, computed in one place (docs/metrics.md): tokens/s/GPU, MFU,
// $ / 1M tokens and GPU-hours. `run`, `report` and `validate` all call derive_figures().
#pragma once

#include <cstdint>
#include <optional>

namespace recipebench {

/// The throughput a figure set starts from: a measured window (tokens and seconds over the timed steps) or
/// a tokens/s/GPU figure already reported (a recipe's result, a run record's metrics).
struct Throughput {
  std::optional<double> window_tokens;         ///< Σ tokens over the window (padding excluded)
  std::optional<double> window_seconds;        ///< Σ step times over the window, s
  std::optional<double> tokens_per_s_per_gpu;  ///< a reported figure (used when there is no window)

  static Throughput measured(double tokens, double seconds) { return Throughput{tokens, seconds, std::nullopt}; }
  static Throughput reported(double tokens_per_s_per_gpu) {
    return Throughput{std::nullopt, std::nullopt, tokens_per_s_per_gpu};
  }
};

/// What the figures are derived with. Unknown inputs stay nullopt and the figures that need them stay nullopt.
struct FigureInputs {
  int gpus = 1;                            ///< GPUs of the run (tokens/s/GPU divides by it; GPU-hours multiply)
  std::optional<int64_t> active_params;    ///< N_active of the model that actually ran (its layers and widths)
  std::optional<double> peak_flops;        ///< peak dense BF16 FLOP/s of one GPU (docs/metrics.md table)
  std::optional<double> usd_per_gpu_hour;  ///< price, $ per GPU-hour
  std::optional<double> wall_seconds;      ///< process launch to finish, s (startup included)
};

/// The derived figures; each is nullopt when an input it needs is unknown.
struct DerivedFigures {
  double tokens_per_s_per_gpu = 0;               ///< tokens/s per GPU
  std::optional<double> mfu;                     ///< fraction (0.0861 = 8.61%)
  std::optional<double> usd_per_million_tokens;  ///< $
  std::optional<double> gpu_hours;               ///< GPU-h
};

/// Derives the figures of docs/metrics.md from a throughput and its inputs:
///   tokens/s/GPU   = window tokens / window seconds / GPUs                     (or the reported figure)
///   MFU            = 6 x N_active x tokens/s/GPU / peak FLOP/s                  (fraction)
///                    6N = forward 2N + backward 4N FLOP per token: Kaplan et al. 2020, arXiv 2001.08361;
///                    PaLM appendix B, arXiv 2204.02311
///   $ / 1M tokens  = $/GPU-hour / (tokens/s/GPU x 3600) x 1e6
///   GPU-hours      = GPUs x wall seconds / 3600
/// Example (docs/metrics.md, proxy-mfu-depth): N = 752,328,704, 18,871.26 tokens/s/GPU on an H200
/// (989.4e12 FLOP/s) gives MFU 0.0861. Throws std::invalid_argument when gpus <= 0, a window's seconds are
/// <= 0, tokens/s/GPU is not > 0 and finite, or a given peak FLOP/s, price, N or wall time is negative or
/// not finite (a zero peak or price is refused too).
DerivedFigures derive_figures(const Throughput& throughput, const FigureInputs& in);

}  // namespace recipebench
