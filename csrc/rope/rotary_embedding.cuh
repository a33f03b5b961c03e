/// \file rotary_embedding.cuh
/// \brief Rotary position embedding of q and k in place, neox (split halves) or interleaved
/// (GPT-J pairs) layout, from a `[max_position, rotary_dim]` fp32 cos|sin cache.
#pragma once

#include <sgl_kernel/bits.h>
#include <sgl_kernel/qk_heads.cuh>
#include <sgl_kernel/runtime.cuh>
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
  device::QKHeads<T> heads;                 ///< Query and key heads, rotated in place
  const int64_t* __restrict__ positions;    ///< Position of each token
  const float* __restrict__ cos_sin_cache;  ///< `[max_position, rotary_dim]`: cos then sin halves
  int64_t max_position;                     ///< Rows of the cache; other positions are left unrotated
};

/// \brief Threads per block of `rotary_embedding_kernel`.
inline constexpr uint32_t kRopeBlockSize = 256;
/// \brief Bytes of q/k each lane of `rotary_embedding_kernel` loads per step before it uses any of them
/// (on the H200, 32 or 64 ran slower than 16: fewer resident warps; see bench/README.md).
inline constexpr uint32_t kRopeLaneBytes = 16;

/**
 * \brief How `rotary_embedding_kernel` splits a warp: a group of lanes per head (each lane one
 * or more vector chunks of it), several heads per warp, and several heads per group per step
 * only where one head gives a lane less than `kRopeLaneBytes`.
 *
 * \tparam T          Element type of q and k
 * \tparam kRotaryDim Rotated dims per head
 * \tparam kIsNeox    Neox layout (else interleaved)
 */
template <typename T, uint32_t kRotaryDim, bool kIsNeox>
struct RopeWarpLayout {
  /// Rotation pairs per vector access.
  static constexpr uint32_t kPairs = rope_pairs_per_vec<T, kRotaryDim, kIsNeox>();
  /// Chunks of `kPairs` pairs per head.
  static constexpr uint32_t kChunks = kRotaryDim / 2 / kPairs;
  /// Lanes that share one head: a power of two, at most a warp.
  static constexpr uint32_t kLanesPerHead =
      kChunks >= device::kWarpThreads ? device::kWarpThreads : static_cast<uint32_t>(host::round_up_pow2(kChunks));
  /// Chunks of one head each lane handles.
  static constexpr uint32_t kChunkIters = (kChunks + kLanesPerHead - 1) / kLanesPerHead;
  /// Heads one warp covers at once.
  static constexpr uint32_t kHeadsPerWarp = device::kWarpThreads / kLanesPerHead;
  /// Bytes of q/k one lane moves for one head.
  static constexpr uint32_t kHeadLaneBytes = kChunkIters * kPairs * 2 * static_cast<uint32_t>(sizeof(T));
  /// Heads each lane group loads per step, 1 to 4: about `kRopeLaneBytes` of q/k per lane.
  static constexpr uint32_t kHeadsPerStep = kRopeLaneBytes / kHeadLaneBytes < 1 ? 1
                                            : kRopeLaneBytes / kHeadLaneBytes > 4 ? 4
                                                                                   : kRopeLaneBytes / kHeadLaneBytes;
};

/**
 * \brief Persistent kernel over the (token, head) items of q then k: each group of lanes loads
 * `kHeadsPerStep` heads and their positions, then the cos/sin rows, then rotates and stores
 * the first `kRotaryDim` dims of each head, and strides on.
 *
 * \tparam T          Element type: fp16_t | bf16_t | fp32_t
 * \tparam kRotaryDim Rotated dims per head (even, <= head size)
 * \tparam kIsNeox    Neox layout (pairs `i, i + R/2`) or interleaved (pairs `2i, 2i + 1`)
 * \tparam kUsePDL    Whether the kernel is launched with PDL
 * \param params      Pointers, strides and sizes
 */
template <typename T, uint32_t kRotaryDim, bool kIsNeox, bool kUsePDL>
__global__ void rotary_embedding_kernel(const RotaryParams<T> params) {
  using Layout = RopeWarpLayout<T, kRotaryDim, kIsNeox>;
  constexpr uint32_t kHalf = kRotaryDim / 2;
  constexpr uint32_t kPairs = Layout::kPairs;
  constexpr int32_t kIters = static_cast<int32_t>(Layout::kChunkIters);
  constexpr int32_t kItems = static_cast<int32_t>(Layout::kHeadsPerStep);
  constexpr int32_t kParts = kIsNeox ? 2 : 1;  // vectors per chunk: both halves (neox) or one run of pairs
  constexpr int64_t kWarpsPerBlock = kRopeBlockSize / device::kWarpThreads;
  constexpr int64_t kHeadsPerWarp = Layout::kHeadsPerWarp;
  using fvec_t = device::AlignedVector<float, static_cast<int>(kPairs)>;
  using vec_t = device::AlignedVector<T, static_cast<int>(kPairs * (kIsNeox ? 1 : 2))>;

  const int64_t total = params.heads.num_rows();
  const uint32_t sub = device::get_lane_id<Layout::kLanesPerHead>();
  const int64_t group = device::get_lane_id<device::kWarpThreads>() / Layout::kLanesPerHead;
  const int64_t warp = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / device::kWarpThreads;
  const int64_t step = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock * kHeadsPerWarp * kItems;

  device::PDLWaitPrimary<kUsePDL>();

  for (int64_t first = warp * kHeadsPerWarp * kItems + group; first < total; first += step) {
    device::QKHeadCursor at(first, params.heads.heads_per_token());
    T* rows[kItems];
    bool valid[kItems];
    int64_t pos[kItems];
#pragma unroll
    for (int it = 0; it < kItems; ++it) {
      rows[it] = params.heads.row(at.token, at.head);
      valid[it] = first + it * kHeadsPerWarp < total;
      pos[it] = valid[it] ? params.positions[at.token] : -1;
      at.advance(kHeadsPerWarp);
    }
    vec_t x[kItems][kIters][kParts];
#pragma unroll
    for (int it = 0; it < kItems; ++it) {
#pragma unroll
      for (int j = 0; j < kIters; ++j) {
        const uint32_t c = sub + static_cast<uint32_t>(j) * Layout::kLanesPerHead;
        if (valid[it] && c < Layout::kChunks) {  // independent of the position load above
#pragma unroll
          for (int h = 0; h < kParts; ++h) x[it][j][h].load(rows[it] + h * kHalf, c);
        }
      }
    }
    fvec_t cos_v[kItems][kIters];
    fvec_t sin_v[kItems][kIters];
#pragma unroll
    for (int it = 0; it < kItems; ++it) {
      if (pos[it] >= params.max_position) pos[it] = -1;
      const float* cos_row = params.cos_sin_cache + pos[it] * kRotaryDim;
#pragma unroll
      for (int j = 0; j < kIters; ++j) {
        const uint32_t c = sub + static_cast<uint32_t>(j) * Layout::kLanesPerHead;
        if (pos[it] >= 0 && c < Layout::kChunks) {
          cos_v[it][j].load(cos_row, c);
          sin_v[it][j].load(cos_row + kHalf, c);
        }
      }
    }
#pragma unroll
    for (int it = 0; it < kItems; ++it) {
#pragma unroll
      for (int j = 0; j < kIters; ++j) {
        const uint32_t c = sub + static_cast<uint32_t>(j) * Layout::kLanesPerHead;
        if (pos[it] < 0 || c >= Layout::kChunks) continue;
        vec_t& lo = x[it][j][0];
        vec_t& hi = x[it][j][kParts - 1];
#pragma unroll
        for (int i = 0; i < static_cast<int>(kPairs); ++i) {
          // neox: pair i is (lo[i], hi[i]); interleaved: (lo[2i], lo[2i + 1]) of the one vector
          const int32_t ia = kIsNeox ? i : 2 * i;
          const int32_t ib = kIsNeox ? i : 2 * i + 1;
          const float a = device::cast<fp32_t>(lo[ia]);
          const float b = device::cast<fp32_t>(hi[ib]);
          lo[ia] = device::cast<T>(a * cos_v[it][j][i] - b * sin_v[it][j][i]);
          hi[ib] = device::cast<T>(b * cos_v[it][j][i] + a * sin_v[it][j][i]);
        }
#pragma unroll
        for (int h = 0; h < kParts; ++h) x[it][j][h].store(rows[it] + h * kHalf, c);
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
      {static_cast<T*>(q.data_ptr()), static_cast<T*>(k.data_ptr()), Sq_t.unwrap(), Sq_h.unwrap(), Sk_t.unwrap(),
       Sk_h.unwrap(), N.unwrap(), Hq.unwrap(), Hk.unwrap()},
      static_cast<const int64_t*>(positions.data_ptr()),
      static_cast<const float*>(cos_sin_cache.data_ptr()),
      P.unwrap(),
  };
  using Layout = RopeWarpLayout<T, kRotaryDim, kIsNeox>;
  const auto kernel = rotary_embedding_kernel<T, kRotaryDim, kIsNeox, kUsePDL>;
  static const uint32_t occupancy = runtime::get_blocks_per_sm(kernel, kRopeBlockSize);
  const DLDevice dev = device.unwrap();
  constexpr int64_t kHeadsPerBlock =
      kRopeBlockSize / device::kWarpThreads * Layout::kHeadsPerWarp * Layout::kHeadsPerStep;
  const uint32_t grid = runtime::get_persistent_grid(params.heads.num_rows(), kHeadsPerBlock, occupancy, dev.device_id);
  LaunchKernel(grid, kRopeBlockSize, dev).enable_pdl(kUsePDL)(kernel, params);
}

}  // namespace sglang
