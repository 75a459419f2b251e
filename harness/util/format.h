// Number formatting shared by messages and reports.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace recipebench {

/// 16331407360 -> "16,331,407,360"
std::string with_commas(int64_t v);
/// Fixed decimals with thousands separators: (1232.53, 1) -> "1,232.5"
std::string fixed(double v, int decimals, bool commas = true);
/// A count and its noun, the noun plural unless the count is 1: (1, "step") -> "1 step", (2, "item") -> "2 items".
/// Every message that counts something the input gives says it through this.
std::string counted(int64_t n, const std::string& noun);
/// Shortest round-trip text of a double: 180 -> "180", 0.0537 -> "0.0537", 2.25e15 -> "2.25e+15"
std::string shortest(double v);
/// `decimals` decimals, more where they would leave fewer than `significant` significant digits of a non-zero figure
/// (at most 8): (0.039, 2, 2) -> "0.039", (0.0016, 2, 2) -> "0.0016", (1.77, 2, 2) -> "1.77", (0, 2, 2) -> "0.00".
/// No thousands separators.
std::string fixed_significant(double v, int decimals, int significant);
/// A ratio for messages: at most 2 decimals, trailing zeros dropped: 170.666 -> "170.67", 0.5 -> "0.5", 8 -> "8"
std::string approx(double v);
/// Bytes in decimal units, 3 significant figures at most: "1.23 GB", "45.6 MB", "789 kB", "12 B".
std::string bytes_text(double bytes);
/// Columns a UTF-8 string takes on a terminal: its code points ("—" is 1, not its 3 bytes); no wide characters.
size_t display_width(const std::string& s);
/// `s` padded with spaces on the right to `width` display columns (display_width); unchanged when wider.
std::string pad_right(const std::string& s, size_t width);
/// `s` with its ASCII letters in lower case ("H100-SXM" -> "h100-sxm"); other bytes unchanged.
std::string ascii_lower(std::string s);
/// `s` with its ASCII letters in upper case ("tp" -> "TP"); other bytes unchanged.
std::string ascii_upper(std::string s);
/// Decimals as written in a number's text: "1075.50" -> 2, "3" -> 0, "8.6e-05" -> 6 (place of last digit).
int printed_decimals(const std::string& text);

}  // namespace recipebench
