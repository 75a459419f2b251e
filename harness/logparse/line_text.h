// Text helpers of the log parsers: a raw log line cleaned (ANSI escape sequences removed, a launcher's rank
// prefix split off) and numbers as training stacks print them ("1,234", "1.234567E+00", "26.53GiB").
#pragma once

#include <optional>
#include <string>

namespace recipebench {

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

/// `text` without leading and trailing spaces and tabs.
std::string trim(const std::string& text);

/// A memory amount with its unit: "26.53GiB" or "26.53 GiB" (GiB, MiB, GB, MB; bytes), nullopt otherwise.
std::optional<double> parse_memory_bytes(const std::string& text);

}  // namespace recipebench
