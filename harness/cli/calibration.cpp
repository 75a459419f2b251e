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
    out.push_back(
        {in.file, recipe_from_json(in.record.recipe, in.file), in.record.metrics->window.tokens_per_s_per_gpu});
  }
  return true;
}

/// One measured run made ready to predict: its resolved run and the step-time model's inputs, fitted once (only
/// the stack factor changes while the factor is solved for).
struct PreparedRun {
  ResolvedRun run;
  PredictSetup setup;

  /// Tokens/s/GPU predicted at stack factor `factor`.
  double tps(double factor) {
    setup.options.stack_factor = factor;
    const Recipe& recipe = *run.recipe;
    return predict_step(recipe, run.model.model, *run.map, setup.costs, setup.network, setup.options)
        .tokens_per_s_per_gpu;
  }
};

/// The stack factor in [0.01, 100] at which the prediction meets `measured` (the prediction falls as the factor
/// grows): bisection on log(factor), 60 halvings; a factor so small that the prediction passes the GPU's dense peak
/// (predict_step refuses it: an analytical prediction near the measurement meets that below ~0.5) counts as too fast.
double solve_factor(PreparedRun& r, double measured) {
  double lo = std::log(kMinStackFactor), hi = std::log(kMaxStackFactor);
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    bool faster = true;  // a factor whose prediction passes the GPU's peak (predict_step refuses it) is too fast
    try {
      faster = r.tps(std::exp(mid)) > measured;
    } catch (const std::invalid_argument&) {
    }
    (faster ? lo : hi) = mid;
  }
  return std::exp((lo + hi) / 2);
}

/// Why a measured run cannot calibrate the target, as its refusal's field, found and expected.
struct Mismatch {
  std::string field, found, expected;
};

/// The reason `m` cannot calibrate a prediction of `target` (another GPU type, another model family), if any.
std::optional<Mismatch> mismatch(const MeasuredRun& m, const std::optional<RunModel>& model, const Recipe& target,
                                 const ModelConfig& target_model) {
  const GpuSpec* a = find_gpu(m.recipe.gpu.type);
  const GpuSpec* b = find_gpu(target.gpu.type);
  if (a == nullptr || a != b)
    return Mismatch{"gpu.type", m.recipe.gpu.type,
                    target.gpu.type +
                        " (the target's GPU: a factor measured on another GPU would carry that GPU's stack, not the "
                        "target's)"};
  if (!model || model->model.family != target_model.family || model->model.model_type != target_model.model_type)
    return Mismatch{
        "model", m.recipe.model,
        fmt::format("a model of the target's family ({}, {})", target_model.name, family_label(target_model))};
  return std::nullopt;
}

/// `m` resolved and its inputs fitted, or nullopt after printing why it cannot calibrate.
std::optional<PreparedRun> prepare(const MeasuredRun& m, const Recipe& target, const ModelConfig& target_model,
                                   const LoadedProfiles& loaded) {
  const std::optional<RunModel> model = run_model(m.recipe);
  if (const auto why = mismatch(m, model, target, target_model)) {
    refuse(m.file, why->field, why->found, why->expected);
    return std::nullopt;
  }
  ResolvedRun run = resolve_run(m.recipe, merged_options(m.recipe, RecipeBench{}), *model);
  if (!run.map) {
    refuse(m.file, "layout", m.recipe.layout.label, "a layout with a rank map (" + run.map_problem + ")");
    return std::nullopt;
  }
  const ChunkShape shape = chunk_shapes(*run.map, run.model.model, 0, m.recipe.workload.row_tokens).front();
  PredictSetup setup = prediction_setup(m.recipe, run.model.model, shape, loaded, 1);
  setup.options.settings = predicted_settings(run, m.recipe);
  return PreparedRun{std::move(run), std::move(setup)};
}

}  // namespace

std::optional<Calibration> fit_calibration(const std::vector<std::string>& files, const Recipe& target,
                                           const ModelConfig& target_model, const LoadedProfiles& loaded) {
  std::vector<MeasuredRun> runs;
  bool ok = !files.empty();
  for (const std::string& f : files) ok = measured_runs(f, runs) && ok;
  Calibration c;
  std::vector<PreparedRun> prepared;
  double log_sum = 0;
  for (const MeasuredRun& m : runs) {
    std::optional<PreparedRun> r = prepare(m, target, target_model, loaded);
    if (!r) {
      ok = false;
      continue;
    }
    CalibrationPoint p{m.file, m.recipe.layout.label, m.measured, r->tps(1), 1, 0};
    p.factor = solve_factor(*r, m.measured);
    log_sum += std::log(p.factor);
    c.points.push_back(p);
    prepared.push_back(std::move(*r));
  }
  if (!ok || c.points.empty()) return std::nullopt;
  c.stack_factor = std::exp(log_sum / static_cast<double>(c.points.size()));
  for (size_t i = 0; i < c.points.size(); ++i)
    c.points[i].residual = prepared[i].tps(c.stack_factor) / c.points[i].measured - 1;
  return c;
}

std::vector<std::string> calibration_lines(const Calibration& c) {
  std::vector<std::string> out;
  for (const CalibrationPoint& p : c.points)
    out.push_back(
        fmt::format("calibrated on {} ({}): measured {} tokens/s/GPU, predicted {} uncalibrated: factor "
                    "{:.3f}; {:+.1f}% at the fitted factor",
                    p.file, p.layout, fixed(p.measured, 1), fixed(p.uncalibrated, 1), p.factor, 100 * p.residual));
  out.push_back(fmt::format(
      "stack factor {:.3f} on every compute second (the geometric mean over {} measured run{}; one factor for every "
      "class of operation: a factor per class is not fitted, since runs of one model and stack differ too little in "
      "their classes' shares to tell them apart)",
      c.stack_factor, c.points.size(), c.points.size() == 1 ? "" : "s"));
  return out;
}

}  // namespace recipebench::cli
