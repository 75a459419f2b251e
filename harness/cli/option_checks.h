// Checks of numeric command-line options, applied by CLI11 before a command runs (a failure exits 2).
#pragma once

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

namespace recipebench::cli {

/// A CLI11 validator for a number that must be finite and > 0 (a price, a rate). Refuses "nan", "inf", "0",
/// "-1", "1e999" and text that is not wholly a number, with "<value> must be a finite number > 0" (no range bound
/// printed).
inline CLI::Validator finite_positive() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        const char* begin = s.c_str();
        char* end = nullptr;
        errno = 0;
        const double v = std::strtod(begin, &end);
        if (end == begin || *end != '\0') return "'" + s + "' is not a number; it must be a finite number > 0";
        if (errno == ERANGE || !std::isfinite(v)) return "'" + s + "' is not finite; it must be a finite number > 0";
        if (v <= 0) return s + " must be > 0";
        return "";
      },
      "NUMBER > 0");
}

}  // namespace recipebench::cli
