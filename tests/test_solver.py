"""solver.Session: queries that share constraints answer as lone checks of the same
constraints do, and a term z3 cannot take makes every answer UNKNOWN, never a finding."""

from __future__ import annotations

from kernel_check import solver
from kernel_check.model import Term
from kernel_check.solver import Budget, Outcome


def _sym(name: str) -> Term:
    return Term("sym", name=name)


def _const(value: int) -> Term:
    return Term("const", value=value)


# x * y == 12 with both at least 1: a nonlinear world, as a kernel's offsets are
SHARED = [
    Term("==", (Term("*", (_sym("x"), _sym("y"))), _const(12))),
    Term("<=", (_const(1), _sym("x"))),
    Term("<=", (_const(1), _sym("y"))),
]


def test_a_session_answers_each_query_as_a_lone_check_does() -> None:
    session = solver.Session(SHARED, Budget(2.0))
    for x, expected in ((3, Outcome.SAT), (5, Outcome.UNSAT), (12, Outcome.SAT)):
        own = [Term("==", (_sym("x"), _const(x)))]
        in_session = session.check(own)
        alone = solver.check([*SHARED, *own], Budget(2.0))
        assert in_session.outcome is alone.outcome is expected
        if expected is Outcome.SAT:
            assert in_session.model["y"] == alone.model["y"] == 12 // x


def test_a_session_spends_its_budget_and_then_knows_nothing() -> None:
    budget = Budget(2.0)
    session = solver.Session(SHARED, budget)
    assert session.check().outcome is Outcome.SAT
    assert budget.spent > 0
    budget.spent = int(budget.seconds * solver.RLIMIT_PER_SECOND)  # the kernel's budget used up
    assert session.check().outcome is Outcome.UNKNOWN


def test_a_term_z3_cannot_take_is_unknown_at_every_query() -> None:
    session = solver.Session([*SHARED, Term("<<", (_sym("x"), _const(1)))], Budget(2.0))
    assert session.check().outcome is Outcome.UNKNOWN
    assert session.check([Term("==", (_sym("x"), _const(3)))]).outcome is Outcome.UNKNOWN
