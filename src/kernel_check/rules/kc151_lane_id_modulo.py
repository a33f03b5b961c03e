"""## What it does
Flags `threadIdx.x % 32` (also `% kWarpThreads`, `% kWarpSize`, `% warpSize`, `& 31`, and
the warp-group widths `% 64`, `% 128`, `& 63`, `& 127`) whose value feeds an address: a
subscript, pointer arithmetic, or the offset of a `load`/`store`/`load_as`/`store_as`/
`pointer::offset` call -- directly or through the local variables it is stored in. A lane
index used only in a comparison or a shuffle is not flagged.

## Why is this bad?
On CUDA the lane register is a single read that folds into the address computation, while a
modulo of `threadIdx.x` is a derived value the compiler re-materializes at every address
scale (8 extra instructions and 2 registers on a two-tile warp copy). `device::get_lane_id<N>()`
picks the cheaper form per platform.

When the header library on the include path has no `get_lane_id` (older copies of
`sgl_kernel/` lack it), the message says so and names what to add instead: a `SGL_DEVICE`
helper that reads the `%laneid` register.

## Example
```cpp
const uint32_t lane = threadIdx.x % device::kWarpThreads;
vec.load(src, lane);
```

## Use instead
```cpp
const uint32_t lane = device::get_lane_id();
vec.load(src, lane);
```
"""

from __future__ import annotations

from collections.abc import Iterator

from kernel_check.finding import Finding, Related
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._common import location_of
from kernel_check.semantic import SemanticModel

_USES = {
    "subscript": "used as a subscript here",
    "pointer arithmetic": "used in pointer arithmetic here",
    "load/store offset": "used as a load/store offset here",
}


def _advice(model: SemanticModel, width: int) -> str:
    """The fix that works with the user's header library."""
    replacement = "device::get_lane_id()" if width == 32 else f"device::get_lane_id<{width}>()"
    if model.header_library.provides("get_lane_id"):
        return f"use `{replacement}`"
    return (
        f"this tree's `sgl_kernel/` headers have no `get_lane_id`: add a `SGL_DEVICE` helper that reads the "
        f'lane register (`asm("mov.u32 %0, %%laneid;" : "=r"(lane));`) to `sgl_kernel/utils.cuh` '
        f"and use `{replacement}`"
    )


@rule("KC151", needs={Need.INTEGERS})
def check(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    for lane in model.integer_facts.lane_modulos:
        if lane.address_use is None:
            continue
        through = f" through '{lane.via}'" if lane.via else ""
        yield ctx.finding(
            location_of(model, lane.span),
            f"`{lane.text}` feeds an address{through}; {_advice(model, lane.width)}",
            related=[Related(location_of(model, lane.address_use), _USES.get(lane.address_kind, "used here"))],
        )
