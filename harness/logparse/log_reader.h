// A training log read into steps (docs/command-backend.md): lines cleaned of ANSI codes, the rank that prints
// step lines chosen when several ranks' output is interleaved, the format detected or given, duplicates dropped,
// a restarted counter handled, and each step's time and tokens resolved. Used by the command backend while its
// command runs (line by line) and by `recipebench import` on a finished log.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "logparse/line_parser.h"
#include "logparse/log_facts.h"
#include "recipe/diagnostic.h"
#include "util/json.h"

namespace recipebench {

/// What the log's steps are resolved with.
struct LogContext {
  std::string file;                     ///< names the log in diagnostics (file:line)
  int64_t row_tokens = 0;               ///< workload.row_tokens: tokens per row
  std::optional<int64_t> global_batch;  ///< workload.global_batch: rows per step, when the log prints none
  int gpus = 1;                         ///< GPUs of the run: a printed tokens/s/GPU times GPUs is tokens/s
};

/// The steps of one log and how they were read.
struct ParsedLog {
  std::optional<LogFormatSpec> format;  ///< given, or detected from the first step line; nullopt: none found
  bool detected = false;                ///< true when the format was detected
  std::vector<StepSample> steps;        ///< steps 0..n-1 of the last run in the log (after any restart)
  std::vector<int64_t> step_lines;      ///< the 1-based log line of each step
  std::vector<std::string> step_times;  ///< the time each step's line printed (printed_time), "" where none
  Diagnostics problems;                 ///< lines that could not be read, gaps; non-empty: the log is refused
  int64_t lines = 0;                    ///< lines read
  int restarts = 0;                     ///< times the step counter went back (the steps before were dropped)
  int64_t restart_dropped_lines = 0;    ///< step lines dropped by those restarts (kept before a restart)
  std::string first_restart;            ///< "line 2: step 20 after step 21", "" when none
  int64_t first_step_printed = 0;       ///< the kept run's first step as printed (0-based): step 0 of the record
  int64_t other_rank_lines = 0;         ///< step lines of ranks other than `stream`, skipped
  int64_t duplicate_lines = 0;          ///< repeats of the previous step, skipped
  std::string stream;                   ///< the rank whose step lines were read ("" when lines carry no rank)
  std::vector<std::string> fields;      ///< what the step lines printed: loss, grad_norm, tokens, ...
  std::vector<StepLine> printed;        ///< each kept step's line as read (the stack's own figures)
  LogRunFacts facts;                    ///< what the log's other lines say about its run (logparse/log_facts.h)
  /// {"parser", "detected", "lines", "steps_parsed", "restarts", "first_step_printed", "other_rank_lines",
  ///  "duplicate_lines", "rank", "fields", "printed", "printed_at"} (schema/run-record.schema.json's log block);
  ///  "printed_at" is printed_at(); "printed"
  /// holds the means over `window`'s steps of what the stack printed itself: tflops_per_gpu, mfu (fractions),
  /// tokens_per_s_per_gpu, each only when every step of the window printed it.
  Json to_json(StepWindow window) const;
  /// {"first", "last"}: the first and last time the kept steps' lines printed ("2026-10-18T10:01:00", the log's own
  /// clock, no time zone); null when no step line carries a time.
  Json printed_at() const;
};

/// The first "YYYY-MM-DD HH:MM:SS" (or with a T) in a log line, as "YYYY-MM-DDTHH:MM:SS"; "" when none.
std::string printed_time(const std::string& line);

/// Reads a log line by line. Not thread-safe.
class LogReader {
 public:
  /// `format`: nullopt to detect it (Megatron-LM, then TorchTitan, then Hugging Face on each line until one reads
  /// a step line). Throws std::invalid_argument when a regex format does not compile (make_line_parser).
  LogReader(std::optional<LogFormatSpec> format, LogContext context);
  ~LogReader();
  /// One line of the log without its newline ('\r'-separated segments of it are read as lines of the same number).
  void feed(const std::string& raw_line);
  /// The log read so far.
  ParsedLog result() const;

 private:
  struct State;
  void read_segment(const std::string& segment);
  void take(const LineRead& read);
  std::unique_ptr<State> s_;
};

/// Reads the log file `path` whole, line by line (each line's first kMaxLogLineBytes; memory independent of the
/// log's size). Throws InputError (`path: error: cannot open: ...`) when it cannot be read or is larger than
/// kMaxLogBytes (logparse/line_text.h), std::runtime_error when SIGINT or SIGTERM is noted (util/interrupt.h) before
/// a line.
ParsedLog read_log_file(const std::string& path, const std::optional<LogFormatSpec>& format, const LogContext& context);

}  // namespace recipebench
