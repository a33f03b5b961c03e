/// \file cast.cuh
/// \brief dtype conversion: fp32/fp16/bf16 -> fp8 e4m3 (saturating) and fp8 e4m3 -> fp32/fp16/bf16.
#pragma once

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
 * \brief Vector width (elements) of `cast_kernel`: 16 bytes of the wider of the two types.
 *
 * \tparam TIn  Source element type
 * \tparam TOut Destination element type
 * \return Elements per vector
 */
template <typename TIn, typename TOut>
SGL_DEVICE_HOST constexpr int32_t cast_vec_size() {
  return 16 / static_cast<int32_t>(sizeof(TIn) > sizeof(TOut) ? sizeof(TIn) : sizeof(TOut));
}

/**
 * \brief Converts one element through fp32; conversions to fp8 saturate to +-448.
 *
 * \tparam TOut Destination element type
 * \tparam TIn  Source element type
 * \param x     Source value
 * \return The converted value
 */
template <typename TOut, typename TIn>
SGL_DEVICE TOut convert_element(TIn x) {
  return device::cast<TOut>(device::cast<fp32_t>(x));
}

/**
 * \brief Converts `n` elements from `TIn` to `TOut`, vectorized body plus scalar tail.
 *
 * \tparam TIn     Source element type
 * \tparam TOut    Destination element type
 * \tparam kUsePDL Whether the kernel is launched with PDL
 * \param dst      Output, `n` elements, aligned to `kVecN * sizeof(TOut)`
 * \param src      Input, `n` elements, aligned to `kVecN * sizeof(TIn)`
 * \param n        Number of elements
 */
template <typename TIn, typename TOut, bool kUsePDL>
__global__ void cast_kernel(TOut* __restrict__ dst, const TIn* __restrict__ src, int64_t n) {
  constexpr int32_t kVecN = cast_vec_size<TIn, TOut>();
  const int64_t num_vecs = n / kVecN;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;

  device::PDLWaitPrimary<kUsePDL>();

  for (int64_t vi = first; vi < num_vecs; vi += stride) {
    device::AlignedVector<TIn, kVecN> in;
    device::AlignedVector<TOut, kVecN> out;
    in.load(src, vi);
#pragma unroll
    for (int i = 0; i < kVecN; ++i) out[i] = convert_element<TOut>(in[i]);
    out.store(dst, vi);
  }
  for (int64_t i = num_vecs * kVecN + first; i < n; i += stride) {
    dst[i] = convert_element<TOut>(src[i]);
  }

  device::PDLTriggerSecondary<kUsePDL>();
}

/**
 * \brief Validates the tensors and launches `cast_kernel`.
 *
 * \tparam TIn     Source element type: fp32_t | fp16_t | bf16_t | fp8_e4m3_t
 * \tparam TOut    Destination element type: fp8_e4m3_t, or fp32_t | fp16_t | bf16_t from fp8
 * \tparam kUsePDL Whether to launch with PDL
 * \param dst      Output tensor: 1-D, dtype `TOut`, same length and device as `src`
 * \param src      Input tensor: 1-D CUDA tensor of dtype `TIn`
 */
template <typename TIn, typename TOut, bool kUsePDL>
void cast(tvm::ffi::TensorView dst, tvm::ffi::TensorView src) {
  using namespace host;
  constexpr int32_t kVecN = cast_vec_size<TIn, TOut>();
  constexpr int64_t kInBytes = kVecN * static_cast<int64_t>(sizeof(TIn));
  constexpr int64_t kOutBytes = kVecN * static_cast<int64_t>(sizeof(TOut));

  SymbolicSize N{"num_elements"};
  SymbolicDevice device;
  device.set_options<kDLCUDA>();
  TensorMatcher({N})  //
      .with_device<kDLCUDA>(device)
      .with_dtype<TIn>()
      .ensure_alignment(kInBytes)
      .verify(src, "src");
  TensorMatcher({N})  //
      .with_device<kDLCUDA>(device)
      .with_dtype<TOut>()
      .ensure_alignment(kOutBytes)
      .verify(dst, "dst");

  const int64_t n = N.unwrap();
  constexpr uint32_t kBlockSize = 256;
  const int64_t blocks = div_ceil(div_ceil(n, int64_t{kVecN}), int64_t{kBlockSize});
  const uint32_t grid = static_cast<uint32_t>(blocks < 65536 ? blocks : 65536);
  LaunchKernel(grid, kBlockSize, device.unwrap())
      .enable_pdl(kUsePDL)(cast_kernel<TIn, TOut, kUsePDL>, static_cast<TOut*>(dst.data_ptr()),
                           static_cast<const TIn*>(src.data_ptr()), n);
}

}  // namespace sglang
