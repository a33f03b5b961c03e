"""## What it does
Flags a kernel launched with the `<<<grid, block>>>` syntax.

## Why is this bad?
A raw launch runs on whatever stream is spelled (usually the legacy default stream, not
the caller's PyTorch stream), checks no launch error, and cannot enable Programmatic
Dependent Launch. `host::LaunchKernel` resolves the caller's stream through TVM-FFI,
checks the launch with file and line, and supports `.enable_pdl(...)`.

In a tree that does not use the `sgl_kernel/` library (no `LaunchKernel` to use instead), a
raw launch is reported only when nobody checks its launch error: a later statement of its
block that reads `cudaGetLastError()` or `cudaPeekAtLastError()` (checks it, returns it or
stores it) is the check, and the launch is left alone.

## Example
```cpp
scale_kernel<T><<<grid, 256>>>(dst, src, factor, n);
```

## Use instead
```cpp
host::LaunchKernel(grid, 256, device)(scale_kernel<T>, dst, src, factor, n);
```
"""

from __future__ import annotations

from collections.abc import Iterator

from kernel_check.finding import Finding
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._common import location_of
from kernel_check.semantic import SemanticModel


@rule("KC130", needs={Need.LAUNCHES, Need.INTERFACE})
def check(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    adopted = model.header_library.adopted()
    for launch in model.launches:
        if launch.syntax != "triple_chevron" or (launch.error_checked and not adopted):
            continue
        name = launch.kernels[0].name if launch.kernels else "kernel"
        advice = (
            "use `host::LaunchKernel(grid, block, device)(...)`"
            if adopted
            else "nothing checks its launch error: check `cudaGetLastError()` after it"
        )
        yield ctx.finding(location_of(model, launch.span), f"raw `<<<...>>>` launch of '{name}'; {advice}")
