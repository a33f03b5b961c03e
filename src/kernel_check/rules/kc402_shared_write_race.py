"""## What it does
Flags two writes into the same `__shared__` array -- or one write executed by two threads --
that two distinct threads of one block can make to the same element with no block-wide
barrier between them: `smem[threadIdx.x / 2] = v`, `smem[0] = v` with no `threadIdx.x == 0`
guard, `smem[lane] = v` from every warp of the block.

The check is a proof over two symbolic threads (solver.py, z3), in the manner of GPUVerify
and Faial: each write's offset and the guards on its path become terms over the thread
index, the launch's dimensions, the kernel's scalar arguments and loop counters; the
second thread gets its own copy of the thread index and loop counters, and the solver
looks for two distinct threads whose guards both hold and whose offsets are equal. Writes
count as between the same barriers when no `__syncthreads()` (or call that reaches one,
or call or inline assembly that might be one) comes between them in the body; a write in a
loop that reaches a barrier is not checked. The message gives the witness: the two threads
and the block shape. A kernel that indexes with `threadIdx.x` alone is taken to run
one-dimensional blocks; scalar arguments are taken between 1 and 65536. A query the
solver cannot answer within the kernel's budget (`solver-budget`, default 2 s) is never a
finding, nor is a write whose offset or guards read memory or call a function the walk
does not follow, nor one through a cast to another element type or into a two-dimensional
array. One write made by two threads is reported only when the value it stores
may differ between them (it reads the thread index and calls no function): all lanes
storing their warp's reduced value, or every thread setting one flag, leave the same
result whichever runs last.

## Why is this bad?
Which of the two values the element holds after the barrier depends on the order the
hardware happened to run the threads in: the result changes from run to run, and
`compute-sanitizer --tool racecheck` reports a write-after-write hazard.

## Example
```cpp
__global__ void pair_sum(float* out, const float* in) {
  __shared__ float partial[128];
  partial[threadIdx.x / 2] = in[blockIdx.x * blockDim.x + threadIdx.x];
  __syncthreads();
  if (threadIdx.x < 128) out[blockIdx.x * 128 + threadIdx.x] = partial[threadIdx.x];
}
```

## Use instead
```cpp
__global__ void pair_sum(float* out, const float* in) {
  __shared__ float partial[128];
  if (threadIdx.x % 2 == 0) {
    const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    partial[threadIdx.x / 2] = in[i] + in[i + 1];
  }
  __syncthreads();
  if (threadIdx.x < 128) out[blockIdx.x * 128 + threadIdx.x] = partial[threadIdx.x];
}
```
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import combinations_with_replacement

from kernel_check import solver
from kernel_check.finding import Finding, Related
from kernel_check.model import Symbol, SymbolicAccess, SymbolKind, Term
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._common import location_of
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
    triple,
    within,
)

SCALAR_HIGH = 65536
MAX_WRITES = 32  # shared writes per kernel compared pairwise
_PER_THREAD = (SymbolKind.THREAD, SymbolKind.LOOP)
_SECOND = "t2:"


@rule("KC402", needs={Need.SYMBOLIC})
def check(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    seconds = float(ctx.options.get("solver-budget", 2.0))
    writes: dict[str, list[SymbolicAccess]] = {}
    for access in model.symbolic_accesses:
        if access.shared and access.is_write and access.followed and not access.in_barrier_loop:
            writes.setdefault(access.function_usr, []).append(access)
    for kernel, kernel_writes in writes.items():
        budget = model.solver_budget(kernel, seconds)
        reported: set[int] = set()
        for first, second in combinations_with_replacement(kernel_writes[:MAX_WRITES], 2):
            if first.pointer != second.pointer or first.phase != second.phase or id(second) in reported:
                continue
            if first is second and not first.value_varies:  # every thread stores the same value
                continue
            answer = _race(first, second, budget)
            if answer is None:
                continue
            reported.add(id(second))
            yield ctx.finding(
                location_of(model, second.span),
                f"two threads write the same element of `{second.pointer}` with no barrier between: "
                f"{_witness(answer)}; give each thread its own element or guard the write to one thread",
                related=[] if first is second else [Related(location_of(model, first.span), "the other write")],
            )


def _race(first: SymbolicAccess, second: SymbolicAccess, budget: Budget) -> Answer | None:
    """The two threads (the witness) that reach both writes at one element, when any do."""
    axes = block_axes([*first.symbols, *second.symbols])
    threads = thread_symbols()
    copies = {s.name: _SECOND + s.name for s in (*threads, *second.symbols) if s.kind in _PER_THREAD}
    copied = [
        Symbol(copies[s.name], s.kind, s.text, s.low, s.high) for s in (*threads, *second.symbols) if s.name in copies
    ]
    constraints = [*launch_constraints([*threads, *first.symbols, *copied]), *_scalars(first, second)]
    constraints += [c for a in AXES[len(axes) :] for c in _fixed(f"threadIdx.{a}", copies)]
    constraints += [*first.guards, *(renamed(g, copies) for g in second.guards)]
    constraints.append(Term("==", (first.offset, renamed(second.offset, copies))))
    distinct = [Term("!=", (_thread(a), _thread(a, copies))) for a in axes]
    constraints.append(Term("or", tuple(distinct)) if len(distinct) > 1 else distinct[0])
    answer = solver.check(constraints, budget)
    return answer if answer.outcome is Outcome.SAT else None


def _scalars(*accesses: SymbolicAccess) -> list[Term]:
    """Scalar arguments as the contract plausibly allows them; loop counters within their type."""
    constraints: list[Term] = []
    for symbol in {s for a in accesses for s in a.symbols}:
        if symbol.kind is SymbolKind.SCALAR:
            constraints += within(Term("sym", name=symbol.name), 1, SCALAR_HIGH)
    return constraints


def _fixed(name: str, copies: dict[str, str]) -> list[Term]:
    zero = Term("const", value=0)
    return [Term("==", (Term("sym", name=name), zero)), Term("==", (Term("sym", name=copies[name]), zero))]


def _thread(axis: str, copies: dict[str, str] | None = None) -> Term:
    name = f"threadIdx.{axis}"
    return Term("sym", name=(copies or {}).get(name, name))


def _witness(answer: Answer) -> str:
    values = answer.model
    first, second = triple(values, "threadIdx.", 0), triple(values, _SECOND + "threadIdx.", 0)
    return f"threads {first} and {second} of a block of {triple(values, 'blockDim.', 1)}"
