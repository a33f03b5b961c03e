"""Parse health: sources shaped like what real JIT kernel trees include parse cleanly.

Each source is written here after a failure seen on a real kernel tree (sglang's JIT
kernels, `bench/ecosystem.py`): hermetic stubs for what those kernels include, CUDA 13's
CCCL directory and pip's header-only CUDA layout in system mode, and one clear KC000 for a
header nobody provided. Every test is a real libclang parse.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_one
from kernel_check.cache import static_root
from kernel_check.clang.includers import include_contexts
from kernel_check.clang.parse import ParseSettings, find_cuda_home, parse_file, resolve_settings
from kernel_check.config import load_config
from kernel_check.engine import run_static
from kernel_check.includes import header_provider
from kernel_check.jit_flags import inline_build_args, wrapper_flags
from kernel_check.pipeline import CacheOptions, RunOptions, reads_text_alone
from kernel_check.registry import Language, load_rules, rules_for
from kernel_check.wrapper_search import project_wrappers, run_wrapper_flags

SRC = Path(__file__).resolve().parent.parent / "src"
CUDA_HOME = find_cuda_home()
needs_cuda = pytest.mark.skipif(
    CUDA_HOME is None or not (Path(CUDA_HOME) / "include" / "cccl").is_dir(),
    reason="needs a CUDA 13 install (CUDA_HOME, nvcc on PATH or /usr/local/cuda) with include/cccl",
)


def errors_of(tmp_path: Path, source: str, settings: ParseSettings, name: str = "kernel.cuh") -> list[str]:
    (tmp_path / "device_helpers.cuh").write_text(DEVICE_HELPERS)
    path = tmp_path / name
    path.write_text(source)
    unit = parse_file(path, path.read_bytes(), settings)
    return [f"{Path(e.path).name}:{e.line}: {e.message}" for e in unit.errors]


# A launcher shaped like a JIT tree's own launch helper: cluster dimensions set through a
# launch attribute, the runtime version queried on the host.
CLUSTER_LAUNCH = r"""
#include <cuda_runtime.h>

__global__ void cluster_kernel(float* out) { out[blockIdx.x] = 0.0f; }

inline void launch_with_cluster(float* out, cudaStream_t stream, unsigned int cluster_x) {
  cudaLaunchAttribute attrs[2];
  attrs[0].id = cudaLaunchAttributeClusterDimension;
  attrs[0].val.clusterDim.x = cluster_x;
  attrs[0].val.clusterDim.y = 1;
  attrs[0].val.clusterDim.z = 1;
  attrs[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attrs[1].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(8);
  config.blockDim = dim3(128);
  config.stream = stream;
  config.attrs = attrs;
  config.numAttrs = 2;
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  cudaLaunchKernelEx(&config, cluster_kernel, out);
}
"""

# Warp and cluster collectives through cooperative groups, as RMSNorm-style kernels use them.
COOPERATIVE_GROUPS = r"""
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cooperative_groups/reduce.h>

namespace cg = cooperative_groups;

__global__ void __cluster_dims__(2, 1, 1) row_norm(const float* in, float* out) {
  __shared__ float partial[32];
  auto block = cg::this_thread_block();
  auto warp = cg::tiled_partition<32>(block);
  float sum = cg::reduce(warp, in[threadIdx.x], cg::plus<float>());
  if (warp.thread_rank() == 0) partial[warp.meta_group_rank()] = sum;
  block.sync();
  auto cluster = cg::this_cluster();
  float* peer = cluster.map_shared_rank(partial, (cluster.block_rank() + 1) % cluster.num_blocks());
  cluster.sync();
  out[blockIdx.x] = peer[0] + sum;
}

// A group's asynchronous copy into shared memory, one thread's bookkeeping (CUDA 12.1+).
__global__ void staged_copy(const float* in, float* out, int* count) {
  __shared__ float tile[256];
  auto block = cg::this_thread_block();
  cg::memcpy_async(block, tile, in + blockIdx.x * 256, 256);
  cg::wait(block);
  cg::invoke_one(cg::coalesced_threads(), [&] { atomicAdd(count, 1); });
  out[blockIdx.x * 256 + threadIdx.x] = tile[threadIdx.x];
}
"""

# CUB block primitives and the CUDA 12.9+ functors, as top-k and scan kernels use them.
CUB_PRIMITIVES = r"""
#include <cub/cub.cuh>
#include <cub/util_type.cuh>
#include <cuda/functional>

template <int kThreads>
__global__ void topk_and_scan(const float* scores, int* offsets, float* best) {
  using Pair = cub::KeyValuePair<int, float>;
  using Reduce = cub::BlockReduce<Pair, kThreads>;
  using MaxReduce = cub::BlockReduce<float, kThreads>;
  using Scan = cub::BlockScan<int, kThreads, cub::BLOCK_SCAN_WARP_SCANS>;
  using Load = cub::BlockLoad<float, kThreads, 4, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  __shared__ typename Reduce::TempStorage reduce_storage;
  __shared__ typename MaxReduce::TempStorage max_storage;
  __shared__ typename Scan::TempStorage scan_storage;
  __shared__ typename Load::TempStorage load_storage;
  float items[4];
  Load(load_storage).Load(scores, items, 100, 0.0f);
  Pair mine(threadIdx.x, items[0]);
  Pair top = Reduce(reduce_storage).Reduce(mine, cub::ArgMax());
  float largest = MaxReduce(max_storage).Reduce(items[1], cuda::maximum<>());
  int offset = 0, total = 0;
  Scan(scan_storage).ExclusiveSum(1, offset, total);
  offsets[threadIdx.x] = offset + total;
  best[0] = top.value + largest + MaxReduce(max_storage).Sum(items[2]);
}
template __global__ void topk_and_scan<128>(const float*, int*, float*);
"""

# Intrinsics, constants and C library names that real CUDA headers bring in.
INTRINSICS = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda/ptx>
#include <math_constants.h>

__global__ void intrinsics(float* out, const __half* h, const double* d, unsigned int* counts, void* dst) {
  __shared__ alignas(16) float staged[64];
  assert(out != nullptr);
  float x = out[0] < 0.0f ? -INFINITY : out[0] * CUDART_LN2_F + CUDART_L2E_F;
  __half2 pair = __half2half2(h[0]);
  __nv_bfloat162 bpair = __bfloat162bfloat162(__float2bfloat16(x));
  unsigned int total = __reduce_add_sync(0xffffffffu, counts[threadIdx.x]);
  unsigned int top = __reduce_max_sync(0xffffffffu, counts[threadIdx.x]);
  size_t global_address = __cvta_generic_to_global(out);
  double product = __dmul_rn(d[0], d[1]);
  out[1] = __low2float(pair) + __high2float(bpair) + float(product) + float(total + top + global_address);
  cuda::ptx::cp_async_bulk(cuda::ptx::space_global, cuda::ptx::space_shared, dst, staged, 256u);
  cuda::ptx::cp_async_bulk_commit_group();
  cuda::ptx::cp_async_bulk_wait_group(cuda::ptx::n32_t<0>{});
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
}
"""


# What nvcc accepts and clang does not by itself: host code calling a `constexpr __device__`
# helper (`--expt-relaxed-constexpr`) declared through a macro in a header, and host-side
# min/max, mixed signedness included.
DEVICE_HELPERS = r"""
#pragma once
#define TILE_DEVICE __forceinline__ __device__
namespace device {
template <typename T, typename U>
TILE_DEVICE constexpr auto div_ceil(T a, U b) {
  return (a + b - 1) / b;
}
}  // namespace device
"""
NVCC_HOST_CODE = r"""
#include "device_helpers.cuh"
#include <cstdio>
using namespace device;

__global__ void report(int value) {
  if (threadIdx.x == 0) printf("value=%d\n", value);
}

// A cache-hinted store: CUDA declares it for the device pass only.
__global__ void store_streaming(float4* out, float4 value) { __stcg(out, value); }

template <int kGroup>
inline int plan_groups(int tile_k) {
  constexpr int kPerGroup = div_ceil(kGroup, 32);
  return div_ceil(tile_k, 32) * kPerGroup;
}

inline unsigned int clamp_tiles(unsigned int start_tile, int num_tiles, long long budget) {
  int groups = plan_groups<64>(num_tiles);
  return min(start_tile + 4u, num_tiles) + max(groups, 1) + static_cast<unsigned int>(min(budget, 8ll));
}
"""

# What CUTLASS 4 / CuTe and CUDA 13 kernels name from the toolkit beyond the runtime: the
# aligned 32-byte vectors, address-space tests, complex numbers, driver entry points looked up
# through the runtime, WMMA fragments, preferred cluster shapes, occupancy with flags and
# the asynchronous-copy pipeline primitives, device `ldexpf`.
TOOLKIT_EXTRAS = r"""
#include <cuComplex.h>
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_device_runtime_api.h>
#include <cuda_pipeline.h>
#include <cuda_runtime.h>
#include <mma.h>
#include <cstdint>

__global__ void pack(const long4_32a* in, double4_16a* out, const void* table) {
  if (__isConstant(table) || __isLocal(table)) return;
  uint64_t bits = __shfl_xor_sync(0xffffffffu, static_cast<uint64_t>(in[0].x), 1);
  out[0].x = static_cast<double>(bits + __dp4a(1, 2, 3)) + ldexpf(1.0f, -6);
  nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> acc;
  nvcuda::wmma::fill_fragment(acc, 0.0f);
  __shared__ long4_32a staged[32];
  __pipeline_memcpy_async(&staged[threadIdx.x], &in[threadIdx.x], sizeof(long4_32a));
  __pipeline_commit();
  __pipeline_wait_prior(0);
}

inline float magnitude(cuFloatComplex z) { return cuCrealf(z) * cuCrealf(z) + cuCimagf(z) * cuCimagf(z); }

inline bool encode(CUtensorMap* map, void* base, const cuuint64_t* dims, const cuuint64_t* strides,
                   const cuuint32_t* box, const cuuint32_t* elem_strides) {
  void* entry = nullptr;
  cudaDriverEntryPointQueryResult found;
  cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &entry, 12000, cudaEnableDefault, &found);
  auto encode_tiled = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(entry);
  CUresult result = encode_tiled(map, CU_TENSOR_MAP_DATA_TYPE_TFLOAT32, 2, base, dims, strides, box, elem_strides,
                                 CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B,
                                 CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return result == CUresult::CUDA_SUCCESS;
}

inline int clusters(cudaLaunchConfig_t* config) {
  cudaLaunchAttribute preferred;
  preferred.id = cudaLaunchAttributePreferredClusterDimension;
  preferred.val.preferredClusterDim.x = 2;
  int blocks = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&blocks, pack, 128, 0, cudaOccupancyDisableCachingOverride);
  int count = 0;
  cudaOccupancyMaxActiveClusters(&count, reinterpret_cast<const void*>(pack), config);
  return blocks + count + static_cast<int>(preferred.val.preferredClusterDim.x);
}
"""

# Not relaxed: a non-constexpr device function called from the host stays an error.
WRONG_SIDE_CALL = r"""
__device__ int lane_count(int warps) { return warps * 32; }
inline int host_plan(int warps) { return lane_count(warps); }
"""

# Device code copying bytes the way warp shuffle helpers do: memcpy/memset are device
# functions in CUDA, so a non-template kernel (checked eagerly, not as an uninstantiated
# template) may call them, directly, through <cstring>'s std::, or through sgl_kernel's CTA sum.
DEVICE_MEMCPY = r"""
#include <sgl_kernel/cta.cuh>
#include <cstdint>
#include <cstring>

__global__ void row_sum(const float* in, float* out) {
  __shared__ float partial[32];
  sglang::device::cta::reduce_sum<float>(in[threadIdx.x], partial);
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}

__global__ void float_bits(const float* in, uint32_t* bits, float* cleared) {
  uint32_t word;
  memcpy(&word, &in[threadIdx.x], sizeof(word));
  bits[threadIdx.x] = word;
  std::memset(&cleared[threadIdx.x], 0, sizeof(float));
}

inline void host_bits(const float* in, uint32_t* bits) { std::memcpy(bits, in, sizeof(float)); }
"""


# A complex type over a half pair, as cuBLASDx's `commondx::complex<__half>` is written: every
# operator cuda_fp16.hpp and cuda_bf16.hpp give the pair types.
PAIR_OPERATORS = r"""
#include <cuda_bf16.h>
#include <cuda_fp16.h>

template <typename Pair>
struct PairComplex {
  Pair xy;
  __device__ PairComplex& operator+=(const PairComplex& other) { xy += other.xy; return *this; }
  __device__ PairComplex& operator-=(const PairComplex& other) { xy -= other.xy; return *this; }
  __device__ PairComplex& operator*=(const PairComplex& other) { xy *= other.xy; return *this; }
  __device__ PairComplex& operator/=(const PairComplex& other) { xy /= other.xy; return *this; }
  __device__ PairComplex operator/(const PairComplex& other) const { return {xy / other.xy}; }
  __device__ PairComplex operator-() const { return {-xy}; }
  __device__ bool operator==(const PairComplex& other) const { return xy == other.xy; }
  __device__ bool operator!=(const PairComplex& other) const { return xy != other.xy; }
};

__global__ void accumulate(PairComplex<__half2>* h, PairComplex<__nv_bfloat162>* b) {
  h[0] += h[1];
  h[0] -= -h[1] / h[2];
  h[0] *= h[1];
  h[0] /= h[1];
  b[0] += b[1];
  b[0] -= -b[1] / b[2];
  if (h[0] == h[1] || b[0] != b[1]) h[2] = h[0];
}
"""


@pytest.mark.parametrize(
    "source",
    [CLUSTER_LAUNCH, COOPERATIVE_GROUPS, CUB_PRIMITIVES, INTRINSICS, NVCC_HOST_CODE, TOOLKIT_EXTRAS, PAIR_OPERATORS],
    ids=["cluster-launch", "cooperative-groups", "cub", "intrinsics", "nvcc-host-code", "toolkit-extras", "pairs"],
)
def test_hermetic_prelude_covers_what_kernels_include(tmp_path: Path, source: str) -> None:
    assert errors_of(tmp_path, source, resolve_settings("hermetic")) == []


# A library that declares its driver wrappers only for nvcc 12 and later, by nvcc's version
# macros (as CUTLASS's `call_cuTensorMapEncodeTiled`), and a user of the wrapper.
NVCC_VERSION_GATED = r"""
#include <cuda.h>
#if (__CUDACC_VER_MAJOR__ >= 12)
template <typename... Args>
CUresult call_encode(Args... args) { return CUDA_SUCCESS; }
#endif
inline bool encoded() { return call_encode(1, 2) == CUDA_SUCCESS; }
#if __CUDACC_VER_MAJOR__ * 1000 + __CUDACC_VER_MINOR__ * 10 != CUDA_VERSION
#error the version macros do not match the CUDA headers
#endif
"""


@needs_cuda
def test_system_mode_defines_nvccs_version_macros(tmp_path: Path) -> None:
    assert errors_of(tmp_path, NVCC_VERSION_GATED, resolve_settings("system")) == []


@pytest.mark.parametrize("mode", ["hermetic", pytest.param("system", marks=needs_cuda)])
def test_only_constexpr_device_functions_are_relaxed(tmp_path: Path, mode: str) -> None:
    assert errors_of(tmp_path, WRONG_SIDE_CALL, resolve_settings(mode)) == [
        "kernel.cuh:3: no matching function for call to 'lane_count'"
    ]


# A launcher in an anonymous namespace, as JIT files keep their params structs: the runtime's
# host templates are instantiated with a type no other translation unit can name.
INTERNAL_PARAMS_LAUNCH = r"""
#include <cuda_runtime.h>

namespace {

struct ZeroParams {
  float* out;
};

__global__ void zero_kernel(ZeroParams params) { params.out[threadIdx.x] = 0.0f; }

}  // namespace

inline cudaError_t launch_zero(ZeroParams params, cudaStream_t stream) {
  cudaFuncSetAttribute(zero_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 0);
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(1);
  config.blockDim = dim3(32);
  config.stream = stream;
  return cudaLaunchKernelEx(&config, zero_kernel, params);
}
"""


@pytest.mark.parametrize("mode", ["hermetic", pytest.param("system", marks=needs_cuda)])
def test_a_launch_of_a_kernel_with_internal_params_parses(tmp_path: Path, mode: str) -> None:
    assert errors_of(tmp_path, INTERNAL_PARAMS_LAUNCH, resolve_settings(mode)) == []


# A descriptor filled in braces from 64-bit sizes, as real kernels pack TMA and MMA
# descriptors: nvcc builds it (its host compiler warns of the narrowing), clang stops.
BRACED_NARROWING = r"""
#include <cstdint>

struct CopyDesc {
  uint32_t bytes;
  uint32_t rows;
};

__device__ inline CopyDesc describe(int64_t rows, int64_t row_bytes) { return CopyDesc{rows * row_bytes, rows}; }
"""


@pytest.mark.parametrize("mode", ["hermetic", pytest.param("system", marks=needs_cuda)])
def test_a_non_constant_narrowed_in_braces_parses_as_nvcc_builds_it(tmp_path: Path, mode: str) -> None:
    assert errors_of(tmp_path, BRACED_NARROWING, resolve_settings(mode)) == []


@pytest.mark.parametrize("mode", ["hermetic", pytest.param("system", marks=needs_cuda)])
def test_device_code_calls_memcpy(tmp_path: Path, mode: str) -> None:
    assert errors_of(tmp_path, DEVICE_MEMCPY, resolve_settings(mode)) == []


# A template argument list closed after a comma, as cuBLASDx's instruction lists (nvidia-mathdx)
# are written: nvcc builds it, clang expects one more argument.
TRAILING_TEMPLATE_COMMA = r"""
template <class... Items> struct InstructionList {};
template <int Sm> struct Instruction {};

using Portable = InstructionList<Instruction<800>, Instruction<750>,
                                 >;
using Nested = InstructionList<InstructionList<Instruction<900>,>>;
"""

# The near miss: a call's argument list ending in a comma, which nvcc rejects too.
TRAILING_CALL_COMMA = r"""
inline int twice(int x) { return 2 * x; }
inline int four() { return twice(2,); }
"""


@pytest.mark.parametrize("mode", ["hermetic", pytest.param("system", marks=needs_cuda)])
def test_a_template_argument_list_ending_in_a_comma_parses_as_nvcc_builds_it(tmp_path: Path, mode: str) -> None:
    assert errors_of(tmp_path, TRAILING_TEMPLATE_COMMA, resolve_settings(mode)) == []
    assert errors_of(tmp_path, TRAILING_CALL_COMMA, resolve_settings(mode)) == ["kernel.cuh:3: expected expression"]


# A kernel for a newer GPU than the configured one: its vector type allows 32 bytes only where
# the JIT's arch macro says Blackwell (as a tree's `kMaxVecBytes` does), so at sm_90 the
# `static_assert` fails and every use of the type after it.
BLACKWELL_ONLY_VECTOR = r"""
#include <cstddef>

constexpr std::size_t kMaxVecBytes = SGL_CUDA_ARCH >= 1000 ? 32 : 16;

template <typename T, std::size_t N>
struct Vec {
  static_assert(sizeof(T) * N <= kMaxVecBytes, "vector too wide for this architecture");
  __device__ void load(const T* p) { for (std::size_t i = 0; i < N; ++i) v[i] = p[i]; }
  T v[N];
};

__global__ void wide_copy(float* out, const float* in) {
  Vec<float, 8> x;
  x.load(in);
  out[threadIdx.x] = x.v[threadIdx.x % 8];
}
"""

# The same file for a GPU no architecture supports: no arch helps, so it stays an error.
NO_ARCH_VECTOR = BLACKWELL_ONLY_VECTOR.replace("Vec<float, 8>", "Vec<float, 16>")


@pytest.mark.parametrize("mode", ["hermetic", pytest.param("system", marks=needs_cuda)])
def test_a_kernel_for_a_newer_gpu_parses_as_its_build_targets_it(tmp_path: Path, mode: str) -> None:
    assert errors_of(tmp_path, BLACKWELL_ONLY_VECTOR, resolve_settings(mode)) == []
    errors = errors_of(tmp_path, NO_ARCH_VECTOR, resolve_settings(mode))
    assert errors and "vector too wide for this architecture" in errors[0]


# An activation helper templated on the element type, called with `double` and `float` in
# device code: the double-precision math overloads are device functions in CUDA.
DEVICE_DOUBLE_MATH = r"""
#include <cuda_runtime.h>

template <typename T>
__device__ T gate(T x) { return tanh(x) * (T(1) + exp(-x)) + log1p(x) + floor(x); }

__global__ void gates(const double* in, double* out, float* half_out) {
  out[threadIdx.x] = gate<double>(in[threadIdx.x]) + sin(in[0]) + std::erf(in[1]);
  half_out[threadIdx.x] = gate<float>(static_cast<float>(in[threadIdx.x]));
}
"""

# Random draws through cuRAND's counter-based state, as sparse random-matrix kernels make them.
CURAND_DRAWS = r"""
#include <curand_kernel.h>

__device__ inline double normal_draw(curandStatePhilox4_32_10_t* state) { return curand_normal_double(state); }

__global__ void random_weights(unsigned long long seed, float* weights, float4* noise, unsigned int* picks) {
  curandStatePhilox4_32_10_t state;
  curand_init(seed, blockIdx.x * blockDim.x + threadIdx.x, 0, &state);
  weights[threadIdx.x] = curand_uniform(&state) + static_cast<float>(normal_draw(&state));
  noise[threadIdx.x] = curand_normal4(&state);
  picks[threadIdx.x] = curand(&state) % 7u;
}
"""

# A 2-D tensor map encoded from arrays the host spells with <stdint.h>'s types.
TENSOR_MAP_FROM_STDINT = r"""
#include <cuda.h>
#include <cstdint>

inline CUresult encode_rows(CUtensorMap* map, void* base, uint64_t rows, uint64_t cols) {
  uint64_t dims[2] = {cols, rows};
  uint64_t strides[1] = {cols * 2};
  uint32_t box[2] = {64, 64};
  uint32_t elem_strides[2] = {1, 1};
  return cuTensorMapEncodeTiled(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, base, dims, strides, box, elem_strides,
                                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}
"""

# A source nvcc (or NVRTC) builds on its own, without <stdint.h> or cuda.h in scope: it spells
# the fixed-width types and the tensor-map type itself, and includes a CUDA header after them.
SELF_CONTAINED_TYPES = r"""
typedef unsigned char uint8_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef signed int int32_t;
typedef struct __align__(64) { uint64_t opaque[16]; } CUtensorMap;

#include <cuda_bf16.h>

__global__ void copy_tiles(const __grid_constant__ CUtensorMap map, uint64_t* out, uint8_t flag, int32_t n) {
  if (threadIdx.x < n) out[threadIdx.x] = map.opaque[threadIdx.x % 16] + flag;
}
"""

# The half/bfloat16/fp8/fp4 conversions, runtime queries and driver types of older
# all-reduce, attention and quantization code; the tensor map redeclared as libcu++ does;
# INT_MIN without <climits> (the CUDA setup includes it).
LOW_PRECISION_AND_RUNTIME = r"""
#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda_fp8.h>
#include <cuda_fp4.h>

typedef struct CUtensorMap_st CUtensorMap;
typedef struct __CUDA_ALIGN__(16) { half parts[8]; } half8;
constexpr CUpointer_attribute kRangeStart = CU_POINTER_ATTRIBUTE_RANGE_START_ADDR;

__global__ __maxnreg__(128) void widen(const __nv_fp8_e4m3* in, nv_bfloat162* out, half2* h, const __nv_fp4x2_e2m1* q) {
  nv_bfloat16 low = nv_bfloat16(in[0]);
  out[threadIdx.x] = make_bfloat162(low, __double2bfloat16(0.5));
  nv_half x = __double2half(1.0);
  if (!__hisnan(x) && __heq(x, x) && q != nullptr) h[threadIdx.x] = make_half2(x, x);
}

inline bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status;
  return cudaStreamIsCapturing(stream, &status) == cudaSuccess && status == cudaStreamCaptureStatusActive;
}

inline int widen_block_size() {
  int grid = 0, block = 0, shared = 0;
  if (cudaOccupancyMaxPotentialBlockSize(&grid, &block, widen) == cudaErrorUnknown) return INT_MIN;
  cudaDeviceGetAttribute(&shared, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0);
  return block + shared;
}
"""


@pytest.mark.parametrize("mode", ["hermetic", pytest.param("system", marks=needs_cuda)])
@pytest.mark.parametrize(
    "source",
    [DEVICE_DOUBLE_MATH, CURAND_DRAWS, TENSOR_MAP_FROM_STDINT, SELF_CONTAINED_TYPES, LOW_PRECISION_AND_RUNTIME],
    ids=["device-double-math", "curand", "tensor-map-stdint", "self-contained-types", "low-precision-runtime"],
)
def test_kernels_of_older_trees_parse(tmp_path: Path, source: str, mode: str) -> None:
    """cuRAND comes from the shim when the CUDA install lacks it (and in hermetic mode); a
    file's own definitions of names the CUDA setup defines are used under another name."""
    assert errors_of(tmp_path, source, resolve_settings(mode), name="kernel.cu") == []


# What FlashInfer's host code names from the driver and runtime APIs: a cubin loaded through
# the runtime's library API (tvm-ffi's cubin launcher), a device symbol read on the host, the
# current context, stream capture and launch attributes of a TMA-descriptor arena, a driver
# wrapper's `cuModuleGetGlobal` and the tensor-map enum by its tag, and an NVRTC-style tensor
# map defined only where cuda.h has not defined it.
CUBIN_LAUNCHER = r"""
#include <cuda.h>
#include <cuda_runtime.h>

__device__ int kernel_smem_bytes;

inline cudaError_t load_and_size(const void* image, cudaKernel_t* kernel, int* smem) {
  cudaLibrary_t library;
  cudaError_t status = cudaLibraryLoadData(&library, image, nullptr, nullptr, 0, nullptr, nullptr, 0);
  if (status == cudaErrorInvalidDevice || status == cudaErrorInsufficientDriver) return status;
  cudaLibraryGetKernel(kernel, library, "tile_kernel");
  cudaKernelSetAttributeForDevice(*kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 1 << 16, 0);
  int reserved = 0;
  cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, 0);
  return cudaMemcpyFromSymbol(smem, kernel_smem_bytes, sizeof(int));
}

inline CUresult launch_on_current_context(CUfunction function, CUstream stream, void** args) {
  CUcontext context = nullptr;
  CUdevice device = -1;
  CUresult result = cuCtxGetCurrent(&context);
  if (result != CUDA_SUCCESS || cuCtxGetDevice(&device) == CUDA_ERROR_NOT_FOUND) return result;
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  cuStreamIsCapturing(stream, &capture);
  CUdeviceptr slot = 0;
  cuMemAlloc(&slot, sizeof(CUtensorMap));
  CUtensorMap map{};
  cuMemcpyHtoD(slot, &map, sizeof(CUtensorMap));
  cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 1 << 16);
  CUlaunchAttribute cluster;
  cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  cluster.value.clusterDim.x = 2;
  cluster.value.clusterDim.y = 1;
  cluster.value.clusterDim.z = 1;
  CUlaunchConfig config{};
  config.attrs = &cluster;
  config.numAttrs = 1;
  config.hStream = stream;
  return cuLaunchKernelEx(&config, function, args, nullptr);
}

inline CUresult module_global(CUmodule module, CUdeviceptr* address, CUtensorMapDataType_enum type) {
  size_t bytes = 0;
  CUresult (*get_global)(CUdeviceptr*, size_t*, CUmodule, const char*) = cuModuleGetGlobal;
  return type == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 ? get_global(address, &bytes, module, "table") : CUDA_SUCCESS;
}

#ifndef CU_TENSOR_MAP_NUM_QWORDS
struct CUtensorMap_st { unsigned long long opaque[16]; };
#endif
"""

# And from device code: fp8 pairs to and from half pairs, an fp8 zero from an integer, the
# `__nv_half2` spelling of `half2`, the paired half comparison as a lane mask, the
# parameter-space address of a grid-constant tensor map, the shared-window address through
# the NVVM intrinsic (called undeclared, as nvcc allows).
FP8_PAIRS_AND_ADDRESSES = r"""
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda.h>
#include <cstdint>

__global__ void requantize(const __grid_constant__ CUtensorMap map, const half* in, __nv_fp8_e4m3* out, half* back,
                           unsigned int* masks, uint64_t* addresses) {
  __shared__ half2 staged[32];
  half2 pair = reinterpret_cast<const half2*>(in)[threadIdx.x];
  reinterpret_cast<__nv_fp8x2_e4m3*>(out)[threadIdx.x] = __nv_fp8x2_e4m3{pair};
  reinterpret_cast<half2*>(back)[threadIdx.x] = half2(reinterpret_cast<const __nv_fp8x2_e4m3*>(out)[threadIdx.x]);
  __nv_fp8_e4m3 zero = (__nv_fp8_e4m3)0;
  __nv_half2 twice = __hadd2(pair, pair);
  masks[threadIdx.x] = __heq2_mask(pair, pair) & __hgt2_mask(twice, half2(half(float(zero)), half(0.0f)));
  addresses[threadIdx.x] = __cvta_generic_to_grid_constant(&map) + __cvta_generic_to_constant(&map) +
                           __nvvm_get_smem_pointer(&staged[threadIdx.x]);
}
"""


@pytest.mark.parametrize("mode", ["hermetic", pytest.param("system", marks=needs_cuda)])
@pytest.mark.parametrize("source", [CUBIN_LAUNCHER, FP8_PAIRS_AND_ADDRESSES], ids=["cubin-launcher", "fp8-pairs"])
def test_flashinfer_driver_and_conversion_code_parses(tmp_path: Path, source: str, mode: str) -> None:
    """The hermetic prelude declares these as the CUDA toolkit does: the same source parses
    against the toolkit's own headers (system mode)."""
    assert errors_of(tmp_path, source, resolve_settings(mode), name="kernel.cu") == []


def test_a_typedef_clashing_with_the_projects_own_header_stays_an_error(tmp_path: Path) -> None:
    """Only a clash with the CUDA setup's headers is renamed away; one between the tree's
    own files is a real error."""
    (tmp_path / "types.h").write_text("typedef int index_t;\n")
    source = '#include "types.h"\ntypedef long index_t;\n'
    assert errors_of(tmp_path, source, resolve_settings("hermetic")) == [
        "kernel.cuh:2: typedef redefinition with different types ('long' vs 'int')"
    ]


@needs_cuda
def test_system_mode_accepts_nvcc_host_code(tmp_path: Path) -> None:
    assert errors_of(tmp_path, NVCC_HOST_CODE, resolve_settings("system")) == []


@pytest.mark.slow
@needs_cuda
def test_system_mode_finds_cuda13_cccl(tmp_path: Path) -> None:
    """CUDA 13's cooperative groups include `cuda/std/...`, which lives in include/cccl."""
    assert errors_of(tmp_path, COOPERATIVE_GROUPS + CUB_PRIMITIVES, resolve_settings("system")) == []


def _pip_layout(root: Path, split: bool) -> Path:
    """Pip's header-only CUDA packages, made of links to the real install's headers:
    CUDA 13 puts everything in `nvidia/cu13/include` (CCCL in its `cccl/`); CUDA 12 splits
    it into `nvidia/cuda_runtime/include`, `nvidia/cuda_cccl/include`, ... No `bin/`."""
    real = Path(CUDA_HOME) / "include"
    if not split:
        home = root / "nvidia" / "cu13"
        home.mkdir(parents=True)
        (home / "include").symlink_to(real)
        return home
    home = root / "nvidia" / "cuda_runtime"
    (home / "include").mkdir(parents=True)
    for entry in real.iterdir():
        if entry.name != "cccl":
            (home / "include" / entry.name).symlink_to(entry)
    (root / "nvidia" / "cuda_cccl").mkdir()
    (root / "nvidia" / "cuda_cccl" / "include").symlink_to(real / "cccl")
    return home


@pytest.mark.slow
@needs_cuda
@pytest.mark.parametrize("split", [False, True], ids=["cu13", "cu12-split"])
def test_system_mode_with_pip_cuda_headers(tmp_path: Path, split: bool) -> None:
    home = _pip_layout(tmp_path / "site", split)
    settings = ParseSettings("system", str(home))
    assert errors_of(tmp_path, COOPERATIVE_GROUPS + CUB_PRIMITIVES, settings) == []


def test_missing_third_party_header_is_one_clear_finding(tmp_path: Path) -> None:
    """A header only `include-dirs` could provide: one KC000 that names it and the key."""
    (tmp_path / "pyproject.toml").write_text("[tool.kernel-check]\n")
    (tmp_path / "gemm.cuh").write_text(
        "#include <cute/tensor.hpp>\n#include <cuda_runtime.h>\n__global__ void gemm(float* out) { out[0] = 1.0f; }\n"
    )
    findings = run_one(tmp_path / "gemm.cuh").findings
    assert [(f.code, f.line) for f in findings] == [("KC000", 1)]
    assert "header 'cute/tensor.hpp' not found" in findings[0].message
    assert "`include-dirs`" in findings[0].message
    assert "it comes with flashinfer-python or nvidia-cutlass" in findings[0].message


def test_a_header_the_projects_build_makes_is_said_to_be_made_by_it(tmp_path: Path) -> None:
    """A JIT that writes `attn_config.inc` from a template before it compiles the source that
    includes it: the KC000 says the project's build makes it, and which Python file names it;
    a header no Python file names gets no such reason."""
    (tmp_path / "pyproject.toml").write_text("[tool.kernel-check]\n")
    (tmp_path / "jit").mkdir()
    (tmp_path / "jit" / "attention.py").write_text(
        'def generate(gen_dir, text):\n    (gen_dir / "attn_config.inc").write_text(text)\n'
    )
    (tmp_path / "attn.cu").write_text('#include "attn_config.inc"\n__global__ void attn(float* o) { o[0] = 1.0f; }\n')
    (tmp_path / "other.cu").write_text('#include "other_config.inc"\n')
    made = [f for f in run_one(tmp_path / "attn.cu").findings if f.code == "KC000"]
    assert len(made) == 1 and "header 'attn_config.inc' not found" in made[0].message
    assert "the project's build makes it (attention.py names it)" in made[0].message
    other = [f for f in run_one(tmp_path / "other.cu").findings if f.code == "KC000"]
    assert len(other) == 1 and "makes it" not in other[0].message


@pytest.mark.parametrize(
    ("header", "provider"),
    [
        ("cublasdx.hpp", "nvidia-mathdx"),
        ("cuda/std/utility", "nvidia-cuda-cccl or a CUDA install"),
        ("ATen/cuda/CUDAContext.h", "torch (its `include/`)"),
        ("cusparse.h", "nvidia-cusparse or a CUDA toolkit that has it (system mode)"),
        ("cublasLt.h", "nvidia-cublas or a CUDA toolkit that has it (system mode)"),
        ("cuda_runtime.h", "a CUDA toolkit (system mode)"),
        ("project/own_header.h", None),
    ],
)
def test_a_missing_header_names_the_package_that_provides_it(header: str, provider: str | None) -> None:
    assert header_provider(header) == provider


def test_undeclared_macro_points_at_defines(tmp_path: Path) -> None:
    """A macro the JIT build passes with -D: the KC000 names the `defines` setting."""
    (tmp_path / "pyproject.toml").write_text("[tool.kernel-check]\n")
    (tmp_path / "rope.cuh").write_text("constexpr int kHeadDim = JIT_HEAD_DIM;\n")
    findings = [f for f in run_one(tmp_path / "rope.cuh").findings if f.code == "KC000"]
    assert len(findings) == 1 and "`defines`" in findings[0].message


def test_header_that_is_not_self_contained_says_so(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.kernel-check]\n")
    (tmp_path / "helpers.cuh").write_text("inline int twice(int x) { return scale_by(x, 2); }\n")
    findings = [f for f in run_one(tmp_path / "helpers.cuh").findings if f.code == "KC000"]
    assert len(findings) == 1
    assert "use of undeclared identifier 'scale_by'" in findings[0].message
    assert "must include what it uses" in findings[0].message


# -- text rules run whatever the parse outcome --
NON_ASCII_COMMENT = "// rows \u2265 128 use the CTA variant\n"


def _codes(result) -> list[tuple[int, str]]:
    return sorted((f.location.line, f.code) for f in result.findings)


def test_kc310_declares_it_reads_the_text_alone() -> None:
    load_rules()
    text_rules = {r.meta.code for r in rules_for(Language.CPP) if reads_text_alone(r)}
    assert "KC310" in text_rules
    assert "KC101" not in text_rules


def test_text_rules_run_where_a_header_is_missing(tmp_path: Path) -> None:
    """A fatal error (a header nobody provides) makes the whole file one error span: the
    model rules' findings are dropped, the text rule's stand."""
    source = tmp_path / "k.cuh"
    source.write_text("#include <not_installed_anywhere/gemm.h>\n" + NON_ASCII_COMMENT + "int x;\n")
    assert _codes(run_one(source)) == [(1, "KC000"), (2, "KC310")]


def test_text_rules_run_inside_a_declaration_clang_could_not_type(tmp_path: Path) -> None:
    source = tmp_path / "k.cuh"
    source.write_text("inline int f() {\n  " + NON_ASCII_COMMENT + "  return undeclared_name;\n}\n")
    assert _codes(run_one(source)) == [(2, "KC310"), (3, "KC000")]


# -- header-only dependencies where the kernels' own JIT finds them --
CUTE_KERNEL = r"""
#include <cute/tensor.hpp>

template <class Layout>
__global__ void fill(float* out, Layout layout) {
  auto tensor = cute::make_tensor(cute::make_gmem_ptr(out), layout);
  tensor(threadIdx.x) = 1.0f;
}
"""
CUTLASS_WHEEL = "nvidia-cutlass==4.2.0.0"  # 6.4 MB: CUTLASS and CuTe under cutlass_library/source/
CCCL_WHEEL = "nvidia-cuda-cccl==13.0.85"  # 4 MB: CUDA 13's CCCL (libcu++, CUB, Thrust) in nvidia/cu13/include/cccl


def _pip_target(target: Path, *wheels: str) -> None:
    """Install `wheels` into the folder `target` (no dependencies), or skip when pip cannot."""
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile", "--target", str(target)]
    install = subprocess.run([*pip, *wheels], capture_output=True, text=True, timeout=600)
    if install.returncode != 0:
        pytest.skip(f"cannot install {' '.join(wheels)} (package index unreachable?): {install.stderr.strip()[-200:]}")


def _kc000_lines(project: Path, python_path: list[str], mode: str = "system") -> list[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), *python_path])}
    command = [sys.executable, "-m", "kernel_check", "--no-cache", "--mode", mode, "--output-format", "concise"]
    done = subprocess.run([*command, "gemm.cuh"], cwd=project, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 1), done.stderr
    return [line for line in done.stdout.splitlines() if "KC000" in line]


@pytest.mark.slow
@needs_cuda
def test_cutlass_from_an_installed_distribution_is_found(tmp_path: Path) -> None:
    """nvidia-cutlass installed (into a --target folder on the path): CuTe code parses; the
    same file without it is a KC000 naming the header."""
    target = tmp_path / "site"
    _pip_target(target, CUTLASS_WHEEL)
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[tool.kernel-check]\n")
    (project / "gemm.cuh").write_text(CUTE_KERNEL)
    assert any("'cute/tensor.hpp' not found" in line for line in _kc000_lines(project, []))
    assert _kc000_lines(project, [str(target)]) == []


@pytest.mark.slow
def test_cutlass_parses_in_hermetic_mode_with_an_installed_cccl(tmp_path: Path) -> None:
    """CuTe includes CCCL's `cuda/std/utility`, which no CUDA install gives in hermetic mode:
    with nvidia-cutlass alone the file is a KC000 naming that header; with nvidia-cuda-cccl
    installed too (a package, as flashinfer-python also bundles one) it parses, the CCCL
    searched after the hermetic stubs."""
    cutlass, cccl = tmp_path / "cutlass-site", tmp_path / "cccl-site"
    _pip_target(cutlass, CUTLASS_WHEEL)
    _pip_target(cccl, CCCL_WHEEL)
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[tool.kernel-check]\n")
    (project / "gemm.cuh").write_text(CUTE_KERNEL)
    alone = _kc000_lines(project, [str(cutlass)], "hermetic")
    assert any("cuda/std/utility' not found" in line for line in alone), alone  # `cccl/cuda/...` in CUTLASS 4.2
    assert _kc000_lines(project, [str(cutlass), str(cccl)], "hermetic") == []


# A torch extension's kernel source: torch's macros and half type, from its include folder.
TORCH_EXTENSION_KERNEL = r"""
#include <c10/macros/Macros.h>
#include <c10/util/Half.h>

__global__ void scale(c10::Half* out, float factor) {
  out[threadIdx.x] = static_cast<c10::Half>(static_cast<float>(out[threadIdx.x]) * factor);
}
C10_HOST_DEVICE inline int twice(int x) { return 2 * x; }
"""


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch installed")
def test_an_installed_torchs_headers_are_found_as_its_extension_jit_finds_them(tmp_path: Path) -> None:
    assert errors_of(tmp_path, TORCH_EXTENSION_KERNEL, resolve_settings("hermetic"), name="kernel.cu") == []


def _parse_errors(path: Path) -> list[str]:
    unit = parse_file(path, path.read_bytes(), resolve_settings("hermetic"))
    return [f"{Path(e.path).name}:{e.line}: {e.message}" for e in unit.errors]


def test_a_header_named_from_a_folder_above_is_found_there_up_to_the_project_root(tmp_path: Path) -> None:
    """Attention code that names its headers from the module's folder (`<tile/traits.h>`,
    built with `-I` that folder), with angle brackets from that folder itself too; a header
    that only exists above the project root stays missing."""
    project = tmp_path / "project"
    module = project / "csrc" / "attn"
    (module / "tile").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[tool.kernel-check]\n")
    (module / "tile" / "traits.h").write_text("#pragma once\nstruct TileTraits { static constexpr int kRows = 64; };\n")
    (module / "tile" / "kernel.cuh").write_text(
        "#include <tile/traits.h>\n__global__ void rows(int* out) { out[0] = TileTraits::kRows; }\n"
    )
    (module / "launch.cuh").write_text("#include <tile/traits.h>\ninline int rows() { return TileTraits::kRows; }\n")
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "outside.h").write_text("#pragma once\nconstexpr int kOutside = 1;\n")
    (project / "csrc" / "uses_outside.cuh").write_text("#include <shared/outside.h>\nint x = kOutside;\n")
    assert _parse_errors(module / "tile" / "kernel.cuh") == []
    assert _parse_errors(module / "launch.cuh") == []
    outside = _parse_errors(project / "csrc" / "uses_outside.cuh")
    assert outside == ["uses_outside.cuh:1: 'shared/outside.h' file not found"]


def test_a_header_library_in_an_include_folder_beside_the_sources_is_found(tmp_path: Path) -> None:
    """A JIT tree's sources in `csrc/jit/` name their header library from `csrc/include/`
    (`<lib/tensor.h>`, built with `-I csrc/include` by the tree's own JIT helper)."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    library = project / "csrc" / "include" / "lib"
    library.mkdir(parents=True)
    (library / "tensor.h").write_text("#pragma once\nstruct Rows { int n; };\n")
    (project / "csrc" / "jit").mkdir()
    store = project / "csrc" / "jit" / "store.cu"
    store.write_text("#include <lib/tensor.h>\n__global__ void store(Rows rows, int* out) { out[0] = rows.n; }\n")
    assert _parse_errors(store) == []


def test_a_header_library_kept_elsewhere_in_the_project_is_found_nearest_first(tmp_path: Path) -> None:
    """A vendored library the tree's JIT adds with `-I` to the builds that need it
    (`<ext/gemm_configs.h>` from `csrc/vendor/ext_lib/include/`), in no folder above the
    includer: the project's folder that holds it; of two, the one nearer the includer. A
    header no folder of the project holds stays missing."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    for owner, rows in (("vendor", 64), ("moe/vendor", 128)):
        library = project / "csrc" / owner / "ext_lib" / "include" / "ext"
        library.mkdir(parents=True)
        (library / "gemm_configs.h").write_text(f"#pragma once\nconstexpr int kRows = {rows};\n")
    (project / "csrc" / "moe" / "kernels").mkdir()
    gemm = project / "csrc" / "moe" / "kernels" / "gemm.cu"
    gemm.write_text(
        "#include <ext/gemm_configs.h>\n__global__ void rows(int* out) { out[0] = kRows; }\n"
        'static_assert(kRows == 128, "the copy beside moe/");\n'
    )
    (project / "csrc" / "absent.cu").write_text("#include <ext/absent.h>\n")
    assert _parse_errors(gemm) == []
    assert _parse_errors(project / "csrc" / "absent.cu") == ["absent.cu:1: 'ext/absent.h' file not found"]


# libcu++'s barrier and the PTX wrappers it is built on, as a TMA pipeline uses them.
CCCL_BARRIER_KERNEL = r"""
#include <cuda/barrier>
#include <cuda/ptx>

using block_barrier = cuda::barrier<cuda::thread_scope_block>;

__global__ void staged(float* out, uint64_t* arrivals) {
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
  cuda::ptx::mbarrier_arrive(arrivals);
  out[threadIdx.x] = 0.0f;
}
"""


@pytest.mark.slow
def test_an_installed_cccls_ptx_header_is_used_instead_of_the_hermetic_stub(tmp_path: Path) -> None:
    """<cuda/barrier> of an installed CCCL includes <cuda/ptx>: the stub steps aside for the
    real header, whose declarations the rest of CCCL shares (beside the stub's, every name
    was ambiguous)."""
    cccl = tmp_path / "cccl-site"
    _pip_target(cccl, CCCL_WHEEL)
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[tool.kernel-check]\n")
    (project / "gemm.cuh").write_text(CCCL_BARRIER_KERNEL)
    assert _kc000_lines(project, [str(cccl)], "hermetic") == []


# -- a header analysed in the context of its includer --
INCLUDER_CONTEXT = Path(__file__).resolve().parent / "fixtures" / "includer_context"


def _kc000_by_file(paths: list[Path], cache: Path, mode: str = "hermetic") -> dict[str, int]:
    load_rules()
    options = RunOptions(
        load_config(paths[0]), resolve_settings(mode), cache=CacheOptions(static_root(cache), results=True)
    )
    results = run_static(paths, options)
    return {Path(r.path).name: sum(f.code == "KC000" for f in r.findings) for r in results}


@pytest.mark.parametrize("mode", ["hermetic", pytest.param("system", marks=needs_cuda)])
def test_a_header_that_is_not_self_contained_parses_in_its_includers_context(tmp_path: Path, mode: str) -> None:
    """`bit_tuple_helpers.cuh` uses `std::has_single_bit` and `std::tuple_cat` without
    `<bit>` or `<tuple>`; its includer includes both first. Checked with its includer it
    parses as in a real build; checked alone (nobody includes it) it stays a KC000."""
    helpers = INCLUDER_CONTEXT / "bit_tuple_helpers.cuh"
    includer = INCLUDER_CONTEXT / "launch_shapes.cuh"
    cache = tmp_path / "cache"
    assert _kc000_by_file([helpers], cache, mode) == {"bit_tuple_helpers.cuh": 1}
    assert _kc000_by_file([helpers, includer], cache, mode) == {"bit_tuple_helpers.cuh": 0, "launch_shapes.cuh": 0}
    # the cached results are per context: alone again, the header is a KC000 again
    assert _kc000_by_file([helpers], cache, mode) == {"bit_tuple_helpers.cuh": 1}


@pytest.mark.parametrize("mode", ["hermetic", pytest.param("system", marks=needs_cuda)])
def test_a_header_parses_after_its_includers_using_directive(tmp_path: Path, mode: str) -> None:
    """`row_tiles.cuh` names `RowMajor` and `kTileRows` unqualified: its includer (behind an
    include guard) writes `using namespace tile_layouts;` between its includes. The context is
    the includer's code before the `#include`, not only its includes."""
    helpers = INCLUDER_CONTEXT / "row_tiles.cuh"
    includer = INCLUDER_CONTEXT / "row_kernel.cuh"
    cache = tmp_path / "cache"
    assert _kc000_by_file([helpers], cache, mode) == {"row_tiles.cuh": 1}
    assert _kc000_by_file([helpers, includer], cache, mode) == {"row_tiles.cuh": 0, "row_kernel.cuh": 0}


def test_an_include_inside_a_namespace_gets_the_includes_before_it(tmp_path: Path) -> None:
    """A prefix that ends inside braces cannot be a file of its own: the context is then the
    includes before the line, as full paths."""
    (tmp_path / "inner.cuh").write_text("#pragma once\nint inner_value();\n")
    (tmp_path / "outer.cuh").write_text('#include <tuple>\nnamespace wrap {\n#include "inner.cuh"\n}\n')
    contexts = include_contexts([tmp_path / "inner.cuh", tmp_path / "outer.cuh"])
    assert contexts == {str((tmp_path / "inner.cuh").resolve()): ("-include", "tuple")}


# -- the headers tvm_ffi.cpp.load_inline puts before the source it builds --
INLINE_BUILD = Path(__file__).resolve().parent / "fixtures" / "inline_build"


@pytest.mark.parametrize("mode", ["hermetic", pytest.param("system", marks=needs_cuda)])
def test_a_source_load_inline_builds_gets_the_headers_load_inline_puts_first(tmp_path: Path, mode: str) -> None:
    """`scale_rows.cu` names `tvm::ffi::TensorView` and includes no tvm-ffi header, as a
    source built by `tvm_ffi.cpp.load_inline` does; a header relying on its includer the
    same way gets nothing (its includer's context is what it needs)."""
    source = INLINE_BUILD / "scale_rows.cu"
    assert _kc000_by_file([source], tmp_path / "cache", mode) == {"scale_rows.cu": 0}
    header = tmp_path / "scale_rows.cuh"
    header.write_bytes(source.read_bytes())
    assert inline_build_args(header, header.read_bytes()) == ()
    assert _kc000_by_file([header], tmp_path / "cache", mode) == {"scale_rows.cuh": 1}


# -- the flags a wrapper's load_jit call builds its C++ file with --
WRAPPER_FLAGS = Path(__file__).resolve().parent / "fixtures" / "wrapper_flags"


def test_defines_of_the_wrappers_load_jit_call_apply_to_the_file_it_builds(tmp_path: Path) -> None:
    """`rope_dim.cuh` uses `JIT_HEAD_DIM` (computed: the first value the file compares it
    with) and `JIT_HEADS_PER_GROUP` (a literal), which only the `load_jit` call of
    `tests/fixtures/wrapper_flags/rope_dim.py` defines."""
    kernel = WRAPPER_FLAGS / "csrc" / "rope_dim.cuh"
    wrapper = WRAPPER_FLAGS / "rope_dim.py"
    cache = tmp_path / "cache"
    assert _kc000_by_file([kernel, wrapper], cache) == {"rope_dim.cuh": 0, "rope_dim.py": 0}
    # alone, it gets them from the wrapper found in the project (this repository)
    assert _kc000_by_file([kernel], cache) == {"rope_dim.cuh": 0}
    flags = wrapper_flags([wrapper])
    assert flags == {str(kernel): ("-DJIT_HEAD_DIM=64", "-DJIT_HEADS_PER_GROUP=2")}


def test_a_dependency_the_wrapper_names_is_searched_before_other_packages_copies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two installed packages bundle CUTLASS (flashinfer-python, and nvidia-mathdx for
    cuBLASDx); the wrapper's `load_jit(..., extra_dependencies=["mathdx"])` builds the
    solver against mathdx's own copy, which its cuBLASDx needs. Without the wrapper the
    first package's copy is found and the file fails."""
    site = tmp_path / "site"
    (site / "flashinfer").mkdir(parents=True)
    (site / "flashinfer" / "__init__.py").write_text("")
    for copy in (site / "flashinfer" / "data" / "cutlass", site / "nvidia" / "mathdx" / "external" / "cutlass"):
        (copy / "include" / "cutlass").mkdir(parents=True)
        bundled = "1" if "mathdx" in copy.parts else "0"
        (copy / "include" / "cutlass" / "version.h").write_text(f"#define CUTLASS_OF_MATHDX {bundled}\n")
    (site / "nvidia" / "mathdx" / "include").mkdir(parents=True)
    (site / "nvidia" / "mathdx" / "include" / "blasdx.hpp").write_text(
        '#include <cutlass/version.h>\nstatic_assert(CUTLASS_OF_MATHDX, "built with its own CUTLASS");\n'
    )
    monkeypatch.syspath_prepend(str(site))
    solver, wrapper = _wrapped_kernel(
        tmp_path,
        "solver",
        "#include <blasdx.hpp>\n__global__ void solve(float* out) { out[0] = 1.0f; }\n",
        'extra_dependencies=["mathdx"]',
    )
    cache = tmp_path / "cache"
    assert _kc000_by_file([solver, wrapper], cache) == {"solver.cuh": 0, "solver.py": 0}
    wrapper.write_text("")
    assert _kc000_by_file([solver], tmp_path / "cache-alone") == {"solver.cuh": 1}


def _wrapped_kernel(tmp_path: Path, name: str, source: str, load_jit_arguments: str) -> tuple[Path, Path]:
    """A project's `csrc/NAME.cuh` holding `source`, and its wrapper `NAME.py`, whose
    `load_jit` call builds it with `load_jit_arguments` besides its file."""
    project = tmp_path / "project"
    (project / "csrc").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[tool.kernel-check]\n")
    kernel = project / "csrc" / f"{name}.cuh"
    kernel.write_text(source)
    wrapper = project / f"{name}.py"
    wrapper.write_text(
        "from pkg.jit import load_jit\n\n"
        f'def module():\n    return load_jit("{name}", cuda_files=["{name}.cuh"], {load_jit_arguments})\n'
    )
    return kernel, wrapper


def test_the_standard_the_wrappers_load_jit_call_builds_with_applies_to_its_file(tmp_path: Path) -> None:
    """A kernel its wrapper builds as C++17 (`extra_cuda_cflags=["--std=c++17"]`) names a
    variable `concept`, a keyword from C++20 on: parsed as C++17, as its build compiles it;
    without the wrapper, as C++20, it fails."""
    legacy, wrapper = _wrapped_kernel(
        tmp_path,
        "legacy",
        "__global__ void fill(int* out) {\n  int concept = 1;\n  out[0] = concept;\n}\n",
        'extra_cuda_cflags=["--std=c++17"]',
    )
    assert wrapper_flags([wrapper]) == {str(legacy): ("-std=c++17",)}
    assert _kc000_by_file([legacy, wrapper], tmp_path / "cache") == {"legacy.cuh": 0, "legacy.py": 0}
    wrapper.write_text("")
    assert _kc000_by_file([legacy], tmp_path / "cache-alone") == {"legacy.cuh": 1}


def test_file_names_resolve_against_the_imported_builders_package(tmp_path: Path) -> None:
    """A wrapper in `pkg/ops/` builds `elem/k.cuh` through `pkg.jit.utils.load_jit`, which
    resolves names against `pkg/jit/csrc/` (the layout of sglang's JIT kernels and their
    `ops/` wrappers): the wrapper's own folders do not hold the file, the builder's do."""
    kernel = tmp_path / "pkg" / "jit" / "csrc" / "elem" / "k.cuh"
    kernel.parent.mkdir(parents=True)
    kernel.write_text("int x = JIT_X;\n")
    (tmp_path / "pkg" / "jit" / "utils").mkdir(parents=True)
    wrapper = tmp_path / "pkg" / "ops" / "att" / "w.py"
    wrapper.parent.mkdir(parents=True)
    call = 'load_jit("k", cuda_files=["elem/k.cuh"], extra_cuda_cflags=["-DJIT_X=3"])\n'
    wrapper.write_text("from pkg.jit.utils import load_jit\n\n" + call)
    assert wrapper_flags([wrapper]) == {str(kernel.resolve()): ("-DJIT_X=3",)}
    wrapper.write_text("from elsewhere.utils import load_jit\n\n" + call)  # a builder not in this tree
    assert wrapper_flags([wrapper]) == {}


# -- a C++ file checked without its wrapper (pre-commit passes the changed files alone) --
SCALE_WRAPPER = """\
from pkg.jit.utils import load_jit

load_jit("scale", cuda_files=["elem/scale.cuh"], extra_cuda_cflags=["-DJIT_SCALE=3"])
"""


def _jit_project(root: Path, wrapper_source: str) -> tuple[Path, Path]:
    """A project laid out as sglang's JIT kernels are: `pkg/jit/csrc/elem/scale.cuh` uses
    `JIT_SCALE`, which only the `load_jit` call of a wrapper in `pkg/ops/` may define.
    (kernel, wrapper)."""
    (root / "pyproject.toml").parent.mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "pkg"\n')
    kernel = root / "pkg" / "jit" / "csrc" / "elem" / "scale.cuh"
    kernel.parent.mkdir(parents=True)
    kernel.write_text("#pragma once\ninline constexpr int kScale = JIT_SCALE;\n")
    wrapper = root / "pkg" / "ops" / "scale.py"
    wrapper.parent.mkdir(parents=True)
    wrapper.write_text(wrapper_source)
    return kernel, wrapper


def test_a_file_checked_without_its_wrapper_gets_the_flags_of_the_projects_wrapper(tmp_path: Path) -> None:
    """`scale.cuh` checked alone parses with the `-D` of the project's wrapper that builds it,
    as in a run that holds the wrapper; the index of the project's Python files kept in the
    cache sees a wrapper edited since it was written."""
    kernel, wrapper = _jit_project(tmp_path / "project", SCALE_WRAPPER.replace("elem/scale.cuh", "elem/unrelated.cuh"))
    cache = tmp_path / "cache"
    assert _kc000_by_file([kernel], cache) == {"scale.cuh": 1}  # no wrapper builds it
    wrapper.write_text(SCALE_WRAPPER)
    assert _kc000_by_file([kernel], cache) == {"scale.cuh": 0}
    assert _kc000_by_file([kernel], cache) == {"scale.cuh": 0}  # warm: index and results from the cache
    assert run_wrapper_flags([kernel], [], {}, tmp_path / "project", None) == {
        str(kernel.resolve()): ("-DJIT_SCALE=3",)
    }


def test_a_run_from_a_folder_that_is_no_project_searches_the_files_own_project(tmp_path: Path) -> None:
    """Checked from a folder above the project that is no project itself (as `/tmp`), the
    kernel still gets its project's wrapper flags: the search walks the file's own project,
    not the whole folder."""
    kernel, _ = _jit_project(tmp_path / "project", SCALE_WRAPPER)
    assert run_wrapper_flags([kernel], [], {}, tmp_path, None) == {str(kernel.resolve()): ("-DJIT_SCALE=3",)}


def test_a_python_file_naming_the_kernel_outside_a_builder_call_gives_it_nothing(tmp_path: Path) -> None:
    """A wrapper that calls `load_jit` for another file and names `scale.cuh` and a `-D` in a
    comment, a list and another call passes the text test, and builds nothing for it."""
    source = (
        "from pkg.jit.utils import load_jit\n\n"
        "# elem/scale.cuh needs -DJIT_SCALE=3\n"
        'NOTES = ["elem/scale.cuh", "-DJIT_SCALE=3"]\n'
        'print("elem/scale.cuh", extra_cuda_cflags=["-DJIT_SCALE=3"])\n'
        'load_jit("other", cuda_files=["elem/other.cuh"], extra_cuda_cflags=["-DJIT_SCALE=3"])\n'
    )
    kernel, wrapper = _jit_project(tmp_path / "project", source)
    assert project_wrappers([kernel], tmp_path / "project") == [wrapper]
    assert run_wrapper_flags([kernel], [], {}, tmp_path / "project", None) == {}
    assert _kc000_by_file([kernel], tmp_path / "cache") == {"scale.cuh": 1}
