"""## What it does
Flags a launcher (or a host function with a `TensorMatcher`, or an entry point handing
tensors to one) that validates a `TensorView` by hand: `dtype()`, `shape()`, `ndim()`,
`dim()`, `device()`, `strides()`, `size(i)`, `stride(i)`, `numel()` or `is_contiguous()`
inside the condition of `CHECK_HOST`, `RuntimeCheck`, `assert`, `TVM_FFI_ICHECK`, or an
`if` whose branch throws. Using those values for computation, or branching on them
without failing, is not reported.

Like every rule that states the guide's conventions, it reports only in a tree that uses the
`sgl_kernel/` library: its own copy (found walking up from the file, or in `include-dirs`),
or a file that includes one of its headers. A tree without it is parsed against the copy
bundled with kernel-check, which is no reason to ask for the library's conventions.

## Why is this bad?
`TensorMatcher` is the one place tensor preconditions live: it checks rank, every
dimension, dtype, device and strides together, binds symbolic sizes that later tensors
must agree with, and fails with a message naming the tensor, the dimension and both
values. Hand-written checks drift from the matcher, miss cases (a stride, a device
ordinal) and produce ad-hoc messages.

## Example
```cpp
void launch(tvm::ffi::TensorView x) {
  CHECK_HOST(x.ndim() == 2 && x.size(1) == 128) << "x must be [N, 128]";
  CHECK_HOST(x.dtype().code == kDLFloat && x.dtype().bits == 16) << "x must be fp16";
}
```

## Use instead
```cpp
void launch(tvm::ffi::TensorView x) {
  auto n = host::SymbolicSize{"n"};
  host::TensorMatcher({n, 128}).with_dtype<fp16_t>().with_device<kDLCUDA>().verify(x, "x");
}
```
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import groupby

from kernel_check.finding import Finding
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._common import location_of
from kernel_check.semantic import SemanticModel


def _validating_functions(model: SemanticModel) -> frozenset[str]:
    """Launchers, functions with a TensorMatcher, and the entry points that hand tensors to
    them: the places whose tensor checks belong in a matcher."""
    functions = model.launching_usrs | {chain.function for chain in model.launcher_facts.matcher_chains}
    validating = [f for f in model.functions if f.usr in functions]
    return functions.union(*(model.tensor_callers(f) for f in validating))


@rule("KC140", needs={Need.INTERFACE})
def check(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    if not model.header_library.adopted():  # `TensorMatcher` is the library's: a tree without it checks by hand
        return
    facts = model.launcher_facts
    checks = [
        i for i in facts.tensor_inspections if i.function in _validating_functions(model) and i.context == "check"
    ]
    checks.sort(key=lambda i: (i.span.line, i.span.start))
    for _, on_line in groupby(checks, key=lambda i: i.span.line):
        inspections = list(on_line)
        shown = ", ".join(dict.fromkeys(f"`{i.tensor}.{i.method}()`" for i in inspections))
        yield ctx.finding(
            location_of(model, inspections[0].span),
            f"hand-written tensor check on {shown}; state it in the TensorMatcher (dims, "
            "SymbolicSize, with_dtype, with_device, with_strides) and check the bound symbols instead",
        )
