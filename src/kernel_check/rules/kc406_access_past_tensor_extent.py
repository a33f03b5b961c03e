"""## What it does
Flags a global-memory access of a kernel that the kernel's own launch lets reach past the end
of the tensor it reads or writes (or before its start): a row addressed with another tensor's
stride (`pointer::offset(k_rope, i * stride_nope_bytes)`), a row-strided view read as
contiguous (`x[idx]` of a matcher's `with_strides({-1, 1})`), a contiguous output written
with an input's row stride.

The check is a proof, not a pattern (solver.py, z3), asked only where the file's launch of
the kernel tells everything the access depends on: the launcher's `TensorMatcher` gives the
tensor's dims, its strides (`with_strides`, or the contiguous ones) and one element size, and
the grid, block and every scalar argument the offset or its guards name are terms over the
launcher's sizes (`x.size(i)`, `x.stride(i)`, `S.unwrap()`, `S.set_value(v)`, the SM count).
The access's offset in bytes -- followed through casts, `pointer::offset` (bytes) and vector
loads (`vec.load(p, i)`: `i` whole vectors), and through a template kernel's `const T* x` in
steps of `sizeof(T)`, which the launch's instantiation gives: a launcher over `T` that launches
`kernel<T>` and verifies the tensor `with_dtype<T>()` makes both sides count in `T`s, whatever
`T` is -- is compared with the tensor's span, the bytes
from its first element to the end of its last (1 + the sum of (dim - 1) * stride elements),
under the guards on the access's path (`if`s, loop bounds, early returns) and the launcher's
`RuntimeCheck`s. The search tries small concrete shapes (every size alike, then one apart
from the rest), under which the offset is linear: a witness names the sizes, the thread and
the block. A size the matcher leaves free of the kernel's scalar arguments (`{-1, -1}` for a
tensor the kernel indexes by `ne_n * ne_k`) is a shape the launcher lets through: the finding
says which check it lacks.

Not asked (never a finding): an offset that depends on an integer read from memory (KC401's),
on a value the walk does not follow (a call's result, a local assigned after its declaration,
a loop bound it does not follow), an access of a kernel whose launch leaves a value it needs
unknown (a template argument, a grid from an unfollowed call, a `T` the launch instantiates with
a type the tensor's matcher does not share), of a tensor two matchers
verify, one whose dtype the matcher leaves open in size or one a dim of which it writes as an
expression (`{static_cast<int64_t>(n)}`); a query the solver cannot answer within its budget
(`solver-budget` per kernel, of its own, each access a quarter at most). A pointer handed to
a call is out where it points past the span's end, not at it (a range's end). One access is
reported per kernel and tensor (the first in the body).

## Why is this bad?
`TensorMatcher` accepts the shapes and strides it states; a kernel that addresses a tensor
with a stride or extent the matcher does not bind to it reads a neighbour's memory or writes
past the allocation for some input the launcher lets through -- typically a padded or sliced
view, or two tensors whose sizes differ.

## Example
```cpp
__global__ void copy_rows(const float* x, float* out, int64_t x_stride, uint32_t d) {
  out[blockIdx.x * x_stride + threadIdx.x] = x[blockIdx.x * x_stride + threadIdx.x];  // out is contiguous
}
void launch(tvm::ffi::TensorView x, tvm::ffi::TensorView out) {
  auto R = host::SymbolicSize{"R"}, D = host::SymbolicSize{"D"};
  host::TensorMatcher({R, D}).with_strides({-1, 1}).with_dtype<float>().verify(x);
  host::TensorMatcher({R, D}).with_dtype<float>().verify(out);
  host::LaunchKernel(R.unwrap(), D.unwrap(), x.device())(copy_rows, ..., x.stride(0), D.unwrap());
}
```

## Use instead
```cpp
  out[blockIdx.x * d + threadIdx.x] = x[blockIdx.x * x_stride + threadIdx.x];
```
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

from kernel_check import solver, witness
from kernel_check.clang.symbolic import symbol_names
from kernel_check.finding import Finding
from kernel_check.model import Symbol, SymbolicAccess, SymbolKind, Term
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._common import location_of
from kernel_check.semantic import SemanticModel
from kernel_check.solver import RLIMIT_PER_SECOND, Budget, Outcome, launch_constraints, within
from kernel_check.witness import Binding, Layout, Witness, render_dim

_ZERO = Term("const", value=0)
_OFFSET = Term("sym", name="kc406:offset")  # the access's first byte
_SPAN = Term("sym", name="kc406:span")  # the tensor's bytes
# what the rule leaves alone: ids read from memory (KC401's) and values the walk does not follow
_NOT_ASKED = (SymbolKind.LOAD, SymbolKind.OPAQUE)
_SHARES = 4  # an access's query gets at most this share of the kernel's budget
_ALIKE = (1, 2, 4, 8, 16, 64)  # the shapes with every launcher input at one value
_APART = ((2, (1, 4, 3)), (8, (1, 2, 24, 3)), (64, (1, 192)))  # (the others' value, one input's values)


@rule("KC406", needs={Need.SYMBOLIC, Need.CONTRACTS})
def check(model: SemanticModel, ctx: RuleContext) -> list[Finding]:
    seconds = float(ctx.options.get("solver-budget", 2.0))
    # after every rule's decisions and the witnesses they defer before it: the CPU time its
    # queries take counts against their kernels' budgets (solver.py's backstop)
    ctx.defer(functools.partial(_reported, model, ctx, seconds))
    return []


def _reported(model: SemanticModel, ctx: RuleContext, seconds: float) -> Iterator[Finding]:
    reported: set[tuple[str, str]] = set()
    spent: dict[str, int] = {}  # resource units each kernel's accesses used
    for access in model.symbolic_accesses:
        key = (access.function_usr, access.pointer)
        if access.shared or access.bytes is None or key in reported or not _asked(access):
            continue
        # a budget of the rule's own, the kernel's `seconds` over all its accesses, each at
        # most a quarter: an access that is in bounds costs a proof, which is not to take
        # from the other rules' queries nor from the next access's witness
        left = int(seconds * RLIMIT_PER_SECOND) - spent.get(access.function_usr, 0)
        if left <= 0:
            continue
        budget = Budget(min(seconds / _SHARES, left / RLIMIT_PER_SECOND))
        found = _outside(model, access, budget)
        spent[access.function_usr] = spent.get(access.function_usr, 0) + budget.spent
        if found is not None:
            reported.add(key)
            yield ctx.finding(location_of(model, access.span), _message(access, *found))


def _asked(access: SymbolicAccess) -> bool:
    """Whether every value the access's place and path name is one the walk follows and no
    id read from memory moves it."""
    assert access.bytes is not None
    named = set(symbol_names(access.bytes)).union(*(symbol_names(g) for g in access.guards))
    return not any(s.kind in _NOT_ASKED for s in access.symbols if s.name in named)


def _outside(model: SemanticModel, access: SymbolicAccess, budget: Budget) -> tuple[Witness, Layout, bool] | None:
    """The smallest shape of a launch in the file for which the access reaches past the
    tensor's span (or before its start), the layout and which side."""
    kernel = model.function(access.function_usr)
    if kernel is None or access.bytes is None:
        return None
    for launch, binding in witness.bindings(model, kernel, access.symbols):
        layout = witness.tensor_layout(model, kernel, access.pointer, launch) if binding is not None else None
        if binding is None or layout is None or not _sizes_agree(access, binding, layout):
            continue
        end = Term("+", (_OFFSET, Term("const", value=access.byte_width)))
        for past_end, outside in ((True, Term("<", (_SPAN, end))), (False, Term("<", (_OFFSET, _ZERO)))):
            found = _smallest(access, binding, layout, outside, budget)
            if found is not None:
                return found, layout, past_end
    return None


def _sizes_agree(access: SymbolicAccess, binding: Binding, layout: Layout) -> bool:
    """Whether the element sizes of the access's byte offset and of the tensor's span are
    known alike: constants both, or both the one `sizeof(T)` of the launcher's type parameter
    (`kernel<T>` of a `const T* x`, `with_dtype<T>()`: the comparison holds whatever `T` is).
    A size known on one side alone would leave the witness free to choose it."""
    assert access.bytes is not None
    named = set(symbol_names(access.bytes))
    given = {size for name, size in binding.element_sizes if name in named}
    if None in given:
        return False
    unknown = {size for size in given if size is not None and size.op == "sym"}
    return unknown == ({layout.element_bytes()} if layout.element_type else set())


def _smallest(
    access: SymbolicAccess, binding: Binding, layout: Layout, outside: Term, budget: Budget
) -> Witness | None:
    """A witness among small concrete shapes: with every launcher input fixed the offset is
    linear in the thread, block and loop indices (a query z3 answers at once), where over
    free sizes it multiplies unknowns (`blockIdx.x * stride`) and seldom finishes in time."""
    assert access.bytes is not None
    world = [
        *launch_constraints(access.symbols),
        *(c for s in access.symbols if s.kind is SymbolKind.LOOP for c in within(_variable(s), s.low, s.high)),
        *binding.constraints,
        *binding.fits,
        *access.guards,
        Term("==", (_OFFSET, access.bytes)),  # named, for the witness to tell
        Term("==", (_SPAN, layout.span_bytes())),
        outside,
        # a launcher's `sizeof(T)` scales the offset and the span alike (`_sizes_agree`): counted
        # as 1, the witness tells elements
        *([Term("==", (layout.element_bytes(), Term("const", value=1)))] if layout.element_type else []),
    ]
    pinned_inputs = _pinned(binding.constraints)
    shapes = [
        [Term("==", (_variable(s), Term("const", value=v))) for s, v in shape.items()]
        for shape in _shapes(tuple(s for s in binding.inputs if s.name not in pinned_inputs))
    ]
    session = solver.Session(world, budget)
    # most accesses are in bounds: one query over every shape at once proves it, where one
    # query a shape cost forty; a shape that does reach outside is then searched smallest first
    if len(shapes) > 1 and session.check([_any_of(shapes)]).outcome is Outcome.UNSAT:
        return None
    for fixed in shapes:
        for pinned in (witness.first_iteration(access), []):  # the first thread, block and iteration when it can be
            answer = session.check([*fixed, *pinned])
            if answer.outcome is Outcome.SAT:
                return Witness(answer, binding.shown(*layout.dims, *layout.strides))
            if answer.outcome is Outcome.UNKNOWN:
                return None  # unknown is never a finding
    return None


def _any_of(shapes: list[list[Term]]) -> Term:
    """Some shape of `shapes` (each a list of an input's value) holds."""
    return Term("or", tuple(Term("and", tuple(shape)) for shape in shapes))


def _pinned(constraints: tuple[Term, ...]) -> set[str]:
    """The inputs the launch fixes to a constant (`N.set_value(128)`, `RuntimeCheck(D == 64)`):
    a shape leaves them to it."""
    pinned: set[str] = set()
    for term in constraints:
        if term.op == "not" and term.args[0].op == "!=":
            term = Term("==", term.args[0].args)
        if term.op == "==" and {a.op for a in term.args} == {"sym", "const"}:
            pinned.update(a.name for a in term.args if a.op == "sym")
    return pinned


def _shapes(inputs: tuple[Symbol, ...]) -> Iterator[dict[Symbol, int]]:
    """Small shapes, smallest first: every input alike, then one input apart from the rest
    (a stride past its row, a row shorter than another tensor's), each within its range."""
    seen: list[dict[Symbol, int]] = []
    candidates = [dict.fromkeys(inputs, v) for v in _ALIKE]
    candidates += [{**dict.fromkeys(inputs, base), s: v} for base, apart in _APART for s in inputs for v in apart]
    for shape in candidates:
        clamped = {s: min(max(v, s.low), s.high) for s, v in shape.items()}
        if clamped not in seen:
            seen.append(clamped)
            yield clamped


def _variable(symbol: Symbol) -> Term:
    return Term("sym", name=symbol.name)


def _message(access: SymbolicAccess, found: Witness, layout: Layout, past_end: bool) -> str:
    values = found.answer.model
    start, span = values.get(_OFFSET.name, 0), values.get(_SPAN.name, 0)
    where = witness.where(access.symbols, found.answer)
    at = f" at {where}" if where else ""
    reached = _bytes_reached(start, access.byte_width)
    side = f"its span is bytes 0 to {span - 1}" if past_end else "before its start"
    dims = ", ".join(render_dim(d) for d in layout.dims)
    strides = ", ".join(_rendered(s) for s in layout.strides)
    return (
        f"`{access.pointer}` is {'written' if access.is_write else 'read'} at {reached}, {side} "
        f"(`{layout.tensor}` is [{dims}], strides [{strides}], {_element(layout)}): "
        f"for {found.shape()}{at}; address it with its own dims and strides, or have the launcher check the "
        "sizes the kernel assumes"
    )


def _element(layout: Layout) -> str:
    """`2-byte elements`; `T` elements for a launcher's template type (the witness counts
    one as a byte: its offsets are in elements)."""
    if layout.element_type:
        return f"`{layout.element_type}` elements, offsets in elements"
    return f"{layout.element_size}-byte elements"


def _bytes_reached(start: int, width: int) -> str:
    if not width:
        return f"byte {start} (a pointer handed to a call)"
    return f"bytes {start} to {start + width - 1}" if width > 1 else f"byte {start}"


def _rendered(stride: Term) -> str:
    """A stride as the matcher states it (`S`, `1`), or the product of dims it is."""
    if stride.op == "*":
        factors = [_rendered(a) for a in stride.args if a != Term("const", value=1)]
        return " * ".join(factors) or "1"
    return render_dim(stride)
