#include "run/setting_diagnostic.h"

namespace recipebench {

Diagnostic setting_diagnostic(const SourceDoc& src, bool on_command_line, const std::string& option,
                              const std::string& pointer, const std::string& found, const std::string& expected) {
  if (on_command_line) return Diagnostic{"<command line>", 0, 0, option, found, expected};
  return src.at(pointer, found, expected);
}

std::string runs_own_command(const std::string& backend, const std::string& what) {
  return "(the " + backend + " backend runs the recipe's own command: its " + what + " the command's)";
}

}  // namespace recipebench
