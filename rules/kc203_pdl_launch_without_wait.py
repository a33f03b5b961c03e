"""## What it does
Flags a launch that enables Programmatic Dependent Launch (`.enable_pdl(x)` or
`.config({.use_pdl = x})` with `x` not literally `false`) of a kernel that never waits for the primary (`PDLWaitPrimary`, the raw
`griddepcontrol.wait`, or a device function that does either), and a launch whose kernel
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

import re
from typing import Iterator

from kernel_check.finding import Finding, Related
from kernel_check.model import Function, LaunchedKernel, LaunchSite, PdlCall, SourceModel, split_template_arguments
from kernel_check.registry import RuleContext, rule
from kernel_check.rules._common import (
    dataflow_of, is_literal_false, launched_kernels, location_of, pdl_disabled, pdl_waits,
)

_NAME = re.compile(r"[A-Za-z_]\w*(?:::\w+)*")
_TRUE = ("true", "1")


def instantiated_flag(wait: PdlCall, kernel: Function, launched: LaunchedKernel) -> str | None:
    """The wait's flag as this launch instantiates it; None when it cannot be told (a member of
    a type parameter, `Trait::kUsePDL`, is whatever the bound trait says)."""
    if wait.flag_through_type:
        return None
    names = [param.name for param in kernel.template_params]
    if wait.flag not in names:
        return wait.flag
    arguments = split_template_arguments(launched.template_args)
    index = names.index(wait.flag)
    return " ".join(arguments[index].split()) if index < len(arguments) else None


def flag_mismatch(instantiated: str | None, enable_pdl: str) -> str | None:
    """Why a wait instantiated with `instantiated` does not match `.enable_pdl(enable_pdl)`."""
    enabled = " ".join(enable_pdl.split())
    if instantiated is None or instantiated in _TRUE or instantiated == enabled:
        return None
    if is_literal_false(instantiated):
        # Only a launch that always enables PDL is known to run it: with a flag
        # (`enable ? launch(k<true>) : launch(k<false>)`) the `false` one runs without PDL.
        return "is instantiated with `false` here, so it is compiled out" if enabled in _TRUE else None
    if enabled in _TRUE or not _NAME.fullmatch(instantiated) or not _NAME.fullmatch(enabled):
        return None  # one side is an expression or a literal: its value is not known here
    return f"is instantiated with `{instantiated}` while the launch enables PDL with `{enabled}`"


@rule("KC203")
def check(model: SourceModel, ctx: RuleContext) -> Iterator[Finding]:
    kernels: dict[str, Function] = {}
    for kernel in model.kernels:  # the first definition: the host pass's, before a device-only fallback's
        if kernel.body is not None and kernel.usr:
            kernels.setdefault(kernel.usr, kernel)
    for site in model.launch_sites:
        if pdl_disabled(site.enable_pdl):
            continue
        reported: set[str] = set()  # one finding per kernel, however many instantiations the launch picks from
        for launched in launched_kernels(model, site):
            kernel = kernels.get(launched.usr)
            if kernel is not None and kernel.usr not in reported:
                findings = list(_check_launch(model, ctx, site, launched, kernel))
                if findings:
                    reported.add(kernel.usr)
                yield from findings


def _check_launch(model: SourceModel, ctx: RuleContext, site: LaunchSite, launched: LaunchedKernel,
                  kernel: Function) -> Iterator[Finding]:
    flow = dataflow_of(model, kernel)
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
    for wait in waits:
        reason = flag_mismatch(instantiated_flag(wait, kernel, launched), site.enable_pdl or "")
        if reason is not None:
            yield ctx.finding(
                location_of(model, site.span),
                f"launch enables PDL for kernel '{kernel.name}', but its wait "
                f"`PDLWaitPrimary<{wait.flag}>` {reason}",
                related=[Related(location_of(model, wait.span), "the wait is here"), kernel_here],
            )
            return
