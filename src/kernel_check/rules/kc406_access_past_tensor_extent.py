"""## What it does
Flags a global-memory access of a kernel that the kernel's own launch lets reach past the end
of the tensor it reads or writes (or before its start): a row addressed with another tensor's
stride (`pointer::offset(k_rope, i * stride_nope_bytes)`), a row-strided view read as
contiguous (`x[idx]` of a matcher's `with_strides({-1, 1})`), a contiguous output written
with an input's row stride.

The check is a proof, not a pattern (solver.py, z3), asked only where the file's launch of
the kernel tells everything the access depends on: the launcher's `TensorMatcher` gives the
tensor's dims, its strides (`with_strides`, or the contiguous ones) and one element size, and
the grid, block and every scalar argument the offset or its guards name are terms over the
launcher's sizes (`x.size(i)`, `x.stride(i)`, `x.shape()[i]`, `S.unwrap()`, `S.set_value(v)`, the SM
count). A field of a params struct the launcher filled, handed to the kernel on its own
(`(kernel, params.slots, params.count)`), carries that field's tensor alone.
The access's offset in bytes -- followed through casts, `pointer::offset` (bytes), vector loads
(`vec.load(p, i)`: `i` whole vectors), device helpers in sight that the kernel hands the pointer
(`load_as<float4>(x, i)`, `pair_sum(x + i)`: the helper's accesses at the caller's offset, its
type parameters the call's types), and through a template kernel's `const T* x` in steps of
`sizeof(T)`, which the launch's instantiation gives (`kernel<float>`: 4 bytes; a launcher over
`T` that launches `kernel<T>` and verifies the tensor `with_dtype<T>()` makes both sides count
in `T`s, whatever `T` is; a vector type a template sizes, `AlignedVector<T, 16 / sizeof(T)>`, in
steps of its bytes), with the template values the launch hands on (`kernel<kThreads>` in a
launcher over `kThreads`: one the file builds the launcher with, `Gate<128>::run(...)`, else any
value the launcher's, its class's and the kernel's `static_assert`s allow, at least 1, a block
of at most 1024 threads; the witness names it) -- is compared with the tensor's span, the bytes
from its first element to the end of its last (1 + the sum of (dim - 1) * stride elements),
under the guards on the access's path (`if`s, loop bounds, early returns) and the launcher's
`RuntimeCheck`s. The search tries small concrete shapes (every size alike, then one apart from
the rest), under which the offset is linear: a witness names the sizes, the thread and the
block. A size the matcher leaves free of the kernel's scalar arguments (`{-1, -1}` for a tensor
the kernel indexes by `ne_n * ne_k`) is a shape the launcher lets through: the finding says
which check it lacks.

A launch in a helper of the file that the launcher calls (`launch_one(q, q_out, ...)`, the
helper launching with `data_ptr(x)` of its `const TensorView& x`, or handed `q.data_ptr()` as a
`const float*`) is asked with the launcher's contract too: the helper walked where it is
called, its parameters bound to the call's arguments and its tensors to the launcher's (each
call its own witness, the finding names the launcher). A matcher's dim that names an integer
local of the launcher (`TensorMatcher({R, hidden})`, `hidden = heads * head_dim`) is that
local's value.

A guard that picks the path by what a tensor holds and bounds no index (`if (done[row])
return;`, `if (seq_len > topk)`) is a path some data takes: the witness names the value it reads
(`with `done[blockIdx.x]` = 0`).

Not asked (never a finding): an offset that depends on an integer read from memory (KC401's)
or on a value the walk does not follow (a call's result, a local assigned after its
declaration, a loop bound it does not follow), a guard that compares an integer read from
memory with a thread, block or loop index (`if (t < lens[row])`: the data bounds the index,
which the launcher does not state), an access of a kernel whose launch leaves a value it needs
unknown (a template argument neither constant nor the launcher's own parameter, a launcher's
parameter a `static_assert` bounds with an operation terms do not have, a grid from
an unfollowed call, a `T` the launch instantiates with a type the tensor's matcher does not
share, an integer a launching lambda's calls pass: `[&](auto kernel, int64_t n) {...}` called
as `launch(k, numel / kVec)` under the caller's own tests, which the walk does not tie to
`n`), of a tensor two matchers verify, one whose dtype the matcher leaves open in size or
one a dim of which it writes as an expression (`{static_cast<int64_t>(n)}`); a query the
solver cannot answer within its budget (`solver-budget` per kernel, of its own, each access a
quarter at most). A pointer handed to a call is out where it points past the span's end, not
at it (a range's end). One access is reported per kernel and tensor (the first in the body).

## Why is this bad?
`TensorMatcher` accepts the shapes and strides it states; a kernel that addresses a tensor
with a stride or extent the matcher does not bind to it reads a neighbour's memory or writes
past the allocation for some input the launcher lets through -- typically a padded or sliced
view, or two tensors whose sizes differ.

## Example
```cpp
__global__ void copy_rows(const float* x, float* out, int64_t x_stride, uint32_t d) {
  out[blockIdx.x * x_stride + threadIdx.x] = x[blockIdx.x * x_stride + threadIdx.x];  // out is contiguous
}
void launch(tvm::ffi::TensorView x, tvm::ffi::TensorView out) {
  auto R = host::SymbolicSize{"R"}, D = host::SymbolicSize{"D"};
  host::TensorMatcher({R, D}).with_strides({-1, 1}).with_dtype<float>().verify(x);
  host::TensorMatcher({R, D}).with_dtype<float>().verify(out);
  host::LaunchKernel(R.unwrap(), D.unwrap(), x.device())(copy_rows, ..., x.stride(0), D.unwrap());
}
```

## Use instead
```cpp
  out[blockIdx.x * d + threadIdx.x] = x[blockIdx.x * x_stride + threadIdx.x];
```
"""

from __future__ import annotations

from collections.abc import Mapping

from kernel_check.finding import Finding
from kernel_check.model import SymbolicAccess, Term
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._layout_search import OFFSET, SPAN, WIDTH, ZERO, Found, bytes_reached, defer
from kernel_check.semantic import SemanticModel
from kernel_check.witness import Layout


@rule("KC406", needs={Need.SYMBOLIC, Need.CONTRACTS})
def check(model: SemanticModel, ctx: RuleContext) -> list[Finding]:
    defer(model, ctx, (_past_end, _before_start), _message)
    return []


def _past_end(access: SymbolicAccess, layout: Layout, values: Mapping[str, int]) -> Term:
    return Term("<", (SPAN, Term("+", (OFFSET, WIDTH))))


def _before_start(access: SymbolicAccess, layout: Layout, values: Mapping[str, int]) -> Term:
    return Term("<", (OFFSET, ZERO))


def _message(access: SymbolicAccess, found: Found) -> str:
    reached = bytes_reached(found.offset(), found.width(), found.unit())
    side = f"its span is {found.unit()}s 0 to {found.span() - 1}" if found.condition == 0 else "before its start"
    return (
        f"`{access.pointer}` is {'written' if access.is_write else 'read'} at {reached}, {side} "
        f"({found.layout_text()}): for {found.witness.shape()}{found.place(access)}; address it with its own "
        "dims and strides, or have the launcher check the sizes the kernel assumes"
    )
