/// \file atomic.cuh
/// \brief Atomic helpers missing from the CUDA runtime.
#pragma once

#include <sgl_kernel/utils.cuh>

#include <cstdint>

namespace sglang::device::atomic {

/// \brief Atomic maximum on a float in global or shared memory.
///
/// Non-negative floats order like their bit patterns as signed integers, negative floats in
/// reverse as unsigned integers, so one integer atomic suffices. NaN inputs are not supported.
/// \param addr The float to update.
/// \param value Candidate maximum.
/// \return The previous value.
SGL_DEVICE float max(float* addr, float value) {
  if (value >= 0.0f) {
    return __int_as_float(atomicMax(reinterpret_cast<int32_t*>(addr), __float_as_int(value)));
  }
  return __uint_as_float(atomicMin(reinterpret_cast<uint32_t*>(addr), __float_as_uint(value)));
}

}  // namespace sglang::device::atomic
