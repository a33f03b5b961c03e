"""Namespace facts of one file: declarations at global scope (KC320) and `details::` names (KC321).

A `details` qualifier can be written anywhere (bodies, parameter types, using-declarations),
and libclang lists it as a NAMESPACE_REF beside what it qualifies, in no tier-1 node: one
walk over the file's declarations looks at every cursor's children for it. The global
declarations come from the file's top-level cursors alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import clang.cindex as ci

from ..model import DetailsReference, GlobalDeclaration, ScopeFacts, SourceModel, Span
from .cursors import RECORD_KINDS, K, MacroRanges, in_file, name_span, outermost, qualified_name, span_of
from .parse import ParsedUnit

DETAILS = "details"

_GLOBAL_KINDS = {
    K.NAMESPACE: "namespace",
    K.FUNCTION_DECL: "function",
    K.FUNCTION_TEMPLATE: "function",
    K.STRUCT_DECL: "struct",
    K.CLASS_DECL: "struct",
    K.UNION_DECL: "struct",
    K.CLASS_TEMPLATE: "struct",
    K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION: "struct",
    K.ENUM_DECL: "enum",
    K.VAR_DECL: "variable",
    K.TYPEDEF_DECL: "alias",
    K.TYPE_ALIAS_DECL: "alias",
    K.TYPE_ALIAS_TEMPLATE_DECL: "alias",
    K.NAMESPACE_ALIAS: "alias",
    K.USING_DIRECTIVE: "using",
    K.USING_DECLARATION: "using",
    K.STATIC_ASSERT: "static_assert",
}
_NOT_DECLARATIONS = (K.INCLUSION_DIRECTIVE, K.MACRO_DEFINITION, K.MACRO_INSTANTIATION)
_TRANSPARENT_SCOPES = (K.LINKAGE_SPEC, K.UNEXPOSED_DECL)  # `extern "C" { ... }`, stray `;`
# Cursors whose children hold no namespace qualifier worth reading (and references' children
# are other files' declarations).
_OPAQUE = frozenset(
    {
        K.MACRO_INSTANTIATION,
        K.MACRO_DEFINITION,
        K.INCLUSION_DIRECTIVE,
        K.TYPE_REF,
        K.TEMPLATE_REF,
        K.NAMESPACE_REF,
        K.INTEGER_LITERAL,
        K.FLOATING_LITERAL,
        K.STRING_LITERAL,
        K.CHARACTER_LITERAL,
        K.CXX_BOOL_LITERAL_EXPR,
        K.ASM_STMT,
    }
)
# Deeper subtrees (a generated 500-term sum) are not read: nobody qualifies a name that deep.
_MAX_DEPTH = 200
_NAMED_ENTITY_KINDS = (K.TYPE_REF, K.TEMPLATE_REF, K.DECL_REF_EXPR, K.OVERLOADED_DECL_REF, K.MEMBER_REF)
_REFERENCE_PARENTS = (K.DECL_REF_EXPR, K.MEMBER_REF_EXPR)


def extract_scope_facts(top_level: list[ci.Cursor], unit: ParsedUnit, model: SourceModel) -> None:
    """Fill `model.scope_facts` from the file's top-level cursors."""
    macros = MacroRanges(top_level)
    collector = ScopeCollector(unit.path, macros)
    declarations = outermost(c for c in top_level if c.kind not in _OPAQUE)
    pending = [(cursor, 0) for cursor in reversed(declarations)]
    while pending:  # pre-order, children in source order
        node, depth = pending.pop()
        kind = node.kind
        if kind in _OPAQUE or depth >= _MAX_DEPTH:
            continue
        children = list(node.get_children())
        collector.on_children(node, kind, children, [child.kind for child in children])
        pending.extend((child, depth + 1) for child in reversed(children))
    model.scope_facts = collector.finish(declarations, unit.tu)


@dataclass(frozen=True)
class _PendingReference:
    span: Span
    namespace: str
    namespace_usr: str
    is_using_directive: bool
    target: ci.Cursor | None


class ScopeCollector:
    def __init__(self, path: str, macros: MacroRanges) -> None:
        self.path = path
        self.macros = macros
        self._opened_details: set[str] = set()  # USRs of the `details` namespaces this file opens
        self._references: list[_PendingReference] = []

    def on_children(
        self, parent: ci.Cursor, parent_kind: ci.CursorKind, children: list[ci.Cursor], kinds: list[ci.CursorKind]
    ) -> None:
        """Look at the children of one visited cursor (their kinds already read)."""
        for index, (child, kind) in enumerate(zip(children, kinds)):
            if kind not in (K.NAMESPACE, K.NAMESPACE_REF) or child.spelling != DETAILS:
                continue
            if kind == K.NAMESPACE:
                self._opened_details.add(child.get_usr())
            elif not self.macros.macro_at(child.location.offset):
                self._reference(parent, parent_kind, child, children[index + 1 :])

    def _reference(
        self, parent: ci.Cursor, parent_kind: ci.CursorKind, qualifier: ci.Cursor, following: list[ci.Cursor]
    ) -> None:
        namespace = qualifier.referenced
        is_using = parent_kind == K.USING_DIRECTIVE and not any(c.kind == K.NAMESPACE_REF for c in following)
        self._references.append(
            _PendingReference(
                span=span_of(qualifier.extent),
                namespace=qualified_name(namespace) if namespace is not None else DETAILS,
                namespace_usr=namespace.get_usr() if namespace is not None else "",
                is_using_directive=is_using,
                target=None if is_using else _named_entity(parent, following),
            )
        )

    def finish(self, top_level: list[ci.Cursor], tu: ci.TranslationUnit) -> ScopeFacts:
        facts = ScopeFacts()
        for cursor in top_level:
            self._add_global(cursor, facts.global_declarations)
        facts.details_references = [self._details_reference(r) for r in self._references]
        facts.included_files = tuple(inclusion.include.name for inclusion in tu.get_includes())
        return facts

    def _details_reference(self, pending: _PendingReference) -> DetailsReference:
        target = pending.target
        location = target.location if target is not None else None
        return DetailsReference(
            span=pending.span,
            namespace=pending.namespace,
            is_using_directive=pending.is_using_directive,
            target=qualified_name(target) if target is not None else "",
            target_path=location.file.name if location is not None and location.file is not None else "",
            target_line=location.line if location is not None else 0,
            namespace_opened_here=pending.namespace_usr in self._opened_details,
        )

    def _add_global(self, cursor: ci.Cursor, out: list[GlobalDeclaration]) -> None:
        if cursor.kind in _NOT_DECLARATIONS:
            return
        if cursor.kind in _TRANSPARENT_SCOPES:
            for child in cursor.get_children():
                if in_file(child, self.path):
                    self._add_global(child, out)
            return
        owner = cursor.semantic_parent
        if owner is not None and (owner.kind == K.NAMESPACE or owner.kind in RECORD_KINDS):
            return  # `void sglang::f() {}`, an explicit instantiation: it belongs to that scope
        out.append(
            GlobalDeclaration(
                kind=_GLOBAL_KINDS.get(cursor.kind, "other"),
                name=cursor.spelling,
                span=span_of(cursor.extent),
                name_span=name_span(cursor),
                macro=self.macros.macro_at(cursor.location.offset),
                redeclares_external=_first_declared_elsewhere(cursor, self.path),
                is_specialization=cursor.specialized_template is not None,
            )
        )


def _named_entity(parent: ci.Cursor, following: list[ci.Cursor]) -> ci.Cursor | None:
    """What `details::X` names: the reference after the qualifier, else the qualified
    expression itself (`details::f(...)` puts the qualifiers inside the DeclRefExpr)."""
    for sibling in following:
        if sibling.kind in _NAMED_ENTITY_KINDS:
            return _declaration_of(sibling)
    return _declaration_of(parent) if parent.kind in _REFERENCE_PARENTS else None


def _declaration_of(reference: ci.Cursor) -> ci.Cursor | None:
    declaration = reference.referenced
    if declaration is not None and declaration.kind == K.OVERLOADED_DECL_REF:
        return _first_overload(declaration)
    return declaration


def _first_overload(reference: ci.Cursor) -> ci.Cursor | None:
    """A dependent call names an overload set; any member tells where it was declared."""
    if ci.conf.lib.clang_getNumOverloadedDecls(reference) == 0:
        return None
    return ci.Cursor.from_cursor_result(ci.conf.lib.clang_getOverloadedDecl(reference, 0), reference)


def _first_declared_elsewhere(cursor: ci.Cursor, path: str) -> bool:
    """Reopening `namespace std`, or defining a function an included header declares. (The
    anonymous namespace is one per translation unit: reopening it is still file scope.)"""
    if cursor.kind == K.NAMESPACE and not cursor.spelling:
        return False
    canonical = cursor.canonical
    location = canonical.location if canonical is not None else None
    return location is not None and location.file is not None and location.file.name != path
