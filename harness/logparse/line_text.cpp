#include "logparse/line_text.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>

namespace recipebench {

bool read_log_line(std::istream& in, std::string& line, size_t max) {
  line.clear();
  char buf[1 << 16];
  bool any = false;
  for (;;) {
    in.get(buf, sizeof buf, '\n');  // up to a buffer of the line; the newline is left in the stream
    const auto n = static_cast<size_t>(in.gcount());
    any = any || n > 0;
    if (line.size() < max) line.append(buf, std::min(n, max - line.size()));
    if (in.fail() && !in.eof()) in.clear();  // an empty line: get() read nothing
    const int c = in.get();
    if (c == '\n') return true;
    if (c == std::char_traits<char>::eof()) return any;
    any = true;  // the buffer filled mid-line: keep reading it
    if (line.size() < max) line.push_back(static_cast<char>(c));
  }
}

std::optional<std::string> log_size_problem(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec || size <= kMaxLogBytes) return std::nullopt;
  return "a log of " + std::to_string(size) + " bytes, expected at most " + std::to_string(kMaxLogBytes) +
         " bytes (4 GiB)";
}

namespace {

/// Length of the escape sequence starting at line[i] (line[i] == ESC).
size_t escape_length(const std::string& line, size_t i) {
  if (i + 1 >= line.size()) return 1;
  const char kind = line[i + 1];
  size_t j = i + 2;
  if (kind == '[') {  // CSI: parameters and intermediates, then one final byte 0x40..0x7e
    while (j < line.size() && !(line[j] >= 0x40 && line[j] <= 0x7e)) ++j;
    return std::min(line.size(), j + 1) - i;
  }
  if (kind == ']') {  // OSC: up to BEL or ESC backslash
    while (j < line.size() && line[j] != '\a' && !(line[j] == '\x1b' && j + 1 < line.size() && line[j + 1] == '\\'))
      ++j;
    if (j < line.size()) j += line[j] == '\a' ? 1 : 2;
    return j - i;
  }
  return 2;
}

bool all_digits(const std::string& s, size_t from, size_t to) {
  if (from >= to) return false;
  for (size_t i = from; i < to; ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

/// Skips one space after a prefix ending at `end`.
size_t after_prefix(const std::string& s, size_t end) { return end < s.size() && s[end] == ' ' ? end + 1 : end; }

}  // namespace

std::string strip_ansi(const std::string& line) {
  std::string out;
  out.reserve(line.size());
  for (size_t i = 0; i < line.size();) {
    if (line[i] == '\x1b') {
      i += escape_length(line, i);
    } else {
      out += line[i++];
    }
  }
  while (!out.empty() && out.back() == '\r') out.pop_back();
  return out;
}

RankedLine split_rank_prefix(const std::string& line) {
  size_t b = 0;
  while (b < line.size() && line[b] == ' ') ++b;
  if (b < line.size() && line[b] == '[') {
    const size_t close = line.find(']', b);
    if (close != std::string::npos) {
      for (const std::string tag : {"rank", "default"}) {  // torchrun: [rank3]: or [default3]:
        const size_t digits = b + 1 + tag.size();
        if (line.compare(b + 1, tag.size(), tag) == 0 && all_digits(line, digits, close) && close + 1 < line.size() &&
            line[close + 1] == ':')
          return {line.substr(digits, close - digits), line.substr(after_prefix(line, close + 2))};
      }
      const size_t comma = line.find(',', b);  // Open MPI: [1,3]<stdout>:
      if (comma < close && all_digits(line, b + 1, comma) && all_digits(line, comma + 1, close)) {
        for (const std::string tag : {"<stdout>:", "<stderr>:"})
          if (line.compare(close + 1, tag.size(), tag) == 0)
            return {line.substr(comma + 1, close - comma - 1), line.substr(after_prefix(line, close + 1 + tag.size()))};
      }
    }
  }
  size_t d = b;  // srun --label: "3: "
  while (d < line.size() && std::isdigit(static_cast<unsigned char>(line[d]))) ++d;
  if (d > b && d + 1 < line.size() && line[d] == ':' && line[d + 1] == ' ')
    return {line.substr(b, d - b), line.substr(d + 2)};
  return {"", line};
}

std::string trim(const std::string& text) {
  const size_t b = text.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return text.substr(b, text.find_last_not_of(" \t") - b + 1);
}

std::optional<int64_t> whole_count(double v) {
  if (!(v >= 0 && v < 9223372036854775808.0) || v != std::floor(v)) return std::nullopt;
  return static_cast<int64_t>(v);
}

std::optional<double> parse_number(const std::string& raw) {
  const std::string t = trim(raw);
  std::string plain;
  for (size_t i = 0; i < t.size(); ++i) {
    const bool grouping = t[i] == ',' && i > 0 && std::isdigit(static_cast<unsigned char>(t[i - 1])) &&
                          i + 4 <= t.size() && all_digits(t, i + 1, i + 4);
    if (!grouping) plain += t[i];
  }
  if (plain.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(plain.c_str(), &end);
  if (end != plain.c_str() + plain.size() || !std::isfinite(v)) return std::nullopt;
  if (plain.find_first_of("xXpP") != std::string::npos) return std::nullopt;  // hex floats are not printed numbers
  return v;
}

std::optional<double> parse_memory_bytes(const std::string& raw) {
  const std::string t = trim(raw);
  struct Unit {
    const char* name;
    double bytes;
  };
  static const Unit units[] = {{"GiB", 1073741824.0}, {"MiB", 1048576.0}, {"GB", 1e9}, {"MB", 1e6}};
  for (const Unit& u : units) {
    const std::string name = u.name;
    if (t.size() > name.size() && t.compare(t.size() - name.size(), name.size(), name) == 0)
      if (auto v = parse_number(t.substr(0, t.size() - name.size()))) return *v * u.bytes;
  }
  return std::nullopt;
}

}  // namespace recipebench
