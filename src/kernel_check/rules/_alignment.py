"""Shared analysis of KC120 and KC121 (one home for both rules).

`SemanticModel.vector_feeds` answers which tensors of a launcher carry their data into a
kernel parameter that the kernel (or a device function it passes the pointer to) accesses
with vectorized loads/stores, and at which width, in the launcher's scope. This module
says which instantiations of the launcher to evaluate those widths and the
`ensure_alignment` arguments under.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass

from kernel_check.finding import Location
from kernel_check.model import ConstExpr, Function, FunctionKind, MatcherChain, VectorAccess
from kernel_check.rules._common import location_of
from kernel_check.semantic import SemanticModel

# Values tried for a template parameter the launcher leaves open: element sizes for a type
# (fp8, fp16 / bf16, fp32, fp64 / int64), and common sizes, head dims and splits for an
# integer. A verdict over open parameters must hold for every value tried.
DEFAULT_ELEMENT_SIZES = (1, 2, 4, 8)
INTEGER_SAMPLES = (1, 2, 3, 4, 8, 16, 32, 64, 96, 128, 256, 512, 576, 1024, 4096)
BOOL_SAMPLES = (0, 1)
MAX_INSTANTIATIONS = 4096


def launchers_with_chains(
    model: SemanticModel, *, aligned_only: bool = False
) -> Iterator[tuple[Function, list[MatcherChain]]]:
    """Each host function of the file with its TensorMatcher chains (those with an
    `ensure_alignment` only, when `aligned_only`); launchers without chains are skipped."""
    for launcher in model.functions:
        if launcher.kind is not FunctionKind.HOST or not launcher.usr:
            continue
        chains = [c for c in model.facts_of(launcher.usr).matcher_chains if c.alignments or not aligned_only]
        if chains:
            yield launcher, chains


def access_location(model: SemanticModel, access: VectorAccess) -> Location:
    """Where a vector access is: in the checked file or in an included header."""
    if not access.path:
        return location_of(model, access.span)
    span = access.span
    return Location(access.path, span.line, span.column, span.end_line, span.end_column)


@dataclass(frozen=True)
class LauncherScope:
    """The template parameters in scope of a launcher (its own and those of the class
    templates it is a member of) and the values tried for each when it is left open."""

    samples: dict[str, tuple[int, ...]]

    def with_element_sizes(self, sizes: tuple[int, ...], type_params: frozenset[str]) -> LauncherScope:
        return LauncherScope({**self.samples, **dict.fromkeys(type_params, sizes)})


def launcher_scope(model: SemanticModel, launcher: Function) -> tuple[LauncherScope, frozenset[str]]:
    """The launcher's scope and the names of its template type parameters."""
    params = list(launcher.template_params)
    for struct in model.structs:
        if launcher.qualified_name.startswith(struct.qualified_name + "::"):
            params.extend(struct.template_params)
    samples: dict[str, tuple[int, ...]] = {}
    for param in params:
        if param.kind == "type":
            samples[param.name] = DEFAULT_ELEMENT_SIZES
        elif param.kind == "non_type":
            samples[param.name] = BOOL_SAMPLES if param.type_spelling == "bool" else INTEGER_SAMPLES
    types = frozenset(p.name for p in params if p.kind == "type")
    return LauncherScope(samples), types


def instantiations(exprs: list[ConstExpr], scope: LauncherScope) -> list[dict[str, int]] | None:
    """The bindings to evaluate `exprs` under: combinations of the sample values of the
    template parameters they depend on (thinned out evenly beyond MAX_INSTANTIATIONS);
    None when a name is not a template parameter in scope."""
    free = sorted(set().union(*(e.free_names() for e in exprs)))
    if any(name not in scope.samples for name in free):
        return None
    choices = [scope.samples[name] for name in free]
    total = math.prod(len(c) for c in choices)
    step = max(1, math.ceil(total / MAX_INSTANTIATIONS))
    return [dict(zip(free, values)) for values in itertools.islice(itertools.product(*choices), 0, None, step)]


def fixed_value(expr: ConstExpr, scope: LauncherScope) -> int | None:
    """The value of `expr` if it is the same for every instantiation tried, else None."""
    bindings = instantiations([expr], scope)
    values = {expr.evaluate(env) for env in bindings} if bindings else {None}
    return values.pop() if len(values) == 1 else None


def is_power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0
