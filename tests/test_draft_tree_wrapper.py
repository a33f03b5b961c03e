"""Drafting a kernel of a tree laid out as mini-sglang's (``csrc/jit/NAME.cu``, its own headers
in ``csrc/include/``, the wrapper two folders up naming the file by its bare name and
unpacking a config into ``make_cpp_args``), and the compile probe's cap applied to the
candidates that build. Real libclang parses, real nvcc."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernel_check import runtime
from kernel_check.harness import draft
from kernel_check.harness.draft import draft_file, find_wrapper, read_wrapper, tree_includes

pytestmark = pytest.mark.slow  # real parses

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "draft"
TREE = FIXTURES / "matcher_tree" / "pkg"
KERNEL = Path("csrc") / "jit" / "copy_rows.cu"


@pytest.fixture
def package(tmp_path) -> Path:
    """The tree copied out of this repository, whose own ``include/sgl_kernel/`` would
    otherwise widen the wrapper search to the repository's parent."""
    shutil.copytree(TREE, tmp_path / "pkg")
    return tmp_path / "pkg"


def test_a_trees_own_matcher_in_another_namespace_gives_the_tensor_shapes(package, tmp_path):
    """``host::TensorMatcher`` of the tree's own ``<rows/check.h>``: found through the tree's
    include folder when parsing, so its dims (``{-1, 32}``) make the tensors 2-D; the
    wildcard is one axis for both tensors the matcher verifies (such a matcher may bind it on
    its first verify)."""
    (found,) = draft_file(package / KERNEL, tmp_path / "copy_rows_spec.py")
    shapes = {t.name: t.shape for t in found.args}
    assert shapes == {"dst": ("dst_0", 32), "src": ("dst_0", 32)}
    assert not any("not verified by a TensorMatcher" in note for note in found.notes)


def test_the_wrapper_loading_the_file_by_bare_name_gives_the_config_values(package, tmp_path):
    """``load_jit(cuda_files=["copy_rows.cu"])`` in ``pkg/copy_rows.py``, two folders above the
    kernel; ``make_cpp_args(row_bytes, *config)`` with ``config`` defaulting to
    ``LaunchConfig(threads=64)`` (fields and defaults from the imported NamedTuple)."""
    kernel = package / KERNEL
    (found,) = draft_file(kernel, tmp_path / "copy_rows_spec.py")
    assert [i.template_args[1:] for i in found.instantiations] == [(64, 1, False), (64, 1, True)]
    assert found.export == "copy" and found.symbol == "CopyRows<>::run"
    wrapper = find_wrapper(kernel, tree_includes(kernel, tmp_path / "spec.py"))
    assert wrapper == package / "copy_rows.py"
    (call,) = read_wrapper(wrapper, kernel.as_posix())
    # row_bytes: a parameter the caller passes; the bool field: both values drafted
    assert call.argument_sources == ("row_bytes", "64", "1", "")


UNPACKING_WRAPPER = """from .utils import LaunchConfig, load_jit, make_cpp_args

WIDE = LaunchConfig(256, 2)


def _wide(row_bytes: int = 512, config=WIDE):
    args = make_cpp_args(row_bytes, *config)
    return load_jit("w", cuda_files=["copy_rows.cu"], cuda_wrappers=[("wide", f"CopyRows<{args}>::run")])


def _fixed(row_bytes):
    args = make_cpp_args(row_bytes, *(32, 4), True)
    return load_jit("f", cuda_files=["copy_rows.cu"], cuda_wrappers=[("fixed", f"CopyRows<{args}>::run")])


def _unknown(row_bytes, config):
    args = make_cpp_args(*config, row_bytes)
    return load_jit("u", cuda_files=["copy_rows.cu"], cuda_wrappers=[("unknown", f"CopyRows<{args}>::run")])
"""


def test_unpacked_tuples_positional_configs_and_integer_defaults_are_read(package):
    (package / "copy_rows.py").write_text(UNPACKING_WRAPPER)
    kernel = (package / KERNEL).as_posix()
    calls = {c.export: c.argument_sources for c in read_wrapper(package / "copy_rows.py", kernel)}
    # an unreadable `*config` stands for an unknown number of arguments: nothing after it is read
    assert calls == {"wide": ("512", "256", "2", ""), "fixed": ("row_bytes", "32", "4", "True"), "unknown": ()}


@pytest.mark.nvcc
@pytest.mark.skipif(runtime.find_nvcc() is None, reason="nvcc not found (install the CUDA toolkit or set CUDA_HOME)")
def test_the_cap_keeps_the_first_candidates_that_build(tmp_path, monkeypatch):
    """Capped before probing, the first candidates (1, 2) all break the kernel's
    ``static_assert`` while 8 and 32 build: the probe goes on to the next batch (a cap of 2
    stands for the real one, as the real kernels' candidates outnumber it)."""
    monkeypatch.setenv("KERNEL_CHECK_JIT_CACHE", str(tmp_path / "jit"))
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "9.0")
    monkeypatch.setattr(draft, "MAX_INSTANTIATIONS", 2)
    cuh = tmp_path / "groups.cuh"
    assertion = 'static_assert(kGroup % 8 == 0, "kGroup must be a multiple of 8");'
    source = (FIXTURES / "probe" / "groups.cuh").read_text().replace(f"  {assertion}\n", "")
    # in the kernel, where the drafter's model does not evaluate it: only the compiler sees it
    cuh.write_text(source.replace("  const int64_t g = ", f"  {assertion}\n  const int64_t g = ", 1))
    (found,) = draft_file(cuh, tmp_path / "groups_spec.py", probe=True)
    assert [i.template_args for i in found.instantiations] == [(8,), (32,)]
    assert any("2 of 4 candidate instantiations do not compile" in note for note in found.notes), found.notes
    assert any("7 combinations of template arguments; the first 2 that compile of 7 spread" in n for n in found.notes)


@pytest.mark.nvcc
@pytest.mark.skipif(runtime.find_nvcc() is None, reason="nvcc not found (install the CUDA toolkit or set CUDA_HOME)")
def test_probed_candidates_are_spread_over_every_template_parameter(tmp_path, monkeypatch):
    """An element type no tensor names is probed as each float type, and a cap on the
    candidates takes them spread over the product: its prefix (float16 with the first
    groups) holds nothing the kernel's static_asserts let build; spread, the third
    candidate is bfloat16 with a group of 32."""
    monkeypatch.setenv("KERNEL_CHECK_JIT_CACHE", str(tmp_path / "jit"))
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "9.0")
    monkeypatch.setattr(draft, "MAX_INSTANTIATIONS", 1)
    monkeypatch.setattr(draft, "MAX_PROBED_INSTANTIATIONS", 4)
    (found,) = draft_file(FIXTURES / "probe" / "bf16_groups.cuh", tmp_path / "bf16_spec.py", probe=True)
    assert [i.template_args for i in found.instantiations] == [("bfloat16", 32)]
    assert any("21 combinations of template arguments; the first 1 that compile of 4 spread" in n for n in found.notes)


def _loading(name: str) -> str:
    return f"""from .utils import load_jit


def _module():
    return load_jit("m", cuda_files=["{name}"], cuda_wrappers=[("run", "Kernel<>::run")])
"""


@pytest.mark.parametrize("marker", ["pyproject.toml", "kernel-check.toml", ".git", None])
def test_the_wrapper_search_stops_at_the_project_root(tmp_path, marker):
    """A tree whose ``include/`` sits at its top: the search starts in the folder above it,
    which holds other projects (a decoy there loads a file of the same name), so a project
    marker bounds it; a tree with no marker keeps the wider search (a kernel copied alone)."""
    project = tmp_path / "project"
    (project / "include" / "sgl_kernel").mkdir(parents=True)
    kernel = project / "csrc" / "shift.cuh"
    kernel.parent.mkdir()
    kernel.write_text("// a kernel\n")
    (project / "shift_ops.py").write_text(_loading("shift.cuh"))
    (tmp_path / "another_project.py").write_text(_loading("shift.cuh"))  # first in path order
    if marker is not None:
        (project / marker).mkdir() if marker == ".git" else (project / marker).write_text("")
    found = find_wrapper(kernel)
    assert found == (project / "shift_ops.py" if marker else tmp_path / "another_project.py")
