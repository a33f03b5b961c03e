"""Tests for kernel_check.runtime, the JIT build helper: real nvcc builds, compile only (no GPU needed)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kernel_check import runtime

pytestmark = pytest.mark.slow  # every test builds a kernel with nvcc

HEADER = """\
#pragma once
#define KC_TEST_FACTOR {factor}
"""

KERNEL = """\
#include "kc_test_factor.h"

#include <tvm/ffi/container/tensor.h>

#include <cstdint>

static_assert(SGL_CUDA_ARCH == 900, "the build must inject SGL_CUDA_ARCH for arch 9.0");

namespace sglang {

template <typename T>
__global__ void kc_twice_kernel(T* __restrict__ out, const T* __restrict__ in, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * static_cast<T>(KC_TEST_FACTOR);
}

template <typename T>
void kc_twice(tvm::ffi::TensorView out, tvm::ffi::TensorView in) {
  // Taking the kernel's address instantiates it, so ptxas reports its resources.
  void* kernel = reinterpret_cast<void*>(&kc_twice_kernel<T>);
  (void)kernel;
  (void)out;
  (void)in;
}

}  // namespace sglang
"""

BROKEN = """\
namespace sglang {
template <typename T>
void kc_broken(T x) { kc_this_identifier_does_not_exist(x); }
}  // namespace sglang
"""

needs_nvcc = pytest.mark.skipif(
    runtime.find_nvcc() is None, reason="nvcc not found (install the CUDA toolkit or set CUDA_HOME)"
)


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("jit_src")
    (root / "kc_test_factor.h").write_text(HEADER.format(factor="2"))
    (root / "kc_twice.cuh").write_text(KERNEL)
    (root / "kc_broken.cuh").write_text(BROKEN)
    return root


@pytest.fixture(scope="module")
def jit_env(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("TVM_FFI_CUDA_ARCH_LIST", "9.0")
    mp.setenv("KERNEL_CHECK_JIT_CACHE", str(tmp_path_factory.mktemp("jit_cache")))
    mp.delenv("KERNEL_CHECK_JIT_FORCE_REBUILD", raising=False)
    mp.delenv("KERNEL_CHECK_LINEINFO", raising=False)
    yield
    mp.undo()


def _kwargs(tree: Path, **extra):
    kw = dict(
        cuda_files=["kc_twice.cuh"],
        cuda_wrappers=[("kc_twice", "kc_twice<float>")],
        csrc_root=tree,
    )
    kw.update(extra)
    return kw


@pytest.fixture(scope="module")
def built(tree, jit_env):
    """One real build, requested by two threads at once: one compiles, one hits the cache."""
    results: list[runtime.BuildResult] = []
    errors: list[BaseException] = []

    def work():
        try:
            results.append(runtime.build_jit("kc_twice", "fp32_t", **_kwargs(tree)))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


@needs_nvcc
def test_build_and_resources(built):
    assert len(built) == 2
    assert sorted(r.cached for r in built) == [False, True]
    assert built[0].key == built[1].key
    result = built[0]
    assert result.library.is_file()
    kernels = [r for r in result.resources if "kc_twice_kernel" in r.name]
    assert len(kernels) == 1, result.resources
    k = kernels[0]
    assert k.registers > 0
    assert k.spill_stores == 0 and k.spill_loads == 0
    assert k.name.startswith("void sglang::kc_twice_kernel<float>") or k.name == k.mangled
    # a cache hit still reports the resources recorded at build time
    cached = next(r for r in built if r.cached)
    assert [x.registers for x in cached.resources] == [x.registers for x in result.resources]


@needs_nvcc
def test_cache_hit_same_process(built, tree):
    again = runtime.build_jit("kc_twice", "fp32_t", **_kwargs(tree))
    assert again.cached
    assert again.key == built[0].key


@needs_nvcc
def test_key_follows_included_header_content(built, tree):
    header = tree / "kc_test_factor.h"
    base = runtime.compute_key("kc_twice", "fp32_t", **_kwargs(tree))
    assert base == built[0].key
    try:
        header.write_text(HEADER.format(factor="3"))
        changed = runtime.compute_key("kc_twice", "fp32_t", **_kwargs(tree))
    finally:
        header.write_text(HEADER.format(factor="2"))
    assert changed != base
    assert runtime.compute_key("kc_twice", "fp32_t", **_kwargs(tree)) == base


@needs_nvcc
def test_key_follows_flags_arch_and_lineinfo(built, tree):
    base = built[0].key
    assert runtime.compute_key("kc_twice", "fp32_t", **_kwargs(tree, extra_cuda_cflags=["-DX=1"])) != base
    assert runtime.compute_key("kc_twice", "fp32_t", **_kwargs(tree, arch="10.0")) != base
    assert runtime.compute_key("kc_twice", "fp32_t", **_kwargs(tree, lineinfo=True)) != base


@needs_nvcc
def test_key_follows_the_include_search_path_of_the_environment(built, tree, monkeypatch):
    """A header found through CPATH is not among the sources the key hashes: the key must
    change with the variable, or a build made with a stand-in there is reused without it."""
    base = built[0].key
    monkeypatch.setenv("CPATH", str(tree / "stand-ins"))
    assert runtime.compute_key("kc_twice", "fp32_t", **_kwargs(tree)) != base
    monkeypatch.undo()
    assert runtime.compute_key("kc_twice", "fp32_t", **_kwargs(tree)) == base


@needs_nvcc
def test_compile_error_raises_build_error(tree, jit_env):
    with pytest.raises(runtime.BuildError) as info:
        runtime.build_jit(
            "kc_broken",
            cuda_files=["kc_broken.cuh"],
            cuda_wrappers=[("kc_broken", "kc_broken<float>")],
            csrc_root=tree,
        )
    err = info.value
    assert err.name == "kc_broken"
    assert "kc_this_identifier_does_not_exist" in err.log
    assert "error" in err.log
    assert "kc_this_identifier_does_not_exist" in str(err)


def test_missing_nvcc_says_how_to_install(monkeypatch, tree):
    monkeypatch.setattr(runtime, "find_nvcc", lambda: None)
    with pytest.raises(runtime.BuildError) as info:
        runtime.build_jit("kc_twice", **_kwargs(tree))
    msg = str(info.value)
    assert "nvidia-cuda-nvcc" in msg and "CUDA_HOME" in msg


def test_make_cpp_args():
    torch = pytest.importorskip("torch")
    args = runtime.make_cpp_args(
        torch.float16, torch.bfloat16, torch.float32, torch.float8_e4m3fn, True, False, 128, "kFoo"
    )
    assert list(args) == ["fp16_t", "bf16_t", "fp32_t", "fp8_e4m3_t", "true", "false", "128", "kFoo"]
    assert str(args) == "fp16_t, bf16_t, fp32_t, fp8_e4m3_t, true, false, 128, kFoo"
    assert f"k<{runtime.make_cpp_args(torch.int32, 4)}>" == "k<int32_t, 4>"
    with pytest.raises(TypeError):
        runtime.make_cpp_args(1.5)


def test_cache_once():
    calls = []

    @runtime.cache_once
    def factory(a, b=1):
        calls.append((a, b))
        return object()

    x = factory(1)
    assert factory(1) is x
    assert factory(1, b=2) is not x
    assert factory(1, b=2) is factory(1, b=2)
    assert calls == [(1, 1), (1, 2)]
    factory.cache_clear()
    factory(1)
    assert calls == [(1, 1), (1, 2), (1, 1)]


def test_arch_helpers(monkeypatch):
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "9.0")
    assert runtime.default_arch() == "9.0"
    assert runtime._arch_number("9.0") == 900
    assert runtime._arch_number("9.0a") == 900
    assert runtime._arch_number("10.0 12.0") == 1000
    assert isinstance(runtime.is_arch_support_pdl(), bool)


def test_parse_resource_usage_canned():
    log = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z3fooPf' for 'sm_90'
ptxas info    : Function properties for _Z3fooPf
    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 72 registers, used 1 barriers, 1024 bytes smem, 368 bytes cmem[0]
ptxas info    : Function properties for _Z6helperv
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function '_Z3barv' for 'sm_90'
ptxas info    : Function properties for _Z3barv
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers, 356 bytes cmem[0]
"""
    res = runtime.parse_resource_usage(log, demangle=False)
    assert [(r.name, r.registers, r.spill_stores, r.spill_loads, r.shared_bytes, r.stack_bytes) for r in res] == [
        ("_Z3fooPf", 72, 8, 4, 1024, 16),
        ("_Z3barv", 8, 0, 0, 0, 0),
    ]
    assert res[0].arch == "sm_90"


WRAPPER = """
from kernel_check import jit

def key(cuda_file):
    return jit.compute_key("kc_twice", cuda_files=[cuda_file], cuda_wrappers=[("kc_twice", "kc_twice<float>")])
"""


def _load_wrapper(path: Path):
    """Import a wrapper module from its file, as a user's package would be imported."""
    spec = importlib.util.spec_from_file_location(f"kc_wrapper_{abs(hash(path))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@needs_nvcc
def test_relative_cuda_files_resolve_against_the_calling_wrapper(tree, tmp_path, jit_env):
    """`cuda_files` without `csrc_root` are relative to the wrapper's folder or the nearest
    ancestor holding the first file (as `kernel-check build` reads manifests), never to
    kernel-check's own csrc/ (which an installed wheel does not even have)."""
    kernels = tmp_path / "kernels"
    (kernels / "elementwise").mkdir(parents=True)
    for name in ("kc_test_factor.h", "kc_twice.cuh"):
        (kernels / "elementwise" / name).write_text((tree / name).read_text())
    (kernels / "elementwise" / "twice.py").write_text(WRAPPER)
    wrapper = _load_wrapper(kernels / "elementwise" / "twice.py")
    expected = runtime.compute_key("kc_twice", **_kwargs(kernels / "elementwise"))
    assert wrapper.key("elementwise/kc_twice.cuh") == expected  # found from the parent folder
    assert wrapper.key("kc_twice.cuh") == expected  # found in the wrapper's own folder
    with pytest.raises(runtime.BuildError, match=r"cuda file not found: .*kernels/elementwise/add_constant\.cuh"):
        wrapper.key("add_constant.cuh")  # a name this repository's csrc/ has


def test_the_runtime_stands_apart_from_the_checker_and_keeps_its_former_name() -> None:
    """What a wrapper imports at run time loads none of the checker (no libclang, no rules,
    no config), and `kernel_check.jit` is the same API under its former name."""
    probe = (
        "import sys, kernel_check.jit as former, kernel_check.runtime as runtime\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('kernel_check'))))\n"
        "print(all(getattr(former, name) is getattr(runtime, name) for name in runtime.__all__))\n"
    )
    ran = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    loaded, same = ran.stdout.split("\n")[:2]
    assert loaded.split() == ["kernel_check", "kernel_check.includes", "kernel_check.jit", "kernel_check.runtime"]
    assert same == "True" and {"load_jit", "cache_once", "make_cpp_args"} <= set(runtime.__all__)
