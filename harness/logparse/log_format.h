// The training-log formats recipebench reads (docs/command-backend.md): which parser turns a log's lines into steps.
#pragma once

#include <array>
#include <optional>
#include <string>

#include "recipe/enums.h"

namespace recipebench {

/// bench.log_format / `import --format`: Megatron-LM's training log line, TorchTitan's step line, a Hugging Face
/// Trainer-style JSON (or Python dict) line, or a regular expression with named groups.
enum class LogFormat { kMegatron, kTorchtitan, kHf, kRegex };

template <>
struct EnumNames<LogFormat> {
  static constexpr std::array<const char*, 4> names{"megatron", "torchtitan", "hf", "regex"};
};

/// A format as written in a recipe or on the command line: "megatron", "torchtitan", "hf" or "regex:<pattern>".
struct LogFormatSpec {
  LogFormat format = LogFormat::kMegatron;
  std::string pattern;  ///< kRegex only: a PCRE2 pattern with named groups (docs/command-backend.md)
  /// "megatron", ..., "regex:<pattern>" (what parse_log_format reads back).
  std::string to_string() const;
};

/// Reads "megatron", "torchtitan", "hf" or "regex:<pattern>"; nullopt for anything else (an empty pattern too).
std::optional<LogFormatSpec> parse_log_format(const std::string& text);

}  // namespace recipebench
