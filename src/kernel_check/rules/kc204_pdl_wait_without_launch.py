"""## What it does
Reports a kernel that waits for a PDL primary (`PDLWaitPrimary<flag>()` with a flag that is
not a constant `false`, or the raw `griddepcontrol.wait`) when the file launches it, and no
launch enables PDL (neither `.enable_pdl(x)` nor `.config({.use_pdl = x})` nor another method
of the launch object whose body sets the programmatic-stream-serialization attribute, as a
tree's own launcher's `.with_attr(use_pdl)` does; or `x` a constant `false`). A named launch
object counts with the flag its methods set before the launch (`auto launch =
LaunchKernel{grid, block, stream}; launch.enable_pdl(kUsePDL); launch(kernel, args...);`); a
flag set only under a condition may be on. A `cudaLaunchKernelEx(&config, kernel, ...)`
launch enables PDL with the `programmaticStreamSerializationAllowed` launch attribute its
launcher sets before it; one whose config takes attributes the launcher does not fill
(`config.attrs = attrs;`, a parameter) may be on. Kernels the file does
not launch are not reported: their launcher lives elsewhere.

## Why is this bad?
The wait only pays off under a PDL launch. Without one the kernel starts after the
preceding kernel has finished anyway, so the wait and the work arranged around it are
dead weight -- or, more often, the launcher forgot `.enable_pdl(kUsePDL)` and the overlap
the kernel was written for never happens.

## Example
```cpp
template <bool kUsePDL>
__global__ void norm_kernel(float* __restrict__ out, const float* __restrict__ in, uint32_t n);

template <bool kUsePDL>
void norm(tvm::ffi::TensorView out, tvm::ffi::TensorView in) {
  host::LaunchKernel(grid, block, device)(norm_kernel<kUsePDL>, o, i, n);
}
```

## Use instead
```cpp
template <bool kUsePDL>
void norm(tvm::ffi::TensorView out, tvm::ffi::TensorView in) {
  host::LaunchKernel(grid, block, device).enable_pdl(kUsePDL)(norm_kernel<kUsePDL>, o, i, n);
}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from kernel_check.finding import Finding, Related
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._common import location_of, pdl_waits
from kernel_check.semantic import SemanticModel


@rule("KC204", needs={Need.DATAFLOW, Need.LAUNCHES})
def check(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    for kernel in model.kernels:
        flow = model.dataflow(kernel)
        waits = [wait for wait in pdl_waits(flow) if not wait.always_off] if flow else []
        sites = [launch for launch, _ in model.launches_of(kernel)]
        if not waits or not sites or not all(site.pdl_off for site in sites):
            continue
        yield ctx.finding(
            location_of(model, waits[0].span),
            f"kernel '{kernel.name}' waits for a PDL primary, but none of its launches in this "
            "file enables PDL (`.enable_pdl(...)`): the wait never overlaps anything",
            related=[Related(location_of(model, site.span), "launched without PDL here") for site in sites],
        )
