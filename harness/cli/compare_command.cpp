// `recipebench compare A B [--usd-per-gpu-hour X]`: two recipes or run records side by side (docs/report.md).
#include <CLI/CLI.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "commands.h"
#include "recipe/validate.h"
#include "report/compare.h"
#include "report/leaderboard.h"

namespace recipebench::cli {

namespace {

/// The leaderboard entry of one recipe (*.yaml, *.yml) or run record (*.json). Prints the located errors and
/// returns nothing when the file is not valid or has no result to compare.
std::optional<LeaderboardEntry> load_entry(const std::string& file, const ReportOptions& options) {
  std::vector<Recipe> recipes;
  std::vector<RunRecordInput> runs;
  if (std::filesystem::path(file).extension() == ".json") {
    if (!add_run_record(file, runs) || runs.empty()) return std::nullopt;
  } else {
    ValidatedRecipe v = validate_recipe_file(file);
    for (const auto& d : v.errors) std::cerr << d.to_string() << "\n";
    if (!v.ok()) return std::nullopt;
    recipes.push_back(std::move(*v.recipe));
  }
  const Leaderboard board = build_leaderboard(recipes, options, runs);
  if (board.groups.empty()) {
    std::cerr << (board.unranked.empty() ? file + ": nothing to compare" : board.unranked.front())
              << ": error: no result to compare\n";
    return std::nullopt;
  }
  return board.groups.front().entries.front();
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
  cmd->add_option("A", args->a, "A recipe (*.yaml) or run record (*.json)")->required()->check(CLI::ExistingFile);
  cmd->add_option("B", args->b, "A recipe (*.yaml) or run record (*.json)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--usd-per-gpu-hour", args->price, "Price both at this $/GPU-hour instead of the catalog's")
      ->check(CLI::PositiveNumber);
  cmd->callback([&run, args] {
    run = [args]() -> int {
      ReportOptions options;
      options.usd_per_gpu_hour = args->price;
      const auto a = load_entry(args->a, options);
      const auto b = load_entry(args->b, options);
      if (!a || !b) return kFailed;
      std::cout << comparison_to_text(compare_entries(*a, *b));
      return kOk;
    };
  });
}

}  // namespace recipebench::cli
