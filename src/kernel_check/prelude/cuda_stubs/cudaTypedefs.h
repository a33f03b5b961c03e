// kernel-check hermetic stub of the CUDA toolkit's driver-API function-pointer typedefs
// (`PFN_<name>_v<version>`): the ones CUTLASS and JIT kernels look up at run time.
#pragma once
#include "../kernel_check_cuda_prelude.h"

typedef CUresult (*PFN_cuTensorMapEncodeTiled_v12000)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                                      const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                                      const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                                      CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
typedef CUresult (*PFN_cuTensorMapEncodeIm2col_v12000)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                                       const cuuint64_t*, const cuuint64_t*, const int*, const int*,
                                                       cuuint32_t, cuuint32_t, const cuuint32_t*,
                                                       CUtensorMapInterleave, CUtensorMapSwizzle,
                                                       CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
#define PFN_cuTensorMapEncodeTiled PFN_cuTensorMapEncodeTiled_v12000
#define PFN_cuTensorMapEncodeIm2col PFN_cuTensorMapEncodeIm2col_v12000
