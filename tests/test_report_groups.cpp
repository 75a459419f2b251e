// The leaderboard's groups (harness/report/leaderboard.cpp, docs/reports.md "Groups"): one group is one workload
// (model and layers that ran, GPU, row tokens, global batch, precision, kind of rows), its title says what
// separates it, and the report does not depend on the order of its inputs. The cases of 2026-12-02
// (tests/data/cases/report-group-rows-label-order, leaderboard-identical-group-titles) and variants.
#include <catch2/catch.hpp>

#include <rapidjson/document.h>
#include <rapidjson/schema.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "recipe/validate.h"
#include "record/run_record_check.h"
#include "report/compare.h"
#include "report/leaderboard.h"
#include "report/leaderboard_csv.h"
#include "report/svg_chart.h"
#include "test_util.h"
#include "util/format.h"

using namespace recipebench;
using recipebench::test::case_path;
using recipebench::test::recipe_file_errors;
using recipebench::test::source_path;

namespace {

/// The leaderboard `report` builds from `files`, in that order: recipes validated, run records checked.
Leaderboard board_of(const std::vector<std::string>& files) {
  std::vector<Recipe> recipes;
  std::vector<RunRecordInput> runs;
  for (const std::string& f : files) {
    if (std::filesystem::path(f).extension() == ".json") {
      CheckedRunRecord checked = check_run_record(read_json_file(f), f);
      for (const auto& d : checked.errors) FAIL_CHECK(d.to_string());
      REQUIRE(checked.ok());
      runs.push_back(RunRecordInput{f, *checked.record});
    } else {
      ValidatedRecipe v = validate_recipe_file(f);
      for (const auto& d : v.errors) FAIL_CHECK(d.to_string());
      REQUIRE(v.ok());
      recipes.push_back(*v.recipe);
    }
  }
  ReportOptions options;
  options.fold_repeated_runs = true;  // as `report` does
  return build_leaderboard(recipes, options, runs);
}

/// Every `<h2>...</h2>` of the page, in order.
std::vector<std::string> headings(const std::string& html) {
  std::vector<std::string> out;
  for (size_t at = html.find("<h2>"); at != std::string::npos; at = html.find("<h2>", at + 1))
    out.push_back(html.substr(at + 4, html.find("</h2>", at) - at - 4));
  return out;
}

const char* const kProxy = " (proxy: 4 of 40 layers) on H200";
const char* const kDot = " \xC2\xB7 ";

}  // namespace

TEST_CASE("report-group-rows-label-order (2026-12-02): other rows are another group, whatever the input order",
          "[cases][report][groups]") {
  const std::string proxy = case_path("report-group-rows-label-order/proxy4l-1gpu-bf16-20261201T204200Z.json");
  const std::string peer = case_path("report-group-rows-label-order/peer-hf-1gpu-bf16-20261201T204216Z.json");
  const Leaderboard a = board_of({proxy, peer});
  const Leaderboard b = board_of({peer, proxy});
  // The torch backend's synthetic rows (settings.data: 67.6% supervised) and the peer's uniform random ids (its
  // recipe's workload.rows): two workloads, two groups, each titled by what separates it.
  REQUIRE(a.groups.size() == 2);
  const LeaderboardGroup& synthetic = a.groups[0];
  const LeaderboardGroup& uniform = a.groups[1];
  CHECK(synthetic.title ==
        std::string("Training Qwen3.5-35B-A3B") + kProxy + kDot + "synthetic rows, 67.6% supervised");
  CHECK(synthetic.rows_kind == "synthetic");
  CHECK(synthetic.rows == "synthetic learnable rows (seeded), 67.6% of tokens supervised");
  REQUIRE(synthetic.entries.size() == 1);
  CHECK(synthetic.entries[0].file == proxy);
  CHECK(uniform.title == std::string("Training Qwen3.5-35B-A3B") + kProxy + kDot + "uniform random rows");
  CHECK(uniform.rows_kind == "uniform_random");
  CHECK(uniform.rows == "uniform random token ids, every token a loss target");
  REQUIRE(uniform.entries.size() == 1);
  CHECK(uniform.entries[0].file == peer);
  CHECK(synthetic.id != uniform.id);
  // The same report in either order: groups, titles, subtitles, the page.
  CHECK(leaderboard_to_json(a)["groups"] == leaderboard_to_json(b)["groups"]);
  const std::string html = leaderboard_to_html(a);
  CHECK(html == leaderboard_to_html(b));
  CHECK(html.find("Ranked by tokens/s per GPU \xC2\xB7 8,192-token synthetic learnable rows (seeded), 67.6% of "
                  "tokens supervised \xC2\xB7 global batch 2 \xC2\xB7 BF16") != std::string::npos);
  CHECK(html.find("Ranked by tokens/s per GPU \xC2\xB7 8,192-token rows of uniform random token ids, every token a "
                  "loss target \xC2\xB7 global batch 2 \xC2\xB7 BF16") != std::string::npos);
  CHECK(leaderboard_to_json(a)["groups"][1]["workload"]["rows_kind"] == "uniform_random");
}

TEST_CASE("leaderboard-identical-group-titles (2026-12-02): every group's title unique, full size first, an index",
          "[cases][report][groups]") {
  const std::string dir = case_path("leaderboard-identical-group-titles/");
  const std::vector<std::string> files = {dir + "attune-tp2-pp8-ep8-vpp2-mt16k.yaml",
                                          dir + "proxy4l-1gpu-bf16-20261201T204200Z.json",
                                          dir + "proxy4l-2gpu-dp2-bf16-20261130T210302Z.json"};
  const Leaderboard board = board_of(files);
  REQUIRE(board.groups.size() == 3);
  // The full-size seed first (its rows are a dataset's: real rows); the two proxies differ only in global batch.
  CHECK(board.groups[0].title == "Training Qwen3.5-397B-A17B on B200");
  CHECK(board.groups[0].rows == "real rows (SFT conversations)");
  CHECK(board.groups[1].title == std::string("Training Qwen3.5-35B-A3B") + kProxy + kDot + "global batch 2");
  CHECK(board.groups[2].title == std::string("Training Qwen3.5-35B-A3B") + kProxy + kDot + "global batch 4");
  const std::string html = leaderboard_to_html(board);
  const std::vector<std::string> h2 = headings(html);
  // The index first, then one heading per group; the comparison panel (shown once an entry is ticked) last.
  const std::vector<std::string> want = {"Groups", board.groups[0].title, board.groups[1].title,
                                         board.groups[2].title, "Compare two entries"};
  CHECK(h2 == want);
  // The index comes before the filters and the first group's table before its charts: the first screen shows the
  // contents and the full-size group's ranking.
  CHECK(html.find("id=\"groups-index\"") < html.find("id=\"filters\""));
  CHECK(html.find("<table class=\"board\">") < html.find("id=\"bars-" + board.groups[0].id));
  for (const LeaderboardGroup& g : board.groups)
    CHECK(html.find("<li><a href=\"#" + g.id + "\">" + g.title + "</a>") != std::string::npos);
  // Any order of the inputs gives the same page.
  std::vector<std::string> shuffled = {files[2], files[0], files[1]};
  CHECK(leaderboard_to_html(board_of(shuffled)) == html);
}

TEST_CASE("groups: a supervised fraction or rows file of its own is another workload, titled so", "[report][groups]") {
  const std::string proxy = case_path("report-group-rows-label-order/proxy4l-1gpu-bf16-20261201T204200Z.json");
  CheckedRunRecord checked = check_run_record(read_json_file(proxy), proxy);
  REQUIRE(checked.ok());
  const RunRecord base = *checked.record;
  RunRecord half = base;
  half.options.settings.data.supervised_token_ratio = 0.5;
  RunRecord file = base;
  file.options.settings.data.source = DataSource::kFile;
  file.options.settings.data.path = "rows.bin";
  const std::vector<RunRecordInput> runs = {{"a.json", base}, {"b.json", half}, {"c.json", file}, {"d.json", base}};
  const Leaderboard board = build_leaderboard({}, {}, runs);
  REQUIRE(board.groups.size() == 3);
  const std::string head = std::string("Training Qwen3.5-35B-A3B") + kProxy + kDot;
  CHECK(board.groups[0].title == head + "real rows");
  CHECK(board.groups[0].rows_kind == "real");
  CHECK(board.groups[1].title == head + "synthetic rows, 50.0% supervised");
  CHECK(board.groups[2].title == head + "synthetic rows, 67.6% supervised");
  REQUIRE(board.groups[2].entries.size() == 2);  // a.json and d.json: one workload (not folded: no option)
  // Reversed inputs: the same groups in the same order.
  const std::vector<RunRecordInput> reversed(runs.rbegin(), runs.rend());
  CHECK(leaderboard_to_json(build_leaderboard({}, {}, reversed))["groups"] == leaderboard_to_json(board)["groups"]);
  // Titles are unique whatever separates the groups.
  std::vector<std::string> titles;
  for (const auto& g : board.groups) titles.push_back(g.title);
  std::sort(titles.begin(), titles.end());
  CHECK(std::adjacent_find(titles.begin(), titles.end()) == titles.end());
}

namespace {

/// `json` checked against schema/leaderboard.schema.json; the failing keyword as the message when it fails.
std::string schema_problem(const Json& json) {
  rapidjson::Document sd;
  sd.Parse(test::read_file(source_path("schema/leaderboard.schema.json")).c_str());
  REQUIRE_FALSE(sd.HasParseError());
  rapidjson::SchemaDocument schema(sd);
  rapidjson::Document d;
  d.Parse(json.dump().c_str());
  rapidjson::SchemaValidator validator(schema);
  return d.Accept(validator) ? "" : std::string(validator.GetInvalidSchemaKeyword());
}

/// The entry of `board` whose id starts with `prefix`; fails the test when there is none.
const LeaderboardEntry& entry_of(const Leaderboard& board, const std::string& prefix) {
  for (const auto& g : board.groups)
    for (const auto& e : g.entries)
      if (e.id.rfind(prefix, 0) == 0) return e;
  FAIL("no entry " << prefix);
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("leaderboard-repeated-runs-mixed-commits (2026-12-02): the latest run ranked, the earlier folded under it",
          "[cases][report][groups]") {
  const std::string dir = case_path("leaderboard-repeated-runs-mixed-commits/");
  const std::vector<std::string> files = {dir + "proxy4l-2gpu-dp2-bf16-20261130T000607Z.json",
                                          dir + "proxy4l-2gpu-dp2-bf16-20261130T210302Z.json",
                                          dir + "proxy4l-2gpu-ep2-bf16-20261130T000706Z.json",
                                          dir + "proxy4l-2gpu-ep2-bf16-20261130T210326Z.json"};
  const Leaderboard board = board_of(files);
  // Four records, two layouts run by two commits: two ranked entries (the 25cb23d runs), each with its 814c7b0 run.
  REQUIRE(board.groups.size() == 1);
  const auto& entries = board.groups[0].entries;
  REQUIRE(entries.size() == 2);
  CHECK(entries[0].id == "proxy4l-2gpu-ep2-bf16-20261130t210326z");
  CHECK(entries[0].layout_label == "TP1 PP1 EP2 DP2");
  CHECK(fixed(entries[0].tokens_per_s_per_gpu, 0) == "45,758");
  CHECK(short_commit(entries[0].commit) == "25cb23d");
  CHECK(entries[1].id == "proxy4l-2gpu-dp2-bf16-20261130t210302z");
  CHECK(fixed(entries[1].tokens_per_s_per_gpu, 0) == "44,623");
  REQUIRE(entries[0].earlier_runs.size() == 1);
  REQUIRE(entries[1].earlier_runs.size() == 1);
  const EarlierRun& ep_old = entries[0].earlier_runs[0];
  CHECK(ep_old.id == "proxy4l-2gpu-ep2-bf16-20261130t000706z");
  CHECK(short_commit(ep_old.commit) == "814c7b0");
  CHECK(ep_old.started_at == "2026-11-30T00:07:06Z");
  CHECK(fixed(ep_old.tokens_per_s_per_gpu, 0) == "17,672");
  CHECK(fixed(entries[1].earlier_runs[0].tokens_per_s_per_gpu, 0) == "17,754");
  // The trend, oldest first: 17,672 then 45,758 (+158.9%).
  const std::vector<double> trend = run_trend(entries[0]);
  REQUIRE(trend.size() == 2);
  CHECK(trend[0] == ep_old.tokens_per_s_per_gpu);
  CHECK(trend[1] == entries[0].tokens_per_s_per_gpu);
  // leaderboard.json: the commit, the nested earlier runs and the trend, valid against the schema.
  const Json json = leaderboard_to_json(board);
  const Json& j0 = json["groups"][0]["entries"][0];
  CHECK(j0["commit"].get<std::string>().rfind("25cb23d", 0) == 0);
  REQUIRE(j0["earlier_runs"].size() == 1);
  CHECK(j0["earlier_runs"][0]["commit"].get<std::string>().rfind("814c7b0", 0) == 0);
  CHECK(j0["earlier_runs"][0]["file"] == files[2]);
  CHECK(j0["trend"]["runs"] == 2);
  CHECK(j0["trend"]["change_from_first"].get<double>() == Approx(45758.0 / 17672.0 - 1).epsilon(1e-4));
  CHECK(schema_problem(json).empty());
  // The page: distinct bar labels, the commit column, the fold with the earlier run's commit and figure.
  const std::string html = leaderboard_to_html(board);
  CHECK(html.find(">#1  TP1 PP1 EP2 DP2</text>") != std::string::npos);
  CHECK(html.find(">#2  TP1 PP1 EP1 DP2</text>") != std::string::npos);
  CHECK(html.find("<td class=\"commit\"><code title=\"" + entries[0].commit + "\">25cb23d</code></td>") !=
        std::string::npos);
  CHECK(html.find("<summary><svg class=\"spark\"") != std::string::npos);
  CHECK(html.find("1 earlier run<span class=\"trend\">+158.9% vs previous, +158.9% vs first</span>") !=
        std::string::npos);
  CHECK(html.find("2026-11-30T00:07Z · <code title=\"" + ep_old.commit + "\">814c7b0</code> · 17,672.") !=
        std::string::npos);
  CHECK(html.find("<article class=\"entry\" id=\"proxy4l-2gpu-ep2-bf16-20261130t000706z\"") == std::string::npos);
  // leaderboard.csv: the commit and how many earlier runs.
  const std::string csv = leaderboard_to_csv(board);
  CHECK(csv.find(",measured,author,commit,earlier_runs\r\n") != std::string::npos);
  CHECK(csv.find("," + entries[0].commit + ",1\r\n") != std::string::npos);
  // Any order of the records gives the same board.
  const std::vector<std::string> shuffled = {files[3], files[0], files[2], files[1]};
  CHECK(leaderboard_to_json(board_of(shuffled))["groups"] == json["groups"]);
}

TEST_CASE("runs that measured otherwise are not folded, a seed of its own is and says so", "[report][groups]") {
  const std::string file = case_path("leaderboard-repeated-runs-mixed-commits/proxy4l-2gpu-dp2-bf16-20261130T210302Z.json");
  CheckedRunRecord checked = check_run_record(read_json_file(file), file);
  REQUIRE(checked.ok());
  REQUIRE(checked.record->options.settings.seed == 7);
  RunRecord window = *checked.record;  // another timed window: another measurement
  window.options.settings.window = StepWindow{6, 19};
  window.started_at = "2026-12-01T00:00:00Z";
  RunRecord later = *checked.record;  // the same measurement, another seed, later, by a build without a commit
  later.options.settings.seed = 1234;
  later.started_at = "2026-12-02T00:00:00Z";
  later.environment.recipebench_commit = "unknown";
  ReportOptions fold;
  fold.fold_repeated_runs = true;
  const Leaderboard board =
      build_leaderboard({}, fold, {{"a.json", *checked.record}, {"b.json", window}, {"c.json", later}});
  // Without the option (compare), every run is an entry of its own.
  CHECK(build_leaderboard({}, {}, {{"a.json", *checked.record}, {"c.json", later}}).groups.at(0).entries.size() == 2);
  REQUIRE(board.groups.size() == 1);
  const auto& entries = board.groups[0].entries;
  REQUIRE(entries.size() == 2);  // a and c: one measurement, c (the later) ranked, a folded under it
  const size_t ic = entries[0].id == "c" ? 0 : 1, ib = 1 - ic;
  REQUIRE(entries[ic].id == "c");
  REQUIRE(entries[ib].id == "b");
  REQUIRE(entries[ic].earlier_runs.size() == 1);
  const EarlierRun& a = entries[ic].earlier_runs[0];
  CHECK(a.file == "a.json");
  CHECK(a.settings_differ == Json{{"seed", 7}});
  CHECK(short_commit(entries[ic].commit) == "unknown");
  CHECK(entries[ib].earlier_runs.empty());
  const Json json = leaderboard_to_json(board);
  CHECK(json["groups"][0]["entries"][ib]["trend"].is_null());
  CHECK(json["groups"][0]["entries"][ic]["earlier_runs"][0]["settings_differ"]["seed"] == 7);
  CHECK(schema_problem(json).empty());
  CHECK(leaderboard_to_html(board).find("<span class=\"differ\" title=\"settings that differ from the latest run: seed "
                                        "7\">(seed 7)</span>") != std::string::npos);
  // Same layout label: each bar names the setting that differs (the timed window).
  const std::vector<std::string> text = distinguishing_text(entries);
  CHECK(text[ic] == "window 5:19");
  CHECK(text[ib] == "window 6:19");
}

TEST_CASE("the seed's bars tell its two TP2 PP8 VPP2 EP8 DP4 entries apart", "[report][groups]") {
  const Leaderboard board = board_of({source_path("recipes/qwen3.5-397b-a17b/b200/attune-tp2-pp8-ep8-vpp2-mt16k.yaml"),
                                      source_path("recipes/qwen3.5-397b-a17b/b200/attune-tp2-pp8-ep8-vpp2-mt8k.yaml"),
                                      source_path("recipes/qwen3.5-397b-a17b/b200/attune-48gpu-tp2-pp6-ep8.yaml")});
  const std::vector<std::string> text = distinguishing_text(board.groups.at(0).entries);
  CHECK(text == std::vector<std::string>{"max tokens per GPU 16384", "max tokens per GPU 8192", ""});
  const std::string html = leaderboard_to_html(board);
  CHECK(html.find(">max tokens per GPU 16384</text>") != std::string::npos);
}

TEST_CASE("the committed records: repeated runs folded, scatter labels never overlap", "[report][groups]") {
  std::vector<std::string> files =
      collect_files({source_path("recipes"), source_path("reports/runs")}, {".yaml", ".yml", ".json"});
  // README's main job (scripts/main) adds its own run of the embedded default recipe here, git-ignored
  // (reports/runs/qwen3.5-tiny-cpu-*.json): the committed records only, also after the main job ran in this clone.
  files.erase(std::remove_if(
                  files.begin(), files.end(),
                  [](const std::string& f) { return f.find("/reports/runs/qwen3.5-tiny-cpu-") != std::string::npos; }),
              files.end());
  const Leaderboard board = board_of(files);
  // 21 committed run records: the 1-GPU proxy's 7 runs, the peer's 4 (3 run, 1 imported), and two runs each of the
  // five 2-GPU recipes (814c7b0 or bba5e2f, then 25cb23d).
  const LeaderboardEntry& proxy = entry_of(board, "proxy4l-1gpu-bf16-");
  CHECK(proxy.id == "proxy4l-1gpu-bf16-20261201t204200z");
  CHECK(proxy.earlier_runs.size() == 6);
  CHECK(run_trend(proxy).front() < run_trend(proxy).back());
  size_t ranked = 0, earlier = 0;
  for (const auto& g : board.groups)
    for (const auto& e : g.entries) ++ranked, earlier += e.earlier_runs.size();
  // The seed's 3 recipes and one entry per recipe, backend and measurement: the 1-GPU proxy, the peer's runs and
  // its import, the four 2-GPU recipes.
  CHECK(ranked == 3 + 8);
  CHECK(ranked - 3 + earlier == 21);
  CHECK(board.groups[0].title == "Training Qwen3.5-397B-A17B on B200");  // full size first
  // Every group's scatter: each priced entry labelled, no two label boxes intersecting (read from the SVG).
  const std::string html = leaderboard_to_html(board);
  for (const auto& g : board.groups) {
    const size_t at = html.find("id=\"cost-" + g.id + "\"");
    if (at == std::string::npos) continue;
    const std::string svg = html.substr(at, html.find("</svg>", at) - at);
    std::vector<svg::Rect> boxes;
    for (size_t t = svg.find("<text class=\"point-label\""); t != std::string::npos;
         t = svg.find("<text class=\"point-label\"", t + 1)) {
      const double x = std::stod(svg.substr(svg.find(" x=\"", t) + 4));
      const double y = std::stod(svg.substr(svg.find(" y=\"", t) + 4));
      const size_t b = svg.find('>', t) + 1;
      boxes.push_back({x - 1, y - 11, svg::text_width(svg.substr(b, svg.find('<', b) - b), 11) + 2, 13.75});
    }
    CHECK(boxes.size() == g.entries.size());
    for (size_t i = 0; i < boxes.size(); ++i)
      for (size_t j = i + 1; j < boxes.size(); ++j) CHECK_FALSE(svg::intersects(boxes[i], boxes[j]));
  }
}
