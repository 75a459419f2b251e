// `recipebench predict RECIPE --profile RECORD...`: the step-time model's prediction of a recipe's step time,
// tokens/s/GPU, MFU, $ per 1M tokens and GPU-hours from measured profiles (docs/step-time.md).
#include <CLI/CLI.hpp>

#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "calibration.h"
#include "commands.h"
#include "option_checks.h"
#include "plan/memory_plan.h"
#include "plan/prediction_basis.h"
#include "plan/prediction_text.h"
#include "plan/step_time.h"
#include "predict_inputs.h"
#include "recipe/diagnostic.h"
#include "recipe/layout_check.h"
#include "recipe/run_model.h"
#include "recipe/validate.h"
#include "settings/resolved_run.h"
#include "settings/switches.h"
#include "util/input_file.h"

namespace recipebench::cli {

namespace {

struct SwitchFlag {
  const RunSwitch* row = nullptr;
  CLI::Option* option = nullptr;
  bool value = false;
};

struct PredictArgs {
  std::string recipe;
  std::vector<SwitchFlag> switches;
  std::vector<std::string> profiles;
  std::vector<std::string> calibrate;
  double stack_factor = 1;
  std::string format = "text";
};

/// The run `run` would make of the recipe with the command line's switches over its bench block (an overlay, merged
/// as `run` merges it); nullopt after printing why the step-time model cannot time it (a model outside the torch
/// backend's family, a layout without a rank map).
std::optional<ResolvedRun> resolve_predicted_run(const PredictArgs& args, const Recipe& recipe) {
  RecipeBench overlay;
  for (const SwitchFlag& f : args.switches)
    if (f.option->count() > 0) set_switch_text(*f.row, f.value ? "true" : "false", overlay);
  const std::optional<RunModel> model = run_model(recipe);
  if (!model || !model->model.architecture_known()) {  // the work formulas need the layers and widths
    std::cerr << args.recipe << ": error: model: " << recipe.model
              << (model ? " " + family_clause(model->model) : std::string())
              << ", expected a model whose layers and widths are known (the registry's, or model_params.config: "
                 "its config.json; docs/step-time.md)\n";
    return std::nullopt;
  }
  ResolvedRun run = resolve_run(recipe, merged_options(recipe, overlay), *model);
  if (!run.map) {
    std::cerr << args.recipe << ": error: layout: " << recipe.layout.label << " with " << model->model.name << ": "
              << run.map_problem << "\n";
    return std::nullopt;
  }
  return run;
}

/// "; layout.label \"TP2 PP6 EP8 DP4\" disagrees with the fields: DP4 (layout.dp 2), no CP (layout.cp 2)", or empty
/// when the recipe's label agrees (label_disagreements).
std::string label_note(const RecipeLayout& l) {
  const std::vector<std::string> problems = label_disagreements(l);
  if (problems.empty()) return "";
  return fmt::format("; layout.label \"{}\" disagrees with the fields: {}", l.label, fmt::join(problems, ", "));
}

/// Prints the prediction and its basis as text or JSON (schema recipebench-prediction/1).
void print_prediction(const PredictArgs& args, const ResolvedRun& run, const PredictSetup& setup,
                      const StepPrediction& p, const PredictionBasis& basis) {
  const Recipe& recipe = *run.recipe;
  const std::string& model = run.model.model.name;
  if (args.format != "json") {
    std::cout << fmt::format("recipebench predict: {} ({}, {}, {} x {}){}\n", args.recipe, model,
                             layout_label(recipe.layout), recipe.gpu.count, recipe.gpu.type, label_note(recipe.layout))
              << basis_text(basis) << prediction_text(p) << "  " << achieved_flops_text(setup.costs) << "\n";
    return;
  }
  Json j = prediction_to_json(p);
  j["basis"] = basis_json(basis);
  j["schema"] = "recipebench-prediction/1";
  j["recipe"] = args.recipe;
  j["model"] = model;
  j["layout"] = layout_label(recipe.layout);  // as the fields say it; the recipe's own words apart
  j["layout_label"] = recipe.layout.label;
  j["layout_label_disagrees"] = label_disagreements(recipe.layout);
  j["gpu"] = fmt::format("{} x {}", recipe.gpu.count, recipe.gpu.type);
  j["profiles"] = setup.costs.sources;
  j["profile_notes"] = setup.costs.notes;
  j["stack_factor"] = basis.stack_factor;
  j["profile_achieved_flops"] = achieved_flops_json(setup.costs);
  std::cout << j.dump(2) << "\n";
}

/// The refusal of a prediction past physics (`why`: BeyondPhysics's text) placed where its cause was given: the
/// `--stack-factor` value on the command line, else the first measured run --calibrate fitted the factor on, else
/// the recipe (docs/step-time.md, "Refusals").
std::string beyond_physics_diagnostic(const PredictArgs& args, const std::string& why) {
  if (args.stack_factor != 1)
    return Diagnostic{"<command line>", 0, 0, "--stack-factor", fmt::format("{}", args.stack_factor),
                      "a factor at which the step takes no less than the work at the GPU's peak (" + why + ")"}
        .to_string();
  const std::string& place = args.calibrate.empty() ? args.recipe : args.calibrate.front();
  return escape_controls(place) + ": error: " + why;
}

/// The refusal of a layout the profiles cannot time (`why`: ProfileGap's text) at the profile given, or at the
/// --profile option when several were given (their union lacks the component).
std::string profile_gap_diagnostic(const PredictArgs& args, const std::string& why) {
  if (args.profiles.size() == 1) return escape_controls(args.profiles.front()) + ": error: " + why;
  return Diagnostic{"<command line>", 0, 0, "--profile", fmt::format("{}", fmt::join(args.profiles, ", ")),
                    "profiles that together measured every component the layout runs (" + why + ")"}
      .to_string();
}

/// Which answer the profiles given allow, said before the figures: torch-backend profiles for a model outside its
/// family are refused (kUsage); a model no backend profiles, or a family model without a profile, is answered by
/// the analytical mode (said on stderr), except on the CPU, which only a profile times (kUsage). nullopt: go on.
std::optional<int> check_profile_mode(const PredictArgs& args, const Recipe& recipe, const ResolvedRun& run,
                                      const LoadedProfiles& loaded) {
  const ModelConfig& model = run.model.model;
  const bool torch_family = model.family == ModelFamily::kQwen35;  // only its passes can be profiled
  const bool none_given = loaded.ranks.empty() && loaded.family_ranks.empty();
  if (!torch_family && !none_given) {
    std::cerr << Diagnostic{"<command line>", 0, 0, "--profile", "profiles of the torch backend's models",
                            "none: " + model.name + " " + family_clause(model) +
                                " (no backend of recipebench profiles it; the analytical mode times it)"}
                     .to_string()
              << "\n";
    return kUsage;
  }
  if (!torch_family && recipe.gpu.type != "CPU" && args.format != "json")
    std::cerr << "recipebench predict: no profile of " << model.name << " can be made (" << family_clause(model)
              << ": recipebench's torch backend builds Qwen3.5 MoE / Qwen3-Next only): the analytical mode "
                 "(catalog efficiencies, nothing measured) answers; calibrate it with --calibrate on a measured "
                 "run of the recipe's stack\n";
  if (!torch_family || !none_given) return std::nullopt;
  const bool cpu = recipe.gpu.type == "CPU";  // no catalog efficiencies for CPU cores: only a profile times them
  if (cpu || args.format != "json")
    std::cerr << "recipebench predict: no profile of " << run.model.full.name << " among the " << args.profiles.size()
              << " given" << (cpu ? "" : ": the analytical mode (catalog efficiencies, nothing measured) answers")
              << "; for a measured answer, profile one rank of each kind of this layout "
              << (recipe_device(recipe) == Device::kCpu ? "on this host's CPU (the recipe's device)" : "on one GPU")
              << " (--profile RECORD):\n"
              << emulation_commands(args.recipe, recipe, model, *run.map);
  return cpu ? std::optional<int>(kUsage) : std::nullopt;
}

/// Fit the calibration (when asked) -> set up the costs -> predict -> print; each refusal at its place.
int predict_and_print(const PredictArgs& args, const Recipe& recipe, const ResolvedRun& run,
                      const LoadedProfiles& loaded) {
  const ModelConfig& model = run.model.model;
  const RankMap& map = *run.map;
  try {
    double stack_factor = args.stack_factor;
    std::optional<Calibration> calibration;
    if (!args.calibrate.empty()) {
      calibration = fit_calibration(args.calibrate, recipe, model, loaded);
      if (!calibration) return kUsage;
      stack_factor = calibration->stack_factor;
    }
    const ChunkShape shape = chunk_shapes(map, model, 0, recipe.workload.row_tokens).front();
    PredictSetup setup = prediction_setup(recipe, model, shape, loaded, stack_factor);
    setup.options.settings = predicted_settings(run, recipe);  // the recipe's switches, the command line's over them
    const StepPrediction p = predict_step(recipe, model, map, setup.costs, setup.network, setup.options);
    PredictionBasis basis =
        prediction_basis(recipe, model, map, setup.options.settings, setup.costs, stack_factor, p);
    if (calibration) basis.calibration = calibration_lines(*calibration);
    print_prediction(args, run, setup, p, basis);
  } catch (const ProfileGap& e) {
    std::cerr << profile_gap_diagnostic(args, e.what()) << "\n";
    return kFailed;
  } catch (const BeyondPhysics& e) {
    std::cerr << beyond_physics_diagnostic(args, e.what()) << "\n";
    return kFailed;
  } catch (const std::invalid_argument& e) {
    std::cerr << "recipebench predict: error: " << e.what() << "\n";
    return kFailed;
  }
  return kOk;
}

/// Validate -> resolve -> load the profiles -> say the mode -> predict -> print.
int run_predict(const PredictArgs& args) {
  ValidatedRecipe v = validate_recipe_file(args.recipe);
  for (const auto& d : v.errors) std::cerr << d.to_string() << "\n";
  if (!v.ok()) return kFailed;
  const Recipe& recipe = *v.recipe;
  const std::optional<ResolvedRun> run = resolve_predicted_run(args, recipe);
  if (!run) return kFailed;
  const std::optional<LoadedProfiles> loaded = load_profiles(args.profiles, run->model.full.name);
  if (!loaded) return kFailed;
  if (const std::optional<int> refused = check_profile_mode(args, recipe, *run, *loaded)) return *refused;
  return predict_and_print(args, recipe, *run, *loaded);
}

}  // namespace

void add_predict_command(CLI::App& app, std::function<int()>& run) {
  auto* cmd = app.add_subcommand("predict",
                                 "Predict a recipe's step time, tokens/s/GPU, MFU and cost from measured profiles "
                                 "(docs/step-time.md)");
  auto args = std::make_shared<PredictArgs>();
  cmd->add_option("recipe", args->recipe, "The recipe (*.yaml)")->required()->check(existing_file("a recipe file (*.yaml)"));
  cmd->add_option("--profile", args->profiles,
                  "Run records of `run --profile` or `run --emulate-rank R --profile` (one per rank kind)")
      ->check(existing_file("a run record of `run --profile` (*.json)"));
  cmd->add_option("--stack-factor", args->stack_factor,
                  "Multiply every compute second by this (a stack's speed against the profiled one's; 0.01 to 100)")
      ->check(number_from_to(kMinStackFactor, kMaxStackFactor));
  cmd->add_option("--calibrate", args->calibrate,
                  "Measured runs of the recipe's GPU type to fit the stack factor on: recipes with a measured result "
                  "or run records of whole runs (ours or imported)")
      ->check(existing_file("a recipe with a measured result or a run record"))
      ->excludes("--stack-factor");
  cmd->add_option("--format", args->format, "text or json")->check(CLI::IsMember({"text", "json"}));
  // The switches the step-time model prices, as `run` spells them (settings/switches.h, SwitchPricing).
  const std::vector<const RunSwitch*> priced = priced_switches();
  args->switches.reserve(priced.size());
  for (const RunSwitch* row : priced) {
    SwitchFlag& f = args->switches.emplace_back();
    f.row = row;
    f.option = cmd->add_flag(f.row->option, f.value, std::string("[=true|false] as run's: ") + f.row->help);
  }
  cmd->callback([&run, args] { run = [args] { return run_predict(*args); }; });
}

}  // namespace recipebench::cli
