"""## What it does
Flags a global-memory access that lands between a tensor's elements -- in the padding of a
row, past its width but short of its stride -- for a stride the launcher's `TensorMatcher`
lets through: a kernel that indexes a row-strided view (`with_strides({S, 1})`,
`with_strides({-1, 1})`) as if it were contiguous (`x[row * d + col]` with `d` the width).

The same proof as KC406 (solver.py, z3), over the same contract: the launcher's matcher
gives the tensor's dims, strides and element size, and the grid, block and scalar
arguments are terms over its sizes. At each small concrete shape it tries (the launcher's
sizes alike; then padded views: each free stride tight around the dims inside it but one,
1, 8 or 64 elements past; then one size apart from the rest), the layout's dims are ordered by
stride, each nested in the one before; the bytes past the elements of an index of a dim,
inside its stride, are padding. A witness is a shape, a thread and a block for which the
first or the last byte of the access lies in the padding, under the guards on its path and
the launcher's `RuntimeCheck`s (`x.is_contiguous()` and `ensure_alignment`'s stride check
included).

Not asked (never a finding): what KC406 leaves out (an offset that reads an id from
memory or a value the walk does not follow, a launch that leaves a value it needs unknown,
a tensor two matchers verify), a byte past the span (KC406's), a pointer handed to a call,
a layout with no padding at the shape (contiguous, or a stride the matcher pins), and a
shape whose strides overlap or broadcast (an overlapping view reads the wrong element, but
in no padding). One access is reported per kernel and tensor.

## Why is this bad?
`TensorMatcher` accepts every stride `with_strides` leaves open, so a padded or sliced view
(`qkv[:, :hidden]`, a row-padded cache) passes the launcher's check. A kernel that steps by
the width instead of the stride reads the padding and the next rows' elements in place of
its own: wrong results with no fault, for exactly the inputs the matcher was widened to
accept.

## Example
```cpp
__global__ void scale_rows(float* __restrict__ out, const float* __restrict__ x, int64_t d) {
  out[blockIdx.x * d + threadIdx.x] = 2.0f * x[blockIdx.x * d + threadIdx.x];  // x is row-strided
}
void launch(tvm::ffi::TensorView out, tvm::ffi::TensorView x) {
  auto R = host::SymbolicSize{"R"}, D = host::SymbolicSize{"D"};
  host::TensorMatcher({R, D}).with_strides({-1, 1}).with_dtype<float>().verify(x);
  host::TensorMatcher({R, D}).with_dtype<float>().verify(out);
  host::LaunchKernel(R.unwrap(), D.unwrap(), x.device())(scale_rows, ..., D.unwrap());
}
```

## Use instead
```cpp
__global__ void scale_rows(float* __restrict__ out, const float* __restrict__ x, int64_t x_stride, int64_t d) {
  out[blockIdx.x * d + threadIdx.x] = 2.0f * x[blockIdx.x * x_stride + threadIdx.x];
}
// launched with x.stride(0); or a matcher without `with_strides` (contiguous rows only)
```
"""

from __future__ import annotations

from collections.abc import Mapping

from kernel_check.finding import Finding
from kernel_check.model import SymbolicAccess, Term
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._layout_search import OFFSET, PADDED, WIDTH, Found, bytes_reached, concrete, defer, within_span
from kernel_check.semantic import SemanticModel
from kernel_check.witness import Layout


@rule("KC407", needs={Need.SYMBOLIC, Need.CONTRACTS})
def check(model: SemanticModel, ctx: RuleContext) -> list[Finding]:
    defer(model, ctx, (_in_padding,), _message, asked=_covers_bytes, shapes=PADDED)
    return []


def _covers_bytes(access: SymbolicAccess) -> bool:
    """An access of an element or a vector (a pointer handed to a call covers none)."""
    return access.byte_width > 0


def _in_padding(access: SymbolicAccess, layout: Layout, values: Mapping[str, int]) -> Term | None:
    """Within the span, the access's first or last byte in the padding; None at a shape
    whose layout has none or is not nested."""
    at_shape = concrete(layout, values)
    if at_shape is None or not at_shape.has_padding():
        return None
    last = Term("-", (Term("+", (OFFSET, WIDTH)), Term("const", value=1)))
    return Term("and", (within_span(access), Term("or", (at_shape.in_padding(OFFSET), at_shape.in_padding(last)))))


def _message(access: SymbolicAccess, found: Found) -> str:
    reached = bytes_reached(found.offset(), found.width(), found.unit())
    return (
        f"`{access.pointer}` is {'written' if access.is_write else 'read'} at {reached}, padding between "
        f"its elements ({found.layout_text()}): for {found.witness.shape()}{found.place(access)}; index it "
        "with the stride the matcher allows (pass `.stride(i)` to the kernel), or have the matcher pin the "
        "stride the kernel assumes"
    )
