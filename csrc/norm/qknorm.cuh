/// \file qknorm.cuh
/// \brief Per-head RMSNorm of q and k in place (heads may be strided views of a fused qkv),
/// one warp per head row, persistent grid sized from occupancy and the SM count.
#pragma once

#include "rmsnorm.cuh"

#include <sgl_kernel/runtime.cuh>
#include <sgl_kernel/tensor.h>
#include <sgl_kernel/type.cuh>
#include <sgl_kernel/utils.cuh>
#include <sgl_kernel/utils.h>
#include <sgl_kernel/warp.cuh>

#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>

#include <algorithm>
#include <cstdint>

namespace sglang {

/// \brief Arguments of `qknorm_kernel` (by value).
/// \tparam T Element type.
template <typename T>
struct QKNormParams {
  T* q;                            ///< Query heads, normalized in place
  T* k;                            ///< Key heads, normalized in place
  const T* __restrict__ q_weight;  ///< Query norm weight `[head_dim]`
  const T* __restrict__ k_weight;  ///< Key norm weight `[head_dim]`
  int64_t q_token_stride;          ///< Elements between tokens of `q`
  int64_t q_head_stride;           ///< Elements between heads of `q`
  int64_t k_token_stride;          ///< Elements between tokens of `k`
  int64_t k_head_stride;           ///< Elements between heads of `k`
  int64_t num_tokens;              ///< Number of tokens
  int64_t num_q_heads;             ///< Query heads per token
  int64_t num_k_heads;             ///< Key heads per token
  float eps;                       ///< Epsilon
};

/// \brief Threads per block of `qknorm_kernel`.
inline constexpr uint32_t kQKNormBlockSize = 256;

/**
 * \brief Persistent kernel: warps stride over all (token, head) rows of q then k.
 *
 * \tparam T        Element type: fp16_t | bf16_t | fp32_t
 * \tparam kHeadDim Head size in elements
 * \tparam kUsePDL  Whether the kernel is launched with PDL
 * \param params    Pointers, strides, sizes and epsilon
 */
template <typename T, uint32_t kHeadDim, bool kUsePDL>
__global__ void qknorm_kernel(const QKNormParams<T> params) {
  constexpr int64_t kWarpsPerBlock = kQKNormBlockSize / device::kWarpThreads;
  const int64_t heads = params.num_q_heads + params.num_k_heads;
  const int64_t total = params.num_tokens * heads;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / device::kWarpThreads;

  device::PDLWaitPrimary<kUsePDL>();

  for (int64_t item = first; item < total; item += stride) {
    const int64_t token = item / heads;
    const int64_t head = item - token * heads;
    const bool is_q = head < params.num_q_heads;
    T* row = is_q ? params.q + token * params.q_token_stride + head * params.q_head_stride
                  : params.k + token * params.k_token_stride + (head - params.num_q_heads) * params.k_head_stride;
    const T* weight = is_q ? params.q_weight : params.k_weight;
    warp_rmsnorm_row<T, kHeadDim>(row, row, weight, params.eps);
  }

  device::PDLTriggerSecondary<kUsePDL>();
}

/**
 * \brief Validates q, k and the weights, then launches `qknorm_kernel` on a persistent grid.
 *
 * \tparam T        Element type: fp16_t | bf16_t | fp32_t
 * \tparam kHeadDim Head size in elements
 * \tparam kUsePDL  Whether to launch with PDL
 * \param q         Query `[tokens, q_heads, head_dim]`, unit inner stride, any token/head strides
 * \param k         Key `[tokens, k_heads, head_dim]`, unit inner stride, any token/head strides
 * \param q_weight  Query weight `[head_dim]`
 * \param k_weight  Key weight `[head_dim]`
 * \param eps       Epsilon
 */
template <typename T, uint32_t kHeadDim, bool kUsePDL>
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
      static_cast<T*>(q.data_ptr()),
      static_cast<T*>(k.data_ptr()),
      static_cast<const T*>(q_weight.data_ptr()),
      static_cast<const T*>(k_weight.data_ptr()),
      Sq_t.unwrap(),
      Sq_h.unwrap(),
      Sk_t.unwrap(),
      Sk_h.unwrap(),
      N.unwrap(),
      Hq.unwrap(),
      Hk.unwrap(),
      eps,
  };
  const auto kernel = qknorm_kernel<T, kHeadDim, kUsePDL>;
  static const uint32_t max_occupancy = runtime::get_blocks_per_sm(kernel, kQKNormBlockSize);
  const DLDevice dev = device.unwrap();
  const uint32_t num_sm = runtime::get_sm_count(dev.device_id);
  constexpr int64_t kWarpsPerBlock = kQKNormBlockSize / device::kWarpThreads;
  const int64_t needed = div_ceil(params.num_tokens * (params.num_q_heads + params.num_k_heads), kWarpsPerBlock);
  const int64_t resident = static_cast<int64_t>(num_sm) * std::max<uint32_t>(max_occupancy, 1);
  const uint32_t grid = static_cast<uint32_t>(std::min(needed, resident));
  LaunchKernel(grid, kQKNormBlockSize, dev).enable_pdl(kUsePDL)(kernel, params);
}

}  // namespace sglang
