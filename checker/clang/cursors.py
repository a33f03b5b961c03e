"""Small helpers over libclang cursors shared by the extraction passes."""

from __future__ import annotations

from typing import Iterator

import clang.cindex as ci

from ..model import Span, TypeInfo

K = ci.CursorKind

FUNCTION_KINDS = (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE, K.CXX_METHOD, K.CONSTRUCTOR, K.DESTRUCTOR)
RECORD_KINDS = (K.STRUCT_DECL, K.CLASS_DECL, K.CLASS_TEMPLATE, K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION)
TEMPLATE_PARAM_KINDS = {
    K.TEMPLATE_TYPE_PARAMETER: "type",
    K.TEMPLATE_NON_TYPE_PARAMETER: "non_type",
    K.TEMPLATE_TEMPLATE_PARAMETER: "template",
}


def file_name(cursor: ci.Cursor) -> str | None:
    loc = cursor.location
    return loc.file.name if loc.file else None


def in_file(cursor: ci.Cursor, path: str) -> bool:
    return file_name(cursor) == path


def span_of(extent: ci.SourceRange) -> Span:
    start, end = extent.start, extent.end
    return Span(start.line, start.column, end.line, end.column, start.offset, end.offset)


def name_span(cursor: ci.Cursor) -> Span:
    """The span of the declared name (the cursor's location) rather than the whole extent."""
    loc = cursor.location
    width = len(cursor.spelling.encode()) if cursor.spelling else 1
    return Span(loc.line, loc.column, loc.line, loc.column + width, loc.offset, loc.offset + width)


def children(cursor: ci.Cursor) -> list[ci.Cursor]:
    return list(cursor.get_children())


def walk(cursor: ci.Cursor) -> Iterator[ci.Cursor]:
    """Pre-order walk below `cursor` (not including it)."""
    for child in cursor.get_children():
        yield child
        yield from walk(child)


def has_child_kind(cursor: ci.Cursor, kind: ci.CursorKind) -> bool:
    return any(c.kind == kind for c in cursor.get_children())


def type_info(type_: ci.Type) -> TypeInfo:
    canonical = type_.get_canonical()
    is_reference = canonical.kind in (ci.TypeKind.LVALUEREFERENCE, ci.TypeKind.RVALUEREFERENCE)
    is_pointer = canonical.kind == ci.TypeKind.POINTER or type_.kind == ci.TypeKind.POINTER
    pointee = type_.get_pointee() if is_pointer else None
    if pointee is not None and pointee.kind == ci.TypeKind.INVALID:
        pointee = canonical.get_pointee()
    return TypeInfo(
        spelling=type_.spelling,
        is_pointer=is_pointer,
        pointee_const=bool(pointee and pointee.is_const_qualified()),
        is_restrict=type_.is_restrict_qualified() or canonical.is_restrict_qualified(),
        is_reference=is_reference,
        canonical=canonical.spelling,
        is_dependent="type-parameter" in canonical.spelling or type_.kind == ci.TypeKind.UNEXPOSED,
    )


def token_spellings(cursor: ci.Cursor) -> list[str]:
    return [t.spelling for t in cursor.get_tokens()]


def source_text(data: bytes, span: Span) -> str:
    return data[span.start:span.end].decode("utf-8", errors="replace")


def qualified_name(cursor: ci.Cursor) -> str:
    parts = []
    node = cursor
    while node is not None and node.kind != K.TRANSLATION_UNIT:
        if node.spelling:
            parts.append(node.spelling)
        elif node.kind == K.NAMESPACE:
            parts.append("(anonymous)")
        node = node.semantic_parent
    return "::".join(reversed(parts))


def enclosing_namespaces(cursor: ci.Cursor) -> list[str]:
    names = []
    node = cursor.semantic_parent
    while node is not None and node.kind != K.TRANSLATION_UNIT:
        if node.kind == K.NAMESPACE:
            names.append(node.spelling or "(anonymous)")
        node = node.semantic_parent
    return names


def is_exported(cursor: ci.Cursor) -> bool:
    """Namespace scope, not in `details`/anonymous namespaces, not inside a function."""
    node = cursor.semantic_parent
    while node is not None and node.kind != K.TRANSLATION_UNIT:
        if node.kind == K.NAMESPACE and (not node.spelling or node.spelling in ("details", "detail")):
            return False
        if node.kind in FUNCTION_KINDS:
            return False
        node = node.semantic_parent
    return True
