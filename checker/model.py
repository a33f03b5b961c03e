"""The extracted C++/CUDA model: plain dataclasses that rules read instead of clang cursors.

`checker/clang/extract.py` builds a `SourceModel` in one pass over a translation unit.
Positions are `Span`s in the checked file (1-based line/column, 0-based byte offsets).
Only entities whose declaration lies in the checked file are recorded; included headers
are checked when they are themselves given to the checker.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Span:
    line: int
    column: int
    end_line: int
    end_column: int
    start: int  # byte offset
    end: int  # byte offset, exclusive

    def contains(self, other: "Span") -> bool:
        return self.start <= other.start and other.end <= self.end


class FunctionKind(enum.Enum):
    KERNEL = "kernel"  # __global__
    DEVICE = "device"  # __device__ (SGL_DEVICE), possibly also __host__
    HOST = "host"


@dataclass(frozen=True)
class DocComment:
    """A Doxygen-style comment attached to a declaration."""

    text: str
    span: Span
    is_doxygen: bool  # `///`, `//!`, `/**` or `/*!`
    has_brief: bool
    params: tuple[str, ...]  # names given to \param / @param
    tparams: tuple[str, ...]  # names given to \tparam / @tparam
    has_return: bool
    param_spans: tuple[tuple[str, int], ...] = ()  # (name, line) of each \param / \tparam


@dataclass(frozen=True)
class TypeInfo:
    spelling: str
    is_pointer: bool
    pointee_const: bool
    is_restrict: bool
    is_reference: bool
    canonical: str
    is_dependent: bool = False


@dataclass(frozen=True)
class Param:
    name: str
    type: TypeInfo
    span: Span
    # Byte offset right after the outermost `*` of a pointer declarator, where a
    # `__restrict__` can be inserted (None when the type is spelled through an alias).
    restrict_insert_offset: int | None = None
    is_grid_constant: bool = False


@dataclass(frozen=True)
class TemplateParam:
    name: str
    kind: str  # "type", "non_type", "template"
    type_spelling: str = ""


@dataclass(frozen=True)
class Field:
    name: str
    type: TypeInfo
    span: Span
    restrict_insert_offset: int | None = None


@dataclass
class Struct:
    name: str
    qualified_name: str
    span: Span
    name_span: Span
    fields: list[Field]
    template_params: list[TemplateParam]
    doc: DocComment | None
    is_exported: bool
    is_class: bool
    is_definition: bool


@dataclass
class Function:
    name: str
    qualified_name: str
    kind: FunctionKind
    span: Span
    name_span: Span
    params: list[Param]
    template_params: list[TemplateParam]
    return_type: str
    doc: DocComment | None
    is_exported: bool
    is_definition: bool
    is_method: bool
    body: Span | None
    is_host_device: bool = False
    # How a device function's specifiers were spelled: "SGL_DEVICE", "__device__ __forceinline__"...
    specifier_spelling: str = ""
    specifier_span: Span | None = None
    usr: str = ""


@dataclass(frozen=True)
class LaunchSite:
    """A kernel launch: `LaunchKernel(...)(kernel, args...)` or `kernel<<<...>>>(args...)`."""

    span: Span
    syntax: str  # "launch_kernel" or "triple_chevron"
    kernel_name: str  # the launched function's name ("" when unresolved)
    kernel_usr: str  # clang USR of the launched function template/function ("" when unresolved)
    template_args: str  # source text of explicit template arguments, "" if none
    enable_pdl: str | None  # source text of the `.enable_pdl(x)` argument, None when absent
    launcher: str  # qualified name of the enclosing function
    argument_texts: tuple[str, ...] = ()


@dataclass
class SourceModel:
    """Everything the C++ rules know about one file."""

    path: str
    text: str
    data: bytes
    functions: list[Function] = field(default_factory=list)
    structs: list[Struct] = field(default_factory=list)
    launch_sites: list[LaunchSite] = field(default_factory=list)
    # Spans of top-level declarations that contain a clang error: rules never report inside.
    error_spans: list[Span] = field(default_factory=list)

    @property
    def kernels(self) -> list[Function]:
        return [f for f in self.functions if f.kind is FunctionKind.KERNEL]

    @property
    def device_functions(self) -> list[Function]:
        return [f for f in self.functions if f.kind is FunctionKind.DEVICE]

    @property
    def launchers(self) -> list[Function]:
        names = {site.launcher for site in self.launch_sites}
        return [f for f in self.functions if f.qualified_name in names and f.kind is FunctionKind.HOST]

    def line_text(self, line: int) -> str:
        return self.line_bytes(line).decode("utf-8", errors="replace")

    def line_bytes(self, line: int) -> bytes:
        lines = self.data.split(b"\n")
        return lines[line - 1].rstrip(b"\r") if 0 < line <= len(lines) else b""
