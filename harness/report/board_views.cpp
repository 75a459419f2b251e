#include "report/board_views.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>
#include <stdexcept>
#include <tuple>

namespace recipebench {

double hours_to_train(double budget_tokens, double tokens_per_s_per_gpu, int gpus) {
  const auto positive = [](double v) { return std::isfinite(v) && v > 0; };
  if (!positive(budget_tokens) || !positive(tokens_per_s_per_gpu) || gpus <= 0)
    throw std::invalid_argument("hours_to_train: budget, tokens/s/GPU and GPUs must be positive");
  return budget_tokens / (tokens_per_s_per_gpu * gpus) / 3600.0;
}

std::vector<bool> pareto_front(const std::vector<std::pair<double, double>>& points) {
  std::vector<size_t> order(points.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&points](size_t a, size_t b) { return points[a] < points[b]; });
  // Swept by x then y: a point is dominated when an earlier point (x no larger) has a smaller y, or the same y at a
  // smaller x. Points equal in both share their fate: the first of a run of equals decides for them all.
  std::vector<bool> front(points.size(), false);
  bool any = false;
  double best_y = 0, best_y_x = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    const auto& p = points[order[k]];
    if (k > 0 && p == points[order[k - 1]]) {
      front[order[k]] = front[order[k - 1]];
      continue;
    }
    const bool dominated = any && (best_y < p.second || (best_y == p.second && best_y_x < p.first));
    front[order[k]] = !dominated;
    if (!any || p.second < best_y) {
      best_y = p.second;
      best_y_x = p.first;
      any = true;
    }
  }
  return front;
}

std::vector<ParetoPoint> pareto_view(const LeaderboardGroup& g, double budget_tokens) {
  std::vector<ParetoPoint> out;
  for (const LeaderboardEntry& e : g.entries) {
    if (!e.usd_per_million_tokens || e.tokens_per_s_per_gpu <= 0 || e.gpus <= 0) continue;
    ParetoPoint p;
    p.id = e.id;
    p.label = e.layout_label;
    p.rank = e.rank;
    p.gpus = e.gpus;
    p.run = e.kind == "run";
    p.hours = hours_to_train(budget_tokens, e.tokens_per_s_per_gpu, e.gpus);
    p.usd_per_million_tokens = *e.usd_per_million_tokens;
    p.usd_for_budget = p.usd_per_million_tokens * budget_tokens / 1e6;
    out.push_back(p);
  }
  if (out.size() < 2) return {};
  std::vector<std::pair<double, double>> xy;
  for (const ParetoPoint& p : out) xy.emplace_back(p.hours, p.usd_per_million_tokens);
  const std::vector<bool> front = pareto_front(xy);
  for (size_t i = 0; i < out.size(); ++i) out[i].on_front = front[i];
  return out;
}

std::vector<GpuCountBest> best_by_gpu_count(const LeaderboardGroup& g) {
  std::map<int, GpuCountBest> by_count;
  for (size_t i = 0; i < g.entries.size(); ++i) {
    auto [it, first] = by_count.emplace(g.entries[i].gpus, GpuCountBest{g.entries[i].gpus, 0, i});
    ++it->second.entries;
    // The entries are ranked (best first) already; this only guards an unranked order.
    if (!first && g.entries[i].rank < g.entries[it->second.best].rank) it->second.best = i;
  }
  if (by_count.size() < 2) return {};
  std::vector<GpuCountBest> out;
  for (const auto& [_, best] : by_count) out.push_back(best);
  return out;
}

std::string recipe_key(const std::string& file) {
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(file, ec);
  return (ec ? std::filesystem::path(file) : abs).lexically_normal().string();
}

void sort_history(std::vector<HistoryPoint>& points) {
  std::sort(points.begin(), points.end(), [](const HistoryPoint& a, const HistoryPoint& b) {
    return std::tie(a.date, a.kind, a.file, a.id) < std::tie(b.date, b.kind, b.file, b.id);
  });
}

namespace {

/// The day a point's date falls on ("2026-12-05T22:06:06Z" -> "2026-12-05"), so a recipe's day and a run's time of
/// the same day order by kind, then id.
std::string day_of(const std::string& date) { return date.substr(0, 10); }

/// The measured points of entry `e` (its own and its earlier runs').
void measured_points(const LeaderboardEntry& e, std::vector<HistoryPoint>& out) {
  HistoryPoint p;
  p.id = e.id;
  p.file = e.file;
  p.commit = e.commit;
  p.date = e.started_at.empty() ? day_of(e.measured) : e.started_at;
  p.tokens_per_s_per_gpu = e.tokens_per_s_per_gpu;
  out.push_back(p);
  for (const EarlierRun& r : e.earlier_runs)
    out.push_back(HistoryPoint{HistoryPoint::Kind::kMeasured, r.id, r.file, r.commit,
                               r.started_at.empty() ? day_of(r.measured) : r.started_at, r.tokens_per_s_per_gpu,
                               false});
}

/// A prediction as a point: its day, and the commit its `by` names ("recipebench 0.1.0 (commit 088a0e2...) plan").
HistoryPoint predicted_point(const PredictedEntry& p) {
  return HistoryPoint{HistoryPoint::Kind::kPredicted,
                      std::filesystem::path(p.file).stem().string(),
                      p.file,
                      stack_commit(Json{{"by", p.by}}),
                      p.predicted,
                      p.tokens_per_s_per_gpu,
                      false};
}

/// The recipe an entry's history is of: where its recipe file was found (a run's recipe beside its record), else
/// the path it names.
std::string history_key(const LeaderboardEntry& e) {
  return recipe_key(e.recipe_file.empty() ? e.recipe_of : e.recipe_file);
}

}  // namespace

void set_histories(Leaderboard& board) {
  std::multimap<std::string, const PredictedEntry*> predicted;  // by the measured recipe's key
  for (const PredictedEntry& p : board.predictions)
    if (!p.measured_file.empty() && p.measured_file != p.file) predicted.emplace(recipe_key(p.measured_file), &p);
  for (LeaderboardGroup& g : board.groups) {
    std::map<std::string, std::vector<HistoryPoint>> of_recipe;  // recipe_key -> its points in this group
    for (const LeaderboardEntry& e : g.entries) measured_points(e, of_recipe[history_key(e)]);
    for (auto& [key, points] : of_recipe) {
      const auto [from, to] = predicted.equal_range(key);
      for (auto it = from; it != to; ++it) points.push_back(predicted_point(*it->second));
      sort_history(points);
    }
    for (LeaderboardEntry& e : g.entries) {
      const std::vector<HistoryPoint>& points = of_recipe[history_key(e)];
      if (points.size() < 2) continue;
      e.history = points;
      for (HistoryPoint& p : e.history) p.self = p.kind == HistoryPoint::Kind::kMeasured && p.file == e.file;
    }
  }
}

}  // namespace recipebench
