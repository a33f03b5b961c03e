"""The solver behind the KC4xx rules: `Term`s (model.py) into z3, under a time budget.

z3 (the `z3-solver` package) rather than an integer-set library: the offsets of these
kernels multiply symbols by symbols (`row * stride`, `blockIdx.x * blockDim.x`), which
affine sets cannot state, and 32-bit overflow wants bit-vectors later
(docs/rules/KC401.md, issue 28).

A check answers SAT with a model (the witness), UNSAT, or UNKNOWN; UNKNOWN (a timeout, a
term z3 gives up on, a budget already spent) is never a finding. Each kernel gets one
`Budget` (`solver-budget` seconds, configurable), shared by its queries.
"""

from __future__ import annotations

import enum
import functools
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING

from .model import Symbol, SymbolKind, Term

if TYPE_CHECKING:
    import z3

MAX_THREADS_PER_BLOCK = 1024
AXES = ("x", "y", "z")
_GRID_LIMITS = {"x": 2**31 - 1, "y": 65535, "z": 65535}
_DIMENSIONS = {SymbolKind.THREAD: "blockDim", SymbolKind.BLOCK: "gridDim"}
_COMPARE = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}
_LOGIC = frozenset({"<", "<=", "==", "!=", "and", "or", "not"})


class Outcome(enum.Enum):
    SAT = "sat"
    UNSAT = "unsat"
    UNKNOWN = "unknown"


@dataclass
class Budget:
    """Wall-clock seconds the queries of one kernel may take together."""

    seconds: float
    started: float = field(default_factory=time.perf_counter)

    def remaining_ms(self) -> int:
        return max(0, int((self.seconds - (time.perf_counter() - self.started)) * 1000))


@dataclass(frozen=True)
class Answer:
    outcome: Outcome
    model: Mapping[str, int] = field(default_factory=dict)  # each symbol's value, when SAT


def launch_constraints(symbols: Iterable[Symbol]) -> list[Term]:
    """What every launch guarantees: a thread index below its block dimension, a block index
    below its grid dimension, at most 1024 threads a block and CUDA's grid limits."""
    constraints: list[Term] = []
    for symbol in symbols:
        axis = symbol.name.rsplit(".", 1)[-1]
        variable = Term("sym", name=symbol.name)
        if symbol.kind in _DIMENSIONS:
            dimension = Term("sym", name=f"{_DIMENSIONS[symbol.kind]}.{axis}")
            constraints += [_at_least(variable, 0), Term("<", (variable, dimension))]
            constraints += _dimension(dimension, axis, blocks=symbol.kind is SymbolKind.BLOCK)
        elif symbol.kind in (SymbolKind.BLOCK_DIM, SymbolKind.GRID_DIM):
            constraints += _dimension(variable, axis, blocks=symbol.kind is SymbolKind.GRID_DIM)
    return constraints


def thread_symbols() -> list[Symbol]:
    """The thread index of each axis."""
    return [Symbol(f"threadIdx.{a}", SymbolKind.THREAD, f"threadIdx.{a}", 0, 2**31 - 1) for a in AXES]


def block_axes(symbols: Iterable[Symbol]) -> tuple[str, ...]:
    """The axes a block spans as far as `symbols` show: x, and y and z too when a thread
    index or block dimension of those axes is named (a `blockIdx.y` says nothing of the
    block's shape)."""
    blocky = (SymbolKind.THREAD, SymbolKind.BLOCK_DIM)
    return AXES if any(s.kind in blocky and s.name.endswith((".y", ".z")) for s in symbols) else AXES[:1]


def triple(values: Mapping[str, int], prefix: str, default: int) -> str:
    """`(x, y, z)`: a witness's values of the symbols `prefix` + axis (`threadIdx.`)."""
    return "(" + ", ".join(str(values.get(f"{prefix}{a}", default)) for a in AXES) + ")"


def _dimension(variable: Term, axis: str, *, blocks: bool) -> list[Term]:
    high = _GRID_LIMITS.get(axis, 65535) if blocks else MAX_THREADS_PER_BLOCK
    return [_at_least(variable, 1), Term("<=", (variable, Term("const", value=high)))]


def _at_least(term: Term, low: int) -> Term:
    return Term("<=", (Term("const", value=low), term))


def within(term: Term, low: int, high: int) -> list[Term]:
    """`low <= term <= high`."""
    return [_at_least(term, low), Term("<=", (term, Term("const", value=high)))]


@functools.cache
def _z3() -> ModuleType:
    """z3, imported and set up once. Imported on the first query, not with the module: the
    import costs ~0.1 s, which a run that asks the solver nothing (pre-commit on a file
    without KC4xx work, the harness) should not pay."""
    import z3

    # z3 catches SIGINT while it solves (to stop a query) and swallows it: Ctrl-C must end
    # the run, and a query has its own budget
    z3.set_param("ctrl_c", False)
    return z3


def check(constraints: Iterable[Term], budget: Budget) -> Answer:
    """Whether the constraints hold together, within what is left of `budget`."""
    remaining = budget.remaining_ms()
    if remaining <= 0:
        return Answer(Outcome.UNKNOWN)
    lib = _z3()
    solver = lib.Solver()
    solver.set("timeout", remaining)
    names: dict[str, z3.ArithRef] = {}
    try:
        for constraint in constraints:
            solver.add(_bool(constraint, names))
        result = solver.check()
    except lib.Z3Exception:
        return Answer(Outcome.UNKNOWN)
    if result == lib.unsat:
        return Answer(Outcome.UNSAT)
    if result != lib.sat:
        return Answer(Outcome.UNKNOWN)
    model = solver.model()
    values = {name: model.eval(variable, model_completion=True).as_long() for name, variable in names.items()}
    return Answer(Outcome.SAT, values)


def _bool(term: Term, names: dict[str, z3.ArithRef]) -> z3.BoolRef:
    lib = _z3()

    op = term.op
    if op in _COMPARE:
        return _COMPARE[op](_int(term.args[0], names), _int(term.args[1], names))
    if op == "and":
        return lib.And(*(_bool(a, names) for a in term.args))
    if op == "or":
        return lib.Or(*(_bool(a, names) for a in term.args))
    if op == "not":
        return lib.Not(_bool(term.args[0], names))
    if op == "forall":
        return lib.ForAll([_int(a, names) for a in term.args[:-1]], _bool(term.args[-1], names))
    return _int(term, names) != 0


def _int(term: Term, names: dict[str, z3.ArithRef]) -> z3.ArithRef:
    lib = _z3()

    op = term.op
    if op == "const":
        return lib.IntVal(term.value)
    if op == "sym":
        if term.name not in names:
            names[term.name] = lib.Int(term.name)
        return names[term.name]
    if op in _LOGIC:
        return lib.If(_bool(term, names), lib.IntVal(1), lib.IntVal(0))
    if op == "ite":
        return lib.If(_bool(term.args[0], names), _int(term.args[1], names), _int(term.args[2], names))
    left, right = (_int(a, names) for a in term.args)
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    if op == "/":
        return left / right
    if op == "%":
        return left % right
    raise lib.Z3Exception(f"no term {op!r}")


def for_all(variables: Iterable[str], body: Term) -> Term:
    """`body` holds whatever values the symbols `variables` take (a condition over every
    thread of the block, every iteration of a loop)."""
    bound = tuple(Term("sym", name=name) for name in variables)
    return Term("forall", (*bound, body)) if bound else body


def renamed(term: Term, names: Mapping[str, str]) -> Term:
    """`term` with the symbols `names` maps renamed (a second thread's copy of its values)."""
    if term.op == "sym":
        return Term("sym", name=names.get(term.name, term.name))
    return Term(term.op, tuple(renamed(arg, names) for arg in term.args), term.name, term.value) if term.args else term
