/// \file math.cuh
/// \brief Type-dispatched device math (`device::math::`), through `DTypeTrait`.
#pragma once

#include <sgl_kernel/type.cuh>

namespace sglang::device::math {

/// \brief Maximum through `DTypeTrait<T>::max`.
/// \tparam T Value type.
/// \param a First value.
/// \param b Second value.
/// \return The larger value.
template <typename T>
SGL_DEVICE T max(T a, T b) {
  return DTypeTrait<T>::max(a, b);
}

/// \brief Minimum through `DTypeTrait<T>::min`.
/// \tparam T Value type.
/// \param a First value.
/// \param b Second value.
/// \return The smaller value.
template <typename T>
SGL_DEVICE T min(T a, T b) {
  return DTypeTrait<T>::min(a, b);
}

/// \brief Absolute value through `DTypeTrait<T>::abs`.
/// \tparam T Value type.
/// \param x Value.
/// \return |x|.
template <typename T>
SGL_DEVICE T abs(T x) {
  return DTypeTrait<T>::abs(x);
}

/// \brief Square root (fp32).
/// \tparam T Value type (fp32_t).
/// \param x Value.
/// \return sqrt(x).
template <typename T>
SGL_DEVICE T sqrt(T x) {
  return DTypeTrait<T>::sqrt(x);
}

/// \brief Reciprocal square root (fp32).
/// \tparam T Value type (fp32_t).
/// \param x Value.
/// \return 1 / sqrt(x).
template <typename T>
SGL_DEVICE T rsqrt(T x) {
  return DTypeTrait<T>::rsqrt(x);
}

/// \brief Exponential (fp32).
/// \tparam T Value type (fp32_t).
/// \param x Value.
/// \return e^x.
template <typename T>
SGL_DEVICE T exp(T x) {
  return DTypeTrait<T>::exp(x);
}

/// \brief Sine (fp32).
/// \tparam T Value type (fp32_t).
/// \param x Value in radians.
/// \return sin(x).
template <typename T>
SGL_DEVICE T sin(T x) {
  return DTypeTrait<T>::sin(x);
}

/// \brief Cosine (fp32).
/// \tparam T Value type (fp32_t).
/// \param x Value in radians.
/// \return cos(x).
template <typename T>
SGL_DEVICE T cos(T x) {
  return DTypeTrait<T>::cos(x);
}

}  // namespace sglang::device::math
