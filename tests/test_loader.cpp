// YAML loading: core-schema typing, source marks, duplicate keys, malformed and empty input.
#include <catch2/catch.hpp>

#include "recipe/source_doc.h"

using namespace recipebench;

TEST_CASE("plain and quoted scalars follow the YAML 1.2 core schema", "[loader]") {
  const SourceDoc d = parse_yaml(
      "a: '12.9'\nb: 12.9\nc: 2026-10-18\nd: null\ne: ~\nf: true\ng: 0x10\nh: 1e3\ni: \"7\"\nj: yes\nk:\nl: 1075.50\n",
      "t.yaml");
  const Json& v = d.value;
  CHECK(v["a"].is_string());
  CHECK(v["a"] == "12.9");
  CHECK(v["b"].is_number_float());
  CHECK(v["b"].get<double>() == Approx(12.9));
  CHECK(v["c"] == "2026-10-18");  // no timestamp type in the core schema
  CHECK(v["d"].is_null());
  CHECK(v["e"].is_null());
  CHECK(v["f"] == true);
  CHECK(v["g"] == 16);
  CHECK(v["h"].get<double>() == 1000.0);
  CHECK(v["i"] == "7");
  CHECK(v["j"] == "yes");  // YAML 1.1 booleans are plain strings in 1.2
  CHECK(v["k"].is_null());
  CHECK(v["l"].get<double>() == 1075.5);
  CHECK(d.node("/l")->text == "1075.50");  // the text as written, for printed precision
  CHECK(d.node("/a")->plain == false);
  CHECK(d.node("/b")->plain == true);
}

TEST_CASE("every node keeps its line, column and dotted path", "[loader]") {
  const SourceDoc d = parse_yaml("top:\n  inner: 3\n  list:\n  - 5\n  - x: 1\n", "t.yaml");
  REQUIRE(d.node("/top/inner"));
  CHECK(d.node("/top/inner")->value.line == 2);
  CHECK(d.node("/top/inner")->value.column == 10);
  CHECK(d.node("/top/inner")->key.column == 3);
  CHECK(d.node("/top/inner")->path == "top.inner");
  CHECK(d.node("/top/list/1/x")->path == "top.list[1].x");
  CHECK(d.node("/top/list/1/x")->value.line == 5);
  // A pointer to a missing member names its path and points at the nearest existing ancestor.
  CHECK(d.path("/top/missing") == "top.missing");
  CHECK(d.mark("/top/missing").line == 2);
  const Diagnostic diag = d.at("/top/inner", "3", "4");
  CHECK(diag.to_string() == "t.yaml:2:10: error: top.inner: 3, expected 4");
}

TEST_CASE("duplicate keys are errors located at the second key", "[loader]") {
  try {
    parse_yaml("a: 1\nb:\n  c: 2\n  c: 3\n", "dup.yaml");
    FAIL("duplicate key accepted");
  } catch (const InputError& e) {
    CHECK(e.diagnostic().line == 4);
    CHECK(e.diagnostic().column == 3);
    CHECK(e.diagnostic().path == "b.c");
    CHECK_THAT(e.diagnostic().found, Catch::Contains("duplicate key 'c'") && Catch::Contains("line 3"));
  }
}

TEST_CASE("malformed, empty and non-mapping documents are located errors", "[loader]") {
  CHECK_THROWS_AS(parse_yaml("a: [1, 2\nb: 3\n", "bad.yaml"), InputError);
  try {
    parse_yaml("a: [1, 2\nb: 3\n", "bad.yaml");
  } catch (const InputError& e) {
    CHECK(e.diagnostic().line >= 1);
    CHECK_THAT(e.diagnostic().found, Catch::Contains("malformed YAML"));
  }
  try {
    parse_yaml("", "empty.yaml");
    FAIL("empty document accepted");
  } catch (const InputError& e) {
    CHECK(e.diagnostic().to_string() ==
          "empty.yaml:1:1: error: an empty file, expected a YAML mapping of recipe fields");
  }
  CHECK_THROWS_AS(parse_yaml("- 1\n- 2\n", "list.yaml"), InputError);
  CHECK_THROWS_AS(parse_yaml("a: 1\n---\nb: 2\n", "two.yaml"), InputError);
  CHECK_THROWS_AS(load_yaml_file("/nonexistent/recipe.yaml"), InputError);
}
