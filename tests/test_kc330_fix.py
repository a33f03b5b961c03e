"""KC330's fix rewrites exactly the CUDA keywords and leaves the other specifiers in place."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import run_one

CASES = [
    ("__device__ __forceinline__ float f(float x) { return x; }", "SGL_DEVICE float f(float x) { return x; }"),
    ("__forceinline__ __device__ float f(float x) { return x; }", "SGL_DEVICE float f(float x) { return x; }"),
    (
        "__host__ __device__ __forceinline__ constexpr int32_t f(int32_t x) { return x; }",
        "SGL_DEVICE_HOST constexpr int32_t f(int32_t x) { return x; }",
    ),
    (
        "struct S { static __device__ __forceinline__ float f(float x) { return x; } };",
        "struct S { static SGL_DEVICE float f(float x) { return x; } };",
    ),
    (
        "__device__ static __forceinline__ float f(float x) { return x; }",
        "SGL_DEVICE static float f(float x) { return x; }",
    ),
]
HEADER = "#include <sgl_kernel/utils.cuh>\n#include <cstdint>\nnamespace sglang {\n"
FOOTER = "\n}  // namespace sglang\n"


def _fixed(path: Path) -> str:
    data = path.read_bytes()
    edits = [e for f in run_one(path).findings if f.code == "KC330" and f.fix for e in f.fix.edits]
    for edit in sorted(edits, key=lambda e: e.start, reverse=True):
        data = data[: edit.start] + edit.replacement.encode() + data[edit.end :]
    return data.decode()


@pytest.mark.parametrize("before,after", CASES)
def test_fix_text(tmp_path: Path, before: str, after: str) -> None:
    path = tmp_path / "fix.cuh"
    path.write_text(HEADER + before + FOOTER)
    assert _fixed(path) == HEADER + after + FOOTER


BARE = "namespace sglang {\n__device__ __forceinline__ float f(float x) { return x; }\n}\n"


def test_no_fix_without_the_macro_header(tmp_path: Path) -> None:
    """A tree with its own `sgl_kernel/` library: the file should use the macro, but it does
    not include the header that defines it, so no fix is offered."""
    library = tmp_path / "repo" / "include" / "sgl_kernel"
    library.mkdir(parents=True)
    (library / "utils.h").write_text("#pragma once\n#define SGL_DEVICE __device__ __forceinline__\n")
    path = tmp_path / "repo" / "csrc" / "bare.cuh"
    path.parent.mkdir()
    path.write_text(BARE)
    findings = [f for f in run_one(path).findings if f.code == "KC330"]
    assert len(findings) == 1 and findings[0].fix is None


def test_a_tree_without_the_library_is_not_asked_for_its_macro(tmp_path: Path) -> None:
    """No `sgl_kernel/` library of its own and none included: `SGL_DEVICE` is not this tree's
    convention (the bundled copy it is parsed against is no reason to ask for it)."""
    path = tmp_path / "bare.cuh"
    path.write_text(BARE)
    assert [f for f in run_one(path).findings if f.code == "KC330"] == []
