"""Helpers shared by several C++ rules (one home for each piece of shared logic)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kernel_check.finding import Location
from kernel_check.model import (
    AccessKind,
    Function,
    FunctionDataflow,
    FunctionKind,
    IntegerDecl,
    IntegerDeclKind,
    Launch,
    LaunchedKernel,
    PdlCall,
    PdlCallKind,
    SourceModel,
    Span,
    Struct,
    TypeInfo,
)

_QUALIFIERS = re.compile(r"\b(const|volatile|struct|class|typename)\b|[&*]")


def location_of(model: SourceModel, span: Span) -> Location:
    """A reportable location; clang's byte columns become character columns."""
    return Location(
        model.path,
        span.line,
        _char_column(model, span.line, span.column),
        span.end_line,
        _char_column(model, span.end_line, span.end_column),
    )


def _char_column(model: SourceModel, line: int, byte_column: int) -> int:
    raw = model.line_bytes(line)
    if raw.isascii():
        return byte_column
    return len(raw[: byte_column - 1].decode("utf-8", errors="replace")) + 1


def bare_type_name(spelling: str) -> str:
    """`const sglang::Params<T> &` -> `Params`: the unqualified record name of a type."""
    name = _QUALIFIERS.sub(" ", spelling).strip()
    name = name.split("<", 1)[0].strip()
    return name.split("::")[-1].strip()


def struct_for_type(model: SourceModel, type_: TypeInfo) -> Struct | None:
    """The struct of this file a by-value (or const-reference) parameter type names."""
    if type_.is_pointer:
        return None
    name = bare_type_name(type_.spelling)
    matches = [s for s in model.structs if s.name == name and s.is_definition]
    return matches[0] if matches else None


# ---- dataflow and PDL helpers (KC102, KC201-KC204) ----


def dataflow_of(model: SourceModel, function: Function) -> FunctionDataflow | None:
    """The body facts of a kernel or device function definition (None for declarations)."""
    if function.body is None:
        return None
    return next(
        (
            flow
            for flow in model.dataflow_facts.functions
            if flow.function_usr == function.usr and flow.body == function.body
        ),
        None,
    )


def pdl_waits(flow: FunctionDataflow) -> list[PdlCall]:
    """The PDL waits of a body, earliest first (unplaceable ones last)."""
    waits = [call for call in flow.pdl_calls if call.kind is PdlCallKind.WAIT]
    return sorted(waits, key=lambda call: (call.order is None, call.order or 0))


def launches_of(model: SourceModel, kernel: Function) -> list[tuple[Launch, LaunchedKernel]]:
    """The launches of this file that can launch `kernel` (matched by clang USR)."""
    return [
        (launch, launched)
        for launch in model.launches
        for launched in launch.kernels
        if kernel.usr and launched.usr == kernel.usr
    ]


# ---- in-place aliasing (KC101, KC102) ----

# A pointer a kernel receives: (parameter index, params-struct field or "").
Slot = tuple[int, str]


@dataclass(frozen=True)
class Partner:
    """A pointer the kernel writes that a launch fills from another tensor than the read one."""

    written: str  # the written pointer as spelled in the kernel: "dst", "params.dst"
    read_tensor: str
    written_tensor: str
    launcher: str


def _written_slots(model: SourceModel, kernel: Function) -> dict[Slot, str]:
    """The pointers the kernel writes through (or hands on to code that may), with their spelling."""
    flow = dataflow_of(model, kernel)
    if flow is None:
        return {}
    return {
        (access.param_index, access.fields[0] if access.fields else ""): access.root
        for access in flow.accesses
        if access.kind in (AccessKind.WRITE, AccessKind.ESCAPE) and len(access.fields) <= 1
    }


def _dtypes(model: SourceModel, launcher: str, tensor: str) -> frozenset[str]:
    """The dtypes (as written) a launcher's TensorMatchers accept for `tensor`; empty when unchecked."""
    return frozenset(
        dtype.text
        for chain in model.launcher_facts.matcher_chains
        if chain.function == launcher and any(v.name == tensor for v in chain.verified)
        for dtype in chain.dtypes
    )


def _may_be_one_tensor(model: SourceModel, launcher: str, first: str, second: str) -> bool:
    """Whether two tensors of a launcher may be one: not when its matchers give them no dtype in common."""
    first_dtypes, second_dtypes = _dtypes(model, launcher, first), _dtypes(model, launcher, second)
    return not (first_dtypes and second_dtypes) or bool(first_dtypes & second_dtypes)


def aliasing(model: SourceModel, kernel: Function, read: Slot) -> tuple[bool, Partner | None]:
    """(in place, partner): whether a launch fills `read` and a written pointer from one
    tensor, else a written pointer that a launch fills from another tensor that may be the
    same one (not when the launcher's matchers accept no common dtype for the two)."""
    written = _written_slots(model, kernel)
    partner: Partner | None = None
    for launch, _ in launches_of(model, kernel):
        read_tensors = {t.tensor for t in launch.tensors if (t.argument, t.field) == read}
        for argument in launch.tensors:
            slot = (argument.argument, argument.field)
            if slot == read or slot not in written or not read_tensors:
                continue
            if argument.tensor in read_tensors:
                return True, None
            read_tensor = min(read_tensors)
            if partner is None and _may_be_one_tensor(model, launch.launcher_usr, read_tensor, argument.tensor):
                partner = Partner(written[slot], read_tensor, argument.tensor, launch.launcher)
    return False, partner


# ---- integer declarations (KC110, KC111) ----

_PARAMS_STRUCT_SUFFIXES = ("Params", "Param")


class IntegerRoles:
    """What an `IntegerDecl` is in KC110's terms (kernel parameter, params-struct field...),
    or None when bare `int` is fine there. One home for KC110's exemptions, so that KC111 can
    leave to KC110 a declaration it already reports.

    The scope is where the guide puts the reason for the convention: values that cross the
    FFI boundary (launcher parameters) or the host/device boundary (kernel parameters,
    params-struct fields), and locals that take a 64-bit shape or stride. Inside kernel,
    device and launcher bodies `int` is 32 bits on every CUDA target, so the width there is
    fixed by the platform; only `long` (32 bits on Windows, 64 on Linux) is reported there."""

    def __init__(self, model: SourceModel) -> None:
        self.functions = {f.usr: f for f in model.functions if f.usr}
        self.launchers = {f.usr for f in model.launchers}
        self.params_structs = params_struct_names(model)

    def role(self, decl: IntegerDecl) -> str | None:
        if decl.kind is IntegerDeclKind.FIELD:
            return "params-struct field" if decl.owner in self.params_structs else None
        function = self.functions.get(decl.owner_usr)
        if function is None:
            return None
        if function.kind is FunctionKind.HOST and function.usr not in self.launchers:
            return None  # plain host helpers are neither the kernel side nor the FFI boundary
        if decl.kind is IntegerDeclKind.PARAM:
            return self._param_role(decl, function)
        return self._local_role(decl)

    def _param_role(self, decl: IntegerDecl, function: Function) -> str | None:
        if decl.in_lambda:
            return "lambda parameter" if _platform_width(decl) else None
        if function.kind is FunctionKind.HOST:
            return "launcher parameter"
        if function.kind is FunctionKind.KERNEL:
            return "kernel parameter"
        return "device-function parameter" if _platform_width(decl) else None

    @staticmethod
    def _local_role(decl: IntegerDecl) -> str | None:
        if decl.declarator in ("pointer", "array") or decl.is_constexpr or decl.has_constant_init or decl.c_api:
            return None
        if decl.shape_source:
            return "shape/stride value"
        if not _platform_width(decl) or decl.loop_bound_constant is True:
            return None
        if decl.loop_bound_constant is False:
            return "loop counter (over a runtime bound)"
        return "index/size variable"


def _platform_width(decl: IntegerDecl) -> bool:
    """`long` and `unsigned long`: the one spelling whose width differs between CUDA hosts."""
    return decl.keywords.split().count("long") == 1


def params_struct_names(model: SourceModel) -> set[str]:
    """Qualified names of the params structs: passed by value to a kernel of this file, or
    named `...Params` by the convention."""
    names = {s.qualified_name for s in model.structs if s.name.endswith(_PARAMS_STRUCT_SUFFIXES)}
    for kernel in model.kernels:
        for param in kernel.params:
            struct = struct_for_type(model, param.type)
            if struct is not None:
                names.add(struct.qualified_name)
    return names
