"""## What it does
Flags a read of a `__shared__` element that another thread of the block writes with no
block-wide barrier between the two, in either order: a thread reads its neighbour's slot
(`tile[threadIdx.x + 1]`) right after every thread stored its own, every thread reads a
value thread 0 stores (`if (threadIdx.x == 0) s_scale = ...; use(s_scale)`) before the
`__syncthreads()` that should come between, or a thread reads an element that another
thread is about to overwrite in the same interval.

The check is a proof over two symbolic threads (solver.py, z3), as KC402's: the write's
and the read's offsets and the guards on their paths become terms over the thread index,
the block's dimensions, the kernel's scalar arguments and loop counters, each thread with
its own index and loop counters, and the solver looks for two distinct threads of one
block, of different warps, the first reaching the write and the second the read at the
same element. Two lanes of one warp are not compared: warp-synchronous code orders them
with `__syncwarp()` or shuffles, often inside a helper the walk does not see into. A write
and a read count as between the same barriers when no `__syncthreads()` -- nor
`__syncwarp()`, a shuffle, a call that reaches a barrier or whose name says it may be one,
nor inline assembly -- comes between them in the body. In a loop that reaches a barrier
the two threads run one iteration between two of its barriers: there a write and a read
are compared at the same value of the loop's counter, and not across the loop's back edge
(an iteration's accesses after its last barrier against the next one's before its first).
The message gives the witness: the two threads, the element, the block shape and the
scalar arguments. A kernel that indexes with `threadIdx.x` alone is taken to run
one-dimensional blocks; scalar arguments are taken between 1 and 65536. Where the file
launches the kernel, the block, grid and scalar arguments are those a launch gives it (its
launcher's contract: a kernel launched with one warp a block is never a finding); a kernel
launched nowhere in view may run any block its code allows.

Never a finding: a read of the thread's own element (`smem[threadIdx.x]` after
`smem[threadIdx.x] = v`, a block-stride loop reading back what it wrote), a read guarded
so that only the writing thread makes it, a value every thread stores alike that the
reading thread stored itself before reading it (`s_done = 1; if (s_done) ...`), a query
the solver cannot answer within the kernel's budget (`solver-budget`, default 2 s), and
any access whose offset or guards read memory or call a function the walk does not follow,
through a cast to a type narrower than the element or into a two-dimensional array. An
access through a cast to a wider type (`reinterpret_cast<float4*>(smem)[i]`) reaches every
element it spans, and a device helper handed a shared array or scalar, whose body is in
sight, is walked where the kernel calls it: its accesses are the kernel's (reported at the
call when the helper is in another file). A null test of a pointer argument (`if (p)`) is
one truth value for the whole block. One finding is
reported per read; the first 64 reads and 32 writes a kernel makes are checked. A read that
races with the only write of its element is not also an uninitialised read: KC403 counts a
write between the same barriers as written and leaves the read to this rule.

## Why is this bad?
Nothing orders the two threads: the reader gets the new value or the old one depending on
which warp the hardware ran first, so the result changes from run to run (and between GPU
generations: since Volta the threads of one warp need not run in lockstep either).
`compute-sanitizer --tool racecheck` reports a read-after-write or write-after-read hazard.

## Example
```cpp
__global__ void shift_left(float* out, const float* in) {
  __shared__ float tile[256];
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  tile[threadIdx.x] = in[i];
  if (threadIdx.x + 1 < 256) out[i] = tile[threadIdx.x + 1];
}
```

## Use instead
```cpp
__global__ void shift_left(float* out, const float* in) {
  __shared__ float tile[256];
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  tile[threadIdx.x] = in[i];
  __syncthreads();  // every thread's store lands before any thread reads its neighbour's
  if (threadIdx.x + 1 < 256) out[i] = tile[threadIdx.x + 1];
}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from kernel_check.finding import Finding, Related
from kernel_check.model import SymbolicAccess, SymbolKind, Term
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._common import location_of
from kernel_check.rules._two_threads import (
    ELEMENT,
    SECOND,
    bound_launches,
    counterexample,
    different_warps,
    given,
    meet,
    reaches,
    same_iteration,
    threads_of,
)
from kernel_check.semantic import SemanticModel
from kernel_check.solver import Answer, Budget, for_all, renamed, within

MAX_READS = 64  # shared reads per kernel checked
MAX_WRITES = 32  # shared writes per kernel each read is compared with
_OWN = "own:"  # the reading thread's copies of a write's loop counters (its own earlier store)


@rule("KC404", needs={Need.SYMBOLIC, Need.CONTRACTS, Need.SOLVER})
def check(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    seconds = float(ctx.options.get("solver-budget", 2.0))
    kernels: dict[str, list[SymbolicAccess]] = {}
    for access in model.symbolic_accesses:
        if access.shared and access.followed and access.read_checked:
            kernels.setdefault(access.function_usr, []).append(access)
    for kernel, accesses in kernels.items():
        budget = model.solver_budget(kernel, seconds)
        writes = [a for a in accesses if a.is_write][:MAX_WRITES]
        launches = bound_launches(model, accesses) or [()]  # none in view: any block the code allows
        position = {id(a): index for index, a in enumerate(accesses)}  # the order the body runs them
        for read in [a for a in accesses if not a.is_write][:MAX_READS]:
            found = _racing_write(read, writes, position, launches, budget)
            if found is None:
                continue
            write, answer = found
            writer, reader, block = threads_of(answer)
            element = f"`{read.pointer}[{answer.model.get(ELEMENT, 0)}]`"
            witness = f"in a block of {block}{given(answer, write, read)}"
            yield ctx.finding(
                location_of(model, read.span),
                f"thread {reader} reads {element} while thread {writer} writes it, with no barrier between, "
                f"{witness}; put a `__syncthreads()` between the write and the read, or read only the element "
                f"the thread wrote itself",
                related=[Related(location_of(model, write.span), "the write")],
                witness=counterexample(model, answer, write, read),
            )


def _racing_write(
    read: SymbolicAccess,
    writes: list[SymbolicAccess],
    position: dict[int, int],
    launches: list[tuple[Term, ...]],
    budget: Budget,
) -> tuple[SymbolicAccess, Answer] | None:
    """The first write of the read's array, between the same barriers, that another thread
    makes to the element the read reaches under one of the `launches`, with the witness
    (`position`: each access's place in the body, by `id`)."""
    apart = [different_warps(), *same_iteration(read)]
    for write in writes:
        if write.pointer != read.pointer or write.phase != read.phase or write.barrier_loops != read.barrier_loops:
            continue
        before = position[id(write)] < position[id(read)]
        extra = [*apart, _not_stored_by_reader(write, read)] if before and not write.value_varies else apart
        for launch in launches:
            answer = meet(write, read, budget, [*extra, *launch])
            if answer is not None:
                return write, answer
    return None


def _not_stored_by_reader(write: SymbolicAccess, read: SymbolicAccess) -> Term:
    """The reading thread (the second one) did not itself make `write`, which stores one value
    whichever thread runs it, at the element read, in any iteration of its loops: what it
    reads is that value whichever thread wrote last."""
    loops = [s for s in write.symbols if s.kind is SymbolKind.LOOP]
    names = {s.name: _OWN + s.name for s in loops}
    names.update({s.name: SECOND + s.name for s in write.symbols if s.kind is SymbolKind.THREAD})
    in_range = [c for s in loops for c in within(Term("sym", name=names[s.name]), s.low, s.high)]
    stored = Term(
        "and",
        (
            *in_range,
            *(renamed(g, names) for g in write.guards),
            *reaches(renamed(write.offset, names), write.width, read.width),
        ),
    )
    return for_all([names[s.name] for s in loops], Term("not", (stored,)))
