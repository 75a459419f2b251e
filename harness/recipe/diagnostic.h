// One problem found in an input file, located at file:line:column and a field path.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "util/json.h"

namespace recipebench {

/// A problem in an input file. line and column are 1-based; 0 means unknown (the whole file).
/// `path` is the dotted field path (`layout.tp`, `result.window[1]`), empty for the document itself.
/// Rendered as `file:line:col: error: <path>: <found>, expected <expected>`, control characters escaped
/// ("warning:" for a warning).
struct Diagnostic {
  std::string file;
  int line = 0;
  int column = 0;
  std::string path;
  std::string found;
  std::string expected;
  std::string severity = "error";  ///< "error" or "warning" (validate's memory check without --strict)

  /// The one-line text form.
  std::string to_string() const;
  /// The JSON form: {"file","line","column","path","found","expected","message"}.
  Json to_json() const;
};

using Diagnostics = std::vector<Diagnostic>;

/// Thrown when a file cannot be read or parsed at all; carries the located diagnostic.
class InputError : public std::runtime_error {
 public:
  explicit InputError(Diagnostic d) : std::runtime_error(d.to_string()), diagnostic_(std::move(d)) {}
  const Diagnostic& diagnostic() const { return diagnostic_; }

 private:
  Diagnostic diagnostic_;
};

}  // namespace recipebench
