// The log parsers (harness/logparse/): each format's step line, ANSI colour codes, interleaved ranks, a restarted
// iteration counter, missing fields, and the located error for a line that cannot be read. Fixtures are in
// tests/data/logs/ (written for these tests; the formats are the stacks' documented lines).
#include <catch2/catch.hpp>

#include <cmath>

#include "logparse/line_parser.h"
#include "logparse/line_text.h"
#include "logparse/log_facts.h"
#include "logparse/log_reader.h"
#include "recipe/validate.h"
#include "test_util.h"

using namespace recipebench;
using recipebench::test::source_path;

namespace {

LogContext context(const std::string& file, int64_t row_tokens, int64_t global_batch, int gpus) {
  LogContext c;
  c.file = file;
  c.row_tokens = row_tokens;
  c.global_batch = global_batch;
  c.gpus = gpus;
  return c;
}

ParsedLog read_fixture(const std::string& name, std::optional<LogFormatSpec> format, int64_t row_tokens = 4096,
                       int64_t global_batch = 64, int gpus = 8) {
  const std::string path = source_path("tests/data/logs/" + name);
  return read_log_file(path, format, context(path, row_tokens, global_batch, gpus));
}

}  // namespace

TEST_CASE("line text: ANSI codes, rank prefixes and printed numbers", "[logparse]") {
  CHECK(strip_ansi("\x1b[31mstep: 1\x1b[39m  \x1b[1;32mloss\x1b[0m\r") == "step: 1  loss");
  CHECK(strip_ansi("\x1b]0;title\x07text") == "text");
  CHECK(split_rank_prefix("[rank3]: iteration 1/").stream == "3");
  CHECK(split_rank_prefix("[default12]:hello").text == "hello");
  CHECK(split_rank_prefix("  5: text").stream == "5");
  CHECK(split_rank_prefix("[1,4]<stdout>: text").stream == "4");
  CHECK(split_rank_prefix("[1,4]<stdout>: text").text == "text");
  CHECK(split_rank_prefix("12:00:01 text").stream.empty());  // a time, not srun's label
  CHECK(*parse_number("1,234") == 1234);
  CHECK(*parse_number(" 1.234567E+00 ") == Approx(1.234567));
  CHECK_FALSE(parse_number("1,23"));
  CHECK_FALSE(parse_number("nan"));
  CHECK_FALSE(parse_number("12abc"));
  CHECK(*parse_memory_bytes("31.12GiB") == Approx(31.12 * 1073741824.0));
  CHECK(*parse_memory_bytes("2 GB") == 2e9);
}

TEST_CASE("log format names: the closed set and regex patterns", "[logparse]") {
  CHECK(parse_log_format("megatron")->format == LogFormat::kMegatron);
  CHECK(parse_log_format("regex:step (?<step>[0-9]+)")->pattern == "step (?<step>[0-9]+)");
  CHECK_FALSE(parse_log_format("regex:"));
  CHECK_FALSE(parse_log_format("regex"));
  CHECK_FALSE(parse_log_format("deepspeed"));
  CHECK_THROWS_WITH(make_line_parser(*parse_log_format("regex:(?<step>[0-9]+")), Catch::Contains("regex: at offset"));
  CHECK_THROWS_WITH(make_line_parser(*parse_log_format("regex:(?<step>[0-9]+) (?<speed>[0-9.]+)")),
                    Catch::Contains("group 'speed', expected one of"));
  CHECK_THROWS_WITH(make_line_parser(*parse_log_format("regex:(?<step>[0-9]+)")),
                    Catch::Contains("no step-time group"));
}

TEST_CASE("Megatron-LM: iteration k is step k-1, elapsed ms, global batch, lm loss, TFLOP/s", "[logparse]") {
  const auto p = make_megatron_parser();
  const LineRead r = p->read(
      " [2026-11-30 10:00:00] iteration        6/      22 | consumed samples:          384 | elapsed time per "
      "iteration (ms): 2055.0 | throughput per GPU (TFLOP/s/GPU): 73.0 | learning rate: 6.000000E-06 | global "
      "batch size:    64 | lm loss: 1.020000E+01 | loss scale: 1.0 | grad norm: 1.060 |");
  REQUIRE(r.kind == LineKind::kStep);
  CHECK(*r.step.step == 5);
  CHECK(*r.step.seconds == Approx(2.055));
  CHECK(*r.step.global_batch == 64);
  CHECK(*r.step.loss == Approx(10.2));
  CHECK(*r.step.tflops_per_gpu == Approx(73.0));
  CHECK(*r.step.grad_norm == Approx(1.06));
  CHECK(*r.step.learning_rate == Approx(6e-6));
  CHECK(p->read(" validation loss at iteration 10 on validation set | lm loss value: 9.1E+00 |").kind ==
        LineKind::kOther);
}

TEST_CASE("Megatron-LM log: the window's steps, extra lines skipped, the printed TFLOP/s kept", "[logparse]") {
  const ParsedLog log = read_fixture("megatron-dp8.log", std::nullopt);
  REQUIRE(log.problems.empty());
  CHECK(log.format->format == LogFormat::kMegatron);
  CHECK(log.detected);
  REQUIRE(log.steps.size() == 22);
  CHECK(log.steps[0].seconds == Approx(9.0));
  CHECK(log.steps[5].seconds == Approx(2.055));  // iteration 6
  CHECK(log.steps[6].seconds == Approx(2.040));  // iteration 7
  CHECK(log.steps[5].tokens == 64 * 4096);
  CHECK(log.steps[0].loss == Approx(11.7));
  CHECK(log.first_step_printed == 0);
  const Json j = log.to_json(StepWindow{5, 19});
  CHECK(j["printed"]["tflops_per_gpu"].get<double>() == Approx(73.0));
  CHECK(j["parser"] == "megatron");
}

TEST_CASE("Megatron-LM log: a restarted iteration counter keeps the last run, a missing lm loss is NaN (null in the record)",
          "[logparse]") {
  const ParsedLog log = read_fixture("megatron-restart.log", LogFormatSpec{LogFormat::kMegatron, ""});
  REQUIRE(log.problems.empty());
  CHECK(log.restarts == 1);
  REQUIRE(log.steps.size() == 20);
  for (const StepSample& s : log.steps) CHECK(s.seconds == Approx(2.048));  // the first run's 3.00x s are gone
  CHECK(std::isnan(log.steps[11].loss));  // iteration 12 printed none: not 0 (case import-missing-loss-shown-as-zero)
  CHECK(log.steps[10].loss == Approx(8.9));
  CHECK(log.step_lines.front() == 12);  // 7 lines of the first run, 4 lines of crash and relaunch
}

TEST_CASE("Megatron-LM log: interleaved ranks' output, the first rank to print a step is read", "[logparse]") {
  const ParsedLog log = read_fixture("megatron-interleaved.log", std::nullopt);
  REQUIRE(log.problems.empty());
  CHECK(log.stream == "7");
  CHECK(log.other_rank_lines == 4);  // rank 3's late copies (9,999 ms) are not read
  CHECK(log.duplicate_lines == 1);   // rank 7 printed iteration 8 twice
  REQUIRE(log.steps.size() == 20);
  for (const StepSample& s : log.steps) CHECK(s.seconds == Approx(1.5));
}

TEST_CASE("Megatron-LM log: a line that cannot be read is located at file:line:col", "[logparse]") {
  const ParsedLog log = read_fixture("megatron-unreadable.log", std::nullopt);
  REQUIRE(log.problems.size() == 2);
  const std::string file = source_path("tests/data/logs/megatron-unreadable.log");
  CHECK(log.problems[0].to_string() == file +
                                           ":3:1: error: megatron step line: no 'elapsed time per iteration (ms)' "
                                           "field, expected a step line recipebench can read");
  CHECK(log.problems[1].line == 5);
  CHECK(log.problems[1].column > 0);
  CHECK(log.problems[1].found == "'lm loss': 'abc'");
  CHECK(log.problems[1].expected == "a number");
}

TEST_CASE("TorchTitan log: ANSI colour codes removed, step time from tps, memory and MFU read", "[logparse]") {
  // 2 rows x 4,096 tokens per step on 1 GPU at tps 2,000 (tokens/s per GPU): 8,192 / 2,000 = 4.096 s.
  const ParsedLog log = read_fixture("torchtitan-ansi.log", std::nullopt, 4096, 2, 1);
  REQUIRE(log.problems.empty());
  CHECK(log.format->format == LogFormat::kTorchtitan);
  REQUIRE(log.steps.size() == 20);
  CHECK(log.steps[0].seconds == Approx(8.192));  // step 1 printed tps 1,000
  CHECK(log.steps[5].seconds == Approx(4.096));
  CHECK(log.steps[5].loss == Approx(9.9));
  CHECK(log.steps[5].peak_memory_bytes == static_cast<int64_t>(31.12 * 1073741824.0));
  const Json printed = log.to_json(StepWindow{5, 19})["printed"];
  CHECK(printed["mfu"].get<double>() == Approx(0.441));
  CHECK(printed["tokens_per_s_per_gpu"].get<double>() == Approx(2000));
}

TEST_CASE("Hugging Face Trainer-style lines: JSON and Python dicts, ms and s, printed tokens", "[logparse]") {
  const ParsedLog log = read_fixture("hf.log", std::nullopt, 4096, 2, 1);
  REQUIRE(log.problems.empty());
  CHECK(log.format->format == LogFormat::kHf);
  REQUIRE(log.steps.size() == 20);  // the summary line (train_runtime) is not a step
  CHECK(log.steps[0].seconds == Approx(1.5));
  CHECK(log.steps[6].seconds == Approx(0.75));  // 'step_time_ms': 750.0
  CHECK(log.steps[7].seconds == Approx(0.75));  // 'step_time': 0.75
  CHECK(log.steps[6].tokens == 8192);           // printed
  CHECK(log.steps[7].tokens == 2 * 4096);       // workload.global_batch x row_tokens
  CHECK(log.steps[7].grad_norm == Approx(0.9));
  const auto p = make_hf_parser();
  const LineRead no_time = p->read("{'loss': 2.0, 'grad_norm': 0.9, 'learning_rate': 5e-05, 'epoch': 0.1}");
  CHECK(no_time.kind == LineKind::kUnreadable);
  CHECK(no_time.problem == "no step time ('step_time' in s or 'step_time_ms')");
  CHECK(p->read("{'loss': 'x', 'step_time': 1}").kind == LineKind::kUnreadable);
}

TEST_CASE("regex: named groups read the peer's step lines", "[logparse]") {
  // The pattern of recipes/qwen3.5-35b-a3b/h200/peer-hf-1gpu-bf16.yaml: lines of bench/peer_steps.py with and
  // without its memory_gb field (older logs have none).
  const auto f = parse_log_format(
      "regex:^peer step (?<step>[0-9]+) time_s (?<seconds>[0-9.e+-]+) loss (?<loss>[0-9.e+-]+) tokens "
      "(?<tokens>[0-9]+)( memory_gb (?<memory_gb>[0-9.e+-]+))?$");
  const ParsedLog log = read_fixture("peer-regex.log", f, 8192, 2, 1);
  REQUIRE(log.problems.empty());
  REQUIRE(log.steps.size() == 20);
  CHECK(log.steps[5].seconds == 0.9);
  CHECK(log.steps[0].seconds == 2.5);
  CHECK(log.steps[5].tokens == 16384);
  CHECK(log.steps[1].loss == Approx(12.49));
  CHECK(log.steps[1].peak_memory_bytes == 0);  // not printed: 0, as StepSample says
  REQUIRE(f);
  const auto peer = make_line_parser(*f);
  const LineRead with_memory = peer->read("peer step 3 time_s 0.327 loss 12.1 tokens 16384 memory_gb 101.4123");
  REQUIRE(with_memory.kind == LineKind::kStep);
  REQUIRE(with_memory.step.memory_bytes);
  CHECK(static_cast<double>(*with_memory.step.memory_bytes) == Approx(101.4123e9).margin(1.0));
  const auto bad = make_regex_parser("step (?<step>[0-9a-z]+) (?<seconds>[0-9.]+)");
  const LineRead r = bad->read("step 1x 0.5");
  CHECK(r.kind == LineKind::kUnreadable);
  CHECK(r.column == 6);
  CHECK(r.problem == "group 'step': '1x', expected a number that fits it");
}

TEST_CASE("log reader: a gap in the steps is refused, a log without steps is empty", "[logparse]") {
  LogReader reader(LogFormatSpec{LogFormat::kHf, ""}, context("x.log", 4096, 2, 1));
  reader.feed("{\"step\": 0, \"step_time\": 1.0}");
  reader.feed("{\"step\": 1, \"step_time\": 1.0}");
  reader.feed("{\"step\": 4, \"step_time\": 1.0}");
  const ParsedLog log = reader.result();
  REQUIRE(log.problems.size() == 1);
  CHECK(log.problems[0].to_string() ==
        "x.log:3:1: error: hf step line: step 4 after step 1, expected one line per step (e.g. Megatron-LM "
        "--log-interval 1)");
  LogReader none(std::nullopt, context("y.log", 4096, 2, 1));
  none.feed("hello");
  CHECK_FALSE(none.result().format);
  CHECK(none.result().steps.empty());
}

namespace {

/// The recipe the fact tests import against: tests/data/command/megatron-h100-dp8.yaml (8 H100s, TP1 PP1 VPP1 CP1
/// EP1 DP8, 64 rows x 4,096 tokens).
const ValidatedRecipe& dp8_recipe() {
  static const ValidatedRecipe v = validate_recipe_file(source_path("tests/data/command/megatron-h100-dp8.yaml"));
  return v;
}

/// "the recipe's <path> at <recipe>:<line>:<col>" as the diagnostics say it.
std::string at_recipe(const std::string& path, int line, int column) {
  return "the recipe's " + path + " at " + dp8_recipe().file + ":" + std::to_string(line) + ":" +
         std::to_string(column);
}

/// The log of `lines` (format detected) checked against dp8_recipe() with the timed window `window`: one diagnostic
/// line each.
std::vector<std::string> contradictions(const std::vector<std::string>& lines, StepWindow window = {0, 0}) {
  REQUIRE(dp8_recipe().ok());
  LogReader reader(std::nullopt, context("x.log", 4096, 64, 8));
  for (const std::string& l : lines) reader.feed(l);
  std::vector<std::string> out;
  for (const Diagnostic& d :
       check_log_against_recipe(reader.result(), "x.log", *dp8_recipe().recipe, dp8_recipe().source.get(), window))
    out.push_back(d.to_string());
  return out;
}

/// A Megatron-LM step line of iteration `k` (1-based) printing `global_batch`.
std::string megatron_step(int k, int global_batch) {
  return " [2026-11-30 10:00:00] iteration " + std::to_string(k) +
         "/      20 | elapsed time per iteration (ms): 2000.0 | global batch size: " + std::to_string(global_batch) +
         " | lm loss: 9.0E+00 |";
}

/// 1-based column of `value` in `line`.
std::string col(const std::string& line, const std::string& value) { return std::to_string(line.find(value) + 1); }

}  // namespace

TEST_CASE("log facts: a log that agrees with its recipe, Megatron-LM's sizes line read", "[logparse][facts]") {
  const std::string path = source_path("tests/data/logs/megatron-dp8.log");
  const ParsedLog log = read_fixture("megatron-dp8.log", std::nullopt);
  // "using world size: 8, data-parallel size: 8, tensor-model-parallel size: 1, pipeline-model-parallel size: 1"
  REQUIRE(log.facts.world_size);
  CHECK(log.facts.world_size->value == 8);
  CHECK(log.facts.world_size->line == 1);
  CHECK(log.facts.world_size->column == 19);
  CHECK(log.facts.dp->value == 8);
  CHECK(log.facts.tp->value == 1);
  CHECK(log.facts.pp->value == 1);
  CHECK_FALSE(log.facts.cp);  // this version prints no context-parallel size
  CHECK_FALSE(log.facts.global_batch);
  REQUIRE(dp8_recipe().ok());
  CHECK(check_log_against_recipe(log, path, *dp8_recipe().recipe, dp8_recipe().source.get(), StepWindow{}).empty());
}

TEST_CASE("log facts: Megatron-LM's arguments block against the recipe, each contradiction located",
          "[logparse][facts]") {
  const std::vector<std::string> lines = {"------------------------ arguments ------------------------",
                                          "  context_parallel_size ........................... 1",
                                          "  data_parallel_size .............................. 4",
                                          "  encoder_tensor_model_parallel_size .............. 0",
                                          "  global_batch_size ............................... 128",
                                          "  num_layers_per_virtual_pipeline_stage ........... None",
                                          "  pipeline_model_parallel_size .................... 2",
                                          "  seq_length ...................................... 4096",
                                          "  tensor_model_parallel_size ...................... 1",
                                          "  virtual_pipeline_model_parallel_size ............ None",
                                          "  world_size ...................................... 8",
                                          "-------------------- end of arguments ---------------------",
                                          megatron_step(1, 128)};
  const auto d = contradictions(lines);
  REQUIRE(d.size() == 4);
  CHECK(d[0] == "x.log:5:" + col(lines[4], "128") + ": error: global_batch_size: 128, expected 64 (" +
                    at_recipe("workload.global_batch", 17, 17) + ")");
  CHECK(d[1] == "x.log:7:" + col(lines[6], "2") + ": error: pipeline_model_parallel_size: 2, expected 1 (" +
                    at_recipe("layout.pp", 24, 7) + ")");
  CHECK(d[2] == "x.log:3:" + col(lines[2], "4") + ": error: data_parallel_size: 4, expected 8 (" +
                    at_recipe("layout.dp", 29, 7) + ")");
  // The step line's own global batch, at its line.
  CHECK(d[3] == "x.log:13:1: error: global batch size: 128 (step 0's line), expected 64 (" +
                    at_recipe("workload.global_batch", 17, 17) + ")");
}

TEST_CASE("log facts: Megatron-LM's sizes line with CP and an encoder, and a batch-size rampup", "[logparse][facts]") {
  const std::string sizes =
      "using world size: 16, data-parallel size: 8, context-parallel size: 2, hierarchical context-parallel sizes: "
      "Nonetensor-model-parallel size: 1, encoder-tensor-model-parallel size: 4, pipeline-model-parallel size: 1";
  const std::string rampup =
      "will use batch size rampup starting from global batch size 16 to global batch size 64 with batch size "
      "increments 16 over 1000 samples.";
  const auto d = contradictions({sizes, rampup, megatron_step(1, 64)});
  REQUIRE(d.size() == 2);  // TP 1 (not the encoder's 4); the rampup's final global batch 64 agrees
  CHECK(d[0] ==
        "x.log:1:" + col(sizes, "16") + ": error: world size: 16, expected 8 (" + at_recipe("gpu.count", 8, 10) + ")");
  CHECK(d[1] == "x.log:1:" + col(sizes, "2,") + ": error: context-parallel size: 2, expected 1 (" +
                    at_recipe("layout.cp", 26, 7) + ")");
}

TEST_CASE("log facts: TorchTitan's device mesh, batch line and config", "[logparse][facts]") {
  const std::string mesh =
      "[titan] 2026-11-30 10:00:00,000 - root - INFO - Building 2-D device mesh with "
      "['dp_shard', 'tp'], [4, 2]";
  const std::string batch =
      "[titan] 2026-11-30 10:00:01,000 - root - INFO - Trainer is initialized with local "
      "batch size 2, global batch size 8, gradient accumulation steps 1, sequence length "
      "8192, total steps 20 (warmup 2)";
  const std::string step = "[titan] 2026-11-30 10:00:02,000 - root - INFO - step:  1  loss: 10.4  tps: 1,000";
  const auto d = contradictions({mesh, batch, step});
  REQUIRE(d.size() == 4);  // world size 4 x 2 = 8 agrees
  CHECK(d[0] == "x.log:2:" + col(batch, "8,") + ": error: global batch size: 8, expected 64 (" +
                    at_recipe("workload.global_batch", 17, 17) + ")");
  CHECK(d[1] == "x.log:2:" + col(batch, "8192") + ": error: sequence length: 8192, expected 4096 (" +
                    at_recipe("workload.row_tokens", 15, 15) + ")");
  CHECK(d[2] == "x.log:1:" + col(mesh, "2]") + ": error: device mesh tp: 2, expected 1 (" +
                    at_recipe("layout.tp", 23, 7) + ")");
  CHECK(d[3] == "x.log:1:" + col(mesh, "[4") + ": error: device mesh dp (dp_replicate x dp_shard): 4, expected 8 (" +
                    at_recipe("layout.dp", 29, 7) + ")");
  // The job config as printed with --job.print_args: -1 ("the rest") is no statement.
  const std::string config =
      "[titan] 2026-11-30 10:00:00,000 - root - INFO - Running with args: {'parallelism': "
      "{'data_parallel_replicate_degree': 1, 'data_parallel_shard_degree': -1, "
      "'tensor_parallel_degree': 1, 'pipeline_parallel_degree': 4, 'context_parallel_degree': "
      "1, 'expert_parallel_degree': 1}, 'training': {'local_batch_size': 8, "
      "'global_batch_size': -1, 'seq_len': 4096}}";
  const auto c = contradictions({config, step});
  REQUIRE(c.size() == 1);
  CHECK(c[0] == "x.log:1:" + col(config, "4, 'context") + ": error: pipeline_parallel_degree: 4, expected 1 (" +
                    at_recipe("layout.pp", 24, 7) + ")");
}

TEST_CASE("log facts: the Hugging Face Trainer's total train batch size, and a step line's global_batch_size",
          "[logparse][facts]") {
  const std::string total = "  Total train batch size (w. parallel, distributed & accumulation) = 1,024";
  const auto d = contradictions(
      {"***** Running training *****", total, "{'loss': 2.9, 'step': 0, 'step_time': 1.5, 'global_batch_size': 32}"});
  REQUIRE(d.size() == 2);
  CHECK(d[0] == "x.log:2:" + col(total, "1,024") + ": error: Total train batch size: 1024, expected 64 (" +
                    at_recipe("workload.global_batch", 17, 17) + ")");
  CHECK(d[1] == "x.log:3:1: error: global batch size: 32 (step 0's line), expected 64 (" +
                    at_recipe("workload.global_batch", 17, 17) + ")");
}

TEST_CASE("log facts: a step line's global batch is checked when a step of the window prints another",
          "[logparse][facts]") {
  // A batch-size rampup (32 rows at steps 0 and 1) before a window of 64-row steps labels no figure.
  const std::vector<std::string> rampup = {megatron_step(1, 32), megatron_step(2, 32), megatron_step(3, 64),
                                           megatron_step(4, 64)};
  CHECK(contradictions(rampup, StepWindow{2, 3}).empty());
  // A window that holds a 32-row step: the first step that prints another global batch is named.
  const auto d = contradictions(rampup, StepWindow{1, 3});
  REQUIRE(d.size() == 1);
  CHECK(d[0] == "x.log:1:1: error: global batch size: 32 (step 0's line), expected 64 (" +
                    at_recipe("workload.global_batch", 17, 17) + ")");
}
