// The leaderboard page against the seed's (issue 46; the case leaderboard-vs-seed-page of 2026-12-05, inputs in
// tests/data/cases/leaderboard-vs-seed-page): the groups' order, the seed-style subtitle, the columns shown, the
// entry card's order with the recipe's YAML, and provenance (the stack that trained apart from recipebench, which
// recorded). The browser side: tests/browser/seed_page.test.js.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "recipe/validate.h"
#include "record/run_record_check.h"
#include "report/compare.h"
#include "report/leaderboard.h"
#include "report/page_text.h"
#include "test_util.h"
#include "util/input_file.h"

using namespace recipebench;
using recipebench::test::case_path;
using recipebench::test::source_path;

namespace {

Recipe page_recipe(const std::string& file) {
  ValidatedRecipe v = validate_recipe_file(file);
  for (const auto& d : v.errors) FAIL_CHECK(d.to_string());
  REQUIRE(v.ok());
  return *v.recipe;
}

/// The seed's three recipes and the Mixtral variant (measured 2025-03-01), Mixtral first: the inputs' order must
/// not decide the groups'.
std::vector<Recipe> seed_and_mixtral() {
  std::vector<Recipe> out{page_recipe(case_path("leaderboard-vs-seed-page/mixtral-measured.yaml"))};
  for (const char* stem : {"attune-tp2-pp8-ep8-vpp2-mt16k", "attune-tp2-pp8-ep8-vpp2-mt8k", "attune-48gpu-tp2-pp6-ep8"})
    out.push_back(page_recipe(source_path(std::string("recipes/qwen3.5-397b-a17b/b200/") + stem + ".yaml")));
  return out;
}

/// The text of the page's element that starts at `open` (its first occurrence) up to `close`.
std::string between(const std::string& html, const std::string& open, const std::string& close) {
  const size_t at = html.find(open);
  REQUIRE(at != std::string::npos);
  const size_t end = html.find(close, at);
  REQUIRE(end != std::string::npos);
  return html.substr(at, end - at);
}

/// HTML text back to the characters it escapes (mustache's &amp; &lt; &gt; &quot; &apos;).
std::string unescaped(std::string s) {
  const std::pair<const char*, const char*> refs[] = {
      {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&apos;", "'"}, {"&amp;", "&"}};
  for (const auto& [from, to] : refs)
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + 1)) s.replace(at, strlen(from), to);
  return s;
}

/// The imported Megatron-LM run of the case (its recipe's stack names commit 5f2e1c9a): the record `import` wrote
/// (tests/data/cases/leaderboard-vs-seed-page/runs), checked.
RunRecordInput imported_run() {
  const std::string dir = case_path("leaderboard-vs-seed-page/runs");
  const std::vector<std::string> files = collect_files({dir}, {".json"});
  REQUIRE(files.size() == 1);
  CheckedRunRecord checked = check_run_record(read_json_file(files[0]), files[0]);
  for (const auto& d : checked.errors) FAIL_CHECK(d.to_string());
  REQUIRE(checked.ok());
  return RunRecordInput{files[0], *checked.record};
}

}  // namespace

TEST_CASE("leaderboard-vs-seed-page (2026-12-05): the group measured last opens the page, whatever the names",
          "[report][page]") {
  std::vector<Recipe> recipes = seed_and_mixtral();
  Leaderboard board = build_leaderboard(recipes, {});
  REQUIRE(board.groups.size() == 2);
  CHECK(board.groups[0].model == "Qwen3.5-397B-A17B");  // 2026-10-18 before 2025-03-01, though "M" < "Q"
  CHECK(board.groups[1].model == "Mixtral-8x7B");
  recipes[0].result->measured = "2026-11-01";  // the variant: Mixtral measured after the seed
  board = build_leaderboard(recipes, {});
  CHECK(board.groups[0].model == "Mixtral-8x7B");
}

TEST_CASE("leaderboard-vs-seed-page: the seed's headline and subtitle, and no column of dashes only",
          "[report][page]") {
  const std::string html = leaderboard_to_html(build_leaderboard(seed_and_mixtral(), {}));
  CHECK(html.find("<h2>Training Qwen3.5-397B-A17B on B200</h2>\n<p class=\"subtitle\">Ranked by tokens/s per GPU · "
                  "8,192-token rows of SFT conversations · global batch 128 · BF16</p>") != std::string::npos);
  CHECK(html.find("4,096-token rows of pretraining text · global batch 256 · BF16") != std::string::npos);
  const std::string seed = between(html, "<section class=\"group\" id=\"qwen3-5", "</table>");
  // The seed's stack names Megatron-LM commit 1dcf0daf: a Commit column, its short form; no run: no Earlier runs.
  CHECK(seed.find("<th>Commit</th>") != std::string::npos);
  CHECK(seed.find("<code title=\"1dcf0daf\">1dcf0da</code>") != std::string::npos);
  CHECK(seed.find("Earlier runs") == std::string::npos);
  CHECK(seed.find(">—<") == std::string::npos);  // every cell of the seed's table says something
  const std::string mixtral = between(html, "<section class=\"group\" id=\"mixtral", "</table>");
  // No price in the catalog for it? It has one (p5.48xlarge); its recipe states no CV: no CV column.
  CHECK(mixtral.find("Step-time CV") == std::string::npos);
  CHECK(mixtral.find("<code title=\"5f2e1c9a\">5f2e1c9</code>") != std::string::npos);
}

TEST_CASE("leaderboard-vs-seed-page: the entry card in the seed's order, ending on the recipe's own YAML",
          "[report][page]") {
  const Leaderboard board = build_leaderboard(seed_and_mixtral(), {});
  const LeaderboardEntry& first = board.groups[0].entries[0];
  REQUIRE(first.id == "attune-tp2-pp8-ep8-vpp2-mt16k");
  const std::string html = leaderboard_to_html(board);
  const std::string card = between(html, "<article class=\"entry\" id=\"" + first.id + "\"", "</article>");
  std::vector<size_t> at;
  for (const char* part :
       {"<div class=\"notes\">",
        "<dt>Author</dt><dd>ATTUNE <a class=\"cite\" "
        "href=\"https://arxiv.org/abs/2610.17528\"",
        "<dt>Tokens/s per GPU</dt>", "<h4>Correctness</h4>", "<h4>Stack</h4>", "<h4>Environment</h4>",
        "<h4>Patches</h4>", "<h4>How to run</h4>", "<h4>Recipe</h4>", "<pre class=\"yaml\">"}) {
    at.push_back(card.find(part));
    INFO(part);
    CHECK(at.back() != std::string::npos);
  }
  CHECK(std::is_sorted(at.begin(), at.end()));
  CHECK(card.find("fla_blackwell_guard.py") < card.find("<dt>Author</dt>"));  // the B200 warning before any fact
  CHECK(card.find("measured over steps 5..19") != std::string::npos);
  CHECK(card.find("2,250 TFLOP/s, the dense BF16 peak of one B200") != std::string::npos);
  // The Download of an inlined YAML: a data: URI of the file's bytes (a file:// page's link to a file is no download).
  CHECK(card.find("<a class=\"download\" href=\"data:application/yaml;base64," + base64(read_input_file(first.file)) +
                  "\" download=\"attune-tp2-pp8-ep8-vpp2-mt16k.yaml\">Download</a>") != std::string::npos);
  const std::string pre =
      between(card, "<pre class=\"yaml\">", "</pre>").substr(std::string("<pre class=\"yaml\">").size());
  CHECK(unescaped(pre) == read_input_file(first.file));  // byte for byte
  CHECK(recipe_copy_path(first) == "leaderboard-recipes/attune-tp2-pp8-ep8-vpp2-mt16k.yaml.txt");
}

TEST_CASE("a recipe naming its repository is linked and one that is not http(s) is text", "[report][page]") {
  Recipe r = page_recipe(source_path("recipes/qwen3.5-397b-a17b/b200/attune-tp2-pp8-ep8-vpp2-mt16k.yaml"));
  r.doc["repository"] = "https://github.com/example/recipes/blob/main/attune-tp2-pp8-ep8-vpp2-mt16k.yaml";
  std::string html = leaderboard_to_html(build_leaderboard({r}, {}));
  CHECK(html.find("<a class=\"repository\" href=\"https://github.com/example/recipes/blob/main/"
                  "attune-tp2-pp8-ep8-vpp2-mt16k.yaml\" rel=\"noopener noreferrer\">Repository</a>") !=
        std::string::npos);
  r.doc["repository"] = "javascript:alert(1)";
  html = leaderboard_to_html(build_leaderboard({r}, {}));
  CHECK(html.find("class=\"repository\"") == std::string::npos);
  CHECK(html.find("repository javascript:alert(1) (not a link)") != std::string::npos);
}

TEST_CASE("the YAML is inlined for a group's first 3 entries, the rest link their copy", "[report][page]") {
  const Recipe r = page_recipe(source_path("recipes/qwen3.5-397b-a17b/b200/attune-tp2-pp8-ep8-vpp2-mt16k.yaml"));
  std::vector<Recipe> copies;
  for (int i = 0; i < 4; ++i) {
    copies.push_back(r);
    copies.back().result->tokens_per_s_per_gpu = 2000 - i;
  }
  const Leaderboard board = build_leaderboard(copies, {});
  const std::string html = leaderboard_to_html(board);
  size_t inlined = 0;
  for (size_t at = html.find("<pre class=\"yaml\">"); at != std::string::npos;
       at = html.find("<pre class=\"yaml\">", at + 1))
    ++inlined;
  CHECK(inlined == 3);
  // #4 downloads the copy `report` writes beside the page, named by its id (the copies' ids: make_ids_unique).
  const LeaderboardEntry& fourth = board.groups[0].entries[3];
  CHECK(recipe_copy_path(fourth) == "leaderboard-recipes/" + fourth.id + ".yaml.txt");
  CHECK(html.find("<a class=\"download\" href=\"" + recipe_copy_path(fourth) + "\"") != std::string::npos);
}

TEST_CASE("leaderboard-vs-seed-page: an imported log's entry shows its stack's commit, recipebench apart",
          "[report][page][provenance]") {
  const RunRecordInput run = imported_run();
  REQUIRE(!run.record.log.is_null());
  ReportOptions options;
  options.fold_repeated_runs = true;
  const Leaderboard board = build_leaderboard(seed_and_mixtral(), options, {run});
  const LeaderboardEntry* e = nullptr;
  for (const auto& g : board.groups)
    for (const auto& x : g.entries)
      if (x.kind == "run") e = &x;
  REQUIRE(e != nullptr);
  CHECK(e->commit == "5f2e1c9a");  // the recipe's stack, not recipebench's environment.recipebench_commit
  CHECK(e->commit != run.record.environment.recipebench_commit);
  CHECK(e->recorded_by == "recipebench " + run.record.environment.recipebench_version + " (" +
                              run.record.environment.recipebench_commit + ")");
  CHECK(window_text(*e) == "steps 5..29");
  const Json j = leaderboard_to_json(board);
  bool found = false;
  for (const auto& g : j["groups"])
    for (const auto& x : g["entries"])
      if (x["kind"] == "run") {
        found = true;
        CHECK(x["window"] == "steps 5..29");
        CHECK(x["recorded_by"] == e->recorded_by);
      }
  CHECK(found);
  const std::string html = leaderboard_to_html(board);
  const std::string card = between(html, "<article class=\"entry\" id=\"" + e->id + "\"", "</article>");
  CHECK(card.find("<dt>Trained by</dt><dd>Megatron-LM core_r0.12.0, commit 5f2e1c9a") != std::string::npos);
  CHECK(card.find("<dt>Recorded by</dt><dd>" + e->recorded_by) != std::string::npos);
  CHECK(card.find("<dt>Environment</dt>") == std::string::npos);  // recipebench's build is not the run's
  CHECK(card.find("measured over steps 5..29") != std::string::npos);
  // Megatron-LM printed its TFLOP/s per GPU: shown beside ours, with why they differ.
  CHECK(card.find("<dt>Stack-reported</dt><dd>") != std::string::npos);
  CHECK(card.find("TFLOP/s per GPU") != std::string::npos);
  // compare: the stack's commit under stack, recipebench under source; no recipebench build as the stack.
  bool stack_commit_field = false, recorded = false;
  for (const EntryField& f : entry_fields(*e)) {
    CHECK_FALSE((f.section == "stack" && f.name.rfind("recipebench", 0) == 0));
    stack_commit_field |= f.section == "stack" && f.name == "commit" && f.value == "5f2e1c9a";
    recorded |= f.section == "source" && f.name == "recorded by" && f.value == e->recorded_by;
  }
  CHECK(stack_commit_field);
  CHECK(recorded);
}

TEST_CASE("stack_commit finds the commit a stack names, and nothing else", "[report][page][provenance]") {
  CHECK(stack_commit(Json{{"megatron_lm", "commit 1dcf0daf (megatron-core 0.16.0rc0)"}}) == "1dcf0daf");
  CHECK(stack_commit(Json{{"commit", "v1.2"}, {"megatron_lm", "commit 1dcf0daf"}}) == "v1.2");
  CHECK(stack_commit(Json{{"framework", "recommit 1dcf0daf"}}).empty());  // not the word commit
  CHECK(stack_commit(Json{{"framework", "commit 1dcf0"}}).empty());       // too short for a hash
  CHECK(stack_commit(Json{{"framework", "commit 1dcf0dafzz"}}).empty());  // not a hexadecimal word
  CHECK(stack_commit(Json{{"pytorch", "2.11.0 (CUDA 12.9 build)"}}).empty());
  CHECK(stack_commit(Json::array()).empty());
}

TEST_CASE("the rank key's spread over an entry's runs: median, runs, CV", "[report][page]") {
  LeaderboardEntry e;
  e.tokens_per_s_per_gpu = 100;
  CHECK_FALSE(run_spread(e).has_value());  // one run: no spread
  EarlierRun a, b;
  a.tokens_per_s_per_gpu = 90;
  b.tokens_per_s_per_gpu = 110;
  e.earlier_runs = {a, b};
  const std::optional<RunSpread> s = run_spread(e);
  REQUIRE(s.has_value());
  CHECK(s->runs == 3);
  CHECK(s->median == Approx(100));
  CHECK(s->cv_percent == Approx(10));  // sample sd of 90, 100, 110 is 10; mean 100
  e.earlier_runs.pop_back();
  CHECK(run_spread(e)->median == Approx(95));  // two runs: the mean of the middle pair
}

TEST_CASE("predicted-vs-measured (2026-12-05): the measured entry's card links the prediction of its layout",
          "[report][page]") {
  std::vector<Recipe> recipes = seed_and_mixtral();
  recipes.push_back(
      page_recipe(case_path("predicted-vs-measured-not-linked/plan-tp2-pp8-vpp2-ep8-dp4-split6-mt16k-recompute.yaml")));
  const std::string html = leaderboard_to_html(build_leaderboard(recipes, {}));
  const std::string card = between(html, "<article class=\"entry\" id=\"attune-tp2-pp8-ep8-vpp2-mt16k\"", "</article>");
  CHECK(card.find("<dt>Predicted</dt><dd><a href=\"#predicted\">2,222.6 tokens/s/GPU by ") != std::string::npos);
  CHECK(card.find("(error +80.3%: predicted / measured - 1, this layout)") != std::string::npos);
  const std::string other = between(html, "<article class=\"entry\" id=\"attune-48gpu-tp2-pp6-ep8\"", "</article>");
  CHECK(other.find("<dt>Predicted</dt>") == std::string::npos);  // another layout: not linked
}

TEST_CASE("base64 and data: URIs as RFC 4648 and RFC 2397 write them", "[report][page]") {
  // RFC 4648, section 10's test vectors.
  const std::pair<const char*, const char*> vectors[] = {{"", ""},
                                                         {"f", "Zg=="},
                                                         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},
                                                         {"foob", "Zm9vYg=="},
                                                         {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [in, out] : vectors) CHECK(base64(in) == out);
  CHECK(base64(std::string("\xff\x00\xfe", 3)) == "/wD+");
  CHECK(data_uri("application/yaml", "a: 1\n") == "data:application/yaml;base64,YTogMQo=");
}

TEST_CASE("MoE routing: as the recipe states it, natural for recipebench's own runs, else not stated",
          "[report][page]") {
  Recipe r = page_recipe(source_path("recipes/qwen3.5-397b-a17b/b200/attune-tp2-pp8-ep8-vpp2-mt16k.yaml"));
  std::string html = leaderboard_to_html(build_leaderboard({r}, {}));
  CHECK(html.find("<dt>MoE routing</dt><dd>not stated</dd>") != std::string::npos);
  CHECK(html.find("MoE routing: natural (the router's own top-k choices) or forced balanced") != std::string::npos);
  r.doc["layout"]["moe_routing"] = "forced_balanced";
  html = leaderboard_to_html(build_leaderboard({r}, {}));
  CHECK(html.find("<dt>MoE routing</dt><dd>forced balanced</dd>") != std::string::npos);
  r.doc["layout"]["dispatcher"] = nullptr;  // a dense model: no routing to state
  html = leaderboard_to_html(build_leaderboard({r}, {}));
  CHECK(html.find("<dt>MoE routing</dt>") == std::string::npos);
}
