"""The search the tensor-layout rules share (KC406, KC407, KC408): a global access's byte
offset against the layout the launcher's matcher gives its tensor, at small concrete shapes
the contract allows, for a condition each rule states at each shape.

Each rule asks with a budget of its own, `solver-budget` seconds per kernel over all its
accesses and each access a quarter at most: an access that is fine costs a proof, which is
not to take from the other rules' queries nor from the next access's witness. One access is
reported per kernel and tensor (the first in the body).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from kernel_check import solver, witness
from kernel_check.clang.symbolic import symbol_names
from kernel_check.finding import Counterexample, Finding
from kernel_check.model import Symbol, SymbolicAccess, SymbolKind, Term
from kernel_check.registry import RuleContext
from kernel_check.rules._common import location_of
from kernel_check.semantic import SemanticModel
from kernel_check.solver import RLIMIT_PER_SECOND, Budget, Outcome, launch_constraints, within
from kernel_check.witness import Binding, Layout, Witness, render_dim

OFFSET = Term("sym", name="layout:offset")  # the access's first byte
SPAN = Term("sym", name="layout:span")  # the tensor's bytes
WIDTH = Term("sym", name="layout:width")  # the bytes the access covers (a template may decide them)
ZERO = Term("const", value=0)
# what the rules leave alone in an offset: ids read from memory (KC401's), values the walk does
# not follow, and a call's result it knows only as one value per block (`scheduler.tile()`):
# any value of its type would be a guess of what the call returns, not a shape the contract allows
_NOT_ASKED = (SymbolKind.LOAD, SymbolKind.OPAQUE, SymbolKind.UNIFORM)
_INDICES = (SymbolKind.THREAD, SymbolKind.BLOCK, SymbolKind.LOOP)
_WITHIN_TYPE = (SymbolKind.LOOP, SymbolKind.LOAD)
_SMALL_LOAD = 1024  # a value read from memory that a witness names, where one this small will do
_SHARES = 4  # an access's query gets at most this share of the kernel's budget
ALIKE = (1, 2, 4, 8, 16, 64)  # the shapes with every launcher input at one value
# (the others' value, one input's values): a stride past its row, a row shorter than another's
APART = ((2, (1, 4, 3)), (8, (1, 2, 24, 3)), (64, (1, 192)))


@dataclass(frozen=True)
class Shapes:
    """The concrete shapes a rule tries, smallest first: every input alike, then one input
    apart from the rest."""

    alike: tuple[int, ...] = ALIKE
    apart: tuple[tuple[int, tuple[int, ...]], ...] = APART
    # Padded views, tried after the alike shapes: every size at one of `padded_sizes`, each
    # stride the matcher leaves free tight around the dims inside it (a contiguous layout)
    # but one, that many elements past it (a row of 512 with a stride of 513)
    padded_sizes: tuple[int, ...] = ()
    pads: tuple[int, ...] = ()


# A stride one past the row it steps over or past a square of the others (a 3-D tensor's
# outer stride past its inner dims), sizes no vector divides; then ones a vector does
# divide, for a launcher that checks the strides' alignment: the padded views
PADDED = Shapes(
    apart=((2, (3, 5)), (8, (9, 65, 12, 72)), (16, (17, 257, 24, 272))), padded_sizes=(2, 8), pads=(1, 8, 64)
)

# What a rule asks of an access at one concrete shape (the launcher's inputs by name): a
# term over `OFFSET` and `SPAN`, or None where it asks nothing of that shape
Condition = Callable[[SymbolicAccess, Layout, Mapping[str, int]], Term | None]
# What a rule says of a witness: the finding's message
Message = Callable[[SymbolicAccess, "Found"], str]


@dataclass(frozen=True)
class Found:
    """A witness of one of a rule's conditions: the layout it holds for and which held."""

    witness: Witness
    layout: Layout
    condition: int  # its index in the rule's conditions

    @property
    def values(self) -> Mapping[str, int]:
        return self.witness.answer.model

    def offset(self) -> int:
        return self.values.get(OFFSET.name, 0)

    def span(self) -> int:
        return self.values.get(SPAN.name, 0)

    def width(self) -> int:
        return self.values.get(WIDTH.name, 0)

    def layout_text(self) -> str:
        """`` `x` is [R, D], strides [S, 1], 4-byte elements``."""
        dims = ", ".join(render_dim(d) for d in self.layout.dims)
        strides = ", ".join(_rendered(s) for s in self.layout.strides)
        return f"`{self.layout.tensor}` is [{dims}], strides [{strides}], {self.element_text()}"

    def element_text(self) -> str:
        """`2-byte elements`; `` `T` elements`` for a launcher's template type."""
        if self.layout.element_type:
            return f"`{self.layout.element_type}` elements"
        return f"{self.layout.element_size}-byte elements"

    def place(self, access: SymbolicAccess) -> str:
        """` at blockIdx.x = 0, threadIdx.x = 1`: the witness's block and thread, and the values
        it reads from memory on the access's path (` with `seq_lens[b]` = 2`, a guard's that
        picks the path, `_picks_path`); "" where it names none."""
        answer = self.witness.answer
        at = witness.where(access.symbols, answer)
        loaded = ", ".join(
            f"`{s.text}` = {answer.model[s.name]}"
            for s in access.symbols
            if s.kind is SymbolKind.LOAD and s.name in answer.model
        )
        return f"{f' at {at}' if at else ''}{f' with {loaded}' if loaded else ''}"

    def unit(self) -> str:
        """What the witness's offsets count: bytes, or a launcher's `T` elements (its
        `sizeof(T)` is 1 there: the comparison holds whatever `T` is)."""
        return "element" if self.layout.element_type else "byte"


def defer(
    model: SemanticModel,
    ctx: RuleContext,
    conditions: Sequence[Condition],
    message: Message,
    *,
    asked: Callable[[SymbolicAccess], bool] = lambda _: True,
    shapes: Shapes = Shapes(),
) -> None:
    """Report, after every rule's decisions and the witnesses they defer before it, the
    first access of each kernel and tensor `asked` selects for which one of `conditions`
    holds at a shape the launch allows: the CPU time its queries take counts against their
    kernels' budgets (solver.py's backstop)."""
    seconds = float(ctx.options.get("solver-budget", 2.0))
    search = _Search(tuple(conditions), shapes)
    ctx.defer(functools.partial(_reported, model, ctx, seconds, search, asked, message))


def _reported(
    model: SemanticModel,
    ctx: RuleContext,
    seconds: float,
    search: _Search,
    asked: Callable[[SymbolicAccess], bool],
    message: Message,
) -> Iterator[Finding]:
    reported: set[tuple[str, str]] = set()
    spent: dict[str, int] = {}  # resource units each kernel's accesses used
    for access in model.symbolic_accesses:
        key = (access.function_usr, access.pointer)
        if access.shared or access.bytes is None or key in reported or not _followed(access) or not asked(access):
            continue
        left = int(seconds * RLIMIT_PER_SECOND) - spent.get(access.function_usr, 0)
        if left <= 0:
            continue
        budget = Budget(min(seconds / _SHARES, left / RLIMIT_PER_SECOND))
        found = search.first(model, access, budget)
        spent[access.function_usr] = spent.get(access.function_usr, 0) + budget.spent
        if found is not None:
            reported.add(key)
            yield ctx.finding(
                location_of(model, access.span), message(access, found), witness=_data(model, access, found)
            )


def _data(model: SemanticModel, access: SymbolicAccess, found: Found) -> Counterexample | None:
    """The witness as data (`kernel-check confirm` runs it): its launcher's sizes, each
    tensor's shape and, for a padded view, strides, and the thread and block."""
    kernel = model.function(access.function_usr)
    if kernel is None:
        return None
    return witness.counterexample(model, kernel, found.witness.answer, access.symbols, found.witness)


def _followed(access: SymbolicAccess) -> bool:
    """Whether every value the access's place and path name is one the walk follows and no
    id read from memory moves it -- but for a guard that picks the path by what a tensor holds
    and bounds no index (`if (finished[b]) return;`, `if (seq_len <= topk)`): any value the
    tensor may hold takes the path, and the solver picks one. A guard that compares a value
    read from memory with a thread, block or loop index (`if (t < counts[b])`, a loop up to a
    loaded length) bounds the index by data the launcher does not state: not asked."""
    assert access.bytes is not None
    kinds = {s.name: s.kind for s in access.symbols}
    if any(kinds.get(n) in _NOT_ASKED for n in symbol_names(access.bytes)):
        return False
    return all(_picks_path(kinds, guard) for guard in access.guards)


def _picks_path(kinds: Mapping[str, SymbolKind], guard: Term) -> bool:
    """Whether a guard names only followed values, or reads memory to pick the path without
    comparing what it reads with an index (`_followed`)."""
    named = {kinds.get(n) for n in symbol_names(guard)}
    if SymbolKind.OPAQUE in named:
        return False
    return SymbolKind.LOAD not in named or not named & set(_INDICES)


@dataclass(frozen=True)
class _Search:
    conditions: tuple[Condition, ...]
    shapes: Shapes

    def first(self, model: SemanticModel, access: SymbolicAccess, budget: Budget) -> Found | None:
        """The smallest shape of a launch in the file for which one of the conditions holds
        of the access (the first condition that holds at any shape)."""
        kernel = model.function(access.function_usr)
        if kernel is None or access.bytes is None:
            return None
        for binding in witness.bindings(model, kernel, access.symbols, callers=True):
            if binding is None or _passed(binding):
                continue
            layout = witness.tensor_layout(model, kernel, access.pointer, binding.contract)
            if layout is None or not _sizes_agree(access, binding, layout):
                continue
            for index, condition in enumerate(self.conditions):
                found = self.smallest(access, binding, layout, condition, budget)
                if found is not None:
                    return Found(found, layout, index)
        return None

    def smallest(
        self, access: SymbolicAccess, binding: Binding, layout: Layout, condition: Condition, budget: Budget
    ) -> Witness | None:
        """A witness among small concrete shapes: with every launcher input fixed the offset
        is linear in the thread, block and loop indices (a query z3 answers at once), where
        over free sizes it multiplies unknowns (`blockIdx.x * stride`) and seldom finishes
        in time."""
        assert access.bytes is not None
        world = [
            *launch_constraints(access.symbols),
            # a loop counter, and a value a guard reads from memory (`_picks_path`): within its type
            *(c for s in access.symbols if s.kind in _WITHIN_TYPE for c in within(_variable(s), s.low, s.high)),
            *binding.constraints,
            *binding.fits,
            *access.guards,
            Term("==", (OFFSET, access.bytes)),  # named, for the witness to tell
            Term("==", (SPAN, layout.span_bytes())),
            Term("==", (WIDTH, access.width_term())),
            # a launcher's `sizeof(T)` scales the offset and the span alike (`_sizes_agree`):
            # counted as 1, the witness tells elements
            *([Term("==", (layout.element_bytes(), Term("const", value=1)))] if layout.element_type else []),
        ]
        pinned_inputs = _pinned(binding.constraints)
        derived = _derived(binding.constraints, binding.inputs)
        free = tuple(s for s in binding.inputs if s.name not in pinned_inputs and not _left_to_solver(s))
        asks: list[list[Term]] = []  # each shape's input values, then the condition at that shape
        for candidate in self.candidates(free, layout, pinned_inputs):
            shape = _with_derived(candidate, derived, pinned_inputs)
            asked = condition(access, layout, {**pinned_inputs, **{s.name: v for s, v in shape.items()}})
            if asked is not None:
                asks.append([*(Term("==", (_variable(s), Term("const", value=v))) for s, v in shape.items()), asked])
        session = solver.Session(world, budget)
        # most accesses are within their layout: one query over every shape at once proves
        # it, where one query a shape cost forty; a shape that does go wrong is then searched
        # smallest first
        if len(asks) > 1 and session.check([_any_of(asks)]).outcome is Outcome.UNSAT:
            return None
        for ask in asks:
            for pinned in _preferred(access):
                answer = session.check([*ask[:-1], *pinned, ask[-1]])
                if answer.outcome is Outcome.SAT:
                    return Witness(answer, _shown(binding, layout, answer), binding.contract)
                if answer.outcome is Outcome.UNKNOWN:
                    return None  # unknown is never a finding
        return None

    def candidates(
        self, inputs: tuple[Symbol, ...], layout: Layout, pinned: Mapping[str, int]
    ) -> Iterator[dict[Symbol, int]]:
        """Small shapes, smallest first: every input alike, then the padded views of the
        layout, then one input apart from the rest, each within its range (`pinned`: the
        inputs the launch fixes)."""
        seen: list[dict[Symbol, int]] = []
        candidates = [dict.fromkeys(inputs, v) for v in self.shapes.alike]
        free_strides = [s for s in layout.strides if s.op == "sym" and s.name in {i.name for i in inputs}]
        candidates += [
            _padded(layout, dict.fromkeys(inputs, size), pinned, stride.name, pad)
            for size in self.shapes.padded_sizes
            for stride in free_strides
            for pad in self.shapes.pads
        ]
        candidates += [
            {**dict.fromkeys(inputs, base), s: v} for base, apart in self.shapes.apart for s in inputs for v in apart
        ]
        for shape in candidates:
            clamped = {s: min(max(v, s.low), s.high) for s, v in shape.items()}
            if clamped not in seen:
                seen.append(clamped)
                yield clamped


def _preferred(access: SymbolicAccess) -> list[list[Term]]:
    """What a witness is pinned to, each tried in turn, the last nothing: the first thread,
    block and iteration, and a value read from memory on the path no larger than `_SMALL_LOAD`
    (`with `lens[b]` = 0`, not a value at its type's end), both, then either, when it can be."""
    first = witness.first_iteration(access)
    loads = [s for s in access.symbols if s.kind is SymbolKind.LOAD]
    if not loads:
        return [first, []]
    small = [c for s in loads for c in within(_variable(s), 0, _SMALL_LOAD)]
    return [[*first, *small], first, small, []]


def _left_to_solver(symbol: Symbol) -> bool:
    """A launcher input the shapes leave to the solver, and a witness names its value: a flag
    of at most two values (`bool stride_checked`: a shape's value of 1 would switch on every
    check it guards and skip every launch it turns off), or the bytes of the launcher's `T`
    (a dtype's, 1 to 8: a shape's 16 or 64 is no type's), or the launcher's own compile-time
    parameter (`kThreads`: what the code states of it picks it, not a shape's size)."""
    return symbol.high <= 1 or symbol.kind in (SymbolKind.ELEMENT_SIZE, SymbolKind.TEMPLATE)


def _shown(binding: Binding, layout: Layout, answer: solver.Answer) -> tuple[Symbol, ...]:
    """The inputs a witness names: the sizes the access and the layout name, and what the
    solver chose for the shapes, but the `sizeof(T)` a layout of `T` elements counts as 1."""
    counted = set(symbol_names(layout.element_bytes())) if layout.element_type else set()
    # (a launcher's compile-time parameter the access does not depend on is not named: `kUsePDL`)
    chosen = tuple(
        s for s in binding.inputs if _left_to_solver(s) and s.kind is not SymbolKind.TEMPLATE and s.name in answer.model
    )
    shown = dict.fromkeys((*binding.shown(*layout.dims, *layout.strides), *chosen))
    return tuple(s for s in shown if s.name not in counted)


def _passed(binding: Binding) -> bool:
    """Whether the kernel's values at this launch name what a launching lambda's calls pass
    (`launch(k, numel / kVec)`): the walk does not tie it to the tensors, so a witness setting
    it against their extents would break what the caller checked."""
    return any(s.kind is SymbolKind.PASSED and s.name in binding.given for s in binding.inputs)


def _sizes_agree(access: SymbolicAccess, binding: Binding, layout: Layout) -> bool:
    """Whether the element sizes of the access's byte offset and of the tensor's span are
    known alike: constants both, or both the one `sizeof(T)` of the launcher's type parameter
    (`kernel<T>` of a `const T* x`, `with_dtype<T>()`: the comparison holds whatever `T` is).
    A size known on one side alone would leave the witness free to choose it."""
    assert access.bytes is not None
    named = set(symbol_names(access.bytes))
    given = {size for name, size in binding.element_sizes if name in named}
    if None in given:
        return False
    unknown = {size for size in given if size is not None and size.op == "sym"}
    return unknown == ({layout.element_bytes()} if layout.element_type else set())


def _any_of(asks: list[list[Term]]) -> Term:
    """Some shape's ask (its input values and its condition) holds."""
    return Term("or", tuple(Term("and", tuple(ask)) for ask in asks))


def _padded(
    layout: Layout, shape: dict[Symbol, int], pinned: Mapping[str, int], padded: str, pad: int
) -> dict[Symbol, int]:
    """`shape` with each stride it sets tight around the dims inside it, innermost first,
    and the stride named `padded` `pad` elements past that."""
    by_name = {s.name: s for s in shape}
    values = {**pinned, **{s.name: v for s, v in shape.items()}}
    extent = 1  # the elements the dims inside span so far
    for dim, stride in reversed(tuple(zip(layout.dims, layout.strides))):  # as written: outermost first
        if stride.op == "sym" and stride.name in by_name:
            values[stride.name] = extent + (pad if stride.name == padded else 0)
        d, s = witness.evaluate(dim, values), witness.evaluate(stride, values)
        if d is None or s is None:
            return shape
        extent += (d - 1) * s
    return {symbol: values[symbol.name] for symbol in shape}


def _derived(constraints: tuple[Term, ...], inputs: tuple[Symbol, ...]) -> dict[str, Term]:
    """The inputs a launcher's check ties to others (`RuntimeCheck(D_in == 2 * D)`), each with
    the term it equals: a shape gives them that value (one setting both alike would never
    meet the check)."""
    names = {s.name for s in inputs}
    derived: dict[str, Term] = {}
    for term in constraints:
        while term.op == "not" and term.args[0].op == "not":
            term = term.args[0].args[0]
        if term.op != "==":
            continue
        for side, other in (term.args, term.args[::-1]):
            others = set(symbol_names(other))
            tied = side.op == "sym" and side.name in names and side.name not in {*others, *derived}
            if tied and others & names and not others & derived.keys():
                derived[side.name] = other
                break
    return derived


def _with_derived(
    shape: dict[Symbol, int], derived: Mapping[str, Term], pinned: Mapping[str, int]
) -> dict[Symbol, int]:
    """`shape` with each input a check ties to others set to the value it must have there
    (kept where that value is not known or out of the input's range)."""
    values = {**pinned, **{s.name: v for s, v in shape.items()}}
    tied = {}
    for symbol in shape:
        value = witness.evaluate(_unwrapped(derived[symbol.name]), values) if symbol.name in derived else None
        if value is not None and symbol.low <= value <= symbol.high:
            tied[symbol] = value
    return {**shape, **tied}


def _unwrapped(term: Term) -> Term:
    """`term` without its wraps (`wrap(x, lo, hi)` is `x` at the small values a shape gives)."""
    if term.op == "wrap":
        return _unwrapped(term.args[0])
    return Term(term.op, tuple(_unwrapped(a) for a in term.args), term.name, term.value) if term.args else term


def _pinned(constraints: tuple[Term, ...]) -> dict[str, int]:
    """The inputs the launch fixes to a constant (`N.set_value(128)`, `RuntimeCheck(D == 64)`)
    and their values: a shape leaves them to it."""
    pinned: dict[str, int] = {}
    for term in constraints:
        if term.op == "not" and term.args[0].op == "!=":
            term = Term("==", term.args[0].args)
        if term.op == "==" and {a.op for a in term.args} == {"sym", "const"}:
            named = next(a.name for a in term.args if a.op == "sym")
            pinned[named] = next(a.value for a in term.args if a.op == "const")
    return pinned


@dataclass(frozen=True)
class Concrete:
    """A layout at one shape, its dims of more than one element ordered by stride, largest
    first, each nested inside the one before (a stride at least the extent of the dims
    inside it): every element has one place, and the bytes between are padding."""

    dims: tuple[int, ...]
    strides: tuple[int, ...]  # in elements
    element_size: int  # in the search's units (`element_units`)

    def inner_extent(self, position: int) -> int:
        """The elements from the first to the last of one index of dim `position`, + 1."""
        return 1 + sum((d - 1) * s for d, s in zip(self.dims[position + 1 :], self.strides[position + 1 :]))

    def has_padding(self) -> bool:
        return any(s > self.inner_extent(k) for k, s in enumerate(self.strides))

    def in_padding(self, byte: Term) -> Term:
        """Whether a byte within the span lies between elements: past the elements of an
        index of some dim, inside its stride."""
        size = self.element_size
        held, within_index = [], byte
        for position, stride in enumerate(self.strides):
            within_index = Term("%", (within_index, Term("const", value=stride * size)))
            past = Term("const", value=self.inner_extent(position) * size)
            held.append(Term("<=", (past, within_index)))
        return Term("or", tuple(held)) if len(held) > 1 else held[0]


def concrete(layout: Layout, values: Mapping[str, int]) -> Concrete | None:
    """The layout at the shape `values` gives; None where it does not decide a dim or a
    stride, or the layout is not nested (a broadcast, a negative or overlapping stride)."""
    pairs = []
    for dim, stride in zip(layout.dims, layout.strides):
        d, s = witness.evaluate(dim, values), witness.evaluate(stride, values)
        if d is None or s is None:
            return None
        if d > 1:
            pairs.append((d, s))
    pairs.sort(key=lambda p: -p[1])
    found = Concrete(tuple(d for d, _ in pairs), tuple(s for _, s in pairs), element_units(layout))
    if any(s <= 0 or s < found.inner_extent(k) for k, s in enumerate(found.strides)):
        return None
    return found


def element_units(layout: Layout) -> int:
    """One element in the search's units: its bytes, or 1 for a launcher's type parameter
    `T`, whose `sizeof(T)` the search counts as 1 (its offsets and span then count elements)."""
    return 1 if layout.element_type else layout.element_size


def within_span(access: SymbolicAccess) -> Term:
    """The bytes the access covers are within the tensor's span (KC406 asks the rest)."""
    end = Term("+", (OFFSET, WIDTH))
    return Term("and", (Term("<=", (ZERO, OFFSET)), Term("<=", (end, SPAN))))


def bytes_reached(start: int, width: int, unit: str = "byte") -> str:
    """`bytes 8 to 11`: what an access of `width` units from `start` covers."""
    if not width:
        return f"{unit} {start} (a pointer handed to a call)"
    return f"{unit}s {start} to {start + width - 1}" if width > 1 else f"{unit} {start}"


def _variable(symbol: Symbol) -> Term:
    return Term("sym", name=symbol.name)


def _rendered(stride: Term) -> str:
    """A stride as the matcher states it (`S`, `1`), or the product of dims it is."""
    if stride.op == "*":
        factors = [_rendered(a) for a in stride.args if a != Term("const", value=1)]
        return " * ".join(factors) or "1"
    return render_dim(stride)
