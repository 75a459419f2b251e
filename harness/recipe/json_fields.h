// Typed reading of one JSON document (a run record), every wrong or missing field located by file and dotted
// field path: `r.json: error: steps[3].seconds: string "x", expected a number`.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "recipe/diagnostic.h"
#include "recipe/enums.h"
#include "util/json.h"
#include "util/format.h"

namespace recipebench {

/// Reads typed fields of one JSON document; a wrong or missing field throws InputError naming the file and the
/// dotted field path (`steps[3].seconds`).
class JsonFields {
 public:
  explicit JsonFields(const std::string& file) : file_(file) {}

  static std::string join(const std::string& parent, const std::string& key) {
    return parent.empty() ? key : parent + "." + key;
  }
  static std::string item(const std::string& parent, size_t i) { return parent + "[" + std::to_string(i) + "]"; }

  [[noreturn]] void fail(const std::string& path, const std::string& found, const std::string& expected) const {
    throw InputError(Diagnostic{file_, 0, 0, path, found, expected});
  }

  /// Member `key` of the object `o` at `path`; throws when it is absent.
  const Json& get(const Json& o, const std::string& path, const char* key) const {
    if (!o.is_object()) fail(path, describe(o), "an object");
    const auto it = o.find(key);
    if (it == o.end()) fail(join(path, key), "missing", "a value");
    return *it;
  }
  /// True when `o` has member `key` and it is not null.
  static bool has(const Json& o, const char* key) { return o.is_object() && o.contains(key) && !o[key].is_null(); }

  double number(const Json& v, const std::string& path) const {
    if (!v.is_number()) fail(path, describe(v), "a number");
    const double d = v.get<double>();
    if (!std::isfinite(d)) fail(path, v.dump(), "a finite number");
    return d;
  }
  int64_t integer(const Json& v, const std::string& path, int64_t lo = std::numeric_limits<int64_t>::min(),
                  int64_t hi = std::numeric_limits<int64_t>::max()) const {
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi)) fail(path, v.dump(), range(lo, hi));
    if (!v.is_number_integer()) fail(path, describe(v), "an integer");
    const int64_t i = v.get<int64_t>();
    if (i < lo || i > hi) fail(path, v.dump(), range(lo, hi));
    return i;
  }
  int int32(const Json& v, const std::string& path, int lo = 0) const {
    return static_cast<int>(integer(v, path, lo, std::numeric_limits<int>::max()));
  }
  std::string string(const Json& v, const std::string& path) const {
    if (!v.is_string()) fail(path, describe(v), "a string");
    return v.get<std::string>();
  }
  /// A closed set's name (recipe/enums.h), e.g. "cuda" for Device.
  template <typename E>
  E closed(const Json& v, const std::string& path) const {
    const std::string name = string(v, path);
    const std::optional<E> e = parse_enum<E>(name);
    if (!e) fail(path, "'" + name + "'", "one of the names recipe/enums.h lists");
    return *e;
  }
  bool boolean(const Json& v, const std::string& path) const {
    if (!v.is_boolean()) fail(path, describe(v), "true or false");
    return v.get<bool>();
  }
  const Json& object(const Json& v, const std::string& path) const {
    if (!v.is_object()) fail(path, describe(v), "an object");
    return v;
  }
  const Json& array(const Json& v, const std::string& path) const {
    if (!v.is_array()) fail(path, describe(v), "an array");
    return v;
  }

  /// A short rendering of a value for a message: its JSON type and, for scalars, the value (60 characters at most).
  static std::string describe(const Json& v) {
    if (v.is_object()) return "an object";
    if (v.is_array()) return "an array of " + counted(static_cast<int64_t>(v.size()), "item");
    if (v.is_null()) return "null";
    std::string text = v.dump();
    if (text.size() > 60) text = text.substr(0, 57) + "...";
    if (v.is_string()) return "string " + text;
    if (v.is_boolean()) return "boolean " + text;
    return "number " + text;
  }

 private:
  static std::string range(int64_t lo, int64_t hi) {
    return "an integer in " + std::to_string(lo) + ".." + std::to_string(hi);
  }
  const std::string& file_;
};

}  // namespace recipebench
