// `recipebench report PATH... --out DIR [--usd-per-gpu-hour X]`
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "commands.h"
#include "option_checks.h"
#include "recipe/validate.h"
#include "record/run_record_check.h"
#include "report/leaderboard.h"
#include "report/leaderboard_csv.h"
#include "util/atomic_file.h"
#include "util/dir_lock.h"
#include "util/host.h"
#include "util/output_folder.h"

namespace recipebench::cli {

/// Reads and checks one JSON input (record/run_record_check.h); a checked record is appended to `runs`. An earlier
/// report's leaderboard.json is skipped. Prints each problem as `file: error: <field path>: ...`; false when
/// the file is refused.
bool refuse_output_folder(const std::string& out) {
  const auto problem = output_folder_problem(out);
  if (problem)
    std::cerr << Diagnostic{"<command line>", 0, 0, "--out", problem->found, problem->expected}.to_string() << "\n";
  return problem.has_value();
}

bool add_run_record(const std::string& file, std::vector<RunRecordInput>& runs) {
  Json doc;
  try {
    doc = read_json_file(file);
  } catch (const InputError& e) {
    std::cerr << e.diagnostic().to_string() << "\n";
    return false;
  }
  const Json& schema = doc.is_object() && doc.contains("schema") ? doc["schema"] : Json();
  if (schema == "recipebench-leaderboard/1") return true;  // an earlier report's output, not an input
  if (schema != "recipebench-run-record/1") {
    std::cerr << Diagnostic{file,
                            0,
                            0,
                            "schema",
                            schema.is_null() ? "missing" : schema.dump(),
                            "\"recipebench-run-record/1\" (a run record)"}
                     .to_string()
              << "\n";
    return false;
  }
  CheckedRunRecord checked = check_run_record(doc, file);
  for (const auto& d : checked.errors) std::cerr << d.to_string() << "\n";
  if (!checked.ok()) return false;
  runs.push_back({file, std::move(*checked.record)});
  return true;
}

namespace {

/// The `report` command's options.
struct ReportArgs {
  std::vector<std::string> paths;
  std::string out;
  std::optional<double> price;
};

/// Reads and checks every input, one at a time, adding each to `board` and freeing it (a run record once its
/// entry is made); prints each problem. The number of inputs refused.
size_t read_inputs(const std::vector<std::string>& files, LeaderboardBuilder& board) {
  size_t failed = 0;
  for (const auto& f : files) {
    if (std::filesystem::path(f).extension() == ".json") {
      std::vector<RunRecordInput> run;
      if (!add_run_record(f, run)) ++failed;
      for (const RunRecordInput& in : run) board.add(in);
      continue;
    }
    ValidatedRecipe v = validate_recipe_file(f);
    for (const auto& d : v.errors) std::cerr << d.to_string() << "\n";
    if (!v.ok())
      ++failed;
    else
      board.add(*v.recipe);
  }
  return failed;
}

/// The three files' text, made one after another so that each one's intermediate form (the JSON tree, the page's
/// template data) is freed before the next is made: the peak memory is the board and the texts, not their sum.
std::vector<std::pair<std::string, std::string>> leaderboard_files(const Leaderboard& board, const std::string& out) {
  std::vector<std::pair<std::string, std::string>> files;
  files.emplace_back((std::filesystem::path(out) / "leaderboard.json").string(), leaderboard_to_json(board).dump(2));
  files.back().second += "\n";
  files.emplace_back((std::filesystem::path(out) / "leaderboard.html").string(), leaderboard_to_html(board));
  files.emplace_back((std::filesystem::path(out) / "leaderboard.csv").string(), leaderboard_to_csv(board));
  return files;
}

/// Writes leaderboard.json, .html and .csv into `out` together, under the folder's lock; false (after printing
/// why) when they could not be written.
bool write_leaderboard(const Leaderboard& board, const std::string& out) {
  try {
    // One report writes this folder at a time; under the lock, hidden temporaries of our files are leftovers of
    // a killed report (util/dir_lock.h). Both files change together: a failure leaves the previous pair
    // (util/atomic_file.h).
    const DirectoryLock lock(out);
    if (const int n = remove_leftover_temp_files(out, {"leaderboard.json", "leaderboard.html", "leaderboard.csv"}))
      std::cerr << "recipebench report: removed " << n << " temporary file" << (n == 1 ? "" : "s") << " left in " << out
                << " by an interrupted report\n";
    write_files_atomically(leaderboard_files(board, out));
  } catch (const std::runtime_error& e) {
    std::cerr << "recipebench report: " << e.what() << "\n";
    return false;
  }
  return true;
}

/// The `report` command: reads the inputs, ranks them and writes the leaderboard. An exit code (commands.h).
int run_report(const ReportArgs& a) {
  // Never into a device, kernel or system folder, nor over a file (util/output_folder.h): checked before anything
  // is read or created.
  if (refuse_output_folder(a.out)) return kUsage;
  std::vector<std::string> files;
  try {
    files = collect_files(a.paths, {".yaml", ".yml", ".json"});
  } catch (const std::invalid_argument& e) {
    std::cerr << "recipebench report: " << e.what() << "\n";
    return kUsage;
  }
  if (files.empty()) {  // as validate: nothing to rank is a usage error, and the files in --out stay as they are
    std::cerr << "recipebench report: no *.yaml, *.yml or *.json files under the given paths; nothing written\n";
    return kUsage;
  }
  ReportOptions options;
  options.usd_per_gpu_hour = a.price;
  options.fold_repeated_runs = true;
  LeaderboardBuilder builder(options);  // each input freed once added: the board holds what the files show
  if (const size_t failed = read_inputs(files, builder)) {
    std::cerr << "recipebench report: " << failed << " input" << (failed == 1 ? "" : "s")
              << " failed validation; nothing written\n";
    return kFailed;
  }
  Leaderboard board = builder.finish();
  board.context["generated_at"] = utc_timestamp();
  board.context["recipebench_version"] = RECIPEBENCH_VERSION;
  board.context["host"] = host_name();
  const std::string json_path = (std::filesystem::path(a.out) / "leaderboard.json").string();
  const std::string html_path = (std::filesystem::path(a.out) / "leaderboard.html").string();
  const std::string csv_path = (std::filesystem::path(a.out) / "leaderboard.csv").string();
  if (!write_leaderboard(board, a.out)) return kFailed;
  size_t entries = 0;
  for (const auto& g : board.groups) entries += g.entries.size();
  std::cout << "ranked " << entries << " entr" << (entries == 1 ? "y" : "ies") << " in " << board.groups.size()
            << " group" << (board.groups.size() == 1 ? "" : "s") << " (" << board.unranked.size()
            << " unranked): " << json_path << ", " << html_path << ", " << csv_path << "\n";
  return kOk;
}

}  // namespace

void add_report_command(CLI::App& app, std::function<int()>& run) {
  auto* cmd = app.add_subcommand(
      "report", "Rank recipes into DIR/leaderboard.json, DIR/leaderboard.html and DIR/leaderboard.csv");
  auto a = std::make_shared<ReportArgs>();
  cmd->add_option("paths", a->paths,
                  "Recipes (*.yaml, *.yml) and run records (*.json), or folders searched recursively for them")
      ->required();
  cmd->add_option("--out", a->out, "Folder for leaderboard.json, leaderboard.html and leaderboard.csv")->required();
  cmd->add_option("--usd-per-gpu-hour", a->price, "Price every entry at this $/GPU-hour instead of the catalog's")
      ->check(finite_positive());
  cmd->callback([&run, a] { run = [a]() -> int { return run_report(*a); }; });
}

}  // namespace recipebench::cli
