/// \file store_cache.cuh
/// \brief Scatter k/v rows into a paged KV cache: `k_cache[indices[t]] = k[t]` (and v),
/// vectorized warp row copies; the number of warps per row is a template argument.
#pragma once

#include <sgl_kernel/tensor.h>
#include <sgl_kernel/type.cuh>
#include <sgl_kernel/utils.cuh>
#include <sgl_kernel/utils.h>
#include <sgl_kernel/warp.cuh>

#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>

#include <cstdint>

namespace sglang {

/// \brief Arguments of `store_cache_kernel` (by value).
/// \tparam TIndex Index type (int32_t or int64_t).
template <typename TIndex>
struct StoreCacheParams {
  void* k_cache;                     ///< Key cache rows
  void* v_cache;                     ///< Value cache rows
  const void* __restrict__ k;        ///< New key rows
  const void* __restrict__ v;        ///< New value rows
  const TIndex* __restrict__ indices;  ///< Destination slot of each token; out-of-range slots are skipped
  int64_t k_stride_bytes;            ///< Bytes between rows of `k`
  int64_t v_stride_bytes;            ///< Bytes between rows of `v`
  int64_t k_cache_stride_bytes;      ///< Bytes between rows of `k_cache`
  int64_t v_cache_stride_bytes;      ///< Bytes between rows of `v_cache`
  int64_t num_tokens;                ///< Number of rows to store
  int64_t num_slots;                 ///< Rows in each cache
};

/// \brief The row-copy pattern of `store_cache_kernel`.
inline constexpr int32_t kStoreCachePattern = device::LoadStorePattern::WARP_UNIFORM_16B;
/// \brief Threads per block of `store_cache_kernel`.
inline constexpr uint32_t kStoreCacheBlockSize = 256;

/**
 * \brief The access width (bytes) used to copy one warp's share of a row.
 *
 * \tparam kRowBytes Bytes per row
 * \tparam kNumSplit Warps per row (divides the row)
 * \return The width; launchers pass it to `ensure_alignment`
 */
template <uint32_t kRowBytes, uint32_t kNumSplit>
SGL_DEVICE_HOST constexpr uint32_t store_cache_vec_bytes() {
  static_assert(kRowBytes % kNumSplit == 0, "store_cache: the split must divide the row");
  return device::LoadStorePattern::get_vec_bytes<kRowBytes / kNumSplit, kStoreCachePattern>();
}

/**
 * \brief `kNumSplit` warps per token copy its k and v rows into the cache slot `indices[t]`.
 *
 * \tparam kRowBytes Bytes per row
 * \tparam kNumSplit Warps per row
 * \tparam TIndex    Index type
 * \tparam kUsePDL   Whether the kernel is launched with PDL
 * \param params     Pointers, strides and sizes
 */
template <uint32_t kRowBytes, uint32_t kNumSplit, typename TIndex, bool kUsePDL>
__global__ void store_cache_kernel(const StoreCacheParams<TIndex> params) {
  constexpr uint32_t kSplitBytes = kRowBytes / kNumSplit;
  constexpr int64_t kWarpsPerBlock = kStoreCacheBlockSize / device::kWarpThreads;
  const int64_t warp = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / device::kWarpThreads;
  const int64_t token = warp / kNumSplit;
  const int64_t split_offset = (warp - token * kNumSplit) * kSplitBytes;
  if (token < params.num_tokens) {
    const void* k_src = device::pointer::offset(params.k, token * params.k_stride_bytes, split_offset);
    const void* v_src = device::pointer::offset(params.v, token * params.v_stride_bytes, split_offset);

    device::PDLWaitPrimary<kUsePDL>();

    const int64_t slot = static_cast<int64_t>(params.indices[token]);
    if (slot >= 0 && slot < params.num_slots) {
      void* k_dst = device::pointer::offset(params.k_cache, slot * params.k_cache_stride_bytes, split_offset);
      void* v_dst = device::pointer::offset(params.v_cache, slot * params.v_cache_stride_bytes, split_offset);
      const auto k_row = device::warp::load_bytes<kSplitBytes, kStoreCachePattern>(k_src);
      const auto v_row = device::warp::load_bytes<kSplitBytes, kStoreCachePattern>(v_src);
      device::warp::store_bytes<kSplitBytes, kStoreCachePattern>(k_dst, k_row);
      device::warp::store_bytes<kSplitBytes, kStoreCachePattern>(v_dst, v_row);
    }
  }
  device::PDLTriggerSecondary<kUsePDL>();
}

/**
 * \brief Validates the tensors and launches `store_cache_kernel`.
 *
 * \tparam T         Element type of k, v and the caches (any 1-, 2- or 4-byte type)
 * \tparam kRowSize  Elements per row
 * \tparam kNumSplit Warps per row, chosen by the Python wrapper
 * \tparam TIndex    Index type: int32_t | int64_t
 * \tparam kUsePDL   Whether to launch with PDL
 * \param k          New keys `[tokens, row]`, unit inner stride
 * \param v          New values `[tokens, row]`, unit inner stride
 * \param k_cache    Key cache `[slots, row]`, unit inner stride, any row stride
 * \param v_cache    Value cache `[slots, row]`, unit inner stride, any row stride
 * \param indices    Destination slots `[tokens]`
 */
template <typename T, uint32_t kRowSize, uint32_t kNumSplit, typename TIndex, bool kUsePDL>
void store_cache(tvm::ffi::TensorView k, tvm::ffi::TensorView v, tvm::ffi::TensorView k_cache,
                 tvm::ffi::TensorView v_cache, tvm::ffi::TensorView indices) {
  using namespace host;
  constexpr uint32_t kRowBytes = kRowSize * static_cast<uint32_t>(sizeof(T));
  constexpr int64_t kVecBytes = store_cache_vec_bytes<kRowBytes, kNumSplit>();
  SymbolicSize N{"num_tokens"};
  SymbolicSize S{"num_slots"};
  SymbolicSize Sk{"k_row_stride"};
  SymbolicSize Sv{"v_row_stride"};
  SymbolicSize Skc{"k_cache_row_stride"};
  SymbolicSize Svc{"v_cache_row_stride"};
  SymbolicDevice device;
  device.set_options<kDLCUDA>();
  const int64_t row = kRowSize;
  TensorMatcher({N, row})  //
      .with_strides({Sk, 1})
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .ensure_alignment(kVecBytes)
      .verify(k, "k");
  TensorMatcher({N, row})  //
      .with_strides({Sv, 1})
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .ensure_alignment(kVecBytes)
      .verify(v, "v");
  TensorMatcher({S, row})  //
      .with_strides({Skc, 1})
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .ensure_alignment(kVecBytes)
      .verify(k_cache, "k_cache");
  TensorMatcher({S, row})  //
      .with_strides({Svc, 1})
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .ensure_alignment(kVecBytes)
      .verify(v_cache, "v_cache");
  TensorMatcher({N})  //
      .with_device<kDLCUDA>(device)
      .with_dtype<TIndex>()
      .ensure_alignment(static_cast<int64_t>(sizeof(TIndex)))
      .verify(indices, "indices");

  constexpr int64_t kElem = sizeof(T);
  const StoreCacheParams<TIndex> params{
      k_cache.data_ptr(),
      v_cache.data_ptr(),
      k.data_ptr(),
      v.data_ptr(),
      static_cast<const TIndex*>(indices.data_ptr()),
      Sk.unwrap() * kElem,
      Sv.unwrap() * kElem,
      Skc.unwrap() * kElem,
      Svc.unwrap() * kElem,
      N.unwrap(),
      S.unwrap(),
  };
  constexpr int64_t kWarpsPerBlock = kStoreCacheBlockSize / device::kWarpThreads;
  const int64_t blocks = div_ceil(params.num_tokens * kNumSplit, kWarpsPerBlock);
  CHECK_HOST(blocks < (int64_t{1} << 31)) << "store_cache: too many tokens (" << params.num_tokens << ")";
  LaunchKernel(static_cast<uint32_t>(blocks), kStoreCacheBlockSize, device.unwrap())
      .enable_pdl(kUsePDL)(store_cache_kernel<kRowBytes, kNumSplit, TIndex, kUsePDL>, params);
}

}  // namespace sglang
