/// \file add_constant.cuh
/// \brief Minimal reference kernel: `dst = src + kConstant`.
#pragma once

#include <sgl_kernel/tensor.h>
#include <sgl_kernel/type.cuh>
#include <sgl_kernel/utils.cuh>
#include <sgl_kernel/utils.h>

#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>

#include <cstdint>

namespace sglang {

/**
 * \brief Adds a compile-time constant to every element (grid-stride, scalar accesses).
 *
 * \tparam T         Element type: int32_t | fp32_t
 * \tparam kConstant The constant to add
 * \param dst        Output, `n` elements
 * \param src        Input, `n` elements
 * \param n          Number of elements
 */
template <typename T, int32_t kConstant>
__global__ void add_constant_kernel(T* __restrict__ dst, const T* __restrict__ src, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    dst[i] = src[i] + static_cast<T>(kConstant);
  }
}

/**
 * \brief Validates `dst` and `src` (same 1-D shape, dtype `T`, CUDA) and launches `add_constant_kernel`.
 *
 * \tparam T         Element type: int32_t | fp32_t
 * \tparam kConstant The constant to add
 * \param dst        Output tensor
 * \param src        Input tensor
 */
template <typename T, int32_t kConstant>
void add_constant(tvm::ffi::TensorView dst, tvm::ffi::TensorView src) {
  using namespace host;
  SymbolicSize N{"num_elements"};
  SymbolicDevice device;
  device.set_options<kDLCUDA>();
  TensorMatcher({N})  //
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .verify(dst, "dst")
      .verify(src, "src");
  const int64_t n = N.unwrap();
  constexpr uint32_t kBlockSize = 256;
  const int64_t blocks = div_ceil(n, int64_t{kBlockSize});
  const uint32_t grid = static_cast<uint32_t>(blocks < 65536 ? blocks : 65536);
  LaunchKernel(grid, kBlockSize, device.unwrap())(
      add_constant_kernel<T, kConstant>, static_cast<T*>(dst.data_ptr()), static_cast<const T*>(src.data_ptr()), n);
}

}  // namespace sglang
