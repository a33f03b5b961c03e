/// \file qknorm.cuh
/// \brief Per-head RMSNorm of q and k in place (heads may be strided views of a fused qkv):
/// a group of lanes per head row with 16-byte accesses where the row allows, several rows per
/// warp, persistent grid sized from occupancy and the SM count.
#pragma once

#include <sgl_kernel/bits.h>
#include <sgl_kernel/math.cuh>
#include <sgl_kernel/qk_heads.cuh>
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

namespace sglang {

/// \brief Arguments of `qknorm_kernel` (by value).
/// \tparam T Element type.
template <typename T>
struct QKNormParams {
  device::QKHeads<T> heads;        ///< Query and key heads, normalized in place
  const T* __restrict__ q_weight;  ///< Query norm weight `[head_dim]`
  const T* __restrict__ k_weight;  ///< Key norm weight `[head_dim]`
  float eps;                       ///< Epsilon
};

/// \brief Threads per block of `qknorm_kernel`.
inline constexpr uint32_t kQKNormBlockSize = 256;

/**
 * \brief How `qknorm_kernel` splits a warp: a group of lanes per head row, each lane `kIters`
 * vectors of `kVecBytes` (16 where the row allows), `kRowsPerWarp` rows per warp at once.
 *
 * \tparam T        Element type
 * \tparam kHeadDim Head size in elements
 */
template <typename T, uint32_t kHeadDim>
struct QKNormWarpLayout {
  /// Access width in bytes; launchers pass it to `ensure_alignment`.
  static constexpr uint32_t kVecBytes =
      static_cast<uint32_t>(host::gcd(kHeadDim * static_cast<uint32_t>(sizeof(T)), device::RAW_16B));
  /// Elements per access.
  static constexpr uint32_t kVecN = kVecBytes / static_cast<uint32_t>(sizeof(T));
  /// Accesses per row.
  static constexpr uint32_t kNumVecs = kHeadDim / kVecN;
  /// Lanes that share one row: a power of two, at most a warp.
  static constexpr uint32_t kLanesPerRow =
      kNumVecs >= device::kWarpThreads ? device::kWarpThreads : static_cast<uint32_t>(host::round_up_pow2(kNumVecs));
  /// Accesses of one row each lane makes.
  static constexpr uint32_t kIters = (kNumVecs + kLanesPerRow - 1) / kLanesPerRow;
  /// Rows one warp normalizes at once.
  static constexpr uint32_t kRowsPerWarp = device::kWarpThreads / kLanesPerRow;
};

/**
 * \brief Persistent kernel over the (token, head) rows of q then k: each group of
 * `kLanesPerRow` lanes loads one row and its weight row, reduces the mean square within the
 * group, and writes the row back normalized; the warp then strides on.
 *
 * \tparam T        Element type: fp16_t | bf16_t | fp32_t
 * \tparam kHeadDim Head size in elements
 * \tparam kUsePDL  Whether the kernel is launched with PDL
 * \param params    Pointers, strides, sizes and epsilon
 */
template <typename T, uint32_t kHeadDim, bool kUsePDL>
__global__ void qknorm_kernel(const QKNormParams<T> params) {
  using Layout = QKNormWarpLayout<T, kHeadDim>;
  using vec_t = device::AlignedVector<T, static_cast<int>(Layout::kVecN)>;
  constexpr int32_t kIters = static_cast<int32_t>(Layout::kIters);
  constexpr int64_t kWarpsPerBlock = kQKNormBlockSize / device::kWarpThreads;
  constexpr int64_t kRowsPerWarp = Layout::kRowsPerWarp;
  const int64_t total = params.heads.num_rows();
  const uint32_t sub = device::get_lane_id<Layout::kLanesPerRow>();
  const int64_t group = device::get_lane_id<device::kWarpThreads>() / Layout::kLanesPerRow;
  const int64_t warp = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / device::kWarpThreads;
  const int64_t step = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock * kRowsPerWarp;

  device::PDLWaitPrimary<kUsePDL>();

  // warp-uniform loop: every lane takes part in the group reduction; a group past the end
  // re-reads the warp's first row and stores nothing
  for (int64_t base = warp * kRowsPerWarp; base < total; base += step) {
    const bool valid = base + group < total;
    const device::QKHeadCursor at(valid ? base + group : base, params.heads.heads_per_token());
    T* row = params.heads.row(at.token, at.head);
    const T* weight = params.heads.is_q(at.head) ? params.q_weight : params.k_weight;
    vec_t x[kIters];
    vec_t w[kIters];
#pragma unroll
    for (int i = 0; i < kIters; ++i) {
      const uint32_t idx = sub + static_cast<uint32_t>(i) * Layout::kLanesPerRow;
      if (idx < Layout::kNumVecs) {
        x[i].load(row, idx);
        w[i].load(weight, idx);
      }
    }
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < kIters; ++i) {
      if (sub + static_cast<uint32_t>(i) * Layout::kLanesPerRow < Layout::kNumVecs) {
#pragma unroll
        for (int j = 0; j < static_cast<int>(Layout::kVecN); ++j) {
          const float v = device::cast<fp32_t>(x[i][j]);
          sum += v * v;
        }
      }
    }
    sum = device::warp::reduce_sum<Layout::kLanesPerRow, 1>(sum);
    const float rstd = device::math::rsqrt(sum / static_cast<float>(kHeadDim) + params.eps);
#pragma unroll
    for (int i = 0; i < kIters; ++i) {
      const uint32_t idx = sub + static_cast<uint32_t>(i) * Layout::kLanesPerRow;
      if (valid && idx < Layout::kNumVecs) {
#pragma unroll
        for (int j = 0; j < static_cast<int>(Layout::kVecN); ++j) {
          x[i][j] = device::cast<T>(device::cast<fp32_t>(x[i][j]) * rstd * device::cast<fp32_t>(w[i][j]));
        }
        x[i].store(row, idx);
      }
    }
  }

  device::PDLTriggerSecondary<kUsePDL>();
}

/**
 * \brief Validates q, k and the weights, then launches `qknorm_kernel` on a persistent grid.
 *
 * \tparam T          Element type: fp16_t | bf16_t | fp32_t
 * \tparam kHeadDim   Head size in elements
 * \tparam kUsePDL    Whether to launch with PDL
 * \param q           Query `[tokens, q_heads, head_dim]`, unit inner stride, any token/head strides
 * \param k           Key `[tokens, k_heads, head_dim]`, unit inner stride, any token/head strides
 * \param q_weight    Query weight `[head_dim]`
 * \param k_weight    Key weight `[head_dim]`
 * \param eps         Epsilon
 */
template <typename T, uint32_t kHeadDim, bool kUsePDL>
void qknorm(tvm::ffi::TensorView q, tvm::ffi::TensorView k, tvm::ffi::TensorView q_weight,
            tvm::ffi::TensorView k_weight, float eps) {
  using namespace host;
  constexpr int64_t kVecBytes = QKNormWarpLayout<T, kHeadDim>::kVecBytes;
  SymbolicSize N{"num_tokens"};
  SymbolicSize Hq{"num_q_heads"};
  SymbolicSize Hk{"num_k_heads"};
  SymbolicSize Sq_t{"q_token_stride"};
  SymbolicSize Sq_h{"q_head_stride"};
  SymbolicSize Sk_t{"k_token_stride"};
  SymbolicSize Sk_h{"k_head_stride"};
  SymbolicDevice device;
  device.set_options<kDLCUDA>();
  const int64_t head_dim = kHeadDim;
  TensorMatcher({N, Hq, head_dim})  //
      .with_strides({Sq_t, Sq_h, 1})
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .ensure_alignment(kVecBytes)
      .verify(q, "q");
  TensorMatcher({N, Hk, head_dim})  //
      .with_strides({Sk_t, Sk_h, 1})
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .ensure_alignment(kVecBytes)
      .verify(k, "k");
  TensorMatcher({head_dim})  //
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .ensure_alignment(kVecBytes)
      .verify(q_weight, "q_weight")
      .verify(k_weight, "k_weight");

  const QKNormParams<T> params{
      {static_cast<T*>(q.data_ptr()), static_cast<T*>(k.data_ptr()), Sq_t.unwrap(), Sq_h.unwrap(), Sk_t.unwrap(),
       Sk_h.unwrap(), N.unwrap(), Hq.unwrap(), Hk.unwrap()},
      static_cast<const T*>(q_weight.data_ptr()),
      static_cast<const T*>(k_weight.data_ptr()),
      eps,
  };
  const auto kernel = qknorm_kernel<T, kHeadDim, kUsePDL>;
  static const uint32_t occupancy = runtime::get_blocks_per_sm(kernel, kQKNormBlockSize);
  const DLDevice dev = device.unwrap();
  constexpr int64_t kRowsPerBlock = kQKNormBlockSize / device::kWarpThreads * QKNormWarpLayout<T, kHeadDim>::kRowsPerWarp;
  const uint32_t grid = runtime::get_persistent_grid(params.heads.num_rows(), kRowsPerBlock, occupancy, dev.device_id);
  LaunchKernel(grid, kQKNormBlockSize, dev).enable_pdl(kUsePDL)(kernel, params);
}

}  // namespace sglang
