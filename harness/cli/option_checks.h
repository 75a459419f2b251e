// Checks of numeric command-line options, applied by CLI11 before a command runs (a failure exits 2).
#pragma once

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "util/format.h"

namespace recipebench::cli {

/// A CLI11 validator for a number that must be finite and > 0 (a price, a rate, a timeout): one rule and one exit
/// code (2, a usage error) in every command. Refuses "nan", "inf", "0", "-1", "1e999" and text that is not wholly a
/// number, e.g. "nan, expected a finite number > 0"; a value too small for a normal double ("1e-320": subnormal,
/// or below it) says so rather than "not finite".
inline CLI::Validator finite_positive() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        const char* begin = s.c_str();
        char* end = nullptr;
        errno = 0;
        const double v = std::strtod(begin, &end);
        const std::string expected = ", expected a finite number > 0";
        if (end == begin || *end != '\0') return "'" + s + "' is not a number" + expected;
        if (std::isnan(v)) return s + " (not a number)" + expected;
        if (std::isinf(v)) return s + " (infinite)" + expected;
        if (v <= 0) return s + expected;
        if (errno == ERANGE || !std::isnormal(v))
          return s + " (finite, but below the smallest normal double), expected a finite number >= "
                     "2.2250738585072014e-308";
        return "";
      },
      "NUMBER > 0");
}

/// The range of `predict` / `plan --stack-factor`: a stack's speed against the profiled one's within a factor of
/// 100 either way (the seed's fitted factor is 1.923, docs/step-time.md); beyond it every figure of a prediction is
/// the factor's, not the profile's (1e-300 printed "MFU inf%").
constexpr double kMinStackFactor = 0.01, kMaxStackFactor = 100;

/// A CLI11 validator for a finite number from `lo` to `hi`, e.g. "1e-300, expected a finite number from 0.01 to
/// 100"; text that is not wholly a number, NaN and infinities refused the same way.
inline CLI::Validator number_from_to(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& s) -> std::string {
        const std::string bounds = ", expected a finite number from " + shortest(lo) + " to " + shortest(hi);
        const char* begin = s.c_str();
        char* end = nullptr;
        const double v = std::strtod(begin, &end);
        if (end == begin || *end != '\0') return "'" + s + "' is not a number" + bounds;
        if (!(v >= lo && v <= hi)) return s + bounds;  // NaN fails too
        return "";
      },
      "NUMBER in [" + shortest(lo) + ", " + shortest(hi) + "]");
}

/// A CLI11 validator for a whole number from `min` to `max` (a count: steps, layers, ranks): refuses text that is
/// not wholly an integer ("1.5", "nan", "0x10") and values outside the range, e.g. "0, expected an integer from 1 to
/// 2147483647".
inline CLI::Validator integer_in(long long min, long long max) {
  return CLI::Validator(
      [min, max](std::string& s) -> std::string {
        const std::string expected = ", expected an integer from " + std::to_string(min) + " to " + std::to_string(max);
        const char* begin = s.c_str();
        char* end = nullptr;
        errno = 0;
        const long long v = std::strtoll(begin, &end, 10);
        if (end == begin || *end != '\0') return "'" + s + "' is not an integer" + expected;
        if (errno == ERANGE || v < min || v > max) return s + expected;
        return "";
      },
      "INTEGER in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
}

/// A CLI11 validator for a path that must name a regular file, saying what it found and what the option takes
/// (`what`, e.g. "a recipe file (*.yaml)"): "recipes (a folder), expected a recipe file (*.yaml)",
/// "x.yaml: no such file, expected ...", "/dev/null (not a regular file), expected ..." (a FIFO or a device would
/// hang or never end). CLI11 puts the option's name first; the command exits 2.
inline CLI::Validator existing_file(const std::string& what) {
  return CLI::Validator(
      [what](std::string& s) -> std::string {
        namespace fs = std::filesystem;
        std::error_code ec;
        const fs::file_status st = fs::status(s, ec);
        const std::string expected = ", expected " + what;
        if (s.empty()) return "'' (empty)" + expected;
        if (!fs::exists(st)) return s + ": no such file" + expected;
        if (fs::is_directory(st)) return s + " (a folder)" + expected;
        if (!fs::is_regular_file(st)) return s + " (not a regular file)" + expected;
        return "";
      },
      "FILE");
}

}  // namespace recipebench::cli
