// `recipebench compare A B [--usd-per-gpu-hour X]`: two recipes or run records side by side (docs/report.md).
#include <CLI/CLI.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <tuple>

#include <fmt/format.h>

#include "commands.h"
#include "metrics/convergence.h"
#include "option_checks.h"
#include "recipe/validate.h"
#include "record/run_record_check.h"
#include "report/compare.h"
#include "report/leaderboard.h"
#include "util/format.h"

namespace recipebench::cli {

namespace {

/// Why file `file` (the recipe `recipes` holds, with its `source`, or a run record) gave `board` nothing to compare,
/// located: a recipe at its status ("result: none (status proposed)"), a run record by the leaderboard's reason.
Diagnostic no_result(const std::string& file, const std::vector<Recipe>& recipes,
                     const std::shared_ptr<const SourceDoc>& source, const Leaderboard& board) {
  const std::string expected =
      "a recipe with a result (status measured), a proposed recipe with a prediction block (plan --out), or a run "
      "record of a complete run";
  if (!recipes.empty() && source) {
    Diagnostic d = source->at("/status", "none (status " + recipes.front().status + ")", expected);
    d.path = "result";
    return d;
  }
  std::string why = board.unranked.empty() ? "nothing to compare" : board.unranked.front();
  if (why.rfind(file + ": ", 0) == 0) why.erase(0, file.size() + 2);
  return Diagnostic{file, 0, 0, "", why, expected};
}

/// A recipe with a `prediction` block and no result (status proposed: what `plan --out` writes, docs/step-time.md)
/// as a recipe whose result is its predicted figures: the prediction's tokens/s/GPU (MFU and $ per 1M tokens derived
/// from it as from a result; not its GPU-hours, which count a default 20 steps, not a run's), its status and date
/// saying they are predicted. nullopt for a recipe with a result or without a prediction.
std::optional<Recipe> predicted_as_result(const Recipe& r) {
  if (r.result || !r.doc.contains("prediction") || !r.doc["prediction"].is_object()) return std::nullopt;
  const Json& p = r.doc["prediction"];
  if (!p.contains("tokens_per_s_per_gpu") || !p["tokens_per_s_per_gpu"].is_number()) return std::nullopt;
  Recipe out = r;
  RecipeResult res;
  res.tokens_per_s_per_gpu = p["tokens_per_s_per_gpu"].get<double>();
  res.measured = "predicted " + (p.contains("predicted") ? p["predicted"].get<std::string>() : std::string("?"));
  out.result = res;
  out.status = r.status + ", figures predicted by the step-time model, not measured";
  return out;
}

/// The leaderboard entry of one recipe (*.yaml, *.yml) or run record (*.json); a proposed recipe with a prediction
/// block gives its predicted figures (predicted_as_result) and sets *predicted. Prints the located errors and
/// returns nothing when the file is not valid or has no result or prediction to compare.
std::optional<LeaderboardEntry> load_entry(const std::string& file, const ReportOptions& options, bool* predicted) {
  std::vector<Recipe> recipes;
  std::vector<RunRecordInput> runs;
  std::shared_ptr<const SourceDoc> source;
  if (std::filesystem::path(file).extension() == ".json") {
    if (!add_run_record(file, runs) || runs.empty()) return std::nullopt;
  } else {
    ValidatedRecipe v = validate_recipe_file(file);
    for (const auto& d : v.errors) std::cerr << d.to_string() << "\n";
    if (!v.ok()) return std::nullopt;
    std::optional<Recipe> as_result = predicted_as_result(*v.recipe);
    *predicted = as_result.has_value();
    recipes.push_back(as_result ? std::move(*as_result) : std::move(*v.recipe));
    source = v.source;
  }
  const Leaderboard board = build_leaderboard(recipes, options, runs);
  if (board.groups.empty()) {
    std::cerr << no_result(file, recipes, source, board).to_string() << "\n";
    return std::nullopt;
  }
  LeaderboardEntry e = board.groups.front().entries.front();
  if (!runs.empty()) use_settings_as_written(e, read_json_file(file));  // read and checked just above
  return e;
}

/// A run record's loss curve (steps 0..N-1); empty for a recipe or a record without any loss.
LossCurve loss_curve(const LeaderboardEntry& e) {
  LossCurve c;
  bool any = false;
  for (size_t i = 0; i < e.steps.loss.size(); ++i) {
    c.emplace_back(static_cast<int64_t>(i), e.steps.loss[i]);
    any = any || !std::isnan(e.steps.loss[i]);
  }
  return any ? c : LossCurve{};
}

/// The settings block of a run record's entry; null for a recipe.
Json settings_of(const LeaderboardEntry& e) {
  const Json& m = e.details.contains("measurement") ? e.details["measurement"] : Json();
  return m.is_object() && m.contains("settings") ? m["settings"] : Json();
}

/// Two run records with losses: the warnings on their settings and the convergence check of B against A
/// (docs/correctness.md, as `recipebench converge A B` prints it).
std::string convergence_text(const LeaderboardEntry& a, const LeaderboardEntry& b) {
  const LossCurve ca = loss_curve(a), cb = loss_curve(b);
  if (ca.empty() || cb.empty()) return "";
  std::string out = "\nconvergence of B against A (recipebench converge A B):\n";
  for (const auto& w : settings_warnings(settings_of(a), settings_of(b))) out += "warning: " + w + "\n";
  return out + convergence_to_text(check_convergence(ca, cb));
}

/// What a comparison with a prediction on one side or both says before the figures, and the prediction's error
/// against a measurement on the other side: predicted / measured tokens/s/GPU - 1, signed.
std::string prediction_note(const LeaderboardEntry& a, bool a_predicted, const LeaderboardEntry& b,
                            bool b_predicted) {
  std::string out;
  using Side = std::tuple<const char*, const LeaderboardEntry*, bool>;
  for (const auto& [name, e, predicted] : {Side{"A", &a, a_predicted}, Side{"B", &b, b_predicted}})
    if (predicted)
      out += fmt::format("note: {} ({}) is a prediction ({}), not a measurement: its figures are the step-time "
                         "model's (docs/step-time.md)\n",
                         name, e->file, e->measured);
  if (a_predicted == b_predicted || !(a.tokens_per_s_per_gpu > 0) || !(b.tokens_per_s_per_gpu > 0)) return out;
  const LeaderboardEntry& p = a_predicted ? a : b;
  const LeaderboardEntry& m = a_predicted ? b : a;
  return out + fmt::format(
                   "prediction error: predicted / measured tokens/s/GPU - 1 = {:+.1f}% ({} predicted, {} measured; "
                   "the fields below marked * are what differs between the two)\n",
                   100 * (p.tokens_per_s_per_gpu / m.tokens_per_s_per_gpu - 1), fixed(p.tokens_per_s_per_gpu, 1),
                   fixed(m.tokens_per_s_per_gpu, 1));
}

}  // namespace

void add_compare_command(CLI::App& app, std::function<int()>& run) {
  auto* cmd = app.add_subcommand("compare",
                                 "Show two recipes or run records side by side: differing fields and "
                                 "the ratios (B/A) of their figures");
  struct Args {
    std::string a, b;
    std::optional<double> price;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("A", args->a, "A recipe (*.yaml) or run record (*.json)")->required()->check(existing_file("a recipe (*.yaml) or a run record (*.json)"));
  cmd->add_option("B", args->b, "A recipe (*.yaml) or run record (*.json)")->required()->check(existing_file("a recipe (*.yaml) or a run record (*.json)"));
  cmd->add_option("--usd-per-gpu-hour", args->price, "Price both at this $/GPU-hour instead of the catalog's")
      ->check(finite_positive());
  cmd->callback([&run, args] {
    run = [args]() -> int {
      ReportOptions options;
      options.usd_per_gpu_hour = args->price;
      bool a_predicted = false, b_predicted = false;
      const auto a = load_entry(args->a, options, &a_predicted);
      const auto b = load_entry(args->b, options, &b_predicted);
      if (!a || !b) return kFailed;
      if (const auto same = same_input_warning(args->a, args->b)) std::cout << "warning: " << *same << "\n";
      std::cout << prediction_note(*a, a_predicted, *b, b_predicted) << comparison_to_text(compare_entries(*a, *b))
                << convergence_text(*a, *b);
      return kOk;
    };
  });
}

}  // namespace recipebench::cli
