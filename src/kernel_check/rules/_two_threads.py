"""Two symbolic threads of one block that reach two shared accesses at one element: the
query behind KC402 (two writes) and KC404 (a write and a read), and its witness."""

from __future__ import annotations

from collections.abc import Iterable

from kernel_check import solver, witness
from kernel_check.clang.symbolic import mentions, symbol_names
from kernel_check.finding import Counterexample
from kernel_check.model import Symbol, SymbolicAccess, SymbolKind, Term
from kernel_check.semantic import SemanticModel
from kernel_check.solver import (
    AXES,
    MAX_THREADS_PER_BLOCK,
    Answer,
    Budget,
    Outcome,
    block_axes,
    launch_constraints,
    renamed,
    substituted,
    thread_symbols,
    triple,
    within,
)

SCALAR_HIGH = 65536
SECOND = "t2:"  # the prefix of the second thread's copies of its index and loop counters
ELEMENT = "race:element"  # the element both accesses reach, for the witness
PER_THREAD = (SymbolKind.THREAD, SymbolKind.LOOP)
_SHOWN = (SymbolKind.SCALAR, SymbolKind.UNIFORM)  # the values a witness names
_AXIAL = (SymbolKind.THREAD, SymbolKind.BLOCK_DIM)  # the symbols that name an axis of the block
WARP_SIZE = 32


def second_copies(*accesses: SymbolicAccess) -> dict[str, str]:
    """The second thread's names for the thread index and the loop counters `accesses` name."""
    return {s.name: SECOND + s.name for s in (*thread_symbols(), *_symbols(accesses)) if s.kind in PER_THREAD}


def meet(first: SymbolicAccess, second: SymbolicAccess, budget: Budget, extra: Iterable[Term] = ()) -> Answer | None:
    """Two distinct threads (the witness), the first reaching `first` and the second reaching
    `second` at one element, when any do under `extra` too (over the second thread's copies,
    `second_copies`)."""
    axes = _spanned(first, second)
    threads = thread_symbols()
    copies = second_copies(second)
    copied = [
        Symbol(copies[s.name], s.kind, s.text, s.low, s.high) for s in (*threads, *second.symbols) if s.name in copies
    ]
    shared = [s for s in second.symbols if s.name not in copies]  # the block's: its index, the arguments
    constraints = [*launch_constraints([*threads, *first.symbols, *shared, *copied]), *_scalars(first, second)]
    constraints += [c for a in AXES[len(axes) :] for c in _flat(a, copies)]
    constraints += [_at_most_a_block(limit) for limit in {first.block_limit, second.block_limit} if limit is not None]
    constraints.append(_at_most_a_block())
    constraints += [*first.guards, *(renamed(g, copies) for g in second.guards)]
    constraints += [*first.in_rows, *(renamed(g, copies) for g in second.in_rows)]
    constraints += reaches(first.offset, first.width, second.width)
    constraints += reaches(renamed(second.offset, copies), second.width, first.width)
    distinct = [Term("!=", (_thread(a), _thread(a, copies))) for a in axes]
    constraints.append(Term("or", tuple(distinct)) if len(distinct) > 1 else distinct[0])
    constraints += [*extra, *no_division_by_zero(first, second)]
    answer = solver.check(constraints, budget)
    return answer if answer.outcome is Outcome.SAT else None


def _spanned(*accesses: SymbolicAccess) -> tuple[str, ...]:
    """The axes the block spans (`solver.block_axes`), up to the last one the accesses name:
    two threads apart along an axis past it (z, where the code names `threadIdx.x` and
    `threadIdx.y` alone) would reach every element alike, which a block the code was
    written for does not have."""
    axes = block_axes(_symbols(accesses))
    named = [a for a in axes if any(s.name.endswith(f".{a}") for s in _symbols(accesses) if s.kind in _AXIAL)]
    return axes[: AXES.index(named[-1]) + 1] if named else axes[:1]


def no_division_by_zero(*accesses: SymbolicAccess) -> list[Term]:
    """Each divisor the whole block shares (`kItems / 8` of a template's count) is not zero: a
    count that makes it zero is no instantiation the kernel can run (every thread divides by
    it), and z3 lets `x / 0` be anything -- a witness of garbage."""
    per_thread = {s.name for a in accesses for s in a.symbols if s.kind in PER_THREAD}
    per_thread.update(t.name for t in thread_symbols())
    terms = [t for a in accesses for t in (a.offset, *a.guards)]
    shared = {d for d in solver.divisors(terms) if not mentions(d, per_thread)}
    return [Term("!=", (d, Term("const", value=0))) for d in shared]


def covers(offset: Term, width: int, element: Term) -> list[Term]:
    """An access at `offset` covering `width` elements (`SymbolicAccess.width`) reaches `element`."""
    if width == 1:
        return [Term("==", (element, offset))]
    return [Term("<=", (offset, element)), Term("<", (element, Term("+", (offset, Term("const", value=width)))))]


def reaches(offset: Term, width: int, other_width: int) -> list[Term]:
    """An access at `offset` covering `width` elements reaches the witness's `ELEMENT`, which
    an access of `other_width` reaches too. Two of one width meet at their first element: a
    vector access is aligned to its own size (a misaligned `float4` faults), so two `float4`s
    overlap only where they coincide -- which z3 decides as readily as for scalars, where
    the ranges of a strided loop's `float4`s (`i += blockDim.x * 8`) leave it guessing."""
    element = Term("sym", name=ELEMENT)
    return [Term("==", (element, offset))] if width == other_width else covers(offset, width, element)


def bound_launches(model: SemanticModel, accesses: list[SymbolicAccess]) -> list[tuple[Term, ...]]:
    """What each launch of the accesses' kernel in the file gives it: its block, grid and
    scalar arguments, bound to the launcher's contract ([] when no launch in view gives
    them all)."""
    kernel = model.function(accesses[0].function_usr)
    symbols = [*thread_symbols(), *(s for a in accesses for s in a.symbols)]
    bound = [b for b in witness.bindings(model, kernel, symbols) if b is not None] if kernel is not None else []
    return [(*b.constraints, *b.fits) for b in bound]


def same_iteration(access: SymbolicAccess) -> list[Term]:
    """Both threads at one iteration of each loop around `access` that reaches a barrier:
    between two of its barriers the whole block runs one iteration."""
    return [Term("==", (Term("sym", name=name), Term("sym", name=SECOND + name))) for name in access.lockstep]


def strided_blocks(*accesses: SymbolicAccess) -> list[Term]:
    """The blocks the accesses' offsets were written for: where a thread index is added to a
    per-thread count of a stride the whole block shares (`threadIdx.x + k * kBlockSize` of a
    block-stride loop, `ty * bdx + tx` of a tile laid out by hand), the last thread along
    that axis stays below the stride. The code partitions the array by that stride for a
    block no wider, which its launch gives it (`kBlockSize` threads, often out of sight): a
    wider block is not one to find a witness in. A stride along x of a warp or less is a
    warp's lanes', not a block's (`i += 32` from `threadIdx.x` overlaps in a block of two
    warps)."""
    per_thread = {s.name for a in accesses for s in a.symbols if s.kind in PER_THREAD}
    per_thread.update(t.name for t in thread_symbols())
    bounds: list[Term] = []
    for access in accesses:
        for total in _nodes(access.offset):
            parts = _summands(total) if total.op == "+" else []
            strides = [stride for part in parts if (stride := _stride(part, per_thread)) is not None]
            for part in parts:
                axis = _thread_axis(part, per_thread)
                if axis is None:
                    continue
                last = substituted(part, {f"threadIdx.{axis}": Term("-", (_dimension(axis), Term("const", value=1)))})
                lanes = [s for s in strides if axis == AXES[0] and s.op == "const" and s.value <= WARP_SIZE]
                bounds += [Term("<", (last, stride)) for stride in strides if stride not in lanes]
    return bounds


def _nodes(term: Term) -> list[Term]:
    return [term, *(node for arg in term.args for node in _nodes(arg))]


def _summands(term: Term) -> list[Term]:
    return [part for arg in term.args for part in _summands(arg)] if term.op == "+" else [term]


def _stride(part: Term, per_thread: set[str]) -> Term | None:
    """`F` of a summand `X * F` whose `X` differs from thread to thread and whose `F` the
    whole block shares (None for another summand)."""
    if part.op != "*":
        return None
    for count, stride in (part.args, tuple(reversed(part.args))):
        if mentions(count, per_thread) and not mentions(stride, per_thread):
            return stride
    return None


def _thread_axis(part: Term, per_thread: set[str]) -> str | None:
    """The axis of the one thread index a summand names, when it names no other per-thread value."""
    named = {name for name in symbol_names(part) if name in per_thread}
    axis = next(iter(named)).removeprefix("threadIdx.") if len(named) == 1 else ""
    return axis if axis in AXES else None


def _dimension(axis: str) -> Term:
    return Term("sym", name=f"blockDim.{axis}")


def different_warps() -> Term:
    """The two threads are of different warps (of 32 threads, by linear index in the block)."""
    return Term("!=", (_warp(), _warp(second_copies())))


def given(answer: Answer, *accesses: SymbolicAccess) -> str:
    """The witness's scalar arguments and calls' results the accesses name, and the pointers
    whose null test they follow: `, n = 4, op.GetTileIdx() = 0, scale = nullptr` ("" when none)."""
    values = answer.model
    shown = {s.text: str(values.get(s.name, 0)) for s in _symbols(accesses) if s.kind in _SHOWN}
    for symbol in _symbols(accesses):
        if symbol.kind is SymbolKind.ADDRESS:
            shown[symbol.text] = "nullptr" if values.get(symbol.name, 0) == 0 else "a tensor"
    return "".join(f", {name} = {value}" for name, value in sorted(shown.items()))


def threads_of(answer: Answer) -> tuple[str, str, str]:
    """The witness's first thread, second thread and block shape, each as `(x, y, z)`."""
    values = answer.model
    return (
        triple(values, "threadIdx.", 0),
        triple(values, SECOND + "threadIdx.", 0),
        triple(values, "blockDim.", 1),
    )


def counterexample(model: SemanticModel, answer: Answer, *accesses: SymbolicAccess) -> Counterexample | None:
    """The witness as data: the kernel, the first thread and the block's shape."""
    kernel = model.function(accesses[0].function_usr)
    return witness.counterexample(model, kernel, answer, _symbols(accesses)) if kernel is not None else None


def _symbols(accesses: Iterable[SymbolicAccess]) -> list[Symbol]:
    return [s for a in accesses for s in a.symbols]


def _scalars(*accesses: SymbolicAccess) -> list[Term]:
    """Scalar arguments as the contract plausibly allows them."""
    constraints: list[Term] = []
    for symbol in {s for a in accesses for s in a.symbols}:
        if symbol.kind is SymbolKind.SCALAR:
            constraints += within(Term("sym", name=symbol.name), 1, SCALAR_HIGH)
    return constraints


def _flat(axis: str, copies: dict[str, str]) -> list[Term]:
    """The block does not span `axis`: one thread along it, index 0 for both threads."""
    zero, one = Term("const", value=0), Term("const", value=1)
    thread = f"threadIdx.{axis}"
    return [
        Term("==", (Term("sym", name=thread), zero)),
        Term("==", (Term("sym", name=copies[thread]), zero)),
        Term("==", (Term("sym", name=f"blockDim.{axis}"), one)),
    ]


def _at_most_a_block(limit: Term | None = None) -> Term:
    """At most `limit` threads a block (the kernel's `__launch_bounds__`; 1024, CUDA's limit,
    by default), over its three dimensions together."""
    x, y, z = (Term("sym", name=f"blockDim.{a}") for a in AXES)
    return Term("<=", (Term("*", (Term("*", (x, y)), z)), limit or Term("const", value=MAX_THREADS_PER_BLOCK)))


def _warp(copies: dict[str, str] | None = None) -> Term:
    x, y, z = (_thread(a, copies) for a in AXES)
    width, height = (Term("sym", name=f"blockDim.{a}") for a in AXES[:2])
    linear = Term("+", (x, Term("*", (width, Term("+", (y, Term("*", (height, z))))))))
    return Term("/", (linear, Term("const", value=WARP_SIZE)))


def _thread(axis: str, copies: dict[str, str] | None = None) -> Term:
    name = f"threadIdx.{axis}"
    return Term("sym", name=(copies or {}).get(name, name))
