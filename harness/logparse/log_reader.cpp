#include "logparse/log_reader.h"

#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <stdexcept>

#include "backend/step_bounds.h"
#include "logparse/line_text.h"
#include "util/format.h"
#include "util/interrupt.h"

namespace recipebench {

struct LogReader::State {
  LogContext ctx;
  ParsedLog out;
  std::unique_ptr<LineParser> parser;                  ///< set once the format is given or detected
  std::vector<std::unique_ptr<LineParser>> detectors;  ///< the built-in formats, tried in order until one reads
  std::optional<std::string> stream;                   ///< the rank whose step lines are read, once chosen
  std::optional<int64_t> last_printed;                 ///< last step (as printed) of the kept run
  std::set<std::string> fields;
  std::string line_time;  ///< printed_time of the line being read

  /// "megatron step line", "regex step line", "log step line" (before a format is known), for diagnostics.
  std::string what() const {
    const std::string format =
        out.format ? out.format->format == LogFormat::kRegex ? std::string("regex") : to_string(out.format->format)
                   : std::string("log");
    return format + " step line";
  }
  /// Keeps step line `l` (its step number set) of `tokens` tokens as the run's next step, and notes its fields.
  void keep(const StepLine& l, int64_t tokens);
};

void LogReader::State::keep(const StepLine& l, int64_t tokens) {
  if (!last_printed) out.first_step_printed = *l.step;
  last_printed = *l.step;
  StepSample st;
  st.step = static_cast<int>(*l.step - out.first_step_printed);
  st.tokens = tokens;
  st.seconds = l.seconds ? *l.seconds : static_cast<double>(tokens) / (*l.tokens_per_s_per_gpu * std::max(1, ctx.gpus));
  st.loss = l.loss.value_or(std::numeric_limits<double>::quiet_NaN());  // not printed: null in the record, not 0
  st.grad_norm = l.grad_norm.value_or(0);
  st.learning_rate = l.learning_rate.value_or(0);
  st.peak_memory_bytes = static_cast<int64_t>(l.memory_bytes.value_or(0));  // within 2^50: line_figures_problem
  out.steps.push_back(st);
  out.step_lines.push_back(out.lines);
  out.step_times.push_back(line_time);
  out.printed.push_back(l);
  const std::pair<const char*, bool> seen[] = {{"seconds", l.seconds.has_value()},
                                               {"loss", l.loss.has_value()},
                                               {"grad_norm", l.grad_norm.has_value()},
                                               {"learning_rate", l.learning_rate.has_value()},
                                               {"tflops_per_gpu", l.tflops_per_gpu.has_value()},
                                               {"mfu", l.mfu.has_value()},
                                               {"tokens_per_s_per_gpu", l.tokens_per_s_per_gpu.has_value()},
                                               {"tokens", l.tokens.has_value()},
                                               {"global_batch", l.global_batch.has_value()},
                                               {"memory", l.memory_bytes.has_value()}};
  for (const auto& [name, present] : seen)
    if (present) fields.insert(name);
}

LogReader::LogReader(std::optional<LogFormatSpec> format, LogContext context) : s_(std::make_unique<State>()) {
  s_->ctx = std::move(context);
  if (format) {
    s_->parser = make_line_parser(*format);
    s_->out.format = format;
  } else {
    s_->detectors.push_back(make_megatron_parser());
    s_->detectors.push_back(make_torchtitan_parser());
    s_->detectors.push_back(make_hf_parser());
  }
}

LogReader::~LogReader() = default;

void LogReader::feed(const std::string& raw_line) {
  ++s_->out.lines;
  size_t start = 0;
  for (size_t cr; (cr = raw_line.find('\r', start)) != std::string::npos; start = cr + 1)
    read_segment(raw_line.substr(start, cr - start));
  read_segment(raw_line.substr(start));
}

void LogReader::read_segment(const std::string& segment) {
  const RankedLine ranked = split_rank_prefix(strip_ansi(segment));
  LineRead read;
  if (s_->parser) {
    read = s_->parser->read(ranked.text);
  } else {
    for (auto& d : s_->detectors) {
      read = d->read(ranked.text);
      if (read.kind == LineKind::kOther) continue;
      s_->out.format = LogFormatSpec{d->format(), ""};
      s_->out.detected = true;
      s_->parser = std::move(d);
      s_->detectors.clear();
      break;
    }
  }
  if (read.kind == LineKind::kOther) {
    s_->out.facts.read(ranked.text, s_->out.lines);  // a header line: what the log says about its run
    return;
  }
  if (!s_->stream) s_->stream = ranked.stream;  // the first rank that prints a step line is the one read
  if (ranked.stream != *s_->stream) {
    ++s_->out.other_rank_lines;
    return;
  }
  s_->line_time = printed_time(ranked.text);
  take(read);
}

namespace {

/// `problem` ("X, expected Y") as a located diagnostic.
Diagnostic line_problem(const LogContext& ctx, int64_t line, int column, const std::string& what,
                        const std::string& problem) {
  const size_t cut = problem.find(", expected ");
  // A problem of the whole line (a missing field, a gap) is located at its first column.
  Diagnostic d{
      ctx.file, static_cast<int>(line), column > 0 ? column : 1, what, problem, "a step line recipebench can read"};
  if (cut != std::string::npos) {
    d.found = problem.substr(0, cut);
    d.expected = problem.substr(cut + 11);
  }
  return d;
}

/// Tokens of the step: printed, else printed global batch x row tokens, else the recipe's global batch x row
/// tokens, as a double (a product past int64 stays a number the bounds refuse). Nullopt when none is known.
std::optional<double> step_tokens(const StepLine& l, const LogContext& ctx) {
  if (l.tokens) return static_cast<double>(*l.tokens);
  if (l.global_batch && ctx.row_tokens > 0) return static_cast<double>(*l.global_batch) * ctx.row_tokens;
  if (ctx.global_batch && ctx.row_tokens > 0) return static_cast<double>(*ctx.global_batch) * ctx.row_tokens;
  return std::nullopt;
}

/// `label` and the problem of `v` under the step bounds (backend/step_bounds.h), or nullopt.
std::optional<std::string> figure(StepFigure f, const std::string& label, std::optional<double> v) {
  if (!v) return std::nullopt;
  const auto p = step_figure_problem(f, *v);
  return p ? std::optional<std::string>(label + " " + *p) : std::nullopt;
}

/// The first figure of step line `l` outside the step bounds, `tokens` its tokens: every format's figures by one
/// rule, the rule report applies to the record (0 ms, a negative grad norm or 1e300 GiB is a located line problem,
/// never a record report refuses). A step time derived from tokens/s/GPU obeys the step-time bound too.
std::optional<std::string> line_figures_problem(const StepLine& l, double tokens, int gpus) {
  if (auto p = figure(StepFigure::kTokens, l.tokens ? "tokens" : "tokens (global batch x row tokens)", tokens))
    return p;
  if (!l.seconds) {
    const double tps = l.tokens_per_s_per_gpu.value_or(0);
    if (!(tps > 0)) return "tokens/s/GPU " + shortest(tps) + ", expected a rate > 0 (the step time is derived from it)";
    if (auto p = figure(StepFigure::kSeconds, "a step time derived from tokens / (tokens/s/GPU x GPUs) of",
                        tokens / (tps * std::max(1, gpus))))
      return p;
  }
  if (auto p = figure(StepFigure::kLoss, "loss", l.loss)) return p;
  if (auto p = figure(StepFigure::kGradNorm, "grad norm", l.grad_norm)) return p;
  if (auto p = figure(StepFigure::kLearningRate, "learning rate", l.learning_rate)) return p;
  return figure(StepFigure::kPeakMemoryBytes, "peak memory", l.memory_bytes);
}

}  // namespace

void LogReader::take(const LineRead& read) {
  State& s = *s_;
  const std::string what = s.what();
  if (read.kind == LineKind::kUnreadable) {
    s.out.problems.push_back(line_problem(s.ctx, s.out.lines, read.column, what, read.problem));
    if (read.step.step && (!s.last_printed || *read.step.step > *s.last_printed))
      s.last_printed = *read.step.step;  // the next line is not a gap: one problem, one diagnostic
    else if (!read.step.step && s.last_printed)
      ++*s.last_printed;  // a step line whose step is unknown (a match PCRE2 gave up on): taken as the next step
    return;
  }
  StepLine l = read.step;
  if (l.seconds && step_figure_problem(StepFigure::kSeconds, *l.seconds)) {
    char text[64];
    std::snprintf(text, sizeof text, "%g", *l.seconds);
    s.out.problems.push_back(
        line_problem(s.ctx, s.out.lines, read.column, what,
                     "a step time of " + std::string(text) + " s, expected a finite time > 0 s and at most 1e6 s"));
    if (l.step && (!s.last_printed || *l.step > *s.last_printed)) s.last_printed = *l.step;
    return;
  }
  if (!l.step) l.step = s.last_printed ? *s.last_printed + 1 : 0;  // a format without step numbers: in order
  const auto tokens = step_tokens(l, s.ctx);
  if (!tokens || *tokens < 1) {
    s.out.problems.push_back(line_problem(
        s.ctx, s.out.lines, 0, what,
        "no tokens per step, expected tokens or a global batch size in the line, or workload.global_batch"));
    return;
  }
  if (const auto problem = line_figures_problem(l, *tokens, s.ctx.gpus)) {
    s.out.problems.push_back(line_problem(s.ctx, s.out.lines, read.column, what, *problem));
    if (!s.last_printed || *l.step > *s.last_printed) s.last_printed = *l.step;
    return;
  }
  if (s.last_printed && *l.step == *s.last_printed) {
    ++s.out.duplicate_lines;
    return;
  }
  if (s.last_printed && *l.step < *s.last_printed) {  // a restarted run: keep the steps after the restart
    ++s.out.restarts;
    s.out.restart_dropped_lines += static_cast<int64_t>(s.out.steps.size());
    if (s.out.first_restart.empty())
      s.out.first_restart = "line " + std::to_string(s.out.lines) + ": step " + std::to_string(*l.step) +
                            " after step " + std::to_string(*s.last_printed);
    s.out.steps.clear();
    s.out.step_lines.clear();
    s.out.step_times.clear();
    s.out.printed.clear();
    s.last_printed.reset();
  }
  if (s.last_printed && *l.step > *s.last_printed + 1) {
    s.out.problems.push_back(line_problem(s.ctx, s.out.lines, 0, what,
                                          "step " + std::to_string(*l.step) + " after step " +
                                              std::to_string(*s.last_printed) +
                                              ", expected one line per step (e.g. Megatron-LM --log-interval 1)"));
    return;
  }
  s.keep(l, static_cast<int64_t>(*tokens));
}

ParsedLog LogReader::result() const {
  ParsedLog out = s_->out;
  out.stream = s_->stream.value_or("");
  out.fields.assign(s_->fields.begin(), s_->fields.end());
  return out;
}

namespace {

/// Means over `w`'s steps of the figures the stack printed, each only when every step of the window has it.
Json printed_means(const std::vector<StepLine>& lines, StepWindow w) {
  Json out = Json::object();
  if (!w.inside(static_cast<int>(lines.size()))) return out;
  using Field = std::optional<double> StepLine::*;
  const std::pair<const char*, Field> fields[] = {{"tflops_per_gpu", &StepLine::tflops_per_gpu},
                                                  {"mfu", &StepLine::mfu},
                                                  {"tokens_per_s_per_gpu", &StepLine::tokens_per_s_per_gpu}};
  for (const auto& [name, field] : fields) {
    double sum = 0;
    bool all = true;
    for (int i = w.first; i <= w.last && all; ++i) {
      all = (lines[i].*field).has_value();
      if (all) sum += *(lines[i].*field);
    }
    if (all) out[name] = sum / w.steps();
  }
  return out;
}

}  // namespace

Json ParsedLog::to_json(StepWindow window) const {
  return Json{{"parser", format ? format->to_string() : std::string("none")},
              {"detected", detected},
              {"lines", lines},
              {"steps_parsed", steps.size()},
              {"restarts", restarts},
              {"first_step_printed", first_step_printed},
              {"other_rank_lines", other_rank_lines},
              {"duplicate_lines", duplicate_lines},
              {"rank", stream.empty() ? Json(nullptr) : Json(stream)},
              {"fields", fields},
              {"printed", printed_means(printed, window)},
              {"printed_at", printed_at()}};
}

Json ParsedLog::printed_at() const {
  std::string first, last;
  for (const std::string& t : step_times) {
    if (t.empty()) continue;
    if (first.empty()) first = t;
    last = t;
  }
  if (first.empty()) return nullptr;
  return Json{{"first", first}, {"last", last}};
}

std::string printed_time(const std::string& line) {
  static const std::regex stamp(R"((\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2}))");
  std::smatch m;
  if (!std::regex_search(line, m, stamp)) return "";
  return m[1].str() + "T" + m[2].str();
}

ParsedLog read_log_file(const std::string& path, const std::optional<LogFormatSpec>& format,
                        const LogContext& context) {
  if (const auto big = log_size_problem(path)) {
    const size_t cut = big->find(", expected ");
    throw InputError(Diagnostic{path, 0, 0, "", big->substr(0, cut), big->substr(cut + 11)});
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(Diagnostic{path, 0, 0, "", "cannot open", "a readable log file"});
  LogReader reader(format, context);
  int64_t lines = 0;
  for (std::string line; read_log_line(in, line);) {
    if (const int sig = noted_interrupt())  // SIGINT / SIGTERM honoured between lines, not after the whole log
      throw std::runtime_error("interrupted by signal " + std::to_string(sig) + " while reading " + path + " (line " +
                               std::to_string(lines + 1) + ")");
    reader.feed(line);
    ++lines;
  }
  return reader.result();
}

}  // namespace recipebench
