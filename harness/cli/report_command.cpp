// `recipebench report PATH... --out DIR [--usd-per-gpu-hour X] [--token-budget TOKENS]`
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>

#include "commands.h"
#include "option_checks.h"
#include "recipe/source_doc.h"
#include "recipe/validate.h"
#include "record/run_record_check.h"
#include "report/leaderboard.h"
#include "report/leaderboard_csv.h"
#include "report/report_inputs.h"
#include "util/atomic_file.h"
#include "util/dir_lock.h"
#include "util/host.h"
#include "util/input_file.h"
#include "util/output_folder.h"

namespace recipebench::cli {

bool refuse_output_folder(const std::string& out) {
  const auto problem = output_folder_problem(out);
  if (problem)
    std::cerr << Diagnostic{"<command line>", 0, 0, "--out", problem->found, problem->expected}.to_string() << "\n";
  return problem.has_value();
}

namespace {

/// The JSON in `file`, or nullopt after printing why it cannot be read or parsed.
std::optional<Json> read_json_input(const std::string& file) {
  try {
    return read_json_file(file);
  } catch (const InputError& e) {
    std::cerr << e.diagnostic().to_string() << "\n";
    return std::nullopt;
  }
}

/// Checks a run record's JSON (record/run_record_check.h) and appends it to `runs`; prints each problem, false when
/// refused. A document of another schema (a record of another version) is refused by its "schema".
bool add_checked_record(const Json& doc, const std::string& file, std::vector<RunRecordInput>& runs) {
  const Json& schema = doc.is_object() && doc.contains("schema") ? doc["schema"] : Json();
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

}  // namespace

/// Reads and checks one JSON input (record/run_record_check.h); a checked record is appended to `runs`. An earlier
/// report's leaderboard.json is skipped. Prints each problem as `file: error: <field path>: ...`; false when
/// the file is refused.
bool add_run_record(const std::string& file, std::vector<RunRecordInput>& runs) {
  const std::optional<Json> doc = read_json_input(file);
  if (!doc) return false;
  if (classify_json(*doc) == JsonKind::kEarlierReport) return true;  // an earlier report's output, not an input
  return add_checked_record(*doc, file, runs);
}

bool add_one_run_record(const std::string& file, std::vector<RunRecordInput>& runs) {
  const size_t before = runs.size();
  if (!add_run_record(file, runs)) return false;
  if (runs.size() > before) return true;
  std::cerr << Diagnostic{file, 0, 0, "schema", "a leaderboard (the output of an earlier report)",
                          "a run record (\"recipebench-run-record/1\")"}
                   .to_string()
            << "\n";
  return false;
}

namespace {

/// The `report` command's options.
struct ReportArgs {
  std::vector<std::string> paths;
  std::string out;
  std::optional<double> price;
  double token_budget = kDefaultTokenBudget;  ///< tokens; the Pareto view's budget (docs/report.md)
};

/// What each YAML file among `files` is (report_inputs.h), and the files the recipes name. A YAML file that cannot
/// be loaded counts as a recipe: reading it as one reports why.
struct YamlSurvey {
  std::map<std::string, YamlKind> kinds;
  std::set<std::string> named;  ///< canonical paths of the files recipes name (model_params.config)
};

YamlSurvey survey_yaml(const std::vector<std::string>& files) {
  YamlSurvey out;
  for (const auto& f : files) {
    if (std::filesystem::path(f).extension() == ".json") continue;
    try {
      const SourceDoc doc = load_yaml_file(f);
      const YamlKind kind = classify_yaml(doc.value);
      out.kinds[f] = kind;
      if (kind == YamlKind::kRecipe)
        for (auto& named : files_named_by_recipe(doc.value, f)) out.named.insert(std::move(named));
    } catch (const InputError&) {
      out.kinds[f] = YamlKind::kRecipe;
    }
  }
  return out;
}

/// What became of one input file.
enum class InputOutcome { kRead, kSkipped, kRefused };

/// Reads one JSON file: a run record is checked and added to `board`; report's own leaderboard.json and a file a
/// recipe names are passed over quietly; any other document is skipped with a note.
InputOutcome read_json_input_file(const std::string& f, const YamlSurvey& survey, LeaderboardBuilder& board) {
  if (survey.named.count(canonical_path(f)))
    return InputOutcome::kSkipped;  // a model_params.config: its recipe reads it
  const std::optional<Json> doc = read_json_input(f);
  if (!doc) return InputOutcome::kRefused;
  switch (classify_json(*doc)) {
    case JsonKind::kEarlierReport:
      return InputOutcome::kSkipped;
    case JsonKind::kOtherDocument: {
      const bool has_schema = doc->is_object() && doc->contains("schema");
      std::cerr << skipped_note(f, has_schema ? "a " + (*doc)["schema"].dump() + " document, not a run record"
                                              : "not a run record (no \"schema\" key) nor a file a recipe names")
                << "\n";
      return InputOutcome::kSkipped;
    }
    case JsonKind::kRunRecord:
      break;
  }
  std::vector<RunRecordInput> run;
  if (!add_checked_record(*doc, f, run)) return InputOutcome::kRefused;
  for (const RunRecordInput& in : run) board.add(in);
  return InputOutcome::kRead;
}

/// Reads one YAML file: a recipe is validated and added to `board`; a catalog or any other YAML is skipped with a
/// note.
InputOutcome read_yaml_input_file(const std::string& f, const YamlSurvey& survey, LeaderboardBuilder& board) {
  const YamlKind kind = survey.kinds.at(f);
  if (kind != YamlKind::kRecipe) {
    std::cerr << skipped_note(f, not_a_recipe_reason(kind)) << "\n";
    return InputOutcome::kSkipped;
  }
  ValidatedRecipe v = validate_recipe_file(f);
  for (const auto& d : v.errors) std::cerr << d.to_string() << "\n";
  if (!v.ok()) return InputOutcome::kRefused;
  board.add(*v.recipe);
  return InputOutcome::kRead;
}

/// How many inputs were read and refused.
struct InputCounts {
  size_t read = 0;
  size_t refused = 0;
};

/// Reads and checks every input, one at a time, adding each to `board` and freeing it (a run record once its
/// entry is made); prints each problem, and a note for each file skipped as neither a recipe nor a run record
/// (report/report_inputs.h).
InputCounts read_inputs(const std::vector<std::string>& files, LeaderboardBuilder& board) {
  const YamlSurvey survey = survey_yaml(files);
  InputCounts n;
  for (const auto& f : files) {
    const InputOutcome o = std::filesystem::path(f).extension() == ".json" ? read_json_input_file(f, survey, board)
                                                                           : read_yaml_input_file(f, survey, board);
    n.read += o == InputOutcome::kRead ? 1 : 0;
    n.refused += o == InputOutcome::kRefused ? 1 : 0;
  }
  return n;
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

/// A byte-for-byte copy of each ranked recipe's file at its recipe_copy_path under `out` (the page's Download links),
/// each written atomically, one at a time (a board of thousands never holds every recipe's bytes at once).
/// Throws std::runtime_error when a copy cannot be read or written.
void write_recipe_copies(const Leaderboard& board, const std::string& out) {
  std::vector<std::string> names;  // the copies' file names, whose hidden temporaries a killed report may have left
  std::filesystem::path folder;
  for (const LeaderboardGroup& g : board.groups)
    for (const LeaderboardEntry& e : g.entries)
      if (const std::string copy = recipe_copy_path(e); !copy.empty()) {
        folder = (std::filesystem::path(out) / copy).parent_path();
        names.push_back(std::filesystem::path(copy).filename().string());
      }
  if (names.empty()) return;
  std::filesystem::create_directories(folder);
  remove_leftover_temp_files(folder.string(), names);
  for (const LeaderboardGroup& g : board.groups)
    for (const LeaderboardEntry& e : g.entries) {
      const std::string copy = recipe_copy_path(e);
      if (copy.empty()) continue;
      const std::filesystem::path to = std::filesystem::path(out) / copy;
      try {
        write_file_atomic(to.string(), read_input_file(e.file));
      } catch (const InputFileError& ex) {
        throw std::runtime_error(e.file + ": cannot be copied beside the page: " + ex.what());
      }
    }
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
    write_recipe_copies(board, out);
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
  options.token_budget = a.token_budget;
  LeaderboardBuilder builder(options);  // each input freed once added: the board holds what the files show
  const InputCounts inputs = read_inputs(files, builder);
  if (const size_t failed = inputs.refused) {
    std::cerr << "recipebench report: " << failed << " input" << (failed == 1 ? "" : "s")
              << " failed validation; nothing written\n";
    return kFailed;
  }
  if (inputs.read == 0) {  // only files that are neither recipes nor run records: nothing to rank, as for none
    std::cerr << "recipebench report: no recipe or run record among the " << files.size() << " file"
              << (files.size() == 1 ? "" : "s") << " under the given paths; nothing written\n";
    return kUsage;
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
  cmd->add_option("--token-budget", a->token_budget,
                  "Tokens the Pareto view's time to train counts (default 1e9: 1B tokens)")
      ->check(finite_positive());
  cmd->callback([&run, a] { run = [a]() -> int { return run_report(*a); }; });
}

}  // namespace recipebench::cli
