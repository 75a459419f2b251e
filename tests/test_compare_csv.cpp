// `recipebench compare` and the page's comparison (report/compare.h), and leaderboard.csv read back through an
// RFC 4180 reader written here.
#include <catch2/catch.hpp>

#include <map>

#include "recipe/validate.h"
#include "report/compare.h"
#include "report/leaderboard.h"
#include "report/leaderboard_csv.h"
#include "report/page_text.h"
#include "test_util.h"
#include "util/format.h"

using namespace recipebench;

namespace {

Leaderboard seed_board() {
  std::vector<Recipe> recipes;
  for (const char* stem :
       {"attune-tp2-pp8-ep8-vpp2-mt16k", "attune-tp2-pp8-ep8-vpp2-mt8k", "attune-48gpu-tp2-pp6-ep8"}) {
    ValidatedRecipe v = validate_recipe_file(test::seed_recipe(stem));
    REQUIRE(v.ok());
    recipes.push_back(*v.recipe);
  }
  return build_leaderboard(recipes, {});
}

const ComparedField& field(const Comparison& c, const std::string& section, const std::string& name) {
  for (const auto& f : c.fields)
    if (f.section == section && f.name == name) return f;
  FAIL("no field " << section << "." << name);
  throw;
}

/// RFC 4180: records end in CRLF; a field is quoted when it holds a comma, quote or line break; "" is a quote.
std::vector<std::vector<std::string>> read_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false, was_quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"')
        field += '"', ++i;
      else if (c == '"')
        quoted = false;
      else
        field += c;
    } else if (c == '"') {
      REQUIRE(field.empty());  // a quote opens a field only at its start
      quoted = was_quoted = true;
    } else if (c == ',') {
      rows.back().push_back(field), field.clear(), was_quoted = false;
    } else if (c == '\r') {
      REQUIRE(i + 1 < text.size());
      REQUIRE(text[i + 1] == '\n');
      rows.back().push_back(field), field.clear(), was_quoted = false;
      rows.emplace_back();
      ++i;
    } else {
      REQUIRE(c != '\n');  // a bare LF outside quotes is not a record end
      field += c;
    }
  }
  REQUIRE_FALSE(quoted);
  REQUIRE(field.empty());
  (void)was_quoted;
  REQUIRE(rows.back().empty());
  rows.pop_back();
  return rows;
}

}  // namespace

TEST_CASE("the seed's #1 and #3 differ in PP, VPP, max tokens per GPU and GPU count", "[report][compare]") {
  const Leaderboard board = seed_board();
  const auto& g = board.groups.at(0).entries;
  REQUIRE(g.at(0).id == "attune-tp2-pp8-ep8-vpp2-mt16k");
  REQUIRE(g.at(2).id == "attune-48gpu-tp2-pp6-ep8");
  const Comparison c = compare_entries(g[0], g[2]);
  CHECK(field(c, "layout", "pp").a == "8");
  CHECK(field(c, "layout", "pp").b == "6");
  CHECK(field(c, "layout", "pp").differs);
  CHECK(field(c, "layout", "vpp").differs);
  CHECK(field(c, "layout", "max tokens per GPU").a == "16384");
  CHECK(field(c, "layout", "max tokens per GPU").b == "8192");
  CHECK(field(c, "hardware", "GPUs").b == "48");
  CHECK_FALSE(field(c, "layout", "tp").differs);
  CHECK_FALSE(field(c, "layout", "dispatcher").differs);
  CHECK(field(c, "layout", "dispatcher").a == "alltoall");
  CHECK(field(c, "layout", "recompute").a == "full, uniform, 1 layer");
  CHECK_FALSE(field(c, "stack", "pytorch").differs);
  CHECK_FALSE(field(c, "env", "CUDA_DEVICE_MAX_CONNECTIONS").differs);
  CHECK(field(c, "layout", "layer split").b == "—");  // #3 has no uneven split
  // Ratios are B / A of the figures: 1075.50 / 1232.53 tokens/s/GPU.
  REQUIRE(c.figures.at(0).key == "tokens_per_s_per_gpu");
  CHECK(*c.figures[0].ratio == Approx(1075.50 / 1232.53));
  REQUIRE(c.figures.at(1).key == "usd_per_million_tokens");
  CHECK(*c.figures[1].ratio == Approx(*g[2].usd_per_million_tokens / *g[0].usd_per_million_tokens));
  // Comparing an entry with itself: no difference, every ratio 1.
  const Comparison same = compare_entries(g[1], g[1]);
  CHECK(same.differences() == 0);
  for (const auto& f : same.figures)
    if (f.ratio) CHECK(*f.ratio == Approx(1.0));
  const std::string txt = comparison_to_text(c);
  CHECK(txt.find("tokens/s per GPU    1,232.5       1,075.5       0.87") != std::string::npos);
  CHECK(txt.find("* layout.pp") != std::string::npos);
  CHECK(txt.find("  layout.tp") != std::string::npos);
}

TEST_CASE("leaderboard.csv round-trips through an RFC 4180 reader", "[report][csv]") {
  Leaderboard board = seed_board();
  auto& e = board.groups.at(0).entries.at(1);
  e.author = "O'Brien, \"A\" & co\r\nline two";  // comma, quotes and a line break
  const auto rows = read_csv(leaderboard_to_csv(board));
  REQUIRE(rows.size() == 4);
  const auto& cols = leaderboard_csv_columns();
  CHECK(rows[0] == cols);
  std::map<std::string, size_t> at;
  for (size_t i = 0; i < cols.size(); ++i) at[cols[i]] = i;
  for (size_t r = 1; r < rows.size(); ++r) {
    REQUIRE(rows[r].size() == cols.size());
    const LeaderboardEntry& x = board.groups[0].entries[r - 1];
    CHECK(rows[r][at["rank"]] == std::to_string(r));
    CHECK(rows[r][at["id"]] == x.id);
    CHECK(std::stod(rows[r][at["tokens_per_s_per_gpu"]]) == x.tokens_per_s_per_gpu);  // full precision
    CHECK(std::stod(rows[r][at["usd_per_million_tokens"]]) == *x.usd_per_million_tokens);
    CHECK(std::stod(rows[r][at["mfu"]]) == *x.mfu);
    CHECK(rows[r][at["author"]] == x.author);
    CHECK(rows[r][at["layout"]] == x.layout_label);
  }
  CHECK(rows[1][at["pp"]] == "8");
  CHECK(rows[3][at["pp"]] == "6");
  CHECK(rows[3][at["gpus"]] == "48");
  CHECK(rows[1][at["max_tokens_per_gpu"]] == "16384");
  CHECK(rows[2][at["author"]] == "O'Brien, \"A\" & co\r\nline two");
}

TEST_CASE("only http(s) URLs may become links", "[report][html][security]") {
  CHECK(is_http_url("https://arxiv.org/abs/2610.17528"));
  CHECK(is_http_url("HTTP://example.com"));
  CHECK_FALSE(is_http_url("javascript:alert(1)"));
  CHECK_FALSE(is_http_url(" javascript:alert(1)"));
  CHECK_FALSE(is_http_url("JaVaScRiPt:alert(1)"));
  CHECK_FALSE(is_http_url("data:text/html,<script>alert(1)</script>"));
  CHECK_FALSE(is_http_url(" https://example.com"));
  CHECK_FALSE(is_http_url("https://ex ample.com"));
  CHECK_FALSE(is_http_url("https://example.com\"onmouseover=\"x"));
  CHECK_FALSE(is_http_url("https://"));
  CHECK_FALSE(is_http_url("//evil.example"));
  CHECK_FALSE(is_http_url("/relative/path"));
  CHECK(script_json(Json("</script><!--")) == "\"\\u003c/script\\u003e\\u003c!--\"");
  // The CSP hash source of "" is the SHA-256 of the empty string in base64.
  CHECK(csp_hash_source("") == "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='");
}

TEST_CASE("compare's text pads by display width: a missing figure's dash takes one column (case of 2026-12-02)",
          "[report][compare]") {
  CHECK(display_width("—") == 1);
  CHECK(display_width("1,232.5") == 7);
  CHECK(pad_right("—", 4) == "—   ");
  CHECK(pad_right("toolong", 3) == "toolong");
  Comparison c;
  c.figures.push_back({"usd_per_million_tokens", "$ per 1M tokens", std::nullopt, std::nullopt, std::nullopt});
  c.figures.push_back({"tokens_per_s_per_gpu", "tokens/s per GPU", 1000.0, 1100.0, 1.1});
  const std::string txt = comparison_to_text(c);
  // Both rows put their B/A column at the same display column (20 + 14 + 14).
  CHECK(txt.find("\n$ per 1M tokens     —             —             —\n") != std::string::npos);
  CHECK(txt.find("\ntokens/s per GPU    1,000.0       1,100.0       1.1\n") != std::string::npos);
}

TEST_CASE("compare shows a positive figure too small for 2 decimals as <0.01, not 0.00", "[report][compare]") {
  CHECK(format_figure("gpu_hours", 0.0012) == "<0.01");
  CHECK(format_figure("gpu_hours", 0.0) == "0.00");
  CHECK(format_figure("gpu_hours", 0.25) == "0.25");
}
