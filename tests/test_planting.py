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


def test_a_planting_named_harmless_keeps_its_place_and_says_why(tree: Path) -> None:
    reason = "a comment breaks nothing"
    named = planting.Mutation(
        "KC310",
        "ascii-comment",
        (".cuh",),
        HARMLESS.plant,
        harmless=((f"{planting.KERNELS_SUBDIR}/csrc/a.cuh", reason),),
    )
    plantings = planting.choose_plantings(tree, {"t": [named]}, per_mutation=2, codes=None)
    assert [(p.path.name, p.harmless) for p in plantings] == [("a.cuh", reason), ("b.cuh", "")]


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
        "runtime API launch",
        "vector type through a typedef",
        "local pointer helper",
        "early exit guard",
        "if guard",
        "block/grid-stride loop",
        "64-bit index local",
        "inline offset",
        "leader-thread write",
        "thread-indexed slot",
        "integer conversion",
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


def test_runtime_api_launch_enables_pdl_by_its_attribute_for_the_kernel_whose_wait_was_removed() -> None:
    planted = _idiom_mutation("kc2", "runtime API launch", "KC203").plant(PDL_KERNEL)
    lines = [line.strip() for line in planted.text.splitlines()]
    assert "kc_attrs[0].val.programmaticStreamSerializationAllowed = kUsePDL;" in lines
    configured = [line for line in lines if line.startswith("kc_config.")]
    assert configured[:2] == ["kc_config.gridDim = 1;", "kc_config.blockDim = 32;"]
    assert "LaunchKernel(" not in planted.text
    assert _planted_line(planted) == (
        'CHECK_CUDA(cudaLaunchKernelEx(&kc_config, add_kernel<kUsePDL>, params)) << "planted";'
    )
    assert "device::PDLWaitPrimary<kUsePDL>();\n  output" not in planted.text


def test_runtime_api_launch_without_the_attribute_is_reported_at_the_wait() -> None:
    planted = _idiom_mutation("kc2", "runtime API launch", "KC204").plant(PDL_KERNEL)
    assert "programmaticStreamSerializationAllowed" not in planted.text
    assert "cudaLaunchKernelEx(&kc_config, add_kernel<kUsePDL>, params)" in planted.text
    assert _planted_line(planted) == "device::PDLWaitPrimary<kUsePDL>();"


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


# -- KC4xx plantings: one real defect of each class of issue 28 -------------------------------------
GUARDED_KERNEL = """\
__global__ void gather(float* out, const float* in, const int32_t* ids, int64_t n, int32_t rows) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int32_t row = ids[i];
  if (row < 0 || row >= rows) return;
  out[i] = in[row];
}
"""
LOOP_KERNEL = """\
__global__ void add(float* out, int32_t n) {
  const int32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] += 1.0f;
  }
  for (int32_t j = threadIdx.x; j < n; j += blockDim.x) out[j] *= 2.0f;
}
"""
SHARED_KERNEL = """\
__global__ void neighbour(float* out, const float* in, int32_t n) {
  __shared__ float tile[256];
  __shared__ float s_first;
  for (int32_t k = threadIdx.x; k < n; k += blockDim.x) tile[k] = in[k];
  tile[threadIdx.x] = in[threadIdx.x];
  if (threadIdx.x == 0) s_first = in[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = tile[threadIdx.x + 1] + s_first;
}
"""
INIT_KERNEL = """\
__global__ void padded_max(float* out, const float* in, int32_t n) {
  __shared__ float tile[256];
  for (int32_t k = threadIdx.x; k < n; k += blockDim.x) tile[k] = in[k];
  __syncthreads();
  out[threadIdx.x] = tile[n - 1];
}
"""
QUANT_KERNEL = """\
__global__ void quant(int8_t* out, __nv_fp8_storage_t* out8, const float* in, float scale) {
  out[threadIdx.x] = static_cast<int8_t>(fminf(fmaxf(in[threadIdx.x] * scale, -128.f), 127.f));
  out8[threadIdx.x] = __nv_cvt_float_to_fp8(in[threadIdx.x], __NV_SATFINITE, __NV_E4M3);
}
"""


def _kc4(name: str) -> planting.Mutation:
    return next(m for m in planting.load_mutations(["kc4"])["kc4"] if m.name == name)


@pytest.mark.parametrize(
    ("name", "kernel", "line", "last_line", "planted_line"),
    [
        ("early-exit bound guard removed", GUARDED_KERNEL, 3, 7, ""),
        ("bound guard off by one", GUARDED_KERNEL, 3, 7, "if (i > n) return;"),
        ("bound check of a loaded id removed", GUARDED_KERNEL, 5, 7, ""),
        (
            "widening of a 64-bit index local removed",
            GUARDED_KERNEL,
            2,
            None,
            "const int64_t i = blockIdx.x * blockDim.x + threadIdx.x;",
        ),
        ("bound guard made unconditional", LOOP_KERNEL, 3, 5, "if (true) {"),
        (
            "stride loop bound off by one",
            LOOP_KERNEL,
            6,
            6,
            "for (int32_t j = threadIdx.x; j <= n; j += blockDim.x) out[j] *= 2.0f;",
        ),
        (
            "shared init loop one short",
            INIT_KERNEL,
            3,
            6,
            "for (int32_t k = threadIdx.x; k < n - 1; k += blockDim.x) tile[k] = in[k];",
        ),
        ("thread's slot halved", SHARED_KERNEL, 5, None, "tile[threadIdx.x / 2] = in[threadIdx.x];"),
        ("leader-thread guard of a shared write removed", SHARED_KERNEL, 6, None, "s_first = in[threadIdx.x];"),
        ("only write of a shared value removed", SHARED_KERNEL, 6, 9, ""),
        ("barrier between a write and another thread's read removed", SHARED_KERNEL, 7, 9, ""),
        ("barrier only in the first warp", SHARED_KERNEL, 7, None, "if (threadIdx.x < 32) __syncthreads();"),
        (
            "clamp before an integer conversion removed",
            QUANT_KERNEL,
            2,
            None,
            "out[threadIdx.x] = static_cast<int8_t>(in[threadIdx.x] * scale);",
        ),
        (
            "fp8 conversion without saturation",
            QUANT_KERNEL,
            3,
            None,
            "out8[threadIdx.x] = __nv_cvt_float_to_fp8(in[threadIdx.x], __NV_NOSAT, __NV_E4M3);",
        ),
    ],
)
def test_kc4_mutation_plants_one_local_edit(
    name: str, kernel: str, line: int, last_line: int | None, planted_line: str
) -> None:
    planted = _kc4(name).plant(kernel)
    assert (planted.line, planted.last_line) == (line, last_line)
    assert _planted_line(planted) == planted_line
    assert planted.text.count("\n") == kernel.count("\n")  # one edit, every other line in place
    assert [a for a, b in zip(planted.text.splitlines(), kernel.splitlines()) if a != b] == [
        planted.text.splitlines()[line - 1]
    ]


@pytest.mark.parametrize(
    ("name", "kernel"),
    [
        # A bound that is a compile-time constant may be redundant for the launch's block.
        ("early-exit bound guard removed", GUARDED_KERNEL.replace("i >= n", "i >= kRows")),
        # The other factor is 64-bit: without the cast the product is still computed in 64 bits.
        ("widening of a 64-bit index local removed", GUARDED_KERNEL.replace("* blockDim.x", "* n")),
        # A guard that only keeps a shared slot in range is not a global access's (a pointer
        # into dynamic shared memory too).
        (
            "bound guard made unconditional",
            LOOP_KERNEL.replace("out[i] += 1.0f", "counts[i] = 0").replace(
                "{\n", "{\n  extern __shared__ int smem[];\n  int* counts = smem + 1;\n", 1
            ),
        ),
        (
            "bound guard made unconditional",
            LOOP_KERNEL.replace("out[i] += 1.0f", "s_sum[i] = 1.0f").replace(
                "{\n", "{\n  __shared__ float s_sum[32];\n", 1
            ),
        ),
        # Two threads storing the same value leave the slot as it was.
        (
            "thread's slot halved",
            SHARED_KERNEL.replace("tile[threadIdx.x] = in[threadIdx.x]", "tile[threadIdx.x] = 0.0f"),
        ),
        (
            "leader-thread guard of a shared write removed",
            SHARED_KERNEL.replace("s_first = in[threadIdx.x]", "s_first = warp::reduce_max(in[threadIdx.x])"),
        ),
        # The write is a braceless loop's body: removing it would put the barrier in the loop.
        ("only write of a shared value removed", INIT_KERNEL),
        # The loop is not the array's only writer.
        ("shared init loop one short", SHARED_KERNEL.replace("tile[threadIdx.x] =", "tile[threadIdx.x + 1] =")),
        # A clamp on one side only is not the conversion's saturation; a clamp before the
        # conversion makes __NV_SATFINITE redundant.
        ("clamp before an integer conversion removed", QUANT_KERNEL.replace("fminf(fmaxf(", "fminf(fminf(")),
        (
            "fp8 conversion without saturation",
            QUANT_KERNEL.replace(
                "(in[threadIdx.x], __NV_SATFINITE", "(fminf(fmaxf(in[threadIdx.x], -448.f), 448.f), __NV_SATFINITE"
            ),
        ),
    ],
)
def test_kc4_mutation_plants_nothing_where_the_edit_is_no_defect(name: str, kernel: str) -> None:
    assert _kc4(name).plant(kernel) is None


def test_every_kc4_mutation_names_its_defect_class() -> None:
    mutations = planting.load_mutations(["kc4"])["kc4"]
    assert {m.defect for m in mutations} == {
        "memory safety",
        "32-bit offsets",
        "shared write race",
        "read-write race",
        "uninitialised shared read",
        "barrier divergence",
        "numerics",
    }


def _ranged_planting(before: list[dict], after: list[dict]) -> planting.Planting:
    mutation = _kc4("early-exit bound guard removed")
    result = planting.Planting("kc4", mutation, Path("a.cuh"), planting.Planted("", 3, 7))
    result.findings_before, result.findings_after = before, after
    return result


def test_a_ranged_planting_is_found_by_a_new_finding_in_its_lines_only() -> None:
    old = {"code": "KC406", "line": 5, "message": "out past its end"}
    new = {"code": "KC406", "line": 6, "message": "in past its end"}
    below = {"code": "KC406", "line": 9, "message": "elsewhere"}
    assert planting.judge(_ranged_planting([old], [old]))["found"] is False  # there before planting
    assert planting.judge(_ranged_planting([], [below]))["found"] is False  # outside the lines
    found = planting.judge(_ranged_planting([old], [old, new]))
    assert (found["found"], found["found_line"], found["extra"]) == (True, 6, [])


def test_recall_is_told_per_defect_class() -> None:
    results = [planting.judge(_ranged_planting([], [{"code": "KC406", "line": 4, "message": "m"}]))]
    results.append(planting.judge(_ranged_planting([], [])))
    report = planting.markdown(planting.summarize(results), results)
    assert "| memory safety | 2 | 1 | 1 | 50% |" in report
    assert "- KC406 early-exit bound guard removed (early exit guard): a.cuh:3-7" in report
