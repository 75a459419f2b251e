#include "fuzz_oracle.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "layout/rank_map.h"
#include "recipe/result_check.h"
#include "recipe/run_model.h"
#include "recipe/validate.h"
#include "record/run_record_check.h"
#include "report/leaderboard.h"

namespace recipebench::fuzz {

namespace {

constexpr const char* kRecipeName = "fuzz.yaml";

Verdict finding(std::string reason) { return Verdict{false, false, std::move(reason)}; }

/// Every diagnostic names the input and a line and column, and stays on one line.
Verdict check_diagnostics(const Diagnostics& errors, const std::string& file) {
  for (const auto& d : errors) {
    const std::string s = d.to_string();
    if (d.file != file || d.line < 1 || d.column < 1) return finding("an error without file:line:col: " + s);
    if (s.find('\n') != std::string::npos || s.find('\r') != std::string::npos)
      return finding("a diagnostic that spans lines: " + s);
  }
  return {};
}

Verdict check_recipe(const std::string& text) {
  const ValidatedRecipe v = validate_recipe_text(text, kRecipeName);
  Verdict out = check_diagnostics(v.errors, kRecipeName);
  if (!out.ok || !v.ok()) return out;
  out.accepted = true;
  // A valid recipe must give its dry-run rank map and a leaderboard without an error.
  const Recipe& r = *v.recipe;
  if (const auto model = run_model(r); model && r.layout.world() <= 65536) {
    try {
      (void)format_rank_map(build_rank_map(r, model->model));
    } catch (const std::invalid_argument& e) {
      return finding(std::string("a valid recipe whose rank map fails: ") + e.what());
    }
  }
  const Leaderboard board = build_leaderboard({r}, ReportOptions{});
  (void)leaderboard_to_json(board).dump();
  (void)leaderboard_to_html(board);
  return out;
}

Verdict check_record(const std::string& text) {
  const Json record = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (record.is_discarded() || !record.is_object()) return {};
  // The report's own checks (record/run_record_check.h): a refused record must carry its file and field.
  const CheckedRunRecord checked = check_run_record(record, "fuzz.json");
  if (!checked.ok()) {
    for (const auto& d : checked.errors)
      if (d.file != "fuzz.json" || (d.path.empty() && d.line == 0))
        return finding("a refused record without its file and field: " + d.to_string());
    return {};
  }
  const Leaderboard board = build_leaderboard({}, ReportOptions{}, {RunRecordInput{"fuzz.json", *checked.record}});
  (void)leaderboard_to_json(board).dump(-1, ' ', false, Json::error_handler_t::replace);
  (void)leaderboard_to_html(board);
  Verdict out;
  out.accepted = !board.groups.empty();
  return out;
}

}  // namespace

Verdict check_in_process(const std::string& text, InputKind kind) {
  try {
    return kind == InputKind::kRecipe ? check_recipe(text) : check_record(text);
  } catch (const std::exception& e) {
    return finding(std::string("an exception escaped (the CLI would print it without a location): ") + e.what());
  }
}

Verdict check_through_binary(const std::string& text, InputKind kind, const std::string& binary,
                             const std::string& dir) {
  const std::string file = dir + (kind == InputKind::kRecipe ? "/via-binary.yaml" : "/via-binary.json");
  const std::string log = dir + "/via-binary.log";
  std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    if (kind == InputKind::kRecipe)
      execl(binary.c_str(), binary.c_str(), "validate", file.c_str(), nullptr);
    else
      execl(binary.c_str(), binary.c_str(), "report", file.c_str(), "--out", (dir + "/report").c_str(), nullptr);
    _exit(127);
  }
  int status = 0;
  const auto start = std::chrono::steady_clock::now();
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(10)) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return finding("the binary hung (over 10 s)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (WIFSIGNALED(status)) return finding("the binary died of signal " + std::to_string(WTERMSIG(status)));
  const int rc = WEXITSTATUS(status);
  if (rc > 2) return finding("exit status " + std::to_string(rc) + " (expected 0, 1 or 2)");
  std::ifstream in(log);
  const std::regex located("^" + std::regex_replace(file, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
                           "(:[0-9]+:[0-9]+)?: error: .+");
  for (std::string line; std::getline(in, line);) {
    if (line.find("error") == std::string::npos) continue;
    if (line.rfind("recipebench: error:", 0) == 0) return finding("an error without a location: " + line);
    if (kind == InputKind::kRecipe && line.find(": error: ") != std::string::npos &&
        !std::regex_match(line,
                          std::regex("^" + std::regex_replace(file, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
                                     ":[0-9]+:[0-9]+: error: .+")))
      return finding("an error line without file:line:col: " + line);
    if (kind == InputKind::kRunRecord && line.find(": error: ") != std::string::npos &&
        !std::regex_match(line, located))
      return finding("an error line without the file: " + line);
  }
  Verdict out;
  out.accepted = rc == 0;
  return out;
}

}  // namespace recipebench::fuzz
