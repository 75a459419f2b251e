// The layout of a multi-line torchrun command that plan emits for another stack (Megatron-LM, TorchTitan): one
// flag a line, each line but the last ending in " \\", as the launch check reads it back (docs/launch-check.md).
#pragma once

#include <string>
#include <vector>

#include <fmt/format.h>

namespace recipebench {

/// `comment` (its own lines, each ending in a newline), then "torchrun --nnodes N <nproc_option> G <entry>", then
/// `first` (the stack's configuration arguments) and each of `flags` on a line of its own, every line but the last
/// ending in " \\". `nodes` and `per_node` GPUs per node; `nproc_option` as the stack spells it
/// ("--nproc-per-node" or "--nproc_per_node"), `entry` (the script or `-m module`), `first` (the stack's
/// configuration arguments), then `flags` in order.
inline std::string torchrun_lines(const std::string& comment, long long nodes, long long per_node, const std::string& nproc_option,
                                  const std::string& entry, const std::string& first,
                                  const std::vector<std::string>& flags) {
  std::string out = comment + fmt::format("torchrun --nnodes {} {} {} {} \\\n", nodes, nproc_option, per_node, entry);
  out += "  " + first;
  for (const std::string& f : flags) out += " \\\n  " + f;
  return out + "\n";
}

}  // namespace recipebench
