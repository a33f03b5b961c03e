"""## What it does
Flags a block-wide barrier -- `__syncthreads()` (and its `_count`/`_and`/`_or` forms), or a
call of a device function that reaches one, such as `device::cta::reduce_sum` -- that some
threads of a block reach and others of the same block do not: it sits in a branch of an `if`
whose condition can hold for one thread and fail for another, or comes after an early
`return` (`continue`, `break`) that some threads of the block take and others do not
(`if (i >= n) return; ... __syncthreads();`).

In a kernel the check is a proof over two symbolic threads of one block (solver.py, z3), as
for KC402: the conditions of the `if`s and `?:`s around the barrier become terms over the
thread index, the block and grid dimensions, the block index, the kernel's scalar and
compile-time arguments and the loop counters (taken the same for both threads: the block
runs a loop's iterations together), and the solver looks for a block shape and two threads
of one block for which the conditions hold for one and not for the other. The message gives
the witness: the two threads and the block shape. A condition the solver proves the same
for every thread of the block is not flagged -- one over `blockIdx`, scalar arguments,
template constants or `if constexpr`, or over the thread index where every thread of any
block passes it (`threadIdx.x < blockDim.x`). Nor are loop conditions. A lambda's body
runs where it is called: a call of a local lambda that reaches a barrier (`auto step = [&]
{ ...; __syncthreads(); };` then `if (lane < n) step();`) is one, and a barrier in a branch
of the lambda's own body is judged by the branch's shape (below).

An early exit counts only where a launch of the kernel in the file gives its contract (the
launcher's grid, block and arguments from its `TensorMatcher` sizes and `RuntimeCheck`s,
as for KC112's witness): the message then names the smallest sizes for which some threads
of a block leave and others reach the barrier ("for N = 1"). A kernel the file does not
launch is checked with its early exits taken to hold for both threads. The contract also
decides branches: a condition that no launch in the file lets diverge is not flagged.

Where the solver cannot answer within the kernel's budget (`solver-budget`), or a condition
names a value the walk does not follow (a value read from memory or shared memory, a call's
result, a local assigned after its declaration), and in device functions, the check falls
back to the branch's shape: a barrier inside a branch of an `if` whose condition reads the
thread's index (`threadIdx`, a lane or warp index helper such as `get_lane_id()`, or a local
variable initialized from one) is flagged, and an early exit is not.

Also not flagged: a split of the block into two groups whose barriers pair up by count -- a
thread-dependent branch that issues N `__syncthreads()` as plain statements and then
`return`s, followed by code that issues exactly N plain `__syncthreads()` itself (one group
fills a buffer while the other works, and both arrive at each barrier in turn); the
barriers after a branch that synchronizes and leaves are judged by that branch's own.

## Why is this bad?
Every thread of the block must reach the same `__syncthreads()`: the CUDA programming guide
leaves a barrier in code that does not evaluate identically across the block undefined.
When only the threads that take one side of a branch arrive, the block hangs, or the
barrier releases early and shared memory is read before it is written; the threads that
returned early never write their part of the shared buffer the others read after the
barrier. A `cta::` reduction synchronizes internally, so calling it from a subset of the
block has the same effect.

## Example
```cpp
if (threadIdx.x < num_valid) {
  smem[threadIdx.x] = src[threadIdx.x];
  __syncthreads();
}
```

## Use instead
```cpp
if (threadIdx.x < num_valid) {
  smem[threadIdx.x] = src[threadIdx.x];
}
__syncthreads();
```
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from kernel_check import solver, witness
from kernel_check.finding import Counterexample, Finding, Related
from kernel_check.model import DivergentBarrier, Function, Span, Symbol, SymbolicBarrier, SymbolKind, Term
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._common import location_of
from kernel_check.rules._two_threads import second_copies, threads_of
from kernel_check.semantic import SemanticModel
from kernel_check.solver import (
    AXES,
    Answer,
    Budget,
    Outcome,
    block_axes,
    launch_constraints,
    renamed,
    thread_symbols,
    within,
)
from kernel_check.witness import Binding, Witness

_UNFOLLOWED = (SymbolKind.LOAD, SymbolKind.OPAQUE, SymbolKind.ADDRESS)  # a null test: as tuned, the branch shape
_ONE = Term("const", value=1)

_Key = tuple[int, int]


@dataclass(frozen=True)
class _Divergent:
    """A barrier the solver shows some threads of a block miss: its witness, the
    constraints it holds under, and the values to make as small as they go (the launcher's
    sizes under a launch's contract, else the block, its index and the scalars)."""

    barrier: SymbolicBarrier
    answer: Answer
    constraints: list[Term]
    binding: Binding | None
    inputs: tuple[Symbol, ...]


@rule("KC170", needs={Need.THREADS, Need.SYMBOLIC, Need.CONTRACTS, Need.SOLVER})
def check(model: SemanticModel, ctx: RuleContext) -> list[Finding]:
    seconds = float(ctx.options.get("solver-budget", 2.0))
    shapes = {_key(b.span): b for b in model.divergent_barriers}
    decided: set[_Key] = set()
    divergent: list[_Divergent] = []
    for barrier in model.symbolic_barriers:
        shape = shapes.get(_key(barrier.span))
        kernel = model.function(barrier.function_usr)
        if (shape is not None and shape.matched_by_rest) or kernel is None:
            continue  # every thread reaches the same number of barriers (see the doc page)
        verdict = _divergence(model, kernel, barrier, model.solver_budget(kernel.usr, seconds))
        if verdict is Outcome.UNKNOWN:
            continue  # the solver cannot tell: the branch's shape decides
        decided.add(_key(barrier.span))
        if isinstance(verdict, _Divergent):
            divergent.append(verdict)
    fallback = [s for s in model.divergent_barriers if _key(s.span) not in decided and not s.matched_by_rest]
    # the smallest sizes after every rule's decisions, with what the kernel's budget has left
    ctx.defer(lambda: _reported(model, ctx, divergent, fallback, shapes, seconds))
    return []


def _reported(
    model: SemanticModel,
    ctx: RuleContext,
    divergent: list[_Divergent],
    fallback: list[DivergentBarrier],
    shapes: dict[_Key, DivergentBarrier],
    seconds: float,
) -> Iterator[Finding]:
    for found in divergent:
        barrier = found.barrier
        budget = model.solver_budget(barrier.function_usr, seconds)
        # the deciding check's answer (SAT) is where the search for smaller sizes starts
        answer = witness.smallest(found.constraints, found.inputs, budget, found.answer)
        shown = Witness(answer, found.binding.shown(), found.binding.contract) if found.binding is not None else None
        how = _witness(barrier, answer, shown)
        kernel = model.function(barrier.function_usr)
        data = witness.counterexample(model, kernel, answer, barrier.symbols, shown) if kernel is not None else None
        yield _finding(model, ctx, barrier.span, barrier.barrier, how, shapes.get(_key(barrier.span)), data)
    for shape in fallback:
        yield _finding(model, ctx, shape.span, shape.barrier, f"on '{shape.source}'", shape)


def _key(span: Span) -> _Key:
    return span.start, span.end


def _finding(
    model: SemanticModel,
    ctx: RuleContext,
    span: Span,
    barrier: str,
    how: str,
    shape: DivergentBarrier | None,
    data: Counterexample | None = None,
) -> Finding:
    synchronizes = "" if barrier.startswith("__syncthreads") else ", which synchronizes the block,"
    related = [Related(location_of(model, shape.condition), "the thread-dependent condition")] if shape else []
    return ctx.finding(
        location_of(model, span),
        f"`{barrier}`{synchronizes} is reached by only some threads of the block {how}; "
        f"move the barrier where every thread of the block reaches it",
        related=related,
        witness=data,
    )


def _divergence(
    model: SemanticModel, kernel: Function, barrier: SymbolicBarrier, budget: Budget
) -> _Divergent | Outcome:
    """Two threads of one block, one reaching the barrier and the other not (the witness);
    UNSAT when every thread of any block the contract allows reaches it; UNKNOWN when the
    solver cannot tell."""
    if any(s.kind in _UNFOLLOWED for s in barrier.symbols):
        return Outcome.UNKNOWN
    if not any(s.kind is SymbolKind.THREAD for s in barrier.symbols):
        return Outcome.UNSAT  # the same for every thread of the block
    threads = thread_symbols()
    bound = list(witness.bindings(model, kernel, [*threads, *barrier.symbols]))
    if bound and all(b is not None for b in bound):
        guards = _one_of_two((*barrier.branches, *barrier.exits))
        for binding in bound:
            if binding is None:
                continue
            constraints = [*_world(barrier), *binding.constraints, *binding.fits, *guards]
            answer = solver.check(constraints, budget)
            if answer.outcome is Outcome.SAT:
                return _Divergent(barrier, answer, constraints, binding, binding.inputs)
            if answer.outcome is Outcome.UNKNOWN:
                return Outcome.UNKNOWN
        return Outcome.UNSAT
    # no launch in the file gives the kernel's values: any block, early exits taken by neither thread
    exits = [*barrier.exits, *(renamed(g, _COPIES) for g in barrier.exits)]
    constraints = [*_world(barrier), *exits, *_one_of_two(barrier.branches)]
    answer = solver.check(constraints, budget)
    if answer.outcome is not Outcome.SAT:
        return answer.outcome
    block = tuple(Symbol(f"blockDim.{a}", SymbolKind.BLOCK_DIM, f"blockDim.{a}", 1, 1024) for a in AXES)
    inputs = (*block, *(s for s in barrier.symbols if s.kind in (SymbolKind.BLOCK, SymbolKind.SCALAR)))
    return _Divergent(barrier, answer, constraints, None, inputs)


_COPIES = second_copies()  # the second thread's copy of the thread index
_NAMED = (SymbolKind.BLOCK, SymbolKind.SCALAR, SymbolKind.UNIFORM)  # the values a witness names


def _world(barrier: SymbolicBarrier) -> list[Term]:
    """Two threads of one block (the block one-dimensional where the kernel indexes with
    `threadIdx.x` alone), every other symbol shared and within its type."""
    threads = thread_symbols()
    second = [Symbol(_COPIES[s.name], s.kind, s.text, s.low, s.high) for s in threads]
    constraints = launch_constraints([*threads, *second, *barrier.symbols])
    axes = block_axes(barrier.symbols)
    constraints += [Term("==", (Term("sym", name=f"blockDim.{a}"), _ONE)) for a in AXES[len(axes) :]]
    for symbol in barrier.symbols:
        if symbol.kind in (SymbolKind.SCALAR, SymbolKind.LOOP):
            constraints += within(Term("sym", name=symbol.name), symbol.low, symbol.high)
    return constraints


def _one_of_two(guards: tuple[Term, ...]) -> list[Term]:
    """The guards hold for the first thread and fail for the second (on a branch with no
    guard, nothing tells the threads apart: no answer)."""
    both = Term("and", guards) if guards else Term("not", (_ONE,))
    return [both, Term("not", (renamed(both, _COPIES),))]


def _witness(barrier: SymbolicBarrier, answer: Answer, shown: Witness | None) -> str:
    """`(thread (0, 0, 0) reaches it, thread (1, 0, 0) of the same block of (2, 1, 1) does
    not, for N = 1)`; the calls' results the block shares are named too (`at op.tile() = 4`)."""
    values = answer.model
    first, second, block = threads_of(answer)
    said = f"(thread {first} reaches it, thread {second} of the same block of {block} does not"
    named = [s for s in barrier.symbols if s.kind in _NAMED and s.name in values]
    if shown is not None and shown.inputs:
        said += f", for {shown.shape()}"
        named = [s for s in named if s.kind is SymbolKind.UNIFORM]  # the launch gives the others
    if named:
        said += ", at " + ", ".join(f"{s.text} = {values[s.name]}" for s in named)
    return said + ")"
