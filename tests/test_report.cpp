// The leaderboard: grouping, ranking and figures of the seed page, its JSON schema and its HTML.
#include <catch2/catch.hpp>

#include <rapidjson/document.h>
#include <rapidjson/schema.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "recipe/validate.h"
#include "record/run_record_check.h"
#include "report/leaderboard.h"
#include "report/leaderboard_csv.h"
#include "test_util.h"
#include "util/format.h"

using namespace recipebench;

namespace {

std::vector<Recipe> seed_recipes() {
  std::vector<Recipe> out;
  for (const auto& f : collect_files({test::source_path("recipes/qwen3.5-397b-a17b/b200")}, {".yaml"})) {
    ValidatedRecipe v = validate_recipe_file(f);
    REQUIRE(v.ok());
    out.push_back(*v.recipe);
  }
  REQUIRE(out.size() == 3);
  return out;
}

}  // namespace

TEST_CASE("the seed recipes rank as on the seed page", "[report]") {
  const Leaderboard board = build_leaderboard(seed_recipes(), {});
  REQUIRE(board.groups.size() == 1);
  const LeaderboardGroup& g = board.groups[0];
  CHECK(g.model == "Qwen3.5-397B-A17B");
  CHECK(g.gpu_type == "B200");
  CHECK(g.row_tokens == 8192);
  CHECK(g.global_batch == 128);
  REQUIRE(g.entries.size() == 3);
  struct Row {
    const char* tps;
    const char* usd;
    int gpus;
    const char* label;
    const char* highlights;
    const char* mfu;
  };
  const Row expected[] = {
      {"1,232.5", "3.21", 64, "TP2 PP8 VPP2 EP8 DP4", "max 16,384 tokens/GPU, VPP 2, no offload", "5.4"},
      {"1,130.7", "3.50", 64, "TP2 PP8 VPP2 EP8 DP4", "max 8,192 tokens/GPU, VPP 2, no offload", "4.9"},
      {"1,075.5", "3.68", 48, "TP2 PP6 EP8 DP4", "max 8,192 tokens/GPU, no offload", "4.7"},
  };
  for (size_t i = 0; i < 3; ++i) {
    const LeaderboardEntry& e = g.entries[i];
    INFO("rank " << i + 1 << ": " << e.file);
    CHECK(e.rank == static_cast<int>(i + 1));
    CHECK(fixed(e.tokens_per_s_per_gpu, 1) == expected[i].tps);
    REQUIRE(e.usd_per_million_tokens);
    CHECK(fixed(*e.usd_per_million_tokens, 2) == expected[i].usd);
    CHECK(e.gpus == expected[i].gpus);
    CHECK(e.layout_label == expected[i].label);
    CHECK(e.layout_highlights == expected[i].highlights);
    REQUIRE(e.mfu);
    CHECK(fixed(100 * *e.mfu, 1) == expected[i].mfu);
    CHECK(e.measured == "2026-10-18");
    CHECK(e.author == "ATTUNE");
  }
  CHECK(*g.entries[0].step_time_cv_percent == 2.72);
  CHECK(*g.entries[2].step_time_cv_percent == 7.39);
}

TEST_CASE("a price override changes every $ figure and says so", "[report]") {
  ReportOptions o;
  o.usd_per_gpu_hour = 7.2;
  const Leaderboard board = build_leaderboard(seed_recipes(), o);
  const LeaderboardEntry& top = board.groups[0].entries[0];
  CHECK(*top.usd_per_million_tokens == Approx(7.2 / (1232.53 * 3600) * 1e6));
  CHECK_THAT(top.price_source, Catch::Contains("--usd-per-gpu-hour"));
}

TEST_CASE("groups split by GPU type and workload, and recipes without a result are listed unranked", "[report]") {
  std::vector<Recipe> recipes = seed_recipes();
  Recipe h200 = recipes[0];
  h200.file = "other/h200-run.yaml";
  h200.gpu.type = "H200";
  h200.gpu.instance = "AWS p5en.48xlarge";
  h200.result->tokens_per_s_per_gpu = 545.3;
  Recipe proposed = recipes[1];
  proposed.file = "other/proposed.yaml";
  proposed.status = "proposed";
  proposed.result.reset();
  recipes.push_back(h200);
  recipes.push_back(proposed);
  const Leaderboard board = build_leaderboard(recipes, {});
  REQUIRE(board.groups.size() == 2);
  CHECK(board.groups[1].gpu_type == "H200");
  CHECK(fixed(*board.groups[1].entries[0].usd_per_million_tokens, 2) == "4.03");
  REQUIRE(board.unranked.size() == 1);
  CHECK_THAT(board.unranked[0], Catch::Contains("proposed"));
}

TEST_CASE("the leaderboard JSON follows schema/leaderboard.schema.json", "[report][schema]") {
  Leaderboard board = build_leaderboard(seed_recipes(), {});
  board.context["generated_at"] = "2026-11-29T00:00:00Z";
  const std::string json = leaderboard_to_json(board).dump();
  rapidjson::Document sd;
  sd.Parse(test::read_file(test::source_path("schema/leaderboard.schema.json")).c_str());
  REQUIRE_FALSE(sd.HasParseError());
  rapidjson::SchemaDocument schema(sd);
  rapidjson::Document d;
  d.Parse(json.c_str());
  rapidjson::SchemaValidator validator(schema);
  INFO("failed keyword: " << (d.Accept(validator) ? "" : validator.GetInvalidSchemaKeyword()));
  CHECK(d.Accept(validator));
  // Negative control: a rank of 0 must fail the schema.
  Json broken = leaderboard_to_json(board);
  broken["groups"][0]["entries"][0]["rank"] = 0;
  rapidjson::Document bd;
  bd.Parse(broken.dump().c_str());
  rapidjson::SchemaValidator validator2(schema);
  CHECK_FALSE(bd.Accept(validator2));
}

TEST_CASE("the HTML page is self-contained, escaped and lists the rows in rank order", "[report][html]") {
  std::vector<Recipe> recipes = seed_recipes();
  recipes[2].author = "A <b>&</b> B";
  const std::string html = leaderboard_to_html(build_leaderboard(recipes, {}));
  CHECK_THAT(html, Catch::StartsWith("<!DOCTYPE html>"));
  // Nothing fetched: no external script, style sheet or image; the only script is the page's own inline one,
  // allowed by its hash in the Content-Security-Policy.
  CHECK(html.find(" src=") == std::string::npos);
  CHECK(html.find("<link") == std::string::npos);
  CHECK(html.find("default-src 'none'; style-src 'sha256-") != std::string::npos);
  size_t scripts = 0;
  for (size_t at = html.find("<script"); at != std::string::npos; at = html.find("<script", at + 1)) ++scripts;
  CHECK(scripts == 2);  // the comparison data (application/json) and the page's script
  CHECK(html.find("A &lt;b&gt;&amp;&lt;/b&gt; B") != std::string::npos);
  const auto r1 = html.find("<td class=\"num\">1,232.5</td>");
  const auto r2 = html.find("<td class=\"num\">1,130.7</td>");
  const auto r3 = html.find("<td class=\"num\">1,075.5</td>");
  REQUIRE(r1 != std::string::npos);
  REQUIRE(r2 != std::string::npos);
  REQUIRE(r3 != std::string::npos);
  CHECK(r1 < r2);
  CHECK(r2 < r3);
  // Each row links to its detail section; the author's https URL is its "(cite)" link, as on the seed page.
  CHECK(html.find("href=\"#attune-tp2-pp8-ep8-vpp2-mt16k\"") != std::string::npos);
  CHECK(html.find("<article class=\"entry\" id=\"attune-tp2-pp8-ep8-vpp2-mt16k\"") != std::string::npos);
  CHECK(html.find("ATTUNE <a class=\"cite\" href=\"https://arxiv.org/abs/2610.17528\" rel=\"noopener noreferrer\">(cite)</a>") !=
        std::string::npos);
  // One bar chart and one cost scatter for the group.
  CHECK(html.find("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" id=\"bars-qwen3-5-397b-a17b-b200") !=
        std::string::npos);
  CHECK(html.find("class=\"chart\" id=\"cost-qwen3-5-397b-a17b-b200") != std::string::npos);
}

TEST_CASE("a javascript: author URL is shown as text, never as a link", "[report][html][security]") {
  std::vector<Recipe> recipes = seed_recipes();
  recipes[0].author_url = "javascript:alert(1)";
  recipes[1].author_url = " JavaScript:alert(2)";
  const std::string html = leaderboard_to_html(build_leaderboard(recipes, {}));
  CHECK(html.find("href=\"javascript") == std::string::npos);
  CHECK(html.find("href=\" JavaScript") == std::string::npos);
  CHECK(html.find("<dd>javascript:alert(1) <span class=\"muted\">(not a link)</span></dd>") != std::string::npos);
}

TEST_CASE("a non-deterministic run is labelled so in the leaderboard's backend, JSON and CSV", "[report]") {
  // Two records of one H200 lease (reports/bench/h200-2026-11-30-issue17): the same recipe with and without
  // bench.deterministic.
  const std::string dir = "reports/bench/h200-2026-11-30-issue17/call2-f2976a7/records/";
  std::vector<RunRecordInput> runs;
  for (const char* name : {"repeat-1.json", "nondeterministic.json"}) {
    const std::string f = test::source_path(dir + name);
    const CheckedRunRecord c = check_run_record(read_json_file(f), f);
    REQUIRE(c.record);
    runs.push_back(RunRecordInput{f, *c.record});
  }
  const Leaderboard board = build_leaderboard({}, {}, runs);
  REQUIRE(board.groups.size() == 1);
  const auto& entries = board.groups[0].entries;
  REQUIRE(entries.size() == 2);
  const auto& fast = entries[0];  // 42,961.2 tokens/s against 40,981.6: the non-deterministic run ranks first
  const auto& det = entries[1];
  CHECK(fast.tokens_per_s_per_gpu == Approx(42961.18424593697));
  CHECK(fast.backend == "torch · non-deterministic");
  CHECK(det.backend == "torch");
  REQUIRE(fast.deterministic);
  CHECK_FALSE(*fast.deterministic);
  CHECK(*det.deterministic);
  const Json j = leaderboard_to_json(board);
  CHECK(j["groups"][0]["entries"][0]["deterministic"] == false);
  CHECK(leaderboard_to_csv(board).find(",torch · non-deterministic,false,") != std::string::npos);
}

TEST_CASE("a run with bench.kernels ops is labelled so in the leaderboard's backend", "[report]") {
  // A committed H200 record, and the same document saying it ran the libtorch-ops path.
  const std::string f = test::source_path("reports/bench/h200-2026-11-30-issue17/call2-f2976a7/records/repeat-1.json");
  Json doc = read_json_file(f);
  const CheckedRunRecord fused = check_run_record(doc, f);
  doc["settings"]["kernels"] = "ops";
  const CheckedRunRecord ops = check_run_record(doc, "ops.json");
  REQUIRE(fused.record);
  REQUIRE(ops.record);
  const Leaderboard board = build_leaderboard({}, {}, {RunRecordInput{f, *fused.record}, {"ops.json", *ops.record}});
  REQUIRE(board.groups.size() == 1);
  REQUIRE(board.groups[0].entries.size() == 2);
  std::set<std::string> labels;
  for (const auto& e : board.groups[0].entries) labels.insert(e.backend);
  CHECK(labels == std::set<std::string>{"torch", "torch · libtorch ops"});
}

TEST_CASE("report-duplicate-entry-ids (case of 2026-12-02): two recipes of one file name in two folders get two ids, "
          "in either order",
          "[report][cases]") {
  const std::string dir = test::source_path("tests/data/cases/report-duplicate-entry-ids/recipes");
  std::vector<Recipe> recipes;
  for (const auto& f : collect_files({dir}, {".yaml"})) {
    ValidatedRecipe v = validate_recipe_file(f);
    REQUIRE(v.ok());
    recipes.push_back(*v.recipe);
  }
  REQUIRE(recipes.size() == 2);
  const std::vector<Recipe> seed = seed_recipes();
  recipes.insert(recipes.end(), seed.begin(), seed.end());
  for (int order = 0; order < 2; ++order) {
    if (order == 1) std::reverse(recipes.begin(), recipes.end());
    const Leaderboard board = build_leaderboard(recipes, ReportOptions{});
    std::map<std::string, std::string> id_of;  // file -> id
    std::set<std::string> ids;
    for (const auto& g : board.groups)
      for (const auto& e : g.entries) {
        CHECK(ids.insert(e.id).second);  // unique over the whole report
        id_of[std::filesystem::path(e.file).parent_path().filename().string() + "/" +
              std::filesystem::path(e.file).filename().string()] = e.id;
      }
    CHECK(id_of.at("team-a/tp2-ep8.yaml") == "team-a-tp2-ep8");
    CHECK(id_of.at("team-b/tp2-ep8.yaml") == "team-b-tp2-ep8");
    CHECK(id_of.at("b200/attune-48gpu-tp2-pp6-ep8.yaml") == "attune-48gpu-tp2-pp6-ep8");  // unique ids stay
    const std::string html = leaderboard_to_html(board);
    CHECK(html.find("id=\"row-team-a-tp2-ep8\"") != std::string::npos);
    CHECK(html.find("id=\"row-team-b-tp2-ep8\"") != std::string::npos);
  }
}

TEST_CASE("leaderboard.json writes a block many entries share once: later entries say same_as", "[report][schema]") {
  const std::vector<Recipe> seed = seed_recipes();
  std::vector<Recipe> copies;
  for (int i = 0; i < 200; ++i) {
    Recipe r = seed[i % 3];
    r.file = "team-" + std::to_string(i) + "/" + std::filesystem::path(r.file).filename().string();
    copies.push_back(r);
  }
  const Leaderboard board = build_leaderboard(copies, {});
  REQUIRE(board.groups.size() == 1);
  REQUIRE(board.groups[0].entries.size() == 200);
  const Json json = leaderboard_to_json(board);
  const Json& entries = json["groups"][0]["entries"];
  // The first entry of each recipe gives its command; every other entry refers to the first that gave the same.
  std::map<std::string, std::string> first_of_run;
  size_t given = 0, referred = 0;
  for (const Json& e : entries) {
    const Json& run = e["details"]["run"];
    if (run.is_string()) {
      ++given;
      first_of_run[run.get<std::string>()] = e["id"].get<std::string>();
    } else {
      ++referred;
      REQUIRE(run.contains("same_as"));
      bool found = false;
      for (const auto& [text, id] : first_of_run) found = found || id == run["same_as"];
      CHECK(found);  // an earlier entry
    }
  }
  CHECK(given == 3);  // the seed's three commands
  CHECK(referred == 197);
  const std::string text = json.dump(2);
  size_t commands = 0;
  for (size_t at = text.find("--tensor-model-parallel-size"); at != std::string::npos;
       at = text.find("--tensor-model-parallel-size", at + 1))
    ++commands;
  CHECK(commands == 3);
  // Lean: under 4 KB an entry, indented (each copy of the seed wrote about 8.7 KB before).
  CHECK(text.size() < 200 * 4000);
  // Still valid against the schema.
  rapidjson::Document sd;
  sd.Parse(test::read_file(test::source_path("schema/leaderboard.schema.json")).c_str());
  rapidjson::SchemaDocument schema(sd);
  rapidjson::Document d;
  d.Parse(json.dump().c_str());
  rapidjson::SchemaValidator validator(schema);
  CHECK(d.Accept(validator));
}
