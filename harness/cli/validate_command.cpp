// `recipebench validate PATH... [--format text|json]`
#include <CLI/CLI.hpp>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <system_error>

#include "commands.h"
#include "option_checks.h"
#include "plan/memory_check.h"
#include "plan/memory_plan.h"
#include "recipe/source_doc.h"
#include "recipe/validate.h"
#include "report/report_inputs.h"

namespace recipebench::cli {

namespace {

/// What validate was asked for.
struct ValidateArgs {
  std::vector<std::string> paths;
  std::string format = "text";
  bool strict = false;
  std::optional<double> memory_reserve_gb;  ///< --memory-reserve; absent: the measured reserve
};

/// One recipe's errors and warnings (the memory check: an error with --strict for a recipe meant for the torch
/// backend the plan models), printed as text or added to `report`. Returns the number of errors; `failed` is set when
/// the recipe failed.
size_t validate_one(const std::string& f, const ValidateArgs& a, Json& report, bool& failed) {
  ValidatedRecipe v = validate_recipe_file(f);
  Diagnostics warnings = v.warnings;
  for (Diagnostic d : v.launch) {  // the run command against the fields: a warning, an error with --strict
    d.severity = a.strict ? "error" : "warning";
    (a.strict ? v.errors : warnings).push_back(std::move(d));
  }
  if (v.ok())
    if (auto d =
            check_memory_fits(*v.recipe, f, a.strict,
                              a.memory_reserve_gb ? std::optional(stated_reserve(*a.memory_reserve_gb)) : std::nullopt))
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

/// What validate found: recipes checked, failed and their errors, and folders it could not read (listed by
/// collect_files in place of their contents; each one's error is printed, and it is counted as a folder, never as
/// a recipe).
struct ValidateCounts {
  size_t recipes = 0, failed = 0, errors = 0, unreadable_folders = 0;
};

/// "2 recipes: 1 passed, 1 failed (3 errors)", then "; 1 folder unreadable" when there are any.
std::string summary_text(const ValidateCounts& c) {
  std::string s = std::to_string(c.recipes) + " recipe" + (c.recipes == 1 ? "" : "s") + ": " +
                  std::to_string(c.recipes - c.failed) + " passed, " + std::to_string(c.failed) + " failed (" +
                  std::to_string(c.errors) + " error" + (c.errors == 1 ? "" : "s") + ")";
  if (c.unreadable_folders)
    s += "; " + std::to_string(c.unreadable_folders) + " folder" + (c.unreadable_folders == 1 ? "" : "s") +
         " unreadable";
  return s;
}

/// The note for a file a folder walk found that is no recipe (a catalog, another YAML: report/report_inputs.h), as
/// `report` skips it; nullopt for a recipe, a file that cannot be loaded (validating it says why) and a file named
/// on the command line (validated whatever it is).
std::optional<std::string> not_a_recipe_note(const std::string& f, const std::vector<std::string>& given) {
  if (std::find(given.begin(), given.end(), f) != given.end()) return std::nullopt;
  YamlKind kind = YamlKind::kRecipe;
  try {
    kind = classify_yaml(load_yaml_file(f).value);
  } catch (const InputError&) {
    return std::nullopt;
  }
  if (kind == YamlKind::kRecipe) return std::nullopt;
  return skipped_note(f, not_a_recipe_reason(kind));
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
  ValidateCounts c;
  Json report = Json::array();
  for (const auto& f : files) {
    if (const auto note = not_a_recipe_note(f, a.paths)) {
      std::cerr << *note << "\n";
      continue;
    }
    bool one_failed = false;
    std::error_code ec;
    const bool folder = std::filesystem::is_directory(f, ec);  // a folder collect_files could not read
    const size_t errors = validate_one(f, a, report, one_failed);
    if (folder) {
      ++c.unreadable_folders;
      continue;
    }
    ++c.recipes;
    c.errors += errors;
    c.failed += one_failed ? 1 : 0;
  }
  const std::string summary = summary_text(c);
  if (a.format == "json")
    std::cout << Json{{"files", report},
                      {"summary", Json{{"recipes", c.recipes},
                                       {"passed", c.recipes - c.failed},
                                       {"failed", c.failed},
                                       {"errors", c.errors},
                                       {"unreadable_folders", c.unreadable_folders},
                                       {"text", summary}}}}
                     .dump(2)
              << "\n";
  else
    std::cout << summary << "\n";
  return c.failed || c.unreadable_folders ? kFailed : kOk;
}

}  // namespace

void add_validate_command(CLI::App& app, std::function<int()>& run) {
  auto* cmd = app.add_subcommand("validate", "Check recipes: schema, layout arithmetic and result consistency");
  auto a = std::make_shared<ValidateArgs>();
  cmd->add_option("paths", a->paths, "Recipe files, or folders searched recursively for *.yaml / *.yml")->required();
  cmd->add_option("--format", a->format, "Output format")->check(CLI::IsMember({"text", "json"}));
  cmd->add_flag("--strict", a->strict,
                "A recipe meant for the torch backend whose per-rank memory plan does not fit the GPU is an error "
                "(default: a warning; a recipe of another stack or backend stays a warning; docs/memory-plan.md), "
                "and so is a run command flag that disagrees with the recipe's fields (docs/launch-check.md)");
  cmd->add_option("--memory-reserve", a->memory_reserve_gb,
                  "GB held back beside the planned peak (CUDA context, NCCL buffers, the plan's error); default: "
                  "3 GB + 8% of the peak on CUDA, 8% on the CPU (docs/memory-plan.md, \"Reserve\")")
      ->check(number_from_to(0, 1e4));
  cmd->callback([&run, a] { run = [a]() -> int { return run_validate(*a); }; });
}

}  // namespace recipebench::cli
