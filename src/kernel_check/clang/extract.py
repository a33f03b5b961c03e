"""Model stage: one pass over a translation unit into a `SourceModel`.

The walk visits the declarations of the checked file; each kind of fact has its own
small extractor below so that rules never touch cursors. Each tier-2 analysis runs only
when `needs` (what the selected rules read, `registry.Need`) asks for it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import clang.cindex as ci

from ..cache import read_bytes
from ..config import real_path
from ..includes import (
    LIBRARY,
    bundled_include_dir,
    find_repo_include_dir,
    include_lines,
    library_root,
    read_library,
)
from ..model import (
    Field,
    Function,
    FunctionKind,
    HeaderLibrary,
    Param,
    SourceModel,
    Span,
    Struct,
    TemplateCheck,
    TemplateInstantiation,
    TemplateParam,
    line_starts,
)
from ..registry import Need
from .capi import is_invalid_declaration
from .consteval import Constants
from .cursors import (
    FUNCTION_KINDS,
    RECORD_KINDS,
    SCOPE_KINDS,
    TEMPLATE_PARAM_KINDS,
    K,
    MacroRanges,
    NestedTooDeeply,
    Positions,
    has_child_kind,
    in_file,
    is_exported,
    is_implicit_instantiation,
    name_span,
    qualified_name,
    span_of,
    type_info,
    walk,
    walk_with_depth,
)
from .device_merge import merge_device_model
from .doxygen import Comments
from .index_values import extract_index_values
from .kernel_interface import analyze_elsewhere, collect_function_facts
from .launches import LaunchResolver
from .numerics import Numerics
from .parse import ParsedUnit
from .pointer_accesses import DataflowExtractor
from .program import Function as FunctionCode
from .program import Program, code_declarations, function_kind
from .scope_facts import extract_scope_facts
from .symbolic import LauncherScope, kernel_terms, launch_contracts
from .thread_dependence import ThreadDependence
from .tree import share_reads

_DEVICE_SPECIFIER_TOKENS = (
    "SGL_DEVICE",
    "SGL_DEVICE_HOST",
    "__device__",
    "__forceinline__",
    "__host__",
    "__inline__",
    "inline",
    "static",
    "constexpr",
)


ALL_ANALYSES = frozenset(Need) - {Need.PYTHON}


class _Extractor:
    def __init__(
        self, unit: ParsedUnit, text: str, data: bytes, needs: frozenset[Need], every_access: bool = False
    ) -> None:
        self.needs = needs
        self.every_access = every_access
        self.unit = unit
        self.path = unit.path
        self.data = data
        self.constants = Constants(data, unit.path)  # the walks' compile-time values
        self.model = SourceModel(path=unit.path, text=text, data=data)
        self.top_level: list[ci.Cursor] = []  # the file's own translation-unit-level cursors
        self.program = Program(unit.path)
        self.dataflow = DataflowExtractor(self.model.dataflow_facts, self.program, data)
        self.threads = ThreadDependence(self.program)
        self.launches = LaunchResolver(self.program, data)
        self.numerics = Numerics(self.program)
        self.comments = Comments(data)
        self.positions = Positions(data)

    # -- traversal -----------------------------------------------------------------------
    def run(self) -> SourceModel:
        self._visit_scope(self.unit.root)
        if Need.INTEGERS in self.needs:
            declarations = code_declarations(self.top_level)
            extract_index_values(self.program, declarations, MacroRanges(self.top_level), self.data, self.model)
        if Need.SCOPE in self.needs:
            extract_scope_facts(self.top_level, self.unit, self.model)
        if Need.NUMERICS in self.needs:
            self.model.narrowing_conversions = self.numerics.conversions()
        self.model.error_spans = self._error_spans()
        self.model.header_library = _header_library(self.unit, self.data)
        return self.model

    def _visit_scope(self, root: ci.Cursor) -> None:
        """Functions and structs in ``root`` and its nested namespaces, in source order."""
        for depth, cursor in walk_with_depth(root, descend=lambda c: c.kind in SCOPE_KINDS and in_file(c, self.path)):
            if not in_file(cursor, self.path):
                continue
            if depth == 1:
                self.top_level.append(cursor)
            if cursor.kind in FUNCTION_KINDS and not is_implicit_instantiation(cursor):
                self._add_function(cursor)
            elif cursor.kind in RECORD_KINDS:
                self._add_struct(cursor)

    # -- functions -----------------------------------------------------------------------
    def _add_function(self, cursor: ci.Cursor) -> None:
        body = next((c for c in cursor.get_children() if c.kind == K.COMPOUND_STMT), None)
        kind = function_kind(cursor)
        is_device = has_child_kind(cursor, K.CUDADEVICE_ATTR)
        is_host = has_child_kind(cursor, K.CUDAHOST_ATTR)
        spelling, specifier_span = self._specifiers(cursor)
        function = Function(
            name=cursor.spelling,
            qualified_name=qualified_name(cursor),
            kind=kind,
            span=span_of(cursor.extent),
            name_span=name_span(cursor),
            params=[self._param(p) for p in cursor.get_children() if p.kind == K.PARM_DECL],
            template_params=_template_params(cursor),
            return_type=cursor.result_type.spelling,
            return_canonical=cursor.result_type.get_canonical().spelling,
            doc=self.comments.preceding(cursor.extent.start.offset),
            is_exported=is_exported(cursor),
            is_definition=body is not None,
            is_method=cursor.kind in (K.CXX_METHOD, K.CONSTRUCTOR, K.DESTRUCTOR),
            body=span_of(body.extent) if body is not None else None,
            is_host_device=is_device and is_host,
            specifier_spelling=spelling,
            specifier_span=specifier_span,
            usr=cursor.get_usr(),
            access=_access(cursor),
            is_deleted=cursor.is_deleted_method(),
            is_defaulted=cursor.is_default_method(),
            owner_usr=_owner_usr(cursor),
            from_macro=self._from_macro(cursor),
        )
        self.model.functions.append(function)
        if body is not None:
            typed = self.program.function(cursor)  # its tier-1 picture, shared by the analyses
            if Need.LAUNCHES in self.needs:
                self._collect_launches(cursor, function)
            if Need.INTERFACE in self.needs:
                collect_function_facts(self.model, self.program, function, typed, self.data, self.path)
                if not typed.is_implicit_instantiation:
                    self._collect_static_asserts(function.usr, cursor)
            if Need.DATAFLOW in self.needs:
                self.dataflow.add_function(typed, function)
            if kind is not FunctionKind.HOST and Need.THREADS in self.needs:
                assert typed.body is not None  # a definition's
                self.model.divergent_barriers.extend(self.threads.divergent_barriers(typed.body))
            walked = kind is FunctionKind.KERNEL or (self.every_access and kind is not FunctionKind.HOST)
            if walked and Need.SYMBOLIC in self.needs:
                accesses, products, barriers = kernel_terms(typed, self.threads, self.constants)
                self.model.symbolic_accesses.extend(accesses)
                self.model.symbolic_products.extend(products)
                self.model.symbolic_barriers.extend(barriers)
            if kind is FunctionKind.HOST and Need.CONTRACTS in self.needs:
                self.model.instantiations.extend(_instantiations(cursor))
                self._collect_contracts(function, typed)
            if kind is not FunctionKind.HOST and Need.NUMERICS in self.needs and not typed.is_implicit_instantiation:
                self.numerics.add_function(typed)

    def _collect_contracts(self, function: Function, typed: FunctionCode) -> None:
        """The contract at each launch of a launcher, over its matcher chains' sizes; and of a
        function that verifies tensors, at each launch of a helper (defined before it) it
        hands them to."""
        own = any(
            launch.launcher_usr == function.usr and function.body is not None and function.body.contains(launch.span)
            for launch in self.model.launches
        )
        chains = tuple(c for c in self.model.launcher_facts.matcher_chains if c.function == function.usr)
        if not own and not chains:
            return  # neither a launcher nor a verifier: no contract, and no walk of its body
        facts = self.model.launcher_facts
        scope = LauncherScope(dict(enumerate(self.model.launches)), tuple(facts.data_handoffs))
        try:
            contracts = launch_contracts(typed, self.threads, scope, chains, self.constants, function.qualified_name)
        except NestedTooDeeply:
            return  # a contract only adds witnesses: a launcher too deep to walk has none
        self.model.launch_contracts.extend(contracts)

    def _specifiers(self, cursor: ci.Cursor) -> tuple[str, Span | None]:
        """The specifier words before the return type (`SGL_DEVICE`, `__device__ __forceinline__`).

        A declaration's extent starts after attribute-only macros such as SGL_DEVICE, so the
        words are read from the source text just before the extent as well as inside it."""
        start = cursor.extent.start.offset
        if cursor.kind == K.FUNCTION_TEMPLATE or self.data[start : start + 8] == b"template":
            start = _skip_template_header(self.data, start)
        line_start = self.positions.line_start(start)
        leading: list[re.Match[bytes]] = []
        for word in _WORD_RE.finditer(self.data, line_start):  # lazily: the loop stops early
            if word.group().decode(errors="replace") not in _DEVICE_SPECIFIER_TOKENS:
                if word.start() >= start:
                    break
                leading = []  # something else before the declaration on this line
                continue
            leading.append(word)
        if not leading:
            return "", None
        first, last = leading[0], leading[-1]
        span = self.positions.span(first.start(), last.end())  # after a template header: a later line
        return " ".join(w.group().decode(errors="replace") for w in leading), span

    def _from_macro(self, cursor: ci.Cursor) -> bool:
        """Whether a declaration comes out of a macro expansion: its location (the expansion
        site) does not spell its name."""
        name = cursor.spelling.encode()
        start = cursor.location.offset
        return bool(name) and not name.startswith(b"operator") and self.data[start : start + len(name)] != name

    def _param(self, cursor: ci.Cursor) -> Param:
        restrict_insert_offset, is_grid_constant = _declarator_tokens(cursor)
        return Param(
            name=cursor.spelling,
            type=type_info(cursor.type),
            span=span_of(cursor.extent),
            restrict_insert_offset=restrict_insert_offset,
            is_grid_constant=is_grid_constant,
        )

    # -- structs ---------------------------------------------------------------------------
    def _add_struct(self, cursor: ci.Cursor) -> None:
        fields = [
            Field(c.spelling, type_info(c.type), span_of(c.extent), _declarator_tokens(c)[0])
            for c in cursor.get_children()
            if c.kind == K.FIELD_DECL
        ]
        self.model.structs.append(
            Struct(
                name=cursor.spelling,
                qualified_name=qualified_name(cursor),
                span=span_of(cursor.extent),
                name_span=name_span(cursor),
                fields=fields,
                template_params=_template_params(cursor),
                doc=self.comments.preceding(cursor.extent.start.offset),
                is_exported=is_exported(cursor),
                is_class=cursor.kind != K.STRUCT_DECL,
                is_definition=cursor.is_definition(),
                access=_access(cursor),
                usr=cursor.get_usr(),
                owner_usr=_owner_usr(cursor),
                is_specialization=cursor.specialized_template is not None,
                from_macro=self._from_macro(cursor),
            )
        )
        if Need.INTERFACE in self.needs:
            self._collect_static_asserts(cursor.get_usr(), cursor)
        for member in cursor.get_children():
            if member.kind in FUNCTION_KINDS and in_file(member, self.path):
                self._add_function(member)
            elif member.kind in RECORD_KINDS and in_file(member, self.path):
                self._add_struct(member)

    def _collect_static_asserts(self, owner: str, scope: ci.Cursor) -> None:
        """The `static_assert`s of a function or class template as conditions over its
        template parameters (`TemplateCheck`: the drafter's filter of template values)."""
        for condition, text, span in Constants(self.data, self.path).static_asserts(scope):
            self.model.launcher_facts.template_checks.append(
                TemplateCheck(owner, "static_assert", condition, text, span)
            )

    # -- launches ------------------------------------------------------------------------------
    def _collect_launches(self, cursor: ci.Cursor, launcher: Function) -> None:
        for launch, kernels in self.launches.launches(self.program.function(cursor), launcher):
            self.model.launches.append(launch)
            if Need.INTERFACE in self.needs:
                for kernel in kernels:  # a header's kernel: its facts are followed into
                    analyze_elsewhere(self.model, self.program, kernel, self.path)

    # -- parse errors ------------------------------------------------------------------------
    def _error_spans(self) -> list[Span]:
        """Top-level declaration extents containing an error, and those of declarations
        clang marked invalid; a file-wide span when an error lies in an included header
        (every type may then be wrong) or is fatal (clang stops reporting, yet still builds
        the invalid declarations that follow)."""
        errors = self.unit.errors
        if not errors:
            return []
        if any(not e.in_main_file or e.fatal for e in errors):
            lines = len(line_starts(self.data))  # as clang counts them: a lone \r ends a line too
            return [Span(1, 1, lines + 1, 1, 0, len(self.data) + 1)]
        found = _main_file_declarations(self.unit.root, self.path)
        declarations = [span_of(c.extent) for c in found if c.kind in FUNCTION_KINDS or c.kind in RECORD_KINDS]
        # clang reports an error once: a declaration it made invalid because of another's (a
        # third definition after the reported redefinition) has no diagnostic of its own
        spans = [span_of(c.extent) for c in found if is_invalid_declaration(c)]
        for error in errors:
            containing = [s for s in declarations if s.start <= error.offset <= s.end]
            if containing:
                spans.append(max(containing, key=lambda s: s.end - s.start))
            else:
                spans.append(Span(error.line, 1, error.line + 1, 1, error.offset, error.offset + 1))
        return spans


_WORD_RE = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*|[^\sA-Za-z0-9_]")


def _skip_template_header(data: bytes, start: int) -> int:
    """Offset just past `template <...>` starting at `start` (angle brackets balanced)."""
    depth = 0
    for index in range(data.find(b"<", start), len(data)):
        char = data[index : index + 1]
        depth += 1 if char == b"<" else -1 if char == b">" else 0
        if depth == 0:
            return index + 1
    return start


def _access(cursor: ci.Cursor) -> str:
    """ "public"/"protected"/"private" for a class member, "" elsewhere."""
    if cursor.semantic_parent is None or cursor.semantic_parent.kind not in RECORD_KINDS:
        return ""
    return cursor.access_specifier.name.lower().replace("invalid", "")


def _main_file_declarations(scope: ci.Cursor, path: str) -> list[ci.Cursor]:
    """Declarations of the checked file outside function bodies (functions, records, their
    members, variables...), descending only through its own scopes (never into the
    thousands of header declarations)."""

    def descend(cursor: ci.Cursor) -> bool:
        return (cursor.kind in SCOPE_KINDS or cursor.kind in RECORD_KINDS) and in_file(cursor, path)

    return [
        c for c in walk(scope, descend) if c.kind.is_declaration() and c.kind not in SCOPE_KINDS and in_file(c, path)
    ]


def _template_params(cursor: ci.Cursor) -> list[TemplateParam]:
    return [
        TemplateParam(c.spelling, TEMPLATE_PARAM_KINDS[c.kind], c.type.spelling)
        for c in cursor.get_children()
        if c.kind in TEMPLATE_PARAM_KINDS
    ]


def _declarator_tokens(cursor: ci.Cursor) -> tuple[int | None, bool]:
    """From one pass over a declaration's tokens (each spelling is a libclang call): where
    `__restrict__` would go -- just after the last `*` before the declared name, if the
    declarator spells one -- and whether `__grid_constant__` is written."""
    offset, named, grid_constant = None, False, False
    for token in cursor.get_tokens():
        spelling = token.spelling
        grid_constant = grid_constant or spelling == "__grid_constant__"
        if named:
            continue
        if spelling == cursor.spelling and token.kind == ci.TokenKind.IDENTIFIER:
            named = True
        elif spelling == "*":
            offset = token.extent.end.offset
    return offset, grid_constant


def extract(
    unit: ParsedUnit, text: str, data: bytes, needs: frozenset[Need] = ALL_ANALYSES, every_access: bool = False
) -> SourceModel:
    """Build the model of one parsed file: its declarations, and the analyses `needs` names
    (the fact lists of the others stay empty); `every_access`: the symbolic accesses hold
    every global access of a kernel or device function (the drafter sizes tensors by their
    guards and reads which loaded values index which tensor)."""
    share_reads(ci)  # every pass below reads the same cursor objects, each once (tree.py)
    model = _Extractor(unit, text, data, needs, every_access).run()
    for device in unit.device_passes:  # code only a device-side parse sees (device_pass.py)
        merge_device_model(model, _Extractor(device.unit, text, data, needs, every_access).run(), device.regions)
    return model


def _header_library(unit: ParsedUnit, data: bytes) -> HeaderLibrary:
    root = library_root(unit.args)
    if root is None:
        return HeaderLibrary()
    names, namespace_home = read_library(root)
    resolved = real_path(root)
    return HeaderLibrary(
        str(root),
        names,
        own=resolved != real_path(bundled_include_dir()) or find_repo_include_dir(Path(unit.path)) == resolved,
        included=_includes_library(unit, data, f"{root / LIBRARY}{os.sep}"),
        namespace_home=namespace_home,
    )


def _includes_library(unit: ParsedUnit, data: bytes, headers: str) -> bool:
    """Whether the file includes a header of the library (under `headers`), itself or through
    the headers it parsed. A precompiled preamble that holds the library hides its headers
    from the deps, so then the file's own `#include` lines and those of the headers it
    parsed itself tell; the preamble's deps do not: the shared preamble holds the whole
    library for every file that may reach it (an include the planner cannot follow counts)."""
    if any(dep.startswith(headers) for dep in unit.deps):
        return True
    if unit.preamble is None:
        return False
    texts = (data, *(read_bytes(Path(dep)) or b"" for dep in unit.deps))
    return any(name.startswith(f"{LIBRARY}/") for text in texts for name, _ in include_lines(text))


def _owner_usr(cursor: ci.Cursor) -> str:
    """The USR of the record a member or nested record is declared in ("" outside records)."""
    parent = cursor.semantic_parent
    return parent.get_usr() if parent is not None and parent.kind in RECORD_KINDS else ""


def _instantiations(function: ci.Cursor) -> list[TemplateInstantiation]:
    """The specializations a host function's body names with their arguments known (`TemplateInstantiation`)."""
    found = []
    for cursor in walk(function):
        referenced = cursor.referenced if cursor.kind == K.DECL_REF_EXPR else None
        if referenced is None or referenced.kind not in FUNCTION_KINDS:
            continue
        for specialization in (referenced, referenced.semantic_parent):
            template = specialization.specialized_template if specialization is not None else None
            if template is not None and specialization.get_num_template_arguments() > 0:
                found.append(TemplateInstantiation(template.get_usr(), _template_arguments(specialization)))
    return found


def _template_arguments(specialization: ci.Cursor) -> tuple[int | None, ...]:
    """Each template argument of a specialization: an integer's value as libclang gives it (a
    bool's `true` as -1), else None."""
    integral = ci.TemplateArgumentKind.INTEGRAL
    return tuple(
        specialization.get_template_argument_value(index)
        if specialization.get_template_argument_kind(index) == integral
        else None
        for index in range(specialization.get_num_template_arguments())
    )
