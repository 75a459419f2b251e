// The message for a first argument that names no subcommand: the nearest subcommand by edit distance and the list;
// the message for an option the subcommand does not have: its nearest option, or the option other tools spell so.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace recipebench::cli {

/// Levenshtein distance between `a` and `b` (insertions, deletions, substitutions; each 1).
size_t edit_distance(const std::string& a, const std::string& b);

/// nullopt when `word` is one of `subcommands` or starts with '-' (an option: CLI11 reports it); else
/// "<command line>: error: unknown subcommand 'valdate' (did you mean 'validate'?); subcommands: validate, ...", the
/// suggestion only when a subcommand is within 2 edits (the nearest; the first in `subcommands` on a tie).
std::optional<std::string> unknown_subcommand_message(const std::string& word,
                                                      const std::vector<std::string>& subcommands);

/// One option of a subcommand, as the unknown-option check needs it.
struct OptionSpec {
  std::string name;  ///< "--count"
  bool takes_value;  ///< the next argument is its value (unless written --name=value)
};

/// The message for the first `--name` among `args` (the arguments after the subcommand) that `subcommand` has no
/// option of: "<command line>: error: plan: unknown option '--gpus' (did you mean '--count'?); its options: --model, ...". The
/// suggestion is, in this order: the option other tools spell `--name` (Megatron-LM's --seq-length is --row-tokens,
/// --gpus is --count; README.md, "Using it"), else the subcommand's option within 2 edits (the nearest), else the other
/// subcommands that have `--name`. A value that follows an option taking one is skipped, and so is everything
/// after `--`. nullopt when every option is known. `options` maps each subcommand to its options.
std::optional<std::string> unknown_option_message(const std::string& subcommand, const std::vector<std::string>& args,
                                                  const std::map<std::string, std::vector<OptionSpec>>& options);

/// CLI11's failure message (CLI::App::failure_message) as every other command-line error is written:
/// "<command line>: error: <CLI11's message on one line>" and the --help hint (docs/fuzzing.md, "Surfaces": a value
/// CLI11 refuses, "recipe: File does not exist: X", was printed without a place).
std::string command_line_failure(const CLI::App* app, const CLI::Error& e);

}  // namespace recipebench::cli
