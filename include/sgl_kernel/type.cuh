/// \file type.cuh
/// \brief `DTypeTrait<T>`: conversions, math and packing metadata per element type.
#pragma once

#include <sgl_kernel/utils.cuh>

#include <cstdint>
#include <limits>
#include <type_traits>

namespace sglang {

/// \brief Per-type conversions, math and packing metadata.
///
/// Specialized for fp32_t, fp16_t, bf16_t, fp8_e4m3_t, fp8_e5m2_t, their packed x2 forms and the
/// fixed-width integers. Members: `from(x)`, `abs/max/min`, `sqrt/rsqrt/exp/sin/cos` (fp32 only),
/// `packed_t`, `unpacked_t`, `kVecSize`, `kFloatMax`.
/// \tparam T The element (or packed) type.
template <typename T>
struct DTypeTrait;

/// \brief Trait of `fp32_t`.
template <>
struct DTypeTrait<fp32_t> {
  using unpacked_t = fp32_t;               ///< Element type.
  using packed_t = fp32x2_t;               ///< Two-element packed type.
  static constexpr uint32_t kVecSize = 1;  ///< Elements per value.
  static constexpr float kFloatMax = 3.40282347e38f;  ///< Largest finite value.

  /// \brief Convert from fp32.
  /// \param x Value.
  /// \return The value.
  static SGL_DEVICE fp32_t from(fp32_t x) { return x; }
  /// \brief Convert from fp16.
  /// \param x Value.
  /// \return The value as fp32.
  static SGL_DEVICE fp32_t from(fp16_t x) { return __half2float(x); }
  /// \brief Convert from bf16.
  /// \param x Value.
  /// \return The value as fp32.
  static SGL_DEVICE fp32_t from(bf16_t x) { return __bfloat162float(x); }
  /// \brief Convert from fp8 e4m3.
  /// \param x Value.
  /// \return The value as fp32.
  static SGL_DEVICE fp32_t from(fp8_e4m3_t x) { return static_cast<float>(x); }
  /// \brief Convert from fp8 e5m2.
  /// \param x Value.
  /// \return The value as fp32.
  static SGL_DEVICE fp32_t from(fp8_e5m2_t x) { return static_cast<float>(x); }
  /// \brief Absolute value.
  /// \param x Value.
  /// \return |x|.
  static SGL_DEVICE fp32_t abs(fp32_t x) { return fabsf(x); }
  /// \brief Maximum.
  /// \param a First value.
  /// \param b Second value.
  /// \return The larger value.
  static SGL_DEVICE fp32_t max(fp32_t a, fp32_t b) { return fmaxf(a, b); }
  /// \brief Minimum.
  /// \param a First value.
  /// \param b Second value.
  /// \return The smaller value.
  static SGL_DEVICE fp32_t min(fp32_t a, fp32_t b) { return fminf(a, b); }
  /// \brief Square root.
  /// \param x Value.
  /// \return sqrt(x).
  static SGL_DEVICE fp32_t sqrt(fp32_t x) { return sqrtf(x); }
  /// \brief Reciprocal square root.
  /// \param x Value.
  /// \return 1 / sqrt(x).
  static SGL_DEVICE fp32_t rsqrt(fp32_t x) { return rsqrtf(x); }
  /// \brief Exponential.
  /// \param x Value.
  /// \return e^x.
  static SGL_DEVICE fp32_t exp(fp32_t x) { return expf(x); }
  /// \brief Sine.
  /// \param x Value in radians.
  /// \return sin(x).
  static SGL_DEVICE fp32_t sin(fp32_t x) { return sinf(x); }
  /// \brief Cosine.
  /// \param x Value in radians.
  /// \return cos(x).
  static SGL_DEVICE fp32_t cos(fp32_t x) { return cosf(x); }
};

/// \brief Trait of `fp16_t`.
template <>
struct DTypeTrait<fp16_t> {
  using unpacked_t = fp16_t;                      ///< Element type.
  using packed_t = fp16x2_t;                      ///< Two-element packed type.
  static constexpr uint32_t kVecSize = 1;         ///< Elements per value.
  static constexpr float kFloatMax = 65504.0f;    ///< Largest finite value.

  /// \brief Convert from fp32 (round to nearest).
  /// \param x Value.
  /// \return The value as fp16.
  static SGL_DEVICE fp16_t from(fp32_t x) { return __float2half_rn(x); }
  /// \brief Identity.
  /// \param x Value.
  /// \return The value.
  static SGL_DEVICE fp16_t from(fp16_t x) { return x; }
  /// \brief Absolute value.
  /// \param x Value.
  /// \return |x|.
  static SGL_DEVICE fp16_t abs(fp16_t x) { return __habs(x); }
  /// \brief Maximum.
  /// \param a First value.
  /// \param b Second value.
  /// \return The larger value.
  static SGL_DEVICE fp16_t max(fp16_t a, fp16_t b) { return __hmax(a, b); }
  /// \brief Minimum.
  /// \param a First value.
  /// \param b Second value.
  /// \return The smaller value.
  static SGL_DEVICE fp16_t min(fp16_t a, fp16_t b) { return __hmin(a, b); }
};

/// \brief Trait of `bf16_t`.
template <>
struct DTypeTrait<bf16_t> {
  using unpacked_t = bf16_t;                         ///< Element type.
  using packed_t = bf16x2_t;                         ///< Two-element packed type.
  static constexpr uint32_t kVecSize = 1;            ///< Elements per value.
  static constexpr float kFloatMax = 3.38953139e38f; ///< Largest finite value.

  /// \brief Convert from fp32 (round to nearest).
  /// \param x Value.
  /// \return The value as bf16.
  static SGL_DEVICE bf16_t from(fp32_t x) { return __float2bfloat16_rn(x); }
  /// \brief Identity.
  /// \param x Value.
  /// \return The value.
  static SGL_DEVICE bf16_t from(bf16_t x) { return x; }
  /// \brief Absolute value.
  /// \param x Value.
  /// \return |x|.
  static SGL_DEVICE bf16_t abs(bf16_t x) { return __habs(x); }
  /// \brief Maximum.
  /// \param a First value.
  /// \param b Second value.
  /// \return The larger value.
  static SGL_DEVICE bf16_t max(bf16_t a, bf16_t b) { return __hmax(a, b); }
  /// \brief Minimum.
  /// \param a First value.
  /// \param b Second value.
  /// \return The smaller value.
  static SGL_DEVICE bf16_t min(bf16_t a, bf16_t b) { return __hmin(a, b); }
};

/// \brief Trait of `fp8_e4m3_t`.
template <>
struct DTypeTrait<fp8_e4m3_t> {
  using unpacked_t = fp8_e4m3_t;               ///< Element type.
  using packed_t = fp8x2_e4m3_t;               ///< Two-element packed type.
  static constexpr uint32_t kVecSize = 1;      ///< Elements per value.
  static constexpr float kFloatMax = 448.0f;   ///< Largest finite value.

  /// \brief Convert from fp32, saturating to +-448 (NaN stays NaN).
  /// \param x Value.
  /// \return The value as fp8 e4m3.
  static SGL_DEVICE fp8_e4m3_t from(fp32_t x) { return fp8_e4m3_t(x); }
};

/// \brief Trait of `fp8_e5m2_t`.
template <>
struct DTypeTrait<fp8_e5m2_t> {
  using unpacked_t = fp8_e5m2_t;                ///< Element type.
  using packed_t = fp8x2_e5m2_t;                ///< Two-element packed type.
  static constexpr uint32_t kVecSize = 1;       ///< Elements per value.
  static constexpr float kFloatMax = 57344.0f;  ///< Largest finite value.

  /// \brief Convert from fp32, saturating to +-57344 (NaN stays NaN).
  /// \param x Value.
  /// \return The value as fp8 e5m2.
  static SGL_DEVICE fp8_e5m2_t from(fp32_t x) { return fp8_e5m2_t(x); }
};

/// \brief Trait of `fp32x2_t`.
template <>
struct DTypeTrait<fp32x2_t> {
  using unpacked_t = fp32_t;               ///< Element type.
  using packed_t = fp32x2_t;               ///< Packed type (itself).
  static constexpr uint32_t kVecSize = 2;  ///< Elements per value.
  static constexpr float kFloatMax = DTypeTrait<fp32_t>::kFloatMax;  ///< Largest finite value.

  /// \brief Identity.
  /// \param x Value.
  /// \return The value.
  static SGL_DEVICE fp32x2_t from(fp32x2_t x) { return x; }
  /// \brief Widen two fp16.
  /// \param x Value.
  /// \return The values as fp32.
  static SGL_DEVICE fp32x2_t from(fp16x2_t x) { return __half22float2(x); }
  /// \brief Widen two bf16.
  /// \param x Value.
  /// \return The values as fp32.
  static SGL_DEVICE fp32x2_t from(bf16x2_t x) { return __bfloat1622float2(x); }
  /// \brief Elementwise absolute value.
  /// \param x Value.
  /// \return |x|.
  static SGL_DEVICE fp32x2_t abs(fp32x2_t x) { return make_float2(fabsf(x.x), fabsf(x.y)); }
  /// \brief Elementwise maximum.
  /// \param a First value.
  /// \param b Second value.
  /// \return The larger values.
  static SGL_DEVICE fp32x2_t max(fp32x2_t a, fp32x2_t b) { return make_float2(fmaxf(a.x, b.x), fmaxf(a.y, b.y)); }
  /// \brief Elementwise minimum.
  /// \param a First value.
  /// \param b Second value.
  /// \return The smaller values.
  static SGL_DEVICE fp32x2_t min(fp32x2_t a, fp32x2_t b) { return make_float2(fminf(a.x, b.x), fminf(a.y, b.y)); }
};

/// \brief Trait of `fp16x2_t`.
template <>
struct DTypeTrait<fp16x2_t> {
  using unpacked_t = fp16_t;               ///< Element type.
  using packed_t = fp16x2_t;               ///< Packed type (itself).
  static constexpr uint32_t kVecSize = 2;  ///< Elements per value.
  static constexpr float kFloatMax = DTypeTrait<fp16_t>::kFloatMax;  ///< Largest finite value.

  /// \brief Narrow two fp32 (round to nearest).
  /// \param x Value.
  /// \return The values as fp16.
  static SGL_DEVICE fp16x2_t from(fp32x2_t x) { return __float22half2_rn(x); }
  /// \brief Identity.
  /// \param x Value.
  /// \return The value.
  static SGL_DEVICE fp16x2_t from(fp16x2_t x) { return x; }
  /// \brief Elementwise absolute value.
  /// \param x Value.
  /// \return |x|.
  static SGL_DEVICE fp16x2_t abs(fp16x2_t x) { return __habs2(x); }
  /// \brief Elementwise maximum.
  /// \param a First value.
  /// \param b Second value.
  /// \return The larger values.
  static SGL_DEVICE fp16x2_t max(fp16x2_t a, fp16x2_t b) { return __hmax2(a, b); }
  /// \brief Elementwise minimum.
  /// \param a First value.
  /// \param b Second value.
  /// \return The smaller values.
  static SGL_DEVICE fp16x2_t min(fp16x2_t a, fp16x2_t b) { return __hmin2(a, b); }
};

/// \brief Trait of `bf16x2_t`.
template <>
struct DTypeTrait<bf16x2_t> {
  using unpacked_t = bf16_t;               ///< Element type.
  using packed_t = bf16x2_t;               ///< Packed type (itself).
  static constexpr uint32_t kVecSize = 2;  ///< Elements per value.
  static constexpr float kFloatMax = DTypeTrait<bf16_t>::kFloatMax;  ///< Largest finite value.

  /// \brief Narrow two fp32 (round to nearest).
  /// \param x Value.
  /// \return The values as bf16.
  static SGL_DEVICE bf16x2_t from(fp32x2_t x) { return __float22bfloat162_rn(x); }
  /// \brief Identity.
  /// \param x Value.
  /// \return The value.
  static SGL_DEVICE bf16x2_t from(bf16x2_t x) { return x; }
  /// \brief Elementwise absolute value.
  /// \param x Value.
  /// \return |x|.
  static SGL_DEVICE bf16x2_t abs(bf16x2_t x) { return __habs2(x); }
  /// \brief Elementwise maximum.
  /// \param a First value.
  /// \param b Second value.
  /// \return The larger values.
  static SGL_DEVICE bf16x2_t max(bf16x2_t a, bf16x2_t b) { return __hmax2(a, b); }
  /// \brief Elementwise minimum.
  /// \param a First value.
  /// \param b Second value.
  /// \return The smaller values.
  static SGL_DEVICE bf16x2_t min(bf16x2_t a, bf16x2_t b) { return __hmin2(a, b); }
};

/// \brief Trait of the fixed-width integer types.
/// \tparam T An integral type.
template <typename T>
  requires std::is_integral_v<T>
struct DTypeTrait<T> {
  using unpacked_t = T;                    ///< Element type.
  using packed_t = T;                      ///< No packed form: itself.
  static constexpr uint32_t kVecSize = 1;  ///< Elements per value.
  static constexpr float kFloatMax = static_cast<float>(std::numeric_limits<T>::max());  ///< Largest value.

  /// \brief Convert by `static_cast`.
  /// \tparam U Source type.
  /// \param x Value.
  /// \return The converted value.
  template <typename U>
  static SGL_DEVICE T from(U x) {
    return static_cast<T>(x);
  }
  /// \brief Absolute value.
  /// \param x Value.
  /// \return |x|.
  static SGL_DEVICE T abs(T x) {
    if constexpr (std::is_signed_v<T>) {
      return x < 0 ? static_cast<T>(-x) : x;
    } else {
      return x;
    }
  }
  /// \brief Maximum.
  /// \param a First value.
  /// \param b Second value.
  /// \return The larger value.
  static SGL_DEVICE T max(T a, T b) { return a < b ? b : a; }
  /// \brief Minimum.
  /// \param a First value.
  /// \param b Second value.
  /// \return The smaller value.
  static SGL_DEVICE T min(T a, T b) { return b < a ? b : a; }
};

/// \brief The two-element packed type of `T` (`packed_t<fp16_t>` is `fp16x2_t`).
/// \tparam T Element type.
template <typename T>
using packed_t = typename DTypeTrait<T>::packed_t;

namespace device {

/// \brief Convert through `DTypeTrait<To>::from`, e.g. `cast<fp32x2_t, fp16x2_t>(v)`.
/// \tparam To Target type.
/// \tparam From Source type.
/// \param value Value to convert.
/// \return The converted value.
template <typename To, typename From>
SGL_DEVICE To cast(const From& value) {
  if constexpr (std::is_same_v<To, From>) {
    return value;
  } else if constexpr (requires { DTypeTrait<To>::from(value); }) {
    return DTypeTrait<To>::from(value);
  } else {
    // no direct conversion: go through fp32
    return DTypeTrait<To>::from(DTypeTrait<fp32_t>::from(value));
  }
}

/// \brief View a packed value as an array of its elements; writes go back to `value`.
/// \tparam T A packed type (e.g. fp32x2_t).
/// \param value The packed value.
/// \return A reference to `unpacked_t[kVecSize]` aliasing `value`.
template <typename T>
SGL_DEVICE auto unpack(T& value) -> typename DTypeTrait<T>::unpacked_t (&)[DTypeTrait<T>::kVecSize] {
  using E = typename DTypeTrait<T>::unpacked_t;
  static_assert(sizeof(T) == sizeof(E) * DTypeTrait<T>::kVecSize, "unpack: layout mismatch");
  return *reinterpret_cast<E(*)[DTypeTrait<T>::kVecSize]>(&value);
}

/// \brief The binary reductions `warp::reduce` and `ReductionTrait` understand.
enum class ReductionOp : uint32_t {
  SUM,  ///< a + b
  MAX,  ///< max(a, b)
  MIN,  ///< min(a, b)
};

/// \brief One reduction step of `Op` on `T`; packed types reduce elementwise.
/// \tparam Op The reduction.
/// \tparam T Value type (scalar or packed).
template <ReductionOp Op, typename T>
struct ReductionTrait {
  /// \brief Combine two values.
  /// \param a First value.
  /// \param b Second value.
  /// \return `Op(a, b)`.
  static SGL_DEVICE T reduce(T a, T b) {
    if constexpr (DTypeTrait<T>::kVecSize > 1) {
      using E = typename DTypeTrait<T>::unpacked_t;
      auto& ea = unpack(a);
      auto& eb = unpack(b);
#pragma unroll
      for (int i = 0; i < static_cast<int>(DTypeTrait<T>::kVecSize); ++i) {
        ea[i] = ReductionTrait<Op, E>::reduce(ea[i], eb[i]);
      }
      return a;
    } else if constexpr (Op == ReductionOp::SUM) {
      return a + b;
    } else if constexpr (Op == ReductionOp::MAX) {
      return DTypeTrait<T>::max(a, b);
    } else {
      return DTypeTrait<T>::min(a, b);
    }
  }
};

}  // namespace device

}  // namespace sglang
