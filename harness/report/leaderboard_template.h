// The leaderboard page's fixed parts: its mustache template, its CSS and its inline script (docs/report.md).
#pragma once

namespace recipebench {

/// The page's kainjow mustache template; leaderboard_html.cpp documents the data it takes.
extern const char* const kLeaderboardTemplate;
/// One group's section, rendered per group into the page template's {{{groups_html}}}.
extern const char* const kGroupTemplate;
/// One entry's detail section (an `<article>`), rendered per entry into the page template's {{{articles_html}}}.
extern const char* const kArticleTemplate;
/// Inline CSS (grey-scale safe; print rules).
extern const char* const kLeaderboardCss;
/// The inline script: header-click sorting, filters (status, GPU type, backend), the two-entry comparison.
/// It only reads the page and writes text nodes (no innerHTML). The page is complete without it.
extern const char* const kLeaderboardScript;

}  // namespace recipebench
