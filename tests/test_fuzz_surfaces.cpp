// The findings of the fuzz harness's profile, log, run and args surfaces (issue 49 item 5; docs/fuzzing.md,
// "Surfaces"), each input in tests/data/cases/fuzz/surfaces-2026-12-05b/, and the oracle's checks of those surfaces.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "console/console_reporter.h"
#include "fuzz/fuzz_oracle.h"
#include "harness/cli/subcommand_hint.h"
#include "record/run_record.h"
#include "test_util.h"

using namespace recipebench;
using recipebench::test::source_path;

namespace {

std::string surfaces_case(const std::string& name) {
  return source_path("tests/data/cases/fuzz/surfaces-2026-12-05b/" + name);
}

/// The arguments of an args input, one a line.
std::vector<std::string> args_lines(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

TEST_CASE("surfaces-2026-12-05b subcommand-with-cr, option-with-cr: an argument's control characters are escaped in "
          "the message at <command line>",
          "[cases][fuzz][cli]") {
  const std::vector<std::string> sub = args_lines(surfaces_case("subcommand-with-cr.args"));
  REQUIRE(sub.at(0) == "plan\r");
  const auto m = cli::unknown_subcommand_message(sub[0], {"validate", "predict", "plan"});
  REQUIRE(m);
  CHECK(*m == "<command line>: error: unknown subcommand 'plan\\r' (did you mean 'plan'?); subcommands: validate, "
              "predict, plan");

  const std::vector<std::string> opt = args_lines(surfaces_case("option-with-cr.args"));
  REQUIRE(opt.at(1) == "--model\rQwen3.5-35B-A3B");
  const std::map<std::string, std::vector<cli::OptionSpec>> options{{"plan", {{"--model", true}, {"--gpu", true}}}};
  const auto o = cli::unknown_option_message("plan", {opt.begin() + 1, opt.end()}, options);
  REQUIRE(o);
  CHECK_THAT(*o, Catch::StartsWith("<command line>: error: plan: unknown option '--model\\rQwen3.5-35B-A3B'"));
  CHECK(o->find_first_of("\r\n") == std::string::npos);
}

TEST_CASE("surfaces-2026-12-05b: CLI11's refusal of an option value is one line at <command line>", "[cases][fuzz][cli]") {
  // CLI11 printed "recipe: File does not exist: 0x7fffffff" and "--stack-factor: '' is not a number, ..." without
  // a place; a value holding a line break or CR now stays on its line.
  const std::string text = cli::command_line_failure(nullptr, CLI::ValidationError("--stack-factor", "'a\nb\r' is not a number"));
  CHECK(text == "<command line>: error: --stack-factor: 'a\\nb\\r' is not a number\nRun with --help for more information.\n");
}

TEST_CASE("surfaces-2026-12-05b hf-log-read-as-megatron: an import's failure is said at its log", "[cases][fuzz][import]") {
  // The Hugging Face log imported with a recipe whose bench.log_format is megatron has no step line of that format:
  // "recipebench run: failed: the log has 0 step line(s) (megatron)..." named no file; it is an error of the log.
  RunRecord r;
  r.status = RunStatus::kFailed;
  r.options.command.import_log = surfaces_case("hf-log-read-as-megatron.log");
  r.error = RunFailure{std::nullopt, "the log has 0 step line(s) (megatron); the window 5..19 needs steps 0..19", {}};
  char* buffer = nullptr;
  size_t size = 0;
  std::FILE* err = open_memstream(&buffer, &size);
  ConsoleReporter(stdout, err).finish(r, "rec.json", false);
  std::fclose(err);
  const std::string text(buffer, size);
  std::free(buffer);
  CHECK_THAT(text, Catch::StartsWith(r.options.command.import_log + ": error: the log has 0 step line(s) (megatron)"));
}

TEST_CASE("fuzz oracle: the new surfaces' inputs are checked as their commands read them", "[fuzz][oracle]") {
  using namespace recipebench::fuzz;
  CHECK(std::string(surface_name(InputKind::kArgs)) == "args");
  CHECK(std::string(surface_extension(InputKind::kLog)) == ".log");
  // A pattern PCRE2 refuses is refused on one line (no finding); a pathological one costs under the line bound.
  const Verdict bad_pattern = check_in_process("#log-format: regex:(?<step>[0-9]+\n step 1\n", InputKind::kLog);
  CHECK(bad_pattern.ok);
  CHECK_FALSE(bad_pattern.accepted);
  const Verdict slow = check_in_process(
      "#log-format: regex:^(?:a|a)*b|^step (?<step>[0-9]+) time_s (?<seconds>[0-9.]+)\n" + std::string(5000, 'a') + "!\n",
      InputKind::kLog);
  CHECK(slow.ok);
  // The committed megatron log reads whole: accepted.
  std::ifstream in(source_path("tests/data/logs/megatron-dp8.log"));
  std::stringstream log;
  log << in.rdbuf();
  const Verdict megatron = check_in_process("#log-format: megatron\n" + log.str(), InputKind::kLog);
  CHECK(megatron.ok);
  CHECK(megatron.accepted);
  // A profile record that is not JSON is a located refusal (no finding); args are checked through the binary only.
  CHECK(check_in_process("{\"passes\": [1,}", InputKind::kProfile).ok);
  CHECK(check_in_process("predict\n--stack-factor\n", InputKind::kArgs).ok);
}
