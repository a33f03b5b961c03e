"""Seeds for the fuzz suite: real kernel sources and wrappers from this repository, plus a
few small self-contained kernels written for the fuzzer (they parse without any header,
so a mutated copy costs one cheap plain parse)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CPP_SUFFIXES = (".cuh", ".cu", ".h", ".hpp")


@dataclass(frozen=True)
class Seed:
    name: str  # where it came from, e.g. "csrc/norm/rmsnorm.cuh" or "snippet:raw-launch"
    relpath: str  # where a case puts it inside its tree (keeps the path-based rules meaningful)
    data: bytes
    language: str  # "cpp" or "python"
    heavy: bool = False  # includes the sgl_kernel headers (a parse wants the preamble)

    @property
    def small(self) -> bool:
        return len(self.data) <= 8_000


# Small kernels in the style of csrc/, without includes: the hermetic prelude declares the
# CUDA built-ins, so these type-check alone and the C++ rules have something to look at.
SNIPPETS: dict[str, str] = {
    "raw-launch": """\
/// \\brief Fill a buffer.
/// \\param dst Output buffer.
/// \\param n Element count.
__global__ void fill_kernel(float* __restrict__ dst, unsigned n) {
  if (threadIdx.x < n) dst[threadIdx.x] = 1.0f;
}

inline void launch_raw(float* dst, cudaStream_t stream) {
  fill_kernel<<<1, 32>>>(dst, 32);
  fill_kernel<<<dim3(1), dim3(32), 0, stream>>>(dst, 32);
}
""",
    "restrict": """\
#pragma once
namespace sglang {
template <typename T>
__global__ void scale_kernel(T* out, const T* in, T factor, long n) {
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * factor;
}

__device__ inline float twice(const float* p) { return p[0] * 2.0f; }

struct Params {
  const float* __restrict__ src;
  float* dst;
  int n;
};

__global__ void params_kernel(const Params params) {
  for (int i = threadIdx.x; i < params.n; i += blockDim.x) params.dst[i] = twice(params.src + i);
}
}  // namespace sglang
""",
    "shared-memory": """\
template <int kBlock, typename T>
__global__ void block_sum(const T* __restrict__ in, T* __restrict__ out, int n) {
  __shared__ T smem[kBlock];
  const int tid = threadIdx.x;
  smem[tid] = tid < n ? in[blockIdx.x * kBlock + tid] : T(0);
  __syncthreads();
  for (int s = kBlock / 2; s > 0; s >>= 1) {
    if (tid < s) smem[tid] += smem[tid + s];
    __syncthreads();
  }
  if (tid == 0) atomicAdd(out, smem[0]);
}

void launch_sum(const float* in, float* out, int n, cudaStream_t stream) {
  block_sum<256, float><<<(n + 255) / 256, 256, 0, stream>>>(in, out, n);
}
""",
    "vectorized": """\
#include <cstdint>
struct alignas(16) Vec4 { float x, y, z, w; };

__global__ void copy_vec(const float* __restrict__ src, float* __restrict__ dst, int64_t n) {
  const int64_t i = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * 4;
  if (i + 3 < n) {
    const Vec4 v = *reinterpret_cast<const Vec4*>(src + i);
    *reinterpret_cast<Vec4*>(dst + i) = v;
  }
  for (int64_t j = i; j < n && j < i + 4; ++j) dst[j] = src[j];
}

int32_t narrow(int64_t total) { return static_cast<int32_t>(total) * 4; }
unsigned grid_for(long n) { return (n + 127) / 128; }
""",
    "templates": """\
template <typename T, int N>
struct Array {
  T data[N];
  __device__ T& operator[](int i) { return data[i]; }
};

template <typename T, int N>
__device__ T reduce(const Array<T, N>& a) {
  T acc{};
#pragma unroll
  for (int i = 0; i < N; ++i) acc += a.data[i];
  return acc;
}

template <typename T, int N>
__global__ void reduce_kernel(const Array<T, N>* in, T* out) {
  out[blockIdx.x] = reduce(in[blockIdx.x]);
}

template __global__ void reduce_kernel<float, 8>(const Array<float, 8>*, float*);
""",
    "half-types": """\
__global__ void cast_kernel(const __half* __restrict__ in, __nv_bfloat16* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __float2bfloat16(__half2float(in[i]));
}

__global__ void pdl_kernel(float* out) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  out[threadIdx.x] = 0.f;
}
""",
}

PY_SNIPPETS: dict[str, tuple[str, str]] = {
    "jit-wrapper": (
        "python/sglang/kernels/ops/fuzz/wrapper.py",
        """\
from functools import lru_cache

import torch

from sglang.kernels.jit.utils import cache_once, load_jit, make_cpp_args


@lru_cache(maxsize=None)
def _jit_module(dtype):
    args = make_cpp_args(dtype)
    return load_jit("fuzz", *args, cuda_files=["fuzz.cuh"], cuda_wrappers=[("run", f"run<{args}>")])


def fuzz_op(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    if x.shape != y.shape:
        raise ValueError("shape mismatch")
    assert x.dtype == torch.float16
    out = torch.empty_like(x)
    _jit_module(x.dtype).run(x, y, out)
    return out
""",
    ),
    "registered-test": (
        "test/registered/kernels/ops/fuzz/test_fuzz.py",
        """\
import pytest
import torch

from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=30, suite="stage-b-kernel-unit")


@pytest.mark.parametrize("n", [1, 7, 1024])
def test_fuzz_op(n):
    x = torch.randn(n, device="cuda")
    torch.testing.assert_close(x, x)
""",
    ),
}


def _relpath_for(path: Path) -> str:
    """Python fixtures keep their path inside the fixture repo (KC504/KC506 read it)."""
    rel = path.relative_to(REPO).as_posix()
    marker = "tests/fixtures/python/repo/"
    return rel.removeprefix(marker)


@functools.lru_cache(maxsize=1)
def seeds() -> tuple[Seed, ...]:
    found: list[Seed] = []
    cpp_roots = [REPO / "csrc", REPO / "tests" / "fixtures" / "cpp", REPO / "tests" / "fixtures" / "harness"]
    for root in cpp_roots:
        for path in sorted(root.rglob("*")):
            if path.suffix in CPP_SUFFIXES and path.is_file():
                data = path.read_bytes()
                found.append(
                    Seed(
                        path.relative_to(REPO).as_posix(),
                        _relpath_for(path),
                        data,
                        "cpp",
                        heavy=b"#include <sgl_kernel/" in data or b"#include <tvm/" in data,
                    )
                )
    for root in (REPO / "csrc", REPO / "tests" / "fixtures" / "python"):
        for path in sorted(root.rglob("*.py")):
            if path.is_file():
                found.append(Seed(path.relative_to(REPO).as_posix(), _relpath_for(path), path.read_bytes(), "python"))
    for name, text in SNIPPETS.items():
        found.append(Seed(f"snippet:{name}", f"csrc/fuzz/{name}.cuh", text.encode(), "cpp"))
    for name, (relpath, text) in PY_SNIPPETS.items():
        found.append(Seed(f"snippet:{name}", relpath, text.encode(), "python"))
    return tuple(found)


def by_kind(language: str, *, heavy: bool | None = None, small: bool | None = None) -> list[Seed]:
    return [
        s
        for s in seeds()
        if s.language == language and (heavy is None or s.heavy == heavy) and (small is None or s.small == small)
    ]
