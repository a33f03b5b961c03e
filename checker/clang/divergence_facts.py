"""Thread-dependent branches that reach a block-wide barrier (`DivergentBarrier` facts).

A value is thread-dependent when it reads `threadIdx`, calls a lane or warp index helper, or
reads a local variable initialized from such a value. An `if` over a thread-dependent
condition lets threads of one block take different paths; a `__syncthreads()` inside either
branch, directly or through a device function that reaches one, is then a fact. Everything
else stays silent on purpose: conditions over `blockIdx`, parameters or template constants
are block-uniform, lambda bodies run where they are called, and loops are not followed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import clang.cindex as ci

from ..model import DivergentBarrier
from .cursors import FUNCTION_KINDS, K, span_of, strip_parens
from .dataflow_facts import _callee_decls

BARRIERS = frozenset({"__syncthreads", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or"})
THREAD_INDEX_CALLS = frozenset({"get_lane_id", "get_warp_id", "__lane_id"})
_MAX_CALL_DEPTH = 4  # how deep a callee summary follows device functions


@dataclass(frozen=True)
class _Guard:
    """The outermost thread-dependent `if` around the code being walked."""

    condition: ci.Cursor
    source: str
    matched: bool  # see `_matches_rest`


class DivergenceWalk:
    """One walk per function body; callee summaries are shared across the translation unit."""

    def __init__(self) -> None:
        self._reaches: dict[str, str] = {}  # callee USR -> barrier it reaches ("" for none)

    def function(self, body: ci.Cursor) -> list[DivergentBarrier]:
        found: list[DivergentBarrier] = []
        self._visit(body, None, {}, found)
        return found

    def _visit(self, node: ci.Cursor, guard: _Guard | None, thread_vars: dict[int, str],
               found: list[DivergentBarrier], rest: list[ci.Cursor] | None = None) -> None:
        """`rest`: for an `if`, the statements that follow it in its block."""
        if node.kind == K.LAMBDA_EXPR:
            return
        if node.kind == K.VAR_DECL and self._source(node, thread_vars):
            thread_vars[node.hash] = node.spelling
        if node.kind == K.IF_STMT:
            self._visit_if(node, guard, thread_vars, found, rest or [])
            return
        if guard is not None and node.kind == K.CALL_EXPR:
            barrier = self._barrier(node, 0)
            if barrier:
                found.append(DivergentBarrier(span_of(node.extent), barrier, span_of(guard.condition.extent),
                                              guard.source, guard.matched))
        children = list(node.get_children())
        for index, child in enumerate(children):
            self._visit(child, guard, thread_vars, found, children[index + 1:])

    def _visit_if(self, node: ci.Cursor, guard: _Guard | None, thread_vars: dict[int, str],
                  found: list[DivergentBarrier], rest: list[ci.Cursor]) -> None:
        children = list(node.get_children())
        condition = next((c for c in children if c.kind.is_expression()), None)
        branches = [c for c in children if condition is not None and c.extent.start.offset > condition.extent.end.offset]
        inner = guard
        if guard is None and condition is not None:
            source = self._source(condition, thread_vars)
            matched = len(branches) == 1 and _matches_rest(branches[0], rest)
            inner = _Guard(condition, source, matched) if source else None
        for child in children:
            self._visit(child, inner if child in branches else guard, thread_vars, found)

    def _source(self, node: ci.Cursor, thread_vars: dict[int, str]) -> str:
        """What makes `node`'s value thread-dependent ("" when nothing does)."""
        if node.kind == K.LAMBDA_EXPR:
            return ""
        if node.kind == K.DECL_REF_EXPR:
            if node.spelling == "threadIdx":
                return "threadIdx"
            referenced = node.referenced
            if referenced is not None and referenced.hash in thread_vars:
                return thread_vars[referenced.hash]
        if node.kind == K.CALL_EXPR and node.spelling in THREAD_INDEX_CALLS:
            return f"{node.spelling}()"
        return next((s for s in (self._source(c, thread_vars) for c in node.get_children()) if s), "")

    def _barrier(self, call: ci.Cursor, depth: int) -> str:
        """The barrier `call` is or reaches: its own name, a helper's name, or ""."""
        if call.spelling in BARRIERS:
            return call.spelling
        if depth >= _MAX_CALL_DEPTH:
            return ""
        callee = next(call.get_children(), None)
        candidates = _callee_candidates(callee) if callee is not None else []
        if not candidates:
            return ""
        reached = [self._reached_by(decl, depth + 1) for decl in candidates]
        # only when every overload synchronizes; a dependent call has no spelling of its own
        return (call.spelling or candidates[0].spelling) if all(reached) else ""

    def _reached_by(self, declaration: ci.Cursor, depth: int) -> str:
        """The barrier a device function's body reaches anywhere in it ("" for none)."""
        # a specialization used from a template may not be instantiated yet: read its template
        definition = declaration.get_definition() or declaration.specialized_template or declaration
        usr = definition.get_usr()
        if usr in self._reaches:
            return self._reaches[usr]
        self._reaches[usr] = ""  # a recursive call reaches nothing new
        body = next((c for c in definition.get_children() if c.kind == K.COMPOUND_STMT), None)
        reached = ""
        if definition.kind in FUNCTION_KINDS and body is not None:
            reached = next((b for b in (self._barrier(c, depth) for c in _calls(body)) if b), "")
        self._reaches[usr] = reached
        return reached


def _matches_rest(branch: ci.Cursor, rest: list[ci.Cursor]) -> bool:
    """A split of the block into two groups whose barriers pair up: the branch issues N
    `__syncthreads()` as plain statements and then returns, and the statements after the `if`
    issue exactly N plain ones too, so every thread arrives at the same number of barriers."""
    statements = list(branch.get_children()) if branch.kind == K.COMPOUND_STMT else [branch]
    if not statements or statements[-1].kind != K.RETURN_STMT:
        return False
    own = sum(1 for c in statements if _is_plain_barrier(c))
    every = sum(1 for c in _calls(branch) if c.spelling in BARRIERS)
    return 0 < own == every == sum(1 for c in rest if _is_plain_barrier(c))


def _is_plain_barrier(statement: ci.Cursor) -> bool:
    return statement.kind == K.CALL_EXPR and statement.spelling in BARRIERS


def _callee_candidates(callee: ci.Cursor) -> list[ci.Cursor]:
    """The functions a callee expression can name; `f<Op>` with dependent template arguments
    names its template through a TEMPLATE_REF child."""
    candidates = _callee_decls(callee)
    if candidates:
        return candidates
    inner = strip_parens(callee)
    named = next((c.referenced for c in inner.get_children() if c.kind == K.TEMPLATE_REF), None)
    return [named] if named is not None and named.kind == K.FUNCTION_TEMPLATE else []


def _calls(node: ci.Cursor) -> Iterator[ci.Cursor]:
    """Every call in `node`, lambda bodies aside."""
    for child in node.get_children():
        if child.kind == K.LAMBDA_EXPR:
            continue
        if child.kind == K.CALL_EXPR:
            yield child
        yield from _calls(child)
