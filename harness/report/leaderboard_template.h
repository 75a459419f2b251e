// The leaderboard page's fixed parts: its mustache template, its CSS and its inline script (docs/report.md).
#pragma once

namespace recipebench {

/// The page's kainjow mustache template; leaderboard_html.cpp documents the data it takes.
extern const char* const kLeaderboardTemplate;
/// Inline CSS (grey-scale safe; print rules).
extern const char* const kLeaderboardCss;
/// The inline script: header-click sorting, filters (status, GPU type, backend), the two-entry comparison.
/// It only reads the page and writes text nodes (no innerHTML). The page is complete without it.
extern const char* const kLeaderboardScript;

}  // namespace recipebench
