"""## What it does
Flags a `TensorMatcher` chain in a launcher that verifies a tensor without
`.ensure_alignment(w)` when the tensor's data pointer reaches a kernel parameter that the
kernel accesses with vectorized loads or stores: `AlignedVector::load/store`,
`tile::Memory` of a vector type, `warp::load_bytes/store_bytes`, `load_as/store_as` of a
multi-element type, or a cast to `int4`/`float4`/`uint2`/`half2`... The pointer is
followed through local copies, params-struct fields, helpers that only return a tensor's
data pointer (`cptr(t)`), structured bindings of a params struct in the kernel
(`const auto& [input, output, n] = params;`) and device functions of the same file. A vector type reached
through a class template's member (`using vec_t = typename Plan<T, N>::vec_t;`,
`typename Traits<T>::Vec`) has the width that member spells for the arguments launched; one
declared only in explicit specializations (`template <> struct Traits<bf16_t, 16> {...}`)
has the narrowest width among them. A pointer picked by `?:` (`reinterpret_cast<vec_t*>(is_q
? q : k)`) feeds the access from both tensors.

## Why is this bad?
A vector access of `w` bytes needs an address that is a multiple of `w`. `TensorMatcher`
accepts any data pointer and, with `with_strides`, any row stride, so a sliced or padded
tensor reaches the kernel and fails with `misaligned address` (or silently reads the wrong
bytes through a wider type). `.ensure_alignment(w)` turns that into a clear host-side error.

Not reported for a tensor whose data address the launcher tests itself
(`reinterpret_cast<uintptr_t>(x.data_ptr()) % 16`, `... & 15`, or a helper named `...align...`
called on it), whether it then rejects the tensor or falls back to a scalar kernel, nor for
an access whose width is one byte for the instantiation launched (`AlignedVector<fp8_t, 1>`,
the scalar fallback of a `kVecN` selection: any address will do). When the
header library on the include path has no `ensure_alignment`, the message says how to check
by hand instead.

## Example
```cpp
template <typename T>
__global__ void scale_kernel(T* __restrict__ dst, const T* __restrict__ src, uint32_t n) {
  using vec_t = device::AlignedVector<T, 16 / sizeof(T)>;
  vec_t v;
  v.load(src, blockIdx.x * blockDim.x + threadIdx.x);
  v.store(dst, blockIdx.x * blockDim.x + threadIdx.x);
}

template <typename T>
void scale(tvm::ffi::TensorView dst, tvm::ffi::TensorView src) {
  auto n = host::SymbolicSize{"n"};
  host::TensorMatcher({n}).with_dtype<T>().verify(dst).verify(src);
  host::LaunchKernel(grid, 256, dst.device())(scale_kernel<T>, static_cast<T*>(dst.data_ptr()),
                                               static_cast<const T*>(src.data_ptr()), n32);
}
```

## Use instead
```cpp
  host::TensorMatcher({n}).with_dtype<T>().ensure_alignment(16).verify(dst).verify(src);
```
"""

from __future__ import annotations

from collections.abc import Iterator

from kernel_check.finding import Finding, Related
from kernel_check.model import MatcherChain
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._alignment import (
    LauncherScope,
    access_location,
    fixed_value,
    launcher_scope,
    launchers_with_chains,
)
from kernel_check.rules._common import location_of
from kernel_check.semantic import SemanticModel, VectorFeed


@rule("KC120", needs={Need.INTERFACE})
def check(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    for launcher, chains in launchers_with_chains(model):
        feeds = model.vector_feeds(launcher)
        if not feeds:
            continue
        aligned = {v.name for c in chains for v in c.verified if v.alignment is not None}
        facts = model.facts_of(launcher.usr)
        checked_by_hand = {u.tensor for u in facts.tensor_data_uses if u.in_check}
        checked_by_hand |= {t.tensor for t in facts.alignment_tests}
        for chain in chains:
            unaligned = _unaligned_feeds(chain, feeds, aligned | checked_by_hand)
            if unaligned:
                scope, _ = launcher_scope(model, launcher)
                yield _finding(model, ctx, chain, unaligned, scope)


def _unaligned_feeds(chain: MatcherChain, feeds: list[VectorFeed], aligned: set[str]) -> list[VectorFeed]:
    reported: list[VectorFeed] = []
    for verified in chain.verified:
        if verified.alignment is not None or verified.name in aligned:
            continue
        reported.extend(f for f in feeds if f.tensor == verified.name)
    return reported


def _finding(
    model: SemanticModel, ctx: RuleContext, chain: MatcherChain, feeds: list[VectorFeed], scope: LauncherScope
) -> Finding:
    tensors = sorted({f.tensor for f in feeds})
    first = feeds[0]
    names = ", ".join(f"'{t}'" for t in tensors)
    widths = {w for w in (fixed_value(f.width, scope) for f in feeds) if w is not None}
    width = f" {max(widths)}-byte" if widths else ""
    suggestion = _suggestion(model, tensors[0], max(widths) if widths else None)
    related = [
        Related(
            access_location(model, first.access),
            f"vectorized{width} access ({first.access.type_text}) in '{first.kernel}'",
        ),
        Related(location_of(model, first.launch.span), "the launch"),
    ]
    return ctx.finding(
        location_of(model, chain.span),
        f"tensor{'s' if len(tensors) > 1 else ''} {names} feed{'' if len(tensors) > 1 else 's'} "
        f"{width.strip() + ' ' if width else ''}vectorized accesses in kernel '{first.kernel}' "
        f"but this TensorMatcher does not check alignment: {suggestion}",
        related=related,
    )


def _suggestion(model: SemanticModel, tensor: str, width: int | None) -> str:
    """`.ensure_alignment(w)`, or the check by hand when the user's TensorMatcher lacks it."""
    if model.header_library.provides("ensure_alignment"):
        return f"add `.ensure_alignment({width or 'w'})` before `.verify`"
    return (
        f"this tree's `TensorMatcher` has no `ensure_alignment`, so check the base address and the outer "
        f"strides by hand (`RuntimeCheck(reinterpret_cast<uintptr_t>({tensor}.data_ptr()) % {width or 'w'} == 0"
        f", ...)`) or add `ensure_alignment` to `sgl_kernel/tensor.h`"
    )
