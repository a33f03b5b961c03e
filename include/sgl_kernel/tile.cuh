/// \file tile.cuh
/// \brief `tile::Memory<T>`: a 1-D cooperative accessor over a contiguous region.
#pragma once

#include <sgl_kernel/utils.cuh>

#include <cstdint>

namespace sglang::device::tile {

/// \brief Thread `tid` of a group of `tsize` threads touches elements `tid + k * tsize`.
/// \tparam T Element type (a scalar or an `AlignedVector`).
template <typename T>
struct Memory {
  uint32_t tid;    ///< This thread's index in the group.
  uint32_t tsize;  ///< Group size (the stride between one thread's elements).

  /// \brief The whole CTA: `tid = threadIdx.x`, stride `block_size`.
  /// \param block_size Threads cooperating (normally `blockDim.x`).
  /// \return The accessor.
  static SGL_DEVICE Memory cta(uint32_t block_size) { return Memory{threadIdx.x, block_size}; }

  /// \brief One warp: `tid` is the lane id, stride 32.
  /// \return The accessor.
  static SGL_DEVICE Memory warp() { return Memory{get_lane_id<kWarpThreads>(), kWarpThreads}; }

  /// \brief A single thread, no cooperation.
  /// \return The accessor.
  static SGL_DEVICE Memory thread() { return Memory{0, 1}; }

  /// \brief Load element `tid + offset * tsize` of `ptr`.
  /// \param ptr Base of the region.
  /// \param offset This thread's iteration number.
  /// \return The element.
  SGL_DEVICE T load(const void* ptr, int64_t offset = 0) const {
    return static_cast<const T*>(ptr)[tid + offset * tsize];
  }

  /// \brief Store element `tid + offset * tsize` of `ptr`.
  /// \param ptr Base of the region.
  /// \param value The element.
  /// \param offset This thread's iteration number.
  SGL_DEVICE void store(void* ptr, const T& value, int64_t offset = 0) const {
    static_cast<T*>(ptr)[tid + offset * tsize] = value;
  }

  /// \brief Whether element `tid + offset * tsize` lies inside `[0, n)`.
  /// \param n Number of elements in the region.
  /// \param offset This thread's iteration number.
  /// \return True when in bounds.
  SGL_DEVICE bool in_bound(int64_t n, int64_t offset = 0) const { return tid + offset * tsize < n; }
};

}  // namespace sglang::device::tile
