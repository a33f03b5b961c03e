"""KC320, KC504 and KC505 report only in a tree that has adopted their convention, and name
what establishes it; the `conventions` key turns the detection on or off (conventions.py).

Each case is a small tree written here: real files, real parses, the real pipeline."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import run_one
from kernel_check.cache import static_root
from kernel_check.clang.parse import parse_file
from kernel_check.clang.preamble import PreambleCache
from kernel_check.cli import main
from kernel_check.engine import RunStats, run_static
from kernel_check.includes import bundled_include_dir
from test_cache import options

_GLOBAL_KERNEL = """\
#include <cstdint>

/// \\brief A kernel at global scope.
/// \\param dst Output.
__global__ void stray_kernel(float* __restrict__ dst) { dst[0] = 0.0f; }
"""

_LIBRARY_KERNEL = "#include <sgl_kernel/utils.cuh>\n" + _GLOBAL_KERNEL

_HALF_NAMESPACED = (
    _GLOBAL_KERNEL
    + """
namespace sglang {

/// \\brief A kernel inside the namespace.
/// \\param dst Output.
__global__ void home_kernel(float* __restrict__ dst) { dst[0] = 1.0f; }

}  // namespace sglang
"""
)


def _tree(tmp_path: Path, kernel: str, library: str | None = None) -> Path:
    """A project (its `pyproject.toml` marks the root) with one kernel file and, when given,
    its own `include/sgl_kernel/utils.cuh`."""
    root = tmp_path / "tree"
    (root / "csrc").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "tree"\n')
    if library is not None:
        (root / "include" / "sgl_kernel").mkdir(parents=True)
        (root / "include" / "sgl_kernel" / "utils.cuh").write_text(library)
    path = root / "csrc" / "stray.cuh"
    path.write_text(kernel)
    return path


def _kc320(path: Path, **overrides) -> list[str]:
    return [f.message for f in run_one(path, **overrides).findings if f.code == "KC320"]


_GUIDE_KERNEL = """\
#include <cstdint>

namespace sglang {

__device__ __forceinline__ float twice(float x) { return 2.0f * x; }

__global__ void undocumented_kernel(float* __restrict__ dst) { dst[0] = twice(dst[0]); }

}  // namespace sglang
"""
_GUIDE_CODES = {"KC301", "KC330"}


@pytest.mark.parametrize(
    ("kernel", "library", "expected"),
    [
        (_GUIDE_KERNEL, None, set()),  # no library of its own, none included: not its conventions
        ("#include <sgl_kernel/utils.cuh>\n" + _GUIDE_KERNEL, None, _GUIDE_CODES),  # includes the bundled one
        (_GUIDE_KERNEL, "#pragma once\n", _GUIDE_CODES),  # the tree's own library
    ],
)
def test_the_guides_conventions_apply_where_the_tree_uses_the_library(
    tmp_path: Path, kernel: str, library: str | None, expected: set[str]
) -> None:
    """KC301 (Doxygen) and KC330 (`SGL_DEVICE`), like KC140 (`TensorMatcher`) and KC160 (the
    check macros), state the conventions of trees built on the `sgl_kernel/` library."""
    found = {f.code for f in run_one(_tree(tmp_path, kernel, library)).findings}
    assert found & _GUIDE_CODES == expected


_RAW_LAUNCHES = """\
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>

__global__ void fill_kernel(float* __restrict__ dst) { dst[threadIdx.x] = 1.0f; }

cudaError_t fill(float* dst, cudaStream_t stream) {
  fill_kernel<<<1, 32, 0, stream>>>(dst);
  if (cudaPeekAtLastError() != cudaSuccess) throw std::runtime_error("launch failed");
  fill_kernel<<<1, 32, 0, stream>>>(dst);
  const cudaError_t launched = cudaGetLastError();
  if (launched != cudaSuccess) return launched;
  fill_kernel<<<1, 32, 0, stream>>>(dst);
  fill_kernel<<<1, 32, 0, stream>>>(dst);
  cudaGetLastError();
  fill_kernel<<<1, 32, 0, stream>>>(dst);
  if (cudaGetLastError() != cudaSuccess) return cudaErrorInvalidValue;
  switch (reinterpret_cast<uintptr_t>(dst) % 2) {
    case 0: {
      fill_kernel<<<1, 32, 0, stream>>>(dst);
      break;
    }
    default:
      fill_kernel<<<2, 32, 0, stream>>>(dst);
  }
  return cudaGetLastError();
}
"""


@pytest.mark.parametrize(
    ("kernel", "lines"),
    [
        (_RAW_LAUNCHES, [14, 15]),  # no `LaunchKernel` to use: those whose error is dropped unread
        ("#include <sgl_kernel/utils.cuh>\n" + _RAW_LAUNCHES, [10, 12, 15, 16, 18, 22, 26]),  # every raw launch
    ],
)
def test_kc130_outside_the_library_reports_launches_nobody_checks(
    tmp_path: Path, kernel: str, lines: list[int]
) -> None:
    """A raw launch whose launch error a later statement of its block reads (checked, stored,
    returned; not a `cudaGetLastError();` that clears it) is not reported in a tree without
    `host::LaunchKernel`; in a tree that uses the library every raw launch goes against its
    convention."""
    findings = [f for f in run_one(_tree(tmp_path, kernel)).findings if f.code == "KC130"]
    assert [f.line for f in findings] == lines
    if "sgl_kernel" not in kernel:
        assert all("LaunchKernel" not in f.message and "cudaGetLastError" in f.message for f in findings)


def test_a_header_the_preamble_planner_cannot_follow_adopts_nothing(tmp_path: Path) -> None:
    """The file's own header includes `"dlpack/dlpack.h"`, which the compiler finds on its
    include path but the preamble planner does not: the file is parsed against the shared
    preamble that holds the whole bundled library, whose headers the file still does not
    include (the library's conventions stay off, as in a plain parse)."""
    path = _tree(tmp_path, '#include "own.h"\n' + _GUIDE_KERNEL)
    (path.parent / "own.h").write_text('#pragma once\n#include "dlpack/dlpack.h"\n')
    cache = tmp_path / "cache"
    opts = options(path.parent.parent, cache)
    (result,) = run_static([path], opts, stats=RunStats())
    assert not {f.code for f in result.findings} & (_GUIDE_CODES | {"KC000"})
    unit = parse_file(path, path.read_bytes(), opts.settings, PreambleCache(static_root(cache) / "preamble"))
    assert unit.preamble is not None and unit.preamble.recipe.tier == "project"


def test_kc320_is_silent_where_nothing_establishes_namespace_sglang(tmp_path: Path) -> None:
    """Another project's kernel: no library of its own, no include of the bundled one, no
    `namespace sglang` anywhere."""
    assert _kc320(_tree(tmp_path, _GLOBAL_KERNEL)) == []


def test_kc320_names_the_trees_own_library(tmp_path: Path) -> None:
    path = _tree(tmp_path, _GLOBAL_KERNEL, library="#pragma once\nnamespace sglang::host {}\n")
    (message,) = _kc320(path)
    assert "`include/sgl_kernel/utils.cuh`" in message and "header library" in message


def test_kc320_needs_the_library_to_open_the_namespace(tmp_path: Path) -> None:
    """A library of the tree's own that is not written in `namespace sglang` sets no convention."""
    assert _kc320(_tree(tmp_path, _GLOBAL_KERNEL, library="#pragma once\nnamespace mine {}\n")) == []


def test_kc320_follows_an_include_of_the_bundled_library(tmp_path: Path) -> None:
    """No library of its own, but the file is written against kernel-check's: that one's
    header that opens `namespace sglang` is named."""
    (message,) = _kc320(_tree(tmp_path, _LIBRARY_KERNEL))
    assert str(bundled_include_dir() / "sgl_kernel") in message


def test_kc320_follows_the_files_own_namespace(tmp_path: Path) -> None:
    (message,) = _kc320(_tree(tmp_path, _HALF_NAMESPACED))
    assert "'stray_kernel'" in message and "the rest of this file" in message


def test_kc320_conventions_key_forces_it(tmp_path: Path) -> None:
    (message,) = _kc320(_tree(tmp_path, _GLOBAL_KERNEL), conventions={"KC320": "on"})
    assert "`conventions` in the project configuration" in message
    assert _kc320(_tree(tmp_path / "off", _HALF_NAMESPACED), conventions={"KC320": "off"}) == []


_BENCH = """\
import triton.testing


def benchmark(size: int) -> float:
    return triton.testing.do_bench(lambda: size)
"""

_REGISTERED_IN_PACKAGE = 'register_cuda_ci(est_time=1, stage="s", runner_config="r")\n'


def _python_tree(tmp_path: Path, *, marker: bool, registered_tree: bool) -> tuple[Path, Path]:
    """A checkout with a benchmark that calls Triton and a registered test in the package;
    with the benchmark framework's module and the registered-tests tree when asked."""
    root = tmp_path / "checkout"
    bench = root / "benchmark" / "bench_scale.py"
    bench.parent.mkdir(parents=True)
    bench.write_text(_BENCH)
    in_package = root / "python" / "sglang" / "kernels" / "ops" / "test_scale.py"
    in_package.parent.mkdir(parents=True)
    in_package.write_text(_REGISTERED_IN_PACKAGE)
    (root / "pyproject.toml").write_text('[project]\nname = "checkout"\n')
    if marker:
        module = root / "python" / "sglang" / "kernels" / "jit" / "benchmark" / "marker.py"
        module.parent.mkdir(parents=True)
        module.write_text("def do_bench(fn):\n    return fn()\n")
    if registered_tree:
        (root / "test" / "registered").mkdir(parents=True)
    return bench, in_package


def _messages(path: Path, code: str, **overrides) -> list[str]:
    return [f.message for f in run_one(path, **overrides).findings if f.code == code]


def test_python_conventions_are_silent_in_a_tree_without_them(tmp_path: Path) -> None:
    bench, in_package = _python_tree(tmp_path, marker=False, registered_tree=False)
    assert _messages(bench, "KC505") == []
    assert _messages(in_package, "KC504") == []


def test_python_conventions_name_what_establishes_them(tmp_path: Path) -> None:
    bench, in_package = _python_tree(tmp_path, marker=True, registered_tree=True)
    (kc505,) = _messages(bench, "KC505")
    assert "`python/sglang/kernels/jit/benchmark/marker.py`" in kc505
    (kc504,) = _messages(in_package, "KC504")
    assert "`test/registered/`" in kc504 and "where this tree's registered tests live" in kc504


def test_python_conventions_are_found_above_a_checked_subtree(tmp_path: Path) -> None:
    """The project root of a subtree checked on its own is the subtree (no marker above the
    files): the framework's module is still found in a directory above it."""
    bench, _ = _python_tree(tmp_path, marker=True, registered_tree=False)
    (bench.parents[1] / "pyproject.toml").unlink()
    (bench.parent / "pyproject.toml").write_text('[project]\nname = "benchmarks"\n')
    (message,) = _messages(bench, "KC505")
    assert "marker.py" in message


def test_python_conventions_key_forces_them(tmp_path: Path) -> None:
    bench, in_package = _python_tree(tmp_path, marker=False, registered_tree=False)
    forced = {"KC504": "on", "KC505": "on"}
    assert "`conventions`" in _messages(bench, "KC505", conventions=forced)[0]
    assert "`conventions`" in _messages(in_package, "KC504", conventions=forced)[0]
    bench, _ = _python_tree(tmp_path / "adopted", marker=True, registered_tree=True)
    assert _messages(bench, "KC505", conventions={"KC505": "off"}) == []


@pytest.mark.parametrize(
    ("table", "complaint"),
    [('{ KC101 = "on" }', "'conventions' must be"), ('{ KC320 = "maybe" }', "'conventions' must be")],
)
def test_conventions_key_rejects_other_codes_and_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], table: str, complaint: str
) -> None:
    bench, _ = _python_tree(tmp_path, marker=False, registered_tree=False)
    (bench.parents[1] / "pyproject.toml").write_text(f"[tool.kernel-check]\nconventions = {table}\n")
    assert main([str(bench), "--no-cache"]) == 2
    error = capsys.readouterr().err
    assert complaint in error and "pyproject.toml" in error and "Traceback" not in error
