"""## What it does
Flags a load through a kernel's incoming pointers (a pointer parameter, a pointer field of a
by-value params struct, or any pointer derived from them) that can execute before the
kernel's `PDLWaitPrimary()` (or a device function, or a static member of a helper struct such
as `Pdl<kUsePDL>::wait()`, that waits). A params struct's fields are followed however the
kernel reaches them: `params.input`, a reference alias (`auto& p = params;`), a pointer
copied out (`const float* x = params.input;`) or a structured binding (`const auto& [input,
weight, output, n] = params;`). Loads through `AlignedVector::load`, `tile::Memory::load`,
`warp::load_bytes`, `load_as`, `__ldg`, subscripts, dereferences and device functions that
read through a pointer argument all count; a lambda counts where it is called.

## Why is this bad?
With Programmatic Dependent Launch the kernel may start while the preceding kernel is still
running. `PDLWaitPrimary()` is the only point after which that kernel's writes are
guaranteed complete and visible, so a load before it can read stale or half-written
inputs -- silently, and only under PDL, only sometimes. Loading scalar parameters, computing
indices and addresses before the wait is fine and is exactly what PDL overlaps.

Model weights are not reported: a read through a pointer named as one (`weight`, `w`,
`gamma`, `beta`, `bias`, or `<name>_weight`, `<name>_gamma`...; the parameter's or the params
field's own name) may come before the wait. No kernel of the forward pass writes them, and
prefetching them while the primary finishes is the overlap PDL is for.

## Example
```cpp
template <typename T, bool kUsePDL>
__global__ void scale_kernel(T* __restrict__ dst, const T* __restrict__ src, float factor, uint32_t n) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  const T x = src[i];  // may read the producer's output before it is written
  device::PDLWaitPrimary<kUsePDL>();
  dst[i] = static_cast<T>(static_cast<float>(x) * factor);
}
```

## Use instead
```cpp
template <typename T, bool kUsePDL>
__global__ void scale_kernel(T* __restrict__ dst, const T* __restrict__ src, float factor, uint32_t n) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;  // index math overlaps the primary
  device::PDLWaitPrimary<kUsePDL>();
  const T x = src[i];
  dst[i] = static_cast<T>(static_cast<float>(x) * factor);
}
```
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from kernel_check.finding import Finding, Related
from kernel_check.model import AccessKind
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._common import location_of, pdl_waits
from kernel_check.semantic import SemanticModel

# What a weight's pointer is called (the last name of `params.q_gamma`, `w`, `conv_weight`).
_WEIGHT_NAME = re.compile(r"(?:\w+_)?(?:weights?|gamma|beta|bias|w)")


def is_weight_pointer(root: str) -> bool:
    """Whether a pointer (`params.q_gamma`, `bias`) is named as a model weight's: no kernel of
    the forward pass writes it, so it may be read before the wait."""
    return _WEIGHT_NAME.fullmatch(root.rpartition(".")[2]) is not None


_HOW = {
    "subscript": "a subscript",
    "dereference": "a dereference",
    "->": "a member access",
    "reference": "a reference to it",
    "asm": "inline asm",
}


def _describe(how: str) -> str:
    """`subscript` -> `a subscript`, `load()` -> `` `load()` ``."""
    return _HOW.get(how, f"`{how}`")


@rule("KC201", needs={Need.DATAFLOW})
def check(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    for kernel in model.kernels:
        flow = model.dataflow(kernel)
        if flow is None:
            continue
        waits = [(wait, wait.order) for wait in pdl_waits(flow) if wait.order is not None]
        if not waits:
            continue
        first, first_order = waits[0]
        reported: set[int] = set()
        for access in flow.accesses:
            if access.kind is not AccessKind.READ or access.order is None or access.order > first_order:
                continue
            if access.span.start in reported or is_weight_pointer(access.root):
                continue
            reported.add(access.span.start)
            yield ctx.finding(
                location_of(model, access.span),
                f"kernel '{kernel.name}' reads '{access.root}' through {_describe(access.how)} "
                "before the PDL wait: it may see data the preceding kernel has not finished writing",
                related=[Related(location_of(model, first.span), "the PDL wait is here")],
            )
