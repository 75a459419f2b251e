// `recipebench report PATH... --out DIR [--usd-per-gpu-hour X]`
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "commands.h"
#include "recipe/validate.h"
#include "report/leaderboard.h"
#include "report/leaderboard_csv.h"
#include "util/atomic_file.h"
#include "util/host.h"

namespace recipebench::cli {

void add_report_command(CLI::App& app, std::function<int()>& run) {
  auto* cmd = app.add_subcommand("report", "Rank recipes into DIR/leaderboard.json, DIR/leaderboard.html and DIR/leaderboard.csv");
  struct Args {
    std::vector<std::string> paths;
    std::string out;
    std::optional<double> price;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("paths", a->paths,
                  "Recipes (*.yaml, *.yml) and run records (*.json), or folders searched recursively for them")
      ->required();
  cmd->add_option("--out", a->out, "Folder for leaderboard.json, leaderboard.html and leaderboard.csv")->required();
  cmd->add_option("--usd-per-gpu-hour", a->price, "Price every entry at this $/GPU-hour instead of the catalog's")
      ->check(CLI::PositiveNumber);
  cmd->callback([&run, a] {
    run = [a]() -> int {
      std::vector<std::string> files;
      try {
        files = collect_files(a->paths, {".yaml", ".yml", ".json"});
      } catch (const std::invalid_argument& e) {
        std::cerr << "recipebench report: " << e.what() << "\n";
        return kUsage;
      }
      std::vector<Recipe> recipes;
      std::vector<RunRecordInput> runs;
      size_t failed = 0;
      for (const auto& f : files) {
        if (std::filesystem::path(f).extension() == ".json") {
          std::ifstream in(f);
          Json record = Json::parse(in, nullptr, /*allow_exceptions=*/false);
          const std::string schema = record.is_object() ? record.value("schema", std::string()) : "";
          if (schema == "recipebench-leaderboard/1") continue;  // an earlier report's output, not an input
          if (record.is_discarded() || schema != "recipebench-run-record/1") {
            std::cerr << f << ": error: not a recipebench run record (no \"schema\": \"recipebench-run-record/1\")\n";
            ++failed;
            continue;
          }
          runs.push_back({f, std::move(record)});
          continue;
        }
        ValidatedRecipe v = validate_recipe_file(f);
        for (const auto& d : v.errors) std::cerr << d.to_string() << "\n";
        if (!v.ok()) ++failed;
        else recipes.push_back(std::move(*v.recipe));
      }
      if (failed) {
        std::cerr << "recipebench report: " << failed << " input" << (failed == 1 ? "" : "s")
                  << " failed validation; nothing written\n";
        return kFailed;
      }
      ReportOptions options;
      options.usd_per_gpu_hour = a->price;
      Leaderboard board = build_leaderboard(recipes, options, runs);
      board.context["generated_at"] = utc_timestamp();
      board.context["recipebench_version"] = RECIPEBENCH_VERSION;
      board.context["host"] = host_name();
      const std::string json_path = (std::filesystem::path(a->out) / "leaderboard.json").string();
      const std::string html_path = (std::filesystem::path(a->out) / "leaderboard.html").string();
      write_file_atomic(json_path, leaderboard_to_json(board).dump(2) + "\n");
      write_file_atomic(html_path, leaderboard_to_html(board));
      write_file_atomic((std::filesystem::path(a->out) / "leaderboard.csv").string(), leaderboard_to_csv(board));
      size_t entries = 0;
      for (const auto& g : board.groups) entries += g.entries.size();
      std::cout << "ranked " << entries << " entr" << (entries == 1 ? "y" : "ies") << " in " << board.groups.size()
                << " group" << (board.groups.size() == 1 ? "" : "s") << " (" << board.unranked.size()
                << " unranked): " << json_path << ", " << html_path << "\n";
      return kOk;
    };
  });
}

}  // namespace recipebench::cli
