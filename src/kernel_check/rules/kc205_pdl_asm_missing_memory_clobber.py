"""## What it does
Flags an inline asm statement containing `griddepcontrol.wait` that does not list
`"memory"` among its clobbers.

## Why is this bad?
The asm statement is the kernel's ordering point with the preceding kernel, but the
compiler does not read PTX: without a `"memory"` clobber it sees an instruction that
touches no memory and may move global loads above it (or reuse values loaded before it),
which brings back exactly the stale reads the wait was meant to prevent. (The trigger,
`griddepcontrol.launch_dependents`, orders nothing and needs no clobber.)

## Example
```cpp
__device__ __forceinline__ void wait_primary() {
  asm volatile("griddepcontrol.wait;");
}
```

## Use instead
```cpp
__device__ __forceinline__ void wait_primary() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
}
```

Better still, call `device::PDLWaitPrimary<kUsePDL>()`.
"""

from __future__ import annotations

from collections.abc import Iterator

from kernel_check.finding import Finding
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._common import location_of
from kernel_check.semantic import SemanticModel


@rule("KC205", needs={Need.DATAFLOW})
def check(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    for statement in model.dataflow_facts.inline_asm:
        if "griddepcontrol.wait" in statement.template and "memory" not in statement.clobbers:
            yield ctx.finding(
                location_of(model, statement.span),
                'inline asm `griddepcontrol.wait` without a "memory" clobber: the compiler may '
                "hoist global loads above the wait",
            )
