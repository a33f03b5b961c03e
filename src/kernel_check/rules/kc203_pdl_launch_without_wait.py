"""## What it does
Flags a launch that enables Programmatic Dependent Launch (`.enable_pdl(x)` or
`.config({.use_pdl = x})` with `x` not a constant `false`, on the launch expression or, for a
named launch object, `launch.enable_pdl(x);` before `launch(kernel, ...)`) of a kernel that
never waits for the primary (`PDLWaitPrimary`, the raw `griddepcontrol.wait`, or a device
function that does either, a static member of a helper class template such as
`Pdl<kUsePDL>::wait()` included, wherever it is defined), and a launch whose kernel
waits on a different flag than the one the launch enables PDL with: the wait's template
argument, mapped through the launch's template arguments, is `false` or names another flag.

A kernel that calls a static member of its type parameter (`Trait::forward(params)`) waits
when a same-named static member of the file's structs does. Not reported, since the analysis
cannot tell: a kernel whose body is partly compiled out of the host pass (`#if
defined(__CUDA_ARCH__)`: the wait may be in that code or in what it calls), and a wait whose
flag is a member of a type parameter (`PDLWaitPrimary<Trait::kUsePDL>`). A wait instantiated
with `false` is reported only under a launch that always enables PDL (`.enable_pdl(true)`):
with a flag, the `false` instantiation is the one launched when the flag is off.

## Why is this bad?
A PDL launch lets the kernel start before the preceding kernel has finished. Without a wait
nothing orders the kernel's reads after the producer's writes, so it reads stale inputs. A
wait instantiated with another flag is the same bug in disguise: the launch turns PDL on
while the wait is compiled out (or keyed to something unrelated).

## Example
```cpp
template <typename T, bool kUsePDL>
__global__ void copy_kernel(T* __restrict__ dst, const T* __restrict__ src, uint32_t n) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i];  // no PDLWaitPrimary anywhere
}

template <typename T, bool kUsePDL>
void copy(tvm::ffi::TensorView dst, tvm::ffi::TensorView src) {
  // ... verify ...
  host::LaunchKernel(grid, block, device).enable_pdl(kUsePDL)(copy_kernel<T, kUsePDL>, d, s, n);
}
```

## Use instead
```cpp
template <typename T, bool kUsePDL>
__global__ void copy_kernel(T* __restrict__ dst, const T* __restrict__ src, uint32_t n) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  device::PDLWaitPrimary<kUsePDL>();
  if (i < n) dst[i] = src[i];
}
```
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeGuard

from kernel_check.finding import Finding, Related
from kernel_check.model import ConstExpr, Function, FunctionKind, Launch, LaunchedKernel, PdlCall, PdlFlag
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._common import location_of, pdl_waits
from kernel_check.semantic import SemanticModel


def instantiated_flag(wait: PdlCall, kernel: Function, launched: LaunchedKernel) -> tuple[str, ConstExpr] | None:
    """The wait's flag (written text, value) as this launch instantiates it; None when it cannot
    be told (a member of a type parameter, `Trait::kUsePDL`, is whatever the bound trait says)."""
    if wait.flag_through_type or wait.flag_value is None:
        return None
    if wait.flag_value.op == "param" and wait.flag_value.name in (p.name for p in kernel.template_params):
        return launched.argument_for(wait.flag_value.name)
    return wait.flag, wait.flag_value


def flag_mismatch(instantiated: tuple[str, ConstExpr] | None, pdl: PdlFlag) -> str | None:
    """Why a wait instantiated with `instantiated` does not match the launch's PDL flag."""
    if instantiated is None:
        return None
    text, value = instantiated
    flag = value.evaluate({})
    if flag not in (None, 0) or text == pdl.text:  # both as written, whitespace collapsed
        return None
    if flag == 0:
        # Only a launch that always enables PDL is known to run it: with a flag
        # (`enable ? launch(k<true>) : launch(k<false>)`) the `false` one runs without PDL.
        return "is instantiated with `false` here, so it is compiled out" if pdl.always_on else None
    if pdl.always_on or not _is_name(value) or not _is_name(pdl.value):
        return None  # one side is an expression or a literal: its value is not known here
    return f"is instantiated with `{text}` while the launch enables PDL with `{pdl.text}`"


def _is_name(value: ConstExpr) -> bool:
    """A flag that is one named value: a template parameter, or a variable or member whose
    value is not known here."""
    return value.op == "param" or (value.op == "unknown" and bool(value.name))


@rule("KC203", needs={Need.DATAFLOW, Need.LAUNCHES})
def check(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    for site in model.launches:
        if site.pdl_off:
            continue
        reported: set[str] = set()  # one finding per kernel, however many instantiations the launch picks from
        for launched in site.kernels:
            defined = model.function(launched.usr)  # the host pass's definition
            if _defined_kernel(defined) and defined.usr not in reported:
                findings = list(_check_launch(model, ctx, site, launched, defined))
                if findings:
                    reported.add(defined.usr)
                yield from findings


def _defined_kernel(function: Function | None) -> TypeGuard[Function]:
    return function is not None and function.kind is FunctionKind.KERNEL and function.body is not None


def _check_launch(
    model: SemanticModel, ctx: RuleContext, site: Launch, launched: LaunchedKernel, kernel: Function
) -> Iterator[Finding]:
    flow = model.dataflow(kernel)
    if flow is None:
        return
    kernel_here = Related(location_of(model, kernel.name_span), f"kernel '{kernel.name}' is defined here")
    waits = pdl_waits(flow)
    if not waits:
        if not flow.inactive_spans:  # code compiled out of the host pass may hold the wait
            yield ctx.finding(
                location_of(model, site.span),
                f"launch enables PDL for kernel '{kernel.name}', which never calls PDLWaitPrimary: "
                "it may read the preceding kernel's outputs before they are written",
                related=[kernel_here],
            )
        return
    assert site.pdl is not None  # check() passes the launches that enable PDL
    for wait in waits:
        reason = flag_mismatch(instantiated_flag(wait, kernel, launched), site.pdl)
        if reason is not None:
            yield ctx.finding(
                location_of(model, site.span),
                f"launch enables PDL for kernel '{kernel.name}', but its wait `PDLWaitPrimary<{wait.flag}>` {reason}",
                related=[Related(location_of(model, wait.span), "the wait is here"), kernel_here],
            )
            return
