"""## What it does
Reports a kernel whose first statement is the PDL wait (`PDLWaitPrimary()`, or the raw
`griddepcontrol.wait`), compile-time-only statements (type aliases, `static_assert`,
`constexpr` constants, uninitialized declarations, names bound to a params struct's fields:
`const auto& [input, output, n] = params;`) aside.

## Why is this bad?
Programmatic Dependent Launch pays off only through the work a kernel does *before* its
wait: loading scalar parameters, computing indices, touching buffers the preceding kernel
never writes. A kernel that waits on its first line overlaps nothing with the primary's
tail, so enabling PDL for it buys nothing but launch-attribute plumbing.

## Example
```cpp
template <bool kUsePDL>
__global__ void add_kernel(float* __restrict__ out, const float* __restrict__ in, uint32_t n) {
  device::PDLWaitPrimary<kUsePDL>();
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] += in[i];
}
```

## Use instead
```cpp
template <bool kUsePDL>
__global__ void add_kernel(float* __restrict__ out, const float* __restrict__ in, uint32_t n) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;  // index math and the bounds check overlap the primary's tail
  device::PDLWaitPrimary<kUsePDL>();
  out[i] += in[i];
}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from kernel_check.finding import Finding
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._common import location_of, pdl_waits
from kernel_check.semantic import SemanticModel


@rule("KC202", needs={Need.DATAFLOW})
def check(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    for kernel in model.kernels:
        flow = model.dataflow(kernel)
        leading = next((wait for wait in pdl_waits(flow) if wait.leads_body), None) if flow else None
        if leading is not None:
            yield ctx.finding(
                location_of(model, leading.span),
                f"kernel '{kernel.name}' waits for the PDL primary on its first statement: "
                "nothing overlaps the preceding kernel's tail; move index math and loads of "
                "data the primary does not write above the wait",
            )
