// Where a run setting was given, for the run driver's located refusals and notes of bench.* settings: on the
// command line (its option) or in the recipe (its field). One place for the form every such diagnostic takes.
#pragma once

#include <string>

#include "recipe/diagnostic.h"
#include "recipe/source_doc.h"

namespace recipebench {

/// The located diagnostic of a setting's value `found` against `expected`: at "<command line>" with field
/// `option` (e.g. "--kernels") when the command line gave it (`on_command_line`), else at the recipe field
/// `pointer` (e.g. "/bench/kernels") of `src`, with its file:line:column.
Diagnostic setting_diagnostic(const SourceDoc& src, bool on_command_line, const std::string& option,
                              const std::string& pointer, const std::string& found, const std::string& expected);

/// Why a per-node backend refuses a setting: "(the <backend> backend runs the recipe's own command: its <what> is
/// the command's)", e.g. what = "kernels are", "pipeline is".
std::string runs_own_command(const std::string& backend, const std::string& what);

}  // namespace recipebench
