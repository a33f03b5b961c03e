"""## What it does
Flags a launcher whose `tvm::ffi::TensorView` parameter has its `data_ptr()` used before
the tensor reaches any `TensorMatcher(...).verify(...)`. A tensor handed to another
function first (which may verify it) counts as reached, and so does every parameter of a
launcher that a function of the same file calls with tensors after verifying tensors of
its own (that caller checks; a caller that only forwards does not count).

A helper whose body only returns its tensor's data pointer (`cptr(t)` returning
`t.data_ptr()`, through casts), or such a lambda held by a local (`auto ptr = [](const auto&
t) { return t.data_ptr(); };`), verifies nothing: calling it is a `data_ptr()` use. Comparing
`data_ptr()` with null, or testing it as a bool (`if (!t.data_ptr()) return;`), reads no data
and is not a use. A pointer local that holds it and is tested for null first (`void* p =
t.data_ptr(); if (p != nullptr) ...`: is the optional tensor there?) is used where it is next
read: a launcher that verifies `t` only when it is present and hands `p` on only then uses it
after the verify. A pointer taken into a local with no such test is used where it is taken.

## Why is this bad?
An unverified tensor can have any rank, shape, dtype, device or layout. The kernel then
reads a CPU pointer, the wrong element type or past the end of the buffer: a crash or a
silently wrong result instead of a clear error naming the tensor.

## Example
```cpp
void scale(tvm::ffi::TensorView out, tvm::ffi::TensorView in) {
  auto n = host::SymbolicSize{"n"};
  host::TensorMatcher({n}).with_dtype<fp32_t>().with_device<kDLCUDA>().verify(out);
  host::LaunchKernel(1, 256, out.device())(scale_kernel, static_cast<float*>(out.data_ptr()),
                                            static_cast<const float*>(in.data_ptr()));
}
```

## Use instead
```cpp
  host::TensorMatcher({n}).with_dtype<fp32_t>().with_device<kDLCUDA>().verify(out).verify(in);
```
"""

from __future__ import annotations

from collections.abc import Iterator

from kernel_check.finding import Finding, Related
from kernel_check.model import Function
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._common import location_of
from kernel_check.semantic import SemanticModel


def _tensor_params(function: Function) -> list[str]:
    return [
        p.name
        for p in function.params
        if p.name and p.type.canonical.replace("const ", "").rstrip(" &") == "tvm::ffi::TensorView"
    ]


def _verified_by_callers(model: SemanticModel, function: Function, seen: frozenset[str] = frozenset()) -> bool:
    """Whether a caller in this file that receives or verifies tensors takes on the checks:
    one with a TensorMatcher of its own, or one whose callers do (a pure forwarder does not)."""
    for usr in model.tensor_callers(function) - seen:
        if any(c.verified for c in model.facts_of(usr).matcher_chains):
            return True
        caller = model.function(usr)
        if caller is not None and _verified_by_callers(model, caller, seen | {function.usr}):
            return True
    return False


@rule("KC141", needs={Need.INTERFACE})
def check(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    for function in model.functions:
        if function.usr not in model.launching_usrs or _verified_by_callers(model, function):
            continue
        facts = model.facts_of(function.usr)
        reached = [(v.name, v.span.start) for c in facts.matcher_chains for v in c.verified]
        reached += [(h.tensor, h.span.start) for h in facts.tensor_handoffs]
        for name in _tensor_params(function):
            uses = sorted(
                (u for u in facts.tensor_data_uses if u.tensor == name),
                key=lambda u: u.first_read,
            )
            if not uses:
                continue
            first = uses[0]
            if any(tensor == name and start <= first.first_read for tensor, start in reached):
                continue
            param = next(p for p in function.params if p.name == name)
            yield ctx.finding(
                location_of(model, first.span),
                f"`{name}.data_ptr()` is used but '{name}' was not verified by a TensorMatcher "
                f"before; add it to a `.verify({name})` chain of launcher '{function.name}'",
                related=[Related(location_of(model, param.span), f"'{name}' comes in here")],
            )
