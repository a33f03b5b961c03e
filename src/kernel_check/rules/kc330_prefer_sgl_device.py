"""## What it does
Flags a device function whose specifiers are spelled `__device__ __forceinline__` or
`__forceinline__ __device__` (in any order, with other specifiers such as `static` or
`constexpr` around them), and `__host__ __device__ __forceinline__` in any order.

`--fix` replaces the CUDA keywords with `SGL_DEVICE` (or `SGL_DEVICE_HOST` when `__host__`
is among them) and keeps the other specifiers; it is offered only when the file includes
`sgl_kernel/utils.h`, which defines the macros.

Like every rule that states the guide's conventions, it reports only in a tree that uses the
`sgl_kernel/` library: its own copy (found walking up from the file, or in `include-dirs`),
or a file that includes one of its headers. A tree without it is parsed against the copy
bundled with kernel-check, which is no reason to ask for the library's conventions.

## Why is this bad?
`SGL_DEVICE` and `SGL_DEVICE_HOST` are the project's spelling of these specifier sets. They
say at a glance that a helper is an inlined device (or host-and-device) function, and they
keep host-only builds of a header compiling (they expand to `inline` without CUDA).

## Example
```cpp
__device__ __forceinline__ float silu(float x) { return x / (1.0f + __expf(-x)); }
```

## Use instead
```cpp
SGL_DEVICE float silu(float x) { return x / (1.0f + __expf(-x)); }
```
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from kernel_check.finding import Finding, Fix, TextEdit
from kernel_check.model import Span
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._common import location_of
from kernel_check.semantic import SemanticModel

_CUDA_KEYWORD_RE = re.compile(rb"\b(?:__device__|__forceinline__|__host__)\b")
_MACRO_HEADER = "sgl_kernel/utils.h"


@rule("KC330", needs={Need.DECLARATIONS, Need.SCOPE})
def check(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    if not model.header_library.adopted():  # the macro is the library's: no reason to ask for it elsewhere
        return
    fixable = any(path.replace("\\", "/").endswith(_MACRO_HEADER) for path in model.scope_facts.included_files)
    for function in model.functions:
        words = function.specifier_spelling.split()
        if function.specifier_span is None or "__device__" not in words or "__forceinline__" not in words:
            continue
        macro = "SGL_DEVICE_HOST" if "__host__" in words else "SGL_DEVICE"
        yield ctx.finding(
            location_of(model, function.specifier_span),
            f"'{function.name}' spells out `{function.specifier_spelling}`; use `{macro}`",
            fix=_fix(model, function.specifier_span, macro) if fixable else None,
        )


def _fix(model: SemanticModel, span: Span, macro: str) -> Fix:
    """The first CUDA keyword becomes the macro; each other one is deleted together with the
    blank after it (before it, for the last word of the run), so `static`, `constexpr`...
    stay where they were."""
    data = model.data
    keywords = list(_CUDA_KEYWORD_RE.finditer(data, span.start, span.end))
    edits = [TextEdit(keywords[0].start(), keywords[0].end(), macro)]
    for keyword in keywords[1:]:
        start, end = keyword.start(), keyword.end()
        if end < span.end:
            while data[end : end + 1] in (b" ", b"\t"):
                end += 1
        else:
            while start > span.start and data[start - 1 : start] in (b" ", b"\t"):
                start -= 1
        edits.append(TextEdit(start, end, ""))
    return Fix(f"use {macro}", tuple(edits))
