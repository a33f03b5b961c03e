/// \file per_tensor_quant_fp8.cuh
/// \brief Per-tensor fp8 e4m3 quantization: `scale = absmax(x) / 448` (dynamic) or a given
/// scale (static), then `out = saturate(x / scale)`.
#pragma once

#include <sgl_kernel/atomic.cuh>
#include <sgl_kernel/bits.h>
#include <sgl_kernel/cta.cuh>
#include <sgl_kernel/math.cuh>
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

/// \brief Threads per block of the quantization kernels.
inline constexpr uint32_t kQuantBlockSize = 256;
/// \brief Most blocks the quantization kernels launch (grid-stride beyond).
inline constexpr int64_t kQuantMaxBlocks = 1024;

/**
 * \brief Pass 1: `scale = max(scale, absmax(x) / 448)` through a CTA reduction and one float
 * atomic max per block. `scale` must hold 0 (or a lower bound) before the launch.
 *
 * \tparam T       Input element type: fp16_t | bf16_t | fp32_t
 * \tparam kVecN   Elements per 16-byte vector
 * \tparam kUsePDL Whether the kernel is launched with PDL
 * \param scale    The per-tensor scale, updated atomically
 * \param input    Input, `n` elements, 16-byte aligned
 * \param n        Number of elements
 */
template <typename T, int kVecN, bool kUsePDL>
__global__ void fp8_absmax_kernel(float* scale, const T* __restrict__ input, int64_t n) {
  using vec_t = device::AlignedVector<T, kVecN>;
  __shared__ float smem[device::kWarpThreads];
  const int64_t num_vecs = n / kVecN;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;

  device::PDLWaitPrimary<kUsePDL>();

  float amax = 0.0f;
  for (int64_t vi = first; vi < num_vecs; vi += stride) {
    vec_t v;
    v.load(input, vi);
#pragma unroll
    for (int i = 0; i < kVecN; ++i) amax = device::math::max(amax, device::math::abs(device::cast<fp32_t>(v[i])));
  }
  for (int64_t i = num_vecs * kVecN + first; i < n; i += stride) {
    amax = device::math::max(amax, device::math::abs(device::cast<fp32_t>(input[i])));
  }
  device::cta::reduce_max(amax, smem, 0.0f);
  __syncthreads();
  if (threadIdx.x == 0) {
    device::atomic::max(scale, smem[0] / DTypeTrait<fp8_e4m3_t>::kFloatMax);
  }
  device::PDLTriggerSecondary<kUsePDL>();
}

/**
 * \brief Pass 2: `out = saturate_fp8(x * (1 / scale))`; a zero scale quantizes to zero.
 *
 * \tparam T       Input element type: fp16_t | bf16_t | fp32_t
 * \tparam kVecN   Elements per 16-byte input vector
 * \tparam kUsePDL Whether the kernel is launched with PDL
 * \param out      Output, `n` fp8 elements, aligned to `kVecN` bytes
 * \param input    Input, `n` elements, 16-byte aligned
 * \param scale    The per-tensor scale (one float)
 * \param n        Number of elements
 */
template <typename T, int kVecN, bool kUsePDL>
__global__ void fp8_quant_kernel(fp8_e4m3_t* out, const T* __restrict__ input, const float* __restrict__ scale,
                                 int64_t n) {
  using vec_t = device::AlignedVector<T, kVecN>;
  using qvec_t = device::AlignedVector<fp8_e4m3_t, kVecN>;
  const int64_t num_vecs = n / kVecN;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;

  device::PDLWaitPrimary<kUsePDL>();

  const float s = *scale;
  const float inv = s > 0.0f ? 1.0f / s : 0.0f;
  for (int64_t vi = first; vi < num_vecs; vi += stride) {
    vec_t v;
    qvec_t q;
    v.load(input, vi);
#pragma unroll
    for (int i = 0; i < kVecN; ++i) q[i] = device::cast<fp8_e4m3_t>(device::cast<fp32_t>(v[i]) * inv);
    q.store(out, vi);
  }
  for (int64_t i = num_vecs * kVecN + first; i < n; i += stride) {
    out[i] = device::cast<fp8_e4m3_t>(device::cast<fp32_t>(input[i]) * inv);
  }
  device::PDLTriggerSecondary<kUsePDL>();
}

/**
 * \brief Validates the tensors and launches the absmax pass (dynamic) and the quantization pass.
 *
 * The kernels walk the contiguous tensor as one flat array; the vector width is chosen by the
 * Python wrapper so that it divides a row (then every row start is aligned too).
 *
 * \tparam T         Input element type: fp16_t | bf16_t | fp32_t
 * \tparam kVecBytes Input access width in bytes: 16, 8, 4 or 2, dividing `cols * sizeof(T)`
 * \tparam kIsStatic Use the given `scale` (else compute it; `scale` must then hold 0)
 * \tparam kUsePDL   Whether to launch with PDL
 * \param out        Output `[rows, cols]` fp8 e4m3, contiguous
 * \param input      Input `[rows, cols]`, contiguous
 * \param scale      Scale `[1]` fp32: read (static) or written (dynamic)
 */
template <typename T, int64_t kVecBytes, bool kIsStatic, bool kUsePDL>
void per_tensor_quant_fp8(tvm::ffi::TensorView out, tvm::ffi::TensorView input, tvm::ffi::TensorView scale) {
  using namespace host;
  static_assert(kVecBytes >= static_cast<int64_t>(sizeof(T)) && kVecBytes <= 16 && is_pow2(kVecBytes),
                "per_tensor_quant_fp8: bad vector width");
  constexpr int32_t kVecN = static_cast<int32_t>(kVecBytes / static_cast<int64_t>(sizeof(T)));
  constexpr int64_t kInBytes = kVecBytes;
  constexpr int64_t kOutBytes = kVecN;
  SymbolicSize M{"num_rows"};
  SymbolicSize K{"num_cols"};
  SymbolicDevice device;
  device.set_options<kDLCUDA>();
  TensorMatcher({M, K})  //
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .ensure_alignment(kInBytes)
      .verify(input, "input");
  TensorMatcher({M, K})  //
      .with_device<kDLCUDA>(device)
      .with_dtype<fp8_e4m3_t>()
      .ensure_alignment(kOutBytes)
      .verify(out, "out");
  TensorMatcher({1})  //
      .with_device<kDLCUDA>(device)
      .with_dtype<fp32_t>()
      .ensure_alignment(static_cast<int64_t>(sizeof(float)))
      .verify(scale, "scale");

  CHECK_HOST((K.unwrap() * static_cast<int64_t>(sizeof(T))) % kVecBytes == 0)
      << "per_tensor_quant_fp8: a row of " << K.unwrap() << " elements is not a multiple of the " << kVecBytes
      << "-byte vector width";
  const int64_t n = M.unwrap() * K.unwrap();
  const int64_t blocks = div_ceil(div_ceil(n, int64_t{kVecN}), int64_t{kQuantBlockSize});
  const uint32_t grid = static_cast<uint32_t>(blocks < kQuantMaxBlocks ? blocks : kQuantMaxBlocks);
  const DLDevice dev = device.unwrap();
  const auto* in_ptr = static_cast<const T*>(input.data_ptr());
  auto* scale_ptr = static_cast<float*>(scale.data_ptr());
  if constexpr (!kIsStatic) {
    LaunchKernel(grid, kQuantBlockSize, dev).enable_pdl(kUsePDL)(fp8_absmax_kernel<T, kVecN, kUsePDL>, scale_ptr, in_ptr, n);
  }
  LaunchKernel(grid, kQuantBlockSize, dev)
      .enable_pdl(kUsePDL)(fp8_quant_kernel<T, kVecN, kUsePDL>, static_cast<fp8_e4m3_t*>(out.data_ptr()), in_ptr,
                           static_cast<const float*>(scale_ptr), n);
}

}  // namespace sglang
