"""## What it does
Flags a vector access of global memory (`reinterpret_cast<const float4*>(x + row * stride)[j]`,
`vec.load(x + row * stride, j)`) whose address is not a multiple of the vector's alignment
for a stride or size the launcher's `TensorMatcher` lets through, even with the tensor's
data pointer aligned: a row stride of 9 floats puts every odd row's `float4` off its 16
bytes, and so does a contiguous width of 9 floats.

The same proof as KC406 (solver.py, z3), over the same contract: the launcher's matcher
gives the tensor's dims, strides and element size, and the grid, block and scalar
arguments are terms over its sizes. An access is asked when its type requires an alignment
wider than the tensor's element (clang's alignment of the vector type: a `float4` or an
`alignas(16)` vector 16 bytes; a plain struct of floats no more than a float). At each
small concrete shape it tries (the launcher's sizes alike; then padded views, a free
stride 1, 8 or 64 elements past the dims inside it; then one size apart from the rest: a
width one past a multiple of the vector), a witness is a shape, a thread and a block for
which the access, within the span, starts at a byte offset that is not a multiple of that
alignment, under the guards on its path and the launcher's `RuntimeCheck`s (a check of
`x.stride(0) % 8 == 0`, `x.is_contiguous()` with a width check, `ensure_alignment`'s
stride check, all included).

Not asked (never a finding): what KC406 leaves out (an offset that reads an id from
memory or a value the walk does not follow -- so a kernel that tests the pointer's address
itself before a vector path --, a launch that leaves a value it needs unknown, a tensor two
matchers verify), an access past the span (KC406's), a shape whose strides overlap or
broadcast, a tensor whose dtype is the launcher's type parameter `T` (its offsets count `T`s,
not bytes), and the data pointer's own alignment (KC120 and KC121 check that the launcher
asks `ensure_alignment`). One access is reported per kernel and tensor.

## Why is this bad?
A vector load or store of an address that is not a multiple of its alignment faults
(`misaligned address`) and kills the context. `ensure_alignment` on the data pointer is
no guarantee for the rows after the first: a row-strided view (`qkv[:, :hidden]`) or a
width the launcher does not check lets an odd stride through, and the kernel faults on
the second row of exactly the inputs the matcher was widened to accept.

## Example
```cpp
__global__ void copy_rows(float4* __restrict__ out, const float* __restrict__ x, int64_t x_stride, uint32_t d) {
  out[blockIdx.x * (d / 4) + threadIdx.x] = reinterpret_cast<const float4*>(x + blockIdx.x * x_stride)[threadIdx.x];
}
void launch(tvm::ffi::TensorView out, tvm::ffi::TensorView x) {
  auto R = host::SymbolicSize{"R"}, D = host::SymbolicSize{"D"};
  host::TensorMatcher({R, D}).with_strides({-1, 1}).with_dtype<float>().verify(x);
  host::RuntimeCheck(D.unwrap() % 4 == 0, "width must be a multiple of 4");
  ...
}
```

## Use instead
```cpp
  host::RuntimeCheck(x.stride(0) % 4 == 0, "x's row stride must keep 16-byte alignment");
```
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from kernel_check.finding import Finding
from kernel_check.model import SymbolicAccess, Term
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._layout_search import APART, OFFSET, PADDED, ZERO, Found, concrete, defer, within_span
from kernel_check.semantic import SemanticModel
from kernel_check.witness import Layout

# the shapes a padded view gives first (the natural witness), then the others
_SHAPES = replace(PADDED, apart=PADDED.apart + APART)


@rule("KC408", needs={Need.SYMBOLIC, Need.CONTRACTS})
def check(model: SemanticModel, ctx: RuleContext) -> list[Finding]:
    defer(model, ctx, (_misaligned,), _message, asked=_vector, shapes=_SHAPES)
    return []


def _vector(access: SymbolicAccess) -> bool:
    """An access whose type requires more alignment than one byte (a tensor's element may
    still require as much: `_misaligned` asks only a wider one)."""
    return access.byte_width > 0 and access.byte_align > 1


def _misaligned(access: SymbolicAccess, layout: Layout, values: Mapping[str, int]) -> Term | None:
    """Within the span, the access's first byte off its alignment; None where the type
    requires no more than the element, the layout is not nested at the shape, or the offsets
    count a launcher's `T` elements, not bytes (an alignment in bytes says nothing of them)."""
    if layout.element_type or access.byte_align <= layout.element_size or concrete(layout, values) is None:
        return None
    off = Term("!=", (Term("%", (OFFSET, Term("const", value=access.byte_align))), ZERO))
    return Term("and", (within_span(access), off))


def _message(access: SymbolicAccess, found: Found) -> str:
    return (
        f"`{access.pointer}` is {'written' if access.is_write else 'read'} as a {access.byte_width}-byte vector at "
        f"byte {found.offset()}, not a multiple of its {access.byte_align}-byte alignment though the data "
        f"pointer is ({found.layout_text()}): for {found.witness.shape()}{found.place(access)}; have the "
        "launcher check the strides and sizes keep the vector aligned (`RuntimeCheck(x.stride(0) % n == 0)`, "
        "`ensure_alignment`), or fall back to element accesses"
    )
