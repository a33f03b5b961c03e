/// \file
/// \brief The harness's producer kernel: rewrites a byte buffer after a delay; and a canary
/// that shows whether a PDL-launched kernel really starts before its predecessor ends.
///
/// The PDL case (KD401) launches `late_write<true>` right before the kernel under test on
/// the same stream: its few blocks let their dependents start at once
/// (`griddepcontrol.launch_dependents`), spin on the GPU's clock, and only then write the
/// real inputs, so a consumer that reads before `PDLWaitPrimary` sees stale values. The
/// stream case (KD402) launches `late_write<false>` on a non-default stream: a kernel that
/// runs on another stream does not wait for it and reads stale values too.
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

/// \brief SM clock cycles allowed per nanosecond of delay: the cap that ends the wait should
/// the global timer stall (several times the H200's 1.98 GHz boost clock).
inline constexpr int64_t kCyclesPerNsCap = 8;

/// \brief Lets dependents start, waits `delay_ns` on the device, then copies `num_words`
/// 16-byte words from `src` to `dst`.
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
  const int64_t first_cycle = clock64();
  const int64_t cycle_cap = static_cast<int64_t>(delay_ns) * kCyclesPerNsCap;
  while (global_timer_ns() - start < delay_ns && clock64() - first_cycle < cycle_cap) {
    __nanosleep(1000);
  }
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < num_words; i += stride) {
    dst[i] = src[i];
  }
}

/// \brief Launches `late_write_kernel` on the caller's stream: a few blocks, so that the
/// kernel under test finds free SMs while this one waits.
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

/// \brief Reads `flag` before and after `PDLWaitPrimary`: `seen = {before, after}`.
///
/// The loads are volatile on purpose: a `const __restrict__` load becomes `ld.global.nc`,
/// and ptxas may then move `griddepcontrol.wait` above it, so the early read would not be
/// early at all.
/// \param flag The word the preceding `late_write<true>` rewrites late.
/// \param seen Two words: the value before the wait, and after it.
__global__ void pdl_canary_kernel(const uint32_t* flag, uint32_t* seen) {
  const uint32_t before = *static_cast<const volatile uint32_t*>(flag);
  device::PDLWaitPrimary<true>();
  const uint32_t after = *static_cast<const volatile uint32_t*>(flag);
  if (threadIdx.x == 0) {
    seen[0] = before;
    seen[1] = after;
  }
}

/// \brief Launches `pdl_canary_kernel` with PDL on the caller's stream (one warp).
/// \param flag Byte buffer (at least 4 bytes, 4-byte aligned) whose first word is read.
/// \param seen int32 tensor of 2 elements receiving the values read before and after the wait.
void pdl_canary(tvm::ffi::TensorView flag, tvm::ffi::TensorView seen) {
  using namespace host;
  auto num_bytes = SymbolicSize{"num_bytes"};
  auto device = SymbolicDevice{};
  device.set_options<kDLCUDA>();
  TensorMatcher({num_bytes}).with_dtype<uint8_t>().with_device<kDLCUDA>(device).ensure_alignment(4).verify(flag);
  TensorMatcher({2}).with_dtype<int32_t>().with_device<kDLCUDA>(device).verify(seen);
  CHECK_HOST(num_bytes.unwrap() >= 4) << "pdl_canary: the flag buffer holds " << num_bytes.unwrap() << " bytes";
  LaunchKernel(1, 32, device.unwrap())
      .enable_pdl(true)(pdl_canary_kernel, static_cast<const uint32_t*>(flag.data_ptr()),
                        static_cast<uint32_t*>(seen.data_ptr()));
}

}  // namespace sglang
