/// \file utils.cuh
/// \brief Device-side utilities, dtype aliases, PDL helpers and `host::LaunchKernel`.
#pragma once

#include <sgl_kernel/utils.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/extra/c_env_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

/// \brief The target architecture as `major * 100 + minor * 10` (900 for sm_90), injected by
/// the JIT build (`-DSGL_CUDA_ARCH=...`). 0 when unknown: arch-gated features are then off.
#ifndef SGL_CUDA_ARCH
#define SGL_CUDA_ARCH 0
#endif

/// \brief 1 when compiling for Hopper (sm_90) or newer.
#define SGL_ARCH_HOPPER_OR_GREATER (SGL_CUDA_ARCH >= 900)
/// \brief 1 when compiling for Blackwell (sm_100) or newer.
#define SGL_ARCH_BLACKWELL_OR_GREATER (SGL_CUDA_ARCH >= 1000)

namespace sglang {

using fp16_t = __half;                  ///< IEEE half precision.
using bf16_t = __nv_bfloat16;           ///< bfloat16.
using fp32_t = float;                   ///< IEEE single precision.
using fp64_t = double;                  ///< IEEE double precision.
using fp8_e4m3_t = __nv_fp8_e4m3;       ///< fp8 e4m3 (finite-only, max 448).
using fp8_e5m2_t = __nv_fp8_e5m2;       ///< fp8 e5m2 (max 57344).
using fp16x2_t = __half2;               ///< Two packed fp16.
using bf16x2_t = __nv_bfloat162;        ///< Two packed bf16.
using fp32x2_t = float2;                ///< Two packed fp32.
using fp32x4_t = float4;                ///< Four packed fp32.
using fp8x2_e4m3_t = __nv_fp8x2_e4m3;   ///< Two packed fp8 e4m3.
using fp8x2_e5m2_t = __nv_fp8x2_e5m2;   ///< Two packed fp8 e5m2.
using fp8x4_e4m3_t = __nv_fp8x4_e4m3;   ///< Four packed fp8 e4m3.
using fp8x4_e5m2_t = __nv_fp8x4_e5m2;   ///< Four packed fp8 e5m2.

namespace device {

/// \brief The logical warp width used throughout the library.
inline constexpr uint32_t kWarpThreads = 32;
/// \brief Alias of `kWarpThreads`.
inline constexpr uint32_t kWarpSize = kWarpThreads;
/// \brief Widest global-memory vector access for the target (32 bytes on Blackwell, else 16).
inline constexpr uint32_t kMaxVecBytes = SGL_ARCH_BLACKWELL_OR_GREATER ? 32 : 16;

/// \brief This thread's index within its group of `kNumThreads` consecutive threads.
///
/// For groups up to a warp it reads the hardware lane register, which folds into address
/// arithmetic more cheaply than a modulo of `threadIdx.x`.
/// \tparam kNumThreads Group width, a power of two.
/// \return The index in `[0, kNumThreads)`.
template <uint32_t kNumThreads = kWarpThreads>
SGL_DEVICE uint32_t get_lane_id() {
  static_assert(kNumThreads > 0 && (kNumThreads & (kNumThreads - 1)) == 0,
                "get_lane_id: the group width must be a power of two");
  if constexpr (kNumThreads <= kWarpThreads) {
    uint32_t lane;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    return lane & (kNumThreads - 1);
  } else {
    return threadIdx.x & (kNumThreads - 1);
  }
}

/// \brief Load a `T` from `ptr` (untyped), at element offset `offset`.
/// \tparam T Loaded type; its alignment is the caller's precondition.
/// \param ptr Base pointer.
/// \param offset Offset in units of `T`.
/// \return The loaded value.
template <typename T>
SGL_DEVICE T load_as(const void* ptr, int64_t offset = 0) {
  return static_cast<const T*>(ptr)[offset];
}

/// \brief Store a `T` to `ptr` (untyped), at element offset `offset`.
/// \tparam T Stored type; its alignment is the caller's precondition.
/// \param ptr Base pointer.
/// \param value The value to store.
/// \param offset Offset in units of `T`.
template <typename T>
SGL_DEVICE void store_as(void* ptr, const T& value, int64_t offset = 0) {
  static_cast<T*>(ptr)[offset] = value;
}

namespace pointer {

/// \brief Device pointer arithmetic: bytes for `void*`, elements for typed pointers.
/// \tparam T Pointee type (may be `void` or `const void`).
/// \tparam Offsets Integer types of the offsets.
/// \param ptr Base pointer.
/// \param offsets Offsets, summed.
/// \return `ptr` moved by the summed offsets, same pointer type.
template <typename T, typename... Offsets>
SGL_DEVICE T* offset(T* ptr, Offsets... offsets) {
  return host::pointer::offset(ptr, offsets...);
}

}  // namespace pointer

/// \brief PDL: wait until the preceding kernel in the stream has finished and its writes are
/// visible. Every read of data that kernel produced must come after this call. No-op unless
/// `kUsePDL` and the target is sm_90 or newer. Not a barrier.
/// \tparam kUsePDL Whether the kernel is launched with PDL.
template <bool kUsePDL>
SGL_DEVICE void PDLWaitPrimary() {
#if SGL_CUDA_ARCH >= 900
  if constexpr (kUsePDL) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
  }
#endif
}

/// \brief PDL: allow the next kernel in the stream to start early. Publishes nothing and
/// orders no memory. No-op unless `kUsePDL` and the target is sm_90 or newer.
/// \tparam kUsePDL Whether the kernel is launched with PDL.
template <bool kUsePDL>
SGL_DEVICE void PDLTriggerSecondary() {
#if SGL_CUDA_ARCH >= 900
  if constexpr (kUsePDL) {
    asm volatile("griddepcontrol.launch_dependents;");
  }
#endif
}

}  // namespace device

}  // namespace sglang

/// \brief Stream-style CUDA check: `CHECK_CUDA(cudaMemsetAsync(...)) << "context";` evaluates the
/// expression once and throws a `PanicError` with the CUDA error string and file/line when it is
/// not `cudaSuccess`. The streamed context is only evaluated on failure.
#define CHECK_CUDA(expr)                                                                        \
  for (::cudaError_t sgl_check_cuda_err_ = (expr); sgl_check_cuda_err_ != ::cudaSuccess;        \
       sgl_check_cuda_err_ = ::cudaSuccess)                                                     \
  ::sglang::host::PanicThrower() &                                                              \
      ::sglang::host::PanicBuilder(__FILE__, __LINE__, "CHECK_CUDA(" #expr ")")                 \
          << ::cudaGetErrorString(sgl_check_cuda_err_) << " "

namespace sglang::host {

/// \brief Function-style CUDA check; prefer `CHECK_CUDA(expr) << ...`, which takes context.
/// \param err A CUDA runtime result.
inline void RuntimeDeviceCheck(cudaError_t err) {
  if (err != cudaSuccess) {
    throw PanicError(std::string("CUDA error: ") + cudaGetErrorString(err));
  }
}

/// \brief Function-style check of the last CUDA error (`cudaGetLastError`).
inline void RuntimeDeviceCheck() {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    throw PanicError(std::string("CUDA error: ") + cudaGetErrorString(err));
  }
}

/// \brief The caller's current stream for `device`, as TVM-FFI (and so PyTorch) sees it.
/// \param device The device the kernel runs on.
/// \return The stream handle (may be the legacy default stream).
inline cudaStream_t get_stream(DLDevice device) {
  return static_cast<cudaStream_t>(TVMFFIEnvGetStream(device.device_type, device.device_id));
}

/// \brief Launches a kernel on the caller's stream and checks the launch.
///
/// `LaunchKernel(grid, block, device)(kernel, args...)` resolves the stream from the
/// `DLDevice` through TVM-FFI, launches with `cudaLaunchKernelEx` and throws a `PanicError`
/// (with file/line of the launch site) if the launch fails. `.enable_pdl(flag)` sets the
/// programmatic-stream-serialization attribute (PDL, sm_90+). An empty grid launches nothing.
class LaunchKernel {
 public:
  /// \brief Launch on the current stream of `device`.
  /// \param grid Grid dimensions.
  /// \param block Block dimensions.
  /// \param device Device of the tensors; its current TVM-FFI stream is used.
  /// \param smem Dynamic shared memory in bytes.
  /// \param file Launch site file, for error messages (defaults to the caller's).
  /// \param line Launch site line (defaults to the caller's).
  LaunchKernel(dim3 grid, dim3 block, DLDevice device, size_t smem = 0,
               const char* file = __builtin_FILE(), int32_t line = __builtin_LINE())
      : LaunchKernel(grid, block, get_stream(device), smem, file, line) {}

  /// \brief Launch on an explicit stream.
  /// \param grid Grid dimensions.
  /// \param block Block dimensions.
  /// \param stream The stream.
  /// \param smem Dynamic shared memory in bytes.
  /// \param file Launch site file.
  /// \param line Launch site line.
  LaunchKernel(dim3 grid, dim3 block, cudaStream_t stream, size_t smem = 0,
               const char* file = __builtin_FILE(), int32_t line = __builtin_LINE())
      : file_(file), line_(line) {
    config_.gridDim = grid;
    config_.blockDim = block;
    config_.dynamicSmemBytes = smem;
    config_.stream = stream;
    config_.attrs = attrs_;
    config_.numAttrs = 0;
  }

  LaunchKernel(const LaunchKernel&) = delete;
  LaunchKernel& operator=(const LaunchKernel&) = delete;

  /// \brief Launch options set together, by designated initializer: `.config({.use_pdl = flag})`.
  struct Config {
    bool use_pdl = false;  ///< Programmatic Dependent Launch, as `enable_pdl(use_pdl)`.
  };

  /// \brief Enable or disable Programmatic Dependent Launch for this launch.
  /// \param enable Whether the kernel may start before the preceding kernel finishes.
  /// \return This launcher, for chaining.
  LaunchKernel& enable_pdl(bool enable = true) {
    pdl_ = enable;
    return *this;
  }

  /// \brief Apply launch options given as one `Config`.
  /// \param options The options; a field left out keeps its default.
  /// \return This launcher, for chaining.
  LaunchKernel& config(const Config& options) {
    return enable_pdl(options.use_pdl);
  }

  /// \brief Launch `kernel` with `args` and check the result.
  /// \tparam KernelArgs Parameter types of the kernel.
  /// \tparam Args Argument types, converted to `KernelArgs`.
  /// \param kernel The `__global__` function.
  /// \param args The kernel arguments.
  template <typename... KernelArgs, typename... Args>
  void operator()(void (*kernel)(KernelArgs...), Args&&... args) {
    static_assert(sizeof...(KernelArgs) == sizeof...(Args), "LaunchKernel: wrong number of kernel arguments");
    if (config_.gridDim.x == 0 || config_.gridDim.y == 0 || config_.gridDim.z == 0) return;
    if (pdl_) {
      attrs_[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attrs_[0].val.programmaticStreamSerializationAllowed = 1;
      config_.numAttrs = 1;
    } else {
      config_.numAttrs = 0;
    }
    config_.attrs = attrs_;
    CHECK_CUDA(cudaLaunchKernelEx(&config_, kernel, static_cast<KernelArgs>(std::forward<Args>(args))...))
        << "(kernel launch at " << file_ << ":" << line_ << ", grid " << config_.gridDim.x << "x"
        << config_.gridDim.y << "x" << config_.gridDim.z << ", block " << config_.blockDim.x << "x"
        << config_.blockDim.y << "x" << config_.blockDim.z << ", smem " << config_.dynamicSmemBytes
        << ", pdl " << pdl_ << ")";
  }

 private:
  cudaLaunchConfig_t config_{};
  cudaLaunchAttribute attrs_[1]{};
  bool pdl_ = false;
  const char* file_;
  int32_t line_;
};

/// \brief Scratch memory from the environment allocator (PyTorch's caching allocator when
/// called from PyTorch): a 1-D uint8 tensor of `nbytes`; empty when `nbytes == 0`. Keep the
/// returned tensor alive across every launch that uses it.
/// \param nbytes Size in bytes.
/// \param device Device to allocate on.
/// \return The workspace tensor.
inline tvm::ffi::Tensor alloc_workspace_tensor(int64_t nbytes, DLDevice device) {
  const int64_t shape[1] = {nbytes < 0 ? 0 : nbytes};
  const DLDataType u8{kDLUInt, 8, 1};
  return tvm::ffi::Tensor::FromEnvAlloc(TVMFFIEnvTensorAlloc, tvm::ffi::ShapeView(shape, 1), u8, device);
}

}  // namespace sglang::host
