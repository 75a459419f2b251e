#include "calibration.h"

#include <cmath>
#include <iostream>

#include <fmt/format.h>

#include "catalog/hardware.h"
#include "commands.h"
#include "option_checks.h"
#include "recipe/run_model.h"
#include "recipe/validate.h"
#include "settings/resolved_run.h"
#include "util/format.h"

namespace recipebench::cli {

namespace {

/// A measured run to calibrate on: its recipe and measured tokens/s/GPU.
struct MeasuredRun {
  std::string file;
  Recipe recipe;
  double measured = 0;
};

bool is_recipe_file(const std::string& file) {
  const auto dot = file.rfind('.');
  const std::string ext = dot == std::string::npos ? "" : file.substr(dot);
  return ext == ".yaml" || ext == ".yml";
}

void refuse(const std::string& file, const std::string& field, const std::string& found, const std::string& expected) {
  std::cerr << file << ": error: " << field << ": " << found << ", expected " << expected << "\n";
}

/// The measured runs of one file; false after printing why it cannot calibrate.
bool measured_runs(const std::string& file, std::vector<MeasuredRun>& out) {
  if (is_recipe_file(file)) {
    ValidatedRecipe v = validate_recipe_file(file);
    for (const auto& d : v.errors) std::cerr << d.to_string() << "\n";
    if (!v.ok()) return false;
    const Recipe& r = *v.recipe;
    if ((r.status != "measured" && r.status != "verified") || !r.result || !(r.result->tokens_per_s_per_gpu > 0)) {
      refuse(file, "status", r.status, "a measured or verified recipe with result.tokens_per_s_per_gpu");
      return false;
    }
    out.push_back({file, r, r.result->tokens_per_s_per_gpu});
    return true;
  }
  std::vector<RunRecordInput> runs;
  if (!add_run_record(file, runs)) return false;
  for (const RunRecordInput& in : runs) {
    if (!in.record.complete() || !in.record.metrics || in.record.options.settings.emulate_rank) {
      refuse(in.file, "status", in.record.complete() ? "an emulated rank or no metrics" : "not complete",
             "a complete run of the whole layout with its metrics");
      return false;
    }
    out.push_back({in.file, recipe_from_json(in.record.recipe, in.file),
                   in.record.metrics->window.tokens_per_s_per_gpu});
  }
  return true;
}

/// Tokens/s/GPU of `run` predicted from `loaded` at stack factor `factor`.
double predicted_tps(const ResolvedRun& run, const LoadedProfiles& loaded, double factor) {
  const Recipe& recipe = *run.recipe;
  const ModelConfig& model = run.model.model;
  const ChunkShape shape = chunk_shapes(*run.map, model, 0, recipe.workload.row_tokens).front();
  PredictSetup setup = prediction_setup(recipe, model, shape, loaded, factor);
  setup.options.settings = run.settings();
  return predict_step(recipe, model, *run.map, setup.costs, setup.network, setup.options).tokens_per_s_per_gpu;
}

/// The stack factor in [0.01, 100] at which the prediction meets `measured` (the prediction falls as the factor
/// grows): bisection on log(factor), 60 halvings.
double solve_factor(const ResolvedRun& run, const LoadedProfiles& loaded, double measured) {
  double lo = std::log(kMinStackFactor), hi = std::log(kMaxStackFactor);
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    (predicted_tps(run, loaded, std::exp(mid)) > measured ? lo : hi) = mid;
  }
  return std::exp((lo + hi) / 2);
}

/// The reason `m` cannot calibrate a prediction of `target` (another GPU type, another model family), "" if none.
std::string mismatch(const MeasuredRun& m, const std::optional<RunModel>& model, const Recipe& target,
                     const ModelConfig& target_model) {
  const GpuSpec* a = find_gpu(m.recipe.gpu.type);
  const GpuSpec* b = find_gpu(target.gpu.type);
  if (a == nullptr || a != b)
    return fmt::format("gpu.type|{}|{} (the target's GPU: a factor measured on another GPU would carry that GPU's "
                       "stack, not the target's)",
                       m.recipe.gpu.type, target.gpu.type);
  if (!model || model->model.family != target_model.family)
    return fmt::format("model|{}|a model of the target's family ({}, {})", m.recipe.model, target_model.name,
                       family_label(target_model));
  return "";
}

}  // namespace

std::optional<Calibration> fit_calibration(const std::vector<std::string>& files, const Recipe& target,
                                           const ModelConfig& target_model, const LoadedProfiles& loaded) {
  std::vector<MeasuredRun> runs;
  bool ok = !files.empty();
  for (const std::string& f : files) ok = measured_runs(f, runs) && ok;
  Calibration c;
  std::vector<ResolvedRun> resolved;
  double log_sum = 0;
  for (const MeasuredRun& m : runs) {
    const std::optional<RunModel> model = run_model(m.recipe);
    const std::string why = mismatch(m, model, target, target_model);
    if (!why.empty()) {
      const auto bar = why.find('|'), bar2 = why.find('|', bar + 1);
      refuse(m.file, why.substr(0, bar), why.substr(bar + 1, bar2 - bar - 1), why.substr(bar2 + 1));
      ok = false;
      continue;
    }
    const ResolvedRun run = resolve_run(m.recipe, merged_options(m.recipe, RecipeBench{}), *model);
    if (!run.map) {
      refuse(m.file, "layout", m.recipe.layout.label, "a layout with a rank map (" + run.map_problem + ")");
      ok = false;
      continue;
    }
    CalibrationPoint p{m.file, m.recipe.layout.label, m.measured, predicted_tps(run, loaded, 1), 1, 0};
    p.factor = solve_factor(run, loaded, m.measured);
    log_sum += std::log(p.factor);
    c.points.push_back(p);
    resolved.push_back(run);
  }
  if (!ok || c.points.empty()) return std::nullopt;
  c.stack_factor = std::exp(log_sum / static_cast<double>(c.points.size()));
  for (size_t i = 0; i < c.points.size(); ++i)
    c.points[i].residual = predicted_tps(resolved[i], loaded, c.stack_factor) / c.points[i].measured - 1;
  return c;
}

std::vector<std::string> calibration_lines(const Calibration& c) {
  std::vector<std::string> out;
  for (const CalibrationPoint& p : c.points)
    out.push_back(fmt::format("calibrated on {} ({}): measured {} tokens/s/GPU, predicted {} uncalibrated: factor "
                              "{:.3f}; {:+.1f}% at the fitted factor",
                              p.file, p.layout, fixed(p.measured, 1), fixed(p.uncalibrated, 1), p.factor,
                              100 * p.residual));
  out.push_back(fmt::format("stack factor {:.3f} on every compute second (the geometric mean over {} measured run{})",
                            c.stack_factor, c.points.size(), c.points.size() == 1 ? "" : "s"));
  return out;
}

}  // namespace recipebench::cli
