// The fuzzer learns the kinds it missed (issue 33 kind 6, docs/fuzzing.md): each mutation added for the hostile
// inputs of 2026-12-02 makes that kind's variants (asserted on the generated text), the oracle flags each kind's
// faults as they were seen before the fixes (the messages, acceptances and resource use the cases' expect.txt
// record), and the variants pass the oracle now.
#include <catch2/catch.hpp>

#include <algorithm>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "fuzz/fuzz_oracle.h"
#include "fuzz/mutator.h"
#include "recipe/validate.h"
#include "record/run_record_check.h"
#include "util/input_file.h"
#include "util/json_text.h"
#include "test_util.h"
#include "util/json.h"

using namespace recipebench;
using namespace recipebench::fuzz;
using recipebench::test::read_file;
using recipebench::test::source_path;

namespace {

std::string fuzz_case(const std::string& rel) { return read_file(source_path("tests/data/cases/fuzz/" + rel)); }

/// A valid recipe (the cases' tiny.yaml) and a valid run record (the many-keys case's base.json).
const std::string& recipe_seed() {
  static const std::string text = fuzz_case("yaml-deep-nesting-bad-file/tiny.yaml");
  return text;
}
const std::string& record_seed() {
  static const std::string text = fuzz_case("record-many-keys-quadratic/base.json");
  return text;
}

/// `n` one-step mutants of `seed` by mutation `m` (the same generator seed, so the same mutants every run).
std::vector<std::string> mutants(Mutation m, const std::string& seed, size_t n, uint64_t rng_seed = 33) {
  Mutator mutator(rng_seed);
  std::vector<std::string> out;
  for (size_t k = 0; k < n; ++k) out.push_back(mutator.apply(m, seed, {}));
  return out;
}

size_t count_of(const std::string& text, char c) { return static_cast<size_t>(std::count(text.begin(), text.end(), c)); }

/// The most keys of one object in a JSON text (0 when it does not parse).
size_t most_keys(const Json& j) {
  size_t most = j.is_object() ? j.size() : 0;
  if (j.is_structured())
    for (const auto& v : j) most = std::max(most, most_keys(v));
  return most;
}

}  // namespace

TEST_CASE("fuzz mutator: every mutation has its own name", "[fuzz][mutator]") {
  std::set<std::string> names;
  for (int m = 0; m < static_cast<int>(Mutation::kCount); ++m) names.insert(mutation_name(static_cast<Mutation>(m)));
  CHECK(names.size() == static_cast<size_t>(Mutation::kCount));
  CHECK(std::string(mutation_name(Mutation::kTinyDocument)) == "tiny-document");
}

TEST_CASE("fuzz mutator lone-cr: every line end a lone CR, or one of them (yaml-lone-cr-empty-file)",
          "[fuzz][mutator]") {
  const size_t lfs = count_of(recipe_seed(), '\n');
  bool all = false, one = false;
  for (const auto& t : mutants(Mutation::kLoneCr, recipe_seed(), 20)) {
    REQUIRE(t.size() == recipe_seed().size());
    if (count_of(t, '\n') == 0 && count_of(t, '\r') == lfs) all = true;
    if (count_of(t, '\n') == lfs - 1 && count_of(t, '\r') == 1 && t.find("\r\n") == std::string::npos) one = true;
  }
  CHECK(all);
  CHECK(one);
}

TEST_CASE("fuzz mutator flow-open: runs of 65 to 15 MiB of unclosed flow brackets or braces (yaml-flow-open-memory)",
          "[fuzz][mutator]") {
  size_t longest = 0;
  bool square = false, curly = false;
  for (const auto& t : mutants(Mutation::kFlowOpen, recipe_seed(), 40)) {
    const size_t open = count_of(t, '[') + count_of(t, '{') - count_of(recipe_seed(), '[') - count_of(recipe_seed(), '{');
    CHECK(count_of(t, ']') <= count_of(recipe_seed(), ']'));  // nothing closed
    CHECK(open >= 65);
    CHECK(t.size() <= recipe_seed().size() + (size_t{16} << 20));  // inside the 16 MiB input cap
    longest = std::max(longest, open);
    square = square || t.find(std::string(65, '[')) != std::string::npos;
    curly = curly || t.find(std::string(65, '{')) != std::string::npos;
  }
  CHECK(longest >= (size_t{1} << 20));
  CHECK(square);
  CHECK(curly);
}

TEST_CASE("fuzz mutator huge-number: 400-digit integers, 1e400, .nan and .inf spellings (record-number-overflow)",
          "[fuzz][mutator]") {
  std::set<std::string> seen;
  const std::regex digits400("[0-9]{400}");
  for (const auto& t : mutants(Mutation::kHugeNumber, recipe_seed(), 200)) {
    if (std::regex_search(t, digits400)) seen.insert("400 digits");
    for (const char* v : {": 1e400", ": -1e400", ": .nan", ": .NaN", ": .inf", ": -.INF", ": +.inf"})
      if (t.find(v) != std::string::npos) seen.insert(v);
  }
  CHECK(seen == std::set<std::string>{"400 digits", ": 1e400", ": -1e400", ": .nan", ": .NaN", ": .inf", ": -.INF",
                                      ": +.inf"});
  // In JSON no '.': nan and inf as JSON writers print them, beside 1e400.
  bool json_nan = false;
  for (const auto& t : mutants(Mutation::kHugeNumber, record_seed(), 200))
    json_nan = json_nan || t.find(": nan") != std::string::npos;
  CHECK(json_nan);
}

TEST_CASE("fuzz mutator duplicate-key: a key twice in one mapping or object (record-duplicate-keys-accepted)",
          "[fuzz][mutator]") {
  CHECK(yaml_accepted_faults(recipe_seed()).empty());
  size_t yaml_dups = 0, quoted = 0;
  for (const auto& t : mutants(Mutation::kDuplicateKey, recipe_seed(), 30)) {
    const std::string fault = yaml_accepted_faults(t);
    yaml_dups += fault.find("twice") != std::string::npos ? 1 : 0;
    quoted += std::regex_search(t, std::regex("\n *\"[a-z_]+\": ")) ? 1 : 0;
  }
  CHECK(yaml_dups == 30);
  CHECK(quoted > 0);
  CHECK(json_duplicate_key(record_seed()).empty());
  for (const auto& t : mutants(Mutation::kDuplicateKey, record_seed(), 30)) {
    INFO(t.substr(0, 300));
    CHECK(Json::accept(t));  // still well-formed JSON: only the duplicate is wrong
    CHECK(json_duplicate_key(t).find("twice in one object") != std::string::npos);
  }
}

TEST_CASE("fuzz mutator collection-tag: tags on mappings and lists, core scalar tags that do not fit "
          "(yaml-collection-tags-ignored)",
          "[fuzz][mutator]") {
  size_t on_collection = 0, on_scalar = 0;
  for (const auto& t : mutants(Mutation::kCollectionTag, recipe_seed(), 60)) {
    const std::string fault = yaml_accepted_faults(t);
    INFO(fault);
    on_collection += fault.find("on a mapping") != std::string::npos || fault.find("on a list") != std::string::npos;
    on_scalar += fault.find("on the scalar") != std::string::npos;
  }
  CHECK(on_collection > 0);
  CHECK(on_scalar > 0);
  // The case's inputs, which validate accepted before the fix, are faults to the oracle's own reading.
  CHECK(yaml_accepted_faults(fuzz_case("yaml-collection-tags-ignored/set.yaml")) ==
        "the tag tag:yaml.org,2002:set on a mapping at line 20");
  CHECK(yaml_accepted_faults(fuzz_case("yaml-collection-tags-ignored/null-tp.yaml")) ==
        "the tag tag:yaml.org,2002:null on the scalar '1' at line 24");
  CHECK(yaml_accepted_faults(fuzz_case("yaml-collection-tags-ignored/python-map.yaml"))
            .find("python/object") != std::string::npos);
}

TEST_CASE("fuzz mutator nul-key: a NUL in a key, raw, escaped or as JSON's escape u0000 (nul-key-exception)",
          "[fuzz][mutator]") {
  bool raw = false, escaped = false, top = false;
  for (const auto& t : mutants(Mutation::kNulKey, recipe_seed(), 40)) {
    raw = raw || std::regex_search(t, std::regex(std::string("\n *[a-z_]*") + '\0' + "[a-z_]*: "));
    escaped = escaped || std::regex_search(t, std::regex("\n *\"[a-z_]*\\\\0[a-z_]*\": "));
    top = top || t.rfind("\"\\x00\": 1\n", 0) == 0 || t.rfind(std::string("\0: 1\n", 5), 0) == 0;
  }
  CHECK(raw);
  CHECK(escaped);
  CHECK(top);
  bool json = false;
  for (const auto& t : mutants(Mutation::kNulKey, record_seed(), 20))
    json = json || std::regex_search(t, std::regex("\"[a-z_]*\\\\u0000[a-z_]*\": "));
  CHECK(json);
}

// About a minute on 2 cores (parsing twelve objects of up to 200,000 keys): tagged [slow], so CTest labels it `fuzz`,
// outside the quick set of `unit` and `cli` (docs/testing.md).
TEST_CASE("fuzz mutator many-keys: a mapping of 1,000 to 20,000 keys, a JSON object of up to 200,000 (record-many-keys-quadratic)",
          "[fuzz][mutator][slow]") {
  std::set<size_t> sizes;
  for (const auto& t : mutants(Mutation::kManyKeys, record_seed(), 12)) {
    const Json j = Json::parse(t, nullptr, false);
    REQUIRE_FALSE(j.is_discarded());
    sizes.insert(most_keys(j));
  }
  CHECK(*sizes.begin() >= 1000);
  CHECK(*sizes.rbegin() >= 200000);  // the 200,000 keys beside the record's own top-level members
  CHECK(*sizes.rbegin() < 200100);
  bool yaml = false;
  for (const auto& t : mutants(Mutation::kManyKeys, recipe_seed(), 4))
    yaml = yaml || t.find("x-many:\n  k0: 0\n  k1: 1\n") != std::string::npos || t.find("x-many: {k0: 0, k1: 1, ") != std::string::npos;
  CHECK(yaml);
}

TEST_CASE("fuzz mutator long-list: plain lists of 9,999 to 20,000 items without aliases "
          "(yaml-value-limit-blames-aliases)",
          "[fuzz][mutator]") {
  std::set<size_t> items;
  for (const auto& t : mutants(Mutation::kLongList, recipe_seed(), 16)) {
    CHECK(count_of(t, '*') == count_of(recipe_seed(), '*'));
    const size_t block = t.find("x-list:\n- 0\n");
    if (block != std::string::npos)
      items.insert(static_cast<size_t>(std::count(t.begin() + static_cast<long>(block), t.end(), '\n')));
  }
  REQUIRE_FALSE(items.empty());
  CHECK(*items.begin() >= 9999);
  CHECK(*items.rbegin() == 20000);
}

TEST_CASE("fuzz mutator tiny-document: one to four bytes of YAML indicators, ',' among them (comma-unbounded-memory)",
          "[fuzz][mutator]") {
  std::set<std::string> seen;
  for (const auto& t : mutants(Mutation::kTinyDocument, recipe_seed(), 400)) {
    CHECK(!t.empty());
    CHECK(t.size() <= 8);
    seen.insert(t);
  }
  CHECK(seen.count(",") == 1);
  CHECK(seen.count(",\n") == 1);
  CHECK(seen.count("- a\n,\n") == 1);
  CHECK(seen.size() > 40);
}

TEST_CASE("fuzz oracle: the kinds' faults as the cases saw them are findings", "[fuzz][oracle]") {
  const std::string cr = fuzz_case("yaml-lone-cr-empty-file/cr.yaml");
  std::string list = recipe_seed() + "x-list:\n";
  for (int k = 1; k <= 20000; ++k) list += "- " + std::to_string(k) + "\n";
  // Kind 3: library messages and untrue ones (yaml-deep-nesting-bad-file, nul-key-exception,
  // record-number-overflow-unlocated, import-unlocated-errors, yaml-lone-cr-empty-file,
  // yaml-value-limit-blames-aliases, yaml-list-count-wrong, the .nan described as 'string').
  CHECK(untrue_message("w.yaml:58:1006: error: malformed YAML: bad file, expected well-formed YAML", "x: 1") ==
        "a library's message");
  CHECK(untrue_message("[json.exception.out_of_range.403] key 't' not found", "") == "a library's message");
  CHECK(untrue_message("[json.exception.out_of_range.406] number overflow parsing '1e400'", "") ==
        "a library's message");
  CHECK(untrue_message("recipebench: error: stoll", "") == "a library's message");
  CHECK(untrue_message("cr.yaml:1:1: error: an empty file, expected a YAML mapping of recipe fields", cr) ==
        "'empty file' said of a document with content");
  CHECK(untrue_message("e.yaml:1:1: error: an empty file, expected a YAML mapping of recipe fields", "# only\r---\r") ==
        "");
  CHECK(untrue_message("w.yaml:10002:3: error: x-list[9943]: a document that expands to more than 10000 values "
                       "(aliases of aliases), expected a recipe without nested alias expansion",
                       list) == "aliases blamed in an input without any");
  CHECK(untrue_message("w.yaml:43:11: error: bench.window: a list of 1 items, expected at least 2 items", "") ==
        "a count of 1 said in the plural");
  CHECK(untrue_message("w.yaml:1:4: error: tp: null null, expected integer", "") == "a type word said twice");
  CHECK(untrue_message("w.yaml:1:4: error: tp: mapping a mapping, expected integer", "") == "a type word said twice");
  CHECK(untrue_message("w.yaml:1:5: error: tp: string '.nan', expected integer", "tp: .nan\n") ==
        "a plain number said to be a string");
  CHECK(untrue_message("w.yaml:1:5: error: tp: string '.nan', expected integer", "tp: '.nan'\n") == "");
  // A message quoting 100,000 characters is read without a regex over all of it (the bench's 7 crashes of
  // 2026-12-03 were libstdc++'s recursive regex overflowing the stack on such a message).
  CHECK(untrue_message("x.yaml:1:4: error: x: string '" + std::string(100000, '-') + " 1', expected integer",
                       "x: '-'") == "");
  // Kind 2 in records, kind 5 on collections: acceptances the oracle's own reading refuses.
  CHECK(json_duplicate_key(fuzz_case("record-duplicate-keys-accepted/dup-status.json")) ==
        "the key 'status' twice in one object");
  // Kind 1: the resource use seen (yaml-flow-open-memory: 15 MiB of '[' -> 3.8 GB; record-many-keys-quadratic:
  // 40,000 keys in 2.5 s of one core, 200,000 over 20 s).
  CHECK(resource_overrun({0.4, 100u << 20, 3800ull << 20, 15u << 20}, 5) ==
        "the peak memory rose to 3800 MiB for an input of 15728640 bytes (bound: 512 MiB + 64 bytes per input byte)");
  CHECK(resource_overrun({20.0, 0, 0, 3600000}, 5).rfind("the check took 20.000000 s of CPU (over 5.000000 s)", 0) == 0);
  CHECK(resource_overrun({0.3, 100u << 20, 400u << 20, 1u << 20}, 5) == "");
}

TEST_CASE("a document whose value is null is not 'an empty file' (tiny documents of indicators)", "[fuzz][oracle]") {
  for (const char* text : {"~\n", "!\n", "&a\n", "--- !!null\n"}) {
    const auto v = validate_recipe_text(text, "t.yaml");
    REQUIRE(v.errors.size() == 1);
    CHECK(v.errors[0].to_string() == "t.yaml:1:1: error: a document whose value is null, expected a YAML mapping of "
                                     "recipe fields");
    CHECK(untrue_message(v.errors[0].to_string(), text) == "");
  }
  for (const char* text : {"", "# only a comment\n", "\xEF\xBB\xBF---\n...\n", "--- # c\r\n"})
    CHECK(validate_recipe_text(text, "t.yaml").errors.at(0).to_string() ==
          "t.yaml:1:1: error: an empty file, expected a YAML mapping of recipe fields");
}

TEST_CASE("fuzz oracle: the new kinds' variants pass now (the fixes hold)", "[fuzz][oracle]") {
  // A few mutants of each kind through the in-process oracle, recipe and record: no finding. The biggest ones
  // (15 MiB of '[', 200,000 keys) are among them, so this is also kind 1's time bound.
  for (Mutation m : {Mutation::kLoneCr, Mutation::kFlowOpen, Mutation::kHugeNumber, Mutation::kDuplicateKey,
                     Mutation::kCollectionTag, Mutation::kNulKey, Mutation::kManyKeys, Mutation::kLongList,
                     Mutation::kTinyDocument}) {
    for (const auto& t : mutants(m, recipe_seed(), 6, 7)) {
      const Verdict v = check_in_process(t, InputKind::kRecipe);
      INFO(mutation_name(m) << ": " << t.substr(0, 200));
      CHECK(v.ok);
      CHECK(v.reason == "");
    }
    for (const auto& t : mutants(m, record_seed(), 3, 7)) {
      const Verdict v = check_in_process(t, InputKind::kRunRecord);
      INFO(mutation_name(m) << ": " << t.substr(0, 200));
      CHECK(v.reason == "");
    }
  }
}

TEST_CASE("found by the fuzz bench of 2026-12-03: a number where a closed object allows no member is a located "
          "unknown field",
          "[fuzz][records]") {
  // A run record whose optimizer_sharding holds "step": 10 (a line moved by the mutator): the schema check pointed
  // its additionalProperties violation at the member and erased from a number (json.exception.type_error.307).
  const std::string file = source_path("tests/data/cases/fuzz/findings/number-under-closed-object.json");
  const CheckedRunRecord checked = check_run_record(parse_json_text(read_file(file)), file);
  REQUIRE_FALSE(checked.ok());
  std::vector<std::string> errors;
  for (const auto& d : checked.errors) errors.push_back(d.path + ": " + d.found);
  CHECK(std::find(errors.begin(), errors.end(), "capabilities.optimizer_sharding.step: unknown field 'step'") !=
        errors.end());
  CHECK(check_in_process(read_file(file), InputKind::kRunRecord).reason == "");
}

TEST_CASE("found by the fuzz bench of 2026-12-06: an array of one element is 'an array of 1 item'", "[fuzz][findings]") {
  // A run record whose settings.data.supervised_token_ratio is [0.5] (a mutant): the message said "an array of 1
  // items". Every count an input decides is said through counted() (util/format.h) since.
  const std::string file = source_path("tests/data/cases/fuzz/findings/array-of-one-item.json");
  const CheckedRunRecord checked = check_run_record(parse_json_text(read_file(file)), file);
  REQUIRE_FALSE(checked.ok());
  std::vector<std::string> errors;
  for (const auto& d : checked.errors) errors.push_back(d.path + ": " + d.found);
  CHECK(std::find(errors.begin(), errors.end(), "settings.data.supervised_token_ratio: an array of 1 item") !=
        errors.end());
  CHECK(check_in_process(read_file(file), InputKind::kRunRecord).reason == "");
}

TEST_CASE("found by the clean fuzz bench of 2026-12-03: a count of 1 in the singular, and no rank map for a model "
          "of unknown layers",
          "[fuzz][findings]") {
  // result.steps_per_run: 1 with the window 5..19: the message said "1 steps per run".
  const std::string one = read_file(source_path("tests/data/cases/fuzz/findings/window-one-step.yaml"));
  const ValidatedRecipe v = validate_recipe_text(one, "window-one-step.yaml");
  REQUIRE(v.errors.size() == 1);
  CHECK(v.errors[0].path == "result.window[1]");
  CHECK(v.errors[0].found == "window 5..19 with 1 step per run");
  CHECK(v.errors[0].expected == "0 <= first <= last <= 0 (steps numbered from 0)");
  CHECK(check_in_process(one, InputKind::kRecipe).reason == "");
  // A model name outside the registry (a line moved into it) known by the stated active count only: validate warns
  // that the layer split is not checked, and the oracle, like `run --dry-run`, builds no rank map for it.
  const std::string unknown = read_file(source_path("tests/data/cases/fuzz/findings/unknown-model-layer-split.yaml"));
  const ValidatedRecipe u = validate_recipe_text(unknown, "unknown-model-layer-split.yaml");
  CHECK(u.ok());
  REQUIRE_FALSE(u.warnings.empty());
  CHECK_THAT(u.warnings[0].found, Catch::Contains("is outside the registry, known by its stated counts only"));
  const Verdict verdict = check_in_process(unknown, InputKind::kRecipe);
  CHECK(verdict.accepted);
  CHECK(verdict.reason == "");
}

TEST_CASE("found by the clean fuzz bench of 2026-12-03: the YAML escapes of U+00A0 and U+0085 read as UTF-8 (yaml-cpp "
          "writes them as lone bytes), in keys, values and the page",
          "[fuzz][findings]") {
  // The two-line input '"\_00": 1' made validate print json.exception.type_error.316 (invalid UTF-8 byte 0xA0): the
  // unknown key held yaml-cpp's lone 0xA0 for U+00A0.
  const std::string text = read_file(source_path("tests/data/cases/fuzz/findings/yaml-nbsp-escape-key.yaml"));
  const ValidatedRecipe v = validate_recipe_text(text, "nbsp.yaml");
  REQUIRE_FALSE(v.ok());
  for (const Diagnostic& d : v.errors) CHECK(first_invalid_utf8(d.to_string()) == std::string::npos);
  CHECK(v.errors[0].path == "\xC2\xA0" "00");                                  // the key as read: U+00A0, "00"
  CHECK(v.errors[0].to_string().find("\\u00a000: unknown field") != std::string::npos);  // and as printed
  CHECK(check_in_process(text, InputKind::kRecipe).reason == "");
  // Variants: \N (U+0085) and \_ in a value of a recipe that validates, ranks and writes its page.
  std::string seed = recipe_seed();
  const std::string label = "  label: ";
  const size_t at = seed.find(label);
  REQUIRE(at != std::string::npos);
  seed.insert(at + label.size(), "\"a\\_b\\Nc \\xff\" # ");
  const ValidatedRecipe w = validate_recipe_text(seed, "label.yaml");
  REQUIRE(w.ok());
  CHECK(w.recipe->layout.label == "a\xC2\xA0" "b\xC2\x85" "c \xC3\xBF");
  CHECK(check_in_process(seed, InputKind::kRecipe).reason == "");
  // The helper: lone bytes as their Latin-1 code points, valid UTF-8 untouched.
  CHECK(utf8_from_latin1_bytes("\xA0") == "\xC2\xA0");
  CHECK(utf8_from_latin1_bytes("caf\xC3\xA9\x85") == "caf\xC3\xA9\xC2\x85");
  CHECK(utf8_from_latin1_bytes("\xE2\x82\xAC") == "\xE2\x82\xAC");
}
