// Reading the fields of a Hugging Face config.json (catalog/hf_config.cpp, catalog/hf_families.cpp): one field at a
// time, every fault thrown as a FieldFault with its dotted path. Internal to the catalog layer.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "util/json.h"

namespace recipebench {
struct ModelConfig;
}

namespace recipebench::hf {

/// The largest integer a config.json field may hold (Reader::integer).
constexpr int64_t kMaxConfigInteger = int64_t{1} << 20;

/// A field of the config that is wrong or missing: its dotted path (`text_config.layer_types[5]`), what was found
/// and what was expected. Thrown while reading; model_config_from_hf and load_hf_config word it (the latter located).
struct FieldFault {
  std::string path, found, expected;
};

/// The fields of one JSON object of a config, `prefix` naming where it sits ("text_config.").
class Reader {
 public:
  Reader(const Json& obj, std::string prefix) : obj_(obj), prefix_(std::move(prefix)) {}

  /// Throws the FieldFault of `key`.
  [[noreturn]] void fail(const std::string& key, const std::string& found, const std::string& expected) const {
    throw FieldFault{prefix_ + key, found, expected};
  }

  /// `key` as an integer in [min, kMaxConfigInteger]: no width, head, expert or layer count of a real model comes
  /// near 2^20, and the bound keeps every parameter count and loop over layers within 64 bits and milliseconds.
  int64_t integer(const std::string& key, int64_t min = 1) const {
    const std::string range = "an integer from " + std::to_string(min) + " to " + std::to_string(kMaxConfigInteger);
    if (!obj_.contains(key)) fail(key, "missing", range);
    const Json& v = obj_[key];
    if (!v.is_number_integer()) fail(key, v.dump(), range);
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(kMaxConfigInteger))
      fail(key, v.dump(), range);
    const int64_t x = v.get<int64_t>();
    if (x < min || x > kMaxConfigInteger) fail(key, std::to_string(x), range);
    return x;
  }

  /// `key` as an integer >= min, `fallback` when it is absent or null.
  int64_t integer_or(const std::string& key, int64_t fallback, int64_t min) const {
    if (!obj_.contains(key) || obj_[key].is_null()) return fallback;
    return integer(key, min);
  }

  /// `key` as a number, `fallback` when absent or null (a fault when `required`).
  double number(const std::string& key, double fallback, bool required) const {
    if (!obj_.contains(key) || obj_[key].is_null()) {
      if (required) fail(key, "missing", "a number");
      return fallback;
    }
    if (!obj_[key].is_number()) fail(key, obj_[key].dump(), "a number");
    return obj_[key].get<double>();
  }

  /// True when the object holds `key` with a non-null value.
  bool has(const std::string& key) const { return obj_.contains(key) && !obj_[key].is_null(); }

  /// The object and its prefix.
  const Json& obj() const { return obj_; }
  const std::string& prefix() const { return prefix_; }

 private:
  const Json& obj_;
  std::string prefix_;
};

/// Fails at hidden_size (Reader::fail) when `m`'s parameter count (count_params) overflows 64 bits.
void require_countable(const Reader& r, const ModelConfig& m);

/// Fails at num_key_value_heads (Reader::fail) unless it divides num_attention_heads: every family's attention
/// groups its query heads over the key/value heads (docs/hf-config-fields.md). Checked where the config is read,
/// so `models --config`, `run --dry-run` and `run` refuse it alike, before a model is counted or built.
void require_kv_divisor(const Reader& r, const ModelConfig& m);

}  // namespace recipebench::hf
