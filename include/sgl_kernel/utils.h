/// \file utils.h
/// \brief Host-side utilities: stream-style checks, panics, integer helpers, byte pointers.
#pragma once

#include <tvm/ffi/error.h>

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

#ifdef __CUDACC__
/// \brief Marks a device function: inlined, device only.
#define SGL_DEVICE __forceinline__ __device__
/// \brief Marks a helper callable from both device and host code.
#define SGL_DEVICE_HOST __forceinline__ __device__ __host__
#else
#define SGL_DEVICE inline
#define SGL_DEVICE_HOST inline
#endif

namespace sglang::host {

/// \brief The exception every failed check throws; Python sees a RuntimeError.
class PanicError : public tvm::ffi::Error {
 public:
  /// \brief Build a panic carrying `message`.
  /// \param message The full, human-readable failure description.
  explicit PanicError(std::string message) : tvm::ffi::Error("RuntimeError", std::move(message), "") {}
};

/// \brief Accumulates the message of a failed CHECK_HOST / CHECK_CUDA; built only on failure.
class PanicBuilder {
 public:
  /// \brief Start a message naming the failed check and its location.
  /// \param file Source file of the check.
  /// \param line Source line of the check.
  /// \param what The failed check, as written.
  PanicBuilder(const char* file, int64_t line, const char* what) {
    stream_ << what << " failed at " << file << ":" << line;
  }

  /// \brief Append a streamed value to the message.
  /// \tparam T Streamable type.
  /// \param value The value.
  /// \return This builder.
  template <typename T>
  PanicBuilder& operator<<(const T& value) {
    if (!has_message_) {
      stream_ << ": ";
      has_message_ = true;
    }
    stream_ << value;
    return *this;
  }

  /// \brief Throw the accumulated message as a `PanicError`.
  [[noreturn]] void raise() const { throw PanicError(stream_.str()); }

 private:
  std::ostringstream stream_;
  bool has_message_ = false;
};

/// \brief Turns `PanicThrower() & builder << ...` into a throw (`&` binds looser than `<<`).
struct PanicThrower {
  /// \brief Throw the builder's message.
  /// \param builder The finished message.
  [[noreturn]] void operator&(const PanicBuilder& builder) const { builder.raise(); }
};

namespace details {

template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

}  // namespace details

/// \brief Throw a `PanicError` whose message is the concatenation of `args`.
/// \tparam Args Streamable argument types.
/// \param args Message pieces, streamed in order.
template <typename... Args>
[[noreturn]] inline void Panic(const Args&... args) {
  throw PanicError(details::concat("Panic: ", args...));
}

/// \brief Function-style check: throw a `PanicError` built from `args` unless `cond` holds.
///
/// The message arguments are evaluated even when the check passes; prefer CHECK_HOST.
/// \tparam Args Streamable argument types.
/// \param cond The condition that must hold.
/// \param args Message pieces, streamed in order on failure.
template <typename... Args>
inline void RuntimeCheck(bool cond, const Args&... args) {
  if (!cond) throw PanicError(details::concat("RuntimeCheck failed: ", args...));
}

/// \brief Integer ceiling division `(a + b - 1) / b`.
/// \tparam T Dividend type.
/// \tparam U Divisor type.
/// \param a Dividend (non-negative).
/// \param b Divisor (positive).
/// \return The quotient rounded up, in the common type of `T` and `U`.
template <typename T, typename U>
SGL_DEVICE_HOST constexpr auto div_ceil(T a, U b) -> std::common_type_t<T, U> {
  using R = std::common_type_t<T, U>;
  return (static_cast<R>(a) + static_cast<R>(b) - 1) / static_cast<R>(b);
}

/// \brief A half-open integer range `[begin, end)` usable in range-for loops.
/// \tparam T Integer type of the range.
template <typename T>
struct IntRange {
  /// \brief Iterator over the range's values.
  struct Iterator {
    T value;  ///< Current value.
    /// \brief The current value.
    /// \return The value.
    constexpr T operator*() const { return value; }
    /// \brief Advance by one.
    /// \return This iterator.
    constexpr Iterator& operator++() {
      ++value;
      return *this;
    }
    /// \brief Compare positions.
    /// \param other The other iterator.
    /// \return Whether the two differ.
    constexpr bool operator!=(const Iterator& other) const { return value != other.value; }
  };
  T first;  ///< First value.
  T last;   ///< One past the last value.
  /// \brief Start of the range.
  /// \return An iterator at `first`.
  constexpr Iterator begin() const { return {first}; }
  /// \brief End of the range.
  /// \return An iterator at `last`.
  constexpr Iterator end() const { return {last}; }
};

/// \brief The range `[0, n)`.
/// \tparam T Integer type.
/// \param n One past the last value.
/// \return The range.
template <typename T>
constexpr IntRange<T> irange(T n) {
  return {T{0}, n < T{0} ? T{0} : n};
}

/// \brief The range `[start, end)`.
/// \tparam T Integer type.
/// \param start First value.
/// \param end One past the last value.
/// \return The range (empty when `end <= start`).
template <typename T>
constexpr IntRange<T> irange(T start, T end) {
  return {start, end < start ? start : end};
}

namespace pointer {

/// \brief Pointer arithmetic: bytes for `void*`, elements for typed pointers.
/// \tparam T Pointee type (may be `void` or `const void`).
/// \tparam Offsets Integer types of the offsets.
/// \param ptr Base pointer.
/// \param offsets Offsets, summed.
/// \return `ptr` moved by the summed offsets, same pointer type.
template <typename T, typename... Offsets>
SGL_DEVICE_HOST T* offset(T* ptr, Offsets... offsets) {
  const int64_t total = (int64_t{0} + ... + static_cast<int64_t>(offsets));
  if constexpr (std::is_void_v<T>) {
    using Byte = std::conditional_t<std::is_const_v<T>, const char, char>;
    return static_cast<T*>(static_cast<Byte*>(ptr) + total);
  } else {
    return ptr + total;
  }
}

}  // namespace pointer

}  // namespace sglang::host

/// \brief Stream-style check: `CHECK_HOST(cond) << "context " << value;` throws a
/// `PanicError` with file/line when `cond` is false. The streamed message is only
/// evaluated on failure, so the true path costs one branch.
#define CHECK_HOST(cond)                             \
  (static_cast<bool>(cond))                          \
      ? (void)0                                      \
      : ::sglang::host::PanicThrower() &             \
            ::sglang::host::PanicBuilder(__FILE__, __LINE__, "CHECK_HOST(" #cond ")")
