"""## What it does
Flags a read of a one-dimensional `__shared__` array at an element that, for some count the
kernel is given and some thread of the block, no thread wrote before the read: a loop over
a padded count (`for (i = tid; i < kPadded; i += blockDim.x) use(smem[i])`) reading entries
written only below the real count (`if (i < n) smem[i] = ...`) with nothing filling the
rest, or an entry written only by some threads or on one branch.

The check is a proof over symbolic threads (solver.py, z3), like KC402's: the read's offset
and the guards on its path become terms over the thread index, the block's dimensions, the
kernel's scalar and compile-time arguments and loop counters; a write counts when it comes
before the read, by any thread: behind a barrier (`__syncthreads()`, a call that reaches
one, or a call or inline assembly that might be one) or between the same barriers as the
read. An element another thread writes with no barrier before the read is written, out of
order: that read races with the write, which KC404 reports, and KC403 stays silent (one
finding for one read). A null test of a pointer argument (`if (scale_ptr != nullptr)`)
is one truth value for the whole block, the same at each test of that pointer: a write
under it and a read under the same test agree, a read outside it may find the write
skipped. The solver looks for a count, a thread and its loop iteration whose guards hold
and whose element, inside the array, is one that every counted write -- by every thread of
the block, in every iteration of its loops -- leaves alone. Where the file launches the
kernel, the block and the arguments are those a launch gives it (its launcher's contract,
its constant template arguments too: `k<kItems>` with `const int kItems = 256;`) and one
launch that leaves the element alone is enough. Elsewhere the element must be left alone
at every block size tried: the `N` of the kernel's `__launch_bounds__(N)` (a literal
or over its template's integer parameters, one-dimensional blocks), else 32, 256 and 1024
threads (one-dimensional blocks when the kernel indexes with `threadIdx.x` alone): a read
that only a small block leaves unwritten is the launcher's choice, not this bug. Scalar
and compile-time arguments are taken between 1 and 1024, counts a block can cover: a read
bounded by a count of warps or threads (`if (threadIdx.x < kNumWarps) s_warp[threadIdx.x]`)
is covered at the largest block, and none makes a divisor the block shares zero
(`kItems / 8` for `kItems` below 8: no instantiation divides by it). The message gives the
witness: the block size, the thread, the counts, the pointers taken as null and the element.

A read inside a loop that reaches a barrier counts every write of that loop as before it,
wherever it stands in the body (one iteration's writes feed the next), and is reported
where no write of any iteration, nor any before the loop, reaches its element. Never a
finding: a read whose offset or guards name something the walk does not follow (a value
read from memory, but at an address the whole block shares -- `if (finished[blockIdx.x])
return;` is one value for the block, which the witness names; a call's result), and any
read of an array that the kernel writes in a
way the walk does not follow -- through a cast to a type narrower than the element, as a
two-dimensional or `extern` array, or handed to a helper whose body is not in sight, a
lambda or inline assembly (a cooperative load the walk cannot see). A helper whose body is
in sight is walked where it is called, and a `float4` store through a cast covers the four
elements it spans. Nor is a query the solver cannot answer within a quarter of what is
left of the kernel's budget (`solver-budget`, default 2 s, which KC402 and KC404 share).
One read is reported per array and kernel;
the first 64 reads a kernel makes are checked.

## Why is this bad?
Shared memory starts each block with whatever the previous block on the multiprocessor left
there. The read returns garbage -- often zero in testing, something else in production --
and the kernel's result depends on it: a max over padded scores picks a stale value, a sum
adds one. `compute-sanitizer --tool initcheck` reports it as an uninitialised
`__shared__` read.

## Example
```cpp
template <int kPadded>
__global__ void top_score(float* out, const float* scores, int n) {
  __shared__ float smem[kPadded];
  for (int i = threadIdx.x; i < kPadded; i += blockDim.x) {
    if (i < n) smem[i] = scores[blockIdx.x * n + i];
  }
  __syncthreads();
  float best = -1e30f;
  for (int i = threadIdx.x; i < kPadded; i += blockDim.x) best = fmaxf(best, smem[i]);
  out[blockIdx.x * blockDim.x + threadIdx.x] = best;
}
```

## Use instead
```cpp
template <int kPadded>
__global__ void top_score(float* out, const float* scores, int n) {
  __shared__ float smem[kPadded];
  for (int i = threadIdx.x; i < kPadded; i += blockDim.x) {
    smem[i] = i < n ? scores[blockIdx.x * n + i] : -1e30f;  // the padding holds the identity
  }
  __syncthreads();
  float best = -1e30f;
  for (int i = threadIdx.x; i < kPadded; i += blockDim.x) best = fmaxf(best, smem[i]);
  out[blockIdx.x * blockDim.x + threadIdx.x] = best;
}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from kernel_check import solver
from kernel_check.finding import Finding, Related
from kernel_check.model import SymbolicAccess, SymbolKind, Term
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._common import location_of
from kernel_check.rules._two_threads import (
    PER_THREAD,
    bound_launches,
    counterexample,
    covers,
    given,
    no_division_by_zero,
    threads_of,
)
from kernel_check.semantic import SemanticModel
from kernel_check.solver import (
    AXES,
    MAX_THREADS_PER_BLOCK,
    RLIMIT_PER_SECOND,
    Answer,
    Budget,
    Outcome,
    block_axes,
    for_all,
    launch_constraints,
    renamed,
    thread_symbols,
    within,
)

SCALAR_HIGH = MAX_THREADS_PER_BLOCK  # scalar and compile-time arguments: counts a block can cover
BLOCK_SIZES = (1024, 32, 256)  # every one must leave the element unwritten; the last is the witness's
MAX_READS = 64  # shared reads per kernel checked
SHARE = 4  # a query spends at most 1 / SHARE of what the kernel's solver budget has left
_ELEMENT = "kc403:element"
_ZERO = Term("const", value=0)


@rule("KC403", needs={Need.SYMBOLIC, Need.CONTRACTS, Need.SOLVER})
def check(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    seconds = float(ctx.options.get("solver-budget", 2.0))
    kernels: dict[str, list[SymbolicAccess]] = {}
    for access in model.symbolic_accesses:
        if access.shared:
            kernels.setdefault(access.function_usr, []).append(access)
    for kernel, accesses in kernels.items():
        budget = model.solver_budget(kernel, seconds)
        launches = bound_launches(model, accesses)
        unfollowed = {a.pointer for a in accesses if a.is_write and not a.followed}
        reported: set[str] = set()
        for read in _checked_reads(accesses, unfollowed)[:MAX_READS]:
            if read.pointer in reported:
                continue
            writes = _earlier_writes(accesses, read)
            answer = _unwritten(read, writes, launches, budget)
            if answer is None:
                continue
            reported.add(read.pointer)
            first = writes[0] if writes else None
            yield ctx.finding(
                location_of(model, read.span),
                f"this read of `{read.pointer}` can reach an element no thread of the block wrote before it: "
                f"{_witness(read, writes, answer)}; write every element the reads reach (fill the padding), "
                f"with a barrier between the writes and the read, or guard the read as the write is guarded",
                related=[Related(location_of(model, first.span), "a write that leaves it out")] if first else [],
                witness=counterexample(model, answer, read, *writes),
            )


def _checked_reads(accesses: list[SymbolicAccess], unfollowed: set[str]) -> list[SymbolicAccess]:
    """The reads the walk follows of one-dimensional arrays of a length in sight
    (`SymbolicAccess.read_checked`) it follows every write of."""
    return [a for a in accesses if not a.is_write and a.followed and a.pointer not in unfollowed and a.read_checked]


def _earlier_writes(accesses: list[SymbolicAccess], read: SymbolicAccess) -> list[SymbolicAccess]:
    """The writes of the read's array that may come before it: one behind a barrier, one
    between the same barriers before it, or after it in a loop around both (an earlier
    iteration's): between the same barriers of a loop that reaches none, anywhere in one
    that reaches a barrier (each iteration's writes feed the next). Any thread's counts,
    between the same barriers too: an element another thread writes there with no barrier
    before the read is written, out of order -- a race, KC404's finding, not an element no
    thread wrote."""
    position = next(i for i, a in enumerate(accesses) if a is read)
    read_loops = {s.name for s in read.symbols if s.kind is SymbolKind.LOOP}
    writes: list[SymbolicAccess] = []
    for index, access in enumerate(accesses):
        if not access.is_write or access.pointer != read.pointer:
            continue
        same_loop = any(s.name in read_loops for s in access.symbols if s.kind is SymbolKind.LOOP)
        earlier_iteration = not set(read.barrier_loops).isdisjoint(access.barrier_loops)
        if earlier_iteration or (
            access.phase <= read.phase and (index < position or (access.phase == read.phase and same_loop))
        ):
            writes.append(access)
    return writes


def _unwritten(
    read: SymbolicAccess, writes: list[SymbolicAccess], launches: list[tuple[Term, ...]], budget: Budget
) -> Answer | None:
    """A witness that the element the read reaches is left unwritten: at one of the
    `launches` in view (each bound to its launcher's contract), else at every block size
    tried (the last one's witness); None when there is none or the solver cannot tell."""
    axes = block_axes([*read.symbols, *(s for w in writes for s in w.symbols)])
    # all of the read's width: vectors, aligned to their size, meet at their first element
    # (`_two_threads.reaches`), which keeps a strided loop's query as easy as for scalars
    aligned = all(w.width == read.width for w in writes)
    terms = [*_read_side(read, writes, axes, aligned), *no_division_by_zero(read, *writes)]
    terms += [_never_writes(w, index, axes, aligned) for index, w in enumerate(writes)]
    for launch in launches:
        found = _check([*terms, *launch], budget)
        if found.outcome is Outcome.SAT:
            return found
    if launches:
        return None
    answer: Answer | None = None
    limit = read.block_limit  # `__launch_bounds__(N)`: built for one-dimensional blocks of N threads
    sizes = [limit] if limit is not None and len(axes) == 1 else [Term("const", value=s) for s in BLOCK_SIZES]
    for size in sizes:  # only the read's side names the block size
        answer = _check([*terms, Term("==", (_sym("blockDim.x"), size))], budget)
        if answer.outcome is not Outcome.SAT:
            return None
    return answer


def _check(constraints: list[Term], budget: Budget) -> Answer:
    """`solver.check` within a share of what the kernel's budget has left (`SHARE`): a
    query over every thread and iteration that z3 cannot settle leaves the rest to the
    kernel's other reads and to KC404's queries, which share the budget."""
    share = Budget(budget.remaining_units() / RLIMIT_PER_SECOND / SHARE)
    try:
        return solver.check(constraints, share)
    finally:
        budget.spent += share.spent


def _read_side(read: SymbolicAccess, writes: list[SymbolicAccess], axes: tuple[str, ...], aligned: bool) -> list[Term]:
    """The block (along the `axes` it spans), the arguments, the reading thread within the
    block and its guards, the element it reads inside the array (its first, when `aligned`)."""
    threads = thread_symbols()
    shared = {s for w in writes for s in w.symbols if s.kind not in PER_THREAD}
    constraints = launch_constraints([*threads, *read.symbols, *shared])
    for axis in AXES[len(axes) :]:
        constraints += [Term("==", (_sym(f"threadIdx.{axis}"), _ZERO)), Term("==", (_sym(f"blockDim.{axis}"), _one()))]
    for symbol in {*read.symbols, *shared}:
        variable = _sym(symbol.name)
        if symbol.kind is SymbolKind.SCALAR:
            constraints += within(variable, 1, SCALAR_HIGH)
        elif symbol.kind is SymbolKind.LOOP:
            constraints += within(variable, symbol.low, symbol.high)
    assert read.extent is not None  # `_checked_reads` keeps reads of one-dimensional arrays of a known length
    element = _sym(_ELEMENT)
    constraints += [*read.guards, *_reach(read.offset, read.width, aligned)]
    constraints += [Term("<=", (_ZERO, element)), Term("<", (element, read.extent))]
    return constraints


def _never_writes(write: SymbolicAccess, index: int, axes: tuple[str, ...], aligned: bool) -> Term:
    """For every thread of the block and every iteration of its loops: `write`'s guards fail
    or it writes another element."""
    prefix = f"w{index}:"
    per_thread = [s for s in write.symbols if s.kind in PER_THREAD]
    named = {s.name for s in per_thread}  # every thread of the block, whether its index reaches the write or not
    per_thread += [t for t in thread_symbols()[: len(axes)] if t.name not in named]
    copies = {s.name: prefix + s.name for s in per_thread}
    in_range: list[Term] = []
    for symbol in per_thread:
        variable = _sym(copies[symbol.name])
        if symbol.kind is SymbolKind.THREAD:
            axis = symbol.name.rsplit(".", 1)[-1]
            in_range += [Term("<=", (_ZERO, variable)), Term("<", (variable, _sym(f"blockDim.{axis}")))]
        else:
            in_range += within(variable, symbol.low, symbol.high)
    reaches = Term(
        "and",
        (
            *in_range,
            *(renamed(g, copies) for g in write.guards),
            *_reach(renamed(write.offset, copies), write.width, aligned),
        ),
    )
    return for_all(copies.values(), Term("not", (reaches,)))


def _reach(offset: Term, width: int, aligned: bool) -> list[Term]:
    """An access at `offset` reaches the element checked: at its first element when the
    accesses compared are `aligned` (all of one width), else any of the `width` it covers."""
    return [Term("==", (_sym(_ELEMENT), offset))] if aligned else covers(offset, width, _sym(_ELEMENT))


def _sym(name: str) -> Term:
    return Term("sym", name=name)


def _one() -> Term:
    return Term("const", value=1)


def _witness(read: SymbolicAccess, writes: list[SymbolicAccess], answer: Answer) -> str:
    thread, _, block = threads_of(answer)
    arguments = given(answer, read, *writes)
    return (
        f"thread {thread} of a block of {block}{arguments} reads `{read.pointer}[{answer.model.get(_ELEMENT, 0)}]`, "
        f"which no write before it reaches"
    )
