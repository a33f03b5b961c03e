/// \file rotary_embedding.cuh
/// \brief Rotary position embedding of q and k in place, neox (split halves) or interleaved
/// (GPT-J pairs) layout, from a `[max_position, rotary_dim]` fp32 cos|sin cache.
#pragma once

#include <sgl_kernel/bits.h>
#include <sgl_kernel/tensor.h>
#include <sgl_kernel/type.cuh>
#include <sgl_kernel/utils.cuh>
#include <sgl_kernel/utils.h>
#include <sgl_kernel/vec.cuh>

#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>

#include <cstdint>

namespace sglang {

/**
 * \brief Rotation pairs handled per vector access: the largest power of two <= 4 dividing
 * `kRotaryDim / 2` (and, interleaved, keeping a pair vector within 16 bytes).
 *
 * \tparam T          Element type of q and k
 * \tparam kRotaryDim Rotated dims per head (even)
 * \tparam kIsNeox    Neox layout (else interleaved)
 * \return Pairs per vector
 */
template <typename T, uint32_t kRotaryDim, bool kIsNeox>
SGL_DEVICE_HOST constexpr uint32_t rope_pairs_per_vec() {
  constexpr uint64_t kHalf = kRotaryDim / 2;
  constexpr uint64_t kCap = kIsNeox ? 4 : (8 / sizeof(T) < 4 ? 8 / sizeof(T) : 4);
  return static_cast<uint32_t>(host::gcd(kHalf, kCap));
}

/**
 * \brief Vector width in bytes of the q/k accesses.
 *
 * \tparam T          Element type of q and k
 * \tparam kRotaryDim Rotated dims per head
 * \tparam kIsNeox    Neox layout (else interleaved)
 * \return Bytes per access
 */
template <typename T, uint32_t kRotaryDim, bool kIsNeox>
SGL_DEVICE_HOST constexpr int64_t rope_qk_vec_bytes() {
  return static_cast<int64_t>(rope_pairs_per_vec<T, kRotaryDim, kIsNeox>() * (kIsNeox ? 1 : 2) * sizeof(T));
}

/// \brief Arguments of `rotary_embedding_kernel` (by value).
/// \tparam T Element type of q and k.
template <typename T>
struct RotaryParams {
  T* q;                                 ///< Query heads, rotated in place
  T* k;                                 ///< Key heads, rotated in place
  const int64_t* __restrict__ positions;  ///< Position of each token
  const float* __restrict__ cos_sin_cache;  ///< `[max_position, rotary_dim]`: cos then sin halves
  int64_t q_token_stride;               ///< Elements between tokens of `q`
  int64_t q_head_stride;                ///< Elements between heads of `q`
  int64_t k_token_stride;               ///< Elements between tokens of `k`
  int64_t k_head_stride;                ///< Elements between heads of `k`
  int64_t num_tokens;                   ///< Number of tokens
  int64_t num_q_heads;                  ///< Query heads per token
  int64_t num_k_heads;                  ///< Key heads per token
  int64_t max_position;                 ///< Rows of the cache; other positions are left unrotated
};

/// \brief Threads per block of `rotary_embedding_kernel`.
inline constexpr uint32_t kRopeBlockSize = 256;

/**
 * \brief One warp per (token, head): rotates the first `kRotaryDim` dims of the head.
 *
 * \tparam T          Element type: fp16_t | bf16_t | fp32_t
 * \tparam kRotaryDim Rotated dims per head (even, <= head size)
 * \tparam kIsNeox    Neox layout (pairs `i, i + R/2`) or interleaved (pairs `2i, 2i + 1`)
 * \tparam kUsePDL    Whether the kernel is launched with PDL
 * \param params      Pointers, strides and sizes
 */
template <typename T, uint32_t kRotaryDim, bool kIsNeox, bool kUsePDL>
__global__ void rotary_embedding_kernel(const RotaryParams<T> params) {
  constexpr uint32_t kHalf = kRotaryDim / 2;
  constexpr uint32_t kPairs = rope_pairs_per_vec<T, kRotaryDim, kIsNeox>();
  constexpr uint32_t kChunks = kHalf / kPairs;
  constexpr int64_t kWarpsPerBlock = kRopeBlockSize / device::kWarpThreads;
  using fvec_t = device::AlignedVector<float, static_cast<int>(kPairs)>;

  const int64_t heads = params.num_q_heads + params.num_k_heads;
  const int64_t total = params.num_tokens * heads;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / device::kWarpThreads;
  const uint32_t lane = device::get_lane_id<device::kWarpThreads>();

  device::PDLWaitPrimary<kUsePDL>();

  for (int64_t item = first; item < total; item += stride) {
    const int64_t token = item / heads;
    const int64_t head = item - token * heads;
    const int64_t pos = params.positions[token];
    if (pos < 0 || pos >= params.max_position) continue;
    T* row = head < params.num_q_heads
                 ? params.q + token * params.q_token_stride + head * params.q_head_stride
                 : params.k + token * params.k_token_stride + (head - params.num_q_heads) * params.k_head_stride;
    const float* cos_row = params.cos_sin_cache + pos * kRotaryDim;
    const float* sin_row = cos_row + kHalf;
    for (uint32_t c = lane; c < kChunks; c += device::kWarpThreads) {
      fvec_t cv;
      fvec_t sv;
      cv.load(cos_row, c);
      sv.load(sin_row, c);
      if constexpr (kIsNeox) {
        using vec_t = device::AlignedVector<T, static_cast<int>(kPairs)>;
        vec_t x1;
        vec_t x2;
        x1.load(row, c);
        x2.load(row + kHalf, c);
#pragma unroll
        for (int i = 0; i < static_cast<int>(kPairs); ++i) {
          const float a = device::cast<fp32_t>(x1[i]);
          const float b = device::cast<fp32_t>(x2[i]);
          x1[i] = device::cast<T>(a * cv[i] - b * sv[i]);
          x2[i] = device::cast<T>(b * cv[i] + a * sv[i]);
        }
        x1.store(row, c);
        x2.store(row + kHalf, c);
      } else {
        using vec_t = device::AlignedVector<T, static_cast<int>(2 * kPairs)>;
        vec_t x;
        x.load(row, c);
#pragma unroll
        for (int i = 0; i < static_cast<int>(kPairs); ++i) {
          const float a = device::cast<fp32_t>(x[2 * i]);
          const float b = device::cast<fp32_t>(x[2 * i + 1]);
          x[2 * i] = device::cast<T>(a * cv[i] - b * sv[i]);
          x[2 * i + 1] = device::cast<T>(b * cv[i] + a * sv[i]);
        }
        x.store(row, c);
      }
    }
  }

  device::PDLTriggerSecondary<kUsePDL>();
}

/**
 * \brief Validates the tensors and launches `rotary_embedding_kernel` (q and k in one launch).
 *
 * \tparam T          Element type: fp16_t | bf16_t | fp32_t
 * \tparam kHeadDim   Head size in elements
 * \tparam kRotaryDim Rotated dims per head (even, <= kHeadDim)
 * \tparam kIsNeox    Neox layout (else interleaved)
 * \tparam kUsePDL    Whether to launch with PDL
 * \param positions     Token positions `[tokens]`, int64
 * \param q             Query `[tokens, q_heads, head_dim]`, unit inner stride, any other strides
 * \param k             Key `[tokens, k_heads, head_dim]`, unit inner stride, any other strides
 * \param cos_sin_cache `[max_position, rotary_dim]` fp32, contiguous: cos in the first half, sin in the second
 */
template <typename T, uint32_t kHeadDim, uint32_t kRotaryDim, bool kIsNeox, bool kUsePDL>
void rotary_embedding(tvm::ffi::TensorView positions, tvm::ffi::TensorView q, tvm::ffi::TensorView k,
                      tvm::ffi::TensorView cos_sin_cache) {
  using namespace host;
  static_assert(kRotaryDim % 2 == 0 && kRotaryDim >= 2 && kRotaryDim <= kHeadDim, "rotary_embedding: bad rotary dim");
  constexpr int64_t kQKVecBytes = rope_qk_vec_bytes<T, kRotaryDim, kIsNeox>();
  constexpr int64_t kCacheVecBytes = rope_pairs_per_vec<T, kRotaryDim, kIsNeox>() * static_cast<int64_t>(sizeof(float));

  SymbolicSize N{"num_tokens"};
  SymbolicSize Hq{"num_q_heads"};
  SymbolicSize Hk{"num_k_heads"};
  SymbolicSize P{"max_position"};
  SymbolicSize Sq_t{"q_token_stride"};
  SymbolicSize Sq_h{"q_head_stride"};
  SymbolicSize Sk_t{"k_token_stride"};
  SymbolicSize Sk_h{"k_head_stride"};
  SymbolicDevice device;
  device.set_options<kDLCUDA>();
  const int64_t head_dim = kHeadDim;
  const int64_t rotary_dim = kRotaryDim;
  TensorMatcher({N})  //
      .with_dtype<int64_t>()
      .with_device<kDLCUDA>(device)
      .ensure_alignment(static_cast<int64_t>(sizeof(int64_t)))
      .verify(positions, "positions");
  TensorMatcher({N, Hq, head_dim})  //
      .with_strides({Sq_t, Sq_h, 1})
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .ensure_alignment(kQKVecBytes)
      .verify(q, "q");
  TensorMatcher({N, Hk, head_dim})  //
      .with_strides({Sk_t, Sk_h, 1})
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .ensure_alignment(kQKVecBytes)
      .verify(k, "k");
  TensorMatcher({P, rotary_dim})  //
      .with_dtype<fp32_t>()
      .with_device<kDLCUDA>(device)
      .ensure_alignment(kCacheVecBytes)
      .verify(cos_sin_cache, "cos_sin_cache");

  const RotaryParams<T> params{
      static_cast<T*>(q.data_ptr()),
      static_cast<T*>(k.data_ptr()),
      static_cast<const int64_t*>(positions.data_ptr()),
      static_cast<const float*>(cos_sin_cache.data_ptr()),
      Sq_t.unwrap(),
      Sq_h.unwrap(),
      Sk_t.unwrap(),
      Sk_h.unwrap(),
      N.unwrap(),
      Hq.unwrap(),
      Hk.unwrap(),
      P.unwrap(),
  };
  constexpr int64_t kWarpsPerBlock = kRopeBlockSize / device::kWarpThreads;
  const int64_t blocks = div_ceil(params.num_tokens * (params.num_q_heads + params.num_k_heads), kWarpsPerBlock);
  const uint32_t grid = static_cast<uint32_t>(blocks < 65536 ? blocks : 65536);
  LaunchKernel(grid, kRopeBlockSize, device.unwrap())
      .enable_pdl(kUsePDL)(rotary_embedding_kernel<T, kRotaryDim, kIsNeox, kUsePDL>, params);
}

}  // namespace sglang
