/// \file scale.cuh
/// \brief Element-wise scale `dst = src * factor`, 128-bit vectorized, optional PDL.
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
 * \brief Scales `n` elements by `factor`: 16-byte vectors for the body, scalars for the tail.
 *
 * \tparam T       Element type: fp16_t | bf16_t | fp32_t
 * \tparam kVecN   Elements per vector (16 bytes / sizeof(T))
 * \tparam kUsePDL Whether the kernel is launched with PDL
 * \param dst      Output, `n` elements, 16-byte aligned
 * \param src      Input, `n` elements, 16-byte aligned
 * \param factor   Scale factor
 * \param n        Number of elements
 */
template <typename T, int kVecN, bool kUsePDL>
__global__ void scale_kernel(T* __restrict__ dst, const T* __restrict__ src, float factor, int64_t n) {
  using vec_t = device::AlignedVector<T, kVecN>;
  const int64_t num_vecs = n / kVecN;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;

  // Everything above overlaps the previous kernel's tail; `src` is read only after the wait.
  device::PDLWaitPrimary<kUsePDL>();

  for (int64_t vi = first; vi < num_vecs; vi += stride) {
    vec_t v;
    v.load(src, vi);
#pragma unroll
    for (int i = 0; i < kVecN; ++i) {
      v[i] = device::cast<T>(device::cast<fp32_t>(v[i]) * factor);
    }
    v.store(dst, vi);
  }
  for (int64_t i = num_vecs * kVecN + first; i < n; i += stride) {
    dst[i] = device::cast<T>(device::cast<fp32_t>(src[i]) * factor);
  }

  device::PDLTriggerSecondary<kUsePDL>();
}

/**
 * \brief Validates the tensors and launches `scale_kernel` on the caller's stream.
 *
 * \tparam T       Element type: fp16_t | bf16_t | fp32_t
 * \tparam kUsePDL Whether to launch with PDL
 * \param dst      Output tensor: 1-D, same shape, dtype and device as `src`
 * \param src      Input tensor: 1-D CUDA tensor
 * \param factor   Scale factor
 */
template <typename T, bool kUsePDL>
void scale(tvm::ffi::TensorView dst, tvm::ffi::TensorView src, float factor) {
  using namespace host;
  constexpr int32_t kVecN = 16 / static_cast<int32_t>(sizeof(T));
  constexpr int64_t kVecBytes = kVecN * static_cast<int64_t>(sizeof(T));

  SymbolicSize N{"num_elements"};
  SymbolicDevice device;
  device.set_options<kDLCUDA>();
  TensorMatcher({N})  //
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .ensure_alignment(kVecBytes)
      .verify(dst, "dst")
      .verify(src, "src");

  const int64_t n = N.unwrap();
  constexpr uint32_t kBlockSize = 256;
  const int64_t work = div_ceil(n, int64_t{kVecN});
  const int64_t blocks = div_ceil(work, int64_t{kBlockSize});
  const uint32_t grid = static_cast<uint32_t>(blocks < 65536 ? blocks : 65536);
  LaunchKernel(grid, kBlockSize, device.unwrap())
      .enable_pdl(kUsePDL)(scale_kernel<T, kVecN, kUsePDL>, static_cast<T*>(dst.data_ptr()),
                           static_cast<const T*>(src.data_ptr()), factor, n);
}

}  // namespace sglang
