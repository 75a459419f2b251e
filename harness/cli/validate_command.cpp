// `recipebench validate PATH... [--format text|json]`
#include <CLI/CLI.hpp>

#include <iostream>

#include "commands.h"
#include "plan/memory_check.h"
#include "recipe/validate.h"

namespace recipebench::cli {

namespace {

/// What validate was asked for.
struct ValidateArgs {
  std::vector<std::string> paths;
  std::string format = "text";
  bool strict = false;
};

/// One recipe's errors and warnings (the memory check: an error with --strict for a recipe meant for the torch
/// backend the plan models), printed as text or added to `report`. Returns the number of errors; `failed` is set when
/// the recipe failed.
size_t validate_one(const std::string& f, const ValidateArgs& a, Json& report, bool& failed) {
  ValidatedRecipe v = validate_recipe_file(f);
  Diagnostics warnings;
  if (v.ok())
    if (auto d = check_memory_fits(*v.recipe, f, a.strict))
      (d->severity == "error" ? v.errors : warnings).push_back(*d);
  failed = !v.ok();
  if (a.format == "json") {
    Json errs = Json::array(), warns = Json::array();
    for (const auto& d : v.errors) errs.push_back(d.to_json());
    for (const auto& d : warnings) warns.push_back(d.to_json());
    report.push_back(Json{{"file", f}, {"ok", v.ok()}, {"errors", errs}, {"warnings", warns}});
  } else {
    for (const auto& d : v.errors) std::cout << d.to_string() << "\n";
    for (const auto& d : warnings) std::cout << d.to_string() << "\n";
  }
  return v.errors.size();
}

int run_validate(const ValidateArgs& a) {
  std::vector<std::string> files;
  try {
    files = collect_files(a.paths, {".yaml", ".yml"});
  } catch (const std::invalid_argument& e) {
    std::cerr << "recipebench validate: " << e.what() << "\n";
    return kUsage;
  }
  if (files.empty()) {
    std::cerr << "recipebench validate: no *.yaml or *.yml files under the given paths\n";
    return kUsage;
  }
  size_t failed = 0, errors = 0;
  Json report = Json::array();
  for (const auto& f : files) {
    bool one_failed = false;
    errors += validate_one(f, a, report, one_failed);
    failed += one_failed ? 1 : 0;
  }
  const std::string summary = std::to_string(files.size()) + " recipe" + (files.size() == 1 ? "" : "s") + ": " +
                              std::to_string(files.size() - failed) + " passed, " + std::to_string(failed) +
                              " failed (" + std::to_string(errors) + " error" + (errors == 1 ? "" : "s") + ")";
  if (a.format == "json")
    std::cout << Json{{"files", report},
                      {"summary", Json{{"recipes", files.size()},
                                       {"passed", files.size() - failed},
                                       {"failed", failed},
                                       {"errors", errors},
                                       {"text", summary}}}}
                     .dump(2)
              << "\n";
  else
    std::cout << summary << "\n";
  return failed ? kFailed : kOk;
}

}  // namespace

void add_validate_command(CLI::App& app, std::function<int()>& run) {
  auto* cmd = app.add_subcommand("validate", "Check recipes: schema, layout arithmetic and result consistency");
  auto a = std::make_shared<ValidateArgs>();
  cmd->add_option("paths", a->paths, "Recipe files, or folders searched recursively for *.yaml / *.yml")->required();
  cmd->add_option("--format", a->format, "Output format")->check(CLI::IsMember({"text", "json"}));
  cmd->add_flag("--strict", a->strict,
                "A recipe meant for the torch backend whose per-rank memory plan does not fit the GPU is an error "
                "(default: a warning; a recipe of another stack or backend stays a warning); docs/memory-plan.md");
  cmd->callback([&run, a] { run = [a]() -> int { return run_validate(*a); }; });
}

}  // namespace recipebench::cli
