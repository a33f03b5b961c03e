"""bench/planting.py on a small tree laid out like sglang's: plantings are found or missed
as the real kernel-check reports them, and the copied tree is restored after each round."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import planting

KERNEL = """\
#pragma once
#include <cstdint>

namespace sglang {

/// \\brief Adds one to every element.
/// \\param out The output.
/// \\param n Number of elements.
__global__ void add_one(float* __restrict__ out, int32_t n) {
  const int32_t i = static_cast<int32_t>(threadIdx.x);
  if (i < n) out[i] += 1.0f;
}

}  // namespace sglang
"""

NON_ASCII = planting.Mutation(
    "KC310",
    "non-ascii-comment",
    (".cuh",),
    lambda text: planting.insert_after(text, r"^namespace sglang \{", "// caf\u00e9"),
)
HARMLESS = planting.Mutation(
    "KC310", "ascii-comment", (".cuh",), lambda text: planting.insert_after(text, r"^namespace sglang \{", "// cafe")
)


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    kernels = tmp_path / planting.KERNELS_SUBDIR / "csrc"
    kernels.mkdir(parents=True)
    for name in ("a.cuh", "b.cuh"):
        (kernels / name).write_text(KERNEL)
    return tmp_path


def test_insert_after_reports_the_inserted_line() -> None:
    planted = planting.insert_after("a\n  b {\n  c\n", r"b \{", "x();")
    assert planted == planting.Planted("a\n  b {\n  x();\n  c\n", 3)
    assert planting.insert_after("a\n", r"nowhere", "x();") is None


def test_replace_first_reports_the_matched_line() -> None:
    planted = planting.replace_first("a\nint32_t n;\nint32_t m;\n", r"int32_t (\w)", r"int \1")
    assert planted == planting.Planted("a\nint n;\nint32_t m;\n", 2)


def test_rounds_never_plant_one_file_twice(tree: Path) -> None:
    plantings = planting.choose_plantings(tree, {"t": [NON_ASCII, HARMLESS]}, per_mutation=2, codes=None)
    assert len(plantings) == 4
    for planting_round in planting.rounds_of(plantings):
        paths = [p.path for p in planting_round]
        assert len(paths) == len(set(paths))


@pytest.mark.slow
def test_found_and_missed_plantings_are_told_apart(tree: Path, tmp_path: Path) -> None:
    plantings = planting.choose_plantings(tree, {"t": [NON_ASCII, HARMLESS]}, per_mutation=2, codes=None)
    originals = {p.path: (tree / p.path).read_text() for p in plantings}
    planting.run_plantings(tree, plantings, "hermetic", tmp_path / "cache", progress=False)
    results = [planting.judge(p) for p in plantings]
    assert [r["found"] for r in results] == [True, True, False, False]
    assert all(not r["extra"] for r in results)
    summary = planting.summarize(results)
    assert summary["KC310"] == {"family": "t", "planted": 4, "found": 2, "clean": 2}
    assert {p: (tree / p).read_text() for p in originals} == originals  # restored after each round
    assert "Misses:" in planting.markdown(summary, results)


@pytest.mark.slow
def test_files_that_do_not_parse_are_never_planted(tree: Path, tmp_path: Path) -> None:
    broken = tree / planting.KERNELS_SUBDIR / "csrc" / "b.cuh"
    broken.write_text(KERNEL.replace("int32_t n) {", "undeclared_t n) {"))
    unparsable = planting.unparsable_files(tree, "hermetic", tmp_path / "cache")
    assert unparsable == {broken.relative_to(tree)}
    plantings = planting.choose_plantings(tree, {"t": [NON_ASCII]}, per_mutation=2, codes=None, unparsable=unparsable)
    assert [p.path.name for p in plantings] == ["a.cuh"]
