// The leaderboard's views across entries (issue 46; report/board_views.h): the Pareto front of $ / 1M tokens against
// hours to train a token budget, the best entry at each GPU count, an entry's history across commits and dates, and
// a run entry's recipe YAML. Known figures: the seed's three B200 recipes (recipes/qwen3.5-397b-a17b/b200), the
// prediction of the case predicted-vs-measured-not-linked, and the imported Megatron-LM run of the case
// leaderboard-vs-seed-page. The browser side: tests/browser/board_views.test.js.
#include <catch2/catch.hpp>
#include <rapidjson/document.h>
#include <rapidjson/schema.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "recipe/validate.h"
#include "record/run_record_check.h"
#include "report/board_views.h"
#include "report/leaderboard.h"
#include "test_util.h"
#include "util/input_file.h"

using namespace recipebench;
using recipebench::test::case_path;
using recipebench::test::source_path;

namespace {

Recipe views_recipe(const std::string& file) {
  ValidatedRecipe v = validate_recipe_file(file);
  for (const auto& d : v.errors) FAIL_CHECK(d.to_string());
  REQUIRE(v.ok());
  return *v.recipe;
}

std::vector<Recipe> seed_three() {
  std::vector<Recipe> out;
  for (const char* stem : {"attune-48gpu-tp2-pp6-ep8", "attune-tp2-pp8-ep8-vpp2-mt8k", "attune-tp2-pp8-ep8-vpp2-mt16k"})
    out.push_back(views_recipe(source_path(std::string("recipes/qwen3.5-397b-a17b/b200/") + stem + ".yaml")));
  return out;
}

/// The case's imported run (its recipe's stack names commit 5f2e1c9a), checked.
RunRecordInput imported() {
  const std::vector<std::string> files = collect_files({case_path("leaderboard-vs-seed-page/runs")}, {".json"});
  REQUIRE(files.size() == 1);
  CheckedRunRecord checked = check_run_record(read_json_file(files[0]), files[0]);
  REQUIRE(checked.ok());
  return RunRecordInput{files[0], *checked.record};
}

/// Whether `j` follows schema/leaderboard.schema.json; the failing keyword in `why`.
bool follows_leaderboard_schema(const Json& j, std::string& why) {
  rapidjson::Document sd;
  sd.Parse(recipebench::test::read_file(source_path("schema/leaderboard.schema.json")).c_str());
  REQUIRE_FALSE(sd.HasParseError());
  const rapidjson::SchemaDocument schema(sd);
  rapidjson::Document d;
  d.Parse(j.dump().c_str());
  rapidjson::SchemaValidator validator(schema);
  const bool ok = d.Accept(validator);
  why = ok ? "" : validator.GetInvalidSchemaKeyword();
  return ok;
}

/// The number of times `what` occurs in `text`.
size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

/// A copy of `run` as another run of the same recipe: started at `at`, its stack at `commit`, `tps` tokens/s/GPU,
/// named `name` (its window's first step `window_first`: another window is another entry, not a repeat).
RunRecordInput rerun(RunRecordInput run, const std::string& name, const std::string& at, const std::string& commit,
                     double tps, int window_first) {
  run.file = name;
  run.record.started_at = at;
  run.record.recipe["stack"]["megatron_lm"] = "commit " + commit + " (core_r0.12.0)";
  run.record.metrics->window.tokens_per_s_per_gpu = tps;
  run.record.options.settings.window.first = window_first;
  return run;
}

}  // namespace

TEST_CASE("hours to train a token budget: budget / (tokens/s/GPU x GPUs) / 3600", "[report][views]") {
  CHECK(hours_to_train(1e9, 1232.53, 64) == Approx(1e9 / 78881.92 / 3600));  // 3.5214 h
  CHECK(hours_to_train(1e9, 1232.53, 64) == Approx(3.52145).epsilon(1e-5));
  CHECK(hours_to_train(3.6e6, 1000, 1) == Approx(1.0));
  CHECK_THROWS_AS(hours_to_train(0, 1000, 8), std::invalid_argument);
  CHECK_THROWS_AS(hours_to_train(1e9, 0, 8), std::invalid_argument);
  CHECK_THROWS_AS(hours_to_train(1e9, 1000, 0), std::invalid_argument);
}

TEST_CASE("the Pareto front of two figures both better lower", "[report][views]") {
  // (hours, $): (3,4) is beaten by (2,3) in both; (5,1) by (4,1) in hours at the same $; (2,3) twice: both on it.
  const std::vector<std::pair<double, double>> pts = {{1, 5}, {2, 3}, {3, 4}, {4, 1}, {2, 3}, {5, 1}, {0.5, 9}};
  CHECK(pareto_front(pts) == std::vector<bool>{true, true, false, true, true, false, true});
  CHECK(pareto_front({}).empty());
  CHECK(pareto_front({{7, 7}}) == std::vector<bool>{true});
  // Equal points beaten by another are off together.
  CHECK(pareto_front({{2, 2}, {2, 2}, {1, 1}}) == std::vector<bool>{false, false, true});
  // The brute-force definition agrees on a scrambled grid.
  std::vector<std::pair<double, double>> grid;
  for (int i = 0; i < 40; ++i) grid.emplace_back((i * 7) % 11, (i * 5) % 13);
  const std::vector<bool> front = pareto_front(grid);
  for (size_t i = 0; i < grid.size(); ++i) {
    bool dominated = false;
    for (const auto& q : grid)
      dominated = dominated || (q.first <= grid[i].first && q.second <= grid[i].second && q != grid[i]);
    INFO(i);
    CHECK(front[i] == !dominated);
  }
}

TEST_CASE("the seed's Pareto view at 1B tokens: the 16k layout is both fastest and cheapest", "[report][views]") {
  const Leaderboard board = build_leaderboard(seed_three(), {});
  REQUIRE(board.groups.size() == 1);
  const std::vector<ParetoPoint> view = pareto_view(board.groups[0], board.token_budget);
  REQUIRE(view.size() == 3);
  CHECK(view[0].id == "attune-tp2-pp8-ep8-vpp2-mt16k");
  CHECK(view[0].hours == Approx(3.52145).epsilon(1e-5));                     // 1e9 / (1232.53 x 64) / 3600
  CHECK(view[1].hours == Approx(1e9 / (1130.65 * 64) / 3600));                // 3.8388 h
  CHECK(view[2].hours == Approx(1e9 / (1075.50 * 48) / 3600));                // 5.3809 h
  CHECK(view[0].usd_for_budget == Approx(view[0].usd_per_million_tokens * 1000));
  CHECK((view[0].on_front && !view[1].on_front && !view[2].on_front));
  // The page draws it: three points, each a link to its card, one on the front; the budget named.
  const std::string html = leaderboard_to_html(board);
  const size_t at = html.find("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" id=\"pareto-");
  REQUIRE(at != std::string::npos);
  const std::string svg = html.substr(at, html.find("</svg>", at) - at);
  CHECK(occurrences(svg, "<a href=\"#") == 3);
  CHECK(occurrences(svg, "data-front=\"1\"") == 1);
  CHECK(svg.find("<a href=\"#attune-tp2-pp8-ep8-vpp2-mt16k\" data-front=\"1\">") != std::string::npos);
  CHECK(svg.find("hours to train 1B tokens") != std::string::npos);
  // A larger budget scales the hours, not the front.
  const std::vector<ParetoPoint> ten = pareto_view(board.groups[0], 1e10);
  CHECK(ten[2].hours == Approx(10 * view[2].hours));
  CHECK((ten[0].on_front && !ten[1].on_front && !ten[2].on_front));
}

TEST_CASE("best layout by GPU count: the group's best entry at 48 and at 64 GPUs", "[report][views]") {
  const Leaderboard board = build_leaderboard(seed_three(), {});
  const LeaderboardGroup& g = board.groups[0];
  const std::vector<GpuCountBest> best = best_by_gpu_count(g);
  REQUIRE(best.size() == 2);
  CHECK(best[0].gpus == 48);
  CHECK(best[0].entries == 1);
  CHECK(g.entries[best[0].best].id == "attune-48gpu-tp2-pp6-ep8");
  CHECK(g.entries[best[0].best].rank == 3);  // the worst of the group, but the best at 48 GPUs
  CHECK(best[1].gpus == 64);
  CHECK(best[1].entries == 2);
  CHECK(g.entries[best[1].best].id == "attune-tp2-pp8-ep8-vpp2-mt16k");  // 1,232.5 over mt8k's 1,130.7
  // One count only: no view.
  LeaderboardGroup one = g;
  one.entries.pop_back();
  CHECK(best_by_gpu_count(one).empty());
}

TEST_CASE("history: a measured recipe and the prediction of its layout, in date order, kinds apart", "[report][views]") {
  std::vector<Recipe> recipes = seed_three();
  recipes.push_back(
      views_recipe(case_path("predicted-vs-measured-not-linked/plan-tp2-pp8-vpp2-ep8-dp4-split6-mt16k-recompute.yaml")));
  const Leaderboard board = build_leaderboard(recipes, {});
  const LeaderboardEntry& first = board.groups[0].entries[0];
  REQUIRE(first.id == "attune-tp2-pp8-ep8-vpp2-mt16k");
  REQUIRE(first.history.size() == 2);
  CHECK(first.history[0].kind == HistoryPoint::Kind::kMeasured);
  CHECK(first.history[0].date == "2026-10-18");
  CHECK(first.history[0].commit == "1dcf0daf");  // the commit its stack names
  CHECK(first.history[0].tokens_per_s_per_gpu == Approx(1232.53));
  CHECK(first.history[0].self);
  CHECK(first.history[1].kind == HistoryPoint::Kind::kPredicted);
  CHECK(first.history[1].date == "2026-12-05");
  CHECK(first.history[1].commit == "088a0e21c9482a257e53e048efc37059060bbf1a");  // what `by` names
  CHECK(first.history[1].tokens_per_s_per_gpu == Approx(2222.6).epsilon(1e-4));
  CHECK_FALSE(first.history[1].self);
  // The other recipes have one point each: no history.
  CHECK(board.groups[0].entries[1].history.empty());
  const Json j = leaderboard_to_json(board);
  CHECK(j["groups"][0]["entries"][0]["history"]["points"].size() == 2);
  CHECK(j["groups"][0]["entries"][0]["history"]["points"][1]["kind"] == "predicted");
  CHECK(j["groups"][0]["entries"][1]["history"].is_null());
  CHECK(j["token_budget"] == 1e9);
  CHECK(j["groups"][0]["pareto"].size() == 3);
  CHECK(j["groups"][0]["best_by_gpu_count"][0]["id"] == "attune-48gpu-tp2-pp6-ep8");
  std::string why;
  const bool follows = follows_leaderboard_schema(j, why);
  INFO("failed keyword: " << why);
  CHECK(follows);
  Json broken = j;  // negative control: a point of another kind
  broken["groups"][0]["entries"][0]["history"]["points"][1]["kind"] = "guessed";
  CHECK_FALSE(follows_leaderboard_schema(broken, why));
}

TEST_CASE("history: runs of one recipe at three commits, folded or not, oldest first", "[report][views]") {
  const RunRecordInput run = imported();
  // Two repeats (one window: folded, the later ranked) and a run with another window (an entry of its own). The
  // folded one and the other share a file name in two folders: an earlier run's id is not unique, its file is.
  const std::vector<RunRecordInput> runs = {
      rerun(run, "2/run.json", "2026-12-03T09:00:00Z", "cccc333", 900, 7),
      rerun(run, "1/run-b.json", "2026-12-02T09:00:00Z", "bbbb222", 1000, 5),
      rerun(run, "0/run.json", "2026-12-01T09:00:00Z", "aaaa111", 950, 5)};
  ReportOptions options;
  options.fold_repeated_runs = true;
  const Leaderboard board = build_leaderboard({}, options, runs);
  REQUIRE(board.groups.size() == 1);
  const LeaderboardGroup& g = board.groups[0];
  REQUIRE(g.entries.size() == 2);  // b (with a folded under it) and c
  for (const LeaderboardEntry& e : g.entries) {
    INFO(e.id);
    REQUIRE(e.history.size() == 3);
    CHECK(e.history[0].commit == "aaaa111");
    CHECK(e.history[1].commit == "bbbb222");
    CHECK(e.history[2].commit == "cccc333");
    CHECK(e.history[0].date == "2026-12-01T09:00:00Z");
    CHECK(e.history[2].tokens_per_s_per_gpu == Approx(900));
    size_t self = 0;
    for (const HistoryPoint& p : e.history) self += p.self ? 1 : 0;
    CHECK(self == 1);
  }
  CHECK(g.entries[0].id == "run-b");  // 1,000 tokens/s/GPU over the other's 900
  CHECK(g.entries[0].history[1].self);
  CHECK(g.entries[1].id == "run");  // as the folded earlier run's id: only its own point is marked
  CHECK(g.entries[1].history[2].self);
  CHECK_FALSE(g.entries[1].history[0].self);
}

TEST_CASE("sort_history: by date text (a day before the times of that day), measured before predicted, then file",
          "[report][views]") {
  using K = HistoryPoint::Kind;
  std::vector<HistoryPoint> pts = {{K::kMeasured, "r2", "", "", "2026-12-05T10:00:00Z", 3, false},
                                   {K::kPredicted, "p", "", "", "2026-12-05", 4, false},
                                   {K::kMeasured, "r1", "", "", "2026-11-01T10:00:00Z", 2, false},
                                   {K::kMeasured, "q", "", "", "2026-12-05", 1, false}};
  sort_history(pts);
  std::vector<std::string> ids;
  for (const HistoryPoint& p : pts) ids.push_back(p.id);
  CHECK(ids == std::vector<std::string>{"r1", "q", "p", "r2"});
}

TEST_CASE("a run entry's recipe: shown when its file still has the recorded sha256, else said why", "[report][views]") {
  RunRecordInput run = imported();
  // The record names "mixtral-stack-commit.yaml" relative to where it was imported: found beside the record's folder?
  // Not there (it is one folder up): point it at the case's copy, whose bytes the record's sha256 is of.
  run.record.recipe_path = case_path("leaderboard-vs-seed-page/mixtral-stack-commit.yaml");
  Leaderboard board = build_leaderboard({}, {}, {run});
  const LeaderboardEntry& e = board.groups[0].entries[0];
  CHECK(e.recipe_file == run.record.recipe_path);
  CHECK(recipe_copy_path(e) == "leaderboard-recipes/" + e.id + ".yaml.txt");
  const std::string html = leaderboard_to_html(board);
  CHECK(html.find("<h4>Recipe it was made from</h4>") != std::string::npos);
  CHECK(html.find("<pre class=\"yaml\">") != std::string::npos);
  run.record.recipe_sha256 = std::string(64, '0');  // another recipe than the file's
  board = build_leaderboard({}, {}, {run});
  CHECK(board.groups[0].entries[0].recipe_file.empty());
  CHECK(board.groups[0].entries[0].recipe_unavailable.find("has changed since the run") != std::string::npos);
  CHECK(recipe_copy_path(board.groups[0].entries[0]).empty());
}

TEST_CASE("a prediction is linked to a measurement of its layout before generated test data of it", "[report][views]") {
  Recipe copy = views_recipe(source_path("recipes/qwen3.5-397b-a17b/b200/attune-tp2-pp8-ep8-vpp2-mt16k.yaml"));
  copy.file = "/!/generated-copy.yaml";  // first by path (! before any folder name), measured the same day
  copy.doc["generated"] = "tests/browser/generate_board.js";
  std::vector<Recipe> recipes = seed_three();
  recipes.insert(recipes.begin(), copy);
  recipes.push_back(
      views_recipe(case_path("predicted-vs-measured-not-linked/plan-tp2-pp8-vpp2-ep8-dp4-split6-mt16k-recompute.yaml")));
  const Leaderboard board = build_leaderboard(recipes, {});
  REQUIRE(board.predictions.size() == 1);
  CHECK(board.predictions[0].measured_id == "attune-tp2-pp8-ep8-vpp2-mt16k");
  copy.doc.erase("generated");  // a real measurement of the same day: then the first by file, as before
  recipes.front() = copy;
  CHECK(build_leaderboard(recipes, {}).predictions[0].measured_file == "/!/generated-copy.yaml");
}
