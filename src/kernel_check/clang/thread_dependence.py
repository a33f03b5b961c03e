"""Tier 2: which values and branch conditions depend on the thread, over `program.py`'s trees.

A value is thread-dependent when it reads `threadIdx`, calls a lane or warp index helper
(`THREAD_INDEX_CALLS`), calls a device function that returns a thread-dependent value, or
reads a local variable initialized from such a value. Everything else counts as the same
for every thread of a block: `blockIdx`, parameters, template constants, and locals
assigned later (assignments are not followed). Lambda bodies run where they are called
and are not part of the function that writes them: a call of a local lambda
(`auto step = [&] { ...; __syncthreads(); }; step();`) reaches the barriers its body
reaches, and KC170's facts look into the bodies for branches of their own.

Callee summaries are shared across a translation unit: whether a device function returns a
thread-dependent value (its parameters taken as uniform) and whether it reaches a
block-wide barrier, each followed `MAX_CALL_DEPTH` calls deep.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..model import DivergentBarrier
from .program import Expr, ExprKind, Function, Program, Stmt, StmtKind

BARRIERS = frozenset({"__syncthreads", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or"})
THREAD_INDEX_CALLS = frozenset({"get_lane_id", "get_warp_id", "__lane_id"})
THREAD_INDEX = "threadIdx"
MAX_CALL_DEPTH = 4  # how deep a callee summary follows device functions
_BRANCHING = (StmtKind.IF, StmtKind.WHILE, StmtKind.DO, StmtKind.SWITCH)

ThreadLocals = dict[int, str]  # a thread-dependent local's `Var.key` -> its name


@dataclass(frozen=True)
class ThreadBranch:
    """A statement whose condition is thread-dependent (`if`, `while`, `do`, `switch`)."""

    statement: Stmt
    source: str  # what makes it so: "threadIdx", a local's name, or "helper()"


class ThreadDependence:
    """The analysis for one translation unit (its callee summaries are kept)."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self._returns: dict[Function, str] = {}  # the thread source a function returns ("" for none)
        self._reaches: dict[Function, str] = {}  # the barrier a function reaches ("" for none)
        self._thread_free: dict[Function, bool] = {}
        self._declares_shared: dict[Function, bool] = {}

    # -- values ----------------------------------------------------------------------------
    def locals(self, body: Stmt, depth: int = 0, given: ThreadLocals | None = None) -> ThreadLocals:
        """The thread-dependent local variables of a body, in source order (a local counts
        when its declaration reads a thread-dependent value, or one of `given`: a helper's
        parameters handed a thread-dependent argument), `given` among them."""
        found: ThreadLocals = dict(given or {})
        for stmt in body.walk():
            for var in stmt.variables:
                if any(self.source(e, found, depth) for e in var.exprs):
                    found[var.key] = var.name
        return found

    def source(self, expr: Expr, thread_locals: ThreadLocals, depth: int = 0) -> str:
        """What makes `expr`'s value thread-dependent ("" when nothing does): "threadIdx",
        the local it reads, or "helper()" for a call whose result is."""
        for node in expr.walk():
            if node.kind is ExprKind.REF:
                if node.name == THREAD_INDEX:
                    return THREAD_INDEX
                ref = node.ref if thread_locals else None
                if ref is not None and ref.key in thread_locals:
                    return thread_locals[ref.key]
            elif node.kind is ExprKind.CALL and node.name in THREAD_INDEX_CALLS:
                return f"{node.name}()"
        if depth >= MAX_CALL_DEPTH:
            return ""
        for call in (n for n in expr.walk() if n.kind is ExprKind.CALL):
            callees = call.callees
            if callees and all(self.returns(f, depth + 1) for f in callees):
                return f"{call.name or callees[0].name}()"
        return ""

    def returns(self, function: Function, depth: int) -> str:
        """The thread source a device function's return value has, its parameters taken as
        the same for every thread ("" when it returns no thread-dependent value)."""
        known = self._returns.get(function)
        if known is not None:
            return known
        self._returns[function] = ""  # a recursive call adds nothing
        body = function.body
        found = ""
        if body is not None:
            thread_locals = self.locals(body, depth)
            found = next(
                (
                    s
                    for s in (
                        self.source(e, thread_locals, depth)
                        for stmt in body.walk()
                        if stmt.kind is StmtKind.RETURN
                        for e in stmt.exprs
                    )
                    if s
                ),
                "",
            )
        self._returns[function] = found
        return found

    def thread_free(self, function: Function) -> bool:
        """Whether a device function's body, with its parameters the same for every thread,
        computes the same for every thread: it reads no thread index anywhere (a local it
        returns may be assigned from one), calls no lane or warp index helper and runs no
        `asm` (`mov %0, %laneid`), and returns no thread-dependent value."""
        known = self._thread_free.get(function)
        if known is not None:
            return known
        body = function.body
        free = body is not None and not self.returns(function, 0)
        if body is not None and free:
            reads = any(
                (n.kind is ExprKind.REF and n.name == THREAD_INDEX)
                or (n.kind is ExprKind.CALL and n.name in THREAD_INDEX_CALLS)
                for n in body.expressions()
            )
            free = not reads and not any(stmt.kind is StmtKind.ASM for stmt in body.walk())
        self._thread_free[function] = free
        return free

    # -- branches --------------------------------------------------------------------------
    def declares_shared(self, function: Function) -> bool:
        """Whether the body a call of `function` runs (its definition in sight) declares a
        `__shared__` variable of its own (`__shared__ float partial[32];` in a block reduce)."""
        if function not in self._declares_shared:
            definition = self.program.definition(function)
            body = definition.body if definition is not None else None
            self._declares_shared[function] = body is not None and any(
                var.is_shared for stmt in body.walk() for var in stmt.variables
            )
        return self._declares_shared[function]

    def branches(self, body: Stmt) -> Iterator[ThreadBranch]:
        """The statements of a body whose condition is thread-dependent, pre-order."""
        thread_locals = self.locals(body)
        for stmt in body.walk():
            if stmt.kind in _BRANCHING and stmt.condition is not None:
                source = self.source(stmt.condition, thread_locals)
                if source:
                    yield ThreadBranch(stmt, source)

    # -- barriers --------------------------------------------------------------------------
    def barrier(self, call: Expr, depth: int = 0) -> str:
        """The block-wide barrier a call is or reaches: its own name, the name of the
        function called (when every candidate reaches one) or of the local lambda called
        (`step()`), or ""."""
        if call.name in BARRIERS:
            return call.name
        if depth >= MAX_CALL_DEPTH:
            return ""
        lambda_ = call.called_lambda
        body = lambda_.lambda_body if lambda_ is not None else None
        if body is not None:  # `step()` of `auto step = [&] { ...; __syncthreads(); };`
            reached = any(self.barrier(c, depth + 1) for c in body.calls())
            return f"{call.children[0].stripped().name}()" if reached else ""
        callees = call.callees
        if callees and all(self.reaches(f, depth + 1) for f in callees):
            return call.name or callees[0].name  # a dependent call has no name of its own
        return ""

    def reaches(self, function: Function, depth: int) -> str:
        """The barrier a function's body reaches anywhere in it ("" for none)."""
        known = self._reaches.get(function)
        if known is not None:
            return known
        self._reaches[function] = ""  # a recursive call reaches nothing new
        body = function.body
        found = "" if body is None else next((b for b in (self.barrier(c, depth) for c in body.calls()) if b), "")
        self._reaches[function] = found
        return found

    # -- KC170's facts ---------------------------------------------------------------------
    def divergent_barriers(self, body: Stmt) -> list[DivergentBarrier]:
        """Barriers inside a branch of an `if` over a thread-dependent condition (the
        outermost such `if` is the one named), in source order."""
        found: list[DivergentBarrier] = []
        thread_locals = self.locals(body)
        self._unguarded(body, (), thread_locals, found)
        for lambda_body in _lambda_bodies(body):  # they run where called, with the locals they capture
            self._unguarded(lambda_body, (), self.locals(lambda_body, given=thread_locals), found)
        return found

    def _unguarded(
        self, stmt: Stmt, rest: tuple[Stmt, ...], thread_locals: ThreadLocals, found: list[DivergentBarrier]
    ) -> None:
        """Look for thread-dependent `if`s in `stmt`; `rest`: the statements after it in its block."""
        source = (
            self.source(stmt.condition, thread_locals)
            if stmt.kind is StmtKind.IF and stmt.condition is not None
            else ""
        )
        if source:
            assert stmt.condition is not None
            branches = [b for b in (stmt.then, stmt.orelse) if b is not None and b in stmt.live_stmts()]
            matched = stmt.orelse is None and stmt.then is not None and _matches_rest(stmt.then, rest)
            for branch in branches:
                found.extend(
                    DivergentBarrier(call.span, barrier, stmt.condition.span, source, matched)
                    for call in branch.calls()
                    if (barrier := self.barrier(call))
                )
            return
        nested = stmt.live_stmts()
        for index, child in enumerate(nested):
            after = nested[index + 1 :] if stmt.kind in (StmtKind.BLOCK, StmtKind.OTHER) else ()
            self._unguarded(child, after, thread_locals, found)


def _lambda_bodies(stmt: Stmt) -> Iterator[Stmt]:
    """The bodies of the lambdas written in a statement, those written in them too."""
    for node in stmt.expressions():
        body = node.lambda_body if node.kind is ExprKind.LAMBDA else None
        if body is not None:
            yield body
            yield from _lambda_bodies(body)


def _matches_rest(branch: Stmt, rest: tuple[Stmt, ...]) -> bool:
    """A split of the block into two groups whose barriers pair up: the branch issues N
    `__syncthreads()` as plain statements and then returns, and the statements after the `if`
    issue exactly N plain ones too, so every thread arrives at the same number of barriers."""
    statements = branch.stmts if branch.kind is StmtKind.BLOCK else (branch,)
    if not statements or statements[-1].kind is not StmtKind.RETURN:
        return False
    own = sum(1 for s in statements if _is_plain_barrier(s))
    every = sum(1 for c in branch.calls() if c.name in BARRIERS)
    return 0 < own == every == sum(1 for s in rest if _is_plain_barrier(s))


def _is_plain_barrier(stmt: Stmt) -> bool:
    return stmt.kind is StmtKind.EXPR and stmt.exprs[0].kind is ExprKind.CALL and stmt.exprs[0].name in BARRIERS
