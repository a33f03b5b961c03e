/// \file bits.h
/// \brief Compile-time bit helpers, usable in `static_assert` and template arguments.
#pragma once

#include <sgl_kernel/utils.h>

#include <bit>
#include <cstdint>

namespace sglang::host {

/// \brief Whether `x` is a power of two (0 is not).
/// \param x Value.
/// \return True for 1, 2, 4, ...
SGL_DEVICE_HOST constexpr bool is_pow2(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

/// \brief floor(log2(x)); -1 for 0.
/// \param x Value.
/// \return The exponent of the highest set bit.
SGL_DEVICE_HOST constexpr int32_t log2_floor(uint64_t x) {
  return x == 0 ? -1 : static_cast<int32_t>(63 - std::countl_zero(x));
}

/// \brief ceil(log2(x)); -1 for 0.
/// \param x Value.
/// \return The smallest `e` with `2^e >= x`.
SGL_DEVICE_HOST constexpr int32_t log2_ceil(uint64_t x) {
  return x == 0 ? -1 : (x == 1 ? 0 : log2_floor(x - 1) + 1);
}

/// \brief The smallest power of two `>= x` (1 for 0).
/// \param x Value.
/// \return The rounded value.
SGL_DEVICE_HOST constexpr uint64_t round_up_pow2(uint64_t x) { return x <= 1 ? 1 : uint64_t{1} << log2_ceil(x); }

/// \brief The largest power of two `<= x` (0 for 0).
/// \param x Value.
/// \return The rounded value.
SGL_DEVICE_HOST constexpr uint64_t round_down_pow2(uint64_t x) { return x == 0 ? 0 : uint64_t{1} << log2_floor(x); }

/// \brief Greatest common divisor.
/// \param a First value.
/// \param b Second value.
/// \return gcd(a, b); gcd(0, b) is b.
SGL_DEVICE_HOST constexpr uint64_t gcd(uint64_t a, uint64_t b) {
  while (b != 0) {
    const uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

}  // namespace sglang::host
