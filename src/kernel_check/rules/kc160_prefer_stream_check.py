"""## What it does
Flags `host::RuntimeCheck(cond, args...)` used as a statement, where
`CHECK_HOST(cond) << args...` fits, and `host::RuntimeDeviceCheck(expr)` where
`CHECK_CUDA(expr)` fits.

It reports only where the library the file uses defines the macro (`CHECK_HOST`,
`CHECK_CUDA`): the tree's own copy, or the bundled one where the file includes it.

## Why is this bad?
`RuntimeCheck` is an ordinary function, so its message arguments are evaluated (strings
built, numbers formatted) on every call, also when the check passes. `CHECK_HOST` only
builds the message on the failure path and records the file and line of the check.
`RuntimeDeviceCheck` takes no context at all, while `CHECK_CUDA(expr) << "..."` reports
the failed expression, its location and whatever context is streamed into it.

`RuntimeCheck` is reported only when one of its message arguments is more than a string
literal (a number, a call, a name): with literal messages nothing is evaluated in vain, and
the guide's reason for preferring `CHECK_HOST` does not apply.

Only reported where the header library on the include path defines the macro it suggests:
with an `sgl_kernel/` that has no `CHECK_HOST` (or `CHECK_CUDA`) the function is the form
that works.

## Example
```cpp
host::RuntimeCheck(n % 8 == 0, "hidden size must be a multiple of 8, got ", n);
host::RuntimeDeviceCheck(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
```

## Use instead
```cpp
CHECK_HOST(n % 8 == 0) << "hidden size must be a multiple of 8, got " << n;
CHECK_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem))
    << "dynamic shared memory " << smem;
```
"""

from __future__ import annotations

from collections.abc import Iterator

from kernel_check.finding import Finding
from kernel_check.model import ApiCall
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._common import location_of
from kernel_check.semantic import SemanticModel

_REPLACEMENTS = {"RuntimeCheck": "CHECK_HOST(cond) << ...", "RuntimeDeviceCheck": "CHECK_CUDA(expr) << ..."}
_MACROS = {"RuntimeCheck": "CHECK_HOST", "RuntimeDeviceCheck": "CHECK_CUDA"}


def _is_library_check(call: ApiCall) -> bool:
    """The sgl_kernel function (a dependent call has no qualified name yet)."""
    if call.name not in _REPLACEMENTS or call.function_name in _REPLACEMENTS:
        return False  # not a check, or inside the check functions' own definitions
    qualified = call.qualified_name
    # a function, or the constructor of a check spelled as a struct (`RuntimeCheck(cond, ...)`
    # builds a temporary whose constructor throws)
    return not qualified or qualified.endswith((f"host::{call.name}", f"host::{call.name}::{call.name}"))


def _costs_something(call: ApiCall) -> bool:
    """A RuntimeDeviceCheck always (it carries no context); a RuntimeCheck whose message
    arguments are evaluated for nothing when the check passes (anything but string literals)."""
    if call.name != "RuntimeCheck":
        return True
    arguments = [argument.strip() for argument in call.argument_names if argument.strip()]  # '': a default
    return any(not argument.startswith(('"', 'u8"', 'R"')) for argument in arguments[1:])


@rule("KC160", needs={Need.INTERFACE})
def check(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    for call in model.launcher_facts.api_calls:
        if (
            _is_library_check(call)
            and call.result_use == "discarded"
            and _costs_something(call)
            and model.header_library.provides(_MACROS[call.name])
        ):
            hint = (
                "its message arguments are evaluated even when the check passes"
                if call.name == "RuntimeCheck"
                else "it cannot carry context for the error message"
            )
            yield ctx.finding(
                location_of(model, call.span),
                f"prefer `{_REPLACEMENTS[call.name]}` over `{call.name}(...)`: {hint}",
            )
