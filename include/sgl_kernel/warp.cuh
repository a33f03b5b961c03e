/// \file warp.cuh
/// \brief Warp-level primitives: reductions, broadcast and cooperative row copies.
#pragma once

#include <sgl_kernel/bits.h>
#include <sgl_kernel/type.cuh>
#include <sgl_kernel/utils.cuh>
#include <sgl_kernel/vec.cuh>

#include <cstdint>
#include <cstring>

namespace sglang::device {

/// \brief Access-width policies for `warp::load_bytes` / `warp::store_bytes`.
///
/// A negative pattern (`WARP_UNIFORM_*`) says the whole warp splits the row: the width is the
/// widest power of two up to `|pattern|` that divides the row and still gives every lane at
/// least one vector (never below the 4-byte fallback, `gcd(kBytes, 4)`). A positive pattern
/// (a `LoadStoreBytes` value) only caps the width at `gcd(kBytes, pattern)`.
struct LoadStorePattern {
  static constexpr int32_t WARP_UNIFORM_4B = -4;    ///< Split the row, at most 4-byte vectors.
  static constexpr int32_t WARP_UNIFORM_8B = -8;    ///< Split the row, at most 8-byte vectors.
  static constexpr int32_t WARP_UNIFORM_16B = -16;  ///< Split the row, at most 16-byte vectors.
  static constexpr int32_t WARP_UNIFORM_32B = -32;  ///< Split the row, at most 32-byte vectors.
  static constexpr int32_t WARP_UNIFORM_SMEM = -16; ///< Split the row, shared-memory widest.
  static constexpr int32_t WARP_UNIFORM_GMEM = -static_cast<int32_t>(kMaxVecBytes);  ///< Split, global widest.

  /// \brief The vector width (bytes) a warp uses to move a `kBytes` row under `kPattern`.
  ///
  /// Callable from host code, so a launcher feeds exactly this value to `ensure_alignment`.
  /// \tparam kBytes Row size in bytes (any positive value).
  /// \tparam kPattern A `LoadStorePattern` constant or a positive `LoadStoreBytes` cap.
  /// \return The width in bytes, a power of two dividing `kBytes`.
  template <uint32_t kBytes, int32_t kPattern>
  static SGL_DEVICE_HOST constexpr uint32_t get_vec_bytes() {
    static_assert(kBytes > 0, "get_vec_bytes: empty row");
    static_assert(kPattern != 0, "get_vec_bytes: pattern 0");
    constexpr uint64_t cap = static_cast<uint64_t>(kPattern < 0 ? -kPattern : kPattern);
    static_assert(host::is_pow2(cap) && cap <= 32, "get_vec_bytes: width must be a power of two <= 32");
    if constexpr (kPattern > 0) {
      return static_cast<uint32_t>(host::gcd(kBytes, cap));
    } else {
      uint64_t w = host::gcd(kBytes, cap);
      while (w > 4 && kBytes / w < kWarpThreads) w /= 2;
      return static_cast<uint32_t>(w < 4 ? host::gcd(kBytes, 4) : w);
    }
  }
};

namespace warp {

/// \brief All 32 lanes.
inline constexpr uint32_t kFullMask = 0xffffffffu;
/// \brief The hardware warp width (32 on CUDA).
inline constexpr uint32_t kFullWidth = 32;

/// \brief This lane's index within the warp (or within groups of `kWidth` lanes).
/// \tparam kWidth Group width, a power of two <= 32.
/// \return The lane index.
template <uint32_t kWidth = kFullWidth>
SGL_DEVICE uint32_t get_lane_id() {
  return device::get_lane_id<kWidth>();
}

/// \brief `__shfl_xor_sync` for any trivially copyable type of 2, 4 or a multiple of 4 bytes.
/// \tparam T Value type.
/// \param value This lane's value.
/// \param lane_mask XOR applied to the lane index.
/// \param mask Participating lanes.
/// \return The value held by lane `lane ^ lane_mask`.
template <typename T>
SGL_DEVICE T shfl_xor(const T& value, uint32_t lane_mask, uint32_t mask = kFullMask) {
  static_assert(sizeof(T) == 2 || sizeof(T) % 4 == 0, "shfl_xor: unsupported size");
  if constexpr (sizeof(T) == 2) {
    uint16_t bits;
    memcpy(&bits, &value, 2);
    bits = static_cast<uint16_t>(__shfl_xor_sync(mask, static_cast<uint32_t>(bits), lane_mask));
    T out;
    memcpy(&out, &bits, 2);
    return out;
  } else {
    uint32_t words[sizeof(T) / 4];
    memcpy(words, &value, sizeof(T));
#pragma unroll
    for (int i = 0; i < static_cast<int>(sizeof(T) / 4); ++i) words[i] = __shfl_xor_sync(mask, words[i], lane_mask);
    T out;
    memcpy(&out, words, sizeof(T));
    return out;
  }
}

/// \brief Read `value` from lane `src_lane` of this thread's `kWidth`-lane segment.
/// \tparam kWidth Segment width, a power of two <= 32.
/// \tparam T Value type (2, 4 or a multiple of 4 bytes).
/// \param value This lane's value.
/// \param src_lane Source lane, relative to the segment.
/// \param mask Participating lanes.
/// \return The source lane's value.
template <uint32_t kWidth = kFullWidth, typename T>
SGL_DEVICE T broadcast(const T& value, uint32_t src_lane, uint32_t mask = kFullMask) {
  static_assert(host::is_pow2(kWidth) && kWidth <= kFullWidth, "broadcast: bad width");
  static_assert(sizeof(T) == 2 || sizeof(T) % 4 == 0, "broadcast: unsupported size");
  if constexpr (sizeof(T) == 2) {
    uint16_t bits;
    memcpy(&bits, &value, 2);
    bits = static_cast<uint16_t>(__shfl_sync(mask, static_cast<uint32_t>(bits), src_lane, kWidth));
    T out;
    memcpy(&out, &bits, 2);
    return out;
  } else {
    uint32_t words[sizeof(T) / 4];
    memcpy(words, &value, sizeof(T));
#pragma unroll
    for (int i = 0; i < static_cast<int>(sizeof(T) / 4); ++i) words[i] = __shfl_sync(mask, words[i], src_lane, kWidth);
    T out;
    memcpy(&out, words, sizeof(T));
    return out;
  }
}

/// \brief Butterfly reduction over the lane-index bits between `kStart` and `kFinish`.
///
/// `<N, 1>` reduces within contiguous groups of `N` lanes; `<kFullWidth, N>` reduces across
/// groups, combining lanes at the same offset. `<A, B>` and `<B, A>` are the same reduction.
/// Every lane gets the result.
/// \tparam Op The reduction.
/// \tparam kStart One bound of the lane range, a power of two <= 32.
/// \tparam kFinish The other bound, a power of two <= 32.
/// \tparam T Value type with a `ReductionTrait`.
/// \param value This lane's value.
/// \param active_mask Participating lanes.
/// \return The reduced value.
template <ReductionOp Op, uint32_t kStart = kFullWidth, uint32_t kFinish = 1, typename T>
SGL_DEVICE T reduce(T value, uint32_t active_mask = kFullMask) {
  static_assert(host::is_pow2(kStart) && host::is_pow2(kFinish), "reduce: bounds must be powers of two");
  static_assert(kStart <= kFullWidth && kFinish <= kFullWidth, "reduce: bounds must be <= 32");
  constexpr uint32_t kHi = kStart > kFinish ? kStart : kFinish;
  constexpr uint32_t kLo = kStart > kFinish ? kFinish : kStart;
#pragma unroll
  for (uint32_t offset = kHi / 2; offset >= kLo && offset > 0; offset /= 2) {
    value = ReductionTrait<Op, T>::reduce(value, shfl_xor(value, offset, active_mask));
  }
  return value;
}

/// \brief Sum over lanes; see `reduce`.
/// \tparam kStart One bound of the lane range.
/// \tparam kFinish The other bound.
/// \tparam T Value type.
/// \param value This lane's value.
/// \return The sum.
template <uint32_t kStart = kFullWidth, uint32_t kFinish = 1, typename T>
SGL_DEVICE T reduce_sum(T value) {
  return reduce<ReductionOp::SUM, kStart, kFinish>(value);
}

/// \brief Maximum over lanes; see `reduce`.
/// \tparam kStart One bound of the lane range.
/// \tparam kFinish The other bound.
/// \tparam T Value type.
/// \param value This lane's value.
/// \return The maximum.
template <uint32_t kStart = kFullWidth, uint32_t kFinish = 1, typename T>
SGL_DEVICE T reduce_max(T value) {
  return reduce<ReductionOp::MAX, kStart, kFinish>(value);
}

/// \brief Minimum over lanes; see `reduce`.
/// \tparam kStart One bound of the lane range.
/// \tparam kFinish The other bound.
/// \tparam T Value type.
/// \param value This lane's value.
/// \return The minimum.
template <uint32_t kStart = kFullWidth, uint32_t kFinish = 1, typename T>
SGL_DEVICE T reduce_min(T value) {
  return reduce<ReductionOp::MIN, kStart, kFinish>(value);
}

/// \brief One lane's share of a `kBytes` row moved by a whole warp (opaque; pass it back to
/// `store_bytes` with the same template arguments).
/// \tparam kBytes Row size in bytes.
/// \tparam kPattern Width policy (`LoadStorePattern` or `LoadStoreBytes`).
template <uint32_t kBytes, int32_t kPattern>
struct RowFragment {
  static constexpr uint32_t kVecBytes = LoadStorePattern::get_vec_bytes<kBytes, kPattern>();  ///< Access width.
  static constexpr uint32_t kNumVecs = kBytes / kVecBytes;                                     ///< Vectors per row.
  static constexpr uint32_t kIters = (kNumVecs + kFullWidth - 1) / kFullWidth;                 ///< Vectors per lane.
  using vec_t = AlignedVector<uint8_t, static_cast<int>(kVecBytes)>;                          ///< One access.
  vec_t vecs[kIters];  ///< This lane's vectors.
};

/// \brief The whole warp loads one contiguous `kBytes` row; every lane calls it.
/// \tparam kBytes Row size in bytes.
/// \tparam kPattern Width policy; the launcher must `ensure_alignment(get_vec_bytes<...>())`.
/// \param src Row start, aligned to the chosen width.
/// \return This lane's fragment.
template <uint32_t kBytes, int32_t kPattern = LoadStorePattern::WARP_UNIFORM_16B>
SGL_DEVICE RowFragment<kBytes, kPattern> load_bytes(const void* src) {
  using F = RowFragment<kBytes, kPattern>;
  F frag;
  const uint32_t lane = get_lane_id<kFullWidth>();
#pragma unroll
  for (int i = 0; i < static_cast<int>(F::kIters); ++i) {
    const uint32_t idx = lane + static_cast<uint32_t>(i) * kFullWidth;
    if (F::kNumVecs % kFullWidth == 0 || idx < F::kNumVecs) frag.vecs[i].load(src, idx);
  }
  return frag;
}

/// \brief The whole warp stores one contiguous `kBytes` row loaded by `load_bytes`.
/// \tparam kBytes Row size in bytes (same as the load).
/// \tparam kPattern Width policy (same as the load).
/// \param dst Row start, aligned to the chosen width.
/// \param frag This lane's fragment.
template <uint32_t kBytes, int32_t kPattern = LoadStorePattern::WARP_UNIFORM_16B>
SGL_DEVICE void store_bytes(void* dst, const RowFragment<kBytes, kPattern>& frag) {
  using F = RowFragment<kBytes, kPattern>;
  const uint32_t lane = get_lane_id<kFullWidth>();
#pragma unroll
  for (int i = 0; i < static_cast<int>(F::kIters); ++i) {
    const uint32_t idx = lane + static_cast<uint32_t>(i) * kFullWidth;
    if (F::kNumVecs % kFullWidth == 0 || idx < F::kNumVecs) frag.vecs[i].store(dst, idx);
  }
}

}  // namespace warp

}  // namespace sglang::device
