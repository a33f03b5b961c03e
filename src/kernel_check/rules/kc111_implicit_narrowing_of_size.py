"""## What it does
Flags a 64-bit tensor shape or stride value -- `SymbolicSize::unwrap()`, `TensorView::size(i)`,
`stride(i)`, `numel()`, `shape()[i]`, a 64-bit size/stride parameter or params field of a
kernel, or arithmetic on those -- that is converted implicitly to a narrower integer type:
in an initialization, an assignment (compound ones included), a call argument or a return.
It also flags such a value passed to `LaunchKernel(...)(kernel, ...)` for a 32-bit kernel
parameter, which the launcher narrows silently. Grid and block sizes (`dim3`) are exempt, and
so is an initialization of a variable declared `int`/`unsigned` (outside `main`), which KC110
reports as a shape/stride value in every function, host helpers that launch nothing included.

## Why is this bad?
Shapes cross the TVM-FFI boundary as `int64_t`. Narrowing one to `uint32_t` for in-kernel
indexing is fine only where the range is known, and then it should be a visible, deliberate
`static_cast` -- an implicit conversion truncates a large tensor's size without a trace.

## Example
```cpp
const uint32_t n = N.unwrap();
host::LaunchKernel(grid, kBlock, device)(scale_kernel<T>, dst, src, num_tokens.unwrap());
```

## Use instead
```cpp
const uint32_t n = static_cast<uint32_t>(N.unwrap());  // checked < 2^32 above
host::LaunchKernel(grid, kBlock, device)(scale_kernel<T>, dst, src,
                                         static_cast<uint32_t>(num_tokens.unwrap()));
```
"""

from __future__ import annotations

from collections.abc import Iterator

from kernel_check.finding import Finding, Related
from kernel_check.model import Function, Launch, Param, ShapeArgument
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._common import IntegerRoles, location_of
from kernel_check.semantic import SemanticModel

_NARROW_CANONICAL = frozenset(
    {"int", "unsigned int", "short", "unsigned short", "char", "signed char", "unsigned char"}
)


@rule("KC111", needs={Need.INTEGERS, Need.LAUNCHES})
def check(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    roles = IntegerRoles(model)
    left_to_kc110 = {d.name_span.start for d in model.integer_facts.integer_decls if roles.role(d) is not None}
    for narrowing in model.integer_facts.size_narrowings:
        if narrowing.target_offset is not None and narrowing.target_offset in left_to_kc110:
            continue
        into = f" of '{narrowing.target}'" if narrowing.target else ""
        value = _describe(narrowing.text, narrowing.source)
        yield ctx.finding(
            location_of(model, narrowing.span),
            f"{value} is narrowed implicitly to `{narrowing.target_type}` ({narrowing.context}{into}); "
            "write the `static_cast` where the range is known, or keep `int64_t`",
        )
    yield from _launch_arguments(model, ctx)


def _launch_arguments(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    for site in model.launches:
        kernel = model.function(site.kernels[0].usr) if site.kernels else None
        if site.syntax != "launch_kernel" or kernel is None:
            continue
        for argument, param in _bound_parameters(site, kernel, model.integer_facts.shape_arguments):
            if not _is_narrow(param):
                continue
            yield ctx.finding(
                location_of(model, argument.span),
                f"{_describe(argument.text, argument.source)} is passed to the `{param.type.spelling}` parameter "
                f"'{param.name}' of kernel '{kernel.name}'; LaunchKernel narrows it silently -- "
                "write the `static_cast`",
                related=[Related(location_of(model, param.span), "the 32-bit kernel parameter")],
            )


def _describe(text: str, source: str) -> str:
    text = " ".join(text.split())
    origin = f" (from `{source}`)" if source != text else ""
    return f"64-bit shape/stride value `{text}`{origin}"


def _bound_parameters(
    site: Launch, kernel: Function, arguments: list[ShapeArgument]
) -> Iterator[tuple[ShapeArgument, Param]]:
    """The kernel parameter each shape argument of the launch binds to (by position)."""
    positions = {span: index for index, span in enumerate(site.argument_spans)}
    for argument in arguments:
        index = positions.get(argument.span)
        if index is not None and index < len(kernel.params):
            yield argument, kernel.params[index]


def _is_narrow(param: Param) -> bool:
    canonical = param.type.canonical.replace("&", " ").split()
    return " ".join(w for w in canonical if w not in ("const", "volatile")) in _NARROW_CANONICAL
