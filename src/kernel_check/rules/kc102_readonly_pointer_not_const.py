"""## What it does
Flags a kernel pointer parameter that is not pointer-to-const although the kernel never
writes through it: no store, assignment, atomic or store helper through it or through any
pointer derived from it, and it is never handed to code that may write (a callee whose
parameter is not pointer-to-const and whose body is not visible, a store into memory, inline
asm). Writes through device functions of the translation unit are followed.

Not reported: parameters the body never names, pointers to pointers, function pointers, and
parameters that a preprocessor-inactive region (an `#if` branch not taken) of the body
mentions, since that code may write through them. A `void*` is treated like any other
pointer: casts are followed, so `static_cast<float*>(p)[i] = x` is a write.

Where a launch in the file fills the pointer and one the kernel writes from the same
tensor, or from two tensors a caller may pass as one (see KC101's in-place kernels), the
message asks for `const T*` alone: `const` is right for a read through an aliasing
pointer, `__restrict__` is not.

## Why is this bad?
A read-only buffer spelled `T*` hides the kernel's contract from readers and from the
compiler: only `const T* __restrict__` lets it use the non-coherent read-only load path, and
only a `const` pointee makes an accidental write a compile error. It is an error, as KC101 is:
a read-only `T* src` lacks both qualifiers, so it is no milder than a `const T* src` that lacks
only `__restrict__`.

## Example
```cpp
template <typename T>
__global__ void scale_kernel(T* __restrict__ dst, T* __restrict__ src, float factor, uint32_t n) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = static_cast<T>(static_cast<float>(src[i]) * factor);
}
```

## Use instead
```cpp
template <typename T>
__global__ void scale_kernel(T* __restrict__ dst, const T* __restrict__ src, float factor, uint32_t n) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = static_cast<T>(static_cast<float>(src[i]) * factor);
}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from kernel_check.finding import Finding
from kernel_check.model import AccessKind, Function, FunctionDataflow, Param
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._common import aliasing, location_of
from kernel_check.semantic import SemanticModel


def _candidate(param: Param) -> bool:
    """A named, single-level, non-function pointer to non-const data."""
    canonical = param.type.canonical
    return (
        bool(param.name)
        and param.type.is_pointer
        and not param.type.pointee_const
        and canonical.count("*") == 1
        and "(*)" not in canonical
    )


def _may_be_written(flow: FunctionDataflow, index: int) -> bool:
    return any(
        access.param_index == index and not access.fields and access.kind in (AccessKind.WRITE, AccessKind.ESCAPE)
        for access in flow.accesses
    )


@rule("KC102", needs={Need.DATAFLOW, Need.LAUNCHES, Need.INTERFACE})
def check(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    for kernel in model.kernels:
        flow = model.dataflow(kernel)
        if flow is None:
            continue
        for index, param in enumerate(kernel.params):
            if not _candidate(param) or param.name not in flow.referenced_params:
                continue
            if _may_be_written(flow, index) or param.name in flow.inactive_names:
                continue
            yield ctx.finding(
                location_of(model, param.span),
                f"kernel '{kernel.name}' never writes through pointer parameter '{param.name}': "
                f"declare it pointer-to-const ({_declaration(model, kernel, index)})",
            )


def _declaration(model: SemanticModel, kernel: Function, index: int) -> str:
    """`const T* __restrict__`, or `const T*` alone where the pointer may alias one the kernel writes."""
    in_place, partner = aliasing(model, kernel, (index, ""))
    if in_place:
        return "`const T*`; a launch passes the same tensor to a pointer the kernel writes, so not `__restrict__`"
    if partner is not None:
        return (
            f"`const T*`; it may alias the written pointer '{partner.written}' in place (see KC101), "
            "so `__restrict__` only if no caller passes the same tensor"
        )
    return "`const T* __restrict__`"
