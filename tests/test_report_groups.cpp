// The leaderboard's groups (harness/report/leaderboard.cpp, docs/reports.md "Groups"): one group is one workload
// (model and layers that ran, GPU, row tokens, global batch, precision, kind of rows), its title says what
// separates it, and the report does not depend on the order of its inputs. The cases of 2026-12-02
// (tests/data/cases/report-group-rows-label-order, leaderboard-identical-group-titles) and variants.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "recipe/validate.h"
#include "record/run_record_check.h"
#include "report/leaderboard.h"
#include "test_util.h"

using namespace recipebench;
using recipebench::test::source_path;

namespace {

std::string case_path(const std::string& rel) { return source_path("tests/data/cases/" + rel); }

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
  return build_leaderboard(recipes, {}, runs);
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
  CHECK(html.find("Ranked by tokens/s per GPU \xC2\xB7 8,192-token rows (synthetic learnable rows (seeded), 67.6% of "
                  "tokens supervised) \xC2\xB7 global batch 2 \xC2\xB7 BF16") != std::string::npos);
  CHECK(html.find("Ranked by tokens/s per GPU \xC2\xB7 8,192-token rows (uniform random token ids, every token a "
                  "loss target) \xC2\xB7 global batch 2 \xC2\xB7 BF16") != std::string::npos);
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
  // "Compare two entries", the index, then one heading per group.
  const std::vector<std::string> want = {"Compare two entries", "Groups", board.groups[0].title, board.groups[1].title,
                                         board.groups[2].title};
  CHECK(h2 == want);
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
  REQUIRE(board.groups[2].entries.size() == 2);  // a.json and d.json: one workload
  // Reversed inputs: the same groups in the same order.
  const std::vector<RunRecordInput> reversed(runs.rbegin(), runs.rend());
  CHECK(leaderboard_to_json(build_leaderboard({}, {}, reversed))["groups"] == leaderboard_to_json(board)["groups"]);
  // Titles are unique whatever separates the groups.
  std::vector<std::string> titles;
  for (const auto& g : board.groups) titles.push_back(g.title);
  std::sort(titles.begin(), titles.end());
  CHECK(std::adjacent_find(titles.begin(), titles.end()) == titles.end());
}
