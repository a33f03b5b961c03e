"""## What it does
Flags a kernel pointer parameter that points to `const` data but is not declared
`__restrict__`, and the same for a pointer-to-const field of a by-value params struct
that is passed to a kernel.

## Why is this bad?
Without `__restrict__` the compiler must assume the read-only buffer may alias an output,
so it cannot use the read-only data path (non-coherent `LDG` loads) or reorder loads
across stores. Every read-only kernel pointer in the JIT kernel conventions carries
`const T* __restrict__`.

## Example
```cpp
template <typename T>
__global__ void scale_kernel(T* __restrict__ dst, const T* src, float factor, uint32_t n);
```

## Use instead
```cpp
template <typename T>
__global__ void scale_kernel(T* __restrict__ dst, const T* __restrict__ src, float factor, uint32_t n);
```

`--fix` inserts the `__restrict__`.
"""

from __future__ import annotations

from collections.abc import Iterator

from kernel_check.finding import Finding, Fix, TextEdit
from kernel_check.model import Field, Param, Struct
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._common import location_of
from kernel_check.semantic import SemanticModel


def _needs_restrict(entity: Param | Field) -> bool:
    return entity.type.is_pointer and entity.type.pointee_const and not entity.type.is_restrict


def _restrict_fix(data: bytes, offset: int | None) -> Fix | None:
    if offset is None:
        return None
    following = data[offset : offset + 1]
    replacement = " __restrict__" if following in (b" ", b"\t", b")", b",") else " __restrict__ "
    return Fix("insert __restrict__", (TextEdit(offset, offset, replacement),))


@rule("KC101", needs={Need.DECLARATIONS})
def check(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    reported_structs: set[str] = set()
    for kernel in model.kernels:
        for param in kernel.params:
            if _needs_restrict(param):
                yield ctx.finding(
                    location_of(model, param.span),
                    f"read-only pointer parameter '{param.name}' of kernel '{kernel.name}' "
                    "should be `const T* __restrict__`",
                    fix=_restrict_fix(model.data, param.restrict_insert_offset),
                )
            struct = model.struct_of(param.type)
            if struct is not None and struct.qualified_name not in reported_structs:
                reported_structs.add(struct.qualified_name)
                yield from _struct_fields(model, ctx, struct, kernel.name)


def _struct_fields(model: SemanticModel, ctx: RuleContext, struct: Struct, kernel: str) -> Iterator[Finding]:
    for field in struct.fields:
        if _needs_restrict(field):
            yield ctx.finding(
                location_of(model, field.span),
                f"read-only pointer field '{field.name}' of params struct '{struct.name}' "
                f"(passed to kernel '{kernel}') should be `const T* __restrict__`",
                fix=_restrict_fix(model.data, field.restrict_insert_offset),
            )
