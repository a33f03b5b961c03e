/// \file qknorm.cuh
/// \brief Per-head RMSNorm of q and k in place (heads may be strided views of a fused qkv),
/// one warp per head row, several rows in flight per warp, persistent grid sized from
/// occupancy and the SM count.
#pragma once

#include "rmsnorm.cuh"

#include <sgl_kernel/qk_heads.cuh>
#include <sgl_kernel/runtime.cuh>
#include <sgl_kernel/tensor.h>
#include <sgl_kernel/type.cuh>
#include <sgl_kernel/utils.cuh>
#include <sgl_kernel/utils.h>
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
/// \brief Bytes of q/k each lane of `qknorm_kernel` loads per step before it uses any of them.
inline constexpr uint32_t kQKNormLaneBytes = 32;

/**
 * \brief Heads one warp of `qknorm_kernel` normalizes per step: enough that each lane has about
 * `kLaneBytes` of q/k loads in flight, between 1 and 8.
 *
 * \tparam T          Element type
 * \tparam kHeadDim   Head size in elements
 * \tparam kLaneBytes Bytes each lane should have in flight
 * \return Heads per warp per step
 */
template <typename T, uint32_t kHeadDim, uint32_t kLaneBytes>
SGL_DEVICE_HOST constexpr uint32_t qknorm_rows_per_step() {
  using Frag = RMSNormWarpRow<T, kHeadDim>;
  constexpr uint32_t kRows = kLaneBytes / (Frag::kIters * Frag::kVecBytes);
  return kRows < 1 ? 1 : (kRows > 8 ? 8 : kRows);
}

/**
 * \brief Persistent kernel: each warp takes `qknorm_rows_per_step` consecutive (token, head)
 * rows of q then k at a time, loads them all, then normalizes and stores them, and strides on.
 *
 * \tparam T          Element type: fp16_t | bf16_t | fp32_t
 * \tparam kHeadDim   Head size in elements
 * \tparam kUsePDL    Whether the kernel is launched with PDL
 * \tparam kLaneBytes Bytes of q/k each lane loads per step (sets the rows per step)
 * \param params      Pointers, strides, sizes and epsilon
 */
template <typename T, uint32_t kHeadDim, bool kUsePDL, uint32_t kLaneBytes>
__global__ void qknorm_kernel(const QKNormParams<T> params) {
  using Frag = RMSNormWarpRow<T, kHeadDim>;
  constexpr uint32_t kBytes = kHeadDim * static_cast<uint32_t>(sizeof(T));
  constexpr int64_t kRows = qknorm_rows_per_step<T, kHeadDim, kLaneBytes>();
  constexpr int64_t kWarpsPerBlock = kQKNormBlockSize / device::kWarpThreads;
  const int64_t total = params.heads.num_rows();
  const int64_t warp = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / device::kWarpThreads;
  const int64_t step = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock * kRows;

  device::PDLWaitPrimary<kUsePDL>();

  for (int64_t first = warp * kRows; first < total; first += step) {
    device::QKHeadCursor at(first, params.heads.heads_per_token());
    T* rows[kRows];
    Frag x[kRows];
    Frag w[kRows];  // the weight rows stay in L1: reloading beats selecting between two held in registers
#pragma unroll
    for (int r = 0; r < static_cast<int>(kRows); ++r) {
      rows[r] = params.heads.row(at.token, at.head);
      if (first + r < total) {
        x[r] = device::warp::load_bytes<kBytes, kRMSNormWarpPattern>(rows[r]);
        w[r] = device::warp::load_bytes<kBytes, kRMSNormWarpPattern>(params.heads.is_q(at.head) ? params.q_weight
                                                                                                : params.k_weight);
      }
      at.advance(1);
    }
#pragma unroll
    for (int r = 0; r < static_cast<int>(kRows); ++r) {
      if (first + r < total) warp_rmsnorm_fragment<T, kHeadDim>(x[r], w[r], params.eps);
    }
#pragma unroll
    for (int r = 0; r < static_cast<int>(kRows); ++r) {
      if (first + r < total) device::warp::store_bytes<kBytes, kRMSNormWarpPattern>(rows[r], x[r]);
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
 * \tparam kLaneBytes Bytes of q/k each lane loads per step (a tuning knob; the default suits H100/H200)
 * \param q           Query `[tokens, q_heads, head_dim]`, unit inner stride, any token/head strides
 * \param k           Key `[tokens, k_heads, head_dim]`, unit inner stride, any token/head strides
 * \param q_weight    Query weight `[head_dim]`
 * \param k_weight    Key weight `[head_dim]`
 * \param eps         Epsilon
 */
template <typename T, uint32_t kHeadDim, bool kUsePDL, uint32_t kLaneBytes = kQKNormLaneBytes>
void qknorm(tvm::ffi::TensorView q, tvm::ffi::TensorView k, tvm::ffi::TensorView q_weight,
            tvm::ffi::TensorView k_weight, float eps) {
  using namespace host;
  constexpr int64_t kVecBytes = rmsnorm_vec_bytes<T, kHeadDim, false>();
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
  const auto kernel = qknorm_kernel<T, kHeadDim, kUsePDL, kLaneBytes>;
  static const uint32_t occupancy = runtime::get_blocks_per_sm(kernel, kQKNormBlockSize);
  const DLDevice dev = device.unwrap();
  constexpr int64_t kRowsPerBlock =
      kQKNormBlockSize / device::kWarpThreads * qknorm_rows_per_step<T, kHeadDim, kLaneBytes>();
  const uint32_t grid = runtime::get_persistent_grid(params.heads.num_rows(), kRowsPerBlock, occupancy, dev.device_id);
  LaunchKernel(grid, kQKNormBlockSize, dev).enable_pdl(kUsePDL)(kernel, params);
}

}  // namespace sglang
