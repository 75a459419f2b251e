// One interface for every training-log format: a parser reads one line (ANSI colour codes and any rank prefix
// already removed) and says whether it is a step line, and what it holds. docs/command-backend.md lists the
// fields each format gives.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "logparse/log_format.h"

namespace recipebench {

/// What one step line printed. Every field is optional: a format prints some of them, and the log reader
/// (logparse/log_reader.h) fills the step time and tokens from the others.
struct StepLine {
  std::optional<int64_t> step;                 ///< 0-based step (Megatron-LM's iteration k is step k - 1)
  std::optional<double> seconds;               ///< step time, s
  std::optional<int64_t> tokens;               ///< tokens of the step over all GPUs, when the log prints them
  std::optional<int64_t> global_batch;         ///< rows (sequences) of the step over all GPUs
  std::optional<double> tokens_per_s_per_gpu;  ///< as printed (TorchTitan's tps)
  std::optional<double> loss, grad_norm, learning_rate;
  std::optional<double> tflops_per_gpu;  ///< as printed, TFLOP/s per GPU (the stack's own FLOP count)
  std::optional<double> mfu;             ///< as printed, a fraction (0.441 for "44.10%")
  std::optional<double> memory_bytes;    ///< peak device memory as printed, bytes (bounded by the log reader)
};

/// The closed set of what a line is to a parser.
enum class LineKind {
  kOther,       ///< not a step line of this format (ignored)
  kStep,        ///< a step line, read
  kUnreadable,  ///< looks like a step line of this format but a field is missing or malformed: see problem
};

/// One line as a parser read it.
struct LineRead {
  LineKind kind = LineKind::kOther;
  StepLine step;
  std::string problem;  ///< kUnreadable: what is wrong, e.g. "no 'elapsed time per iteration (ms)' field"
  int column = 0;       ///< kUnreadable: 1-based column of the problem in the cleaned line (0 = unknown)
};

/// Reads the step lines of one format.
class LineParser {
 public:
  virtual ~LineParser() = default;
  virtual LogFormat format() const = 0;
  /// Reads one line without its newline, ANSI escape sequences or rank prefix (logparse/line_text.h).
  virtual LineRead read(const std::string& line) const = 0;
};

/// The parser of `spec`. Throws std::invalid_argument with the position and PCRE2's reason when a regex pattern
/// does not compile, or names no step-time group (seconds, time_ms or tokens_per_s_per_gpu).
std::unique_ptr<LineParser> make_line_parser(const LogFormatSpec& spec);

// The formats' parsers (one file each), used by make_line_parser.
std::unique_ptr<LineParser> make_megatron_parser();
std::unique_ptr<LineParser> make_torchtitan_parser();
std::unique_ptr<LineParser> make_hf_parser();
std::unique_ptr<LineParser> make_regex_parser(const std::string& pattern);

}  // namespace recipebench
