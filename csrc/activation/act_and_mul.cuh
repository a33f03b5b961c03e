/// \file act_and_mul.cuh
/// \brief Gated activations: `out = act(x[..., :d]) * x[..., d:]` for SiLU and GELU (erf).
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

/// \brief The activations `act_and_mul` supports.
enum class Activation : uint32_t {
  kSiLU,  ///< x * sigmoid(x)
  kGeLU,  ///< 0.5 * x * (1 + erf(x / sqrt(2)))
};

/**
 * \brief Applies the activation in fp32.
 *
 * \tparam kAct The activation
 * \param x     Input value
 * \return act(x)
 */
template <Activation kAct>
SGL_DEVICE float apply_activation(float x) {
  if constexpr (kAct == Activation::kSiLU) {
    return x / (1.0f + expf(-x));
  } else {
    return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
  }
}

/**
 * \brief One block per row: `out[r, j] = act(in[r, j]) * in[r, d + j]` for `j < d`.
 *
 * \tparam T       Element type: fp16_t | bf16_t | fp32_t
 * \tparam kAct    The activation
 * \tparam kVecN   Elements per vector access (1 when `d` is not a multiple of the 16-byte width)
 * \tparam kUsePDL Whether the kernel is launched with PDL
 * \param out      Output, `[rows, d]` contiguous
 * \param in       Input, `[rows, 2 * d]`, row stride `in_stride` elements
 * \param d        Output width
 * \param in_stride Input row stride in elements
 */
template <typename T, Activation kAct, int kVecN, bool kUsePDL>
__global__ void act_and_mul_kernel(T* __restrict__ out, const T* __restrict__ in, int64_t d, int64_t in_stride) {
  using vec_t = device::AlignedVector<T, kVecN>;
  const int64_t row = blockIdx.x;
  const T* gate = in + row * in_stride;
  const T* up = gate + d;
  T* dst = out + row * d;
  const int64_t num_vecs = d / kVecN;

  device::PDLWaitPrimary<kUsePDL>();

  for (int64_t vi = threadIdx.x; vi < num_vecs; vi += blockDim.x) {
    vec_t g;
    vec_t u;
    g.load(gate, vi);
    u.load(up, vi);
#pragma unroll
    for (int i = 0; i < kVecN; ++i) {
      const float a = apply_activation<kAct>(device::cast<fp32_t>(g[i]));
      g[i] = device::cast<T>(a * device::cast<fp32_t>(u[i]));
    }
    g.store(dst, vi);
  }

  device::PDLTriggerSecondary<kUsePDL>();
}

/**
 * \brief Validates the tensors and launches `act_and_mul_kernel`.
 *
 * \tparam T          Element type: fp16_t | bf16_t | fp32_t
 * \tparam kAct       The activation
 * \tparam kVecBytes  Access width in bytes, chosen by the Python wrapper: the largest of
 *                    16/8/4/2 dividing `d * sizeof(T)`
 * \tparam kUsePDL    Whether to launch with PDL
 * \param out         Output `[rows, d]`, contiguous
 * \param in          Input `[rows, 2 * d]`, unit inner stride, any row stride
 */
template <typename T, Activation kAct, int64_t kVecBytes, bool kUsePDL>
void act_and_mul(tvm::ffi::TensorView out, tvm::ffi::TensorView in) {
  using namespace host;
  static_assert(kVecBytes >= static_cast<int64_t>(sizeof(T)) && kVecBytes <= 16 && is_pow2(kVecBytes),
                "act_and_mul: bad vector width");
  constexpr int32_t kVecN = static_cast<int32_t>(kVecBytes / static_cast<int64_t>(sizeof(T)));

  SymbolicSize M{"num_tokens"};
  SymbolicSize D{"d"};
  SymbolicSize D2{"2 * d"};
  SymbolicSize S{"input_row_stride"};
  SymbolicDevice device;
  device.set_options<kDLCUDA>();
  TensorMatcher({M, D2})  //
      .with_strides({S, 1})
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .ensure_alignment(kVecBytes)
      .verify(in, "input");
  const int64_t d2 = D2.unwrap();
  CHECK_HOST(d2 % 2 == 0) << "act_and_mul: the last dim of `input` must be even, got " << d2;
  D.set_value(d2 / 2);
  TensorMatcher({M, D})  //
      .with_device<kDLCUDA>(device)
      .with_dtype<T>()
      .ensure_alignment(kVecBytes)
      .verify(out, "out");

  const int64_t d = D.unwrap();
  const int64_t rows = M.unwrap();
  CHECK_HOST((d * static_cast<int64_t>(sizeof(T))) % kVecBytes == 0)
      << "act_and_mul: d = " << d << " is not a multiple of the " << kVecBytes << "-byte vector width";
  CHECK_HOST(rows < (int64_t{1} << 31)) << "act_and_mul: too many rows (" << rows << ")";
  const int64_t work = d / kVecN;
  const int64_t threads = work >= 1024 ? 1024 : div_ceil(work < 1 ? int64_t{1} : work, int64_t{32}) * 32;
  LaunchKernel(static_cast<uint32_t>(rows), static_cast<uint32_t>(threads), device.unwrap())
      .enable_pdl(kUsePDL)(act_and_mul_kernel<T, kAct, kVecN, kUsePDL>, static_cast<T*>(out.data_ptr()),
                           static_cast<const T*>(in.data_ptr()), d, S.unwrap());
}

/**
 * \brief `out = silu(in[:, :d]) * in[:, d:]`.
 *
 * \tparam T         Element type: fp16_t | bf16_t | fp32_t
 * \tparam kVecBytes Access width in bytes (see `act_and_mul`)
 * \tparam kUsePDL   Whether to launch with PDL
 * \param out        Output `[rows, d]`
 * \param in         Input `[rows, 2 * d]`
 */
template <typename T, int64_t kVecBytes, bool kUsePDL>
void silu_and_mul(tvm::ffi::TensorView out, tvm::ffi::TensorView in) {
  act_and_mul<T, Activation::kSiLU, kVecBytes, kUsePDL>(out, in);
}

/**
 * \brief `out = gelu(in[:, :d]) * in[:, d:]` (exact, erf-based GELU).
 *
 * \tparam T         Element type: fp16_t | bf16_t | fp32_t
 * \tparam kVecBytes Access width in bytes (see `act_and_mul`)
 * \tparam kUsePDL   Whether to launch with PDL
 * \param out        Output `[rows, d]`
 * \param in         Input `[rows, 2 * d]`
 */
template <typename T, int64_t kVecBytes, bool kUsePDL>
void gelu_and_mul(tvm::ffi::TensorView out, tvm::ffi::TensorView in) {
  act_and_mul<T, Activation::kGeLU, kVecBytes, kUsePDL>(out, in);
}

}  // namespace sglang
