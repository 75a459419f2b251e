// One YAML mapping of a catalog file read field by field (docs/catalog.md), each problem a CatalogError at the
// field's JSON pointer. Internal to harness/catalog/.
#pragma once

#include "catalog/hardware.h"
#include "util/input_file.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <string>
#include <vector>

namespace recipebench {

/// Reads the fields of one YAML mapping of a catalog file; a problem throws CatalogError at the field's pointer.
class EntryReader {
 public:
  EntryReader(const YAML::Node& node, std::string file, std::string pointer)
      : node_(node), file_(std::move(file)), pointer_(std::move(pointer)) {}

  const std::string& pointer() const { return pointer_; }
  bool has(const char* key) const { return static_cast<bool>(node_[key]); }
  /// The field's node as it is (null when absent), for a shape no method below reads.
  YAML::Node node(const char* key) const { return node_[key]; }

  /// A required string field.
  std::string text(const char* key) const { return utf8_from_latin1_bytes(scalar(key).Scalar()); }
  /// An optional string field; "" when absent.
  std::string text_or_empty(const char* key) const { return has(key) ? text(key) : std::string(); }

  /// A required finite number >= 0; null reads as 0 when `null_is_zero` (usd_per_hour: no published price).
  double number(const char* key, bool null_is_zero = false) const {
    const YAML::Node n = node_[key];
    if (!n) fail(key, "missing", "a number");
    if (null_is_zero && n.IsNull()) return 0;
    double v = 0;
    if (!n.IsScalar() || !YAML::convert<double>::decode(n, v)) fail(key, "'" + describe(n) + "'", "a number");
    if (!std::isfinite(v) || v < 0) fail(key, n.Scalar(), "a finite number >= 0");
    return v;
  }
  /// An optional number; 0 when absent.
  double number_or_zero(const char* key) const { return has(key) ? number(key) : 0; }

  /// A required positive integer.
  int integer(const char* key) const {
    const YAML::Node n = scalar(key);
    int v = 0;
    if (!YAML::convert<int>::decode(n, v) || v < 1) fail(key, n.Scalar(), "an integer >= 1");
    return v;
  }

  /// An optional list of strings; empty when absent.
  std::vector<std::string> names(const char* key) const {
    std::vector<std::string> out;
    const YAML::Node n = node_[key];
    if (!n) return out;
    if (!n.IsSequence()) fail(key, describe(n), "a list of names");
    for (const auto& item : n) {
      if (!item.IsScalar()) fail(key, describe(item), "a name");
      out.push_back(utf8_from_latin1_bytes(item.Scalar()));
    }
    return out;
  }

  [[noreturn]] void fail(const std::string& key, const std::string& found, const std::string& expected) const {
    throw CatalogError(file_, pointer_ + "/" + key, found, expected);
  }

 private:
  YAML::Node scalar(const char* key) const {
    const YAML::Node n = node_[key];
    if (!n) fail(key, "missing", "a value");
    if (!n.IsScalar()) fail(key, describe(n), "a single value");
    return n;
  }
  static std::string describe(const YAML::Node& n) {
    return n.IsSequence() ? "a list" : n.IsMap() ? "a mapping" : n.IsNull() ? "null" : utf8_from_latin1_bytes(n.Scalar());
  }

  YAML::Node node_;
  std::string file_;
  std::string pointer_;
};

}  // namespace recipebench
