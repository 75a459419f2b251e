// Run records on the way into `report`: typed reading (RunRecord::from_json), bounded reading, the schema and
// the figures re-derived from the steps; and which records the leaderboard ranks.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "record/run_record_check.h"
#include "report/leaderboard.h"
#include "test_util.h"
#include "util/format.h"

using namespace recipebench;

namespace {

const char* const kGpuRecord = "reports/runs/proxy4l-1gpu-bf16-20261129T213008Z.json";
const char* const kDp2Record = "reports/runs/proxy4l-2gpu-dp2-bf16-20261130T000607Z.json";

Json load(const std::string& rel) { return read_json_file(test::source_path(rel)); }

/// The messages of check_run_record for `doc`, one per line.
std::string problems(const Json& doc, const std::string& file = "r.json") {
  std::string out;
  for (const auto& d : check_run_record(doc, file).errors) out += d.to_string() + "\n";
  return out;
}

std::string temp_path(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("rb-records-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

}  // namespace

TEST_CASE("the run records in reports/runs pass every check and read back typed", "[records]") {
  for (const char* rel : {kGpuRecord, kDp2Record}) {
    INFO(rel);
    const Json doc = load(rel);
    const CheckedRunRecord c = check_run_record(doc, rel);
    CHECK(problems(doc).empty());
    REQUIRE(c.record);
    const RunRecord& r = *c.record;
    CHECK(r.status == RunStatus::kComplete);
    CHECK(r.steps.size() == 20);
    CHECK(r.model_layers == 4);
    CHECK(r.model_layers_full == 40);
    CHECK(r.build_type() == "Release");
    REQUIRE(r.metrics);
    CHECK(r.metrics->active_params == 752328704);  // the 4-layer proxy's N (docs/metrics.md)
    // The typed metrics write back exactly what was read.
    CHECK(r.metrics->to_json() == doc["metrics"]);
    CHECK(r.steps[7].loss == doc["steps"][7]["loss"].get<double>());
  }
  CHECK(check_run_record(load(kDp2Record), kDp2Record).record->device_count() == 2);
}

TEST_CASE("fuzz input rec-neg.json: negative step times are refused with the file and the field", "[records]") {
  const std::string msg = problems(load("tests/data/records/rec-neg.json"), "rec-neg.json");
  CHECK_THAT(msg, Catch::Contains("rec-neg.json: error: metrics.window_seconds: -13.0, expected a value >= 0"));
  CHECK_THAT(msg, Catch::Contains("rec-neg.json: error: steps[3].seconds: -1.5, expected a value >= 0"));
}

TEST_CASE("fuzz input rec-type.json: a mistyped figure names the file and the field path", "[records]") {
  const std::string msg = problems(load("tests/data/records/rec-type.json"), "rec-type.json");
  CHECK(msg == "rec-type.json: error: metrics.tokens_per_s_per_gpu: string 'fast', expected number\n");
}

TEST_CASE("RunRecord::from_json locates a missing or mistyped field by file and path", "[records]") {
  Json doc = load(kGpuRecord);
  auto error_of = [](const Json& j) {
    try {
      RunRecord::from_json(j, "r.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Json typo = doc;
  typo["metrics"]["tokens_per_s_per_gpu"] = "fast";
  CHECK(error_of(typo) == "r.json: error: metrics.tokens_per_s_per_gpu: string \"fast\", expected a number");
  Json narrow = doc;
  narrow["settings"]["steps"] = 4294967298ULL;  // 2^32 + 2 must not narrow to 2
  CHECK(error_of(narrow) == "r.json: error: settings.steps: 4294967298, expected an integer in 1..2147483647");
  Json no_loss = doc;
  no_loss["steps"][4].erase("loss");
  CHECK(error_of(no_loss) == "r.json: error: steps[4].loss: missing, expected a value");
  CHECK(error_of(Json::array()) == "r.json: error: an array of 0 items, expected an object");
}

TEST_CASE("a record's model_build block (each rank's host memory while building) writes and reads back typed",
          "[records]") {
  Json doc = load(kGpuRecord);
  CHECK(!RunRecord::from_json(doc, "r.json").model_build);  // older records have none
  ModelBuild b;
  b.seconds = 0.42;
  b.host_rss_before_bytes = {400000000, 410000000};
  b.host_peak_rss_bytes = {520000000, 530000000};
  doc["model_build"] = b.to_json();
  CHECK(problems(doc).empty());  // the schema knows the block
  const RunRecord r = RunRecord::from_json(doc, "r.json");
  REQUIRE(r.model_build);
  CHECK(r.model_build->seconds == 0.42);
  CHECK(r.model_build->host_peak_rss_bytes == std::vector<int64_t>{520000000, 530000000});
  CHECK(r.to_json()["model_build"] == doc["model_build"]);
  doc["model_build"]["host_peak_rss_bytes"][1] = -5;
  try {
    RunRecord::from_json(doc, "r.json");
    FAIL("a negative byte count was read");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) == "r.json: error: model_build.host_peak_rss_bytes[1]: -5, expected an integer in "
                                   "0..9223372036854775807");
  }
}

TEST_CASE("bad records of the field cases are refused by check_run_record with the field", "[records]") {
  const Json good = load(kGpuRecord);
  Json j = good;
  j["recipe"]["document"]["gpu"]["count"] = 0;
  CHECK_THAT(problems(j), Catch::Contains("r.json: error: recipe.document.gpu.count: 0, expected a value >= 1"));
  j = good;
  j["environment"]["device"]["count"] = 0;
  CHECK_THAT(problems(j), Catch::Contains("r.json: error: environment.device.count: 0, expected a value >= 1"));
  j = good;
  j["steps"] = Json::array();
  CHECK_THAT(problems(j), Catch::Contains("r.json: error: steps: 0 steps, expected 20 (settings.steps"));
  j = good;
  j["steps"][4].erase("loss");
  CHECK_THAT(problems(j), Catch::Contains("r.json: error: steps[4].loss: missing required field 'loss'"));
  j = good;
  j["metrics"] = nullptr;
  CHECK_THAT(problems(j), Catch::Contains("r.json: error: metrics: null, expected an object"));
}

TEST_CASE("a record's figures are re-derived from its steps: a forged figure is refused", "[records]") {
  const Json good = load(kGpuRecord);
  Json j = good;
  j["metrics"]["tokens_per_s_per_gpu"] = 2 * good["metrics"]["tokens_per_s_per_gpu"].get<double>();
  // 245,760 window tokens / 13.0518 s / 1 GPU (the steps' own figures).
  CHECK_THAT(problems(j), Catch::Contains("metrics.tokens_per_s_per_gpu: 37,659.173283, expected 18,829.586641 "
                                          "(derived from steps 5..19)"));
  j = good;
  j["steps"][10]["seconds"] = 0.1;  // a faster step changes the window and every figure from it
  const std::string msg = problems(j);
  CHECK_THAT(msg, Catch::Contains("metrics.window_seconds: 13.051800, expected 12.276703"));
  CHECK_THAT(msg, Catch::Contains("metrics.mfu:"));
  j = good;
  j["metrics"]["mfu_inputs"]["active_params"] = 7523287040;  // N of 40 layers' worth: a 10x MFU
  j["metrics"]["mfu"] = 10 * good["metrics"]["mfu"].get<double>();
  CHECK_THAT(problems(j), Catch::Contains("metrics.mfu_inputs.active_params: 7523287040, expected 752328704 "
                                          "(Qwen3.5-35B-A3B at 4 layers)"));
  j = good;
  j["metrics"]["window"] = Json::array({4, 19});
  CHECK_THAT(problems(j), Catch::Contains("metrics.window: [4, 19], expected settings.window [5, 19]"));
  j = good;
  j["model"]["proxy"] = false;
  CHECK_THAT(problems(j), Catch::Contains("model.proxy: false, expected true (layers 4, layers_full 40)"));
}

TEST_CASE("read_json_file is bounded: size, depth, regular files only, malformed JSON located", "[records]") {
  const std::string deep = temp_path("deep.json");
  write(deep, "{\"a\":\n" + std::string(100, '[') + std::string(100, ']') + "}");
  CHECK_THROWS_WITH(read_json_file(deep), deep +
                                              ":2:64: error: nesting 65 deep, expected at most 64 levels of "
                                              "objects and arrays");
  const std::string big = temp_path("big.json");
  write(big, std::string(2000, ' ') + "{}");
  JsonLimits small;
  small.max_bytes = 1000;
  CHECK_THROWS_WITH(read_json_file(big, small), big + ": error: a file of 2002 bytes, expected at most 1000 bytes");
  const std::string fifo = temp_path("fifo.json");
  ::unlink(fifo.c_str());
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH(read_json_file(fifo), fifo + ": error: not a regular file (a FIFO), expected a regular file");
  CHECK_THROWS_WITH(read_json_file("/dev/zero"), "/dev/zero: error: not a regular file, expected a regular file");
  const std::string bad = temp_path("bad.json");
  write(bad, "{\n  \"a\": 1,\n  \"b\": tru\n}");
  // Located where the parser stopped (after the bad literal); the parser shows the newline it read as <U+000A>.
  CHECK_THROWS_WITH(read_json_file(bad), bad +
                                             ":3:11: error: malformed JSON (syntax error while parsing value - "
                                             "invalid literal; last read: '\"b\": tru<U+000A>'), expected a run "
                                             "record written by recipebench run");
  std::filesystem::remove_all(std::filesystem::path(deep).parent_path());
}

TEST_CASE("profile runs and builds that are not optimised are listed unranked with the reason", "[records][report]") {
  RunRecord base = *check_run_record(load(kGpuRecord), kGpuRecord).record;
  CHECK(unranked_reason(base).empty());
  RunRecord profiled = base;
  profiled.options.settings.profile = true;
  RunRecord debug = base;
  debug.environment.build_type = "Debug";
  RunRecord failed = base;
  failed.status = RunStatus::kFailed;
  failed.metrics.reset();
  failed.error = RunFailure{3, "interrupted (SIGINT) at step 3", {}};
  const Leaderboard board =
      build_leaderboard({}, {}, {{"a.json", base}, {"p.json", profiled}, {"d.json", debug}, {"f.json", failed}});
  REQUIRE(board.groups.size() == 1);
  REQUIRE(board.groups[0].entries.size() == 1);
  CHECK(board.groups[0].entries[0].file == "a.json");
  REQUIRE(board.unranked.size() == 3);
  CHECK_THAT(board.unranked[0], Catch::StartsWith("p.json: not ranked: a --profile run"));
  CHECK(board.unranked[1] ==
        "d.json: not ranked: a Debug build (only optimised builds are ranked: CMake Release or "
        "RelWithDebInfo)");
  CHECK(board.unranked[2] == "f.json: run failed: interrupted (SIGINT) at step 3");
}

TEST_CASE("a proxy never shares a table with the full model: groups split by the layers that ran",
          "[records][report]") {
  RunRecord proxy = *check_run_record(load(kGpuRecord), kGpuRecord).record;
  RunRecord full = proxy;
  full.model_layers = 40;
  RunRecord proxy8 = proxy;
  proxy8.model_layers = 8;
  const Leaderboard board = build_leaderboard({}, {}, {{"p4.json", proxy}, {"full.json", full}, {"p8.json", proxy8}});
  REQUIRE(board.groups.size() == 3);
  for (const LeaderboardGroup& g : board.groups) {
    REQUIRE(g.entries.size() == 1);
    CHECK(g.entries[0].layers == g.layers);
    CHECK(g.layers_full == 40);
  }
  CHECK(board.groups[0].layers == 40);  // the full size first, then the proxies
  CHECK(board.groups[0].id == "qwen3-5-35b-a3b-h200-8192-gb2-bf16-synthetic-rows-67-6-supervised");
  CHECK(board.groups[0].title == "Training Qwen3.5-35B-A3B on H200");
  CHECK(board.groups[1].layers == 4);
  CHECK(board.groups[1].id == "qwen3-5-35b-a3b-4l-h200-8192-gb2-bf16-synthetic-rows-67-6-supervised");
  CHECK(board.groups[1].title == "Training Qwen3.5-35B-A3B (proxy: 4 of 40 layers) on H200");
  CHECK_THAT(board.groups[1].entries[0].layout_highlights, Catch::StartsWith("proxy: 4 of 40 layers"));
  CHECK(leaderboard_to_json(board)["groups"][2]["layers"] == 8);
}
