/// \file
/// \brief The harness's producer kernel: rewrites a byte buffer after a delay.
///
/// The PDL case (KD401) launches `late_write<true>` right before the kernel under test: it
/// lets its dependents start at once, then waits and writes the real inputs, so a consumer
/// that reads before `PDLWaitPrimary` sees stale values. The stream case (KD402) launches
/// `late_write<false>` on a non-default stream: a kernel that runs on another stream does
/// not wait for it and reads stale values too.
#include <sgl_kernel/tensor.h>
#include <sgl_kernel/utils.cuh>
#include <sgl_kernel/utils.h>

#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>

#include <cstdint>

namespace sglang {

/// \brief Nanoseconds of the GPU's global timer.
/// \return The current global timer value.
SGL_DEVICE uint64_t global_timer_ns() {
  uint64_t now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

/// \brief Waits `delay_ns`, then copies `num_words` 16-byte words from `src` to `dst`.
/// \tparam kTriggerEarly Let the next kernel in the stream start before this one waits.
/// \param dst Destination words.
/// \param src Source words.
/// \param num_words Number of 16-byte words.
/// \param delay_ns How long to wait before writing.
template <bool kTriggerEarly>
__global__ void late_write_kernel(int4* __restrict__ dst, const int4* __restrict__ src, int64_t num_words,
                                  uint64_t delay_ns) {
  device::PDLTriggerSecondary<kTriggerEarly>();
  const uint64_t start = global_timer_ns();
  while (global_timer_ns() - start < delay_ns) {
    __nanosleep(1000);
  }
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < num_words; i += stride) {
    dst[i] = src[i];
  }
}

/// \brief Launches `late_write_kernel` on the caller's stream (a few blocks, so the kernel
/// under test finds free SMs while this one waits).
/// \tparam kTriggerEarly Let the next kernel start before the delay.
/// \param dst Byte buffer to rewrite; its size is a multiple of 16 and it is 16-byte aligned.
/// \param src Byte buffer of the same size with the values to write.
/// \param delay_ns How long to wait before writing.
template <bool kTriggerEarly>
void late_write(tvm::ffi::TensorView dst, tvm::ffi::TensorView src, int64_t delay_ns) {
  using namespace host;
  auto num_bytes = SymbolicSize{"num_bytes"};
  auto device = SymbolicDevice{};
  device.set_options<kDLCUDA>();
  TensorMatcher({num_bytes})  //
      .with_dtype<uint8_t>()
      .with_device<kDLCUDA>(device)
      .ensure_alignment(16)
      .verify(dst)
      .verify(src);
  CHECK_HOST(num_bytes.unwrap() % 16 == 0) << "late_write: size " << num_bytes.unwrap() << " is not a multiple of 16";
  constexpr uint32_t kBlocks = 8;
  constexpr uint32_t kThreads = 256;
  LaunchKernel(kBlocks, kThreads, device.unwrap())(
      late_write_kernel<kTriggerEarly>,
      static_cast<int4*>(dst.data_ptr()),
      static_cast<const int4*>(src.data_ptr()),
      num_bytes.unwrap() / 16,
      static_cast<uint64_t>(delay_ns));
}

}  // namespace sglang
