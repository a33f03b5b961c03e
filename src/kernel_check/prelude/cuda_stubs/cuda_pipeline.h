// kernel-check hermetic stub of the CUDA toolkit's asynchronous-copy pipeline primitives
// (the `__pipeline_*` functions; parsing needs their declarations only).
#pragma once
#include "../kernel_check_cuda_prelude.h"

__device__ void __pipeline_memcpy_async(void* __restrict__ dst, const void* __restrict__ src, size_t size_and_align,
                                        size_t zfill = 0);
__device__ void __pipeline_commit();
__device__ void __pipeline_wait_prior(size_t prior);
