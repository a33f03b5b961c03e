"""## What it does
Checks for `functools.lru_cache` or `functools.cache` on a function that calls `load_jit`,
however the decorator is imported (`@functools.cache`, `@ft.lru_cache(maxsize=None)`,
`from functools import lru_cache as lc` then `@lc`).

## Why is this bad?
A JIT module factory runs on every call of its entry point to fetch the compiled module,
so its cache is on the forward path, and `functools` caches are incompatible with
`torch.compile`. `cache_once`, from the JIT utilities, is the cache for module factories:
it keys on the compile-time arguments and stays usable under `torch.compile`.

## Example
```python
import functools

from sglang.kernels.jit.utils import load_jit, make_cpp_args


@functools.lru_cache(maxsize=None)
def _jit_scale_module(dtype):
    args = make_cpp_args(dtype)
    return load_jit("scale", *args, cuda_files=["elementwise/scale.cuh"])
```

## Use instead
```python
from sglang.kernels.jit.utils import cache_once, load_jit, make_cpp_args


@cache_once
def _jit_scale_module(dtype):
    args = make_cpp_args(dtype)
    return load_jit("scale", *args, cuda_files=["elementwise/scale.cuh"])
```
"""

from __future__ import annotations

from collections.abc import Iterator

from kernel_check.finding import Finding, Related
from kernel_check.pymodel import PyModel
from kernel_check.registry import RuleContext, rule

_FUNCTOOLS_CACHES = frozenset({"functools.lru_cache", "functools.cache"})


@rule("KC501")
def check(model: PyModel, ctx: RuleContext) -> Iterator[Finding]:
    for function in model.functions:
        load_jit = next((call for call in model.calls_in(function) if call.name == "load_jit"), None)
        if load_jit is None:
            continue
        for decorator in function.decorators:
            if decorator.qualified in _FUNCTOOLS_CACHES:
                yield ctx.finding(
                    decorator.span.location(ctx.path),
                    f"`{decorator.qualified}` on JIT module factory `{function.name}`; use `cache_once`",
                    related=[Related(load_jit.span.location(ctx.path), "`load_jit` is called here")],
                )
