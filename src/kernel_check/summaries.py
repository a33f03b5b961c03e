"""Callee summaries: what a kernel or device function does with each pointer it receives,
also through the device functions it hands the pointer to.

The extraction records, per function, its own uses of its parameters -- vectorized accesses
(`VectorAccess`), loads/stores/escapes (`PointerAccess`) -- and the pointers it passes on
(`PointerPass`), each named by (parameter, outermost params-struct field) as
`provenance.Origin.field` gives it. A function's summary is its own uses plus those of its
callees, renamed into its parameters: a callee's use of its parameter `a` (field `f`) reaches
the caller's `param.field` when the caller passed that pointer as `a` (a whole struct passed
on keeps the callee's field `f`). Recursion-safe; at most `MAX_CALL_DEPTH` calls deep. A
function's own loads and stores are keyed by their whole field path (`params.out` of a struct
nested in the params struct), which a query by the outer field (`params`) covers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from .model import AccessKind, ConstExpr, FunctionDataflow, LauncherFacts, PointerPass, VectorAccess


class FunctionFacts(Protocol):
    """The two queries of the semantic model the summaries read (`semantic.SemanticModel`;
    named here, not imported, as the semantic model is what keeps the summaries)."""

    def facts_of(self, usr: str) -> LauncherFacts: ...

    def flows_of(self, usr: str) -> list[FunctionDataflow]: ...


MAX_CALL_DEPTH = 4
_UNKNOWN = ConstExpr("unknown")

ParamField = tuple[int, str]  # (parameter index, outermost params-struct field or "")
Use = TypeVar("Use")


@dataclass(frozen=True)
class VectorUse:
    """A vectorized access that a function's parameter reaches (in it or in a callee)."""

    access: VectorAccess
    width: ConstExpr  # over the template parameters of the function the summary is of


def bind_template_arguments(params: tuple[str, ...], args: tuple[ConstExpr, ...]) -> dict[str, ConstExpr]:
    """Each template parameter to its explicit argument, the rest unknown."""
    return {name: args[index] if index < len(args) else _UNKNOWN for index, name in enumerate(params)}


class _CalleeSummaries(Generic[Use]):
    """The uses of each parameter of the model's kernels and device functions (by USR),
    their callees' included, memoized per model (`SemanticModel` keeps one of each kind).
    A kind of use says what a function does itself (`_own`), how a callee's use reads in
    the caller (`_carried`) and how it joins the caller's own (`_joined`)."""

    def __init__(self, model: FunctionFacts) -> None:
        self.model = model
        self.memo: dict[str, dict[ParamField, list[Use]]] = {}

    def uses(self, usr: str, depth: int = 0) -> dict[ParamField, list[Use]]:
        if usr in self.memo:
            return self.memo[usr]
        self.memo[usr] = {}  # cuts recursion
        uses = self._own(usr)
        for handoff in self.model.facts_of(usr).pointer_passes:
            if not handoff.callee_usr or depth >= MAX_CALL_DEPTH:
                continue
            for (param, field), callee_uses in self.uses(handoff.callee_usr, depth + 1).items():
                if param == handoff.argument and callee_uses:
                    key = (handoff.param_index, handoff.field or field)
                    uses[key] = self._joined(uses.get(key, []), self._carried(handoff, callee_uses))
        self.memo[usr] = uses
        return uses

    def _own(self, usr: str) -> dict[ParamField, list[Use]]:
        raise NotImplementedError

    def _carried(self, handoff: PointerPass, callee_uses: list[Use]) -> list[Use]:
        return callee_uses

    def _joined(self, mine: list[Use], passed: list[Use]) -> list[Use]:
        return mine + passed


class VectorSummaries(_CalleeSummaries[VectorUse]):
    """Vectorized accesses; a callee's widths are rewritten from its template parameters into
    the caller's by the call's explicit template arguments."""

    def _own(self, usr: str) -> dict[ParamField, list[VectorUse]]:
        own: dict[ParamField, list[VectorUse]] = {}
        for access in self.model.facts_of(usr).vector_accesses:
            own.setdefault((access.param_index, access.field), []).append(VectorUse(access, access.width))
        return own

    def _carried(self, handoff: PointerPass, callee_uses: list[VectorUse]) -> list[VectorUse]:
        mapping = bind_template_arguments(handoff.callee_template_params, handoff.template_args)
        return [VectorUse(u.access, u.width.substitute(mapping)) for u in callee_uses]


class AccessSummaries(_CalleeSummaries[AccessKind]):
    """Loads, stores and escapes. A pointer handed to a device function the data-flow facts
    saw escape is replaced by what that function does with it, where that is known."""

    def _own(self, usr: str) -> dict[ParamField, list[AccessKind]]:
        own: dict[ParamField, list[AccessKind]] = {}
        for function in self.model.flows_of(usr):
            for access in function.accesses:
                own.setdefault((access.param_index, ".".join(access.fields)), []).append(access.kind)
        return own

    def _joined(self, mine: list[AccessKind], passed: list[AccessKind]) -> list[AccessKind]:
        return [kind for kind in mine if kind is not AccessKind.ESCAPE] + passed

    def kinds(self, usr: str, param: int, field: str) -> set[AccessKind]:
        """What `usr` does with its parameter `param` (its field `field`, a path through
        nested structs such as `params.out`, and the fields inside it; every field when "")."""
        return {
            kind
            for (index, name), kinds in self.uses(usr).items()
            if index == param and (not field or name == field or name.startswith(f"{field}."))
            for kind in kinds
        }
