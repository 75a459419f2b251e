// The message for a first argument that names no subcommand: the nearest subcommand by edit distance and the list.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace recipebench::cli {

/// Levenshtein distance between `a` and `b` (insertions, deletions, substitutions; each 1).
size_t edit_distance(const std::string& a, const std::string& b);

/// nullopt when `word` is one of `subcommands` or starts with '-' (an option: CLI11 reports it); else
/// "recipebench: unknown subcommand 'valdate' (did you mean 'validate'?); subcommands: validate, report, ...", the
/// suggestion only when a subcommand is within 2 edits (the nearest; the first in `subcommands` on a tie).
std::optional<std::string> unknown_subcommand_message(const std::string& word,
                                                      const std::vector<std::string>& subcommands);

}  // namespace recipebench::cli
