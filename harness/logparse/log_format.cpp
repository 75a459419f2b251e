#include "logparse/log_format.h"

namespace recipebench {

std::string LogFormatSpec::to_string() const {
  return format == LogFormat::kRegex ? "regex:" + pattern : recipebench::to_string(format);
}

std::optional<LogFormatSpec> parse_log_format(const std::string& text) {
  static const std::string regex_prefix = "regex:";
  if (text.compare(0, regex_prefix.size(), regex_prefix) == 0) {
    if (text.size() == regex_prefix.size()) return std::nullopt;
    return LogFormatSpec{LogFormat::kRegex, text.substr(regex_prefix.size())};
  }
  const auto f = parse_enum<LogFormat>(text);
  if (!f || *f == LogFormat::kRegex) return std::nullopt;
  return LogFormatSpec{*f, ""};
}

}  // namespace recipebench
