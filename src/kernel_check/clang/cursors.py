"""Small helpers over libclang cursors shared by the extraction passes."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Iterator

import clang.cindex as ci

from ..model import Span, TypeInfo, line_starts

K = ci.CursorKind

FUNCTION_KINDS = (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE, K.CXX_METHOD, K.CONSTRUCTOR, K.DESTRUCTOR)
# Declarations that only group others: a walk of a file's declarations descends through them
SCOPE_KINDS = (K.NAMESPACE, K.LINKAGE_SPEC, K.UNEXPOSED_DECL)
RECORD_KINDS = (K.STRUCT_DECL, K.CLASS_DECL, K.CLASS_TEMPLATE, K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION)
TEMPLATE_PARAM_KINDS = {
    K.TEMPLATE_TYPE_PARAMETER: "type",
    K.TEMPLATE_NON_TYPE_PARAMETER: "non_type",
    K.TEMPLATE_TEMPLATE_PARAMETER: "template",
}


# How many AST levels a recursive pass (the data-flow walk) descends. Far deeper than written
# code nests, and low enough that the walk's frames (up to 4 per level, for nested calls)
# stay well within Python's default recursion limit of 1000: past it, the error surfaces
# inside libclang's visitor callback, as a ctypes error or printed with the children dropped.
MAX_NESTING = 150


class NestedTooDeeply(Exception):
    """A pass reached `MAX_NESTING` (generated code: a sum of thousands of terms). The file
    is then one KC000 that names the limit: a model cut off at some depth could make rules
    report what the cut-off code would have disproved."""

    def __init__(self, cursor: ci.Cursor, path: str) -> None:
        start = cursor.extent.start
        here = start.file is not None and start.file.name == path
        self.line: int = start.line if here else 1  # a header's position is not the file's
        self.column: int = start.column if here else 1
        super().__init__(
            f"code nested more than {MAX_NESTING} levels deep (a generated expression?); "
            "too deep to analyze, no rule checked this file"
        )


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


def walk(cursor: ci.Cursor, descend: Callable[[ci.Cursor], bool] | None = None) -> Iterator[ci.Cursor]:
    """Pre-order walk below `cursor` (not including it); see `walk_with_depth`. A whole
    walk (no `descend`) is read once per cursor object and kept (`descendants`)."""
    if descend is None:
        return iter(descendants(cursor))
    return (child for _depth, child in walk_with_depth(cursor, descend))


_DESCENDANTS = "_kernel_check_descendants"


def descendants(cursor: ci.Cursor) -> list[ci.Cursor]:
    """Every cursor below `cursor`, in pre-order, kept on the cursor object: the passes
    walk the same subtrees again and again (a lambda's calls are looked up in the whole
    enclosing declaration once per parameter), and a kept list is iterated at C speed
    where each walk was a Python generator over every node. A translation unit's AST
    never changes, and the list lives as long as the cursor (tree.py keeps the children
    the same way). Iterative: generated code nests thousands of levels deep."""
    known = cursor.__dict__
    kept = known.get(_DESCENDANTS)
    if kept is None:
        kept = []
        stack = list(cursor.get_children())
        stack.reverse()
        while stack:
            node = stack.pop()
            kept.append(node)
            below = list(node.get_children())
            if below:
                below.reverse()
                stack.extend(below)
        known[_DESCENDANTS] = kept
    return kept


def walk_with_depth(
    cursor: ci.Cursor, descend: Callable[[ci.Cursor], bool] | None = None
) -> Iterator[tuple[int, ci.Cursor]]:
    """Pre-order `(depth, cursor)` below `cursor`, its children at depth 1; `descend` says
    whose children are visited (default: everyone's). An explicit stack of child iterators,
    not recursion: generated code nests expressions thousands of levels deep, and a recursion
    error inside libclang's child-visitor callback is only printed, its children dropped."""
    pending = [iter(cursor.get_children())]
    while pending:
        child = next(pending[-1], None)
        if child is None:
            pending.pop()
            continue
        yield len(pending), child
        if descend is None or descend(child):
            pending.append(iter(child.get_children()))


# Parentheses and implicit conversions (clang's ImplicitCastExpr is an UNEXPOSED_EXPR here)
PARENS_AND_CONVERSIONS = (K.UNEXPOSED_EXPR, K.PAREN_EXPR)
EXPLICIT_CASTS = (
    K.CXX_STATIC_CAST_EXPR,
    K.CXX_REINTERPRET_CAST_EXPR,
    K.CSTYLE_CAST_EXPR,
    K.CXX_CONST_CAST_EXPR,
    K.CXX_FUNCTIONAL_CAST_EXPR,
)


def _strip_through(cursor: ci.Cursor, kinds: tuple[ci.CursorKind, ...]) -> ci.Cursor:
    while cursor.kind in kinds:
        operands = [c for c in cursor.get_children() if c.kind.is_expression()]
        if len(operands) != 1:
            break
        cursor = operands[0]
    return cursor


def strip_parens(cursor: ci.Cursor) -> ci.Cursor:
    """The expression inside parentheses and implicit conversions."""
    return _strip_through(cursor, PARENS_AND_CONVERSIONS)


def strip_casts(cursor: ci.Cursor) -> ci.Cursor:
    """The operand inside parentheses, implicit conversions and explicit casts."""
    return _strip_through(cursor, PARENS_AND_CONVERSIONS + EXPLICIT_CASTS)


def is_implicit_instantiation(cursor: ci.Cursor) -> bool:
    """libclang lists some implicit instantiations (`kernel<float, 4>` named by a
    `static constexpr auto kernel = ...`) beside their template, at the template's own
    location; the template itself is already in the model."""
    template = cursor.specialized_template
    return template is not None and template.location.offset == cursor.location.offset


def outermost(cursors: Iterable[ci.Cursor]) -> list[ci.Cursor]:
    """`cursors` in source order without those nested in another one: libclang also lists
    some implicit template instantiations at translation-unit level, inside the extent of
    their namespace."""
    kept: list[ci.Cursor] = []
    end = -1
    for cursor in sorted(cursors, key=lambda c: (c.extent.start.offset, -c.extent.end.offset)):
        if cursor.extent.end.offset <= end:
            continue
        kept.append(cursor)
        end = cursor.extent.end.offset
    return kept


def initializer_of(decl: ci.Cursor) -> ci.Cursor | None:
    """The initializer expression of a variable declaration (its first expression)."""
    for child in decl.get_children():
        if child.kind.is_expression():
            return child
    return None


def referenced_of(cursor: ci.Cursor) -> ci.Cursor | None:
    try:
        return cursor.referenced
    except ValueError:  # a cursor kind these bindings do not know
        return None


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
        pointee_volatile=bool(pointee and pointee.is_volatile_qualified()),
        is_restrict=type_.is_restrict_qualified() or canonical.is_restrict_qualified(),
        is_reference=is_reference,
        canonical=canonical.spelling,
        is_dependent="type-parameter" in canonical.spelling or type_.kind == ci.TypeKind.UNEXPOSED,
    )


def token_spellings(cursor: ci.Cursor) -> list[str]:
    return [t.spelling for t in cursor.get_tokens()]


def source_text(data: bytes, span: Span) -> str:
    return data[span.start : span.end].decode("utf-8", errors="replace")


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


class Positions:
    """Byte offset -> `Span` for one file's bytes (clang columns are 1-based byte columns)."""

    def __init__(self, data: bytes) -> None:
        self._line_starts = line_starts(data)  # a lone \r ends a line for clang too

    def span(self, start: int, end: int) -> Span:
        line, column = self._line_column(start)
        end_line, end_column = self._line_column(end)
        return Span(line, column, end_line, end_column, start, end)

    def line_start(self, offset: int) -> int:
        """The byte offset of the start of the line holding `offset`."""
        return self._line_starts[bisect.bisect_right(self._line_starts, offset) - 1]

    def _line_column(self, offset: int) -> tuple[int, int]:
        index = bisect.bisect_right(self._line_starts, offset) - 1
        return index + 1, offset - self._line_starts[index] + 1


class MacroRanges:
    """The macro expansions written in a file, to tell macro-generated code from written code.

    A declaration whose *name* lies in an expansion was produced by the macro; one that merely
    starts with a macro (`__global__ void k()`, `SGL_DEVICE float f()`) was written out.
    """

    def __init__(self, top_level: list[ci.Cursor]) -> None:
        ranges: list[tuple[int, int, str]] = []
        for start, end, name in sorted(
            (c.extent.start.offset, c.extent.end.offset, c.spelling)
            for c in top_level
            if c.kind == K.MACRO_INSTANTIATION
        ):
            if ranges and start < ranges[-1][1]:  # an expansion inside another's arguments
                continue
            ranges.append((start, end, name))
        self._starts = [start for start, _, _ in ranges]
        self._ranges = ranges

    def macro_at(self, offset: int) -> str:
        """The name of the macro whose expansion covers `offset`, "" when none does."""
        index = bisect.bisect_right(self._starts, offset) - 1
        if index >= 0:
            start, end, name = self._ranges[index]
            if start <= offset < end:
                return name
        return ""
