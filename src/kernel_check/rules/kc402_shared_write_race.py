"""## What it does
Flags two writes into the same `__shared__` array -- or one write executed by two threads --
that two distinct threads of one block can make to the same element with no block-wide
barrier between them: `smem[threadIdx.x / 2] = v`, `smem[0] = v` with no `threadIdx.x == 0`
guard, `smem[lane] = v` from every warp of the block.

The check is a proof over two symbolic threads (solver.py, z3), in the manner of GPUVerify
and Faial: each write's offset and the guards on its path become terms over the thread
index, the launch's dimensions, the kernel's scalar and compile-time arguments
(`kBlockSize`, `Traits::kThreads`) and loop counters; the second thread gets its own copy of
the thread index and loop counters, and the solver looks for two distinct threads whose
guards both hold and whose offsets are equal.

What it follows: `__shared__` arrays of scalars, halves or a template's `T`, of one
dimension or more (`tile[threadIdx.y][threadIdx.x / 2]`: an element's offset is its row
times the row's length plus its column, and each index stays within its row's length),
`extern __shared__` dynamic shared memory (`extern __shared__ __align__(16) uint8_t
smem[]`) through a cast pointer (`reinterpret_cast<float*>(smem)`) and the regions carved
from it (`buf + kN`), a device helper's own `__shared__` array (one for every call of the
block) and a helper handed a shared array as a pointer, both walked where the kernel calls
them (the finding lands at the call when the helper is in another file). Of dynamic memory,
one write made by two threads is checked; two different writes are not compared: they
meet only where the sizes of the regions carved from it (scalar arguments, `scan_buf =
prefix + num_experts + 1`) overlap, which the launcher's layout decides out of sight.

Writes count as between the same barriers when no `__syncthreads()` (or call that reaches
one, or call or inline assembly that might be one) comes between them in the body; in a
loop that reaches a barrier, two writes between the same two of its barriers are compared
at one iteration (every thread of the block runs it before the barrier), so a write that
escapes the loop's barrier pairing is found; writes of different iterations are not
compared. The message gives the witness: the two threads and the block shape.

The block: the launch in the file binds it where there is one. Without one, a kernel that
indexes with `threadIdx.x` alone is taken to run one-dimensional blocks (and one that names
x and y, two-dimensional ones), and the block is no wider than the strides the offsets
partition the array by: `for (i = threadIdx.x; i < N; i += kBlockSize)` and `smem[tid + k *
kNumThreads]` were written for a block of `kBlockSize` threads, which their launch gives
(a stride of x of 32 or less is a warp's, and does not bound the block). Scalar arguments
are taken between 1 and 65536. A query the solver cannot answer within the kernel's budget
(`solver-budget`, default 2 s) is never a finding, nor is a write whose offset or guards
read memory (but at an address the whole block shares: `flags[blockIdx.x]` is one value
for the block) or call a function the walk does not follow, nor one through a cast to a type
narrower than the element (a cast to a wider one, `reinterpret_cast<float4*>(smem)[i]`,
writes the elements it spans) or to a type whose size clang cannot tell (a template's `T*`
into bytes), nor one through a pointer into an array of other structs (an array of
`__half`/`__nv_bfloat16` is followed: their assignment is a plain store). One write made by
two threads is reported for any two threads when the value it stores may differ between
them: it reads the thread index -- directly, through a load at an address that does, or
through a local's initializer or later assignment (`len = lens[tid];`) -- and every call on
the way computes from its arguments alone (`sigmoid(x[tid])`; not a shuffle, vote,
reduction, atomic or other collective, nor a function whose body makes one); otherwise
only for two threads of different warps of a block the launch in the
file or `__launch_bounds__` bounds (code written for one block size aliases its warps in a
larger one), and not when the value is provably one for the whole block (it reads no
thread index, calls no function but a vector maker, and names only locals that hold such a
value): all lanes storing their warp's reduced value, or every thread setting one flag,
leave the same result whichever runs last, but a warp's collective (a shuffle reduction)
or a sum a thread kept is one value per warp at most.

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

from kernel_check.finding import Finding, Related
from kernel_check.model import SymbolicAccess, Term
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._common import location_of
from kernel_check.rules._two_threads import (
    bound_launches,
    counterexample,
    different_warps,
    meet,
    same_iteration,
    strided_blocks,
    threads_of,
)
from kernel_check.semantic import SemanticModel

MAX_WRITES = 32  # shared writes per kernel compared pairwise


@rule("KC402", needs={Need.SYMBOLIC, Need.CONTRACTS, Need.SOLVER})
def check(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    seconds = float(ctx.options.get("solver-budget", 2.0))
    writes: dict[str, list[SymbolicAccess]] = {}
    for access in model.symbolic_accesses:
        if access.shared and access.is_write and access.followed:
            writes.setdefault(access.function_usr, []).append(access)
    for kernel, kernel_writes in writes.items():
        budget = model.solver_budget(kernel, seconds)
        launches = bound_launches(model, kernel_writes)
        reported: set[int] = set()
        for first, second in combinations_with_replacement(kernel_writes[:MAX_WRITES], 2):
            if not _between_same_barriers(first, second) or id(second) in reported:
                continue
            # one iteration of the loops around both that reach a barrier; with no launch in
            # view, a block no wider than the strides the offsets partition the array by
            apart: list[Term] = [*same_iteration(first), *(() if launches else strided_blocks(first, second))]
            if first is second and not first.value_varies:
                if first.value_uniform:  # every thread stores the same value
                    continue
                # one value per warp at most (a warp's collective, a value the walk does not
                # trace to the thread): two threads of one warp may store it alike; asked only
                # of a block the launch or `__launch_bounds__` gives (any larger block would
                # alias the warps of code written for one size)
                if not launches and first.block_limit is None:
                    continue
                apart.append(different_warps())
            blocks = launches or [()]  # none in view: any block the code allows
            answer = next((a for launch in blocks if (a := meet(first, second, budget, [*apart, *launch]))), None)
            if answer is None:
                continue
            reported.add(id(second))
            one, other, block = threads_of(answer)
            yield ctx.finding(
                location_of(model, second.span),
                f"two threads write the same element of `{second.pointer}` with no barrier between: "
                f"threads {one} and {other} of a block of {block}; give each thread its own element or guard "
                f"the write to one thread",
                related=[] if first is second else [Related(location_of(model, first.span), "the other write")],
                witness=counterexample(model, answer, first, second),
            )


def _between_same_barriers(first: SymbolicAccess, second: SymbolicAccess) -> bool:
    """Whether two writes of one array have no barrier between them in the body: the same
    interval, inside the same loops that reach a barrier (compared at one iteration). Two
    different writes of dynamic memory (`extern __shared__`, of no declared length) are
    not compared: they meet only where the sizes of the regions carved from it (scalar
    arguments, `scan_buf = prefix + num_experts + 1`) overlap them, which the launcher's
    layout decides out of the walk's sight."""
    dynamic = first.extent is None and first is not second
    same = first.pointer == second.pointer and first.phase == second.phase
    return same and first.barrier_loops == second.barrier_loops and not dynamic
