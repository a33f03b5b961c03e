"""## What it does
Flags a flat global index (or grid stride) computed as a 32-bit product of the grid
built-ins -- `blockIdx.x * blockDim.x`, `blockIdx.x * kBlockSize`, `gridDim.x * blockDim.x`,
`blockIdx.y * num_heads * head_dim` -- whose value is then widened to 64 bits (stored in an
`int64_t`/`size_t`, added to or compared with a 64-bit value, passed as a 64-bit argument,
cast to 64 bits) although no operand was widened before the multiplication, directly or
through a 32-bit local that holds it (`const int row = blockIdx.x * kWarps + warp_id;` then
`row < num_rows` or `row * stride` with 64-bit sizes), inside a kernel whose sizes or strides
are 64-bit (a parameter, or a field of a by-value params struct, of type `int64_t`,
`uint64_t`, `size_t`...), or that is stored into a 64-bit variable (`const int64_t i =
blockIdx.x * blockDim.x + threadIdx.x;` without a cast: the destination is the intent
even where every size is 32-bit). A value computed from such a product (`warp_id = tid /
32`, with `tid` the flat thread index) carries it on: `warp_id * n` is the product then,
reported where it is stored into a 64-bit variable (elsewhere it may only scale the quotient
back, `(w / n) * n`); a remainder (`tid % 32`, a lane; `tid % (2 * n)`, a column) carries none.
A product of the y/z grid dimensions with only
built-ins or constants is not flagged: those are capped at 65535, so such a product cannot
overflow. A kernel's body (and its lambdas) is checked, and a device function's products
that are stored into a 64-bit variable (the kernels that call it run them; which kernel's
sizes apply is not known there, so the destination alone is the intent).

Narrowed on real code: an index that is computed and kept in 32 bits
(`const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;`, a 32-bit offset) and only
compared with or combined with 32-bit values is counting in 32 bits on purpose, against a
32-bit total, the way the guide's own example kernel does; it is not reported. The finding is
the 64-bit intent that the 32-bit product defeats.

The witness comes from the kernel's contract: each launch of the kernel in the file, with
the grid, the block and the kernel's arguments (a params struct's fields too) as the
launcher computes them from its `TensorMatcher` sizes (`N.unwrap()`, `x.size(i)`), under
its `RuntimeCheck`s and early returns; a launch inside a lambda of the launcher (`auto
launch = [&](auto kernel, int64_t n) {...}`) is taken with the lambda's parameters free,
a query of the SM count (`get_num_sms(device)`) as one value from 1 to 1024 (a
persistent grid of `8 * num_sms` blocks), and a launcher's `sizeof(T)` of its own type
parameter (`kAlignment / sizeof(T)` elements a vector) as one more size, a dtype's bytes (1,
2, 4 or 8) where the witness names it; no launch divides by zero (the launcher stops there).
The solver (z3, with what the kernel's `solver-budget` has left once every rule has
decided) looks for the smallest sizes (dims at least 1, none negative where that still
overflows) for which the product reaches 2^32 (2^31 when signed) in some block, and the
message names them: "it overflows for N = 4294967297
(blockIdx.x = 16777216)". Smallest: the least bound on every size that still overflows,
then each size in turn as small as it goes; the launcher's own sums, products and
conversions must keep their values at the witness (a launcher whose count wraps first
gives none). A product the contract keeps below the limit at every launch of the kernel in
the file -- a size the matcher pins, a `RuntimeCheck` that caps it, a count the launcher
keeps in 32 bits (`div_ceil(static_cast<uint32_t>(n), kWarps)` blocks: wrapped or not, the
count stays below 2^32), with the launcher's integers allowed to wrap -- is not reported.
A call of the launcher's that the walk does not follow (`num_threads = std::min(1024,
UpPowerOfTwo(n))`) counts for a proof as any value of its type: a product that stays below
the limit whatever the call returns is not reported, and no witness names such a value.
Where there is no launch in the file, a value the walk does not follow in the kernel (a
call's result, a template parameter the launch does not give a constant), or the budget
runs out, the finding is reported as before, without a witness.

## Why is this bad?
The product is evaluated in 32 bits and wraps at 2^32 (or overflows `int` at 2^31) before it
is added to anything 64-bit, so widening the result (`int64_t idx = blockIdx.x * blockDim.x`)
is too late. A kernel that takes 64-bit sizes promises to handle tensors that large.

## Example
```cpp
__global__ void copy_kernel(float* __restrict__ dst, const float* __restrict__ src, int64_t n) {
  const int64_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i];
}
```

## Use instead
```cpp
__global__ void copy_kernel(float* __restrict__ dst, const float* __restrict__ src, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i];
}
```
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from kernel_check import solver, witness
from kernel_check.finding import Counterexample, Finding, Related
from kernel_check.model import Function, FunctionKind, IndexProduct, Span, SymbolicProduct, Term, TypeInfo
from kernel_check.registry import Need, RuleContext, rule
from kernel_check.rules._common import location_of
from kernel_check.semantic import SemanticModel
from kernel_check.solver import Answer, Budget, Outcome, launch_constraints
from kernel_check.witness import Witness

_WIDE_CANONICAL = frozenset({"long", "unsigned long", "long long", "unsigned long long"})
_LARGE_BUILTINS = frozenset({"blockIdx.x", "gridDim.x"})
_LEADING_NAME = re.compile(r"[A-Za-z_][\w.]*(?![\w.<(])")  # a name or member path, not a call


@rule("KC112", needs={Need.INTEGERS, Need.SYMBOLIC, Need.CONTRACTS, Need.SOLVER})
def check(model: SemanticModel, ctx: RuleContext) -> list[Finding]:
    # its queries look for witnesses (or the proof that drops a finding): they spend what each
    # kernel's solver budget has left after every rule's decisions
    ctx.defer(functools.partial(_reported, model, ctx))
    return []


def _reported(model: SemanticModel, ctx: RuleContext) -> Iterator[Finding]:
    seconds = float(ctx.options.get("solver-budget", 2.0))
    terms = {(p.function_usr, p.span.start, p.span.end): p for p in model.symbolic_products}
    for product in model.integer_facts.index_products:
        kernel = model.function(product.function_usr)
        if kernel is None or kernel.kind is FunctionKind.HOST:
            continue
        # a device function's grid products run in the kernels that call it: there the 64-bit
        # destination alone tells the intent (which kernel's sizes apply is not known)
        evidence = _wide_size(model, kernel) if kernel.kind is FunctionKind.KERNEL else None
        intended = evidence is not None or product.stored_wide
        # a product of a quotient may only scale it back (`(w / n) * n <= w`): reported where
        # its own 64-bit destination names it
        intended = intended and (product.stored_wide or not product.derived)
        if not intended or not product.widened or not _can_overflow(product):
            continue
        term = terms.get((product.function_usr, product.span.start, product.span.end))
        budget = model.solver_budget(kernel.usr, seconds)
        found = _overflow(model, kernel, term, _limit(product), budget) if term is not None else None
        if found is _NEVER:
            continue  # every launch's contract keeps it below the limit
        intent = "the kernel's sizes are 64-bit" if evidence is not None else "it is stored in 64 bits"
        yield ctx.finding(
            location_of(model, product.span),
            f"`{product.text}` is computed in 32 bits (`{product.result_type}`) although {intent}"
            f"{_witnessed(found, term)}; widen a factor first: "
            f"`static_cast<int64_t>({_first_factor(product)}) * ...`",
            related=[Related(location_of(model, evidence[1]), f"'{evidence[0]}' is 64-bit")] if evidence else [],
            witness=_counterexample(model, kernel, found, term),
        )


def _counterexample(
    model: SemanticModel, kernel: Function, found: Witness | None, product: SymbolicProduct | None
) -> Counterexample | None:
    """The overflowing shape as data, where the message names one."""
    if found is None or product is None or not found.inputs:
        return None
    return witness.counterexample(model, kernel, found.answer, product.symbols, found)


_NEVER = Witness(Answer(Outcome.UNSAT), ())


def _limit(product: IndexProduct) -> int:
    """The first value the product's type cannot hold: 2^31 signed, 2^32 unsigned."""
    return 2**32 if "unsigned" in product.result_type or product.result_type.startswith("uint") else 2**31


def _overflow(
    model: SemanticModel, kernel: Function, product: SymbolicProduct, limit: int, budget: Budget
) -> Witness | None:
    """The smallest shape a launch's contract allows for which `product` reaches `limit`;
    `_NEVER` when every launch of the kernel in the file proves it cannot; None when the
    solver cannot tell (no contract, a value not followed, the budget spent)."""
    proven = 0
    launches = list(witness.bindings(model, kernel, product.symbols, for_proof=True))
    for binding in launches:
        if binding is None:
            continue
        world = [*launch_constraints(product.symbols), *binding.constraints]
        reaches = Term("<=", (Term("const", value=limit), product.term))
        answer = witness.smallest([*world, *binding.fits, reaches], binding.inputs, budget)
        if answer.outcome is Outcome.SAT:
            if binding.proof_only:
                continue  # it may reach the limit for some value of a call's result: not proven
            return Witness(answer, binding.shown(), binding.contract)
        if answer.outcome is Outcome.UNSAT:  # proven only if it holds where the launcher's integers wrap too
            proven += solver.check([*world, reaches], budget).outcome is Outcome.UNSAT
    return _NEVER if launches and proven == len(launches) else None


def _witnessed(found: Witness | None, product: SymbolicProduct | None) -> str:
    if found is None or product is None or not found.inputs:
        return ""
    at = witness.where(product.symbols, found.answer)
    return f"; it overflows for {found.shape()}" + (f" ({at})" if at else "")


def _first_factor(product: IndexProduct) -> str:
    """The factor to widen: the product's first, as written (`warp_id` of `warp_id * n`,
    `token` for a copy of `blockIdx.x`), or its first built-in where that is a literal, a
    cast or a call."""
    first = _LEADING_NAME.match(product.text.lstrip("( "))
    return first.group(0) if first is not None else product.builtins[0]


def _can_overflow(product: IndexProduct) -> bool:
    """`blockIdx.x`/`gridDim.x` (up to 2^31 - 1) times anything; the y and z grid dimensions
    (at most 65535) only times a runtime count."""
    if _LARGE_BUILTINS.intersection(product.builtins):
        return len(product.builtins) + product.constant_factors + len(product.value_factors) >= 2
    return bool(product.value_factors)


def _wide_size(model: SemanticModel, kernel: Function) -> tuple[str, Span] | None:
    """A 64-bit size/stride the kernel receives: (its name, where it is declared)."""
    for param in kernel.params:
        if _is_wide(param.type):
            return param.name, param.span
        struct = model.struct_of(param.type)
        if struct is not None:
            field = next((f for f in struct.fields if _is_wide(f.type)), None)
            if field is not None:
                return f"{param.name}.{field.name}", field.span
    return None


def _is_wide(type_: TypeInfo) -> bool:
    if type_.is_pointer:
        return False
    words = type_.canonical.replace("&", " ").split()
    return " ".join(w for w in words if w not in ("const", "volatile")) in _WIDE_CANONICAL
