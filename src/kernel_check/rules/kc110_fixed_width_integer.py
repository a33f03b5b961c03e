"""## What it does
Flags `int`, `long`, `long long`, `unsigned` and `unsigned long` (in any spelling, such as
`unsigned int` or `long int`) written as the type of a value that crosses a boundary: a
kernel or launcher parameter, a field of a params struct, or a local that takes a 64-bit
tensor shape or stride (`int rows = x.size(0);`). Inside kernel, device-function and
launcher bodies only `long` / `unsigned long` is flagged (locals, loop counters, device
function and lambda parameters): `int` is 32 bits on every CUDA target, so there the width
cannot differ between the two sides of anything. Only the written spelling counts: `int32_t`
is the same type as `int` to the compiler and is the recommended way to say it.

Exempt: template non-type parameters, `constexpr` (or `const` with a constant initializer)
locals, an `int` that a C API dictates (`int device; cudaGetDevice(&device);`,
`int rc = c_function();`), a `long long*` or `unsigned long long*` parameter or field that
the kernel (or a device function it calls) passes to a CUDA atomic as its address
(`atomicAdd(tail, 1ull)`: the 64-bit atomics take exactly that type, and on Linux `int64_t`
and `uint64_t` are `long` and `unsigned long`, which match no overload), pointers and arrays
declared locally (storage, not an index), host helpers that launch nothing (their
parameters and other locals; a local there that takes a 64-bit shape or stride is reported
all the same, since it narrows the shape wherever it is written, and KC111 leaves it to this
rule), and `main`. A params struct is one passed by value to a kernel of the file, or one
named `...Params`.

Narrowed on real code: an earlier version also flagged every `int` local index, loop counter
and device-function parameter, about 1,300 findings on a tree whose authors follow this
guide. The guide gives the reason for the convention as "the same width on both sides of the
FFI boundary", and its own header library declares `int` device-function parameters, so
those are no longer reported.

## Why is this bad?
The width of `int`/`long` is an ABI choice, not a contract: `long` is 64 bits on Linux and
32 on Windows, and a bare `int` index silently caps a kernel at 2^31 elements. Fixed-width
types make an index the same width on both sides of the TVM-FFI boundary and make every
narrowing visible.

## Example
```cpp
template <typename T>
__global__ void scale_kernel(T* __restrict__ dst, const T* __restrict__ src, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i];
}
```

## Use instead
```cpp
template <typename T>
__global__ void scale_kernel(T* __restrict__ dst, const T* __restrict__ src, uint32_t n) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i];
}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from kernel_check.finding import Finding
from kernel_check.model import IntegerDecl
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._common import IntegerRoles, location_of
from kernel_check.semantic import SemanticModel

_TYPED = {"pointer": "points to", "reference": "refers to", "array": "is an array of"}


@rule("KC110", needs={Need.INTEGERS, Need.LAUNCHES, Need.DATAFLOW})
def check(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    roles = IntegerRoles(model)
    for decl in model.integer_facts.integer_decls:
        role = roles.role(decl)
        if role is None:
            continue
        yield ctx.finding(
            location_of(model, decl.span),
            f"{role} '{decl.name}' {_TYPED.get(decl.declarator, 'is typed')} `{decl.keywords}`{_shape_note(decl)}; "
            "use a fixed-width type (`int32_t`, `uint32_t`, `int64_t`, `size_t`)",
        )


def _shape_note(decl: IntegerDecl) -> str:
    """Where the value comes from a 64-bit shape: a `long` holds it whole on Linux (it is
    the 32 bits of Windows that the rule is about), `int` and `unsigned` narrow it."""
    if not decl.shape_source:
        return ""
    verb = "holding" if "long" in decl.keywords.split() else "narrowing"
    return f", {verb} the 64-bit `{decl.shape_source}`"
