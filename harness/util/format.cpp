#include "util/format.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace recipebench {

std::string with_commas(int64_t v) {
  const uint64_t magnitude = v < 0 ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  std::string digits = std::to_string(magnitude), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string fixed(double v, int decimals, bool commas) {
  // Beyond what fixed notation shows in a line (and non-finite values): the shortest exact form instead.
  if (!std::isfinite(v) || std::fabs(v) >= 1e18 || decimals > 30) return shortest(v);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  if (!commas) return buf;
  std::string s = buf, sign;
  if (!s.empty() && s[0] == '-') {
    sign = "-";
    s = s.substr(1);
  }
  const auto dot = s.find('.');
  std::string int_part = s.substr(0, dot), frac = dot == std::string::npos ? "" : s.substr(dot);
  return sign + with_commas(std::stoll(int_part)) + frac;
}

std::string counted(int64_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

std::string shortest(double v) {
  char buf[64];
  if (std::fabs(v) < 1e9 && v == std::floor(v)) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  for (int p = 1; p <= 17; ++p) {
    std::snprintf(buf, sizeof buf, "%.*g", p, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string bytes_text(double bytes) {
  static const char* const units[] = {"B", "kB", "MB", "GB", "TB"};
  int u = 0;
  while (bytes >= 1000 && u < 4) bytes /= 1000, ++u;
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%.0f B", bytes);
  else
    std::snprintf(buf, sizeof buf, "%.3g %s", bytes, units[u]);
  return buf;
}

std::string fixed_significant(double v, int decimals, int significant) {
  const double a = std::fabs(v);
  if (a > 0 && std::isfinite(a)) {
    // The place of the leading digit: 0.039 -> -2; shown with `significant` digits from there.
    const int lead = static_cast<int>(std::floor(std::log10(a)));
    decimals = std::min(8, std::max(decimals, significant - 1 - lead));
  }
  return fixed(v, decimals, false);
}

std::string approx(double v) {
  std::string s = fixed(v, 2, false);
  while (s.find('.') != std::string::npos && (s.back() == '0' || s.back() == '.')) {
    const bool dot = s.back() == '.';
    s.pop_back();
    if (dot) break;
  }
  return s;
}

int printed_decimals(const std::string& text) {
  const auto e = text.find_first_of("eE");
  const std::string mantissa = text.substr(0, e);
  const auto dot = mantissa.find('.');
  int decimals = dot == std::string::npos ? 0 : static_cast<int>(mantissa.size() - dot - 1);
  if (e != std::string::npos) decimals -= std::atoi(text.c_str() + e + 1);
  return decimals;
}

size_t display_width(const std::string& s) {
  size_t n = 0;
  for (const unsigned char c : s) n += (c & 0xC0) != 0x80;  // continuation bytes take no column
  return n;
}

std::string pad_right(const std::string& s, size_t width) {
  const size_t w = display_width(s);
  return w >= width ? s : s + std::string(width - w, ' ');
}

std::string ascii_lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string ascii_upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace recipebench
