"""## What it does
Flags a kernel pointer parameter that points to `const` data but is not declared
`__restrict__`, and the same for a pointer-to-const field of a by-value params struct
that is passed to a kernel.

A pointer the kernel reads through `volatile` (`*(const volatile int*)flag`, a flag another
stream or the host sets while the kernel spins on it), or one declared pointer-to-volatile,
is left alone: `__restrict__` would promise that the data does not change while the kernel
runs.

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

## In-place kernels
`__restrict__` promises that no other pointer the kernel uses reaches the same memory;
when a read pointer and a pointer the kernel writes do alias, the promise is undefined
behaviour. So the rule follows each launch of the kernel in the file back to the tensors
whose `data_ptr()` fill the two pointers:

- one tensor fills both (the launcher passes `x` as input and output): the kernel works in
  place by design, and nothing is reported;
- two tensors of the launcher fill them: whether they may be one tensor is the caller's
  choice (a wrapper's `out = out if out is not None else x`, or the same tensor passed
  twice). The Python wrappers are not part of a C++ file's check, so the message says
  that the pointers may alias in place and asks to add `__restrict__` only if no caller
  passes the same tensor; `--fix` offers nothing there. Two tensors that the launcher's
  `TensorMatcher`s give no dtype in common (`int32_t` ids, an `fp32_t` output) are never
  one: the usual advice.

A kernel without a launch in the file gets the convention's advice and the fix.
"""

from __future__ import annotations

from collections.abc import Iterator

from kernel_check.finding import Finding, Fix, TextEdit
from kernel_check.model import Field, Function, Param, Struct
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._common import Partner, Slot, aliasing, location_of
from kernel_check.semantic import SemanticModel


def _needs_restrict(entity: Param | Field) -> bool:
    type_ = entity.type
    return type_.is_pointer and type_.pointee_const and not type_.is_restrict and not type_.pointee_volatile


def _polled(model: SemanticModel, kernel: Function) -> set[Slot]:
    """The pointers the kernel reads through `volatile`: data another agent writes while it
    runs, which `__restrict__` would promise does not change."""
    return {(r.param_index, r.field) for r in model.facts_of(kernel.usr).volatile_reads}


def _restrict_fix(data: bytes, offset: int | None) -> Fix | None:
    if offset is None:
        return None
    following = data[offset : offset + 1]
    replacement = " __restrict__" if following in (b" ", b"\t", b")", b",") else " __restrict__ "
    return Fix("insert __restrict__", (TextEdit(offset, offset, replacement),))


def _tensor(name: str) -> str:
    return f"parameter {int(name[1:]) + 1} of a helper" if name.startswith("#") else f"'{name}'"


def _may_alias(partner: Partner) -> str:
    return (
        f"; but launcher '{partner.launcher}' fills it from tensor {_tensor(partner.read_tensor)} and the "
        f"written pointer '{partner.written}' from {_tensor(partner.written_tensor)}, which a caller may pass "
        "as one tensor (in place), and the Python wrapper that calls it is not among the checked files: "
        "add `__restrict__` only if no caller does (restrict on aliasing pointers is undefined behaviour)"
    )


def _finding(
    model: SemanticModel, ctx: RuleContext, kernel: Function, read: Slot, entity: Param | Field, subject: str
) -> Finding | None:
    in_place, partner = aliasing(model, kernel, read)
    if in_place:
        return None  # one tensor is read and written: restrict would be undefined behaviour
    advice = f"{subject} should be `const T* __restrict__`"
    fix = _restrict_fix(model.data, entity.restrict_insert_offset)
    if partner is not None:
        advice, fix = advice + _may_alias(partner), None
    return ctx.finding(location_of(model, entity.span), advice, fix=fix)


@rule("KC101", needs={Need.DECLARATIONS, Need.LAUNCHES, Need.INTERFACE, Need.DATAFLOW})
def check(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    reported_structs: set[str] = set()
    for kernel in model.kernels:
        polled = _polled(model, kernel)
        for index, param in enumerate(kernel.params):
            if _needs_restrict(param) and (index, "") not in polled:
                subject = f"read-only pointer parameter '{param.name}' of kernel '{kernel.name}'"
                if (found := _finding(model, ctx, kernel, (index, ""), param, subject)) is not None:
                    yield found
            struct = model.struct_of(param.type) if not param.type.is_pointer else None
            if struct is not None and struct.qualified_name not in reported_structs:
                reported_structs.add(struct.qualified_name)
                yield from _struct_fields(model, ctx, struct, kernel, index, polled)


def _struct_fields(
    model: SemanticModel, ctx: RuleContext, struct: Struct, kernel: Function, index: int, polled: set[Slot]
) -> Iterator[Finding]:
    for field in struct.fields:
        if _needs_restrict(field) and (index, field.name) not in polled:
            subject = (
                f"read-only pointer field '{field.name}' of params struct '{struct.name}' "
                f"(passed to kernel '{kernel.name}')"
            )
            if (found := _finding(model, ctx, kernel, (index, field.name), field, subject)) is not None:
                yield found
