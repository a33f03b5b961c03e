/// \file vec.cuh
/// \brief `AlignedVector<T, N>` for vectorized global/shared memory access.
#pragma once

#include <sgl_kernel/bits.h>
#include <sgl_kernel/utils.cuh>

#include <cstdint>

namespace sglang::device {

/// \brief Named access widths in bytes, to pass around instead of bare integers.
enum LoadStoreBytes : int32_t {
  RAW_1B = 1,                                        ///< 1 byte.
  RAW_2B = 2,                                        ///< 2 bytes.
  RAW_4B = 4,                                        ///< 4 bytes.
  RAW_8B = 8,                                        ///< 8 bytes.
  RAW_16B = 16,                                      ///< 16 bytes (128-bit).
  RAW_32B = 32,                                      ///< 32 bytes (256-bit, sm_100+ global memory).
  MIN_COALESCED = 4,                                 ///< Narrowest width that still coalesces well.
  MIN_COALALESCED = 4,                               ///< Alias of MIN_COALESCED (historical spelling).
  MAX_PORTABLE = 16,                                 ///< Widest width safe everywhere.
  MAX_SMEM = 16,                                     ///< Widest shared-memory access.
  MAX_GMEM = static_cast<int32_t>(kMaxVecBytes),     ///< Widest global access for the target.
};

/// \brief `N` elements of `T` aligned to their total size, loaded and stored in one access.
/// \tparam T Element type.
/// \tparam N Number of elements: a power of two with `sizeof(T) * N <= 32`.
template <typename T, int N>
struct alignas(sizeof(T) * N) AlignedVector {
  static_assert(N > 0 && host::is_pow2(static_cast<uint64_t>(N)), "AlignedVector: N must be a power of two");
  static_assert(sizeof(T) * N <= 32, "AlignedVector: at most 32 bytes (256 bits)");
  static constexpr int32_t kSize = N;                             ///< Number of elements.
  static constexpr uint32_t kBytes = sizeof(T) * N;            ///< Size in bytes.
  using element_t = T;                                         ///< Element type.

  T data[N];  ///< The elements.

  /// \brief Load vector number `offset` from `ptr` (address `ptr + offset * kBytes`).
  /// \param ptr Base pointer, aligned to `kBytes`.
  /// \param offset Index in units of whole vectors.
  SGL_DEVICE void load(const void* ptr, int64_t offset = 0) {
    *this = static_cast<const AlignedVector*>(ptr)[offset];
  }

  /// \brief Store to vector number `offset` of `ptr`.
  /// \param ptr Base pointer, aligned to `kBytes`.
  /// \param offset Index in units of whole vectors.
  SGL_DEVICE void store(void* ptr, int64_t offset = 0) const { static_cast<AlignedVector*>(ptr)[offset] = *this; }

  /// \brief Set every element to `value`.
  /// \param value The fill value.
  SGL_DEVICE void fill(const T& value) {
#pragma unroll
    for (int i = 0; i < N; ++i) data[i] = value;
  }

  /// \brief Element access.
  /// \param i Index in `[0, N)`.
  /// \return A reference to element `i`.
  SGL_DEVICE T& operator[](int32_t i) { return data[i]; }

  /// \brief Element access.
  /// \param i Index in `[0, N)`.
  /// \return A const reference to element `i`.
  SGL_DEVICE const T& operator[](int32_t i) const { return data[i]; }
};

}  // namespace sglang::device
