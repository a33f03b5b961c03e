"""Helpers shared by several C++ rules (one home for each piece of shared logic)."""

from __future__ import annotations

from dataclasses import dataclass

from kernel_check.finding import Location
from kernel_check.model import (
    AccessKind,
    Function,
    FunctionDataflow,
    FunctionKind,
    IntegerDecl,
    IntegerDeclKind,
    PdlCall,
    PdlCallKind,
    Span,
)
from kernel_check.semantic import SemanticModel


def location_of(model: SemanticModel, span: Span) -> Location:
    """A reportable location; clang's byte columns become character columns."""
    return Location(
        model.path,
        span.line,
        _char_column(model, span.line, span.column),
        span.end_line,
        _char_column(model, span.end_line, span.end_column),
    )


def _char_column(model: SemanticModel, line: int, byte_column: int) -> int:
    raw = model.line_bytes(line)
    if raw.isascii():
        return byte_column
    return len(raw[: byte_column - 1].decode("utf-8", errors="replace")) + 1


# ---- dataflow and PDL helpers (KC102, KC201-KC204) ----


def pdl_waits(flow: FunctionDataflow) -> list[PdlCall]:
    """The PDL waits of a body, earliest first (unplaceable ones last)."""
    waits = [call for call in flow.pdl_calls if call.kind is PdlCallKind.WAIT]
    return sorted(waits, key=lambda call: (call.order is None, call.order or 0))


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


def _written_slots(model: SemanticModel, kernel: Function) -> dict[Slot, str]:
    """The pointers the kernel writes through (or hands on to code that may), with their spelling."""
    flow = model.dataflow(kernel)
    if flow is None:
        return {}
    return {
        (access.param_index, access.fields[0] if access.fields else ""): access.root
        for access in flow.accesses
        if access.kind in (AccessKind.WRITE, AccessKind.ESCAPE) and len(access.fields) <= 1
    }


def _dtypes(model: SemanticModel, launcher: str, tensor: str) -> frozenset[str]:
    """The dtypes (canonical: `fp32_t` and `float` are one) a launcher's TensorMatchers accept
    for `tensor`; empty when unchecked."""
    return frozenset(
        dtype.canonical
        for chain in model.facts_of(launcher).matcher_chains
        if any(v.name == tensor for v in chain.verified)
        for dtype in chain.dtypes
    )


def _may_be_one_tensor(model: SemanticModel, launcher: str, first: str, second: str) -> bool:
    """Whether two tensors of a launcher may be one: not when its matchers give them no dtype in common."""
    first_dtypes, second_dtypes = _dtypes(model, launcher, first), _dtypes(model, launcher, second)
    return not (first_dtypes and second_dtypes) or bool(first_dtypes & second_dtypes)


def aliasing(model: SemanticModel, kernel: Function, read: Slot) -> tuple[bool, Partner | None]:
    """(in place, partner): whether a launch fills `read` and a written pointer from one
    tensor, else a written pointer that a launch fills from another tensor that may be the
    same one (not when the launcher's matchers accept no common dtype for the two)."""
    written = _written_slots(model, kernel)
    partner: Partner | None = None
    for launch, _ in model.launches_of(kernel):
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
    platform; only `long` (32 bits on Windows, 64 on Linux) is reported there.

    A `long long*` / `unsigned long long*` parameter or field that reaches a CUDA atomic's
    address operand is exempt: that spelling is the type the 64-bit overloads take. This reads
    the dataflow facts (KC110 needs them; KC111 asks only about the variables a size narrows
    into, never a pointer)."""

    def __init__(self, model: SemanticModel) -> None:
        self.model = model

    def role(self, decl: IntegerDecl) -> str | None:
        if _atomic_width(decl) and self.model.is_atomic_operand(decl):
            return None  # no fixed-width alias names the pointee type the atomic's overload takes
        if decl.kind is IntegerDeclKind.FIELD:
            return "params-struct field" if decl.owner in self.model.params_struct_names() else None
        function = self.model.function(decl.owner_usr)
        if function is None or (function.kind is FunctionKind.HOST and not self.model.is_launcher(function)):
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


def _atomic_width(decl: IntegerDecl) -> bool:
    """`long long` and `unsigned long long`: CUDA's 64-bit atomics take a pointer to one of
    these, and on Linux `int64_t`/`uint64_t` are `long`/`unsigned long`, which match no
    overload. (`int32_t` is `int`, so an `int*` atomic operand can be spelled fixed-width.)"""
    return decl.keywords.split().count("long") == 2


def _platform_width(decl: IntegerDecl) -> bool:
    """`long` and `unsigned long`: the one spelling whose width differs between CUDA hosts."""
    return decl.keywords.split().count("long") == 1
