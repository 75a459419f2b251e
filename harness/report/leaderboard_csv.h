// The leaderboard as CSV (RFC 4180): one row per ranked entry, the columns defined in docs/metrics.md
// ("leaderboard.csv").
#pragma once

#include <string>
#include <vector>

#include "report/leaderboard.h"

namespace recipebench {

/// The column names, in order (docs/metrics.md, "leaderboard.csv").
const std::vector<std::string>& leaderboard_csv_columns();

/// Header line and one line per entry, groups in leaderboard order and entries by rank; CRLF line ends; a field
/// holding a comma, quote, CR or LF is quoted with its quotes doubled (RFC 4180). Numbers are written in full
/// (shortest round-trip text); an unknown figure is an empty field.
std::string leaderboard_to_csv(const Leaderboard& board);

}  // namespace recipebench
