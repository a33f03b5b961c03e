"""The semantic model C++ rules query: one file's `SourceModel` behind indexed queries.

The extraction (`clang/extract.py`) writes plain dataclass lists (`model.py`), which is what
the result cache and the device-pass merge handle. Rules do not join those lists by USR
themselves: they ask a `SemanticModel`, built once per file by the pipeline, whose indexes
are built on the first question that needs them and kept for every later rule:

- entities: `function(usr)`, `record(usr)`, `struct_of(type)`, `kernels`, `launchers`,
  `function_groups()`, `params_struct_names()`;
- launches: `launches_in(launcher)`, `launches_of(kernel)`, `launching_usrs`, and by index in
  `launches`: `launch_indices_of(kernel_usr)`, `contract_of(launch)` (its `LaunchContract`) and
  `callers_contracts(launch)` (those the callers of a helper holding it give it);
- per-function facts: `facts_of(usr)` (the launcher facts of one function),
  `dataflow(function)`, `tensor_callers(function)`;
- `is_atomic_operand(decl)`: a pointer parameter or params-struct field handed to a CUDA
  atomic as its address (`atomicAdd(tail, 1ull)`);
- how a kernel uses the values it loads: `index_uses(function)` (a load, or an atomic's old
  value, inside the index of another access), `prefix_sums(function)` (`p[e]` and `p[e + 1]`);
- callee summaries (`summaries.py`): `vector_uses(usr)`, `access_kinds(usr, param, field)`,
  and what a launcher's launches feed into vectorized accesses: `vector_feeds(launcher)`.

Whole-file fact lists that no query indexes (API calls, integer facts, scope facts, inline
asm, divergent barriers) are read as attributes of the same names as `SourceModel`'s. Each
kernel's solver budget (`solver_budget(usr, seconds)`) is kept here too, so that every
rule's queries about the kernel share one.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, fields, replace
from typing import TypeVar

from .model import (
    AccessKind,
    ConstExpr,
    Function,
    FunctionDataflow,
    FunctionKind,
    IntegerDecl,
    IntegerDeclKind,
    Launch,
    LaunchContract,
    LaunchedKernel,
    LauncherFacts,
    LaunchTensorArgument,
    PointerAccess,
    SourceModel,
    Struct,
    TemplateInstantiation,
    TypeInfo,
    VectorAccess,
)
from .solver import Budget
from .summaries import MAX_CALL_DEPTH, AccessSummaries, VectorSummaries, VectorUse, bind_template_arguments

__all__ = ["IndexUse", "SemanticModel", "VectorFeed"]

_PARAMS_STRUCT_SUFFIXES = ("Params", "Param")
_QUALIFIERS = re.compile(r"\b(const|volatile|struct|class|typename)\b|[&*]")
_Item = TypeVar("_Item")
_Key = TypeVar("_Key", bound=Hashable)
# the launcher facts kept per function (every list of `LauncherFacts` but the file-wide one)
_PER_FUNCTION_FACTS = tuple(f.name for f in fields(LauncherFacts) if f.name != "foreign_functions")


@dataclass(frozen=True)
class VectorFeed:
    """Tensor `tensor` feeds `access` of the kernel launched at `launch`."""

    tensor: str
    launch: Launch
    kernel: str  # the kernel's name
    access: VectorAccess
    width: ConstExpr  # bytes per access, over the launcher's template parameters
    guard: ConstExpr | None  # when this kernel is the one launched (None: always)


@dataclass(frozen=True)
class TensorLaunch:
    """A launch argument that carries the data of the tensor a launcher names `tensor`."""

    tensor: str
    launch: Launch
    argument: LaunchTensorArgument


@dataclass(frozen=True)
class IndexUse:
    """The value `inner` gives (a load, or the old value of an atomic) is part of the index of
    the access `outer` (``table[ids[i] * w]``, ``out[atomicAdd(count, 1)]``)."""

    inner: PointerAccess
    outer: PointerAccess


def bare_type_name(spelling: str) -> str:
    """`const sglang::Params<T> &` -> `Params`: the unqualified record name of a type."""
    name = _QUALIFIERS.sub(" ", spelling).strip()
    name = name.split("<", 1)[0].strip()
    return name.split("::")[-1].strip()


def _index(items: Iterable[_Item], key: Callable[[_Item], _Key]) -> dict[_Key, list[_Item]]:
    """`items` grouped by `key`, each group in the order given."""
    grouped: dict[_Key, list[_Item]] = {}
    for item in items:
        grouped.setdefault(key(item), []).append(item)
    return grouped


def _definition_or_last(declarations: list[_Item], defines: Callable[[_Item], bool]) -> _Item | None:
    """The first of an entity's declarations that defines it, else the last one."""
    return next((d for d in declarations if defines(d)), declarations[-1] if declarations else None)


class SemanticModel:
    """Queries over one file's extracted model (see the module doc)."""

    def __init__(self, source: SourceModel) -> None:
        self.source = source
        self.path = source.path
        self.text = source.text
        self.data = source.data
        self.functions = source.functions
        self.structs = source.structs
        self.launches = source.launches
        self.launcher_facts = source.launcher_facts
        self.integer_facts = source.integer_facts
        self.scope_facts = source.scope_facts
        self.dataflow_facts = source.dataflow_facts
        self.divergent_barriers = source.divergent_barriers
        self.symbolic_accesses = source.symbolic_accesses
        self.symbolic_products = source.symbolic_products
        self.symbolic_barriers = source.symbolic_barriers
        self._solver_budgets: dict[str, Budget] = {}  # by kernel USR, shared by every rule
        self.launch_contracts = source.launch_contracts
        self.narrowing_conversions = source.narrowing_conversions
        self.header_library = source.header_library
        self._feeds: dict[str, list[VectorFeed]] = {}  # vector_feeds by launcher USR

    def solver_budget(self, kernel_usr: str, seconds: float) -> Budget:
        """The one solver budget of a kernel that every rule's queries about it share."""
        return self._solver_budgets.setdefault(kernel_usr, Budget(seconds))

    def line_bytes(self, line: int) -> bytes:
        return self.source.line_bytes(line)

    # -- entities ----------------------------------------------------------------------------
    @functools.cached_property
    def kernels(self) -> list[Function]:
        return self.source.kernels

    @functools.cached_property
    def launchers(self) -> list[Function]:
        """Host functions that launch a kernel (by qualified name: every overload)."""
        return self.source.launchers

    @functools.cached_property
    def _launcher_usrs(self) -> frozenset[str]:
        return frozenset(f.usr for f in self.launchers)

    def is_launcher(self, function: Function) -> bool:
        return function.usr in self._launcher_usrs

    @functools.cached_property
    def _functions_by_usr(self) -> dict[str, list[Function]]:
        return _index((f for f in self.functions if f.usr), lambda f: f.usr)

    def function(self, usr: str) -> Function | None:
        """The function `usr` names: its definition (the first, the host pass's), else its
        last declaration; None when the file does not declare it."""
        return _definition_or_last(self._functions_by_usr.get(usr, []), lambda f: f.body is not None)

    def function_groups(self) -> list[list[Function]]:
        """The file's declarations of each function, one group per entity (its USR, or its
        position when clang gives none), in the order of their first declaration."""
        return list(_index(self.functions, lambda f: f.usr or f"{f.qualified_name}@{f.span.start}").values())

    @functools.cached_property
    def _records_by_usr(self) -> dict[str, list[Struct]]:
        return _index((s for s in self.structs if s.usr), lambda s: s.usr)

    def record(self, usr: str) -> Struct | None:
        """The struct or class `usr` names: its definition, else its last declaration."""
        return _definition_or_last(self._records_by_usr.get(usr, []), lambda s: s.is_definition)

    @functools.cached_property
    def _instantiations_by_template(self) -> dict[str, list[TemplateInstantiation]]:
        return _index(self.source.instantiations, lambda instantiation: instantiation.template)

    def instantiated_values(self, function: Function) -> list[dict[str, int]]:
        """The values the file's code builds a function's compile-time integer parameters, and
        those of the class template it is a member of, with (`Gate<128>::run(...)`,
        `launch<4, true>(...)`: `TemplateInstantiation`), by name, one mapping per place (a
        parameter a place does not fix is left out of its mapping); [] where it names none."""
        owner = self.record(function.owner_usr) if function.owner_usr else None
        templates = [(function.usr, function.template_params)]
        templates += [(owner.usr, owner.template_params)] if owner is not None else []
        found: list[dict[str, int]] = []
        for usr, params in templates:
            for instantiation in self._instantiations_by_template.get(usr, []):
                # (libclang gives a bool argument's `true` as -1: a flag is 0 or 1)
                named = zip(params, instantiation.arguments)
                values = {p.name: int(v != 0) if p.type_spelling == "bool" else v for p, v in named if v is not None}
                if values not in found:
                    found.append(values)
        return found

    @functools.cached_property
    def _defined_structs_by_name(self) -> dict[str, list[Struct]]:
        return _index((s for s in self.structs if s.is_definition), lambda s: s.name)

    def struct_of(self, type_: TypeInfo) -> Struct | None:
        """The struct of this file a by-value (or const-reference) type names."""
        if type_.is_pointer:
            return None
        matches = self._defined_structs_by_name.get(bare_type_name(type_.spelling), [])
        return matches[0] if matches else None

    @functools.cached_property
    def _params_struct_names(self) -> frozenset[str]:
        names = {s.qualified_name for s in self.structs if s.name.endswith(_PARAMS_STRUCT_SUFFIXES)}
        for kernel in self.kernels:
            for param in kernel.params:
                struct = self.struct_of(param.type)
                if struct is not None:
                    names.add(struct.qualified_name)
        return frozenset(names)

    def params_struct_names(self) -> frozenset[str]:
        """Qualified names of the params structs: passed by value to a kernel of this file,
        or named `...Params` by the convention."""
        return self._params_struct_names

    # -- launches ----------------------------------------------------------------------------
    @functools.cached_property
    def _launches_by_launcher(self) -> dict[str, list[Launch]]:
        return _index(self.launches, lambda launch: launch.launcher_usr)

    @functools.cached_property
    def launching_usrs(self) -> frozenset[str]:
        """The USRs of the functions that contain a launch."""
        return frozenset(self._launches_by_launcher)

    def launches_in(self, launcher: Function) -> list[Launch]:
        """The launches written in `launcher`'s body."""
        return self._launches_by_launcher.get(launcher.usr, []) if launcher.usr else []

    @functools.cached_property
    def _launches_by_kernel(self) -> dict[str, list[tuple[Launch, LaunchedKernel]]]:
        pairs = ((launch, launched) for launch in self.launches for launched in launch.kernels)
        return _index(pairs, lambda pair: pair[1].usr)

    def launches_of(self, kernel: Function) -> list[tuple[Launch, LaunchedKernel]]:
        """The launches of this file that can launch `kernel` (matched by clang USR)."""
        return self._launches_by_kernel.get(kernel.usr, []) if kernel.usr else []

    @functools.cached_property
    def _launch_indices_by_kernel(self) -> dict[str, list[int]]:
        indices: dict[str, list[int]] = {}
        for index, launch in enumerate(self.launches):
            # once per launch, which may pick among instantiations of one kernel
            for usr in dict.fromkeys(k.usr for k in launch.kernels):
                indices.setdefault(usr, []).append(index)
        return indices

    def launch_indices_of(self, kernel_usr: str) -> list[int]:
        """The indices in `launches` of the launches that can launch kernel `kernel_usr`."""
        return self._launch_indices_by_kernel.get(kernel_usr, [])

    @functools.cached_property
    def _contracts_by_launch(self) -> dict[int, LaunchContract]:
        return {contract.launch: contract for contract in self.launch_contracts if not contract.caller}

    @functools.cached_property
    def _callers_contracts_by_launch(self) -> dict[int, list[LaunchContract]]:
        return _index((c for c in self.launch_contracts if c.caller), lambda contract: contract.launch)

    def contract_of(self, launch: int) -> LaunchContract | None:
        """The contract its own launcher's walk gave the launch at index `launch` in
        `launches` (None where it gave none)."""
        return self._contracts_by_launch.get(launch)

    def callers_contracts(self, launch: int) -> list[LaunchContract]:
        """The contracts the callers of a helper give the launch at index `launch` in
        `launches` (`LaunchContract.caller`), in the order the extraction wrote them."""
        return self._callers_contracts_by_launch.get(launch, [])

    # -- per-function facts ------------------------------------------------------------------
    @functools.cached_property
    def _facts_by_function(self) -> dict[str, LauncherFacts]:
        grouped: dict[str, LauncherFacts] = {}
        for kind in _PER_FUNCTION_FACTS:
            for fact in getattr(self.launcher_facts, kind):
                getattr(grouped.setdefault(fact.function, LauncherFacts()), kind).append(fact)
        return grouped

    def facts_of(self, usr: str) -> LauncherFacts:
        """The launcher facts recorded in function `usr` (a lambda's belong to its function)."""
        return self._facts_by_function.get(usr) or LauncherFacts()

    @functools.cached_property
    def _flows_by_usr(self) -> dict[str, list[FunctionDataflow]]:
        return _index(self.dataflow_facts.functions, lambda flow: flow.function_usr)

    def flows_of(self, usr: str) -> list[FunctionDataflow]:
        """The dataflow facts of every body of function `usr` (host and device passes)."""
        return self._flows_by_usr.get(usr, [])

    def dataflow(self, function: Function) -> FunctionDataflow | None:
        """The body facts of a kernel or device function definition (None for declarations)."""
        if function.body is None:
            return None
        return next((flow for flow in self.flows_of(function.usr) if flow.body == function.body), None)

    @functools.cached_property
    def _tensor_handoffs_by_callee(self) -> dict[str, list[tuple[str, str]]]:
        """callee USR, or "name:" + its name when unresolved -> (caller USR, callee name)."""
        return _index(
            ((h.function, h.callee_usr or f"name:{h.callee}") for h in self.launcher_facts.tensor_handoffs),
            lambda pair: pair[1],
        )

    def tensor_callers(self, function: Function) -> set[str]:
        """The USRs of the other functions of the file that hand `function` a TensorView (a
        dependent call, unresolved, by name)."""
        calls = [
            *self._tensor_handoffs_by_callee.get(function.usr, []),
            *self._tensor_handoffs_by_callee.get(f"name:{function.name}", []),
        ]
        return {caller for caller, _ in calls if caller != function.usr}

    # -- atomics ------------------------------------------------------------------------------
    @functools.cached_property
    def _atomic_operands(self) -> frozenset[tuple[str, str]]:
        """(function USR, parameter) and (params struct's qualified name, field) of each pointer
        that a kernel or device function body hands to a CUDA atomic as its address operand."""
        operands: set[tuple[str, str]] = set()
        for flow in self.dataflow_facts.functions:
            function = self.function(flow.function_usr)
            for access in flow.accesses:
                if function is None or not access.atomic or access.param_index >= len(function.params):
                    continue
                param = function.params[access.param_index]
                if not access.fields:
                    operands.add((function.usr, param.name))
                    continue
                struct = self._struct_along(param.type, access.fields[:-1])
                if struct is not None:
                    operands.add((struct.qualified_name, access.fields[-1]))
        return frozenset(operands)

    def _struct_along(self, type_: TypeInfo, path: tuple[str, ...]) -> Struct | None:
        """The struct reached from a by-value struct type through the fields of `path`."""
        struct = self.struct_of(type_)
        for name in path:
            field = next((f for f in struct.fields if f.name == name), None) if struct is not None else None
            struct = self.struct_of(field.type) if field is not None else None
        return struct

    def is_atomic_operand(self, decl: IntegerDecl) -> bool:
        """Whether a pointer parameter (or a params-struct field) is the address operand of a
        CUDA atomic in the function's body or a callee of it (needs the dataflow facts)."""
        if decl.declarator != "pointer" or decl.in_lambda or decl.kind is IntegerDeclKind.LOCAL:
            return False
        owner = decl.owner if decl.kind is IntegerDeclKind.FIELD else decl.owner_usr
        return (owner, decl.name) in self._atomic_operands

    # -- loaded values ------------------------------------------------------------------------
    def _index_text(self, access: PointerAccess) -> str | None:
        """The index of a subscript access as written (``p[i + 1]`` -> ``i + 1``), else None."""
        if access.how != "subscript":
            return None
        text = self.data[access.span.start : access.span.end].decode("utf-8", errors="replace")
        opened = text.find("[")
        return " ".join(text[opened + 1 : -1].split()) if opened >= 0 and text.endswith("]") else None

    def index_uses(self, function: Function) -> list[IndexUse]:
        """The accesses of `function`'s body whose index holds another access of it: the
        value read (or an atomic's old value) indexes the outer pointer's memory. Directly
        nested only: a value kept in a local first is not followed."""
        flow = self.dataflow(function)
        if flow is None:
            return []
        uses = []
        for outer in flow.accesses:
            if self._index_text(outer) is None:
                continue
            base_end = outer.span.start + self.data[outer.span.start : outer.span.end].find(b"[")
            for inner in flow.accesses:
                nested = base_end < inner.span.start and inner.span.end <= outer.span.end
                if nested and inner.param_index != outer.param_index and inner.kind is not AccessKind.ESCAPE:
                    uses.append(IndexUse(inner, outer))
        return uses

    def prefix_sums(self, function: Function) -> set[int]:
        """The parameters `function` reads as ``p[e]`` and ``p[e + 1]``: the bounds of
        segment `e` of a prefix sum (an ``indptr``)."""
        flow = self.dataflow(function)
        if flow is None:
            return set()
        indexes: dict[int, set[str]] = {}
        for access in flow.accesses:
            text = self._index_text(access)
            if text is not None and access.kind is AccessKind.READ:
                indexes.setdefault(access.param_index, set()).add(text)
        return {param for param, texts in indexes.items() if any(f"{t} + 1" in texts for t in texts)}

    # -- callee summaries --------------------------------------------------------------------
    @functools.cached_property
    def _vector_summaries(self) -> VectorSummaries:
        return VectorSummaries(self)

    @functools.cached_property
    def _access_summaries(self) -> AccessSummaries:
        return AccessSummaries(self)

    def vector_uses(self, usr: str) -> dict[tuple[int, str], list[VectorUse]]:
        """(parameter, params-struct field) -> the vectorized accesses it reaches in
        function `usr` and the device functions it hands the pointer to."""
        return self._vector_summaries.uses(usr)

    def access_kinds(self, usr: str, param: int, field: str) -> set[AccessKind]:
        """What function `usr` (and its callees) does with its parameter `param` (its field
        `field`; every field when "")."""
        return self._access_summaries.kinds(usr, param, field)

    def vector_feeds(self, launcher: Function) -> list[VectorFeed]:
        """Every (tensor, vectorized kernel access) pair that a launcher's launches create,
        also through host helpers of the file it hands a tensor's data pointer to. Widths
        are rewritten from the kernel's template parameters into the launcher's scope."""
        if launcher.usr not in self._feeds:
            self._feeds[launcher.usr] = self._vector_feeds(launcher, 0)
        return self._feeds[launcher.usr]

    def _vector_feeds(self, launcher: Function, depth: int) -> list[VectorFeed]:
        feeds = []
        for launch in self.launches_in(launcher):
            for kernel in launch.kernels:
                mapping = bind_template_arguments(kernel.template_params, kernel.template_args)
                uses = self.vector_uses(kernel.usr)
                for argument in launch.tensors:
                    for (param, field), param_uses in uses.items():
                        if param != argument.argument or argument.field not in (field, "*"):
                            continue
                        tensor = f"{argument.tensor}.{field}" if argument.field == "*" else argument.tensor
                        widths = [(use, use.width.substitute(mapping)) for use in param_uses]
                        # a one-byte "vector" (`AlignedVector<fp8_t, 1>`, a `kVecN = 1` fallback) needs no alignment
                        feeds += [
                            VectorFeed(tensor, launch, kernel.name, use.access, width, kernel.guard)
                            for use, width in widths
                            if width.evaluate({}) not in (0, 1)
                        ]
        return feeds + self._helper_feeds(launcher, depth)

    def _helper_feeds(self, launcher: Function, depth: int) -> list[VectorFeed]:
        """The feeds of the host helpers a launcher hands tensor data to, renamed to its tensors."""
        return [
            replace(feed, tensor=tensor)
            for helper, name, tensor in self._helpers_handed(launcher, depth)
            for feed in self._vector_feeds(helper, depth + 1)
            if feed.tensor == name
        ]

    def tensor_launches(self, launcher: Function, depth: int = 0) -> list[TensorLaunch]:
        """Every launch argument carrying the data of one of `launcher`'s tensors: its own
        launches and those of the host helpers it hands a tensor's data pointer to (a
        header's `Op<T>(out.data_ptr(), ...)` that launches the kernel), named by the
        launcher's tensors."""
        own = [TensorLaunch(a.tensor, launch, a) for launch in self.launches_in(launcher) for a in launch.tensors]
        handed = [
            replace(found, tensor=tensor)
            for helper, name, tensor in self._helpers_handed(launcher, depth)
            for found in self.tensor_launches(helper, depth + 1)
            if found.tensor == name
        ]
        return own + handed

    def _helpers_handed(self, launcher: Function, depth: int) -> Iterable[tuple[Function, str, str]]:
        """(host helper, its name for the data, the launcher's tensor) for each tensor data
        pointer `launcher` hands to a host function of the file (`#2`: its third parameter)."""
        if depth >= MAX_CALL_DEPTH:
            return
        for handoff in self.facts_of(launcher.usr).data_handoffs:
            helper = self.function(handoff.callee_usr) if handoff.callee_usr else None
            if helper is None or helper.kind is not FunctionKind.HOST or helper.usr == launcher.usr:
                continue
            name = f"#{handoff.argument}.{handoff.field}" if handoff.field else f"#{handoff.argument}"
            yield helper, name, handoff.tensor
