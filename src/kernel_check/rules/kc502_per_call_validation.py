"""## What it does
Checks for `raise`, `assert` and tensor-metadata tests (`x.dim() != 2`, `x.dtype in ...`,
`if not x.is_cuda:`) in a kernel entry point: a function that gets a module from a
JIT module factory and calls one of its exports (`module = _jit_scale_module(dtype)` then
`module.scale(...)`, or `_jit_scale_module(dtype).scale(...)`).

A factory is a function of the same file decorated with `cache_once` (under any import
name) or calling `load_jit`, or any function named like `_jit_<name>_module`, the naming
convention that identifies factories imported from other files. Checks inside a factory are
fine: they run once per specialisation. A test that guards a `raise` is reported once, at
the `raise`. Allocating an optional output (`if out is None: out = torch.empty_like(x)`),
including the tests that pick its dtype or shape there, is not a check; nor is a comparison
that only computes a value (`has_bias = bias.numel() > 0`, a kernel argument). Nor is a test
that only picks the module or variant to call (`if x.shape[-1] == 128: mod = _jit_a_module()
else: mod = _jit_b_module()`, or the same as a conditional expression: the entry point's
job), or one whose branches only convert an input (`x = x.contiguous()`,
`r if r.dtype == x.dtype else r.to(x.dtype)`: the conversion is the work, not a check). Tests and
benchmarks (`test_*.py`, `bench_*.py`, `conftest.py`, and any file under the registered-tests
root) are not entry points: they call exports and assert on purpose.

## Why is this bad?
The entry point runs on every forward pass, so each check in it costs interpreter time on
every call. Tensor invariants are free in the C++ launcher next to the kernel launch
(`TensorMatcher`, `CHECK_HOST`); a check on the compile key belongs in the `cache_once`
factory, where it runs once per specialisation. The entry point should only pick the module
and allocate the output.

## Example
```python
@cache_once
def _jit_scale_module(dtype):
    return load_jit("scale", *make_cpp_args(dtype), cuda_files=["elementwise/scale.cuh"])


def scale(src, factor, out=None):
    if src.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise RuntimeError(f"unsupported dtype {src.dtype}")
    if out is None:
        out = torch.empty_like(src)
    _jit_scale_module(src.dtype).scale(out, src, factor)
    return out
```

## Use instead
```python
@cache_once
def _jit_scale_module(dtype):
    if dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise RuntimeError(f"unsupported dtype {dtype}")
    return load_jit("scale", *make_cpp_args(dtype), cuda_files=["elementwise/scale.cuh"])


def scale(src, factor, out=None):
    if out is None:
        out = torch.empty_like(src)
    _jit_scale_module(src.dtype).scale(out, src, factor)
    return out
```
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from fnmatch import fnmatch
from pathlib import PurePosixPath

from kernel_check.finding import Finding, Related
from kernel_check.pymodel import CheckKind, Function, PyModel, ResultAttributeCall, path_under
from kernel_check.registry import RuleContext, rule

# The factory naming convention; the only sign of a factory imported from another file.
_FACTORY_NAME = re.compile(r"_?jit_(\w+_)?module")
# Files that call exports to test or time them, never on a forward pass.
_NOT_WRAPPERS = ("test_*.py", "bench_*.py", "conftest.py")


def _local_factories(model: PyModel) -> set[str]:
    return {
        function.name
        for function in model.functions
        if function.has_decorator("cache_once") or any(call.name == "load_jit" for call in model.calls_in(function))
    }


def _kernel_calls(function: Function, factories: set[str]) -> list[ResultAttributeCall]:
    return [
        call
        for call in function.result_calls
        if call.producer_name in factories or _FACTORY_NAME.fullmatch(call.producer_name)
    ]


@rule("KC502")
def check(model: PyModel, ctx: RuleContext) -> Iterator[Finding]:
    name = PurePosixPath(ctx.rel_path).name
    if any(fnmatch(name, pattern) for pattern in _NOT_WRAPPERS) or path_under(
        ctx.rel_path, ctx.options["registered-tests-root"]
    ):
        return
    factories = _local_factories(model)
    for function in model.functions:
        kernel_calls = _kernel_calls(function, factories)
        if function.name in factories or not kernel_calls:
            continue
        kernel = kernel_calls[0]
        related = [Related(kernel.span.location(ctx.path), f"kernel `{kernel.attribute}` is called here")]
        modules = {call.producer for call in kernel_calls}
        for found in function.checks:
            if found.converts or (found.selects and modules.issuperset(found.selects)):
                continue  # converting an input, or picking the module to call: not validation
            what = f"`{found.subject}` test" if found.kind is CheckKind.TENSOR_TEST else f"`{found.subject}`"
            yield ctx.finding(
                found.span.location(ctx.path),
                f"{what} in per-call entry point `{function.name}`; "
                "move it to the C++ launcher or the `cache_once` factory",
                related=related,
            )
