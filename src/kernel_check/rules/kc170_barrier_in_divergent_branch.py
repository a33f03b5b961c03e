"""## What it does
Flags a block-wide barrier -- `__syncthreads()` (and its `_count`/`_and`/`_or` forms), or a
call of a device function that reaches one, such as `device::cta::reduce_sum` -- inside a
branch of an `if` whose condition depends on the thread's index: `threadIdx`, a lane or warp
index helper (`get_lane_id()`, `get_warp_id()`), or a local variable initialized from one.

Conditions over `blockIdx`, kernel parameters or template constants are the same for every
thread of a block and are not flagged; neither are early `return`s, loop conditions, or
barriers inside lambda bodies (those run where the lambda is called).

Also not flagged: a split of the block into two groups whose barriers pair up by count -- a
thread-dependent branch that issues N `__syncthreads()` as plain statements and then
`return`s, followed by code that issues exactly N plain `__syncthreads()` itself (one group
fills a buffer while the other works, and both arrive at each barrier in turn).

## Why is this bad?
Every thread of the block must reach the same `__syncthreads()`. When only the threads that
take one side of a thread-dependent branch arrive, the barrier is undefined behaviour: the
block hangs, or the barrier releases early and shared memory is read before it is written.
A `cta::` reduction synchronizes internally, so calling it from a subset of the block has the
same effect.

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

from kernel_check.finding import Finding, Related
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._common import location_of
from kernel_check.semantic import SemanticModel


@rule("KC170", needs={Need.THREADS})
def check(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    for barrier in model.divergent_barriers:
        if barrier.matched_by_rest:
            continue  # every thread reaches the same number of barriers (see the doc page)
        how = "" if barrier.barrier.startswith("__syncthreads") else ", which synchronizes the block,"
        yield ctx.finding(
            location_of(model, barrier.span),
            f"`{barrier.barrier}`{how} is reached only by the threads that take this branch on "
            f"'{barrier.source}'; move the barrier out of the branch",
            related=[Related(location_of(model, barrier.condition), "the thread-dependent condition")],
        )
