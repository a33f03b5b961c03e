"""## What it does
Flags a global-memory access of a kernel whose offset depends on an integer the kernel
read from another tensor -- a token position, a page or slot location, an expert or row
id (`out[idx[i] * d + j]`, `cache + loc * stride`) -- when nothing on the access's path
bounds that integer on one side: no `idx[i] < n` guard (or a guard on the other side
only, `idx[i] < n` for a signed id that may be negative), no clamp (`min(idx[i], n - 1)`),
no early `return`/`continue` for ids out of range. An integer the kernel reads back from
a buffer it wrote itself before a barrier (a prefix sum it computed into `cumsum`) is its
own result, not an id: it is not asked.

The check is a proof, not a pattern (solver.py, z3): the offset and the guards on its
path (`if` conditions, loop bounds, `?:`, an earlier `if (...) return;` or `assert`) become terms over
the thread and block indices, the launch's dimensions, the kernel's scalar arguments and
the integers it reads; a divisor the path always evaluates is nonzero (C leaves `x / 0`
undefined), so `work / groups` and `work % groups` stay within `work`. The access is
reported when the offset can leave the range with the integer read from memory as the
only cause: with every other value small (shapes, grid
and scalars up to 256), some value of the id drives the offset past 2^30 elements or
below zero, and no such offset exists once the id is small too. A query the solver cannot
answer within the kernel's budget (`solver-budget`, default 2 s, shared by every rule's
queries about the kernel) is never a finding.

The witness comes from the kernel's contract where a launch of the kernel in the file
gives it: the launcher's `TensorMatcher` sizes, the grid, block and arguments it computes
from them, its `RuntimeCheck`s, and the indexed tensor's dims from its matcher. The message
names the smallest such sizes and the id's smallest value that takes the offset past the
tensor's elements (or -1, below it): "for N = 1, S = 1 (`cache` is [S, 128]),
`loc[blockIdx.x]` = 1 at threadIdx.x = 0 passes every guard on the path". Without such a
launch (or where the kernel's budget has too little left once every rule has decided: a
shape's search never costs a finding) it gives the id's value and the thread and block it
is read by, as found with every other value small.

Both sides are asked: an id open on both says so in one finding ("no bound on either side:
... = 1073741824 ... passes every guard on the path, and so does -1"). The lower side is not
reported when a guard (or a `?:` in the offset) compares the id with a negative constant
(`slot != kPadSlot`, `if (id == -1) return;`): the code knows the one negative marker its
callers pass. A comparison follows C++'s conversions: `id < gridDim.y` (a signed id against
an unsigned value) rejects -1, which converts to 2^32 - 1; `id >= 0u` rejects nothing. One
finding is reported per kernel and set of ids, at the first access they reach unbounded; the
other tensors they reach so are named in it, each access as a related location ("reaches the
offset of `q` (and of `k` and `v`)": one unchecked `cu_seqlens[b]` is one defect, however
many tensors it moves).

Followed: ids read through a params struct's fields or a structured binding of it
(`const auto& [cache, loc] = params;`), ids of a template's type (`static_cast<const
TLoc*>(loc)[i]`), offsets taken with `pointer::offset(p, ...)`, and a pointer so moved that is
handed to a call (`cp_async_bulk(pointer::offset(cache, loc * row_bytes), smem, n)`, a copy
helper) or to inline PTX (`asm("ld.global.v4.b32 ..., [%4];" :: "l"(row + i))`): the callee or
the instruction accesses at least the element it points at. A shift by a template parameter
(`loc >> kPageBits`) divides by a power of two the kernel is given. Not followed yet: ids that
pass through a device function, a local assigned after its declaration, or shared memory;
strides the matcher allows (the extent is the product of the dims). An offset that reads no
id yet leaves the tensor's dims and strides is KC406's.

## Why is this bad?
An id read from a tensor is whatever the caller put there: a padding marker (`-1`), a
stale slot, a position past the cache. With no bound the kernel reads or writes outside
the tensor -- an illegal address at best, silent corruption of a neighbouring allocation
at worst -- and nothing in the contract (`TensorMatcher` checks shapes, not values)
rules it out.

## Example
```cpp
__global__ void gather_rows(float* out, const float* table, const int32_t* ids, int64_t num_rows, int64_t d) {
  const int32_t id = ids[blockIdx.x];
  if (id < num_rows) {  // -1 still passes
    out[blockIdx.x * d + threadIdx.x] = table[id * d + threadIdx.x];
  }
}
```

## Use instead
```cpp
__global__ void gather_rows(float* out, const float* table, const int32_t* ids, int64_t num_rows, int64_t d) {
  const int32_t id = ids[blockIdx.x];
  if (id >= 0 && id < num_rows) {
    out[blockIdx.x * d + threadIdx.x] = table[id * d + threadIdx.x];
  }
}
```
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass, field

from kernel_check import solver, witness
from kernel_check.clang.symbolic import mentions, symbol_names
from kernel_check.finding import Counterexample, Finding, Related
from kernel_check.model import Symbol, SymbolicAccess, SymbolKind, Term
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._common import location_of
from kernel_check.semantic import SemanticModel
from kernel_check.solver import Answer, Budget, Outcome, launch_constraints, within
from kernel_check.witness import Witness, render_dim

SMALL = 256  # every value but the ids: shapes, grid and scalars this small still break
FAR = 2**30  # an offset this far is past any extent a small shape gives
_SMALL_KINDS = (SymbolKind.SCALAR, SymbolKind.OPAQUE, SymbolKind.UNIFORM, SymbolKind.GRID_DIM)
_ZERO = Term("const", value=0)


@rule("KC401", needs={Need.SYMBOLIC, Need.CONTRACTS, Need.SOLVER})
def check(model: SemanticModel, ctx: RuleContext) -> list[Finding]:
    seconds = float(ctx.options.get("solver-budget", 2.0))
    found = _unbounded_accesses(model, seconds)
    # the shapes after every rule's decisions, with what the kernel's budget has left: a
    # shape's search is no reason to miss a finding
    ctx.defer(functools.partial(_reported, model, ctx, found, seconds))
    return []


def _reported(model: SemanticModel, ctx: RuleContext, found: list[_Unbounded], seconds: float) -> Iterator[Finding]:
    for unbounded in found:
        access, open_sides, also = unbounded.access, unbounded.open_sides, unbounded.also
        side, answer = next(iter(open_sides.items()))  # the upper side's witness first: the finding's shape
        shaped = _in_contract(model, access, side, model.solver_budget(access.function_usr, seconds))
        load = _culprit(access, shaped[0].answer if shaped is not None else answer, side)
        said = _witness(access, answer, load, shaped)
        if len(open_sides) == 2:
            said += f", and so does {_lower_witness(access, open_sides['lower'], load)}"
        bound = f"{side} bound" if len(open_sides) == 1 else "bound on either side"
        related = [Related(location_of(model, load.span), f"`{load.text}` is read here")] if load.span else []
        related += [Related(location_of(model, a.span), f"it reaches `{a.pointer}`'s offset here too") for a in also]
        yield ctx.finding(
            location_of(model, access.span),
            f"`{load.text}` is read from memory and reaches the offset of `{access.pointer}`{_also_named(also)} "
            f"with no {bound}: {said}; guard it on both sides or clamp it",
            related=related,
            witness=_counterexample(model, access, load, shaped[0] if shaped is not None else None, answer),
        )


def _also_named(also: list[SymbolicAccess]) -> str:
    """` (and of `K` and `V`)`: the other tensors the same ids reach unbounded."""
    names = list(dict.fromkeys(f"`{a.pointer}`" for a in also))
    if not names:
        return ""
    listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    return f" (and of {listed})"


def _counterexample(
    model: SemanticModel, access: SymbolicAccess, load: Symbol, found: Witness | None, answer: Answer
) -> Counterexample | None:
    """The message's witness as data: the shape, and the id's value by the tensor it is
    read from (the launcher's name for it, else the kernel's pointer)."""
    kernel = model.function(access.function_usr)
    if kernel is None:
        return None
    chosen = found.answer if found is not None else answer
    contract = found.contract if found is not None else None
    ids = witness.tensor_of(model, kernel, load.pointer, contract) or load.pointer
    value = chosen.model.get(load.name, 0)
    return witness.counterexample(model, kernel, chosen, access.symbols, found, values=[(ids, value)] if ids else [])


@dataclass
class _Unbounded:
    """The access a finding is reported at, the witness of each open side, and the later
    accesses of other tensors the same ids reach unbounded (in the finding, not beside it:
    one unchecked `cu_seqlens[b]` reaching Q, K, V and the output is one defect)."""

    access: SymbolicAccess
    open_sides: dict[str, Answer]
    also: list[SymbolicAccess] = field(default_factory=list)


def _unbounded_accesses(model: SemanticModel, seconds: float) -> list[_Unbounded]:
    """One finding per kernel and set of ids: the first access they reach unbounded, with
    the solver's witness for each open side, and the other tensors they reach so (one
    access a tensor; each kernel's queries share its budget)."""
    asked: set[tuple[str, str, frozenset[str]]] = set()
    found: dict[tuple[str, frozenset[str]], _Unbounded] = {}
    written = _global_writes(model)
    for access in model.symbolic_accesses:
        filled = {pointer for pointer, phase in written.get(access.function_usr, ()) if phase < access.phase}
        ids = frozenset(s.name for s in _offset_loads(access) if s.pointer not in filled)
        key = (access.function_usr, access.pointer, ids)
        if access.shared or not ids or key in asked:  # an offset that reads no id: KC406's
            continue
        open_sides = _unbounded_sides(access, model.solver_budget(access.function_usr, seconds))
        if not open_sides:
            continue
        asked.add(key)
        first = found.get((access.function_usr, ids))
        if first is None:
            found[(access.function_usr, ids)] = _Unbounded(access, open_sides)
        else:
            first.also.append(access)
    return list(found.values())


def _offset_loads(access: SymbolicAccess) -> list[Symbol]:
    """The integers read from memory that the access's offset names (not those only its
    guards name: an id that only opens the path does not move the offset)."""
    in_offset = set(symbol_names(access.offset))
    return [s for s in access.symbols if s.kind is SymbolKind.LOAD and s.name in in_offset]


def _global_writes(model: SemanticModel) -> dict[str, list[tuple[str, int]]]:
    """Each kernel's writes to global memory: (pointer, barrier interval). An integer the
    kernel reads back from a buffer it wrote before a barrier (a prefix sum it computed) is
    its own result, not an id its caller passes."""
    writes: dict[str, list[tuple[str, int]]] = {}
    for access in model.symbolic_accesses:
        if access.is_write and not access.shared and access.pointer:
            writes.setdefault(access.function_usr, []).append((access.pointer, access.phase))
    return writes


def _unbounded_sides(access: SymbolicAccess, budget: Budget) -> dict[str, Answer]:
    """The witness of each side ("upper", "lower", in this order) the ids alone can drive
    the offset out of: the ids in the offset, as an id that only opens the path (`if (slot
    < 0) out[row] = 0;`) is not what takes the offset out."""
    world = _world(access.symbols)
    loads = [Term("sym", name=s.name) for s in access.symbols if s.kind is SymbolKind.LOAD]
    offset_loads = [Term("sym", name=s.name) for s in _offset_loads(access)]
    computed = (*access.guards, access.offset)
    base = [
        *world,
        *access.guards,
        *solver.divides_by_nonzero(computed),
        *solver.loaded_sizes_positive(computed, (t.name for t in loads)),
    ]
    sides: list[tuple[str, Term, list[Term]]] = [
        (
            "upper",
            Term("<=", (Term("const", value=FAR), access.offset)),
            [c for t in offset_loads for c in within(t, 0, SMALL)],
        ),
        ("lower", Term("<", (access.offset, _ZERO)), [Term("<=", (_ZERO, t)) for t in offset_loads]),
    ]
    if _tests_a_sentinel((*access.guards, access.offset), {t.name for t in loads}):
        sides = sides[:1]  # `id != -1`: the only negative value the caller passes is handled
    open_sides: dict[str, Answer] = {}
    for (side, out_of_range, ids_tame), typical in zip(sides, (FAR, -1)):
        # a witness in the first thread, block and iteration first: a linear query, quick
        answer = _readable(access, [*base, out_of_range], typical, budget) or solver.check(
            [*base, out_of_range], budget
        )
        if answer.outcome is not Outcome.SAT:
            continue
        if solver.check([*base, out_of_range, *ids_tame], budget).outcome is Outcome.UNSAT:
            open_sides[side] = answer
    return open_sides


def _tests_a_sentinel(terms: tuple[Term, ...], ids: set[str]) -> bool:
    """Whether a guard (or a `?:` in the offset) compares an id with a negative constant for
    (in)equality: the code knows the negative marker its callers use (`slot != kPadSlot`,
    `if (id == -1) return;`, `valid ? id : 0`)."""
    pending = list(terms)
    while pending:
        term = pending.pop()
        negative = any(a.op == "const" and a.value < 0 for a in term.args)
        if term.op in ("==", "!=") and negative and any(mentions(a, ids) for a in term.args):
            return True
        pending.extend(term.args)
    return False


def _readable(access: SymbolicAccess, constraints: list[Term], typical: int, budget: Budget) -> Answer | None:
    """A witness in the first thread, block and loop iteration, with the ids at `typical`
    (past any small extent, or the padding marker -1), where the guards allow one."""
    pinned = [
        Term("==", (Term("sym", name=s.name), Term("const", value=typical if s.kind is SymbolKind.LOAD else 0)))
        for s in access.symbols
        if s.kind in (SymbolKind.LOAD, SymbolKind.THREAD, SymbolKind.BLOCK, SymbolKind.LOOP)
    ]
    answer = solver.check([*constraints, *pinned], budget)
    return answer if answer.outcome is Outcome.SAT else None


def _world(symbols: tuple[Symbol, ...]) -> list[Term]:
    """The launch's guarantees, each symbol within its type, and every value but the ids
    and loop counters small."""
    constraints = launch_constraints(symbols)
    for symbol in symbols:
        variable = Term("sym", name=symbol.name)
        if symbol.kind in _SMALL_KINDS:
            constraints += within(variable, 0, SMALL)
        elif symbol.kind in (SymbolKind.LOAD, SymbolKind.LOOP):
            constraints += within(variable, symbol.low, symbol.high)
    return constraints


def _culprit(access: SymbolicAccess, answer: Answer, side: str) -> Symbol:
    """The id the witness takes past the side: on the upper side the largest, on the lower
    the most negative (`seq_order[t]` = -1 takes the row below zero, not the task id 255
    beside it, which its own guard keeps in range)."""

    def value(load: Symbol) -> int:
        return answer.model.get(load.name, 0)

    loads = _offset_loads(access)
    return max(loads, key=value) if side == "upper" else min(loads, key=value)


def _in_contract(
    model: SemanticModel, access: SymbolicAccess, side: str, budget: Budget
) -> tuple[Witness, str, tuple[Term, ...]] | None:
    """The smallest shape a launch's contract allows for which the id takes the offset
    past the indexed tensor's elements (its matcher dims multiplied) or below zero, with
    the tensor and its dims; None where no launch in the file gives the kernel's values."""
    kernel = model.function(access.function_usr)
    if kernel is None:
        return None
    for binding in witness.bindings(model, kernel, access.symbols):
        extent = witness.tensor_extent(model, kernel, access.pointer, binding.contract) if binding is not None else None
        if binding is None or extent is None:
            continue
        tensor, dims = extent
        elements = functools.reduce(lambda a, b: Term("*", (a, b)), dims)
        outside = Term("<=", (elements, access.offset)) if side == "upper" else Term("<", (access.offset, _ZERO))
        world = [
            *launch_constraints(access.symbols),
            *_typed(access.symbols),
            *binding.constraints,
            *binding.fits,
            *access.guards,
        ]
        # the ids as small as they go after the sizes: the first value past the end, or -1
        chosen = (*binding.inputs, *(s for s in access.symbols if s.kind is SymbolKind.LOAD))
        for pinned in (witness.first_iteration(access), []):  # the first thread, block and iteration when it can be
            answer = witness.smallest([*world, *pinned, outside], chosen, budget)
            if answer.outcome is Outcome.SAT:
                return Witness(answer, binding.shown(*dims), binding.contract), tensor, dims
    return None


def _typed(symbols: tuple[Symbol, ...]) -> list[Term]:
    """Ids and loop counters within their types."""
    return [
        c
        for s in symbols
        if s.kind in (SymbolKind.LOAD, SymbolKind.LOOP)
        for c in within(Term("sym", name=s.name), s.low, s.high)
    ]


def _lower_witness(access: SymbolicAccess, answer: Answer, upper: Symbol) -> str:
    """`-1`, or `ids[j]` = -1 at blockIdx.x = 0 where another id is the culprit: the lower
    side's witness beside the upper side's."""
    load = _culprit(access, answer, "lower")
    value = answer.model.get(load.name, 0)
    if load == upper:
        return str(value)
    at = witness.where(access.symbols, answer)
    return f"`{load.text}` = {value}{f' at {at}' if at else ''}"


def _witness(
    access: SymbolicAccess, answer: Answer, load: Symbol, shaped: tuple[Witness, str, tuple[Term, ...]] | None
) -> str:
    if shaped is not None:
        found, tensor, dims = shaped
        answer = found.answer
    values = answer.model
    at = witness.where(access.symbols, answer)
    said = f"`{load.text}` = {values.get(load.name, 0)}{f' at {at}' if at else ''} passes every guard on the path"
    if shaped is None:
        return said
    shape = ", ".join(render_dim(d) for d in dims)
    return f"for {found.shape()} (`{tensor}` is [{shape}]), {said}"
