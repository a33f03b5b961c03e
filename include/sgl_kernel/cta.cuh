/// \file cta.cuh
/// \brief CTA-wide reductions through shared memory and warp shuffles.
#pragma once

#include <sgl_kernel/warp.cuh>

#include <cstdint>

namespace sglang::device::cta {

/// \brief CTA-wide reduction of `Op`; the result lands in `smem[0]`.
///
/// Every thread of the block must call it. `smem` needs one slot per warp (at most 32).
/// Call `__syncthreads()` before reading `smem[0]`, and before reusing `smem`.
/// \tparam Op The reduction.
/// \tparam T Value type.
/// \param value This thread's value.
/// \param smem Shared scratch, at least `blockDim.x / 32` elements.
/// \param identity The reduction's identity (0 for SUM, the lowest value for MAX).
template <ReductionOp Op, typename T>
SGL_DEVICE void reduce(T value, T* smem, T identity) {
  const uint32_t lane = get_lane_id<kWarpThreads>();
  const uint32_t warp_id = threadIdx.x / kWarpThreads;
  const uint32_t num_warps = (blockDim.x + kWarpThreads - 1) / kWarpThreads;
  value = warp::reduce<Op>(value);
  if (lane == 0) smem[warp_id] = value;
  __syncthreads();
  if (warp_id == 0) {
    value = lane < num_warps ? smem[lane] : identity;
    value = warp::reduce<Op>(value);
    if (lane == 0) smem[0] = value;
  }
}

/// \brief CTA-wide maximum into `smem[0]`; see `reduce`.
/// \tparam T Value type.
/// \param value This thread's value.
/// \param smem Shared scratch, one slot per warp.
/// \param min_value The identity (lowest possible value).
template <typename T>
SGL_DEVICE void reduce_max(T value, T* smem, T min_value) {
  reduce<ReductionOp::MAX>(value, smem, min_value);
}

/// \brief CTA-wide sum into `smem[0]`; see `reduce`.
/// \tparam T Value type.
/// \param value This thread's value.
/// \param smem Shared scratch, one slot per warp.
template <typename T>
SGL_DEVICE void reduce_sum(T value, T* smem) {
  reduce<ReductionOp::SUM>(value, smem, T{});
}

}  // namespace sglang::device::cta
