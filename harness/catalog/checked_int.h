// Overflow-checked 64-bit integers for parameter counts (catalog/models.cpp, catalog/family_params.cpp).
#pragma once

#include <cstdint>
#include <stdexcept>

namespace recipebench {

/// An int64 that refuses to wrap: every sum and product of a parameter count is checked, so widths too large for
/// 64 bits throw std::overflow_error instead of giving a negative or wrapped count (signed overflow is UB).
struct Checked {
  int64_t v;
  friend Checked operator+(Checked a, Checked b) {
    int64_t r;
    if (__builtin_add_overflow(a.v, b.v, &r)) throw std::overflow_error("a parameter count beyond 2^63");
    return {r};
  }
  friend Checked operator*(Checked a, Checked b) {
    int64_t r;
    if (__builtin_mul_overflow(a.v, b.v, &r)) throw std::overflow_error("a parameter count beyond 2^63");
    return {r};
  }
};

/// `v` as a Checked.
inline Checked c64(int64_t v) { return {v}; }

}  // namespace recipebench
