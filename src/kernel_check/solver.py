"""The solver behind the KC4xx rules: `Term`s (model.py) into z3, under a time budget.

z3 (the `z3-solver` package) rather than an integer-set library: the offsets of these
kernels multiply symbols by symbols (`row * stride`, `blockIdx.x * blockDim.x`), which
affine sets cannot state, and 32-bit overflow wants bit-vectors later
(docs/rules/KC401.md, issue 28).

A check answers SAT with a model (the witness), UNSAT, or UNKNOWN; UNKNOWN (a budget
spent, a term z3 gives up on) is never a finding. Each kernel gets one `Budget`
(`solver-budget` seconds, configurable), shared by every rule's queries about it: the
rules decide first and search for witnesses with what is left (`RuleContext.defer`).

The budget is counted in z3's resource units (`rlimit`), not in time: a query spends the
same units on an idle machine and on a loaded one, so a run's findings do not depend on the
load (a wall-clock budget under load once dropped two real findings). Each budget asks in
a z3 context of its own: a context's caches make a query cheaper after others, so a shared
one would make a kernel's spending depend on the files checked before. What remains is
z3's own search order, which follows where its terms lie in memory: a hard (nonlinear)
query's units can differ from one process to another, by a fraction of a percent up to
a few times over, which matters only to a query that needs about all that is left.
`RLIMIT_PER_SECOND` turns the configured seconds into units (measured on the KC4xx
queries). A backstop of `BACKSTOP` times the seconds in CPU time (not wall-clock time,
which a loaded machine stretches: a wall-clock backstop dropped real findings under load
again) stops a kernel whose queries cost more to build than z3 counts.
"""

from __future__ import annotations

import enum
import functools
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING

from .model import Symbol, SymbolKind, Term

if TYPE_CHECKING:
    import z3

MAX_THREADS_PER_BLOCK = 1024
RLIMIT_PER_SECOND = 3_000_000  # z3 resource units a CPU second of these queries spends (measured)
BACKSTOP = 4  # the CPU-time bound on a kernel's queries, in times its budget
AXES = ("x", "y", "z")
_GRID_LIMITS = {"x": 2**31 - 1, "y": 65535, "z": 65535}
_DIMENSIONS = {SymbolKind.THREAD: "blockDim", SymbolKind.BLOCK: "gridDim"}
_COMPARE = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}
_LOGIC = frozenset({"<", "<=", "==", "!=", "and", "or", "not"})
_CONDITIONAL = frozenset({"ite", "and", "or", "not", "forall"})  # terms whose operands may go unevaluated


class Outcome(enum.Enum):
    SAT = "sat"
    UNSAT = "unsat"
    UNKNOWN = "unknown"


@dataclass
class Budget:
    """What the queries of one kernel may spend together: `seconds` worth of z3 resource
    units, within `BACKSTOP` times as many seconds of the process's CPU time."""

    seconds: float
    spent: int = 0  # resource units its queries used
    started: float = field(default_factory=time.process_time)
    _context: z3.Context | None = field(default=None, repr=False, compare=False)

    def context(self) -> z3.Context:
        """The z3 context its queries share (made on the first)."""
        if self._context is None:
            self._context = _z3().Context()
        return self._context

    def remaining_units(self) -> int:
        return max(0, int(self.seconds * RLIMIT_PER_SECOND) - self.spent)

    def cpu_left(self) -> float:
        return BACKSTOP * self.seconds - (time.process_time() - self.started)


@dataclass(frozen=True)
class Answer:
    outcome: Outcome
    model: Mapping[str, int] = field(default_factory=dict)  # each symbol's value, when SAT


def launch_constraints(symbols: Iterable[Symbol]) -> list[Term]:
    """What every launch guarantees: a thread index below its block dimension, a block index
    below its grid dimension, at most 1024 threads a block and CUDA's grid limits; and a
    call's result the block shares within its type."""
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
        elif symbol.kind is SymbolKind.UNIFORM:  # a call's result: whatever its type holds
            constraints += within(variable, symbol.low, symbol.high)
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
    return Session(constraints, budget).check()


class Session:
    """Queries that share most of their constraints (a witness searched over concrete shapes,
    a bound narrowed step by step): the shared ones are turned into z3 terms once, and each
    query adds its own to them. The turning costs more CPU than most of these queries'
    solving, and z3's resource units do not count it: converting one shared world again for
    each shape made a real file (sglang's ngram_embedding.cuh) spend 20 s of CPU that its
    kernels' budgets never saw. Each query still gets a solver of its own, with the same
    assertions in the same order as a lone `check`, so its answer is the same."""

    def __init__(self, shared: Iterable[Term], budget: Budget) -> None:
        self.budget = budget
        self._shared = list(shared)
        self._converted: list[z3.BoolRef] | None = None
        self._names: _Names | None = None

    def check(self, own: Iterable[Term] = ()) -> Answer:
        """Whether the shared constraints and `own` hold together, within what is left of
        the budget."""
        budget = self.budget
        units = budget.remaining_units()
        if units <= 0 or budget.cpu_left() <= 0:
            return Answer(Outcome.UNKNOWN)
        lib = _z3()
        solver = lib.Solver(ctx=budget.context())
        solver.set("rlimit", units)
        before = _resource_count(solver)
        try:
            names, shared = self._shared_terms()
            solver.add(*shared, *(_bool(constraint, names) for constraint in own))
            result = solver.check()
        except lib.Z3Exception:
            return Answer(Outcome.UNKNOWN)
        finally:
            budget.spent += _resource_count(solver) - before
        if result == lib.unsat:
            return Answer(Outcome.UNSAT)
        if result != lib.sat:
            return Answer(Outcome.UNKNOWN)
        model = solver.model()
        values = {n: model.eval(v, model_completion=True).as_long() for n, v in names.variables.items()}
        return Answer(Outcome.SAT, values)

    def _shared_terms(self) -> tuple[_Names, list[z3.BoolRef]]:
        """The names and the shared constraints in z3, converted on the first query (a
        conversion that fails raises again at each query: every answer is UNKNOWN)."""
        if self._names is None:
            self._names = _Names(self.budget.context())
        if self._converted is None:
            # one conjunction: z3 splits it again, and asserting it costs one call, not one
            # a constraint (asserting them one by one took longer than solving)
            converted = [_bool(constraint, self._names) for constraint in self._shared]
            self._converted = [_z3().And(*converted)] if len(converted) > 1 else converted
        return self._names, self._converted


def _resource_count(solver: z3.Solver) -> int:
    """The resource units z3 has counted so far (for the whole context: a query's spend is
    the difference)."""
    return int(solver.statistics().get_key_value("rlimit count"))


@dataclass
class _Names:
    """A session's integer variables by name, in its budget's context, and the z3 terms its
    `Term`s became: a subterm shared by several constraints (an offset named in a guard and
    in the bound) is converted once."""

    context: z3.Context
    variables: dict[str, z3.ArithRef] = field(default_factory=dict)
    # id(term) -> (the term, kept alive so that its id is not reused; its z3 form)
    _converted: dict[tuple[int, bool], tuple[Term, z3.ExprRef]] = field(default_factory=dict)

    def of(self, name: str) -> z3.ArithRef:
        if name not in self.variables:
            self.variables[name] = _z3().Int(name, self.context)
        return self.variables[name]

    def constant(self, value: int) -> z3.ArithRef:
        return _z3().IntVal(value, self.context)

    def converted(self, term: Term, truth: bool, convert: Callable[[Term, _Names], z3.ExprRef]) -> z3.ExprRef:
        """`term` in z3 (as a truth value or an integer), converted the first time it is met."""
        key = (id(term), truth)
        if key not in self._converted:
            self._converted[key] = (term, convert(term, self))
        return self._converted[key][1]


def _bool(term: Term, names: _Names) -> z3.BoolRef:
    return names.converted(term, True, _new_bool)


def _int(term: Term, names: _Names) -> z3.ArithRef:
    return names.converted(term, False, _new_int)


def _new_bool(term: Term, names: _Names) -> z3.BoolRef:
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


def _new_int(term: Term, names: _Names) -> z3.ArithRef:
    lib = _z3()

    op = term.op
    if op == "const":
        return names.constant(term.value)
    if op == "sym":
        return names.of(term.name)
    if op in _LOGIC:
        return lib.If(_bool(term, names), names.constant(1), names.constant(0))
    if op == "ite":
        return lib.If(_bool(term.args[0], names), _int(term.args[1], names), _int(term.args[2], names))
    if op == "wrap":  # (value, low, high): an integer of low..high holding a larger value wraps
        value, low, high = _int(term.args[0], names), term.args[1].value, term.args[2].value
        return lib.If(value <= high, value, (value - low) % (high - low + 1) + low)
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


def divisors(terms: Iterable[Term], *, unconditional: bool = False) -> Iterator[Term]:
    """The divisor of each `/` and `%` in `terms`; `unconditional`: only those evaluated
    whatever the values (not inside a branch of `ite`, `or`, `and` or a negation, which C
    may skip: `k != 0 ? n / k : 0`)."""
    pending = list(terms)
    while pending:
        term = pending.pop()
        if term.op in ("/", "%"):
            yield term.args[1]
        if not unconditional or term.op not in _CONDITIONAL:
            pending.extend(term.args)


def divides_by_nonzero(terms: Iterable[Term]) -> list[Term]:
    """A nonzero divisor for each `/` and `%` that `terms` always evaluate: C leaves a
    division by zero undefined (the thread traps), so no path past one has it; z3 instead
    lets `x / 0` and `x % 0` take any value, which would let an offset go anywhere."""
    return [Term("!=", (d, Term("const", value=0))) for d in divisors(terms, unconditional=True)]


def loaded_sizes_positive(terms: Iterable[Term], loads: Iterable[str]) -> list[Term]:
    """`1 <= d` for each divisor that `terms` always evaluate and that is a value read from
    memory (one of `loads`): a kernel divides by what it reads as a size (`j / row_lens[t]`,
    the row of flat element `j`), and a size is positive; with any value allowed, a witness
    would be a kernel fed a negative row length."""
    names = set(loads)
    # in the order met, once each: the order of a query's constraints moves its answer
    divided = dict.fromkeys(d for d in divisors(terms, unconditional=True) if d.op == "sym" and d.name in names)
    return [_at_least(d, 1) for d in divided]


def for_all(variables: Iterable[str], body: Term) -> Term:
    """`body` holds whatever values the symbols `variables` take (a condition over every
    thread of the block, every iteration of a loop)."""
    bound = tuple(Term("sym", name=name) for name in variables)
    return Term("forall", (*bound, body)) if bound else body


def renamed(term: Term, names: Mapping[str, str]) -> Term:
    """`term` with the symbols `names` maps renamed (a second thread's copy of its values)."""
    return substituted(term, {old: Term("sym", name=new) for old, new in names.items()})


def substituted(term: Term, values: Mapping[str, Term]) -> Term:
    """`term` with each symbol `values` names replaced by its term (`threadIdx.x` by
    `blockDim.x - 1`: the last thread's offset)."""
    if term.op == "sym":
        return values.get(term.name, term)
    if not term.args:
        return term
    return Term(term.op, tuple(substituted(arg, values) for arg in term.args), term.name, term.value)
