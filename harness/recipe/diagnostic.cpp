#include "recipe/diagnostic.h"

#include "util/input_file.h"

namespace recipebench {

std::string Diagnostic::to_string() const {
  // Control characters are escaped: a value holding a newline must not forge a second diagnostic line.
  std::string s = escape_controls(file);
  if (line > 0) s += ":" + std::to_string(line) + ":" + std::to_string(column);
  s += ": " + severity + ": ";
  if (!path.empty()) s += escape_controls(path) + ": ";
  s += found.empty() ? std::string("'' (empty)") : escape_controls(found);  // an empty value shown, not nothing
  if (!expected.empty()) s += ", expected " + escape_controls(expected);
  return s;
}

Json Diagnostic::to_json() const {
  return Json{{"file", file},   {"line", line},         {"column", column},     {"path", path},
              {"found", found}, {"expected", expected}, {"severity", severity}, {"message", to_string()}};
}

}  // namespace recipebench
