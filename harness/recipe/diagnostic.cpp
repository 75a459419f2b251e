#include "recipe/diagnostic.h"

namespace recipebench {

std::string Diagnostic::to_string() const {
  std::string s = file;
  if (line > 0) s += ":" + std::to_string(line) + ":" + std::to_string(column);
  s += ": " + severity + ": ";
  if (!path.empty()) s += path + ": ";
  s += found;
  if (!expected.empty()) s += ", expected " + expected;
  return s;
}

Json Diagnostic::to_json() const {
  return Json{{"file", file}, {"line", line},         {"column", column},
              {"path", path}, {"found", found},       {"expected", expected}, {"severity", severity},
              {"message", to_string()}};
}

}  // namespace recipebench
