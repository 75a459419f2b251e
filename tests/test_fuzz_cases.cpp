// The hostile-input cases of 2026-12-02 (issue 33; tests/data/cases/fuzz/<case>/, copied from the cases' inputs):
// each input with the result its expect.txt names, in process. Big inputs are made here, as the cases' run.sh made
// them, and each such test checks its own time so a regression fails rather than hangs.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "catalog/hf_config.h"
#include "catalog/models.h"
#include "logparse/log_reader.h"
#include "recipe/source_doc.h"
#include "recipe/catalog_file.h"
#include "recipe/validate.h"
#include "record/run_record_check.h"
#include "test_util.h"
#include "util/json_text.h"

using namespace recipebench;
using recipebench::test::case_path;
using recipebench::test::recipe_file_errors;
using recipebench::test::source_path;

namespace {

std::string fuzz_case(const std::string& rel) { return source_path("tests/data/cases/fuzz/" + rel); }

/// The diagnostics of recipe text, one line each.
std::vector<std::string> text_errors(const std::string& text, const std::string& name) {
  std::vector<std::string> out;
  for (const auto& d : validate_recipe_text(text, name).errors) out.push_back(d.to_string());
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// The message of what `f` throws ("" when it does not throw).
template <class F>
std::string thrown(F f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// ---- kind 1: memory and time bounded by the input's size ----

TEST_CASE("comma-unbounded-memory: ',' where no value can start is a located error, at once", "[cases][fuzz][yaml]") {
  const auto start = std::chrono::steady_clock::now();
  CHECK(text_errors(",\n", "comma.yaml") ==
        std::vector<std::string>{"comma.yaml:1:1: error: malformed YAML: ',' where no value can start, expected "
                                 "well-formed YAML"});
  CHECK(text_errors("- a\n,\n", "comma2.yaml") ==
        std::vector<std::string>{"comma2.yaml:2:1: error: malformed YAML: ',' where no value can start, expected "
                                 "well-formed YAML"});
  CHECK(text_errors("]\n", "close.yaml").size() == 1);
  CHECK(text_errors("a: 1\n}\n", "close2.yaml").size() == 1);
  CHECK(seconds_since(start) < 1.0);
}

TEST_CASE("yaml-flow-open-memory: flow lists or mappings nested past 64 are refused before the parser queues them",
          "[cases][fuzz][yaml]") {
  const auto start = std::chrono::steady_clock::now();
  CHECK(text_errors("x: " + std::string(size_t{4} << 20, '[') + "\n", "open.yaml") ==
        std::vector<std::string>{
            "open.yaml:1:68: error: values nested more than 64 levels deep, expected at most 64 levels"});
  CHECK(text_errors("x: " + std::string(100, '{') + "\n", "brace.yaml") ==
        std::vector<std::string>{
            "brace.yaml:1:68: error: values nested more than 64 levels deep, expected at most 64 levels"});
  // Brackets inside quotes and comments are text, not nesting.
  const std::string quoted =
      "x-a: '" + std::string(100, '[') + "'\nx-b: \"" + std::string(100, '{') + "\" # " + std::string(100, '[') + "\n";
  const auto errors = text_errors(quoted, "quoted.yaml");
  REQUIRE_FALSE(errors.empty());
  CHECK(errors[0].find("nested") == std::string::npos);
  CHECK(seconds_since(start) < 2.0);
}

TEST_CASE("record-many-keys-quadratic: an object of 200,000 keys is read in linear time", "[cases][fuzz][records]") {
  std::string text = "{\"environment\": {";
  for (int i = 0; i < 200000; ++i) text += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":" + std::to_string(i);
  text += "}}";
  const auto start = std::chrono::steady_clock::now();
  const Json j = parse_json_text(text);
  // Linear: 0.3 to 0.7 s on this 2-core machine alone, more beside a parallel build; the quadratic insertion it
  // guards against takes minutes (2e10 key comparisons), so a bound of 5 s tells them apart under load too.
  CHECK(seconds_since(start) < 5.0);
  CHECK(j["environment"].size() == 200000);
  CHECK(j["environment"]["k199999"] == 199999);
}

TEST_CASE("cli-layers-unbounded: a config's layers are bounded and counting them does not loop", "[cases][fuzz][hf]") {
  ModelConfig m = *find_model("Qwen3.5-tiny");
  m.num_layers = 300'000'000;
  const auto start = std::chrono::steady_clock::now();
  CHECK(m.num_full_attention_layers() == 75'000'000);
  CHECK(m.num_linear_attention_layers() == 225'000'000);
  CHECK(seconds_since(start) < 0.5);
}

// ---- kind 2: duplicate keys refused with a location ----

TEST_CASE("record-duplicate-keys-accepted: a key twice in a run record or config.json is refused, located",
          "[cases][fuzz][records][hf]") {
  const std::string status = fuzz_case("record-duplicate-keys-accepted/dup-status.json");
  CHECK(thrown([&] { read_json_file(status); }) ==
        status +
            ":3:25: error: status: duplicate key 'status' (first at line 3, column 3), expected each key once per "
            "object");
  const std::string tps = fuzz_case("record-duplicate-keys-accepted/dup-tps.json");
  CHECK_THAT(thrown([&] { read_json_file(tps); }),
             Catch::StartsWith(tps + ":") && Catch::Contains("metrics.tokens_per_s_per_gpu: duplicate key"));
  const std::string config = fuzz_case("record-duplicate-keys-accepted/dup-config.json");
  CHECK(thrown([&] { load_hf_config(config); }) ==
        config +
            ":7:22: error: hidden_size: duplicate key 'hidden_size' (first at line 7, column 3), expected each key "
            "once per object");
  // In an array of objects the path names the element.
  CHECK_THROWS_WITH(parse_json_text("{\"a\": [{}, {\"b\": 1,\n \"b\": 2}]}"),
                    "a[1].b: duplicate key 'b' (first at line 1, column 13), expected each key once per object");
}

// ---- kind 3: every error located and true ----

TEST_CASE("nul-key-exception: a key holding a NUL is a located error, no library message", "[cases][fuzz][yaml]") {
  const std::string f = fuzz_case("nul-key-exception/nul-key.yaml");
  CHECK(recipe_file_errors(f) == std::vector<std::string>{f + ":24:3: error: layout.t\\x00p: a key holding the control "
                                                     "character 0x00 (NUL), expected a plain field name"});
  const std::string top = fuzz_case("nul-key-exception/top-nul.yaml");
  CHECK(recipe_file_errors(top) == std::vector<std::string>{top + ":2:1: error: \\x00: a key holding the control character "
                                                         "0x00 (NUL), expected a plain field name"});
}

TEST_CASE("record-number-overflow-unlocated: 1e400 in a record names the file, line and field",
          "[cases][fuzz][records]") {
  const std::string f = fuzz_case("record-number-overflow-unlocated/e400.json");
  CHECK_THAT(thrown([&] { read_json_file(f); }),
             Catch::StartsWith(f + ":") &&
                 Catch::EndsWith(": error: metrics.tokens_per_s_per_gpu: number 1e400 out of range, expected a "
                                 "number within +-1.8e308"));
  CHECK_THROWS_WITH(parse_json_text("{\"a\": [1, " + std::string(500, '9') + "]}"),
                    Catch::StartsWith("a[1]: number 9999999999999999999999999999999999999999... (500 characters) out "
                                      "of range"));
}

TEST_CASE("yaml-deep-nesting-bad-file: nesting past the limit says so at every depth", "[cases][fuzz][yaml]") {
  const std::string tiny = test::read_file(fuzz_case("yaml-deep-nesting-bad-file/tiny.yaml"));
  for (int n : {300, 500, 10000}) {
    INFO(n);
    const auto errors = text_errors(tiny + "x-d: " + std::string(n, '[') + std::string(n, ']') + "\n", "deep.yaml");
    REQUIRE(errors.size() == 1);
    CHECK_THAT(errors[0], Catch::EndsWith(": values nested more than 64 levels deep, expected at most 64 levels"));
  }
  // Block nesting past yaml-cpp's own depth guard (about 500 levels) gets the same words, not "bad file".
  std::string block = "x-d:\n";
  for (int i = 0; i < 2000; ++i) block += std::string(size_t(i) * 2 + 2, ' ') + "- \n";
  const auto errors = text_errors(tiny + block, "block.yaml");
  REQUIRE_FALSE(errors.empty());
  CHECK(errors[0].find("bad file") == std::string::npos);
}

TEST_CASE("yaml-lone-cr-empty-file: lone CR line ends are line ends", "[cases][fuzz][yaml]") {
  CHECK(recipe_file_errors(fuzz_case("yaml-lone-cr-empty-file/cr.yaml")).empty());
  CHECK(text_errors("a: 1\rb: [\r", "cr.yaml") ==
        std::vector<std::string>{"cr.yaml:3:1: error: malformed YAML: a '[' list that is never closed with ']' (the "
                                 "position is where the parser gave up), expected well-formed YAML"});
}

TEST_CASE("yaml-value-limit-blames-aliases: a long plain list is not blamed on aliases", "[cases][fuzz][yaml]") {
  std::string text = test::read_file(fuzz_case("yaml-value-limit-blames-aliases/tiny.yaml")) + "x-list:\n";
  for (int i = 1; i <= 20000; ++i) text += "- " + std::to_string(i) + "\n";
  const auto errors = text_errors(text, "list.yaml");
  REQUIRE(errors.size() == 1);
  CHECK_THAT(errors[0], Catch::EndsWith("a document of more than 10000 values, expected at most 10000 values in a "
                                        "recipe"));
}

TEST_CASE("yaml-list-count-wrong: a list's bad item is the one error, no false count", "[cases][fuzz][schema]") {
  const std::string f = fuzz_case("yaml-list-count-wrong/window-a.yaml");
  CHECK(recipe_file_errors(f) == std::vector<std::string>{f + ":43:12: error: bench.window[0]: string 'a', expected integer"});
  const std::string tiny = test::read_file(fuzz_case("yaml-deep-nesting-bad-file/tiny.yaml"));
  std::string two_bad = tiny;
  two_bad.replace(two_bad.find("window: [5, 19]"), 15, "window: [a, b]");
  for (const auto& e : text_errors(two_bad, "ab.yaml")) CHECK(e.find("items") == std::string::npos);
}

// ---- kind 4: numbers range-checked where they are read ----

TEST_CASE("hf-config-width-overflow: widths beyond the bound are refused, no wrapped count", "[cases][fuzz][hf]") {
  const std::string d = fuzz_case("hf-config-width-overflow/");
  CHECK_THAT(thrown([&] { load_hf_config(d + "head-dim-2p53.json"); }),
             Catch::StartsWith(d + "head-dim-2p53.json:") &&
                 Catch::EndsWith(": error: head_dim: 9007199254740993, expected an integer from 1 to 1048576"));
  CHECK_THAT(thrown([&] { load_hf_config(d + "head-dim-2p63.json"); }),
             Catch::EndsWith(": error: head_dim: 9223372036854775807, expected an integer from 1 to 1048576"));
  CHECK_THAT(thrown([&] { load_hf_config(d + "hidden-2p63.json"); }),
             Catch::EndsWith(": error: hidden_size: 9223372036854775807, expected an integer from 1 to 1048576"));
  // Within each field's bound, a product past 2^63 throws instead of wrapping.
  ModelConfig m = *find_model("Qwen3.5-tiny");
  m.hidden_size = m.expert_ffn = m.num_experts = m.num_layers = int64_t{1} << 20;
  CHECK_THROWS_AS(count_params(m), std::overflow_error);
}

TEST_CASE("bench-window-not-validated: bench.window and bench.steps are checked by validate, located",
          "[cases][fuzz]") {
  const std::string reversed = fuzz_case("bench-window-not-validated/reversed.yaml");
  CHECK(recipe_file_errors(reversed) ==
        std::vector<std::string>{reversed + ":43:11: error: bench.window: window 19..5 with 20 steps, expected 0 <= "
                                            "first <= last <= 19 (steps numbered from 0)"});
  const std::string steps3 = fuzz_case("bench-window-not-validated/steps3.yaml");
  CHECK(recipe_file_errors(steps3) ==
        std::vector<std::string>{steps3 + ":42:10: error: bench.steps: window 5..19 with 3 steps, expected 0 <= "
                                          "first <= last <= 2 (steps numbered from 0)"});
}

// ---- kind 5: tags and folders ----

TEST_CASE("yaml-collection-tags-ignored: tags on collections and core tags that do not fit are refused",
          "[cases][fuzz][yaml]") {
  const std::string d = fuzz_case("yaml-collection-tags-ignored/");
  CHECK(recipe_file_errors(d + "python-map.yaml") ==
        std::vector<std::string>{d + "python-map.yaml:20:9: error: layout: unsupported tag "
                                     "'tag:yaml.org,2002:python/object:__main__.X' on a mapping, expected an untagged "
                                     "value"});
  CHECK(recipe_file_errors(d + "set.yaml") ==
        std::vector<std::string>{d + "set.yaml:20:9: error: layout: unsupported tag 'tag:yaml.org,2002:set' on a "
                                     "mapping, expected an untagged value"});
  CHECK(recipe_file_errors(d + "null-tp.yaml") ==
        std::vector<std::string>{d + "null-tp.yaml:24:7: error: layout.tp: '1' tagged '!!null', which it is not, "
                                     "expected a value of the tagged type, or an untagged value"});
  CHECK(text_errors("a: !!seq [1]\nb: !!map {c: 1}\nc: !!float 1\nd: !!str [1]\n", "t.yaml").at(0) ==
        "t.yaml:4:4: error: d: unsupported tag 'tag:yaml.org,2002:str' on a list, expected an untagged value");
}

TEST_CASE("unreadable-subfolder-skipped: a folder that cannot be opened is listed, never skipped", "[cases][fuzz]") {
  // Root opens any folder, mode 000 or not: then only the listing of what is found is checked (the case's run.sh
  // runs the binary as nobody for the refusal).
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("rb-locked-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "locked");
  std::ofstream(dir / "top.yaml") << test::read_file(fuzz_case("unreadable-subfolder-skipped/tiny.yaml"));
  std::ofstream(dir / "locked" / "hidden.yaml") << "a: 1\n";
  ::chmod((dir / "locked").c_str(), 0);
  const std::vector<std::string> files = collect_files({dir.string()}, {".yaml", ".yml"});
  if (::geteuid() != 0) {
    CHECK(files == std::vector<std::string>{(dir / "locked").string(), (dir / "top.yaml").string()});
    CHECK(recipe_file_errors((dir / "locked").string()) ==
          std::vector<std::string>{(dir / "locked").string() +
                                   ": error: cannot be read: Permission denied, expected a readable folder"});
  } else {
    CHECK(files.size() == 2);
  }
  ::chmod((dir / "locked").c_str(), 0755);
  std::filesystem::remove_all(dir);
}

// ---- kind 3 / 4 in logs: import-unlocated-errors, import-huge-ms-invalid-record ----

TEST_CASE("import-unlocated-errors: a 20-digit iteration and a step time of 0, -5 or 1e308 ms are located line errors",
          "[cases][fuzz][logparse]") {
  LogContext c;
  c.file = "x.log";
  c.row_tokens = 4096;
  c.global_batch = 64;
  c.gpus = 8;
  const std::string line =
      " iteration        6/     100 | consumed samples:         3072 | elapsed time per iteration (ms): ";
  for (const auto& [ms, seconds] :
       std::vector<std::pair<std::string, std::string>>{{"0.0", "0"}, {"-5.0", "-0.005"}, {"1e308", "1e+305"}}) {
    LogReader reader(LogFormatSpec{LogFormat::kMegatron, ""}, c);
    reader.feed(line + ms + " | global batch size:    64 |");
    const ParsedLog log = reader.result();
    REQUIRE(log.problems.size() == 1);
    CHECK(log.problems[0].to_string() == "x.log:1:1: error: megatron step line: a step time of " + seconds +
                                             " s, expected a finite time > 0 s and at most 1e6 s");
    CHECK(log.steps.empty());
  }
  LogReader big(LogFormatSpec{LogFormat::kMegatron, ""}, c);
  big.feed(" iteration 99999999999999999999/ 22 | elapsed time per iteration (ms): 10.0 |");
  REQUIRE(big.result().problems.size() == 1);
  CHECK(big.result().problems[0].to_string() ==
        "x.log:1:12: error: megatron step line: iteration 99999999999999999999 out of range, expected at most 15 "
        "digits");
}

TEST_CASE("import-step-count-false: restarts and repeats are counted, the first restart located",
          "[cases][fuzz][logparse]") {
  LogContext c;
  c.file = "backwards.log";
  c.row_tokens = 4096;
  c.global_batch = 64;
  c.gpus = 8;
  LogReader reader(LogFormatSpec{LogFormat::kMegatron, ""}, c);
  for (int k = 22; k >= 1; --k)  // the case's 22 step lines, counting down
    reader.feed(" iteration " + std::to_string(k) + "/ 22 | elapsed time per iteration (ms): 10.0 |");
  const ParsedLog log = reader.result();
  CHECK(log.steps.size() == 1);
  CHECK(log.restarts == 21);
  CHECK(log.restart_dropped_lines == 21);
  CHECK(log.first_restart == "line 2: step 20 after step 21");
  LogReader same(LogFormatSpec{LogFormat::kMegatron, ""}, c);
  for (int i = 0; i < 22; ++i) same.feed(" iteration 5/ 22 | elapsed time per iteration (ms): 10.0 |");
  CHECK(same.result().duplicate_lines == 21);
}

TEST_CASE("a .nan, .inf or 401-digit integer where a number belongs is said as what it is, not 'string'",
          "[cases][fuzz][schema]") {
  const std::string tiny = test::read_file(fuzz_case("yaml-deep-nesting-bad-file/tiny.yaml"));
  const size_t at = tiny.find("  tp: 1\n");
  REQUIRE(at != std::string::npos);
  const auto with_tp = [&](const std::string& v) {
    std::string t = tiny;
    t.replace(at, 8, "  tp: " + v + "\n");
    const auto errors = text_errors(t, "n.yaml");
    return errors.empty() ? std::string() : errors[0];
  };
  CHECK_THAT(with_tp(".nan"), Catch::Contains("layout.tp: '.nan' (NaN: not a number), expected integer"));
  CHECK_THAT(with_tp("-.inf"), Catch::Contains("layout.tp: '-.inf' (an infinity), expected integer"));
  CHECK_THAT(with_tp(std::string(401, '7')),
             Catch::Contains("layout.tp: an integer of 401 characters (beyond 64 bits), expected integer"));
}

TEST_CASE("fuzz surfaces: a catalog file with lone CR line ends is read as its schema check reads it",
          "[fuzz-cases][catalog]") {
  // Found by the fuzz harness's catalog surface: the schema check took lone CRs as line ends, the catalog was then
  // built from the raw text, which yaml-cpp read as one line ("yaml-cpp: error at line 1, column 36").
  const LoadedCatalog loaded = load_catalog_file(case_path("fuzz/surfaces-2026-12-05/catalog-lone-cr.yaml"));
  INFO((loaded.errors.empty() ? std::string() : loaded.errors[0].to_string()));
  REQUIRE(loaded.ok());
  const GpuSpec* zz = loaded.catalog.gpu("ZZ100");
  REQUIRE(zz != nullptr);
  CHECK(zz->peak_bf16_flops == 1000e12);
  CHECK(zz->memory_bytes == 141e9);
  const InstanceSpec* node = loaded.catalog.instance("zz.node");
  REQUIRE(node != nullptr);
  CHECK(node->gpu == "ZZ100");
}
