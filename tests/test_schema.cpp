// The recipe schema through RapidJSON's validator: known keys, custom x- keys, types and messages.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "recipe/schema_check.h"
#include "recipe/source_doc.h"
#include "test_util.h"

using namespace recipebench;

namespace {

Diagnostics check_text(const std::string& text) {
  static const SchemaChecker checker(recipe_schema());
  return checker.check(parse_yaml(text, "r.yaml"));
}

std::string seed_text() { return test::read_file(test::seed_recipe("attune-tp2-pp8-ep8-vpp2-mt16k")); }

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("the embedded schema is draft-04 and the seed recipes pass it", "[schema]") {
  CHECK(recipe_schema()["$schema"] == "http://json-schema.org/draft-04/schema#");
  CHECK(check_text(seed_text()).empty());
}

TEST_CASE("custom x- fields pass at the top level and inside objects", "[schema]") {
  std::string t = seed_text() + "x-team: perf\n";
  t = replace(t, "  dispatcher: alltoall\n", "  dispatcher: alltoall\n  x-note: tuned by hand\n");
  CHECK(check_text(t).empty());
}

TEST_CASE("several problems are reported in one pass", "[schema]") {
  std::string t = replace(seed_text(), "  tp: 2\n", "  tp: two\n");
  t = replace(t, "status: verified\n", "status: great\n");
  t = replace(t, "  cuda: '12.9'\n", "  cuda: 12.9\n");
  const Diagnostics d = check_text(t);
  REQUIRE(d.size() == 3);
  std::string all;
  for (const auto& e : d) all += e.to_string() + "\n";
  CHECK_THAT(all, Catch::Contains("layout.tp: string 'two', expected integer"));
  CHECK_THAT(all, Catch::Contains("status: 'great', expected one of proposed, measured, verified"));
  CHECK_THAT(all, Catch::Contains("stack.cuda: number 12.9, expected a string: quote it ('12.9')"));
}

TEST_CASE("an unknown key suggests the close known key", "[schema]") {
  const Diagnostics d = check_text(replace(seed_text(), "layout:\n", "layuot:\n"));
  // One problem, one message: the required `layout` is missing because of the typo, so that is not repeated.
  REQUIRE(d.size() == 1);
  CHECK(d[0].path == "layuot");
  CHECK_THAT(d[0].found, Catch::Equals("unknown field 'layuot'"));
  CHECK_THAT(d[0].expected, Catch::StartsWith("'layout' (did you mean it?)"));
  // Without a close match, the missing required field is reported at the top of the file.
  const Diagnostics d2 = check_text(replace(seed_text(), "layout:\n", "x-layout:\n"));
  REQUIRE(d2.size() == 1);
  CHECK(d2[0].to_string() ==
        "r.yaml:1:1: error: layout: missing required field 'layout', expected a value (the parallel layout)");
}

#include <cstdlib>

#include "recipe/schema_doc.h"
#include "util/atomic_file.h"

TEST_CASE("docs/recipe-format.md is generated from the schema and up to date", "[schema][docs]") {
  const std::string generated = schema_markdown(recipe_schema());
  const std::string path = test::source_path("docs/recipe-format.md");
  if (const char* update = std::getenv("RECIPEBENCH_UPDATE_DOCS"); update && std::string(update) == "1")
    write_file_atomic(path, generated);
  INFO("docs/recipe-format.md is stale: run scripts/gen-docs");
  CHECK(test::read_file(path) == generated);
  // Every field the seeds use is documented, nested ones included.
  for (const char* field :
       {"`layout.recompute.granularity`", "`result.active_params.count`", "`correctness.convergence.correlation`",
        "`workload.dataset.build.supervised_token_ratio`", "`correctness.component_tests[].detail`"})
    CHECK(generated.find(field) != std::string::npos);
}
