// The leaderboard's views across entries (docs/report.md, "Views across entries"): the Pareto view of cost against
// time to train a stated token budget, the best entry at each GPU count, and an entry's history across commits.
// Pure computations on a built board; the page (leaderboard_html.cpp) and leaderboard.json both show them.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "report/leaderboard.h"
#include "report/predictions.h"

namespace recipebench {

/// Hours to train `budget_tokens` at `tokens_per_s_per_gpu` on `gpus` GPUs: budget / (tokens/s/GPU x GPUs) / 3600
/// (docs/report.md, "Pareto view"). Throws std::invalid_argument when a figure is not positive and finite.
double hours_to_train(double budget_tokens, double tokens_per_s_per_gpu, int gpus);

/// Which points are on the Pareto front of two figures both better lower (hours, $): point i is on it when no other
/// point is at most as large in both and smaller in one. Points equal in both are on it or off it together. O(n log
/// n); the result has one flag per point, in the input's order.
std::vector<bool> pareto_front(const std::vector<std::pair<double, double>>& points);

/// One entry of a group's Pareto view.
struct ParetoPoint {
  std::string id, label;  ///< the entry's id (its card's anchor) and layout label
  int rank = 0, gpus = 0;
  bool run = false;                   ///< a run record (drawn as a square), else a recipe (a circle)
  double hours = 0;                   ///< hours_to_train(budget, tokens/s/GPU, GPUs)
  double usd_per_million_tokens = 0;  ///< the entry's computed $ / 1M tokens
  double usd_for_budget = 0;          ///< usd_per_million_tokens x budget / 1e6
  bool on_front = false;              ///< pareto_front of (hours, usd_per_million_tokens)
};

/// The Pareto view of group `g` at `budget_tokens`: each entry with a $ figure, in rank order; empty when fewer
/// than two entries have one (nothing to trade off).
std::vector<ParetoPoint> pareto_view(const LeaderboardGroup& g, double budget_tokens);

/// The best entry of a group at one GPU count: the group's ranking is by tokens/s/GPU, so its first entry at that
/// count.
struct GpuCountBest {
  int gpus = 0;
  size_t entries = 0;  ///< the group's entries at this count
  size_t best = 0;     ///< index of the best of them in the group's (ranked) entries
};

/// For each GPU count of group `g`, fewest GPUs first, its best entry by the group's rank key; empty when every
/// entry runs on one count (docs/report.md, "Best layout by GPU count").
std::vector<GpuCountBest> best_by_gpu_count(const LeaderboardGroup& g);

/// Where the history's identity of an entry's recipe is compared: the recipe file (a recipe entry's file, a run's
/// recorded recipe_path) as an absolute, lexically normal path, so "recipes/x.yaml" and "./recipes/x.yaml" agree.
std::string recipe_key(const std::string& file);

/// The history of every entry of `board` (LeaderboardEntry::history): the measured points of its recipe in its
/// group (every entry made from the same recipe_key: of its recipe_file where one was found, else of the path it
/// names; and their earlier runs) and the predictions linked to that
/// recipe (PredictedEntry::measured_file), each with its commit and date, oldest first; left empty for an entry whose
/// recipe has one point only.
void set_histories(Leaderboard& board);

/// Orders a history's points: by the text of their date (a run's started_at, a recipe's day measured, a prediction's
/// day; so a day comes before the times of that day), a measured point before a predicted one of the same date, then
/// by file (runs started within one second: their records' paths), then by id.
void sort_history(std::vector<HistoryPoint>& points);

}  // namespace recipebench
