#include "report/leaderboard_csv.h"

#include <optional>

#include "util/format.h"

namespace recipebench {

namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string opt(const std::optional<double>& v) { return v ? shortest(*v) : std::string(); }

/// A layout degree from the recipe's layout block; 1 when the recipe leaves it out (the schema's default).
std::string degree(const LeaderboardEntry& e, const char* key) {
  if (e.layout.is_object() && e.layout.contains(key) && e.layout[key].is_number_integer())
    return std::to_string(e.layout[key].get<int64_t>());
  return "1";
}

std::vector<std::string> row(const LeaderboardGroup& g, const LeaderboardEntry& e) {
  std::string max_tokens;
  if (e.layout.is_object() && e.layout.contains("max_tokens_per_gpu") && e.layout["max_tokens_per_gpu"].is_number())
    max_tokens = std::to_string(e.layout["max_tokens_per_gpu"].get<int64_t>());
  return {g.id,
          std::to_string(e.rank),
          e.id,
          e.kind,
          e.file,
          e.backend,
          e.deterministic ? (*e.deterministic ? "true" : "false") : "",
          e.status,
          e.model,
          e.gpu_type,
          std::to_string(e.gpus),
          std::to_string(e.row_tokens),
          std::to_string(e.global_batch),
          e.precision,
          e.layout_label,
          degree(e, "tp"),
          degree(e, "pp"),
          degree(e, "vpp"),
          degree(e, "cp"),
          degree(e, "ep"),
          degree(e, "etp"),
          degree(e, "dp"),
          max_tokens,
          shortest(e.tokens_per_s_per_gpu),
          opt(e.usd_per_million_tokens),
          e.usd_per_million_tokens ? shortest(e.usd_per_gpu_hour) : std::string(),
          opt(e.mfu),
          opt(e.step_time_cv_percent),
          opt(e.gpu_hours),
          e.measured,
          e.author,
          e.commit,
          std::to_string(e.earlier_runs.size())};
}

}  // namespace

const std::vector<std::string>& leaderboard_csv_columns() {
  static const std::vector<std::string> cols = {"group",
                                                "rank",
                                                "id",
                                                "kind",
                                                "file",
                                                "backend",
                                                "deterministic",
                                                "status",
                                                "model",
                                                "gpu_type",
                                                "gpus",
                                                "row_tokens",
                                                "global_batch",
                                                "precision",
                                                "layout",
                                                "tp",
                                                "pp",
                                                "vpp",
                                                "cp",
                                                "ep",
                                                "etp",
                                                "dp",
                                                "max_tokens_per_gpu",
                                                "tokens_per_s_per_gpu",
                                                "usd_per_million_tokens",
                                                "usd_per_gpu_hour",
                                                "mfu",
                                                "step_time_cv_percent",
                                                "gpu_hours",
                                                "measured",
                                                "author",
                                                "commit",
                                                "earlier_runs"};
  return cols;
}

std::string leaderboard_to_csv(const Leaderboard& board) {
  std::string out;
  auto line = [&out](const std::vector<std::string>& fields) {
    for (size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + csv_field(fields[i]);
    out += "\r\n";
  };
  line(leaderboard_csv_columns());
  for (const auto& g : board.groups)
    for (const auto& e : g.entries) line(row(g, e));
  return out;
}

}  // namespace recipebench
