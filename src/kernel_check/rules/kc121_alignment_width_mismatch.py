"""## What it does
Flags `.ensure_alignment(w)` when `w` is not a power of two, or when it is smaller than
the vector width the launched kernel uses for a tensor the chain verifies. Both values
are computed at compile time per instantiation: literals, `constexpr` locals,
`sizeof(T) * kVecN`, `16 / sizeof(T)` with `T` bound to the matcher's dtypes (or to each
common element size when the launcher leaves `T` open, reporting only when every choice
mismatches), `LoadStorePattern::get_vec_bytes<...>()`, and the kernel's template
arguments at the launch.

## Why is this bad?
`TensorMatcher` rejects a `w` that is not a power of two at run time, on the first call.
A `w` below the kernel's access width accepts tensors whose data pointer or row stride
is aligned to `w` but not to the vector width, so the kernel still faults with
`misaligned address` -- the check exists but checks the wrong thing.

## Example
```cpp
template <typename T>
__global__ void copy_kernel(T* __restrict__ dst, const T* __restrict__ src) {
  device::AlignedVector<T, 16 / sizeof(T)> v;  // 16-byte accesses
  v.load(src, threadIdx.x);
  v.store(dst, threadIdx.x);
}

template <typename T>
void copy(tvm::ffi::TensorView dst, tvm::ffi::TensorView src) {
  host::TensorMatcher({128}).with_dtype<T>().ensure_alignment(8).verify(dst).verify(src);
  host::LaunchKernel(1, 16, dst.device())(copy_kernel<T>, static_cast<T*>(dst.data_ptr()),
                                           static_cast<const T*>(src.data_ptr()));
}
```

## Use instead
```cpp
  host::TensorMatcher({128}).with_dtype<T>().ensure_alignment(16).verify(dst).verify(src);
```
"""

from __future__ import annotations

from collections.abc import Iterator

from kernel_check.finding import Finding, Related
from kernel_check.model import AlignmentRequest, ConstExpr, MatcherChain
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._alignment import (
    DEFAULT_ELEMENT_SIZES,
    LauncherScope,
    access_location,
    instantiations,
    is_power_of_two,
    launcher_scope,
    launchers_with_chains,
)
from kernel_check.rules._common import location_of
from kernel_check.semantic import SemanticModel, VectorFeed


@rule("KC121", needs={Need.INTERFACE})
def check(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    for launcher, chains in launchers_with_chains(model, aligned_only=True):
        launcher_wide, type_params = launcher_scope(model, launcher)
        feeds = model.vector_feeds(launcher)
        reported: set[int] = set()
        for chain in chains:
            scope = launcher_wide.with_element_sizes(_element_sizes(chain), type_params)
            for request in chain.alignments:
                if request.span.start in reported:
                    continue
                finding = _not_power_of_two(model, ctx, request, scope) or _below_width(
                    model, ctx, chain, request, feeds, scope
                )
                if finding is not None:
                    reported.add(request.span.start)
                    yield finding


def _element_sizes(chain: MatcherChain) -> tuple[int, ...]:
    """Sizes to try for an open type parameter: the chain's concrete dtypes, if it names any."""
    concrete = sorted({d.size.value for d in chain.dtypes if d.size.op == "int"})
    if concrete and all(d.size.op == "int" for d in chain.dtypes):
        return tuple(concrete)
    return DEFAULT_ELEMENT_SIZES


def _not_power_of_two(
    model: SemanticModel, ctx: RuleContext, request: AlignmentRequest, scope: LauncherScope
) -> Finding | None:
    bindings = instantiations([request.value], scope)
    evaluated = (request.value.evaluate(env) for env in bindings or [])
    values = [v for v in evaluated if v is not None]  # None: an instantiation that cannot compile
    if not values or any(is_power_of_two(v) for v in values):
        return None
    shown = ", ".join(str(v) for v in sorted(set(values))[:4])
    return ctx.finding(
        location_of(model, request.span),
        f"ensure_alignment({request.text}) = {shown} is not a power of two; TensorMatcher rejects it on every call",
    )


def _below_width(
    model: SemanticModel,
    ctx: RuleContext,
    chain: MatcherChain,
    request: AlignmentRequest,
    feeds: list[VectorFeed],
    scope: LauncherScope,
) -> Finding | None:
    tensors = {v.name for v in chain.verified if v.alignment == request}
    for feed in feeds:
        if feed.tensor not in tensors:
            continue
        mismatch = _mismatch(request, feed, scope)
        if mismatch is not None:
            alignment, width = mismatch
            return ctx.finding(
                location_of(model, request.span),
                f"ensure_alignment({request.text}) checks {alignment}-byte alignment but kernel "
                f"'{feed.kernel}' accesses '{feed.tensor}' {width} bytes at a time "
                f"({feed.access.type_text}); the argument must be at least the vector width",
                related=[
                    Related(access_location(model, feed.access), f"the {width}-byte access"),
                    Related(location_of(model, feed.launch.span), "the launch"),
                ],
            )
    return None


def _mismatch(request: AlignmentRequest, feed: VectorFeed, scope: LauncherScope) -> tuple[int, int] | None:
    """(alignment, width) of an instantiation where the width exceeds the alignment. With
    no open template parameter that one instantiation decides; otherwise every evaluable
    instantiation must mismatch, since the launcher may never be built for the others."""
    guard = feed.guard or ConstExpr("int", 1)
    bindings = instantiations([request.value, feed.width, guard], scope)
    if bindings is None:
        return None
    outcomes = []
    for env in bindings:
        if guard.evaluate(env) == 0:
            continue  # this instantiation launches another kernel
        alignment, width = request.value.evaluate(env), feed.width.evaluate(env)
        if alignment is not None and width is not None and is_power_of_two(width):
            outcomes.append((alignment, width))  # other widths: an instantiation that cannot compile
    if not outcomes or any(alignment >= width for alignment, width in outcomes):
        return None
    return min(outcomes)
