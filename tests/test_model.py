"""What the core extraction pass records, pinned on small real sources parsed by libclang."""

from __future__ import annotations

import operator
from pathlib import Path

import pytest

from kernel_check.clang.extract import extract
from kernel_check.clang.parse import parse_file, resolve_settings
from kernel_check.model import ConstExpr, FunctionKind, SourceModel

SOURCE = """\
#include <sgl_kernel/utils.cuh>
#include <cstdint>

namespace sglang {

/// \\brief Params by value.
struct Params {
  const float* __restrict__ src;
  float* dst;
  int64_t n;
};

/**
 * \\brief Scale kernel.
 * \\tparam T element type
 * \\tparam kUsePDL PDL flag
 * \\param dst output
 * \\param src input
 */
template <typename T, bool kUsePDL>
__global__ void scale_kernel(T* __restrict__ dst, const T* src) { dst[0] = src[0]; }

__global__ void params_kernel(const __grid_constant__ Params params) { params.dst[0] = params.src[0]; }

SGL_DEVICE float twice(float x) { return 2.0f * x; }

__device__ __forceinline__ float thrice(float x) { return 3.0f * x; }

namespace details {
inline void hidden() {}
}  // namespace details

template <typename T, bool kUsePDL>
struct ScaleLauncher {
  static constexpr auto kernel = scale_kernel<T, kUsePDL>;
  static void run(T* dst, const T* src, DLDevice device) {
    host::LaunchKernel(1, 32, device).enable_pdl(kUsePDL)(kernel, dst, src);
  }
};

template <typename T>
void launch_direct(T* dst, const T* src, DLDevice device) {
  host::LaunchKernel(1, 32, device)(scale_kernel<T, false>, dst, src);
  host::LaunchKernel(1, 32, device).enable_pdl()(scale_kernel<T, true>, dst, src);
}

inline void launch_params(Params params, cudaStream_t stream) {
  params_kernel<<<1, 32, 0, stream>>>(params);
}

}  // namespace sglang
"""


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> SourceModel:
    path = tmp_path_factory.mktemp("model") / "sample.cuh"
    path.write_text(SOURCE)
    unit = parse_file(path, SOURCE, resolve_settings("hermetic"))
    assert unit.errors == []
    return extract(unit, SOURCE, SOURCE.encode())


def _function(model: SourceModel, name: str):
    return next(f for f in model.functions if f.name == name)


def test_function_kinds(model: SourceModel) -> None:
    assert {f.name for f in model.kernels} == {"scale_kernel", "params_kernel"}
    assert {f.name for f in model.device_functions} == {"twice", "thrice"}
    assert _function(model, "launch_params").kind is FunctionKind.HOST


def test_params_record_const_and_restrict(model: SourceModel) -> None:
    dst, src = _function(model, "scale_kernel").params
    assert (dst.type.is_pointer, dst.type.pointee_const, dst.type.is_restrict) == (True, False, True)
    assert (src.type.is_pointer, src.type.pointee_const, src.type.is_restrict) == (True, True, False)
    assert SOURCE.encode()[src.restrict_insert_offset - 1 : src.restrict_insert_offset] == b"*"
    assert _function(model, "params_kernel").params[0].is_grid_constant


def test_struct_fields(model: SourceModel) -> None:
    params = next(s for s in model.structs if s.name == "Params")
    assert [(f.name, f.type.pointee_const, f.type.is_restrict) for f in params.fields] == [
        ("src", True, True),
        ("dst", False, False),
        ("n", False, False),
    ]


def test_doc_comments(model: SourceModel) -> None:
    doc = _function(model, "scale_kernel").doc
    assert doc is not None and doc.is_doxygen and doc.has_brief
    assert doc.params == ("dst", "src") and doc.tparams == ("T", "kUsePDL")
    assert _function(model, "params_kernel").doc is None


def test_exported_and_specifiers(model: SourceModel) -> None:
    assert not _function(model, "hidden").is_exported
    assert _function(model, "twice").is_exported
    assert _function(model, "twice").specifier_spelling == "SGL_DEVICE"
    assert _function(model, "thrice").specifier_spelling == "__device__ __forceinline__"


def test_launches(model: SourceModel) -> None:
    sites = [
        (
            s.launcher.split("::")[-1],
            s.syntax,
            s.kernels[0].name,
            s.kernels[0].template_arg_texts,
            s.pdl.text if s.pdl else None,
        )
        for s in model.launches
    ]
    assert sites == [
        ("run", "launch_kernel", "scale_kernel", ("T", "kUsePDL"), "kUsePDL"),
        ("launch_direct", "launch_kernel", "scale_kernel", ("T", "false"), None),
        ("launch_direct", "launch_kernel", "scale_kernel", ("T", "true"), "true"),
        ("launch_params", "triple_chevron", "params_kernel", (), None),
    ]
    assert model.launches[0].argument_texts == ("dst", "src")
    # the PDL flag and the template arguments are evaluated, not kept as text only
    assert model.launches[0].pdl.value == ConstExpr("param", name="kUsePDL")
    assert model.launches[2].pdl.always_on and model.launches[1].pdl_off
    assert model.launches[1].kernels[0].template_args[1] == ConstExpr("int", 0)


def test_error_spans_cover_broken_declarations(tmp_path: Path) -> None:
    source = "namespace sglang {\n__global__ void k(const float* p) { undeclared(p); }\n}\n"
    path = tmp_path / "broken.cuh"
    unit = parse_file(path, source, resolve_settings("hermetic"))
    model = extract(unit, source, source.encode())
    assert unit.errors and model.error_spans and model.error_spans[0].line == 2


@pytest.mark.slow
def test_shared_reads_answer_what_the_bindings_answer(tmp_path: Path) -> None:
    """`clang/tree.py` (installed by `extract`) keeps libclang's answers on the cursor objects;
    every kept answer must be the one the bindings give for that cursor.

    Every cursor's children are compared. The kept properties are compared on every cursor
    of the sample and of the headers kernel-check ships (what the extraction reads), and on
    the first cursor of each (kind, type kind) of the rest: the headers under them are ~350k
    cursors of ~500 such shapes, and what `_Kept` does depends on the answer's shape (a
    value, None, an error), not on which cursor of a shape asked -- all of them took ~45 s."""
    import clang.cindex as ci

    from kernel_check.clang import tree

    path = tmp_path / "sample.cuh"
    unit = parse_file(path, SOURCE, resolve_settings("hermetic"))
    extract(unit, SOURCE, SOURCE.encode())  # installs the shared reads
    original = tree.ORIGINALS
    shapes: set[tuple] = set()
    checked, compared = 0, 0
    pending = list(unit.tu.cursor.get_children())
    while pending:
        cursor = pending.pop()
        shape = _shape(cursor, original)
        every_property = _is_own(shape[0], path) or shape[1:] not in shapes
        shapes.add(shape[1:])
        for _ in range(2):  # the first read keeps an answer, the second returns it
            children = list(cursor.get_children())
            assert children == list(original[ci.Cursor, "get_children"](cursor))
            if every_property:
                _assert_kept_properties(cursor, original)
        checked += 1
        compared += every_property
        pending.extend(children)
    assert checked > 100_000 and compared > 300
    assert len(shapes) > 100  # kinds of declarations, statements, expressions, references


def _shape(cursor, original: dict) -> tuple:
    """(file name, kind, type kind) of `cursor`, read through the bindings' own getters so
    that the kept reads the test compares are still first reads."""
    import clang.cindex as ci

    location = original[ci.Cursor, "location"].fget(cursor)
    file = original[ci.SourceLocation, "file"].fget(location)
    name = original[ci.File, "name"].fget(file) if file is not None else None
    return name, original[ci.Cursor, "kind"].fget(cursor), original[ci.Cursor, "type"].fget(cursor).kind


def _is_own(file_name: str | None, sample: Path) -> bool:
    """The sample itself, or a header kernel-check ships (`sgl_kernel/`, its prelude)."""
    return file_name is not None and (
        file_name == str(sample) or any(part in ("sgl_kernel", "prelude") for part in Path(file_name).parts)
    )


def _assert_kept_properties(cursor, original: dict) -> None:
    import clang.cindex as ci

    from kernel_check.clang import tree

    for name in tree.KEPT_CURSOR_PROPERTIES:  # some assert a cursor kind (enum_type)
        if name == "mangled_name" and cursor.kind != ci.CursorKind.FUNCTION_DECL:
            continue  # libclang crashes on some other kinds (the extraction never asks)
        assert _answer(operator.attrgetter(name), cursor) == _answer(original[ci.Cursor, name].fget, cursor), name
    extent = cursor.extent
    for end in ("start", "end"):
        assert getattr(extent, end) == original[ci.SourceRange, end].fget(extent)
    file = cursor.location.file
    if file is not None:
        assert file.name == original[ci.File, "name"].fget(file)


@pytest.mark.slow
def test_the_root_cursor_is_shared_without_a_cycle(tmp_path: Path) -> None:
    """`tu.cursor` answers the root the file's pipeline holds (`ParsedUnit.root`), so a pass
    that starts again from the translation unit walks the kept children; the unit keeps it
    weakly, so dropping the unit frees the AST without the cycle collector."""
    import gc
    import weakref

    import clang.cindex as ci

    from kernel_check.clang import tree
    from kernel_check.clang.cursors import walk, walk_with_depth

    path = tmp_path / "sample.cuh"
    unit = parse_file(path, SOURCE, resolve_settings("hermetic"))
    extract(unit, SOURCE, SOURCE.encode())
    assert unit.tu.cursor is unit.root
    assert unit.root == tree.ORIGINALS[ci.TranslationUnit, "cursor"].fget(unit.tu)
    whole = list(walk(unit.root))
    assert whole == [c for _, c in walk_with_depth(unit.root)] and len(whole) > 100
    assert list(walk(unit.root)) == whole  # the kept list, read again
    _assert_file_handles_name_the_files(whole)
    gone = weakref.ref(unit.tu)
    gc.disable()
    try:
        del unit, whole
        assert gone() is None
    finally:
        gc.enable()


def _assert_file_handles_name_the_files(cursors: list) -> None:
    """What `preamble._sees_outside` reads (a declaration's file by handle) names the file
    `location.file` names, for each cursor and the declaration it references."""
    from kernel_check.clang.capi import file_handle, file_name_of

    for cursor in [*cursors, *(c.referenced for c in cursors if c.referenced is not None)]:
        file, handle = cursor.location.file, file_handle(cursor)
        assert (file.name if file is not None else None) == (file_name_of(handle) if handle else None)


def _answer(read, cursor) -> tuple:
    try:
        return "ok", read(cursor)
    except Exception as error:  # the same error either way
        return "raised", type(error)


DIVERGENCE_SOURCE = """\
#include <cstdint>

__device__ void sync_helper() { __syncthreads(); }
__device__ void quiet_helper() {}

__global__ void k(float* dst, uint32_t n) {
  const uint32_t tid = threadIdx.x + 1;
  const uint32_t row = blockIdx.x * n;
  if (tid < n) sync_helper();
  if (row < n) __syncthreads();
  if (threadIdx.x == 0) quiet_helper();
  if (threadIdx.x < 32) {
    __syncthreads();
    return;
  }
  __syncthreads();
}
"""


def test_divergent_barriers(tmp_path: Path) -> None:
    """Barriers under thread-dependent conditions (src/kernel_check/clang/thread_dependence.py)."""
    path = tmp_path / "divergence.cu"
    unit = parse_file(path, DIVERGENCE_SOURCE, resolve_settings("hermetic"))
    model = extract(unit, DIVERGENCE_SOURCE, DIVERGENCE_SOURCE.encode())
    assert unit.errors == []
    facts = [(b.span.line, b.barrier, b.condition.line, b.source, b.matched_by_rest) for b in model.divergent_barriers]
    assert facts == [
        (9, "sync_helper", 9, "tid", False),  # through a local and a helper that synchronizes
        (13, "__syncthreads", 12, "threadIdx", True),  # a split whose barriers pair up with line 16
    ]


DEVICE_PASS_SOURCE = """\
#include <cstdint>

namespace sglang {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
__global__ void scale(const float* src, int n) {}
#else
__global__ void scale(const float* __restrict__ src, uint32_t n) {}
#endif

__global__ void copy(float* __restrict__ dst, const float* __restrict__ src) {
  dst[threadIdx.x] = src[threadIdx.x];
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (threadIdx.x == 0) __syncthreads();
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
  if (threadIdx.x == 1) __syncthreads();
#endif
}

#ifdef __CUDA_ARCH__
__device__ float lane_value(const float* src) { return src[threadIdx.x % 32]; }
#endif

inline void host_only(float* dst) { dst[0] = 0.0f; }

}  // namespace sglang
"""


def _line(source: str, needle: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), start=1) if needle in line)


def test_device_passes_add_the_code_the_host_pass_skips(tmp_path: Path) -> None:
    """`#if __CUDA_ARCH__` code: parsed in device mode for the configured arch and for the
    oldest one where a region asks for it, and merged into the one model once
    (src/kernel_check/clang/device_pass.py, device_merge.py)."""
    path = tmp_path / "device.cuh"
    unit = parse_file(path, DEVICE_PASS_SOURCE, resolve_settings("hermetic"))
    assert unit.errors == []
    assert [p.arch for p in unit.device_passes] == ["90", "75"]
    for device in unit.device_passes:
        assert "--cuda-device-only" in device.unit.args and "--cuda-host-only" not in device.unit.args
        assert device.unit.errors == []
    model = extract(unit, DEVICE_PASS_SOURCE, DEVICE_PASS_SOURCE.encode())
    functions = sorted((f.name, f.span.line, f.kind) for f in model.functions)
    assert functions == sorted(
        [
            ("scale", _line(DEVICE_PASS_SOURCE, "int n) {}"), FunctionKind.KERNEL),  # the sm_75 pass's stub
            ("scale", _line(DEVICE_PASS_SOURCE, "uint32_t n) {}"), FunctionKind.KERNEL),
            ("copy", _line(DEVICE_PASS_SOURCE, "void copy("), FunctionKind.KERNEL),  # once, the device pass's
            ("lane_value", _line(DEVICE_PASS_SOURCE, "lane_value"), FunctionKind.DEVICE),
            ("host_only", _line(DEVICE_PASS_SOURCE, "host_only"), FunctionKind.HOST),
        ]
    )
    stub = next(f for f in model.functions if f.span.line == _line(DEVICE_PASS_SOURCE, "int n) {}"))
    assert [(p.name, p.type.is_restrict) for p in stub.params] == [("src", False), ("n", False)]
    # the sm_90 region's barrier is seen, once; the sm_100 one is parsed by no pass
    barriers = [b.span.line for b in model.divergent_barriers]
    assert barriers == [_line(DEVICE_PASS_SOURCE, "threadIdx.x == 0")]
    copy_flows = [f for f in model.dataflow_facts.functions if f.qualified_name == "sglang::copy"]
    assert len(copy_flows) == 1
    int_params = [d.span.line for d in model.integer_facts.integer_decls if d.name == "n"]
    assert int_params == [stub.span.line]  # the stub's `int n` (the real kernel's is `uint32_t`)


@pytest.mark.parametrize(
    "source",
    [
        SOURCE,
        "#if 0\n__global__ void k(int n) {}\n#endif\n",
        "#ifndef __CUDA_ARCH__\ninline void host_side() {}\n#endif\n",
    ],
)
def test_no_device_pass_without_skipped_cuda_arch_code(tmp_path: Path, source: str) -> None:
    """Parse time is a feature: a file whose host pass skipped nothing under `__CUDA_ARCH__`
    is parsed once."""
    path = tmp_path / "plain.cuh"
    unit = parse_file(path, source, resolve_settings("hermetic"))
    assert unit.device_passes == []


@pytest.mark.parametrize(
    ("condition", "arch", "value"),
    [
        ("defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800", "75", True),
        ("defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800", "90", False),
        ("!defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800", "75", False),
        ("defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 1030 || __CUDA_ARCH__ >= 1200)", "90", False),
        ("defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)", "90", True),
        ("defined(__CUDA_ARCH__) && CUDART_VERSION >= 13000", "90", None),
        ("defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900UL", "90", True),
    ],
)
def test_device_pass_condition_values(condition: str, arch: str, value: bool | None) -> None:
    """Which architecture's device pass takes a branch, read from its condition."""
    from kernel_check.clang.device_pass import _condition_value

    assert _condition_value(condition, int(arch) * 10) is value
