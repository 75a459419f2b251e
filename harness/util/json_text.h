// Parsing JSON text strictly and located: duplicate keys, numbers beyond a double and nesting over a limit are
// refused with the line, column and field path of the offending token; objects are built in linear time.
#pragma once

#include <stdexcept>
#include <string>

#include "util/json.h"

namespace recipebench {

/// A JSON text that cannot be read; carries where (1-based line and column of the offending token, the dotted
/// field path of the member it belongs to, "" for the document) and what was found and expected. `what()` is
/// "<path>: <found>, expected <expected>" without the file (the caller names it).
class JsonTextError : public std::runtime_error {
 public:
  JsonTextError(int line, int column, std::string path, std::string found, std::string expected);
  int line;
  int column;
  std::string path;      ///< "metrics.tokens_per_s_per_gpu", "steps[3].ms"; "" for the document
  std::string found;     ///< "duplicate key 'status' (first at line 1, column 2)", "number 1e400 out of range"
  std::string expected;  ///< "each key once per object", "a number within +-1.8e308"
};

/// Parses one JSON document from `text` (RFC 8259, no comments, nothing after the value). Unlike Json::parse it
/// refuses a key that appears twice in one object (never "the last one wins"), reports a number that overflows a
/// double (1e400, a 400-digit integer) at its position and field instead of a library message, refuses nesting
/// deeper than `max_depth` objects and arrays, and builds an object of n keys in O(n) (Json::parse inserts into an
/// ordered_json by a linear search: O(n^2)). Throws JsonTextError.
Json parse_json_text(const std::string& text, int max_depth = 64);

}  // namespace recipebench
