// Hermetic CUDA prelude for kernel-check's static analysis.
//
// Force-included (-include) when no CUDA installation is used. It declares, never
// defines, the CUDA language built-ins, vector types, half/bfloat16/fp8 types and the
// runtime API that JIT kernels touch, so that libclang can type a kernel source without
// a CUDA toolkit. Nothing here is compiled or run: declarations only need to be precise
// enough for overload resolution and type checks. The stub headers next to this file
// (cuda_runtime.h, cuda_fp16.h, ...) are empty so `#include <cuda_fp16.h>` resolves.
#pragma once
#ifndef KERNEL_CHECK_CUDA_PRELUDE
#define KERNEL_CHECK_CUDA_PRELUDE 1

// The device overloads of the C++ math functions (`tanh(double)` in a kernel), declared
// before the standard library's as clang's CUDA runtime wrapper does in system mode: declared
// after, the library's constexpr `float`/`long double` overloads (implicitly host+device)
// would be the only device candidates, and a `double` argument would be ambiguous.
#include <__clang_cuda_math_forward_declares.h>
// clang's CUDA <new> wrapper uses ::malloc / ::free, which it expects a prelude to declare.
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
// The real cuda_runtime.h reaches <math.h>, <string.h> and <assert.h>, so kernels use
// INFINITY, memcpy and assert without including them; clang's CUDA runtime wrapper (system
// mode) includes <climits> too, and kernels use INT_MIN the same way.
#include <assert.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#define __host__ __attribute__((host))
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __managed__ __attribute__((managed))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __maxnreg__(n) __attribute__((maxnreg(n)))  // as CUDA spells it; clang ignores it
#define __grid_constant__ __attribute__((grid_constant))
#define __cluster_dims__(...) __attribute__((cluster_dims(__VA_ARGS__)))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __align__(n) __attribute__((aligned(n)))
#define __CUDA_ALIGN__(n) __align__(n)
#define __device_builtin__
#define __builtin_align__(n) __attribute__((aligned(n)))
// nvcc and clang's own CUDA wrapper headers define this; sources gate device code on it.
#ifndef __CUDACC__
#define __CUDACC__ 1
#endif
#define CUDART_VERSION 13000
#define CUDA_VERSION 13000
#define __CUDACC_VER_MAJOR__ 13
#define __CUDACC_VER_MINOR__ 0

#include <__clang_cuda_builtin_vars.h>

#define KC_HD __host__ __device__
#define KC_D __device__

// The built-in variables header only forward-declares uint3; dim3 converts to and from it.
struct uint3 {
  unsigned int x, y, z;
};

// ---- dim3 and vector types ------------------------------------------------------------
struct dim3 {
  unsigned int x, y, z;
  constexpr KC_HD dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr KC_HD dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr KC_HD operator uint3() const { return uint3{x, y, z}; }
};

#define KC_VEC1(T, N, A) struct __attribute__((aligned(A))) N##1 { T x; };
#define KC_VEC2(T, N, A) struct __attribute__((aligned(A))) N##2 { T x, y; };
#define KC_VEC3(T, N) struct N##3 { T x, y, z; };
#define KC_VEC4(T, N, A) struct __attribute__((aligned(A))) N##4 { T x, y, z, w; };
#define KC_VECS(T, N, S)                                           \
  KC_VEC1(T, N, S) KC_VEC2(T, N, 2 * S) KC_VEC3(T, N) KC_VEC4(T, N, 4 * S) \
  KC_HD N##1 make_##N##1(T);                                       \
  KC_HD N##2 make_##N##2(T, T);                                    \
  KC_HD N##3 make_##N##3(T, T, T);                                 \
  KC_HD N##4 make_##N##4(T, T, T, T);

KC_VECS(signed char, char, 1)
KC_VECS(unsigned char, uchar, 1)
KC_VECS(short, short, 2)
KC_VECS(unsigned short, ushort, 2)
KC_VECS(int, int, 4)
KC_VECS(float, float, 4)
KC_VECS(long long, longlong, 8)
KC_VECS(unsigned long long, ulonglong, 8)
KC_VECS(double, double, 8)
KC_VEC1(unsigned int, uint, 4)
KC_VEC2(unsigned int, uint, 8)
KC_VEC4(unsigned int, uint, 16)
KC_HD uint2 make_uint2(unsigned int, unsigned int);
KC_HD uint4 make_uint4(unsigned int, unsigned int, unsigned int, unsigned int);
KC_VEC1(long, long, 8)
KC_VEC2(long, long, 16)
KC_VEC1(unsigned long, ulong, 8)
KC_VEC2(unsigned long, ulong, 16)
KC_VEC3(long, long)
KC_VEC3(unsigned long, ulong)
KC_VEC4(long, long, 16)
KC_VEC4(unsigned long, ulong, 16)
// CUDA 13 spells the alignment of its 32-byte vectors in the name (`long4` is deprecated there);
// libcu++ and CUTLASS name them all
#define KC_VEC4_ALIGNED(T, N)                                                  \
  struct __attribute__((aligned(16))) N##4_16a { T x, y, z, w; };             \
  struct __attribute__((aligned(32))) N##4_32a { T x, y, z, w; };             \
  KC_HD N##4_16a make_##N##4_16a(T, T, T, T);                                  \
  KC_HD N##4_32a make_##N##4_32a(T, T, T, T);
KC_VEC4_ALIGNED(long, long)
KC_VEC4_ALIGNED(unsigned long, ulong)
KC_VEC4_ALIGNED(long long, longlong)
KC_VEC4_ALIGNED(unsigned long long, ulonglong)
KC_VEC4_ALIGNED(double, double)

// ---- runtime API types -------------------------------------------------------------------
enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3,
  cudaErrorCudartUnloading = 4,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidSymbol = 13,
  cudaErrorInsufficientDriver = 35,
  cudaErrorCallRequiresNewerDriver = 36,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidDeviceFunction = 98,
  cudaErrorNoKernelImageForDevice = 209,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorSymbolNotFound = 500,
  cudaErrorNotReady = 600,
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchOutOfResources = 701,
  cudaErrorPeerAccessAlreadyEnabled = 704,
  cudaErrorIllegalInstruction = 715,
  cudaErrorLaunchFailure = 719,
  cudaErrorNotSupported = 801,
  cudaErrorUnknown = 999
};
typedef enum cudaError cudaError_t;
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
typedef struct CUgraph_st* cudaGraph_t;
typedef struct CUgraphExec_st* cudaGraphExec_t;
// The per-thread default stream handle (a constant the runtime recognises).
#define cudaStreamPerThread ((cudaStream_t)0x2)
#define cudaStreamLegacy ((cudaStream_t)0x1)
enum cudaRoundMode { cudaRoundNearest, cudaRoundZero, cudaRoundPosInf, cudaRoundMinInf };
// Inter-process memory handles (opaque 64-byte records).
#define CUDA_IPC_HANDLE_SIZE 64
struct cudaIpcMemHandle_t { char reserved[CUDA_IPC_HANDLE_SIZE]; };
struct cudaIpcEventHandle_t { char reserved[CUDA_IPC_HANDLE_SIZE]; };
#define cudaIpcMemLazyEnablePeerAccess 0x01
// Batched copies (CUDA 12.8+).
enum cudaMemLocationType {
  cudaMemLocationTypeInvalid = 0,
  cudaMemLocationTypeDevice = 1,
  cudaMemLocationTypeHost = 2
};
struct cudaMemLocation { cudaMemLocationType type; int id; };
enum cudaMemcpySrcAccessOrder {
  cudaMemcpySrcAccessOrderInvalid = 0,
  cudaMemcpySrcAccessOrderStream = 1,
  cudaMemcpySrcAccessOrderDuringApiCall = 2,
  cudaMemcpySrcAccessOrderAny = 3
};
struct cudaMemcpyAttributes {
  cudaMemcpySrcAccessOrder srcAccessOrder;
  cudaMemLocation srcLocHint, dstLocHint;
  unsigned int flags;
};
typedef enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4
} cudaMemcpyKind;
enum cudaDeviceAttr {
  cudaDevAttrMaxThreadsPerBlock = 1,
  cudaDevAttrMaxSharedMemoryPerBlock = 8,
  cudaDevAttrWarpSize = 10,
  cudaDevAttrMaxRegistersPerBlock = 12,
  cudaDevAttrClockRate = 13,
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrMemoryClockRate = 36,
  cudaDevAttrL2CacheSize = 38,
  cudaDevAttrMaxThreadsPerMultiProcessor = 39,
  cudaDevAttrUnifiedAddressing = 41,
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
  cudaDevAttrMaxSharedMemoryPerMultiprocessor = 81,
  cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
  cudaDevAttrMaxBlocksPerMultiprocessor = 106,
  cudaDevAttrReservedSharedMemoryPerBlock = 111
};
enum cudaFuncAttribute {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
  cudaFuncAttributePreferredSharedMemoryCarveout = 9,
  cudaFuncAttributeRequiredClusterWidth = 11,
  cudaFuncAttributeRequiredClusterHeight = 12,
  cudaFuncAttributeRequiredClusterDepth = 13,
  cudaFuncAttributeNonPortableClusterSizeAllowed = 14,
  cudaFuncAttributeClusterSchedulingPolicyPreference = 15
};
struct cudaDeviceProp {
  char name[256];
  int major, minor, multiProcessorCount, maxThreadsPerBlock, warpSize;
  size_t sharedMemPerBlock, sharedMemPerBlockOptin, totalGlobalMem;
  int l2CacheSize;
};
struct cudaFuncAttributes {
  size_t sharedSizeBytes, constSizeBytes, localSizeBytes;
  int maxThreadsPerBlock, numRegs, ptxVersion, binaryVersion, maxDynamicSharedSizeBytes;
};
enum cudaLaunchAttributeID {
  cudaLaunchAttributeIgnore = 0,
  cudaLaunchAttributeCooperative = 2,
  cudaLaunchAttributeClusterDimension = 4,
  cudaLaunchAttributeClusterSchedulingPolicyPreference = 5,
  cudaLaunchAttributeProgrammaticStreamSerialization = 6,
  cudaLaunchAttributeProgrammaticEvent = 7,
  cudaLaunchAttributePreferredClusterDimension = 11
};
enum cudaClusterSchedulingPolicy {
  cudaClusterSchedulingPolicyDefault = 0,
  cudaClusterSchedulingPolicySpread = 1,
  cudaClusterSchedulingPolicyLoadBalancing = 2
};
union cudaLaunchAttributeValue {
  char pad[64];
  int cooperative;
  unsigned int programmaticStreamSerializationAllowed;
  // Cluster launches (sm_90+) name the cluster shape through this member.
  struct {
    unsigned int x, y, z;
  } clusterDim;
  struct {
    unsigned int x, y, z;
  } preferredClusterDim;
  cudaClusterSchedulingPolicy clusterSchedulingPolicyPreference;
};
struct cudaLaunchAttribute {
  cudaLaunchAttributeID id;
  cudaLaunchAttributeValue val;
};
struct cudaLaunchConfig_t {
  dim3 gridDim, blockDim;
  size_t dynamicSmemBytes;
  cudaStream_t stream;
  cudaLaunchAttribute* attrs;
  unsigned int numAttrs;
};
// ---- driver API (cuda.h) -----------------------------------------------------------------
// Types and entry points that tensor-map (TMA) code and cubin launchers (tvm-ffi's, TensorRT-LLM's
// driver wrappers) name. The enums are tagged `*_enum` as cuda.h tags them: code names the tag.
typedef enum cudaError_enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_DEINITIALIZED = 4,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_NOT_READY = 600,
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CUDA_ERROR_UNKNOWN = 999
} CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st* CUcontext;
typedef struct CUmod_st* CUmodule;
typedef struct CUfunc_st* CUfunction;
typedef struct CUlib_st* CUlibrary;
typedef struct CUkern_st* CUkernel;
typedef struct CUstream_st* CUstream;
typedef struct CUevent_st* CUevent;
typedef struct CUlinkState_st* CUlinkState;
// cuda.h defines the tensor map under this guard; code that may be built without cuda.h
// (NVRTC sources) repeats the definition behind the same test.
#define CU_TENSOR_MAP_NUM_QWORDS 16
typedef struct __align__(64) CUtensorMap_st { unsigned long long opaque[CU_TENSOR_MAP_NUM_QWORDS]; } CUtensorMap;
typedef enum CUlaunchAttributeID_enum {
  CU_LAUNCH_ATTRIBUTE_IGNORE = 0,
  CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2,
  CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4,
  CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE = 5,
  CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6,
  CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT = 7,
  CU_LAUNCH_ATTRIBUTE_PRIORITY = 8
} CUlaunchAttributeID;
typedef enum CUclusterSchedulingPolicy_enum {
  CU_CLUSTER_SCHEDULING_POLICY_DEFAULT = 0,
  CU_CLUSTER_SCHEDULING_POLICY_SPREAD = 1,
  CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING = 2
} CUclusterSchedulingPolicy;
typedef union CUlaunchAttributeValue_union {
  char pad[64];
  int cooperative;
  int priority;
  unsigned int programmaticStreamSerializationAllowed;
  struct {
    unsigned int x, y, z;
  } clusterDim;
  CUclusterSchedulingPolicy clusterSchedulingPolicyPreference;
} CUlaunchAttributeValue;
typedef struct CUlaunchAttribute_st {
  CUlaunchAttributeID id;
  CUlaunchAttributeValue value;
} CUlaunchAttribute;
typedef struct CUlaunchConfig_st {
  unsigned int gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute* attrs;
  unsigned int numAttrs;
} CUlaunchConfig;
typedef enum CUfunction_attribute_enum {
  CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
  CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
  CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES = 2,
  CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3,
  CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
  CU_FUNC_ATTRIBUTE_PTX_VERSION = 5,
  CU_FUNC_ATTRIBUTE_BINARY_VERSION = 6,
  CU_FUNC_ATTRIBUTE_CACHE_MODE_CA = 7,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
  CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT = 9,
  CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET = 10,
  CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH = 11,
  CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT = 12,
  CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH = 13,
  CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14,
  CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE = 15
} CUfunction_attribute;
typedef enum CUdevice_attribute_enum {
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
  CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
} CUdevice_attribute;
typedef enum CUstreamCaptureStatus_enum {
  CU_STREAM_CAPTURE_STATUS_NONE = 0,
  CU_STREAM_CAPTURE_STATUS_ACTIVE = 1,
  CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2
} CUstreamCaptureStatus;
// JIT compilation and linking (cuLink*): the option and input kinds are passed through only.
typedef enum CUjit_option_enum {
  CU_JIT_MAX_REGISTERS = 0,
  CU_JIT_THREADS_PER_BLOCK = 1,
  CU_JIT_WALL_TIME = 2,
  CU_JIT_INFO_LOG_BUFFER = 3,
  CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
  CU_JIT_OPTIMIZATION_LEVEL = 7,
  CU_JIT_TARGET_FROM_CUCONTEXT = 8,
  CU_JIT_TARGET = 9,
  CU_JIT_LOG_VERBOSE = 12,
  CU_JIT_GENERATE_LINE_INFO = 13
} CUjit_option;
typedef enum CUjitInputType_enum {
  CU_JIT_INPUT_CUBIN = 0,
  CU_JIT_INPUT_PTX = 1,
  CU_JIT_INPUT_FATBINARY = 2,
  CU_JIT_INPUT_OBJECT = 3,
  CU_JIT_INPUT_LIBRARY = 4
} CUjitInputType;
typedef enum CUlibraryOption_enum { CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE = 0 } CUlibraryOption;
// Tensor-map (TMA) descriptor encoding, driver API.
typedef enum CUtensorMapDataType_enum {
  CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0,
  CU_TENSOR_MAP_DATA_TYPE_UINT16,
  CU_TENSOR_MAP_DATA_TYPE_UINT32,
  CU_TENSOR_MAP_DATA_TYPE_INT32,
  CU_TENSOR_MAP_DATA_TYPE_UINT64,
  CU_TENSOR_MAP_DATA_TYPE_INT64,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
  CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ,
  CU_TENSOR_MAP_DATA_TYPE_TFLOAT32,
  CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ,
  CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B,
  CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B,
  CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B
} CUtensorMapDataType;
typedef enum CUtensorMapInterleave_enum { CU_TENSOR_MAP_INTERLEAVE_NONE = 0, CU_TENSOR_MAP_INTERLEAVE_16B, CU_TENSOR_MAP_INTERLEAVE_32B } CUtensorMapInterleave;
typedef enum CUtensorMapSwizzle_enum {
  CU_TENSOR_MAP_SWIZZLE_NONE = 0,
  CU_TENSOR_MAP_SWIZZLE_32B,
  CU_TENSOR_MAP_SWIZZLE_64B,
  CU_TENSOR_MAP_SWIZZLE_128B,
  CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B,
  CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B_FLIP_8B,
  CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B
} CUtensorMapSwizzle;
typedef enum CUtensorMapL2promotion_enum {
  CU_TENSOR_MAP_L2_PROMOTION_NONE = 0,
  CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
  CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
  CU_TENSOR_MAP_L2_PROMOTION_L2_256B
} CUtensorMapL2promotion;
typedef enum CUtensorMapFloatOOBfill_enum { CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0, CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA } CUtensorMapFloatOOBfill;
typedef uint64_t cuuint64_t;  // as cuda.h spells them (<stdint.h>)
typedef uint32_t cuuint32_t;
extern "C" {
CUresult cuGetErrorName(CUresult, const char**);
CUresult cuGetErrorString(CUresult, const char**);
CUresult cuMemGetAddressRange(CUdeviceptr*, size_t*, CUdeviceptr);
CUresult cuMemsetD8Async(CUdeviceptr, unsigned char, size_t, CUstream);
CUresult cuMemsetD16Async(CUdeviceptr, unsigned short, size_t, CUstream);
CUresult cuMemsetD32Async(CUdeviceptr, unsigned int, size_t, CUstream);
CUresult cuInit(unsigned int);
CUresult cuDriverGetVersion(int*);
CUresult cuDeviceGet(CUdevice*, int);
CUresult cuDeviceGetCount(int*);
CUresult cuDeviceGetAttribute(int*, CUdevice_attribute, CUdevice);
CUresult cuCtxGetCurrent(CUcontext*);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuCtxGetDevice(CUdevice*);
CUresult cuCtxSynchronize(void);
CUresult cuDevicePrimaryCtxRetain(CUcontext*, CUdevice);
CUresult cuDevicePrimaryCtxRelease(CUdevice);
CUresult cuMemAlloc(CUdeviceptr*, size_t);
CUresult cuMemFree(CUdeviceptr);
CUresult cuMemcpyHtoD(CUdeviceptr, const void*, size_t);
CUresult cuMemcpyDtoH(void*, CUdeviceptr, size_t);
CUresult cuMemcpyHtoDAsync(CUdeviceptr, const void*, size_t, CUstream);
CUresult cuMemcpyDtoHAsync(void*, CUdeviceptr, size_t, CUstream);
CUresult cuStreamIsCapturing(CUstream, CUstreamCaptureStatus*);
CUresult cuStreamSynchronize(CUstream);
CUresult cuModuleLoad(CUmodule*, const char*);
CUresult cuModuleLoadData(CUmodule*, const void*);
CUresult cuModuleUnload(CUmodule);
CUresult cuModuleGetFunction(CUfunction*, CUmodule, const char*);
CUresult cuModuleGetGlobal(CUdeviceptr*, size_t*, CUmodule, const char*);
CUresult cuFuncGetAttribute(int*, CUfunction_attribute, CUfunction);
CUresult cuFuncSetAttribute(CUfunction, CUfunction_attribute, int);
CUresult cuLaunchKernel(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
                        unsigned int, unsigned int, CUstream, void**, void**);
CUresult cuLaunchKernelEx(const CUlaunchConfig*, CUfunction, void**, void**);
CUresult cuLaunchCooperativeKernel(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
                                   unsigned int, unsigned int, CUstream, void**);
CUresult cuOccupancyMaxActiveClusters(int*, CUfunction, const CUlaunchConfig*);
CUresult cuLibraryLoadData(CUlibrary*, const void*, CUjit_option*, void**, unsigned int, CUlibraryOption*, void**,
                           unsigned int);
CUresult cuLibraryUnload(CUlibrary);
CUresult cuLibraryGetKernel(CUkernel*, CUlibrary, const char*);
CUresult cuLibraryGetKernelCount(unsigned int*, CUlibrary);
CUresult cuLibraryEnumerateKernels(CUkernel*, unsigned int, CUlibrary);
CUresult cuKernelGetFunction(CUfunction*, CUkernel);
CUresult cuKernelGetName(const char**, CUkernel);
CUresult cuKernelGetAttribute(int*, CUfunction_attribute, CUkernel, CUdevice);
CUresult cuKernelSetAttribute(CUfunction_attribute, int, CUkernel, CUdevice);
CUresult cuLinkCreate(unsigned int, CUjit_option*, void**, CUlinkState*);
CUresult cuLinkAddData(CUlinkState, CUjitInputType, void*, size_t, const char*, unsigned int, CUjit_option*, void**);
CUresult cuLinkAddFile(CUlinkState, CUjitInputType, const char*, unsigned int, CUjit_option*, void**);
CUresult cuLinkComplete(CUlinkState, void**, size_t*);
CUresult cuLinkDestroy(CUlinkState);
CUresult cuTensorMapEncodeTiled(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
CUresult cuTensorMapEncodeIm2col(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const int*, const int*, cuuint32_t, cuuint32_t, const cuuint32_t*,
                                 CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,
                                 CUtensorMapFloatOOBfill);
}
// Driver entry points reached through the runtime (CUTLASS's `call_cuTensorMapEncodeTiled`).
enum cudaDriverEntryPointQueryResult {
  cudaDriverEntryPointSuccess = 0,
  cudaDriverEntryPointSymbolNotFound = 1,
  cudaDriverEntryPointVersionNotSufficent = 2
};
enum { cudaEnableDefault = 0x0, cudaEnableLegacyStream = 0x1, cudaEnablePerThreadDefaultStream = 0x2 };
extern "C" {
cudaError_t cudaGetDriverEntryPoint(const char*, void**, unsigned long long, cudaDriverEntryPointQueryResult*);
cudaError_t cudaGetDriverEntryPointByVersion(const char*, void**, unsigned int, unsigned long long,
                                             cudaDriverEntryPointQueryResult*);
}
#define cudaStreamNonBlocking 0x01
#define cudaOccupancyDefault 0x00
#define cudaOccupancyDisableCachingOverride 0x01
#define cudaEventDisableTiming 0x02

extern "C" {
KC_HD cudaError_t cudaRuntimeGetVersion(int*);
KC_HD cudaError_t cudaDriverGetVersion(int*);
cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t*, void*);
cudaError_t cudaIpcOpenMemHandle(void**, cudaIpcMemHandle_t, unsigned int);
cudaError_t cudaIpcCloseMemHandle(void*);
cudaError_t cudaMemcpyBatchAsync(void**, void**, size_t*, size_t, cudaMemcpyAttributes*, size_t*, size_t,
                                 size_t*, cudaStream_t);
cudaError_t cudaOccupancyAvailableDynamicSMemPerBlock(size_t*, const void*, int, int);
cudaError_t cudaOccupancyMaxActiveClusters(int*, const void*, const cudaLaunchConfig_t*);
cudaError_t cudaOccupancyMaxPotentialClusterSize(int*, const void*, const cudaLaunchConfig_t*);
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes*, const void*);
cudaError_t cudaMemGetInfo(size_t*, size_t*);
cudaError_t cudaHostAlloc(void**, size_t, unsigned int);
cudaError_t cudaFreeHost(void*);
cudaError_t cudaMallocHost(void**, size_t);
cudaError_t cudaHostRegister(void*, size_t, unsigned int);
cudaError_t cudaHostUnregister(void*);
cudaError_t cudaHostGetDevicePointer(void**, void*, unsigned int);
cudaError_t cudaDeviceCanAccessPeer(int*, int, int);
cudaError_t cudaDeviceEnablePeerAccess(int, unsigned int);
cudaError_t cudaMemcpy2DAsync(void*, size_t, const void*, size_t, size_t, size_t, cudaMemcpyKind, cudaStream_t = 0);
cudaError_t cudaMemcpyPeerAsync(void*, int, const void*, int, size_t, cudaStream_t = 0);
cudaError_t cudaStreamGetPriority(cudaStream_t, int*);
cudaError_t cudaStreamQuery(cudaStream_t);
cudaError_t cudaEventQuery(cudaEvent_t);
// Programmatic dependent launch from device code (sm_90+).
KC_D void cudaGridDependencySynchronize(void);
KC_D void cudaTriggerProgrammaticLaunchCompletion(void);
KC_HD cudaError_t cudaGetLastError(void);
KC_HD cudaError_t cudaPeekAtLastError(void);
KC_HD const char* cudaGetErrorString(cudaError_t);
KC_HD const char* cudaGetErrorName(cudaError_t);
KC_HD cudaError_t cudaGetDevice(int*);
cudaError_t cudaSetDevice(int);
cudaError_t cudaGetDeviceCount(int*);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp*, int);
KC_HD cudaError_t cudaDeviceGetAttribute(int*, cudaDeviceAttr, int);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaMalloc(void**, size_t);
cudaError_t cudaMallocAsync(void**, size_t, cudaStream_t);
cudaError_t cudaFree(void*);
cudaError_t cudaFreeAsync(void*, cudaStream_t);
cudaError_t cudaMemcpy(void*, const void*, size_t, cudaMemcpyKind);
KC_HD cudaError_t cudaMemcpyAsync(void*, const void*, size_t, cudaMemcpyKind, cudaStream_t = 0);
cudaError_t cudaMemset(void*, int, size_t);
KC_HD cudaError_t cudaMemsetAsync(void*, int, size_t, cudaStream_t = 0);
cudaError_t cudaStreamSynchronize(cudaStream_t);
cudaError_t cudaStreamCreate(cudaStream_t*);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t*, unsigned int);
cudaError_t cudaStreamDestroy(cudaStream_t);
cudaError_t cudaEventCreate(cudaEvent_t*);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t*, unsigned int);
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t = 0);
cudaError_t cudaEventSynchronize(cudaEvent_t);
cudaError_t cudaEventDestroy(cudaEvent_t);
cudaError_t cudaEventElapsedTime(float*, cudaEvent_t, cudaEvent_t);
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned int = 0);
cudaError_t cudaFuncSetAttribute(const void*, cudaFuncAttribute, int);
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes*, const void*);
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int*, const void*, int, size_t);
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int*, const void*, int, size_t, unsigned int);
cudaError_t cudaLaunchKernel(const void*, dim3, dim3, void**, size_t, cudaStream_t);
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t*, const void*, void**);
cudaError_t cudaLaunchCooperativeKernel(const void*, dim3, dim3, void**, size_t, cudaStream_t);
unsigned __cudaPushCallConfiguration(dim3, dim3, size_t = 0, void* = 0);
int cudaConfigureCall(dim3, dim3, size_t = 0, cudaStream_t = 0);
}

// The runtime's host templates, with bodies: a kernel whose parameter types have internal
// linkage (a params struct in an anonymous namespace) instantiates them with a type no other
// translation unit can name, and clang rejects such a function used but not defined.
template <typename... KernelArgs, typename... ActualArgs>
cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t*, void (*)(KernelArgs...), ActualArgs&&...) {
  return cudaSuccess;
}
template <typename T>
cudaError_t cudaFuncSetAttribute(T*, cudaFuncAttribute, int) { return cudaSuccess; }
template <typename T>
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes*, T*) { return cudaSuccess; }
template <typename T>
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int*, T, int, size_t) { return cudaSuccess; }
template <typename T>
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int*, T, int, size_t, unsigned int) {
  return cudaSuccess;
}
template <typename T>
cudaError_t cudaMalloc(T**, size_t) { return cudaSuccess; }
template <typename T>
cudaError_t cudaOccupancyMaxPotentialBlockSize(int*, int*, T, size_t = 0, int = 0) { return cudaSuccess; }
// Stream capture (CUDA graphs) and pointer attributes, which all-reduce buffers query.
enum cudaStreamCaptureStatus {
  cudaStreamCaptureStatusNone = 0,
  cudaStreamCaptureStatusActive = 1,
  cudaStreamCaptureStatusInvalidated = 2
};
cudaError_t cudaStreamIsCapturing(cudaStream_t, cudaStreamCaptureStatus*);
// What a pointer points at (cudaPointerGetAttributes).
enum cudaMemoryType {
  cudaMemoryTypeUnregistered = 0,
  cudaMemoryTypeHost = 1,
  cudaMemoryTypeDevice = 2,
  cudaMemoryTypeManaged = 3
};
struct cudaPointerAttributes {
  cudaMemoryType type;
  int device;
  void* devicePointer;
  void* hostPointer;
};
// Device symbols (`__device__`/`__constant__` variables) read and written from the host: by
// address (C API) or by the variable itself (the C++ templates).
extern "C" {
cudaError_t cudaMemcpyToSymbol(const void*, const void*, size_t, size_t = 0, cudaMemcpyKind = cudaMemcpyHostToDevice);
cudaError_t cudaMemcpyFromSymbol(void*, const void*, size_t, size_t = 0, cudaMemcpyKind = cudaMemcpyDeviceToHost);
cudaError_t cudaMemcpyToSymbolAsync(const void*, const void*, size_t, size_t = 0,
                                    cudaMemcpyKind = cudaMemcpyHostToDevice, cudaStream_t = 0);
cudaError_t cudaMemcpyFromSymbolAsync(void*, const void*, size_t, size_t = 0, cudaMemcpyKind = cudaMemcpyDeviceToHost,
                                      cudaStream_t = 0);
cudaError_t cudaGetSymbolAddress(void**, const void*);
cudaError_t cudaGetSymbolSize(size_t*, const void*);
}
template <typename T>
cudaError_t cudaMemcpyToSymbol(const T&, const void*, size_t, size_t = 0, cudaMemcpyKind = cudaMemcpyHostToDevice) {
  return cudaSuccess;
}
template <typename T>
cudaError_t cudaMemcpyFromSymbol(void*, const T&, size_t, size_t = 0, cudaMemcpyKind = cudaMemcpyDeviceToHost) {
  return cudaSuccess;
}
template <typename T>
cudaError_t cudaMemcpyToSymbolAsync(const T&, const void*, size_t, size_t = 0,
                                    cudaMemcpyKind = cudaMemcpyHostToDevice, cudaStream_t = 0) { return cudaSuccess; }
template <typename T>
cudaError_t cudaMemcpyFromSymbolAsync(void*, const T&, size_t, size_t = 0, cudaMemcpyKind = cudaMemcpyDeviceToHost,
                                      cudaStream_t = 0) { return cudaSuccess; }
template <typename T>
cudaError_t cudaGetSymbolAddress(void**, const T&) { return cudaSuccess; }
template <typename T>
cudaError_t cudaGetSymbolSize(size_t*, const T&) { return cudaSuccess; }
// Context-independent loading of cubins (CUDA 12.0+ runtime), as tvm-ffi's cubin launcher uses it.
typedef struct CUlib_st* cudaLibrary_t;
typedef struct CUkern_st* cudaKernel_t;
enum cudaJitOption { cudaJitMaxRegisters = 0, cudaJitThreadsPerBlock = 1, cudaJitWallTime = 2 };
enum cudaLibraryOption { cudaLibraryHostUniversalFunctionAndDataTable = 0, cudaLibraryBinaryIsPreserved = 1 };
extern "C" {
cudaError_t cudaLibraryLoadData(cudaLibrary_t*, const void*, cudaJitOption*, void**, unsigned int, cudaLibraryOption*,
                                void**, unsigned int);
cudaError_t cudaLibraryLoadFromFile(cudaLibrary_t*, const char*, cudaJitOption*, void**, unsigned int,
                                    cudaLibraryOption*, void**, unsigned int);
cudaError_t cudaLibraryUnload(cudaLibrary_t);
cudaError_t cudaLibraryGetKernel(cudaKernel_t*, cudaLibrary_t, const char*);
cudaError_t cudaLibraryGetKernelCount(unsigned int*, cudaLibrary_t);
cudaError_t cudaKernelSetAttributeForDevice(cudaKernel_t, cudaFuncAttribute, int, int);
}
typedef enum CUpointer_attribute_enum {
  CU_POINTER_ATTRIBUTE_CONTEXT = 1,
  CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
  CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3,
  CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 12,
  CU_POINTER_ATTRIBUTE_RANGE_SIZE = 13
} CUpointer_attribute;
extern "C" CUresult cuPointerGetAttribute(void*, CUpointer_attribute, CUdeviceptr);

// ---- half, bfloat16, fp8 -----------------------------------------------------------------
struct __half_raw { unsigned short x; };
struct __nv_bfloat16_raw { unsigned short x; };
struct __half2_raw { unsigned short x, y; };
struct __nv_bfloat162_raw { unsigned short x, y; };
struct __align__(2) __half {
  unsigned short __x;
  __half() = default;
  KC_HD __half(float);
  KC_HD __half(double);
  KC_HD __half(int);
  KC_HD __half(unsigned int);
  KC_HD __half(long long);
  KC_HD __half(__half_raw);
  KC_HD operator float() const;
  KC_HD operator __half_raw() const;
  KC_HD __half& operator=(float);
};
struct __align__(4) __half2 {
  __half x, y;
  __half2() = default;
  KC_HD __half2(__half, __half);
  KC_HD __half2(const __half2_raw&);
  KC_HD operator __half2_raw() const;
};
struct __align__(2) __nv_bfloat16 {
  unsigned short __x;
  __nv_bfloat16() = default;
  KC_HD __nv_bfloat16(float);
  KC_HD __nv_bfloat16(double);
  KC_HD __nv_bfloat16(int);
  KC_HD __nv_bfloat16(unsigned int);
  KC_HD __nv_bfloat16(long long);
  KC_HD __nv_bfloat16(__nv_bfloat16_raw);
  KC_HD operator float() const;
  KC_HD operator __nv_bfloat16_raw() const;
  KC_HD __nv_bfloat16& operator=(float);
};
struct __align__(4) __nv_bfloat162 {
  __nv_bfloat16 x, y;
  __nv_bfloat162() = default;
  KC_HD __nv_bfloat162(__nv_bfloat16, __nv_bfloat16);
  KC_HD __nv_bfloat162(const __nv_bfloat162_raw&);
  KC_HD operator __nv_bfloat162_raw() const;
};
typedef __half half;
typedef __half2 half2;
typedef __half nv_half;
typedef __half2 nv_half2;
typedef __half __nv_half;
typedef __half2 __nv_half2;
typedef __half_raw __nv_half_raw;
typedef __half2_raw __nv_half2_raw;
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;

#define KC_HALF_OPS(T)                                      \
  KC_HD T operator+(const T&, const T&);                    \
  KC_HD T operator-(const T&, const T&);                    \
  KC_HD T operator*(const T&, const T&);                    \
  KC_HD T operator/(const T&, const T&);                    \
  KC_HD T operator-(const T&);                              \
  KC_HD T& operator+=(T&, const T&);                        \
  KC_HD T& operator-=(T&, const T&);                        \
  KC_HD T& operator*=(T&, const T&);                        \
  KC_HD T& operator/=(T&, const T&);                        \
  KC_HD bool operator==(const T&, const T&);                \
  KC_HD bool operator!=(const T&, const T&);                \
  KC_HD bool operator<(const T&, const T&);                 \
  KC_HD bool operator>(const T&, const T&);                 \
  KC_HD bool operator<=(const T&, const T&);                \
  KC_HD bool operator>=(const T&, const T&);
KC_HALF_OPS(__half)
KC_HALF_OPS(__nv_bfloat16)
// the pairs have the same operators (cuda_fp16.hpp, cuda_bf16.hpp; cuBLASDx's complex<__half>
// accumulates with `xy += other.xy`)
KC_HALF_OPS(__half2)
KC_HALF_OPS(__nv_bfloat162)

KC_HD __half __ushort_as_half(unsigned short);
KC_HD unsigned short __half_as_ushort(__half);
KC_HD __nv_bfloat16 __ushort_as_bfloat16(unsigned short);
KC_HD unsigned short __bfloat16_as_ushort(__nv_bfloat16);
KC_HD __half __float2half(float);
KC_HD __half __float2half_rn(float);
KC_HD float __half2float(__half);
KC_HD __half2 __float2half2_rn(float);
KC_HD __half2 __floats2half2_rn(float, float);
KC_HD __half2 __halves2half2(__half, __half);
KC_HD float2 __half22float2(__half2);
KC_HD __half2 __float22half2_rn(float2);
KC_HD __half __low2half(__half2);
KC_HD __half2 __half2half2(__half);
KC_HD __half2 __low2half2(__half2);
KC_HD __half2 __high2half2(__half2);
KC_HD __half2 __lowhigh2highlow(__half2);
KC_HD float __low2float(__half2);
KC_HD float __high2float(__half2);
KC_HD __half __int2half_rn(int);
KC_HD int __half2int_rn(__half);
KC_HD __half __high2half(__half2);
KC_HD __nv_bfloat16 __float2bfloat16(float);
KC_HD __nv_bfloat16 __float2bfloat16_rn(float);
KC_HD float __bfloat162float(__nv_bfloat16);
KC_HD __nv_bfloat162 __float2bfloat162_rn(float);
KC_HD __nv_bfloat162 __floats2bfloat162_rn(float, float);
KC_HD __nv_bfloat162 __halves2bfloat162(__nv_bfloat16, __nv_bfloat16);
KC_HD float2 __bfloat1622float2(__nv_bfloat162);
KC_HD __nv_bfloat162 __float22bfloat162_rn(float2);
KC_HD __nv_bfloat16 __low2bfloat16(__nv_bfloat162);
KC_HD __nv_bfloat162 __bfloat162bfloat162(__nv_bfloat16);
KC_HD __nv_bfloat162 __low2bfloat162(__nv_bfloat162);
KC_HD __nv_bfloat162 __high2bfloat162(__nv_bfloat162);
KC_HD __nv_bfloat162 __lowhigh2highlow(__nv_bfloat162);
KC_HD float __low2float(__nv_bfloat162);
KC_HD float __high2float(__nv_bfloat162);
KC_HD __nv_bfloat16 __int2bfloat16_rn(int);
KC_HD int __bfloat162int_rn(__nv_bfloat16);
KC_HD __nv_bfloat16 __high2bfloat16(__nv_bfloat162);
#define KC_HALF_MATH(T, T2)                 \
  KC_D T __hadd(T, T);                      \
  KC_D T __hsub(T, T);                      \
  KC_D T __hmul(T, T);                      \
  KC_D T __hdiv(T, T);                      \
  KC_D T __hfma(T, T, T);                   \
  KC_D T __hneg(T);                         \
  KC_D T __habs(T);                         \
  KC_D T __hmax(T, T);                      \
  KC_D T __hmin(T, T);                      \
  KC_D T hsqrt(T);                          \
  KC_D T hrsqrt(T);                         \
  KC_D T hexp(T);                           \
  KC_D T2 __hadd2(T2, T2);                  \
  KC_D T2 __hsub2(T2, T2);                  \
  KC_D T2 __hmul2(T2, T2);                  \
  KC_D T2 __hfma2(T2, T2, T2);              \
  KC_D T2 __habs2(T2);                      \
  KC_D T2 __hneg2(T2);                      \
  KC_D T2 __h2div(T2, T2);                  \
  KC_D T2 h2exp(T2);                        \
  KC_D T2 h2sqrt(T2);                       \
  KC_D T2 h2rsqrt(T2);                      \
  KC_D T hlog(T);                           \
  KC_D T __shfl_sync(unsigned, T, int, int = 32); \
  KC_D T2 __shfl_sync(unsigned, T2, int, int = 32); \
  KC_D T __shfl_down_sync(unsigned, T, unsigned, int = 32); \
  KC_D T2 __shfl_down_sync(unsigned, T2, unsigned, int = 32); \
  KC_D T2 __hmax2(T2, T2);                  \
  KC_D T2 __hmin2(T2, T2);                  \
  KC_D T __shfl_xor_sync(unsigned, T, int, int = 32); \
  KC_D T2 __shfl_xor_sync(unsigned, T2, int, int = 32);
KC_HALF_MATH(__half, __half2)
KC_HALF_MATH(__nv_bfloat16, __nv_bfloat162)
// Comparisons, classification, rounding and the rest of the math functions (host and device
// in CUDA 12+), which libcu++'s extended floating-point support (`cuda/std/cmath`) calls.
#define KC_HALF_MORE(T, T2)                                                                           \
  KC_HD bool __heq(T, T);                                                                            \
  KC_HD bool __hne(T, T);                                                                            \
  KC_HD bool __hlt(T, T);                                                                            \
  KC_HD bool __hle(T, T);                                                                            \
  KC_HD bool __hgt(T, T);                                                                            \
  KC_HD bool __hge(T, T);                                                                            \
  KC_HD bool __hisnan(T);                                                                            \
  KC_HD int __hisinf(T);                                                                             \
  KC_HD T2 __heq2(T2, T2);                                                                           \
  KC_HD T2 __hne2(T2, T2);                                                                           \
  KC_HD T2 __hlt2(T2, T2);                                                                           \
  KC_HD T2 __hle2(T2, T2);                                                                           \
  KC_HD T2 __hgt2(T2, T2);                                                                           \
  KC_HD T2 __hge2(T2, T2);                                                                           \
  KC_HD bool __hbeq2(T2, T2);                                                                        \
  KC_HD bool __hbne2(T2, T2);                                                                        \
  KC_HD bool __hblt2(T2, T2);                                                                        \
  KC_HD bool __hble2(T2, T2);                                                                        \
  KC_HD bool __hbgt2(T2, T2);                                                                        \
  KC_HD bool __hbge2(T2, T2);                                                                        \
  KC_HD unsigned int __heq2_mask(T2, T2);                                                            \
  KC_HD unsigned int __hne2_mask(T2, T2);                                                            \
  KC_HD unsigned int __hlt2_mask(T2, T2);                                                            \
  KC_HD unsigned int __hle2_mask(T2, T2);                                                            \
  KC_HD unsigned int __hgt2_mask(T2, T2);                                                            \
  KC_HD unsigned int __hge2_mask(T2, T2);                                                            \
  KC_HD unsigned int __hequ2_mask(T2, T2);                                                           \
  KC_HD unsigned int __hneu2_mask(T2, T2);                                                           \
  KC_HD unsigned int __hltu2_mask(T2, T2);                                                           \
  KC_HD unsigned int __hleu2_mask(T2, T2);                                                           \
  KC_HD unsigned int __hgtu2_mask(T2, T2);                                                           \
  KC_HD unsigned int __hgeu2_mask(T2, T2);                                                           \
  KC_D T htrunc(T);                                                                                  \
  KC_D T hceil(T);                                                                                   \
  KC_D T hfloor(T);                                                                                  \
  KC_D T hrint(T);                                                                                   \
  KC_D T hsin(T);                                                                                    \
  KC_D T hcos(T);                                                                                    \
  KC_D T hexp2(T);                                                                                   \
  KC_D T hlog2(T);                                                                                   \
  KC_D T hlog10(T);                                                                                  \
  KC_D T htanh(T);                                                                                   \
  KC_D T hrcp(T);                                                                                    \
  KC_D T2 __hmul2_rn(T2, T2);                                                                        \
  KC_D T2 __hmax2_nan(T2, T2);                                                                       \
  KC_D T __hmax_nan(T, T);
KC_HALF_MORE(__half, __half2)
KC_HALF_MORE(__nv_bfloat16, __nv_bfloat162)
#undef KC_HALF_MORE
KC_HD __half2 make_half2(__half, __half);
KC_HD __nv_bfloat162 make_bfloat162(__nv_bfloat16, __nv_bfloat16);
KC_HD __half __double2half(double);
KC_HD __nv_bfloat16 __double2bfloat16(double);

typedef unsigned char __nv_fp8_storage_t;
typedef unsigned short __nv_fp8x2_storage_t;
typedef unsigned int __nv_fp8x4_storage_t;
enum __nv_saturation_t { __NV_NOSAT, __NV_SATFINITE };
enum __nv_fp8_interpretation_t { __NV_E4M3, __NV_E5M2 };
// One-byte formats convert from the floating-point types and (CUDA 12.x) the integer types.
#define KC_FP8(N)                                  \
  struct __align__(1) N {                          \
    __nv_fp8_storage_t __x;                        \
    N() = default;                                 \
    KC_HD explicit N(float);                       \
    KC_HD explicit N(double);                      \
    KC_HD explicit N(__half);                      \
    KC_HD explicit N(__nv_bfloat16);               \
    KC_HD explicit N(short);                       \
    KC_HD explicit N(unsigned short);              \
    KC_HD explicit N(int);                         \
    KC_HD explicit N(unsigned int);                \
    KC_HD explicit N(long);                        \
    KC_HD explicit N(unsigned long);               \
    KC_HD explicit N(long long);                   \
    KC_HD explicit N(unsigned long long);          \
    KC_HD explicit operator float() const;         \
    KC_HD explicit operator __half() const;        \
    KC_HD explicit operator __nv_bfloat16() const; \
  };
KC_FP8(__nv_fp8_e4m3)
KC_FP8(__nv_fp8_e5m2)
// Packed formats: pairs convert from and to the paired 16-bit types, quads from two pairs.
#define KC_FP8X(N, S, B, A, PACKED)           \
  struct __align__(A) N {                     \
    S __x;                                    \
    N() = default;                            \
    KC_HD explicit N(B);                      \
    KC_HD explicit operator B() const;        \
    PACKED(N)                                 \
  };
#define KC_PAIR_CONVERSIONS(N)                \
  KC_HD explicit N(double2);                  \
  KC_HD explicit N(__half2);                  \
  KC_HD explicit N(__nv_bfloat162);           \
  KC_HD explicit operator __half2_raw() const; \
  KC_HD explicit operator __half2() const;
#define KC_QUAD_CONVERSIONS(N)                \
  KC_HD explicit N(double4);                  \
  KC_HD explicit N(__half2, __half2);         \
  KC_HD explicit N(__nv_bfloat162, __nv_bfloat162);
KC_FP8X(__nv_fp8x2_e4m3, __nv_fp8x2_storage_t, float2, 2, KC_PAIR_CONVERSIONS)
KC_FP8X(__nv_fp8x2_e5m2, __nv_fp8x2_storage_t, float2, 2, KC_PAIR_CONVERSIONS)
KC_FP8X(__nv_fp8x4_e4m3, __nv_fp8x4_storage_t, float4, 4, KC_QUAD_CONVERSIONS)
KC_FP8X(__nv_fp8x4_e5m2, __nv_fp8x4_storage_t, float4, 4, KC_QUAD_CONVERSIONS)
KC_HD __nv_fp8_storage_t __nv_cvt_float_to_fp8(float, __nv_saturation_t, __nv_fp8_interpretation_t);
KC_HD __nv_fp8x2_storage_t __nv_cvt_float2_to_fp8x2(float2, __nv_saturation_t, __nv_fp8_interpretation_t);
KC_HD __half_raw __nv_cvt_fp8_to_halfraw(__nv_fp8_storage_t, __nv_fp8_interpretation_t);
KC_HD __nv_fp8x2_storage_t __nv_cvt_halfraw2_to_fp8x2(__half2_raw, __nv_saturation_t, __nv_fp8_interpretation_t);
KC_HD __nv_fp8x2_storage_t __nv_cvt_bfloat16raw2_to_fp8x2(__nv_bfloat162_raw, __nv_saturation_t,
                                                          __nv_fp8_interpretation_t);
KC_HD __half2_raw __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t, __nv_fp8_interpretation_t);
KC_HD __nv_fp8_storage_t __nv_cvt_double_to_fp8(double, __nv_saturation_t, __nv_fp8_interpretation_t);
KC_HD __nv_fp8x2_storage_t __nv_cvt_double2_to_fp8x2(double2, __nv_saturation_t, __nv_fp8_interpretation_t);
KC_HD __nv_fp8_storage_t __nv_cvt_halfraw_to_fp8(__half_raw, __nv_saturation_t, __nv_fp8_interpretation_t);
KC_HD __nv_fp8_storage_t __nv_cvt_bfloat16raw_to_fp8(__nv_bfloat16_raw, __nv_saturation_t, __nv_fp8_interpretation_t);
// E8M0 block-scale exponents (MX formats, CUDA 12.8+).
KC_FP8(__nv_fp8_e8m0)
KC_HD __nv_fp8_storage_t __nv_cvt_float_to_e8m0(float, __nv_saturation_t, enum cudaRoundMode);
KC_HD __nv_fp8_storage_t __nv_cvt_bfloat16raw_to_e8m0(__nv_bfloat16_raw, __nv_saturation_t, enum cudaRoundMode);
KC_HD __nv_bfloat16_raw __nv_cvt_e8m0_to_bf16raw(__nv_fp8_storage_t);
KC_HD __nv_fp8_storage_t __nv_cvt_double_to_e8m0(double, __nv_saturation_t, enum cudaRoundMode);
// FP4 (E2M1) storage and types (CUDA 12.8+, cuda_fp4.h).
typedef unsigned char __nv_fp4_storage_t;
typedef unsigned char __nv_fp4x2_storage_t;
typedef unsigned short __nv_fp4x4_storage_t;
enum __nv_fp4_interpretation_t { __NV_E2M1 };
struct __align__(1) __nv_fp4_e2m1 {
  __nv_fp4_storage_t __x;
  __nv_fp4_e2m1() = default;
  KC_HD explicit __nv_fp4_e2m1(float);
  KC_HD explicit operator float() const;
};
KC_FP8X(__nv_fp4x2_e2m1, __nv_fp4x2_storage_t, float2, 1, KC_PAIR_CONVERSIONS)
KC_FP8X(__nv_fp4x4_e2m1, __nv_fp4x4_storage_t, float4, 2, KC_QUAD_CONVERSIONS)
KC_HD __nv_fp4_storage_t __nv_cvt_float_to_fp4(float, __nv_fp4_interpretation_t, enum cudaRoundMode);
KC_HD __nv_fp4x2_storage_t __nv_cvt_float2_to_fp4x2(float2, __nv_fp4_interpretation_t, enum cudaRoundMode);
KC_HD __half_raw __nv_cvt_fp4_to_halfraw(__nv_fp4_storage_t, __nv_fp4_interpretation_t);
KC_HD __half2_raw __nv_cvt_fp4x2_to_halfraw2(__nv_fp4x2_storage_t, __nv_fp4_interpretation_t);

// ---- device intrinsics ------------------------------------------------------------------
extern "C" {
// `assert` in device code expands to glibc's __assert_fail, which CUDA also declares for the device.
KC_D void __assert_fail(const char*, const char*, unsigned int, const char*);
// Device-side printf (the host one comes from <stdio.h>).
KC_D int printf(const char*, ...);
KC_D void __syncthreads(void);
KC_D int __syncthreads_count(int);
KC_D int __syncthreads_and(int);
KC_D int __syncthreads_or(int);
KC_D void __syncwarp(unsigned int = 0xffffffffu);
KC_D void __threadfence(void);
KC_D void __threadfence_block(void);
KC_D void __threadfence_system(void);
KC_D void __trap(void);
KC_D void __nanosleep(unsigned int);
KC_D unsigned int __activemask(void);
KC_D int __ffs(int);
KC_D int __ffsll(long long);
KC_D int __popc(unsigned int);
KC_D int __popcll(unsigned long long);
KC_D int __clz(int);
KC_D int __clzll(long long);
KC_D unsigned int __brev(unsigned int);
KC_D long long clock64(void);
KC_D int clock(void);
KC_D unsigned int __ballot_sync(unsigned int, int);
KC_D int __all_sync(unsigned int, int);
KC_D int __any_sync(unsigned int, int);
KC_D float __int_as_float(int);
KC_D int __float_as_int(float);
KC_D float __uint_as_float(unsigned int);
KC_D unsigned int __float_as_uint(float);
KC_D double __longlong_as_double(long long);
KC_D long long __double_as_longlong(double);
KC_D float __fdividef(float, float);
KC_D float __expf(float);
KC_D float __logf(float);
KC_D float __sinf(float);
KC_D float __cosf(float);
KC_D float __powf(float, float);
KC_D float __frcp_rn(float);
KC_D float __fsqrt_rn(float);
KC_D float __saturatef(float);
KC_D int __float2int_rn(float);
KC_D unsigned int __float2uint_rn(float);
KC_D float __int2float_rn(int);
KC_D unsigned int __byte_perm(unsigned int, unsigned int, unsigned int);
KC_D unsigned int __funnelshift_l(unsigned int, unsigned int, unsigned int);
KC_D unsigned int __funnelshift_r(unsigned int, unsigned int, unsigned int);
KC_D int __mul24(int, int);
KC_D long long __mul64hi(long long, long long);
KC_D unsigned int __umulhi(unsigned int, unsigned int);
KC_D int __mulhi(int, int);
KC_D unsigned long long __umul64hi(unsigned long long, unsigned long long);
KC_D size_t __cvta_generic_to_shared(const void*);
KC_D size_t __cvta_generic_to_global(const void*);
KC_D void* __cvta_shared_to_generic(size_t);
KC_D void* __cvta_global_to_generic(size_t);
KC_D size_t __cvta_generic_to_constant(const void*);
KC_D size_t __cvta_generic_to_local(const void*);
KC_D void* __cvta_constant_to_generic(size_t);
KC_D void* __cvta_local_to_generic(size_t);
// A `__grid_constant__` kernel parameter's address in the parameter space (CUDA 11.7+).
KC_D size_t __cvta_generic_to_grid_constant(const void*);
KC_D void* __cvta_grid_constant_to_generic(size_t);
// The 32-bit shared-window address of a generic pointer, an NVVM intrinsic that CuTe and
// TensorRT-LLM code call (some of it without declaring it).
KC_D unsigned int __nvvm_get_smem_pointer(void*);
KC_D unsigned int __isShared(const void*);
KC_D unsigned int __isGlobal(const void*);
KC_D unsigned int __isConstant(const void*);
KC_D int __dp4a(int, int, int);
KC_D unsigned int __dp4a(unsigned int, unsigned int, unsigned int);
KC_D int __dp2a_lo(int, int, int);
KC_D int __dp2a_hi(int, int, int);
KC_D unsigned int __isLocal(const void*);
KC_D unsigned int __isGridConstant(const void*);
KC_D double __dadd_rn(double, double);
KC_D double __dsub_rn(double, double);
KC_D double __dmul_rn(double, double);
KC_D double __ddiv_rn(double, double);
KC_D double __fma_rn(double, double, double);
KC_D float __tanhf(float);
KC_D float __exp2f(float);
KC_D float __log2f(float);
KC_D float __frcp_rz(float);
KC_D int __float2int_rz(float);
KC_D int __float2int_rd(float);
KC_D int __float2int_ru(float);
KC_D float __uint2float_rn(unsigned int);
KC_D unsigned int __vabsdiffu4(unsigned int, unsigned int);
KC_D unsigned int __reduce_add_sync(unsigned int, unsigned int);
KC_D unsigned int __reduce_min_sync(unsigned int, unsigned int);
KC_D unsigned int __reduce_max_sync(unsigned int, unsigned int);
KC_D unsigned int __reduce_and_sync(unsigned int, unsigned int);
KC_D unsigned int __reduce_or_sync(unsigned int, unsigned int);
KC_D unsigned int __reduce_xor_sync(unsigned int, unsigned int);
KC_D unsigned int __match_any_sync(unsigned int, unsigned int);
KC_D unsigned int __lanemask_lt(void);
KC_D unsigned long long __globaltimer(void);
}
// Signed overloads of the warp reductions (sm_80+).
KC_D int __reduce_add_sync(unsigned int, int);
KC_D int __reduce_min_sync(unsigned int, int);
KC_D int __reduce_max_sync(unsigned int, int);
// Paired single-precision arithmetic (sm_100+).
KC_D float2 __fadd2_rn(float2, float2);
KC_D float2 __fmul2_rn(float2, float2);
KC_D float2 __ffma2_rn(float2, float2, float2);

#define KC_SHFL(T)                                             \
  KC_D T __shfl_sync(unsigned int, T, int, int = 32);          \
  KC_D T __shfl_up_sync(unsigned int, T, unsigned int, int = 32);   \
  KC_D T __shfl_down_sync(unsigned int, T, unsigned int, int = 32); \
  KC_D T __shfl_xor_sync(unsigned int, T, int, int = 32);
KC_SHFL(int)
KC_SHFL(unsigned int)
KC_SHFL(long)
KC_SHFL(unsigned long)
KC_SHFL(long long)
KC_SHFL(unsigned long long)
KC_SHFL(float)
KC_SHFL(double)

#define KC_ATOMIC(T)                             \
  KC_D T atomicAdd(T*, T);                       \
  KC_D T atomicSub(T*, T);                       \
  KC_D T atomicExch(T*, T);                      \
  KC_D T atomicMax(T*, T);                       \
  KC_D T atomicMin(T*, T);                       \
  KC_D T atomicCAS(T*, T, T);                    \
  KC_D T atomicAnd(T*, T);                       \
  KC_D T atomicOr(T*, T);                        \
  KC_D T atomicXor(T*, T);                       \
  KC_D T atomicAdd_block(T*, T);                 \
  KC_D T atomicAdd_system(T*, T);
KC_ATOMIC(int)
KC_ATOMIC(unsigned int)
KC_ATOMIC(unsigned long long)
KC_ATOMIC(long long)
KC_D float atomicAdd(float*, float);
KC_D double atomicAdd(double*, double);
KC_D float atomicExch(float*, float);
KC_D float atomicMax(float*, float);
KC_D float atomicMin(float*, float);
KC_D __half atomicAdd(__half*, __half);
KC_D __half2 atomicAdd(__half2*, __half2);
KC_D __nv_bfloat16 atomicAdd(__nv_bfloat16*, __nv_bfloat16);
KC_D __nv_bfloat162 atomicAdd(__nv_bfloat162*, __nv_bfloat162);
KC_D unsigned int atomicInc(unsigned int*, unsigned int);
KC_D unsigned int atomicDec(unsigned int*, unsigned int);

template <typename T>
KC_D T __ldg(const T*);
template <typename T>
KC_D T __ldcg(const T*);
template <typename T>
KC_D T __ldca(const T*);
template <typename T>
KC_D T __ldcs(const T*);
template <typename T>
KC_D T __ldlu(const T*);
template <typename T>
KC_D T __ldcv(const T*);
template <typename T>
KC_D void __stcg(T*, T);
template <typename T>
KC_D void __stcs(T*, T);
template <typename T>
KC_D void __stwt(T*, T);
template <typename T>
KC_D void __stwb(T*, T);

// Single-precision device math (the host versions come from <math.h>).
#define KC_MATH1(F) KC_D float F(float);
#define KC_MATH2(F) KC_D float F(float, float);
KC_MATH1(sqrtf) KC_MATH1(rsqrtf) KC_MATH1(expf) KC_MATH1(exp2f) KC_MATH1(logf) KC_MATH1(log2f)
KC_MATH1(sinf) KC_MATH1(cosf) KC_MATH1(tanhf) KC_MATH1(fabsf) KC_MATH1(erff) KC_MATH1(floorf)
KC_MATH1(ceilf) KC_MATH1(roundf) KC_MATH1(truncf) KC_MATH1(rintf) KC_MATH1(log1pf) KC_MATH1(expm1f)
KC_MATH1(tanf) KC_MATH1(atanf) KC_MATH1(sinhf) KC_MATH1(coshf) KC_MATH1(cbrtf) KC_MATH1(rcbrtf)
KC_MATH1(__frsqrt_rn) KC_MATH1(normcdff) KC_MATH1(erfcf) KC_MATH1(exp10f) KC_MATH1(log10f)
KC_MATH2(fmaxf) KC_MATH2(fminf) KC_MATH2(powf) KC_MATH2(fmodf) KC_MATH2(atan2f) KC_MATH2(copysignf)
KC_MATH2(__fadd_rn) KC_MATH2(__fmul_rn) KC_MATH2(__fdiv_rn) KC_MATH2(__fsub_rn)
KC_D float ldexpf(float, int);
KC_D float scalbnf(float, int);
KC_D float frexpf(float, int*);
KC_D int ilogbf(float);
KC_D float fmaf(float, float, float);
KC_D float __fmaf_rn(float, float, float);
KC_D void sincosf(float, float*, float*);
KC_D void __sincosf(float, float*, float*);
KC_D double sqrt(double);
KC_D double rsqrt(double);
KC_D double exp(double);
KC_D double log(double);
KC_D double fabs(double);
KC_D double fmax(double, double);
KC_D double fmin(double, double);
KC_D double pow(double, double);
// min/max: host and device in CUDA's math headers.
#define KC_MINMAX(R, A, B) \
  KC_HD R max(A, B);       \
  KC_HD R min(A, B);
#include "kernel_check_minmax.h"
#undef KC_MINMAX
KC_D int abs(int);
// Device-side memcpy/memset, overloads of the host ones from <string.h>: in system mode
// clang's CUDA runtime wrapper declares them (through __clang_cuda_device_functions.h), which
// hermetic mode never includes. Declared before any <cstring>, so `std::memcpy` gets them too.
KC_D void* memcpy(void*, const void*, size_t);
KC_D void* memset(void*, int, size_t);

#undef KC_HD
#undef KC_D
#endif  // KERNEL_CHECK_CUDA_PRELUDE
