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
KERNEL = TREE / "csrc" / "jit" / "copy_rows.cu"


def test_a_trees_own_matcher_in_another_namespace_gives_the_tensor_shapes(tmp_path):
    """``host::TensorMatcher`` of the tree's own ``<rows/check.h>``: found through the tree's
    include folder when parsing, so its dims (``{-1, 32}``) make the tensors 2-D."""
    (found,) = draft_file(KERNEL, tmp_path / "copy_rows_spec.py")
    shapes = {t.name: t.shape for t in found.args}
    assert shapes == {"dst": ("dst_0", 32), "src": ("src_0", 32)}
    assert not any("not verified by a TensorMatcher" in note for note in found.notes)


def test_the_wrapper_loading_the_file_by_bare_name_gives_the_config_values(tmp_path):
    """``load_jit(cuda_files=["copy_rows.cu"])`` in ``pkg/copy_rows.py``, two folders above the
    kernel; ``make_cpp_args(row_bytes, *config)`` with ``config`` defaulting to
    ``LaunchConfig(threads=64)`` (fields and defaults from the imported NamedTuple)."""
    wrapper = find_wrapper(KERNEL, tree_includes(KERNEL, tmp_path / "spec.py"))
    assert wrapper == TREE / "copy_rows.py"
    (call,) = read_wrapper(wrapper, KERNEL.as_posix())
    # row_bytes: a parameter the caller passes; the bool field: both values drafted
    assert (call.export, call.symbol, call.argument_sources) == ("copy", "CopyRows<>::run", ("row_bytes", "64", "1", ""))
    (found,) = draft_file(KERNEL, tmp_path / "copy_rows_spec.py")
    assert [i.template_args[1:3] for i in found.instantiations] == [(64, 1), (64, 1)]


def test_unpacked_tuples_positional_configs_and_integer_defaults_are_read(tmp_path):
    package = tmp_path / "pkg"
    shutil.copytree(TREE, package)
    (package / "copy_rows.py").write_text(
        "from .utils import LaunchConfig, load_jit, make_cpp_args\n\n"
        "WIDE = LaunchConfig(256, 2)\n\n\n"
        "def _wide(row_bytes: int = 512, config=WIDE):\n"
        "    args = make_cpp_args(row_bytes, *config)\n"
        '    return load_jit("w", cuda_files=["copy_rows.cu"], cuda_wrappers=[("wide", f"CopyRows<{args}>::run")])\n\n\n'
        "def _fixed(row_bytes):\n"
        "    args = make_cpp_args(row_bytes, *(32, 4), True)\n"
        '    return load_jit("f", cuda_files=["copy_rows.cu"], cuda_wrappers=[("fixed", f"CopyRows<{args}>::run")])\n\n\n'
        "def _unknown(row_bytes, config):\n"
        "    args = make_cpp_args(*config, row_bytes)\n"
        '    return load_jit("u", cuda_files=["copy_rows.cu"], cuda_wrappers=[("unknown", f"CopyRows<{args}>::run")])\n'
    )
    kernel = package / "csrc" / "jit" / "copy_rows.cu"
    calls = {c.export: c.argument_sources for c in read_wrapper(package / "copy_rows.py", kernel.as_posix())}
    # an unreadable `*config` stands for an unknown number of arguments: nothing after it is read
    assert calls == {"wide": ("512", "256", "2", ""), "fixed": ("row_bytes", "32", "4", "True"), "unknown": ()}


@pytest.mark.nvcc
@pytest.mark.skipif(runtime._find_nvcc() is None, reason="nvcc not found (install the CUDA toolkit or set CUDA_HOME)")
def test_the_cap_keeps_the_first_candidates_that_build(tmp_path, monkeypatch):
    """Capped before probing, the first candidates (1, 2) all break the kernel's
    ``static_assert`` while 8 and 32 build: the probe goes on to the next batch."""
    monkeypatch.setenv("KERNEL_CHECK_JIT_CACHE", str(tmp_path / "jit"))
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "9.0")
    monkeypatch.setattr(draft, "MAX_INSTANTIATIONS", 2)
    cuh = tmp_path / "groups.cuh"
    shutil.copy(FIXTURES / "probe" / "groups.cuh", cuh)
    (found,) = draft_file(cuh, tmp_path / "groups_spec.py", probe=True)
    assert [i.template_args for i in found.instantiations] == [(8,), (32,)]
    assert any("2 of 4 candidate instantiations do not compile" in note for note in found.notes), found.notes
    assert any("5 combinations of template arguments; the first 2 of the first 5" in n for n in found.notes)
