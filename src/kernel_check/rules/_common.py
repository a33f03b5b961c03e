"""Helpers shared by several C++ rules (one home for each piece of shared logic)."""

from __future__ import annotations

import re

from kernel_check.finding import Location
from kernel_check.model import (
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


# ---- integer declarations (KC110, KC111) ----

_PARAMS_STRUCT_SUFFIXES = ("Params", "Param")


class IntegerRoles:
    """What an `IntegerDecl` is in KC110's terms (kernel parameter, params-struct field...),
    or None when bare `int` is fine there. One home for KC110's exemptions, so that KC111 can
    leave to KC110 a declaration it already reports.

    The scope is where the guide puts the reason for the convention: values that cross the
    FFI boundary (launcher parameters) or the host/device boundary (kernel parameters,
    params-struct fields), and locals that take a 64-bit shape or stride -- in any function,
    a host helper that launches nothing included (KC111 leaves every such `int`/`unsigned`
    local to KC110, so one of the two reports it wherever it is). Inside kernel, device and
    launcher bodies `int` is 32 bits on every CUDA target, so the width there is fixed by the
    platform; only `long` (32 bits on Windows, 64 on Linux) is reported there."""

    def __init__(self, model: SourceModel) -> None:
        self.functions = {f.usr: f for f in model.functions if f.usr}
        self.launchers = {f.usr for f in model.launchers}
        self.params_structs = params_struct_names(model)

    def role(self, decl: IntegerDecl) -> str | None:
        if decl.kind is IntegerDeclKind.FIELD:
            return "params-struct field" if decl.owner in self.params_structs else None
        function = self.functions.get(decl.owner_usr)
        if function is None or (function.kind is FunctionKind.HOST and function.usr not in self.launchers):
            # plain host helpers (and lambdas outside functions) are neither the kernel side nor
            # the FFI boundary, but a shape narrowed into an `int` local there is narrowed all the same
            return _SHAPE_LOCAL if decl.kind is IntegerDeclKind.LOCAL and _takes_shape(decl) else None
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
        if _exempt_local(decl):
            return None
        if decl.shape_source:
            return _SHAPE_LOCAL
        if not _platform_width(decl) or decl.loop_bound_constant is True:
            return None
        if decl.loop_bound_constant is False:
            return "loop counter (over a runtime bound)"
        return "index/size variable"


_SHAPE_LOCAL = "shape/stride value"


def _exempt_local(decl: IntegerDecl) -> bool:
    """Storage, a compile-time constant, or an `int` a C API dictates: never KC110's."""
    return decl.declarator in ("pointer", "array") or decl.is_constexpr or decl.has_constant_init or bool(decl.c_api)


def _takes_shape(decl: IntegerDecl) -> bool:
    return bool(decl.shape_source) and not _exempt_local(decl)


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
