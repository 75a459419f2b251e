#include "backends/command/command_backend.h"

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>

#include "launch/child_process.h"
#include "logparse/line_text.h"
#include "logparse/log_reader.h"
#include "record/run_record.h"
#include "util/interrupt.h"

namespace recipebench {

namespace {

constexpr size_t kTailLines = 50;  ///< log lines a failed record keeps

/// A failure of the command or its log (a failed record; the backend's report keeps the log block and tail).
[[noreturn]] void fail(const std::string& message) { throw RunError(message); }

std::optional<LogFormatSpec> format_of(const RunOptions& o) {
  if (!o.command.log_format) return std::nullopt;
  const auto spec = parse_log_format(*o.command.log_format);
  if (!spec) fail("log format '" + *o.command.log_format + "', expected megatron, torchtitan, hf or regex:<pattern>");
  return spec;
}

LogContext context_of(const Recipe& recipe, const std::string& file) {
  LogContext c;
  c.file = file;
  c.row_tokens = recipe.workload.row_tokens;
  if (recipe.workload.global_batch > 0) c.global_batch = recipe.workload.global_batch;
  c.gpus = std::max(1, recipe.gpu.count);
  return c;
}

/// Keeps the last kTailLines lines.
struct Tail {
  std::deque<std::string> lines;
  void add(const std::string& l) {
    lines.push_back(l);
    if (lines.size() > kTailLines) lines.pop_front();
  }
  std::vector<std::string> all() const { return {lines.begin(), lines.end()}; }
};

class CommandBackend : public Backend {
 public:
  std::string name() const override { return "command"; }

  BackendEnvironment environment(const ResolvedRun& run) override {
    const Recipe& recipe = *run.recipe;
    const RunOptions& o = run.options;
    if (o.command.import_log.empty() && !recipe_command(recipe))
      fail("the recipe has neither bench.command nor a run block: the command backend has nothing to run");
    BackendEnvironment env;
    env.device_name = o.settings.device == Device::kCuda ? recipe.gpu.type : "CPU";
    env.device_count = std::max(1, recipe.gpu.count);
    return env;
  }

  void run(const ResolvedRun& run, const std::function<void(const StepSample&)>& on_step) override {
    const Recipe& recipe = *run.recipe;
    const RunOptions& o = run.options;
    const ParsedLog log = o.command.import_log.empty() ? launch(recipe, o) : import(recipe, o);
    report_.log.update(log.to_json(o.settings.window));
    if (!log.problems.empty()) {
      std::string what = "the log has " + std::to_string(log.problems.size()) + " line(s) recipebench cannot read:";
      for (size_t i = 0; i < log.problems.size() && i < 5; ++i) what += "\n  " + log.problems[i].to_string();
      fail(what);
    }
    if (o.command.import_log.empty()) refuse_another_run(log, recipe, o);
    const size_t need = static_cast<size_t>(o.settings.window.last) + 1;
    if (log.steps.size() < need) {
      // Every step line counted, and what dropped some: restarts of the step counter (the lines before each are
      // another run's) and repeats of a step.
      const int64_t read = static_cast<int64_t>(log.steps.size()) + log.restart_dropped_lines + log.duplicate_lines;
      std::string kept;
      if (log.restarts || log.duplicate_lines)
        kept =
            ", " + std::to_string(log.steps.size()) + " kept" +
            (log.restarts ? "; " + std::to_string(log.restarts) + " restart(s) of the step counter (first at " +
                                o.command.import_log + (o.command.import_log.empty() ? "" : " ") + log.first_restart +
                                ") dropped the " + std::to_string(log.restart_dropped_lines) + " line(s) before them"
                          : std::string()) +
            (log.duplicate_lines ? "; " + std::to_string(log.duplicate_lines) + " repeat(s) of a step skipped"
                                 : std::string());
      fail("the log has " + std::to_string(read) + " step line(s) (" +
           (log.format ? log.format->to_string() : std::string("no known format found")) + ")" + kept +
           "; the window " + std::to_string(o.settings.window.first) + ".." + std::to_string(o.settings.window.last) +
           " needs steps 0.." + std::to_string(o.settings.window.last));
    }
    note_missing_fields(log, o);
    for (size_t i = 0; i < log.steps.size() && i < static_cast<size_t>(o.settings.steps); ++i) on_step(log.steps[i]);
  }

  BackendReport report() const override { return report_; }

 private:
  /// A figure the log's step lines never print is null in the record (its steps' loss NaN, peak memory 0 = not
  /// measured), never 0: the user is told once which, and where Megatron-LM prints the loss.
  void note_missing_fields(const ParsedLog& log, const RunOptions& o) {
    const char* command = o.command.import_log.empty() ? "recipebench run" : "recipebench import";
    const auto has = [&log](const char* f) {
      return std::find(log.fields.begin(), log.fields.end(), f) != log.fields.end();
    };
    if (!has("loss"))
      report_.notes.push_back(std::string(command) +
                              ": the log prints no loss: the record's loss is null (Megatron-LM prints it on the last "
                              "pipeline stage only: import that rank's log)");
    if (!has("memory"))
      report_.notes.push_back(std::string(command) +
                              ": the log prints no memory figure: the record's peak memory is "
                              "0, not measured");
  }

  /// A command whose log says it ran another run than the recipe describes (its world size, degrees, global batch
  /// or sequence length; logparse/log_facts.h) fails the run, each contradiction located in the log. (`import`
  /// refuses such a log before anything is written: run/run_driver.cpp.)
  static void refuse_another_run(const ParsedLog& log, const Recipe& recipe, const RunOptions& o) {
    const Diagnostics d = check_log_against_recipe(log, o.command.log_path, recipe, nullptr, o.settings.window);
    if (d.empty()) return;
    std::string what = "the command's log says it ran another run than the recipe describes: ";
    for (size_t i = 0; i < d.size(); ++i) what += (i ? "; " : "") + d[i].to_string();
    fail(what);  // one line: a failure message is shown and recorded in one line
  }

  /// Runs the recipe's command, teeing its output to o.command.log_path and the console. Throws RunError when it does
  /// not exit 0.
  ParsedLog launch(const Recipe& recipe, const RunOptions& o) {
    const std::string command = *recipe_command(recipe);
    LogReader reader(format_of(o), context_of(recipe, o.command.log_path));
    std::error_code made;  // a node other than rank 0's: --out was checked (and made) by rank 0 only
    std::filesystem::create_directories(std::filesystem::path(o.command.log_path).parent_path(), made);
    std::ofstream file(o.command.log_path, std::ios::binary | std::ios::trunc);
    if (!file) fail("cannot write the log " + o.command.log_path);
    ChildSpec spec;
    spec.script = command_script(recipe, command);
    spec.env = command_environment(o, [](const char* n) { return std::getenv(n); });
    spec.timeout_seconds = o.command.timeout_seconds;
    Tail tail;
    const ChildOutcome end = run_child(spec, [&](const std::string& line) {
      file << line << '\n';
      file.flush();
      std::cout << line << '\n' << std::flush;
      reader.feed(line);
      tail.add(line);
    });
    file.close();
    report_.log = Json{{"source", "run"},
                       {"path", o.command.log_path},
                       {"sha256", sha256_file(o.command.log_path)},
                       {"command", command},
                       {"exit", end.describe()}};
    report_.log_tail = tail.all();
    ParsedLog log = reader.result();
    if (!end.exited_ok()) {
      report_.log.update(log.to_json(o.settings.window));
      fail("the command " + end.describe() + " (log: " + o.command.log_path + ")");
    }
    return log;
  }

  /// Reads the finished log o.command.import_log; the record's wall time is the sum of its kept steps' times.
  ParsedLog import(const Recipe& recipe, const RunOptions& o) {
    if (const auto big = log_size_problem(o.command.import_log)) fail(o.command.import_log + ": " + *big);
    std::ifstream in(o.command.import_log, std::ios::binary);
    if (!in) fail("cannot read the log " + o.command.import_log);
    LogReader reader(format_of(o), context_of(recipe, o.command.import_log));
    Tail tail;
    int64_t lines = 0;
    for (std::string line; read_log_line(in, line); ++lines) {
      if (noted_interrupt())  // honoured between lines (the driver words the interruption), not after the log
        fail("interrupted while reading " + o.command.import_log + " at line " + std::to_string(lines + 1));
      reader.feed(line);
      tail.add(line);
    }
    report_.log =
        Json{{"source", "import"}, {"path", o.command.import_log}, {"sha256", sha256_file(o.command.import_log)}};
    report_.log_tail = tail.all();
    ParsedLog log = reader.result();
    const size_t kept = std::min(log.steps.size(), static_cast<size_t>(o.settings.steps));
    report_.wall_seconds = std::accumulate(log.steps.begin(), log.steps.begin() + kept, 0.0,
                                           [](double a, const StepSample& s) { return a + s.seconds; });
    return log;
  }

  BackendReport report_;
};

}  // namespace

BackendCapabilities command_backend_capabilities() {
  BackendCapabilities c;
  c.devices = {Device::kCpu, Device::kCuda};
  c.data_sources = {DataSource::kSynthetic, DataSource::kFile};
  c.launch = Launch::kPerNode;
  return c;
}

void register_command_backend() {
  register_backend("command", command_backend_capabilities(), [] { return std::make_unique<CommandBackend>(); });
}

std::optional<std::string> recipe_command(const Recipe& recipe) {
  if (recipe.bench.command) return recipe.bench.command;
  if (recipe.doc.contains("run") && recipe.doc["run"].is_string()) return recipe.doc["run"].get<std::string>();
  return std::nullopt;
}

std::string command_script(const Recipe& recipe, const std::string& command) {
  std::string out;
  if (recipe.doc.contains("env") && recipe.doc["env"].is_object())
    for (const auto& [name, value] : recipe.doc["env"].items()) {
      std::string quoted;
      for (char c : value.get<std::string>()) {
        if (c == '"' || c == '\\' || c == '`') quoted += '\\';
        quoted += c;
      }
      out += "export " + name + "=\"" + quoted + "\"\n";
    }
  return out + command;
}

std::vector<std::pair<std::string, std::string>> command_environment(
    const RunOptions& o, const std::function<const char*(const char*)>& get) {
  auto num = [&](const char* n) -> std::optional<long> {
    const char* v = get(n);
    if (!v || !*v) return std::nullopt;
    char* end = nullptr;
    const long x = std::strtol(v, &end, 10);
    return *end == '\0' ? std::optional<long>(x) : std::nullopt;
  };
  long node = num("GROUP_RANK").value_or(num("SLURM_NODEID").value_or(0));
  long nodes = num("SLURM_NNODES").value_or(1);
  if (!num("SLURM_NNODES") && num("WORLD_SIZE") && num("LOCAL_WORLD_SIZE") && *num("LOCAL_WORLD_SIZE") > 0)
    nodes = *num("WORLD_SIZE") / *num("LOCAL_WORLD_SIZE");
  return {{"NODE_RANK", std::to_string(node)},     {"NNODES", std::to_string(std::max(1L, nodes))},
          {"MASTER_ADDR", o.place.master_addr},    {"MASTER_PORT", std::to_string(o.place.master_port)},
          {"RECIPEBENCH_LOG", o.command.log_path}, {"RECIPEBENCH_STEPS", std::to_string(o.settings.steps)}};
}

}  // namespace recipebench
