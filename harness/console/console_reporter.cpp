#include "console/console_reporter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "console/emulation_table.h"
#include "console/phase_profile.h"
#include "console/profile_table.h"
#include "util/format.h"

namespace recipebench {

std::string depth_label(int64_t run_layers, int64_t full_layers) {
  // docs/metrics.md, "Models outside the registry": a model known by its stated counts only.
  if (full_layers == 0) return "layers not known: stated counts";
  if (run_layers <= full_layers) return fmt::format("{} of {} layers", run_layers, full_layers);
  return fmt::format("{} layers; the model has {}", run_layers, full_layers);
}

void ConsoleReporter::message(const std::string& line) {
  fmt::print(err_, "{}\n", line);
  std::fflush(err_);
}

void ConsoleReporter::dry_run(const std::string& text) {
  fmt::print(out_, "{}", text);
  std::fflush(out_);
}

void ConsoleReporter::start(const RunRecord& r) {
  const RunSettings& o = r.options.settings;
  const char* command = r.options.command.import_log.empty() ? "run" : "import";
  fmt::print(out_, "recipebench {}: {}\n  model {} ({}), backend {}, device {}, {} steps, window {}..{}\n", command,
             r.recipe_path, r.model_name, depth_label(r.model_layers, r.model_layers_full), o.backend,
             to_string(o.device), o.steps, o.window.first, o.window.last);
  if (o.emulate_rank)
    fmt::print(out_, "  emulating rank {} of {} alone: its collectives stood in (docs/emulation.md)\n", *o.emulate_rank,
               r.options.place.world);
  header_shown_ = false;
  std::fflush(out_);
}

namespace {
/// "0.52 0.51 GB" for up to 8 ranks, else "max 0.52 GB (rank 3), min 0.50 GB".
std::string per_rank_gb(const std::vector<int64_t>& bytes) {
  if (bytes.empty()) return "?";
  if (bytes.size() <= 8) {
    std::string s;
    for (const int64_t b : bytes) s += fmt::format("{}{:.2f}", s.empty() ? "" : " ", b / 1e9);
    return s + " GB";
  }
  const auto hi = std::max_element(bytes.begin(), bytes.end());
  const auto lo = std::min_element(bytes.begin(), bytes.end());
  return fmt::format("max {:.2f} GB (rank {}), min {:.2f} GB", *hi / 1e9, hi - bytes.begin(), *lo / 1e9);
}
/// For a run read from a log: what the stack printed itself over the window (the record's log.printed), beside
/// recipebench's 6N figure, which counts other FLOPs (docs/metrics.md, "MFU conventions"); "" when it printed none.
std::string printed_figures_line(const RunRecord& r) {
  const Json& p = r.log.is_object() && r.log.contains("printed") ? r.log["printed"] : Json();
  if (!p.is_object()) return "";
  std::string parts;
  if (p.contains("mfu") && p["mfu"].is_number()) parts += fmt::format("MFU {:.1f}%", 100 * p["mfu"].get<double>());
  if (p.contains("tflops_per_gpu") && p["tflops_per_gpu"].is_number())
    parts += fmt::format("{}{:.1f} TFLOP/s/GPU", parts.empty() ? "" : ", ", p["tflops_per_gpu"].get<double>());
  if (parts.empty()) return "";
  return "  the log's own figures over the window: " + parts +
         " (the stack's FLOP count, attention included where it counts it; recipebench's MFU is 6N: docs/metrics.md, "
         "\"MFU conventions\")\n";
}

}  // namespace

void ConsoleReporter::model_built(const ModelBuild& b) {
  fmt::print(out_, "  model built in {:.2f} s; host peak RSS while building, per rank: {} (before: {})\n", b.seconds,
             per_rank_gb(b.host_peak_rss_bytes), per_rank_gb(b.host_rss_before_bytes));
  std::fflush(out_);
}

void ConsoleReporter::step(const StepSample& s, const RunRecord& r, int devices) {
  const RunSettings& o = r.options.settings;
  if (!header_shown_)
    fmt::print(out_, "{:>6} {:>10} {:>10} {:>12} {:>10} {:>12}\n", "step", "time (s)", "loss", "tokens/s", "grad norm",
               "peak mem");
  header_shown_ = true;
  const bool timed = s.step >= o.window.first && s.step <= o.window.last;
  // An emulated rank's step is one rank's compute: no tokens/s of the layout; no loss off a last stage.
  const std::string loss = std::isnan(s.loss) ? "-" : fmt::format("{:.4f}", s.loss);
  const std::string rate = o.emulate_rank ? "-" : fixed(s.tokens / s.seconds / devices, 0);
  // 0 bytes: not measured (a CPU run, a log that prints no memory figure).
  const std::string peak = s.peak_memory_bytes > 0 ? fmt::format("{:10.2f} GB", s.peak_memory_bytes / 1e9) : "-";
  fmt::print(out_, "{:>3}/{:<3} {:9.3f} {:>10} {:>12} {:10.3f} {:>13}{}\n", s.step, o.steps, s.seconds, loss, rate,
             s.grad_norm, peak, timed ? "" : "  (not timed)");
  std::fflush(out_);
}

void ConsoleReporter::finish(const RunRecord& r, const std::string& record_path, bool failure_shown) {
  if (r.status == RunStatus::kEmulated) {
    fmt::print(out_, "{}", format_emulation(r));
    if (r.options.settings.profile) fmt::print(out_, "{}", format_profile_table(r));
    fmt::print(out_, "run record (status emulated, never ranked): {}\n", record_path);
    std::fflush(out_);
    return;
  }
  if (!r.complete() || !r.metrics) {
    const std::string why = r.error ? r.error->message : std::string();
    // An import's failure is its log's (too few steps, unreadable lines): said at the log's file, as every other
    // error of an input is (docs/fuzzing.md, "Surfaces").
    const std::string& log = r.options.command.import_log;
    if (!failure_shown && !log.empty()) fmt::print(err_, "{}: error: {}\n", log, why);
    if (!failure_shown && log.empty()) fmt::print(err_, "recipebench run: failed: {}\n", why);
    fmt::print(err_, "  run record (status failed): {}\n", record_path);
    std::fflush(err_);
    return;
  }
  const RunMetrics& m = *r.metrics;
  fmt::print(out_, "window {}..{}: {} tokens/s/GPU, step-time CV {:.2f}%, mean step {:.3f} s", m.window.window.first,
             m.window.window.last, fixed(m.window.tokens_per_s_per_gpu, 1), m.window.step_time_cv_percent,
             m.window.mean_step_seconds);
  if (m.mfu) fmt::print(out_, ", MFU {:.1f}% (6N)", 100 * *m.mfu);
  if (m.usd_per_million_tokens) fmt::print(out_, ", ${:.2f} / 1M tokens", *m.usd_per_million_tokens);
  if (m.peak_memory_bytes) fmt::print(out_, ", peak memory {:.1f} GB", m.peak_memory_bytes / 1e9);
  if (r.log.is_null())  // steps recipebench timed; a log's steps carry no loop of recipebench's
    fmt::print(out_, ", harness overhead {:.3f}% of step time", 100 * m.harness_overhead_fraction);
  fmt::print(out_, "\n{}", printed_figures_line(r));
  if (r.options.settings.profile) fmt::print(out_, "{}", format_profile_table(r));
  fmt::print(out_, "{}", format_phase_line(r));
  fmt::print(out_, "run record: {}\n", record_path);
  std::fflush(out_);
}

}  // namespace recipebench
