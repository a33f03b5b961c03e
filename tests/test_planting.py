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


# -- plantings inside the idioms of real kernels (issue 26, item 5) ----------------------------------
PDL_KERNEL = """\
#pragma once
#include <sgl_kernel/utils.cuh>

namespace sglang {

struct AddParams {
  const float* __restrict__ input;  // [n]
  float* __restrict__ output;
  int32_t n;
};

template <bool kUsePDL>
SGL_DEVICE void wait_for_producer() {
  device::PDLWaitPrimary<kUsePDL>();
}

template <bool kUsePDL>
__global__ void add_kernel(const AddParams __grid_constant__ params) {
  const auto& [input, output, n] = params;
  device::PDLWaitPrimary<kUsePDL>();
  output[threadIdx.x] = input[threadIdx.x];
}

template <bool kUsePDL>
struct AddKernel {
  static void run(tvm::ffi::TensorView input, tvm::ffi::TensorView output) {
    const auto params = AddParams{.input = static_cast<const float*>(input.data_ptr())};
    LaunchKernel(1, 32, device)
        .enable_pdl(kUsePDL)(add_kernel<kUsePDL>, params);
  }
};

}  // namespace sglang
"""


def _idiom_mutation(family: str, idiom: str, code: str) -> planting.Mutation:
    """The family's mutation of `code` that plants inside `idiom`."""
    mutations = planting.load_mutations([family])[family]
    return next(m for m in mutations if m.idiom == idiom and m.code == code)


def _planted_line(planted: planting.Planted) -> str:
    return planted.text.splitlines()[planted.line - 1].strip()


def test_every_idiom_mutation_says_its_idiom() -> None:
    mutations = [m for family in planting.load_mutations(None).values() for m in family]
    idioms = {m.idiom for m in mutations} - {planting.ANY_IDIOM}
    assert idioms == {
        "structured binding",
        "__grid_constant__ params struct",
        "wait inside a helper",
        "named launch object",
        "vector type through a typedef",
        "local pointer helper",
    }


def test_read_through_a_binding_member_is_planted_before_the_wait() -> None:
    planted = _idiom_mutation("kc2", "structured binding", "KC201").plant(PDL_KERNEL)
    assert _planted_line(planted) == "const auto kc_planted_early = input[0];"
    assert planted.text.splitlines()[planted.line].strip() == "device::PDLWaitPrimary<kUsePDL>();"


def test_read_through_a_params_field_is_planted_before_the_wait() -> None:
    planted = _idiom_mutation("kc2", "__grid_constant__ params struct", "KC201").plant(PDL_KERNEL)
    assert _planted_line(planted) == "const auto kc_planted_early = params.input[0];"


def test_read_is_planted_before_the_helper_that_waits() -> None:
    kernel = PDL_KERNEL.replace(
        "  device::PDLWaitPrimary<kUsePDL>();\n  output", "  wait_for_producer<kUsePDL>();\n  output"
    )
    planted = _idiom_mutation("kc2", "wait inside a helper", "KC201").plant(kernel)
    assert _planted_line(planted) == "const auto kc_planted_early = params.input[0];"
    assert planted.text.splitlines()[planted.line].strip() == "wait_for_producer<kUsePDL>();"
    assert _idiom_mutation("kc2", "wait inside a helper", "KC201").plant(PDL_KERNEL) is None  # waits itself


def test_named_launch_object_launches_the_kernel_whose_wait_was_removed() -> None:
    planted = _idiom_mutation("kc2", "named launch object", "KC203").plant(PDL_KERNEL)
    assert "auto kc_launch = LaunchKernel(1, 32, device);\n" in planted.text
    assert "kc_launch.enable_pdl(kUsePDL);\n" in planted.text
    assert _planted_line(planted) == "kc_launch(add_kernel<kUsePDL>, params);"
    assert "device::PDLWaitPrimary<kUsePDL>();\n  output" not in planted.text


def test_named_launch_object_without_pdl_is_reported_at_the_wait() -> None:
    planted = _idiom_mutation("kc2", "named launch object", "KC204").plant(PDL_KERNEL)
    assert "enable_pdl" not in planted.text
    assert "auto kc_launch = LaunchKernel(1, 32, device);\n" in planted.text
    assert _planted_line(planted) == "device::PDLWaitPrimary<kUsePDL>();"  # the kernel's wait, not the helper's
    assert planted.text.splitlines()[planted.line - 2].strip() == "const auto& [input, output, n] = params;"


def test_unverified_tensor_is_reached_through_a_pointer_helper() -> None:
    launcher = """\
void run(tvm::ffi::TensorView a, tvm::ffi::TensorView b) {
  TensorMatcher({N}).with_dtype<float>().verify(a).verify(b);
  const auto* b_ptr = static_cast<const float*>(b.data_ptr());
}
"""
    planted = _idiom_mutation("kc1", "local pointer helper", "KC141").plant(launcher)
    assert planted.text.splitlines() == [
        "void run(tvm::ffi::TensorView a, tvm::ffi::TensorView b) {",
        "  TensorMatcher({N}).with_dtype<float>().verify(a);",
        "  auto kc_ptr = [](const auto& t) { return t.data_ptr(); };",
        "  const auto* b_ptr = static_cast<const float*>(kc_ptr(b));",
        "}",
    ]
    assert planted.line == 4


def test_recall_is_told_per_code_and_idiom() -> None:
    def result(idiom: str, found: bool) -> dict:
        return {
            "family": "kc2",
            "code": "KC201",
            "idiom": idiom,
            "mutation": "m",
            "path": "a.cuh",
            "line": 3,
            "found": found,
            "extra": [],
            "same_code_other_lines": [],
        }

    results = [result("any", True), result("structured binding", False), result("structured binding", True)]
    assert planting.summarize_idioms(results) == {
        "KC201 any": {"family": "kc2", "planted": 1, "found": 1, "clean": 1},
        "KC201 structured binding": {"family": "kc2", "planted": 2, "found": 1, "clean": 1},
    }
    report = planting.markdown(planting.summarize(results), results)
    assert "| KC201 | structured binding | 2 | 1 | 1 | 50% |" in report
    assert "- KC201 m (structured binding): a.cuh:3" in report
