// Text helpers of the log parsers: a raw log line cleaned (ANSI escape sequences removed, a launcher's rank
// prefix split off) and numbers as training stacks print them ("1,234", "1.234567E+00", "26.53GiB").
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <optional>
#include <string>

namespace recipebench {

/// The most of one log line that is read: 1 MiB (a step line of any stack is under 1 kB); the rest of a longer line
/// is skipped, so a log's memory does not grow with its longest line.
constexpr size_t kMaxLogLineBytes = size_t{1} << 20;
/// The largest log `import` and `converge` read: 4 GiB (some 40 million lines; memory does not grow with the log,
/// time does), as recipes, catalogs and run records have their own limits.
constexpr uint64_t kMaxLogBytes = uint64_t{4} << 30;

/// Reads the next line of `in` into `line` without its '\n', keeping at most `max` bytes of it (the rest skipped).
/// False at the end of the stream with nothing read.
bool read_log_line(std::istream& in, std::string& line, size_t max = kMaxLogLineBytes);

/// "a log of N bytes, expected at most 4294967296 bytes (4 GiB)" when the file at `path` is larger than
/// kMaxLogBytes; nullopt otherwise (a file that cannot be examined is left to the reader).
std::optional<std::string> log_size_problem(const std::string& path);

/// `line` without ANSI escape sequences (CSI "ESC [ ... final byte" such as colour codes, OSC "ESC ] ... BEL or
/// ESC \", and two-byte "ESC x") and without a trailing '\r'.
std::string strip_ansi(const std::string& line);

/// A line split into the rank that printed it and the rest.
struct RankedLine {
  std::string stream;  ///< "" when the line carries no rank prefix, else the rank's number as printed ("3")
  std::string text;    ///< the line after the prefix
};

/// Splits off a launcher's rank prefix: torchrun's "[rank3]:" and "[default3]:", Slurm's `srun --label` "3: ",
/// Open MPI's `--tag-output` "[1,3]<stdout>:". A line without one is returned whole with stream "".
RankedLine split_rank_prefix(const std::string& line);

/// A decimal number as printed: optional sign, digits with optional thousands commas, fraction, exponent
/// ("1,234", "1.234567E+00", "-3e-5"). Nullopt for anything else (trailing characters too) or a non-finite value.
std::optional<double> parse_number(const std::string& text);

/// `v` as an int64 when it is a whole number from 0 to 2^63 (exclusive); nullopt otherwise (never a cast of a
/// double beyond int64, which is undefined behaviour).
std::optional<int64_t> whole_count(double v);

/// `text` without leading and trailing spaces and tabs.
std::string trim(const std::string& text);

/// A memory amount with its unit: "26.53GiB" or "26.53 GiB" (GiB, MiB, GB, MB; bytes), nullopt otherwise.
std::optional<double> parse_memory_bytes(const std::string& text);

}  // namespace recipebench
