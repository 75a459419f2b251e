// Number formatting shared by messages and reports.
#pragma once

#include <cstdint>
#include <string>

namespace recipebench {

/// 16331407360 -> "16,331,407,360"
std::string with_commas(int64_t v);
/// Fixed decimals with thousands separators: (1232.53, 1) -> "1,232.5"
std::string fixed(double v, int decimals, bool commas = true);
/// Shortest round-trip text of a double: 180 -> "180", 0.0537 -> "0.0537", 2.25e15 -> "2.25e+15"
std::string shortest(double v);
/// A ratio for messages: at most 2 decimals, trailing zeros dropped: 170.666 -> "170.67", 0.5 -> "0.5", 8 -> "8"
std::string approx(double v);
/// Decimals as written in a number's text: "1075.50" -> 2, "3" -> 0, "8.6e-05" -> 6 (place of last digit).
int printed_decimals(const std::string& text);

}  // namespace recipebench
