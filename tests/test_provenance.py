"""Pointer provenance (src/kernel_check/clang/provenance.py) and callee summaries (src/kernel_check/summaries.py)
over small real sources (hermetic parse)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel_check.clang.consteval import callee_name
from kernel_check.clang.cursors import K, walk
from kernel_check.clang.extract import extract
from kernel_check.clang.parse import parse_file, resolve_settings
from kernel_check.clang.program import Expr, ExprKind, Function, Program
from kernel_check.clang.provenance import (
    Origin,
    Origins,
    Shape,
    at_call,
    classify,
    initializer_list_fields,
    origins_of,
    parameter,
    record_fields,
)
from kernel_check.semantic import SemanticModel

P, S, PA, SA = Shape.POINTER, Shape.STRUCT, Shape.POINTER_ARRAY, Shape.STRUCT_ARRAY

SOURCE = """
#include <cstdint>
struct Inner { const float* data; int stride; };
struct Params {
  const float* src;
  float* dst;
  const float* parts[2];
  Inner inner;
  Inner inners[2];
  int n;
  void (*callback)(int);
};
namespace device::pointer {
template <typename T> __device__ T* offset(T* p, int64_t n) { return p + n; }
}  // namespace device::pointer

__device__ void probe(const Params params, const float* x, float* y, int n, bool flag, const Params& ref) {
  const float* alias = x;
  const float* moved = alias + n;
  const float* moved_back = n + moved - 1;
  const float* src = params.src;
  const float* part = params.parts[1];
  const float* first_part = *params.parts;
  const float* nested = params.inner.data;
  const float* nested_in_array = params.inners[1].data;
  const int4* cast = reinterpret_cast<const int4*>(x + 4);
  const float* c_cast = (const float*)(params.dst) + 1;
  const float* either = flag ? x : params.src;
  const float* address = &x[n];
  const float* address_of_deref = &*y;
  const float* offset = device::pointer::offset(x, n);
  const float* assumed = static_cast<const float*>(__builtin_assume_aligned(y, 16));
  const float* last = (n, y);
  const Params& copy = params;
  const float* through_copy = copy.dst;
  const float* through_ref = ref.inner.data;
  int64_t distance = y - x;
  int scalar = n;
  int stride = params.inner.stride;
  float value = x[0];
  const float* not_received = &value;
}
"""


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Function:
    path = tmp_path_factory.mktemp("provenance") / "subject.cuh"
    path.write_text(SOURCE)
    tu = parse_file(path, SOURCE, resolve_settings("hermetic")).tu
    found = next(
        c for c in walk(tu.cursor) if c.kind == K.FUNCTION_DECL and c.spelling == "probe" and c.is_definition()
    )
    return Program(str(path)).function(found)


def _locals(function: Function) -> dict[str, Origins]:
    """Each local variable's origins, evaluated in order as a walk binds them."""
    bound: dict[int, Origins] = {
        p.key: (origin,) for index, p in enumerate(function.params) if (origin := parameter(p, index)) is not None
    }
    found: dict[str, Origins] = {}
    assert function.body is not None
    for variable in (v for stmt in function.body.walk() for v in stmt.variables):
        bound[variable.key] = found[variable.name] = origins_of(
            variable.exprs[-1], lambda d: bound.get(d.key, ()), _member_name, callee_name
        )
    return found


def _member_name(member: Expr) -> str:
    """The member's name; libclang leaves a member of a dependent type unnamed, the last
    token names it."""
    return member.name or member.tokens[-1].spelling


def _summary(origins: Origins) -> set[tuple[int, tuple[str, ...], Shape]]:
    return {(o.param, o.fields, o.shape) for o in origins}


@pytest.mark.parametrize(
    ("variable", "expected"),
    [
        ("alias", {(1, (), P)}),  # a local copy of a parameter
        ("moved", {(1, (), P)}),  # pointer + n
        ("moved_back", {(1, (), P)}),  # n + pointer - 1
        ("src", {(0, ("src",), P)}),  # a field of a by-value params struct
        ("part", {(0, ("parts",), P)}),  # an element of a pointer array field
        ("first_part", {(0, ("parts",), P)}),
        ("nested", {(0, ("inner", "data"), P)}),  # a nested struct's field
        ("nested_in_array", {(0, ("inners", "data"), P)}),
        ("cast", {(1, (), P)}),  # casts keep the origin
        ("c_cast", {(0, ("dst",), P)}),
        ("either", {(1, (), P), (0, ("src",), P)}),  # a conditional is either branch
        ("address", {(1, (), P)}),  # &p[i] is inside the same buffer
        ("address_of_deref", {(2, (), P)}),
        ("offset", {(1, (), P)}),  # device::pointer::offset
        ("assumed", {(2, (), P)}),  # __builtin_assume_aligned returns its argument
        ("last", {(2, (), P)}),  # the comma operator's value is its right side
        ("copy", {(0, (), S)}),  # a reference to the struct stays the struct
        ("through_copy", {(0, ("dst",), P)}),
        ("through_ref", {(5, ("inner", "data"), P)}),  # a struct received by reference
        ("distance", set()),  # p - q is a number
        ("scalar", set()),  # scalar parameters are not tracked
        ("stride", set()),  # nor scalar fields
        ("value", set()),  # a load yields a value, not a pointer
        ("not_received", set()),  # a local's address points into no received memory
    ],
)
def test_origins_of_each_local(probe: Function, variable: str, expected: set) -> None:
    assert _summary(_locals(probe)[variable]) == expected


DEPENDENT = """
#include <cstdint>
#include <type_traits>
struct A { const float* src; };
struct B { const float* src; float* dst; };
template <bool kB, typename T, typename IdxT>
__device__ void dependent(const typename std::conditional<kB, B, A>::type params, T p, IdxT i, const T* q) {
  const auto from_struct = params.src;
  const auto moved = params.src + i;
  const auto moved_pointer = q + i;
  const auto either = kB ? p : params.src;
}
"""


def test_values_of_a_type_only_the_instantiation_knows_are_followed(tmp_path: Path) -> None:
    path = tmp_path / "dependent.cuh"
    path.write_text(DEPENDENT)
    tu = parse_file(path, DEPENDENT, resolve_settings("hermetic")).tu
    found = next(c for c in walk(tu.cursor) if c.kind == K.FUNCTION_TEMPLATE and c.spelling == "dependent")
    function = Program(str(path)).function(found)
    U = Shape.UNKNOWN
    assert {name: _summary(origins) for name, origins in _locals(function).items()} == {
        "from_struct": {(0, ("src",), U)},  # a member of a struct whose type depends on kB
        "moved": {(0, ("src",), U), (2, (), U)},  # unknown + unknown: either may be the pointer
        "moved_pointer": {(3, (), P)},  # a known pointer plus an unknown offset is the pointer
        "either": {(1, (), U), (0, ("src",), U)},
    }
    assert Origin(0, (), U).extended(()) is None  # no access is replayed through an unknown value


def test_parameters_take_the_shape_of_their_type(probe: Function) -> None:
    origins = [parameter(p, index) for index, p in enumerate(probe.params)]
    assert [(o.param, o.shape) if o is not None else None for o in origins] == [
        (0, S),
        (1, P),
        (2, P),
        None,
        None,
        (5, S),
    ]
    assert origins[0].record is not None and origins[0].record.spelling == "Params"


def test_fields_of_the_params_struct_are_classified(probe: Function) -> None:
    record = parameter(probe.params[0], 0).record
    shapes = {f.spelling: classify(f.type) for f in record.get_children() if f.kind == K.FIELD_DECL}
    assert {name: shape[0] if shape else None for name, shape in shapes.items()} == {
        "src": P,
        "dst": P,
        "parts": PA,
        "inner": S,
        "inners": SA,
        "n": None,
        "callback": None,
    }
    assert shapes["inners"][1].spelling == "Inner"  # the element record, to follow its fields
    assert record_fields(probe.params[0]) == ["src", "dst", "parts", "inner", "inners", "n", "callback"]


@pytest.mark.parametrize(
    ("argument", "fields", "expected"),
    [
        (Origin(1), (), Origin(1)),  # a pointer argument: what the callee does to its pointer
        (Origin(1), ("src",), None),  # a pointer has no fields
        (Origin(0, (), S), ("src",), Origin(0, ("src",), P)),  # a whole struct handed on
        (Origin(0, ("inner",), S), ("data",), Origin(0, ("inner", "data"), P)),  # a nested struct
        (Origin(0, (), S), (), None),  # the struct itself is not a pointer access
    ],
)
def test_a_callee_parameter_path_seen_from_the_caller(
    argument: Origin, fields: tuple[str, ...], expected: Origin | None
) -> None:
    assert argument.extended(fields) == expected


def test_a_callee_summary_replays_onto_every_origin_of_the_argument() -> None:
    arguments = [(Origin(2), Origin(0, ("src",))), (Origin(0, (), S),), ()]
    assert at_call(arguments, Origin(0)) == (Origin(2), Origin(0, ("src",)))  # either buffer
    assert at_call(arguments, Origin(1, ("dst",))) == (Origin(0, ("dst",)),)  # the struct's field
    assert at_call(arguments, Origin(2)) == ()  # an argument that is no received pointer
    assert at_call(arguments, Origin(3)) == ()  # a variadic or defaulted parameter


def test_outermost_field_is_what_a_launcher_fills() -> None:
    assert (Origin(0, ("inner", "data")).field, Origin(3).field) == ("inner", "")


def test_initializer_list_elements_name_their_fields(tmp_path: Path) -> None:
    text = """
struct Params { const float* src; float* dst; int n; };
void launch(const float* a, float* b) {
  Params positional{a, b, 4};
  Params designated{.dst = b, .n = 2};
}
"""
    path = tmp_path / "host.cuh"
    path.write_text(text)
    tu = parse_file(path, text, resolve_settings("hermetic")).tu
    program = Program(str(path))
    lists = {
        v.spelling: next(n for e in program.var(v).exprs for n in e.walk() if n.kind is ExprKind.INIT_LIST)
        for v in walk(tu.cursor)
        if v.kind == K.VAR_DECL and v.location.file.name == str(path)
    }
    fields = record_fields(lists["positional"])
    named = {name: [field for _, field in initializer_list_fields(lists[name], "", fields)] for name in lists}
    assert named == {"positional": ["src", "dst", "n"], "designated": ["dst", "n"]}
    assert [f for _, f in initializer_list_fields(lists["positional"], "outer", fields)] == ["outer"] * 3


SUMMARY = """
#include <sgl_kernel/vec.cuh>
#include <cstdint>
namespace sglang {
struct Params { const float* src; float* dst; uint32_t n; };
template <int kVec>
SGL_DEVICE void load_row(const float* row) {
  device::AlignedVector<float, kVec> v;
  v.load(row);
}
template <int kVec>
SGL_DEVICE void copy(const Params& p, uint32_t i) {
  load_row<kVec>(p.src + i);
  device::AlignedVector<float, 2> w;
  w.store(p.dst + i);
}
template <int kVec>
__global__ void kernel(const __grid_constant__ Params params, float* __restrict__ extra) {
  copy<kVec * 2>(params, threadIdx.x);
  load_row<4>(extra);
}
}  // namespace sglang
"""


def test_callee_summaries_rename_accesses_into_the_caller(tmp_path: Path) -> None:
    path = tmp_path / "summary.cuh"
    path.write_text(SUMMARY)
    unit = parse_file(path, SUMMARY, resolve_settings("hermetic"))
    assert not unit.errors, [e.message for e in unit.errors]
    model = extract(unit, SUMMARY, SUMMARY.encode())
    kernel = next(f.usr for f in model.functions if f.name == "kernel")
    uses = SemanticModel(model).vector_uses(kernel)
    widths = {key: sorted(u.width.evaluate({"kVec": 4}) for u in found) for key, found in uses.items()}
    # params.src through copy (a struct passed whole) and load_row<kVec * 2>: 4 bytes * 8;
    # params.dst stored as 2 floats in copy; extra through load_row<4>
    assert widths == {(0, "src"): [32], (0, "dst"): [8], (1, ""): [16]}
