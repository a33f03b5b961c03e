"""Callee summaries over the launcher facts: what a kernel or device function does with
each pointer it receives, also through the device functions it hands the pointer to.

The extraction records, per function, its own vectorized accesses (`VectorAccess`) and the
pointers it passes on (`PointerPass`), each named by (parameter, outermost params-struct
field) as `provenance.Origin.field` gives it. A function's summary is its own accesses
plus those of its callees, renamed into its parameters: a callee's access to its parameter
`a` (field `f`) reaches the caller's `param.field` when the caller passed that pointer as
`a` (a whole struct passed on keeps the callee's field `f`). Widths are rewritten from the
callee's template parameters into the caller's by the call's explicit template arguments.
Recursion-safe; at most `MAX_CALL_DEPTH` calls deep.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import ConstExpr, SourceModel, VectorAccess

MAX_CALL_DEPTH = 4
_UNKNOWN = ConstExpr("unknown")

ParamField = tuple[int, str]  # (parameter index, outermost params-struct field or "")


@dataclass(frozen=True)
class VectorUse:
    """A vectorized access that a function's parameter reaches (in it or in a callee)."""

    access: VectorAccess
    width: ConstExpr  # over the template parameters of the function the summary is of


def bind_template_arguments(params: tuple[str, ...], args: tuple[ConstExpr, ...]) -> dict[str, ConstExpr]:
    """Each template parameter to its explicit argument, the rest unknown."""
    return {name: args[index] if index < len(args) else _UNKNOWN for index, name in enumerate(params)}


class VectorSummaries:
    """The vectorized uses of each parameter of the model's kernels and device functions
    (by USR), memoized per model."""

    def __init__(self, model: SourceModel) -> None:
        self.facts = model.launcher_facts
        self.memo: dict[str, dict[ParamField, list[VectorUse]]] = {}

    def uses(self, usr: str, depth: int = 0) -> dict[ParamField, list[VectorUse]]:
        if usr in self.memo:
            return self.memo[usr]
        self.memo[usr] = {}  # cuts recursion
        uses: dict[ParamField, list[VectorUse]] = {}
        for access in self.facts.vector_accesses:
            if access.function == usr:
                uses.setdefault((access.param_index, access.field), []).append(VectorUse(access, access.width))
        for handoff in self.facts.pointer_passes:
            if handoff.function != usr or not handoff.callee_usr or depth >= MAX_CALL_DEPTH:
                continue
            mapping = bind_template_arguments(handoff.callee_template_params, handoff.template_args)
            for (param, field), callee_uses in self.uses(handoff.callee_usr, depth + 1).items():
                if param == handoff.argument:
                    uses.setdefault((handoff.param_index, handoff.field or field), []).extend(
                        VectorUse(u.access, u.width.substitute(mapping)) for u in callee_uses)
        self.memo[usr] = uses
        return uses
