/// \file rmsnorm.cuh
/// \brief RMSNorm and fused residual-add RMSNorm, one warp per row (small rows) or one CTA per
/// row (large rows). The hidden size and the variant are template arguments chosen in Python.
#pragma once

#include <sgl_kernel/bits.h>
#include <sgl_kernel/cta.cuh>
#include <sgl_kernel/math.cuh>
#include <sgl_kernel/runtime.cuh>
#include <sgl_kernel/tensor.h>
#include <sgl_kernel/type.cuh>
#include <sgl_kernel/utils.cuh>
#include <sgl_kernel/utils.h>
#include <sgl_kernel/vec.cuh>
#include <sgl_kernel/warp.cuh>

#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>

#include <cstdint>
#include <utility>

namespace sglang {

/// \brief The row-copy pattern of the warp variant.
inline constexpr int32_t kRMSNormWarpPattern = device::LoadStorePattern::WARP_UNIFORM_16B;
/// \brief Rows of at most this many bytes use the warp variant (the Python heuristic).
inline constexpr uint32_t kRMSNormWarpMaxBytes = 2048;

/**
 * \brief The vector width (bytes) the RMSNorm kernels use for a row of `kHiddenSize` elements.
 *
 * \tparam T           Element type
 * \tparam kHiddenSize Row length in elements
 * \tparam kUseCTA     CTA variant (else warp variant)
 * \return The access width in bytes; launchers pass it to `ensure_alignment`
 */
template <typename T, uint32_t kHiddenSize, bool kUseCTA>
SGL_DEVICE_HOST constexpr uint32_t rmsnorm_vec_bytes() {
  constexpr uint32_t kBytes = kHiddenSize * static_cast<uint32_t>(sizeof(T));
  if constexpr (kUseCTA) {
    return static_cast<uint32_t>(host::gcd(kBytes, 16));
  } else {
    return device::LoadStorePattern::get_vec_bytes<kBytes, kRMSNormWarpPattern>();
  }
}

/**
 * \brief Threads per block of the CTA variant: about four vectors per thread, 128 to 1024 threads.
 *
 * \tparam T           Element type
 * \tparam kHiddenSize Row length in elements
 * \return The block size
 */
template <typename T, uint32_t kHiddenSize>
SGL_DEVICE_HOST constexpr uint32_t rmsnorm_cta_threads() {
  constexpr uint32_t kNumVecs = kHiddenSize * static_cast<uint32_t>(sizeof(T)) / rmsnorm_vec_bytes<T, kHiddenSize, true>();
  constexpr uint64_t kWanted = host::round_up_pow2((kNumVecs + 3) / 4);
  return static_cast<uint32_t>(kWanted < 128 ? 128 : (kWanted > 1024 ? 1024 : kWanted));
}

namespace details {

template <typename T, typename Vec>
SGL_DEVICE T* elements_of(Vec& v) {
  return reinterpret_cast<T*>(&v);
}

template <typename T, typename Vec>
SGL_DEVICE const T* elements_of(const Vec& v) {
  return reinterpret_cast<const T*>(&v);
}

}  // namespace details

/**
 * \brief One warp normalizes one row held in registers: `dst = x * rsqrt(mean(x^2) + eps) * weight`.
 *
 * Every lane of the warp must call it. The whole row is read before any of it is written, so
 * `dst` may equal `src` (the pointers are not `__restrict__` here).
 * \tparam T           Element type: fp16_t | bf16_t | fp32_t
 * \tparam kHiddenSize Row length in elements
 * \param dst          Output row, aligned to `rmsnorm_vec_bytes<T, kHiddenSize, false>()`
 * \param src          Input row, same alignment
 * \param weight       Weight row, same alignment
 * \param eps          Epsilon added to the mean square
 */
template <typename T, uint32_t kHiddenSize>
SGL_DEVICE void warp_rmsnorm_row(T* dst, const T* src, const T* weight, float eps) {
  constexpr uint32_t kBytes = kHiddenSize * static_cast<uint32_t>(sizeof(T));
  using Frag = device::warp::RowFragment<kBytes, kRMSNormWarpPattern>;
  constexpr uint32_t kElems = Frag::kVecBytes / static_cast<uint32_t>(sizeof(T));
  static_assert(Frag::kVecBytes % sizeof(T) == 0, "warp_rmsnorm_row: vector narrower than an element");
  const uint32_t lane = device::get_lane_id<device::kWarpThreads>();

  auto x = device::warp::load_bytes<kBytes, kRMSNormWarpPattern>(src);
  const auto w = device::warp::load_bytes<kBytes, kRMSNormWarpPattern>(weight);
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < static_cast<int>(Frag::kIters); ++i) {
    if (lane + static_cast<uint32_t>(i) * device::kWarpThreads < Frag::kNumVecs) {
      const T* e = details::elements_of<T>(x.vecs[i]);
#pragma unroll
      for (int j = 0; j < static_cast<int>(kElems); ++j) {
        const float v = device::cast<fp32_t>(e[j]);
        sum += v * v;
      }
    }
  }
  sum = device::warp::reduce_sum(sum);
  const float rstd = device::math::rsqrt(sum / static_cast<float>(kHiddenSize) + eps);
#pragma unroll
  for (int i = 0; i < static_cast<int>(Frag::kIters); ++i) {
    T* e = details::elements_of<T>(x.vecs[i]);
    const T* we = details::elements_of<T>(w.vecs[i]);
#pragma unroll
    for (int j = 0; j < static_cast<int>(kElems); ++j) {
      e[j] = device::cast<T>(device::cast<fp32_t>(e[j]) * rstd * device::cast<fp32_t>(we[j]));
    }
  }
  device::warp::store_bytes<kBytes, kRMSNormWarpPattern>(dst, x);
}

/**
 * \brief One warp: `residual += input`, then `input = rmsnorm(residual) * weight`, in registers.
 *
 * Every lane of the warp must call it.
 * \tparam T           Element type: fp16_t | bf16_t | fp32_t
 * \tparam kHiddenSize Row length in elements
 * \param input        Input row; receives the normalized result
 * \param residual     Residual row; receives `input + residual` (rounded to `T`)
 * \param weight       Weight row
 * \param eps          Epsilon added to the mean square
 */
template <typename T, uint32_t kHiddenSize>
SGL_DEVICE void warp_fused_add_rmsnorm_row(T* input, T* residual, const T* weight, float eps) {
  constexpr uint32_t kBytes = kHiddenSize * static_cast<uint32_t>(sizeof(T));
  using Frag = device::warp::RowFragment<kBytes, kRMSNormWarpPattern>;
  constexpr uint32_t kElems = Frag::kVecBytes / static_cast<uint32_t>(sizeof(T));
  static_assert(Frag::kVecBytes % sizeof(T) == 0, "warp_fused_add_rmsnorm_row: vector narrower than an element");
  const uint32_t lane = device::get_lane_id<device::kWarpThreads>();

  auto x = device::warp::load_bytes<kBytes, kRMSNormWarpPattern>(input);
  const auto r = device::warp::load_bytes<kBytes, kRMSNormWarpPattern>(residual);
  const auto w = device::warp::load_bytes<kBytes, kRMSNormWarpPattern>(weight);
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < static_cast<int>(Frag::kIters); ++i) {
    T* e = details::elements_of<T>(x.vecs[i]);
    const T* re = details::elements_of<T>(r.vecs[i]);
    const bool valid = lane + static_cast<uint32_t>(i) * device::kWarpThreads < Frag::kNumVecs;
#pragma unroll
    for (int j = 0; j < static_cast<int>(kElems); ++j) {
      e[j] = device::cast<T>(device::cast<fp32_t>(e[j]) + device::cast<fp32_t>(re[j]));
      const float v = device::cast<fp32_t>(e[j]);
      sum += valid ? v * v : 0.0f;
    }
  }
  device::warp::store_bytes<kBytes, kRMSNormWarpPattern>(residual, x);
  sum = device::warp::reduce_sum(sum);
  const float rstd = device::math::rsqrt(sum / static_cast<float>(kHiddenSize) + eps);
#pragma unroll
  for (int i = 0; i < static_cast<int>(Frag::kIters); ++i) {
    T* e = details::elements_of<T>(x.vecs[i]);
    const T* we = details::elements_of<T>(w.vecs[i]);
#pragma unroll
    for (int j = 0; j < static_cast<int>(kElems); ++j) {
      e[j] = device::cast<T>(device::cast<fp32_t>(e[j]) * rstd * device::cast<fp32_t>(we[j]));
    }
  }
  device::warp::store_bytes<kBytes, kRMSNormWarpPattern>(input, x);
}

/// \brief Arguments of the RMSNorm kernels (by value).
/// \tparam T Element type.
template <typename T>
struct RMSNormParams {
  T* out;                          ///< Output rows (must not alias `input`)
  const T* __restrict__ input;     ///< Input rows
  const T* __restrict__ weight;    ///< Weight, one row
  int64_t out_stride;              ///< Output row stride in elements
  int64_t input_stride;            ///< Input row stride in elements
  int64_t num_rows;                ///< Number of rows
  float eps;                       ///< Epsilon
};

/// \brief Arguments of the fused add + RMSNorm kernels (by value).
/// \tparam T Element type.
template <typename T>
struct FusedAddRMSNormParams {
  T* input;                        ///< Input rows; receive the normalized result
  T* residual;                     ///< Residual rows; receive input + residual
  const T* __restrict__ weight;    ///< Weight, one row
  int64_t input_stride;            ///< Input row stride in elements
  int64_t residual_stride;         ///< Residual row stride in elements
  int64_t num_rows;                ///< Number of rows
  float eps;                       ///< Epsilon
};

/**
 * \brief Warp variant of RMSNorm: warps stride over the rows (persistent grid), one row at a time.
 *
 * \tparam T           Element type
 * \tparam kHiddenSize Row length in elements
 * \tparam kUsePDL     Whether the kernel is launched with PDL
 * \param params       Pointers, strides, row count and epsilon
 */
template <typename T, uint32_t kHiddenSize, bool kUsePDL>
__global__ void rmsnorm_warp_kernel(const RMSNormParams<T> params) {
  const int64_t warps_per_block = blockDim.x / device::kWarpThreads;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * warps_per_block + threadIdx.x / device::kWarpThreads;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * warps_per_block;
  device::PDLWaitPrimary<kUsePDL>();
  for (int64_t row = first; row < params.num_rows; row += stride) {
    warp_rmsnorm_row<T, kHiddenSize>(params.out + row * params.out_stride, params.input + row * params.input_stride,
                                     params.weight, params.eps);
  }
  device::PDLTriggerSecondary<kUsePDL>();
}

/**
 * \brief Warp variant of fused add + RMSNorm: warps stride over the rows (persistent grid).
 *
 * \tparam T           Element type
 * \tparam kHiddenSize Row length in elements
 * \tparam kUsePDL     Whether the kernel is launched with PDL
 * \param params       Pointers, strides, row count and epsilon
 */
template <typename T, uint32_t kHiddenSize, bool kUsePDL>
__global__ void fused_add_rmsnorm_warp_kernel(const FusedAddRMSNormParams<T> params) {
  const int64_t warps_per_block = blockDim.x / device::kWarpThreads;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * warps_per_block + threadIdx.x / device::kWarpThreads;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * warps_per_block;
  device::PDLWaitPrimary<kUsePDL>();
  for (int64_t row = first; row < params.num_rows; row += stride) {
    warp_fused_add_rmsnorm_row<T, kHiddenSize>(params.input + row * params.input_stride,
                                               params.residual + row * params.residual_stride, params.weight,
                                               params.eps);
  }
  device::PDLTriggerSecondary<kUsePDL>();
}

/**
 * \brief CTA variant of RMSNorm: one block per row, the row held in registers, a
 * shared-memory reduction for the mean square.
 *
 * \tparam T           Element type
 * \tparam kHiddenSize Row length in elements
 * \tparam kUsePDL     Whether the kernel is launched with PDL
 * \param params       Pointers, strides, row count and epsilon
 */
template <typename T, uint32_t kHiddenSize, bool kUsePDL>
__global__ void rmsnorm_cta_kernel(const RMSNormParams<T> params) {
  constexpr uint32_t kVecBytes = rmsnorm_vec_bytes<T, kHiddenSize, true>();
  constexpr int32_t kVecN = static_cast<int32_t>(kVecBytes / sizeof(T));
  constexpr uint32_t kNumVecs = kHiddenSize / kVecN;
  constexpr uint32_t kThreads = rmsnorm_cta_threads<T, kHiddenSize>();
  constexpr uint32_t kIters = (kNumVecs + kThreads - 1) / kThreads;
  using vec_t = device::AlignedVector<T, kVecN>;
  __shared__ float smem[device::kWarpThreads];

  const int64_t row = blockIdx.x;
  T* dst = params.out + row * params.out_stride;
  const T* src = params.input + row * params.input_stride;

  device::PDLWaitPrimary<kUsePDL>();

  vec_t x[kIters];
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < static_cast<int>(kIters); ++i) {
    const uint32_t idx = threadIdx.x + static_cast<uint32_t>(i) * kThreads;
    if (idx < kNumVecs) {
      x[i].load(src, idx);
#pragma unroll
      for (int j = 0; j < kVecN; ++j) {
        const float v = device::cast<fp32_t>(x[i][j]);
        sum += v * v;
      }
    }
  }
  device::cta::reduce_sum(sum, smem);
  __syncthreads();
  const float rstd = device::math::rsqrt(smem[0] / static_cast<float>(kHiddenSize) + params.eps);
#pragma unroll
  for (int i = 0; i < static_cast<int>(kIters); ++i) {
    const uint32_t idx = threadIdx.x + static_cast<uint32_t>(i) * kThreads;
    if (idx < kNumVecs) {
      vec_t w;
      w.load(params.weight, idx);
#pragma unroll
      for (int j = 0; j < kVecN; ++j) {
        x[i][j] = device::cast<T>(device::cast<fp32_t>(x[i][j]) * rstd * device::cast<fp32_t>(w[j]));
      }
      x[i].store(dst, idx);
    }
  }
  device::PDLTriggerSecondary<kUsePDL>();
}

/**
 * \brief CTA variant of fused add + RMSNorm: one block per row.
 *
 * \tparam T           Element type
 * \tparam kHiddenSize Row length in elements
 * \tparam kUsePDL     Whether the kernel is launched with PDL
 * \param params       Pointers, strides, row count and epsilon
 */
template <typename T, uint32_t kHiddenSize, bool kUsePDL>
__global__ void fused_add_rmsnorm_cta_kernel(const FusedAddRMSNormParams<T> params) {
  constexpr uint32_t kVecBytes = rmsnorm_vec_bytes<T, kHiddenSize, true>();
  constexpr int32_t kVecN = static_cast<int32_t>(kVecBytes / sizeof(T));
  constexpr uint32_t kNumVecs = kHiddenSize / kVecN;
  constexpr uint32_t kThreads = rmsnorm_cta_threads<T, kHiddenSize>();
  constexpr uint32_t kIters = (kNumVecs + kThreads - 1) / kThreads;
  using vec_t = device::AlignedVector<T, kVecN>;
  __shared__ float smem[device::kWarpThreads];

  const int64_t row = blockIdx.x;
  T* input = params.input + row * params.input_stride;
  T* residual = params.residual + row * params.residual_stride;

  device::PDLWaitPrimary<kUsePDL>();

  vec_t x[kIters];
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < static_cast<int>(kIters); ++i) {
    const uint32_t idx = threadIdx.x + static_cast<uint32_t>(i) * kThreads;
    if (idx < kNumVecs) {
      vec_t r;
      x[i].load(input, idx);
      r.load(residual, idx);
#pragma unroll
      for (int j = 0; j < kVecN; ++j) {
        x[i][j] = device::cast<T>(device::cast<fp32_t>(x[i][j]) + device::cast<fp32_t>(r[j]));
        const float v = device::cast<fp32_t>(x[i][j]);
        sum += v * v;
      }
      x[i].store(residual, idx);
    }
  }
  device::cta::reduce_sum(sum, smem);
  __syncthreads();
  const float rstd = device::math::rsqrt(smem[0] / static_cast<float>(kHiddenSize) + params.eps);
#pragma unroll
  for (int i = 0; i < static_cast<int>(kIters); ++i) {
    const uint32_t idx = threadIdx.x + static_cast<uint32_t>(i) * kThreads;
    if (idx < kNumVecs) {
      vec_t w;
      w.load(params.weight, idx);
#pragma unroll
      for (int j = 0; j < kVecN; ++j) {
        x[i][j] = device::cast<T>(device::cast<fp32_t>(x[i][j]) * rstd * device::cast<fp32_t>(w[j]));
      }
      x[i].store(input, idx);
    }
  }
  device::PDLTriggerSecondary<kUsePDL>();
}

/// \brief Warps per block of the warp variants.
inline constexpr uint32_t kRMSNormWarpsPerBlock = 8;

/**
 * \brief Grid and block of the RMSNorm launches: one block per row (CTA variant), or a grid of
 * `kRMSNormWarpsPerBlock`-warp blocks capped at what stays resident (warp variant, persistent).
 *
 * \tparam T           Element type
 * \tparam kHiddenSize Row length in elements
 * \tparam kUseCTA     CTA variant (else warp variant)
 * \param num_rows     Number of rows
 * \param occupancy    Resident blocks per SM of the warp kernel (unused by the CTA variant)
 * \param device       Device of the launch (for the SM count)
 * \return {grid, block}
 */
template <typename T, uint32_t kHiddenSize, bool kUseCTA>
inline std::pair<uint32_t, uint32_t> rmsnorm_launch_shape(int64_t num_rows, uint32_t occupancy, DLDevice device) {
  CHECK_HOST(num_rows < (int64_t{1} << 31)) << "rmsnorm: too many rows (" << num_rows << ")";
  if constexpr (kUseCTA) {
    return {static_cast<uint32_t>(num_rows), rmsnorm_cta_threads<T, kHiddenSize>()};
  } else {
    constexpr uint32_t kBlock = kRMSNormWarpsPerBlock * device::kWarpThreads;
    const int64_t resident = static_cast<int64_t>(host::runtime::get_sm_count(device.device_id)) *
                             static_cast<int64_t>(occupancy > 0 ? occupancy : 1);
    const int64_t needed = host::div_ceil(num_rows, int64_t{kRMSNormWarpsPerBlock});
    return {static_cast<uint32_t>(needed < resident ? needed : resident), kBlock};
  }
}

/**
 * \brief RMSNorm over the last dim: `out = input * rsqrt(mean(input^2) + eps) * weight`.
 *
 * \tparam T           Element type: fp16_t | bf16_t | fp32_t
 * \tparam kHiddenSize Row length in elements
 * \tparam kUseCTA     One block per row (large rows) instead of one warp per row
 * \tparam kUsePDL     Whether to launch with PDL
 * \param out          Output `[rows, hidden]`, unit inner stride (must not alias `input`)
 * \param input        Input `[rows, hidden]`, unit inner stride
 * \param weight       Weight `[hidden]`, contiguous
 * \param eps          Epsilon
 */
template <typename T, uint32_t kHiddenSize, bool kUseCTA, bool kUsePDL>
void rmsnorm(tvm::ffi::TensorView out, tvm::ffi::TensorView input, tvm::ffi::TensorView weight, float eps) {
  using namespace host;
  constexpr int64_t kVecBytes = rmsnorm_vec_bytes<T, kHiddenSize, kUseCTA>();
  SymbolicSize M{"num_tokens"};
  SymbolicSize S_in{"input_row_stride"};
  SymbolicSize S_out{"out_row_stride"};
  SymbolicDevice device;
  device.set_options<kDLCUDA>();
  const int64_t hidden = kHiddenSize;
  TensorMatcher({M, hidden})  //
      .with_strides({S_in, 1})
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .ensure_alignment(kVecBytes)
      .verify(input, "input");
  TensorMatcher({M, hidden})  //
      .with_strides({S_out, 1})
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .ensure_alignment(kVecBytes)
      .verify(out, "out");
  TensorMatcher({hidden})  //
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .ensure_alignment(kVecBytes)
      .verify(weight, "weight");

  const RMSNormParams<T> params{
      static_cast<T*>(out.data_ptr()),
      static_cast<const T*>(input.data_ptr()),
      static_cast<const T*>(weight.data_ptr()),
      S_out.unwrap(),
      S_in.unwrap(),
      M.unwrap(),
      eps,
  };
  const auto kernel = [] {
    if constexpr (kUseCTA) {
      return rmsnorm_cta_kernel<T, kHiddenSize, kUsePDL>;
    } else {
      return rmsnorm_warp_kernel<T, kHiddenSize, kUsePDL>;
    }
  }();
  static const uint32_t occupancy =
      kUseCTA ? 0 : runtime::get_blocks_per_sm(kernel, kRMSNormWarpsPerBlock * device::kWarpThreads);
  const auto [grid, block] = rmsnorm_launch_shape<T, kHiddenSize, kUseCTA>(params.num_rows, occupancy, device.unwrap());
  LaunchKernel(grid, block, device.unwrap()).enable_pdl(kUsePDL)(kernel, params);
}

/**
 * \brief In place: `residual += input`, then `input = rmsnorm(residual) * weight`.
 *
 * \tparam T           Element type: fp16_t | bf16_t | fp32_t
 * \tparam kHiddenSize Row length in elements
 * \tparam kUseCTA     One block per row (large rows) instead of one warp per row
 * \tparam kUsePDL     Whether to launch with PDL
 * \param input        Input `[rows, hidden]`, unit inner stride; receives the normalized rows
 * \param residual     Residual `[rows, hidden]`, unit inner stride; receives the sum
 * \param weight       Weight `[hidden]`, contiguous
 * \param eps          Epsilon
 */
template <typename T, uint32_t kHiddenSize, bool kUseCTA, bool kUsePDL>
void fused_add_rmsnorm(tvm::ffi::TensorView input, tvm::ffi::TensorView residual, tvm::ffi::TensorView weight,
                       float eps) {
  using namespace host;
  constexpr int64_t kVecBytes = rmsnorm_vec_bytes<T, kHiddenSize, kUseCTA>();
  SymbolicSize M{"num_tokens"};
  SymbolicSize S_in{"input_row_stride"};
  SymbolicSize S_res{"residual_row_stride"};
  SymbolicDevice device;
  device.set_options<kDLCUDA>();
  const int64_t hidden = kHiddenSize;
  TensorMatcher({M, hidden})  //
      .with_strides({S_in, 1})
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .ensure_alignment(kVecBytes)
      .verify(input, "input");
  TensorMatcher({M, hidden})  //
      .with_strides({S_res, 1})
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .ensure_alignment(kVecBytes)
      .verify(residual, "residual");
  TensorMatcher({hidden})  //
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .ensure_alignment(kVecBytes)
      .verify(weight, "weight");

  const FusedAddRMSNormParams<T> params{
      static_cast<T*>(input.data_ptr()),
      static_cast<T*>(residual.data_ptr()),
      static_cast<const T*>(weight.data_ptr()),
      S_in.unwrap(),
      S_res.unwrap(),
      M.unwrap(),
      eps,
  };
  const auto kernel = [] {
    if constexpr (kUseCTA) {
      return fused_add_rmsnorm_cta_kernel<T, kHiddenSize, kUsePDL>;
    } else {
      return fused_add_rmsnorm_warp_kernel<T, kHiddenSize, kUsePDL>;
    }
  }();
  static const uint32_t occupancy =
      kUseCTA ? 0 : runtime::get_blocks_per_sm(kernel, kRMSNormWarpsPerBlock * device::kWarpThreads);
  const auto [grid, block] = rmsnorm_launch_shape<T, kHiddenSize, kUseCTA>(params.num_rows, occupancy, device.unwrap());
  LaunchKernel(grid, block, device.unwrap()).enable_pdl(kUsePDL)(kernel, params);
}

}  // namespace sglang
