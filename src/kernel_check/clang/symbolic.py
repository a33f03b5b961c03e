"""Tier 2: a kernel's global accesses as symbolic offsets under the guards on their path.

One walk of a kernel's body (`program.py`'s trees, no cursors) in execution order turns
each integer expression into a `Term` over the kernel's symbols: the thread and block
indices and dimensions, scalar arguments (parameters, fields of a by-value params struct),
loop counters (their bounds become guards), integers read from global memory (one symbol
per pointer and offset, so `if (idx[i] < n) out[idx[i]]` reads the same value twice) and
opaque values the walk does not follow (a call's result, a local assigned after its
declaration). A call's result is one value for the whole block instead (`SymbolKind.UNIFORM`,
`uniform_call`) where nothing in the call tells threads apart (`prefix_op.GetTileIdx()`,
`div_ceil(n, 4)`): then `s = tile * 256 + threadIdx.x` lets the thread index decide. A
pointer value is a received pointer plus an offset term, so `const T* row = out + loc * d;
row[j]` is an access of `out` at `loc * d + j`.

The guards of a statement are the conditions of the `if`s, loops and `?:` it sits in, and
the negation of an earlier `if (c) return;` (or `continue`/`break`) of the same block. A
null test of a received pointer (`if (scale_ptr != nullptr)`) is followed as one symbol per
pointer (`SymbolKind.ADDRESS`: every thread sees the same pointer). A kernel's
`__launch_bounds__(N)` is recorded on its shared accesses (`block_limit`) as a term over its
compile-time arguments.

What it records (`SymbolicAccess`) are the global accesses, each with its offset also in
bytes from the tensor's start where every step's type has a size clang tells (KC401 asks
those whose offset depends on an integer read from global memory, KC406 all of them),
and every access of a `__shared__`
array (KC402-KC404), `extern __shared__` dynamic memory too: followed when its offset and
guards name only values the walk follows and it reads or writes the array's own element
type, or a wider one it spans whole elements of (`reinterpret_cast<float4*>(smem)[i]`:
elements 4 * i to 4 * i + 3, `SymbolicAccess.width`; `reinterpret_cast<float*>(bytes)[i]`:
bytes 4 * i to 4 * i + 3); an array of arrays by its flat offset (`tile[r][c]` of a
`tile[32][33]`: `r * 33 + c`, with `c < 33`, `SymbolicAccess.in_rows`);
a shared array handed to a call, an `asm` operand, a lambda or a pointer the walk does not
follow counts as a write it does not follow (a cooperative load through a helper). A device
helper the kernel hands a shared array or scalar, a pointer into a received tensor
(`load_as<float4>(x, i)`, `load_nc(x + i)`), or whose body declares a `__shared__` variable of
its own, and whose body is in sight, is walked where it is called instead, its parameters
bound to the arguments and its template type parameters to the call's type arguments (`T` of
`load_as<T>` steps 16 bytes for a `float4`, `sizeof(T)` for the kernel's own `T`): its global
accesses are the call's, recorded at the kernel's call (`inline`). solver.py decides what they can reach. It
also records each block-wide barrier (`SymbolicBarrier`, KC170) with the conditions of the
`if`s around it and the early exits before it, loop conditions left out.

Both walks (the rules' and the drafter's) follow the same idioms: the names of a structured
binding of a by-value params struct (`const auto& [out, ids] = params;`, also of a struct
nested in it), loads of a template's integer `T` (`const TLoc* loc`), a template's `const T* x`
in steps of `sizeof(T)` (a `SymbolKind.ELEMENT_SIZE` symbol the launch binds; its byte offset
left unknown once cast to a type of a constant size), compile-time values a template decides
(`sizeof(T)`, `kVecSize = 16 / sizeof(T)`, the bytes of an `AlignedVector<T, kVecSize>`: terms
over `sizeof(T)` and the template's integer parameters, consteval.py's), `offset(p, a, b)` helpers
(`pointer::offset`) as pointer arithmetic, and a received pointer handed to a call whose
body is not in sight (`copy(dst, src)`, a bulk store's destination) or to `asm` (`"l"(ptr)` of a `ld.global`),
recorded as an access at its offset that the walk does not follow (of no width: it may be
the end of a range).
The drafter's walk (`every_access` in extract.py) also walks device functions.
"""

from __future__ import annotations

import itertools
import re
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace

from ..model import (
    ConstExpr,
    DataHandOff,
    Launch,
    LaunchContract,
    LaunchTensorArgument,
    MatcherChain,
    Span,
    Symbol,
    SymbolicAccess,
    SymbolicBarrier,
    SymbolicProduct,
    SymbolKind,
    Term,
)
from .consteval import BUILTIN_SCALARS, Constants, VectorType, callee_name
from .kernel_interface import checked_condition, is_runtime_check, is_tensor_type
from .launches import launch_config, launch_dimensions
from .program import DeclKind, DeclRef, Expr, ExprKind, Function, Stmt, StmtKind, TypeFacts, Var
from .provenance import POINTER_OFFSET, initializer_list_fields, record_fields
from .thread_dependence import ThreadDependence, ThreadLocals

_AXES = ("x", "y", "z")
_BUILTINS = {
    "threadIdx": SymbolKind.THREAD,
    "blockIdx": SymbolKind.BLOCK,
    "blockDim": SymbolKind.BLOCK_DIM,
    "gridDim": SymbolKind.GRID_DIM,
}
_ARITHMETIC = frozenset({"+", "-", "*", "/", "%"})
_COMPARISONS = {"<": "<", "<=": "<=", "==": "==", "!=": "!=", ">": "<", ">=": "<="}  # > and >= swap operands
_CONDITIONS = frozenset({*_COMPARISONS, "&&", "||"})
_TRUTHS = frozenset({"<", "<=", "==", "!=", "and", "or", "not"})  # the ops of a truth-valued term
_ASSIGNMENTS = frozenset({"=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|=", "^="})
_INCREMENTS = frozenset({"++", "--", "x++", "x--"})
_MIN_CALLS = frozenset({"min", "umin", "fminf", "__vimin_s32"})
_MAX_CALLS = frozenset({"max", "umax"})
_LOAD_CALLS = frozenset({"__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv"})
_VECTOR_ACCESSES = {"load": False, "store": True}  # `vec.load(ptr, i)`: a read; `vec.store(ptr, i)`: a write
_EXITS = (StmtKind.RETURN, StmtKind.CONTINUE, StmtKind.BREAK)
_WARP_SIZE = 32
# The lane and warp helpers, over a one-dimensional block (`threadIdx.x % 32`, `/ 32`).
_LANE_CALLS = {"get_lane_id": "%", "__lane_id": "%", "get_warp_id": "/"}
# Words in a callee's name that may make it a block-wide barrier the walk cannot see into
# (`block.sync()`, `cuda::barrier::arrive_and_wait`): a shared write's interval ends there.
_SYNC_WORDS = ("sync", "barrier", "arrive", "wait")
_UNFOLLOWED = (SymbolKind.LOAD, SymbolKind.OPAQUE)
# Words in the name of a call that stops the thread or raises (a launcher's `host::Error()`, `Panic(...)`)
_FAILING_CALLS = ("assert", "fail", "trap", "abort", "error", "panic")
_DIV_CEIL_CALLS = frozenset({"div_ceil", "ceil_div", "cdiv"})
_SHAPE_VIEWS = {"shape": "size", "strides": "stride"}  # a tensor's views, by the query of one entry
# A launcher's query of the device's SM count (`get_num_sms(device)`, `get_sm_count(id)`): one
# value per device, 1 to `_MAX_SMS` (no GPU has more), for a persistent grid of `k * num_sms`.
_SM_COUNT_CALL = re.compile(r"num_?sms|sm_?count|multi_?processor_?count", re.IGNORECASE)
# CUDA's vector makers (`make_float4(0.0f, ...)`): a value built from their arguments alone
_VECTOR_MAKER = re.compile(r"make_[a-z]+[1-4]")
_MAX_SMS = 1024
# A launcher's occupancy query (`get_blocks_per_sm(kernel, threads)`): the blocks of a kernel
# one SM holds at once, 1 (a kernel that fits none is not launched) to `_MAX_BLOCKS_PER_SM`.
_BLOCKS_PER_SM_CALL = re.compile(r"blocks_?per_?sm|max_?active_?blocks", re.IGNORECASE)
_MAX_BLOCKS_PER_SM = 32
# Callee names whose result may differ from thread to thread whatever the arguments: a lane,
# warp or rank, a vote or shuffle, an atomic (each thread gets its own old value), a clock, a
# random number, a read of memory another block may write meanwhile, a collective, an iterator.
_PER_THREAD_CALL = re.compile(
    r"thread|lane|warp|rank|shfl|shuffle|ballot|vote|match|active|elect|atomic|clock|time|rand|load|read|fetch"
    r"|exch|reduce|scan|sync|wait|poll|acquire|volatile|smid|next|pop|(?:^|_)(?:ld|cas|red)(?:_|$)",
    re.IGNORECASE,
)
# The symbols whose value every thread of the block shares
_BLOCK_WIDE = frozenset(
    {SymbolKind.SCALAR, SymbolKind.BLOCK, SymbolKind.BLOCK_DIM, SymbolKind.GRID_DIM, SymbolKind.ADDRESS}
    | {SymbolKind.UNIFORM, SymbolKind.DIM}
)
_LARGE_INDICES = (SymbolKind.BLOCK, SymbolKind.GRID_DIM)
_POWER = "2^"  # the symbol of 2^k - 1 for a shift by a scalar `k` is named "2^k-1"
_INDICES = (SymbolKind.THREAD, SymbolKind.BLOCK, SymbolKind.BLOCK_DIM, SymbolKind.GRID_DIM)
_DIM_LIMIT = 2**40  # a tensor dimension past this does not fit any GPU's memory
_MAX_HELPERS = 3  # device helpers walked inside one another, at most
_DEPENDENT = "<dependent type>"  # an access of `T smem[kN]` in a template
# Half-precision element types an array of which is followed: assigned whole (a copy) or
# read, and any other use of an element (a member, an operator) a write not followed.
_HALVES = frozenset({"__half", "__nv_bfloat16", "__half2", "__nv_bfloat162"})
_UNIFORM_DEPTH = 8  # how many locals deep a stored value's uniformity is followed
_NARROW_BITS = 16
# the runtime's launch configuration struct and its grid and block fields, in that order
_LAUNCH_CONFIG_TYPE = "cudaLaunchConfig"
_CONFIG_DIMS = ("gridDim", "blockDim")
_KEPT = frozenset({"const", "<", "<=", "==", "!=", "and", "or", "not"})  # a narrow cast keeps these


@dataclass(frozen=True)
class _Pointer:
    """A value pointing into a received tensor or a `__shared__` array: which one, and the
    offset (in elements)."""

    base: str
    offset: Term
    shared: bool = False
    element: str = ""  # a shared array's element type (canonical, its scalar's for `smem[a][b]`); "" when not followed
    extent: Term | None = None  # a shared array's length in elements, when declared (not `extern smem[]`)
    # An array of arrays (`float tile[32][33]`): the lengths of the dimensions inside the one
    # the next subscript indexes, which moves it by a whole row of them ((33,), then ()); and
    # the length of the dimension it indexes when that is a row of a larger array (33 for
    # `tile[r][c]`'s `c`), with the conditions that each subscript so far stayed in its row.
    rows: tuple[Term, ...] = ()
    within: Term | None = None
    inside: tuple[Term, ...] = ()
    one_dimensional: bool = True  # declared of one dimension and a length (`SymbolicAccess.read_checked`)
    unit: int = 1  # the array's elements one element of the pointer's type spans (a `float4*` into floats: 4)
    size: int = 0  # the bytes of one element of the pointer's type (0: not known)
    align: int = 0  # the alignment in bytes one element of the pointer's type requires (0: not known)
    # A global pointer's distance from the tensor's start in bytes, whatever types it was
    # cast through on the way (`offset` counts steps of each type alike); None where a step
    # was of a type whose size clang cannot tell (a template's `T*`, `void*`)
    bytes: Term | None = None
    # `sizeof(T)` of a template type parameter's `T*` (`size` 0): its steps' bytes, a symbol
    # the launch's instantiation gives (`SymbolKind.ELEMENT_SIZE`)
    size_term: Term | None = None

    def moved(self, steps: Term, op: str = "+") -> _Pointer:
        """The pointer `steps` elements of its type on (back, for `op` "-")."""
        if steps == _ZERO:
            return self
        scaled = steps if self.unit == 1 else Term("*", (steps, const(self.unit)))
        offset = _add(self.offset, scaled) if op == "+" else Term("-", (self.offset, scaled))
        step: int | Term = self.size or self.size_term or 0
        # arithmetic leaves the row: a later subscript may reach past its end (`&tile[r][0] + c`)
        return replace(self, offset=offset, bytes=self.bytes_moved(steps, step, op), within=None)

    def subscripted(self, index: Term) -> _Pointer:
        """`self[index]` of an array of arrays (`rows`): a pointer to the row it names."""
        row = _product(self.rows)  # the elements one step of `index` spans
        moved = replace(self.moved(Term("*", (index, row))), rows=self.rows[1:], within=self.rows[0])
        return replace(moved, inside=self.in_row(index))

    def in_row(self, index: Term) -> tuple[Term, ...]:
        """The conditions that the subscripts so far, and `index` as the next one, stay in
        their rows: a subscript past a row's end is an error of its own, not a way two
        threads meet (`s[m][warp]` of `kNumWarps` columns for any block size)."""
        if self.within is None:
            return self.inside
        return (*self.inside, Term("<=", (_ZERO, index)), Term("<", (index, self.within)))

    def bytes_moved(self, steps: Term, size: int | Term, op: str = "+") -> Term | None:
        """The byte distance `steps` elements of `size` bytes (a constant, or a template
        type's `sizeof` symbol) on: unknown once a size is."""
        if self.shared or self.bytes is None or not size:
            return None
        if isinstance(size, Term):
            scaled = Term("*", (steps, size))
        else:
            scaled = steps if size == 1 else Term("*", (steps, const(size)))
        return _add(self.bytes, scaled) if op == "+" else Term("-", (self.bytes, scaled))

    def resized(self, size: int, size_term: Term | None) -> _Pointer:
        """The global pointer cast to a type of `size` bytes (or of a template type's
        `size_term`). Its bytes stay known while every step is of constant sizes, or of sizes
        over one template type's `sizeof(T)` (`T`, `AlignedVector<T, kVecSize>`): a sum of both
        would leave a witness free to pick `sizeof(T)`."""
        mixed = self.size_term is not None and (
            size_term is None or _element_sizes(size_term) != _element_sizes(self.size_term)
        )
        return replace(self, size=size, size_term=size_term, bytes=None if mixed else self.bytes)

    def recast(self, after: tuple[str, int] | None) -> _Pointer:
        """The shared pointer cast to point to `after` (the canonical type and its size): a
        wider type spans several of the array's elements (`reinterpret_cast<float4*>(smem)`);
        one that does not span a whole number of them, or of a size clang cannot tell, is not
        followed."""
        array_element = self.size // self.unit
        flat = replace(self, rows=(), within=None)  # a cast pointer indexes the elements in a row
        if not self.element or not array_element or after is None or after[1] % array_element != 0:
            return replace(flat, element="")
        return replace(flat, element=_unqualified(after[0]), unit=after[1] // array_element, size=after[1])


@dataclass(frozen=True)
class _Step:
    """One element of a pointer's type: its bytes (0: not known), or `sizeof(T)` of the
    kernel's template type parameter, and the alignment it requires (0: not known)."""

    size: int = 0
    size_term: Term | None = None
    align: int = 0


_ZERO = Term("const", value=0)
_VOID_POINTER = re.compile(r"(const )?(volatile )?void \*( ?(const|volatile|__restrict))*")
_Value = Term | _Pointer | None
# a pointer to a function template's own type parameter (depth 0: not an enclosing class's), and the parameter
_TEMPLATE_POINTER = re.compile(r"(const )?(volatile )?type-parameter-0-\d+ \*( ?(const|volatile|__restrict))*")
_TEMPLATE_TYPE = re.compile(r"(const )?(volatile )?type-parameter-0-\d+")
_QUALIFIERS = frozenset({"const", "volatile", "__restrict", "__restrict__"})
_MAX_ELEMENT_SIZE = 256  # the bytes of one element a template instantiates (a large vector struct at most)


def const(value: int) -> Term:
    return Term("const", value=value)


_CONST_LOGIC = {"&&": "and", "||": "or"}


def const_term(value: ConstExpr, leaf: Callable[[ConstExpr], Term | None]) -> Term | None:
    """A compile-time value (`ConstExpr`, over template parameters) as a term: `leaf` names
    each template parameter and `sizeof(T)` in it (None: one it cannot name). None where the
    value holds an operator terms do not have (a shift, a bit operation, a helper's fold)."""
    known = value.evaluate({})
    if known is not None:
        return const(known)
    if value.op in ("param", "sizeof"):
        return leaf(value)
    args = [const_term(arg, leaf) for arg in value.args]
    if any(arg is None for arg in args):
        return None
    terms = [arg for arg in args if arg is not None]
    if value.op in _ARITHMETIC and len(terms) == 2:
        return Term(value.op, (terms[0], terms[1]))
    if value.op in _COMPARISONS and len(terms) == 2:
        pair = (terms[1], terms[0]) if value.op in (">", ">=") else (terms[0], terms[1])
        return Term(_COMPARISONS[value.op], pair)
    if value.op in _CONST_LOGIC and len(terms) == 2:  # (`kA && kB` of two flags: each `!= 0`)
        return Term(_CONST_LOGIC[value.op], (_truth(terms[0]), _truth(terms[1])))
    if value.op == "not" and len(terms) == 1:
        return Term("not", (_truth(terms[0]),))
    if value.op == "neg" and len(terms) == 1:
        return Term("-", (_ZERO, terms[0]))
    if value.op in ("min", "max") and len(terms) == 2:
        return _extremum(value.op == "min", terms[0], terms[1])
    if value.op == "?:" and len(terms) == 3:
        return Term("ite", (_truth(terms[0]), terms[1], terms[2]))
    return None


def _truth(term: Term) -> Term:
    """`term` as a truth value: a comparison or logic as it is, else `term != 0`."""
    return term if term.op in _TRUTHS else Term("!=", (term, _ZERO))


def _extremum(smallest: bool, a: Term, b: Term) -> Term:
    """`min(a, b)` (`smallest`) or `max(a, b)`."""
    return Term("ite", (Term("<=", (a, b)) if smallest else Term("<=", (b, a)), a, b))


def _wrapped(term: Term, low: int, high: int) -> Term:
    """`term` as an integer of `low..high` holds it: past `high`, wrapped modulo the range's
    size (solver.py's `wrap`). A value below `low` (a negative count made unsigned) is left as
    it is: that wrap is the launcher's own defect, not one of the kernel's products."""
    value = _constant(term)
    if value is not None and value <= high:
        return term
    return Term("wrap", (term, const(low), const(high)))


def mentions(term: Term, names: set[str] | frozenset[str]) -> bool:
    """Whether `term` names one of the symbols `names`."""
    if term.op == "sym":
        return term.name in names
    return any(mentions(arg, names) for arg in term.args)


def _element_sizes(term: Term) -> frozenset[str]:
    """The `sizeof(T)` symbols a step's size names."""
    return frozenset(name for name in symbol_names(term) if name.startswith("sizeof("))


def symbol_names(term: Term) -> Iterator[str]:
    if term.op == "sym":
        yield term.name
    for arg in term.args:
        yield from symbol_names(arg)


@dataclass
class _Walk:
    function: Function
    threads: ThreadDependence
    thread_locals: ThreadLocals = field(default_factory=dict)
    phase: int = 0  # the barriers (or possible ones) passed so far
    stored: Expr | None = None  # the value the assignment being walked stores
    barrier_loops: tuple[int, ...] = ()  # the loops around here that reach a barrier, by where their bodies start
    lockstep: tuple[str, ...] = ()  # their counters' symbols
    symbols: dict[str, Symbol] = field(default_factory=dict)
    values: dict[int, _Value] = field(default_factory=dict)  # locals by `Var.key`
    assigned: set[int] = field(default_factory=set)  # locals written after their declaration
    assignments: dict[int, list[Expr]] = field(default_factory=dict)  # the values they are assigned, by `Var.key`
    elementwise_helpers: dict[str, bool] = field(default_factory=dict)  # `elementwise` of a body in sight, by USR
    initializers: dict[int, Expr] = field(default_factory=dict)  # the other locals' values, by `Var.key`
    loads: dict[tuple[str, Term], Term] = field(default_factory=dict)
    block_wide_loads: set[str] = field(default_factory=set)  # loads at an address the whole block shares
    shared_scalars: dict[int, _Pointer] = field(default_factory=dict)  # `__shared__ T s;` by `Var.key`
    bound_records: dict[int, str] = field(default_factory=dict)  # bindings of a params struct's struct fields
    accesses: list[SymbolicAccess] = field(default_factory=list)
    products: list[SymbolicProduct] = field(default_factory=list)
    barriers: list[SymbolicBarrier] = field(default_factory=list)
    # The guards a barrier's divergence does not count (by identity: a term may recur):
    # loop conditions, asserts, and an early exit from a branch that synchronizes itself;
    # and the early exits that count (`if (c) return;`), told apart from branch conditions.
    uncounted: list[Term] = field(default_factory=list)
    exit_guards: list[Term] = field(default_factory=list)
    helpers: tuple[str, ...] = ()  # the device helpers being walked in place (`inline`), by USR
    site: Span | None = None  # where the kernel calls the helper being walked, when it is in another file
    call_site: Span | None = None  # where the kernel calls the helper being walked: its global accesses are there
    # the helper's template type parameters, by name, bound to what the call gives them
    # (`load_as<float4>(p, i)`: `T` is 16 bytes)
    type_arguments: dict[str, _Step] = field(default_factory=dict)
    helper_params: set[int] = field(default_factory=set)  # the parameters of the helpers walked, by `Var.key`
    block_limit: Term | None = None  # the kernel's `__launch_bounds__`: the most threads a block has
    for_writes: bool = False  # walking a helper entered for KC402 alone (`SymbolicAccess.read_checked`)
    # the translation unit's compile-time values (`sizeof(T)`, a vector type's bytes) over the
    # template parameters clang leaves them to; None: only what clang folds
    constants: Constants | None = None

    # -- symbols -----------------------------------------------------------------------------
    def symbol(
        self,
        name: str,
        kind: SymbolKind,
        text: str,
        bounds: tuple[int, int],
        span: Span | None = None,
        pointer: str = "",
    ) -> Term:
        if name not in self.symbols:
            self.symbols[name] = Symbol(name, kind, text, bounds[0], bounds[1], span, pointer)
        return Term("sym", name=name)

    def opaque(self, expr: Expr | None) -> Term:
        text = expr.name if expr is not None and expr.name else "value"
        return self.symbol(f"opaque{len(self.symbols)}", SymbolKind.OPAQUE, text, (0, 0))

    def product(self, expr: Expr, term: Term) -> None:
        """Record a multiplication by a block index or grid dimension (KC112's witness)."""
        if self.helpers:  # a helper walked in place: its shared accesses only
            return
        named = set(symbol_names(term))
        if any(self.symbols[n].kind in _LARGE_INDICES for n in named):
            symbols = tuple(self.symbols[n] for n in sorted(named))
            self.products.append(SymbolicProduct(self.function.usr, expr.span, term, symbols))

    # -- expressions -------------------------------------------------------------------------
    def value(self, expr: Expr, guards: tuple[Term, ...]) -> _Value:
        """The term (or pointer) `expr` evaluates to, recording the accesses inside it."""
        kind = expr.kind
        if kind in (ExprKind.PAREN, ExprKind.IMPLICIT, ExprKind.CAST) and expr.children:
            inner = self.value(expr.children[-1], guards)
            if kind is ExprKind.CAST and isinstance(inner, _Pointer) and inner.shared:
                return inner.recast(expr.pointee)  # `reinterpret_cast<float4*>(smem)`
            if isinstance(inner, _Pointer):  # `static_cast<const bf16_t*>(params.x)`: its steps are of the new type
                if not expr.type.is_pointer:
                    return inner
                step = self.pointee(expr.type)
                if not step.size and step.size_term is None and self.constants is not None:
                    step = self.vector_step(self.constants.cast_vector(expr)) or step  # `(const vec_t*)p`
                return replace(inner.resized(step.size, step.size_term), align=step.align)
            narrow = expr.type.bits is not None and expr.type.bits <= _NARROW_BITS and expr.type.canonical != "bool"
            # a cast to 8 or 16 bits bounds the value: not followed, so never unbounded
            return self.opaque(expr) if narrow and isinstance(inner, Term) and inner.op not in _KEPT else inner
        if kind is ExprKind.LITERAL:
            return const(expr.value) if expr.value is not None else None
        if kind is ExprKind.REF:
            return self.reference(expr, guards)
        if kind is ExprKind.MEMBER:
            return self.member(expr, guards)
        if kind is ExprKind.BINARY:
            return self.binary(expr, guards)
        if kind is ExprKind.UNARY:
            return self.unary(expr, guards)
        if kind is ExprKind.CONDITIONAL and len(expr.children) == 3:
            condition = self.condition(expr.children[0], guards)
            then = self.value(expr.children[1], (*guards, condition))
            orelse = self.value(expr.children[2], (*guards, Term("not", (condition,))))
            if isinstance(then, Term) and isinstance(orelse, Term):
                return Term("ite", (condition, then, orelse))
            return None
        if kind is ExprKind.SUBSCRIPT and len(expr.children) == 2:
            base, index = (self.value(child, guards) for child in expr.children)
            if isinstance(base, _Pointer) and base.rows:  # `tile[r]`: a row of an array of arrays
                return base.subscripted(index if isinstance(index, Term) else self.opaque(expr.children[1]))
            return self.read(expr, base, index, guards)
        if kind is ExprKind.CALL:
            return self.call(expr, guards)
        if kind is ExprKind.LAMBDA:  # `auto f = [&] { smem[0] = v; };`
            self.lambda_escapes(expr, guards)
            return None
        if expr.is_size_query:  # `sizeof(T)`: its operand never runs
            return self.compile_time(expr)
        self.visit_children(expr, guards, escaping=True)  # `{smem, n}`: the array goes where the walk does not
        return None

    def visit_children(self, expr: Expr, guards: tuple[Term, ...], *, escaping: bool = False) -> list[_Value]:
        """Walk `expr`'s operands, and their values (None for a lambda); `escaping` (a
        call's): a shared array among them, or named in a lambda's body, is handed where the
        walk does not follow it; so is a shared scalar passed by name to a function (a
        reference parameter may write it) and a shared element an overloaded assignment other
        than a copy takes (`smem[i] += v` on a template's `T`). A copy (`=` of a struct,
        `*reinterpret_cast<float4*>(p) = v`) writes the whole element."""
        operator = _operator(expr) if expr.kind is ExprKind.CALL else ""
        assigning = operator in _ASSIGNMENTS or operator in _INCREMENTS
        values: list[_Value] = []
        for position, child in enumerate(expr.children):
            if child.kind is ExprKind.LAMBDA:
                self.lambda_escapes(child, guards)
                values.append(None)
                continue
            assigned = assigning and position == 0  # the object assigned: `smem[i]` of `smem[i] += v`
            if assigned and operator == "=":
                self.stored = expr.children[-1]
            value = self.element_use(child, guards, copied=operator == "=") if assigned else self.value(child, guards)
            self.stored = None
            values.append(value)
            by_name = child.kind is ExprKind.REF and not operator
            if escaping:
                self.escape(child, self.shared_scalar(child) if by_name else value, guards)
        return values

    def element_use(self, expr: Expr, guards: tuple[Term, ...], *, copied: bool = False) -> _Value:
        """`expr`'s value, where a shared element (`smem[i]`, `*p`, `s_total`) used as an
        object counts as written: a write the walk follows when a copy assigns it whole
        (`copied`), else one it does not (its member or operator may write any part)."""
        node = expr.stripped()
        if (scalar := self.shared_scalar(node)) is not None:
            pointer: _Value = scalar
            index: _Value = _ZERO
        elif node.kind is ExprKind.SUBSCRIPT and len(node.children) == 2:
            pointer, index = (self.value(child, guards) for child in node.children)
        elif node.kind is ExprKind.UNARY and node.operator == "*" and node.children:
            pointer, index = self.value(node.children[0], guards), _ZERO
        else:
            return self.value(expr, guards)
        if not isinstance(pointer, _Pointer) or not pointer.shared:
            return self.read(node, pointer, index, guards)
        if copied:
            self.record(node, pointer, index, guards, is_write=True)
        else:
            self.escape(node, pointer.moved(index) if isinstance(index, Term) else pointer, guards)
        return None

    def lambda_escapes(self, lambda_: Expr, guards: tuple[Term, ...]) -> None:
        """A lambda's body is not walked (it runs where it is called): the shared arrays it
        names are written there for all the walk knows."""
        body = lambda_.lambda_body
        for node in body.expressions() if body is not None else ():
            if node.kind is ExprKind.REF and node.ref is not None:
                self.escape(lambda_, self.values.get(node.ref.key), guards)

    def term(self, expr: Expr, guards: tuple[Term, ...]) -> Term:
        """`expr` as an integer term (an opaque symbol where it is none the walk follows)."""
        value = self.value(expr, guards)
        return value if isinstance(value, Term) else self.opaque(expr)

    def condition(self, expr: Expr, guards: tuple[Term, ...]) -> Term:
        """`expr` as a truth value: a comparison or logic, else `expr != 0`."""
        value = self.value(expr, guards)
        if isinstance(value, Term):
            return _truth(value)
        if (address := self.address(value)) is not None:  # `if (scale_ptr)`
            return Term("!=", (address, _ZERO))
        return Term("!=", (self.opaque(expr), _ZERO))

    def address(self, pointer: _Value, null: Expr | None = None) -> Term | None:
        """The address of a received pointer (a kernel's pointer argument or params field, as
        a helper's parameter too), which every thread of the block sees alike, when the walk
        tests it against null (`null`, when given, is the null pointer it is compared with):
        one symbol per pointer, zero for null, so that `if (p) s = v;` and a later `if (p)
        use(s);` test one value."""
        if not isinstance(pointer, _Pointer) or pointer.shared or pointer.offset != _ZERO:
            return None
        if null is not None and [t.spelling for t in null.uncast().tokens] not in (["nullptr"], ["NULL"], ["0"]):
            return None
        return self.symbol(f"address:{pointer.base}", SymbolKind.ADDRESS, pointer.base, (0, 1))

    def reference(self, expr: Expr, guards: tuple[Term, ...]) -> _Value:
        ref = expr.ref
        if ref is None:
            return const(expr.value) if expr.value is not None else None
        if ref.key in self.shared_scalars:  # `s_total` read: element 0 of a one-element array
            return self.read(expr, self.shared_scalars[ref.key], _ZERO, guards)
        if ref.kind in (DeclKind.PARAMETER, DeclKind.OTHER) and ref.key in self.values:
            return self.values[ref.key]  # a parameter, or a structured binding's name (`bind_fields`)
        if isinstance(held := self.values.get(ref.key), _Pointer) and held.shared:
            return held  # a shared array, `extern __shared__ char smem[]` too (declared in the body, of no function)
        if ref.kind in (DeclKind.VARIABLE, DeclKind.PARAMETER) and ref.is_local:
            if ref.key in self.assigned:
                return self.opaque(expr) if not ref.type.is_pointer else None
            return self.values.get(ref.key)
        folded = expr.value
        if folded is None and ref.kind is DeclKind.TEMPLATE_PARAMETER and ref.type.bits is not None:
            # a compile-time argument (`kPadded`): one value the kernel was instantiated with
            return self.symbol(ref.name, SymbolKind.SCALAR, ref.name, ref.type.value_range)
        if folded is None and ref.kind is DeclKind.VARIABLE and ref.type.bits is not None:
            return self.compile_time(expr)  # a `constexpr` of a class template (`kVecSize = 16 / sizeof(T)`)
        return const(folded) if folded is not None else None

    def member(self, expr: Expr, guards: tuple[Term, ...]) -> _Value:
        if not expr.children:
            return None
        base = expr.children[0].stripped()
        path = self.field_path(expr)
        if path is not None:
            return self.received(path, expr.type)  # a field of a by-value params struct
        if base.kind is not ExprKind.REF:
            self.element_use(base, guards)  # `smem[i].x = v`: the element may be written
            return None
        axis = _member_axis(expr)
        if base.name in _BUILTINS and axis in _AXES:
            text = f"{base.name}.{axis}"
            return self.symbol(text, _BUILTINS[base.name], text, (0, 2**31 - 1))
        return None

    def field_path(self, expr: Expr) -> str | None:
        """`params.out` (`mask.params.out`) where `expr` names a by-value params struct
        parameter or a field of one (also nested), else None."""
        node = expr.stripped()
        if node.kind is ExprKind.REF:
            ref = node.ref
            if ref is not None and ref.key in self.bound_records:
                return self.bound_records[ref.key]
            # a parameter of the kernel's own (a helper's is bound to what its call hands it)
            received = ref is not None and ref.kind is DeclKind.PARAMETER and ref.key in self.values
            received = received and ref is not None and ref.key not in self.helper_params
            return node.name if received and ref is not None and not ref.type.is_pointer else None
        if node.kind is ExprKind.MEMBER and node.children and node.name and not node.children[0].type.is_pointer:
            base = self.field_path(node.children[0])
            return f"{base}.{node.name}" if base is not None else None
        return None

    def bind_fields(self, var: Var) -> None:
        """`const auto& [out, ids, n] = params;` of a by-value params struct (or a struct
        field of one): each name is the field at its position."""
        base = self.field_path(var.exprs[-1]) if var.exprs else None
        fields = record_fields(var.exprs[-1].stripped()) if base is not None else []
        for binding in var.bindings:
            if binding.index < len(fields):
                path = f"{base}.{fields[binding.index]}"
                self.values[binding.key] = self.received(path, binding.type)
                if not binding.type.is_pointer and binding.type.bits is None:
                    self.bound_records[binding.key] = path  # a struct field: its own fields bind on

    def received(self, name: str, type_: TypeFacts) -> _Value:
        """A scalar argument or params field: a pointer into a tensor, or a scalar symbol."""
        if type_.is_pointer:
            return _Pointer(
                name,
                _ZERO,
                size=type_.pointee_size,
                align=type_.pointee_align,
                bytes=_ZERO,
                size_term=self.element_size(type_),
            )
        if type_.bits is None:
            return None
        return self.symbol(name, SymbolKind.SCALAR, name, type_.value_range)

    def element_size(self, pointer: TypeFacts) -> Term | None:
        """`sizeof(T)` of a pointer to one of the kernel's own template type parameters
        (`const T* __restrict__ x`), a symbol the launch binds; None for any other type."""
        if pointer.pointee_size or _TEMPLATE_POINTER.fullmatch(pointer.canonical) is None:
            return None
        name = _type_parameter(pointer.spelling)
        return self.sizeof(name) if name else None

    def sizeof(self, name: str) -> Term:
        """`sizeof(T)` of the kernel's template type parameter `name`: a symbol the launch binds."""
        return self.symbol(f"sizeof({name})", SymbolKind.ELEMENT_SIZE, name, (1, _MAX_ELEMENT_SIZE))

    def pointee(self, pointer: TypeFacts) -> _Step:
        """One element of a pointer type: in a helper walked in place, a pointer to one of its
        own type parameters (`static_cast<const T*>(ptr)` of `load_as<T>`) steps by the type
        the call binds it to, or by a size not known."""
        if self.helpers and _TEMPLATE_POINTER.fullmatch(pointer.canonical) is not None:
            return self.type_arguments.get(_type_parameter(pointer.spelling), _Step())
        return _Step(pointer.pointee_size, self.element_size(pointer), pointer.pointee_align)

    def bound_type(self, argument: TypeFacts) -> _Step | None:
        """What a call's type argument gives a helper's type parameter: its size, or the
        kernel's `sizeof(T)` for its own `T` (in a helper, what the helper's `T` is bound to)."""
        if argument.size:
            return _Step(argument.size, None, argument.align)
        if _TEMPLATE_TYPE.fullmatch(argument.canonical) is None or not (name := _type_parameter(argument.spelling)):
            return None
        if self.helpers:
            return self.type_arguments.get(name)
        return _Step(size_term=self.sizeof(name))

    def compile_time(self, expr: Expr) -> Term | None:
        """A compile-time value clang leaves to the instantiation (`sizeof(T)`, `kMaxVecBytes /
        sizeof(T)`, a `constexpr` over the template's parameters), as a term over the kernel's
        `sizeof(T)` and integer parameters, which the launch binds."""
        if expr.value is not None:
            return const(expr.value)
        return const_term(self.constants.value(expr), self.template_value) if self.constants is not None else None

    def template_value(self, value: ConstExpr) -> Term | None:
        """A template parameter a compile-time value names: `sizeof(T)` of the kernel's `T`
        (in a helper walked in place, of what the call binds the helper's `T` to), or one of
        the kernel's integer parameters."""
        if value.op == "sizeof":
            step = self.type_arguments.get(value.name) if self.helpers else _Step(size_term=self.sizeof(value.name))
            return None if step is None else const(step.size) if step.size else step.size_term
        type_ = None if self.helpers else self.function.value_template_params.get(value.name)
        return self.symbol(value.name, SymbolKind.SCALAR, value.name, type_.value_range) if type_ is not None else None

    def object_step(self, vector: Expr | None) -> _Step:
        """One vector of `vec.load(p, i)`: the bytes of `vec`'s type, or those a template
        decides (`AlignedVector<T, kVecSize> vec`)."""
        if vector is None or vector.type.size:
            return _Step(vector.type.size, None, vector.type.align) if vector is not None else _Step()
        node = vector.stripped()
        ref = node.ref if node.kind is ExprKind.REF else None
        accessor = self.constants.accessor(ref) if self.constants is not None and ref is not None else None
        aligned = accessor is not None and accessor[0] == "aligned_vector"
        return (self.vector_step(accessor[1]) if accessor is not None and aligned else None) or _Step()

    def written_step(self, call: Expr) -> _Step | None:
        """One element of the vector type a call names as its one template argument
        (`load_as<vec_t>` of a `vec_t` a template sizes); None where it names none."""
        callee = call.children[0].stripped() if call.children else None
        if callee is None or self.constants is None:
            return None
        return self.vector_step(self.constants.written_vector(callee))

    def vector_step(self, vector: VectorType | None) -> _Step | None:
        """One element of a vector type whose bytes a template decides (`AlignedVector<T,
        kVecSize>`: `sizeof(T) * kVecSize`); None where they are not known."""
        width = const_term(vector.width, self.template_value) if vector is not None else None
        if width is None:
            return None
        return _Step(size=width.value) if width.op == "const" else _Step(size_term=width)

    def binary(self, expr: Expr, guards: tuple[Term, ...]) -> _Value:
        if len(expr.children) != 2:
            self.visit_children(expr, guards)
            return None
        return self.operation(expr, expr.operator, *expr.children, guards)

    def operation(self, expr: Expr, op: str, left_expr: Expr, right_expr: Expr, guards: tuple[Term, ...]) -> _Value:
        """`left op right`: a built-in binary operator, or one a template leaves unresolved."""
        if op in _ASSIGNMENTS:
            self.assign(left_expr, right_expr, guards)
            return None
        if op in ("&&", "||"):
            first = self.condition(left_expr, guards)
            second = self.condition(right_expr, (*guards, first if op == "&&" else Term("not", (first,))))
            return Term("and" if op == "&&" else "or", (first, second))
        left, right = self.value(left_expr, guards), self.value(right_expr, guards)
        if op in ("==", "!=") and (address := self.address(left, right_expr) or self.address(right, left_expr)):
            return Term(op, (address, _ZERO))  # `scale_ptr != nullptr`
        if isinstance(left, _Pointer) or isinstance(right, _Pointer):
            return _pointer_arithmetic(op, left, right)
        if not isinstance(left, Term) or not isinstance(right, Term):
            return None
        if op in _ARITHMETIC:
            term = Term(op, (left, right))
            if op == "*":
                self.product(expr, term)
            return term
        if op in _COMPARISONS:
            left, right = self.compared(left_expr, left), self.compared(right_expr, right)
            pair = (right, left) if op in (">", ">=") else (left, right)
            return Term(_COMPARISONS[op], pair)
        return _bit_operation(op, left, right) or self.shift(op, left, right)

    def shift(self, op: str, left: Term, right: Term) -> Term | None:
        """`x >> k`, `x << k` by a scalar the kernel is given (a template parameter,
        `kPageBits`; a field): `x` divided or multiplied by 2^k, a symbol of its own (2^k - 1,
        from 0 up: a divisor never 0) for up to 30 bits; `x & ((1 << k) - 1)`: `x` modulo 2^k."""
        if op == "&":
            power = _power_below(right)
            return Term("%", (left, power)) if power is not None else None
        if op not in ("<<", ">>") or right.op != "sym" or self.symbols[right.name].kind is not SymbolKind.SCALAR:
            return None
        text = f"(1 << {self.symbols[right.name].text}) - 1"
        power = Term("+", (self.symbol(f"{_POWER}{right.name}-1", SymbolKind.SCALAR, text, (0, 2**30 - 1)), const(1)))
        return Term("*" if op == "<<" else "/", (left, power))

    def compared(self, operand: Expr, term: Term) -> Term:
        """A comparison's operand as C++ compares it: a signed value converted to an unsigned
        type (`id < gridDim.y`, `id >= 0u`: the usual arithmetic conversions) is its value
        modulo 2^bits, so -1 is the largest value, not the smallest."""
        bits = _to_unsigned(operand)
        if bits is None or self.never_negative(term):
            return term
        if term.op == "const":
            return const(term.value % 2**bits)
        return Term("ite", (Term("<", (term, _ZERO)), Term("+", (term, const(2**bits))), term))

    def never_negative(self, term: Term) -> bool:
        """Whether `term` is at least 0 whatever its symbols' values: built by `+`, `*`, `/`
        and `%` of constants, indices, dimensions and values of an unsigned type (a loop's
        iteration counts from 0; an opaque value may be anything)."""
        if term.op == "const":
            return term.value >= 0
        if term.op == "sym":
            symbol = self.symbols[term.name]
            known = symbol.kind is not SymbolKind.OPAQUE and symbol.low >= 0
            return known or symbol.kind in (*_INDICES, SymbolKind.LOOP)
        return term.op in ("+", "*", "/", "%") and all(self.never_negative(a) for a in term.args)

    def unary(self, expr: Expr, guards: tuple[Term, ...]) -> _Value:
        op = expr.operator
        operand = expr.children[0] if expr.children else None
        if operand is None:
            return None
        if op in _INCREMENTS:
            self.value(operand, guards)
            self.escape(operand, self.shared_scalar(operand), guards)  # `s_count++`: written, not followed
            return None
        if op == "&" and (scalar := self.shared_scalar(operand)) is not None:
            return scalar  # `&s_total`: a pointer to it
        if op == "*":
            return self.read(expr, self.value(operand, guards), _ZERO, guards)
        if op == "&" and operand.stripped().kind is ExprKind.SUBSCRIPT:
            subscript = operand.stripped()
            base = self.value(subscript.children[0], guards)
            index = self.value(subscript.children[1], guards)
            return _pointer_arithmetic("+", base, index)
        value = self.value(operand, guards)
        if not isinstance(value, Term):
            return None
        if op == "-":
            return const(-value.value) if value.op == "const" else Term("-", (_ZERO, value))
        if op == "!":
            return Term("not", (self.condition(operand, guards),))
        return value if op == "+" else None

    def call(self, expr: Expr, guards: tuple[Term, ...]) -> _Value:
        name = expr.name
        arguments = expr.arguments
        if name in _MIN_CALLS | _MAX_CALLS and len(arguments) == 2:
            a, b = (self.term(argument, guards) for argument in arguments)
            return _extremum(name in _MIN_CALLS, a, b)
        if name in _LOAD_CALLS and arguments:
            return self.read(expr, self.value(arguments[0], guards), _ZERO, guards)
        if name in _LANE_CALLS and not arguments:
            lane = self.symbol("threadIdx.x", SymbolKind.THREAD, "threadIdx.x", (0, 2**31 - 1))
            return Term(_LANE_CALLS[name], (lane, const(_WARP_SIZE)))
        if (vector_access := _VECTOR_ACCESSES.get(self.method_name(expr))) is not None and len(arguments) == 2:
            pointer, index = (self.value(argument, guards) for argument in arguments)
            if isinstance(pointer, _Pointer) and not pointer.shared:  # `i` counts whole vectors
                step = self.object_step(_member_object(expr))
                pointer = replace(pointer.resized(step.size, step.size_term), align=step.align)
            self.record(expr, pointer, index, guards, is_write=vector_access)
            return None
        if _operator(expr) == "=" and len(expr.children) == 3 and expr.children[0].type.canonical in _HALVES:
            # `smem[i] = v` of `__nv_bfloat16` (children: the object, the operator, the value): a plain store
            self.assign(expr.children[0], expr.children[2], guards)
            return None
        if len(arguments) >= 2 and (name or callee_name(expr)) == POINTER_OFFSET:
            return self.offset_call(expr, guards)
        if not name and _operator(expr) in ("+", "-"):
            return self.dependent_arithmetic(expr, guards)
        if not name and _operator(expr) in _COMPARISONS and len(operands := _operands(expr)) == 2:
            # `page < 0` of a template's `IdType page`: clang leaves the comparison an unresolved
            # operator call where a header declares overloads (`cuda_fp16.h`'s `__half`); the
            # ids it is instantiated with compare as integers, so a guard stays a guard
            return self.operation(expr, _operator(expr), operands[0], operands[1], guards)
        helper = self.helper(expr)
        shared_helper = helper is not None
        handed: list[_Value] = []
        arguments_shared = any(self.names_shared(argument) for argument in arguments)
        if helper is None or not arguments_shared:  # a helper entered for its own shared arrays alone
            handed = self.visit_children(expr, guards, escaping=True)
            helper = helper or self.tensor_helper(expr, handed)
            if helper is None:
                self.handed_on(expr, handed, guards)
        if helper is not None:  # its barriers pass where its body reaches them
            outer, self.for_writes = self.for_writes, self.for_writes or not arguments_shared or bool(_operator(expr))
            self.inline(expr, helper, guards, dict(zip(map(id, expr.children), handed)) if handed else None)
            self.for_writes = outer
        barrier = self.threads.barrier(expr)
        if helper is None and (barrier or self.synchronizes_by_name(expr)):
            self.phase += 1
        if barrier and not self.helpers:
            self.barrier_at(expr, barrier, guards)
        if expr.type.bits is None:
            return None
        if not shared_helper and not barrier and self.uniform_call(expr, dict(zip(map(id, expr.children), handed))):
            text = _spelled(expr) or expr.name
            return self.symbol(f"uniform{len(self.symbols)}", SymbolKind.UNIFORM, text, expr.type.value_range)
        return self.opaque(expr)

    def method_name(self, call: Expr) -> str:
        """A call's callee name, also of a method of a template's dependent type (`vec.load(p,
        i)` of an `AlignedVector<T, kVecSize> vec`, which clang leaves unnamed: read from the text)."""
        if call.name or self.constants is None:
            return call.name
        return callee_name(call, self.constants.data, self.constants.path)

    def uniform_call(self, call: Expr, arguments: dict[int, _Value]) -> bool:
        """Whether a call's result is one value for the whole block (`arguments`: the values
        of its children, by `id`): its name is none of a lane, rank, vote, shuffle, atomic,
        clock, random number or read of memory (`_PER_THREAD_CALL`), every argument is a value
        all threads hold alike, a method's object is a local or parameter built from such
        values alone, and a body in sight reads no thread index and runs no `asm`; a free
        function of no arguments needs its body in sight (`clock64()`, `laneid()` read the
        thread's own registers)."""
        name = call.name or callee_name(call)
        if not name or _operator(call) or call.is_construction or _PER_THREAD_CALL.search(name):
            return False
        if self.threads.source(call, self.thread_locals):
            return False
        if not all(self.block_wide(arguments.get(id(argument))) for argument in call.arguments):
            return False
        callee = call.children[0].stripped() if call.children else None
        method = callee is not None and callee.kind is ExprKind.MEMBER and bool(callee.children)
        if method and (callee is None or not self.uniform_object(callee.children[0])):
            return False
        definitions = [self.threads.program.definition(c) for c in call.callees]
        if any(d is not None and d.body is not None for d in definitions):
            return all(d is not None and self.threads.thread_free(d) for d in definitions)
        return method or bool(call.arguments)

    def block_wide(self, value: _Value) -> bool:
        """Whether a walked value is an integer every thread of the block holds alike."""
        return isinstance(value, Term) and all(self.symbols[n].kind in _BLOCK_WIDE for n in symbol_names(value))

    def uniform_object(self, expr: Expr) -> bool:
        """Whether a method's object is a parameter, or a local that is not assigned after its
        declaration, whose value (its initializer) no thread index and no per-thread call
        reaches (`PrefixOp op(tile_state, storage, scan_op)`, not `cg::this_thread_block()`)."""
        node = expr.stripped()
        ref = node.ref if node.kind is ExprKind.REF else None
        if ref is None or ref.name in _BUILTINS or ref.key in self.thread_locals or ref.key in self.assigned:
            return False
        if ref.kind is DeclKind.PARAMETER:
            return True
        initial = self.initializers.get(ref.key)
        if ref.kind is not DeclKind.VARIABLE or not ref.is_local or initial is None:
            return False
        calls = (n for n in initial.walk() if n.kind is ExprKind.CALL)
        return not self.threads.source(initial, self.thread_locals) and not any(
            _PER_THREAD_CALL.search(c.name or callee_name(c) or "") for c in calls
        )

    def dependent_arithmetic(self, call: Expr, guards: tuple[Term, ...]) -> _Value:
        """A `+` or `-` a template leaves unresolved (`smem + i` of a `T smem[kN]`, `x + row * d`
        of a `const T* x`): a pointer moved, when it is one; else its operands are walked as
        any call's."""
        operands = _operands(call)
        values = [self.value(operand, guards) for operand in operands]
        if len(values) == 2 and isinstance(values[0], _Pointer):
            return _pointer_arithmetic(_operator(call), values[0], values[1])
        for operand, value in zip(operands, values):
            self.escape(operand, value, guards)
        return self.opaque(call) if call.type.bits is not None else None

    def helper(self, call: Expr) -> Function | None:
        """The device function a call runs, to walk in place, when the call hands it a shared
        array or scalar (`cta::reduce_max(v, smem)`, `norm(row, warp_sums, &s_inv)`) or its
        body declares one of its own (`__shared__ float partial[32];`: one array for every
        call of the block): its one definition in sight (no system header's), not one being
        walked already."""
        callees = call.callees
        handed = any(self.names_shared(argument) for argument in call.arguments)
        if len(callees) != 1 or (not handed and not self.threads.declares_shared(callees[0])):
            return None
        return self.in_sight(call)

    def tensor_helper(self, call: Expr, handed: list[_Value]) -> Function | None:
        """The device function a call hands a pointer into a received tensor to
        (`load_as<vec_t>(x, i)`, `load_nc(x + i)`; `handed`: the values of the call's
        children), to walk in place: its accesses are the call's, at the caller's offsets."""
        if not any(isinstance(value, _Pointer) and not value.shared for value in handed):
            return None
        return self.in_sight(call)

    def in_sight(self, call: Expr) -> Function | None:
        """The one definition in sight (no system header's) of the function a call runs, not
        one being walked already nor an operator or a construction."""
        callees = call.callees
        # (a template's call of a function it names leaves the call unnamed, as of an operator)
        if len(callees) != 1 or callees[0].name.startswith("operator") or call.is_construction:
            return None
        if len(self.helpers) >= _MAX_HELPERS:
            return None
        helper = self.threads.program.definition(callees[0])
        if helper is None or helper.usr in self.helpers or helper.body is None:
            return None
        return helper

    def names_shared(self, expr: Expr) -> bool:
        """Whether `expr` names a shared array or scalar, or a local pointing into one."""
        for node in expr.walk():
            ref = node.ref if node.kind is ExprKind.REF else None
            if ref is None:
                continue
            value = self.values.get(ref.key)
            if ref.key in self.shared_scalars or (isinstance(value, _Pointer) and value.shared):
                return True
        return False

    def inline(
        self, call: Expr, helper: Function, guards: tuple[Term, ...], walked: dict[int, _Value] | None = None
    ) -> None:
        """Walk `helper`'s body where `call` runs it, its parameters bound to the arguments
        (`walked`: their values by `id`, where the call's arguments were walked already):
        its shared accesses are the kernel's (at the call when the helper is in another file,
        so that a finding lands in the checked file), under the guards of the call. A
        parameter that the body moves, or a reference bound to a shared element, is a write
        the walk does not follow, as a shared array handed to any other call is."""
        body = helper.body
        assert body is not None  # `helper` checked it
        moved = _assigned_locals(body)
        self.assigned |= moved
        self.assignments.update(_assigned_values(body))
        dependent: ThreadLocals = {}
        self.helper_params.update(param.key for param in helper.params)
        for argument, param in zip(call.arguments, helper.params):
            if self.threads.source(argument, self.thread_locals):
                dependent[param.key] = param.name
            scalar = self.shared_scalar(argument)
            if param.is_reference and scalar is not None:
                self.shared_scalars[param.key] = scalar  # `float& total` bound to `s_total`
                continue
            if walked is not None:
                value = walked.get(id(argument))
            else:
                value = self.element_use(argument, guards) if param.is_reference else self.value(argument, guards)
            if param.key in moved:
                self.escape(argument, value, guards)
            else:
                self.values[param.key] = value
            record = not param.type.is_pointer and param.type.bits is None
            if record and (path := self.field_path(argument)) is not None:
                self.bound_records[param.key] = path  # `const Params& p` bound to the kernel's params struct
        self.thread_locals = {**self.thread_locals, **self.threads.locals(body, given=dependent)}
        bound = {}
        for position, name in enumerate(helper.template_params):
            given = call.type_arguments[position] if position < len(call.type_arguments) else None
            step = self.bound_type(given) if given is not None else None
            if step is None and position == 0:
                step = self.written_step(call)  # `load_as<vec_t>`, `vec_t` a template's vector type
            if step is not None:
                bound[name] = step
        outer = (self.helpers, self.site, self.call_site, self.type_arguments)
        self.helpers, self.type_arguments = (*self.helpers, helper.usr), bound
        self.call_site = self.call_site or call.span
        if self.site is None and helper.file != self.function.file:
            self.site = call.span
        self.statement(body, guards)
        self.helpers, self.site, self.call_site, self.type_arguments = outer

    def offset_call(self, expr: Expr, guards: tuple[Term, ...]) -> _Value:
        """`pointer::offset(p, a, b)`: `p` moved by `a + b` (its own units: bytes of a
        `void*`), when `p` points into a received tensor."""
        values = [self.value(argument, guards) for argument in expr.arguments]
        pointer, steps = values[0], values[1:]
        if isinstance(pointer, _Pointer) and not pointer.shared and all(isinstance(v, Term) for v in steps):
            moved = pointer.offset
            in_bytes: Term | None = pointer.bytes
            # steps of bytes from a `void*` (header libraries differ on a typed pointer's
            # steps, and on a step type the call names: `offset<float>(p, i)`): else unknown
            untyped = _VOID_POINTER.fullmatch(expr.arguments[0].stripped().type.canonical) is not None
            step_size = 1 if untyped and "<" not in (t.spelling for t in expr.tokens) else 0
            for step in steps:
                assert isinstance(step, Term)
                moved = _add(moved, step)
                in_bytes = replace(pointer, bytes=in_bytes).bytes_moved(step, step_size)
            return replace(pointer, offset=moved, bytes=in_bytes)
        for argument, value in zip(expr.arguments, values):
            self.escape(argument, value, guards)
        return None

    def handed_on(self, call: Expr, values: list[_Value], guards: tuple[Term, ...]) -> None:
        """A pointer into a received tensor handed to a call (`warp::copy(dst, src)`,
        `cp_async_bulk(pointer::offset(dst, loc * stride), smem, n)`; `values`: those of the
        call's children): the callee accesses its first element at least, an access at its
        offset that the walk does not follow (how far past it the callee goes is not known)."""
        handed = {id(child): value for child, value in zip(call.children, values)}
        for argument in call.arguments:
            self.reached(argument, handed.get(id(argument)), guards)

    def reached(self, expr: Expr, value: _Value, guards: tuple[Term, ...]) -> None:
        """A pointer into a received tensor that leaves the walk (a call's argument, an `asm`
        operand, `"l"(ptr)` of a `ld.global`): an access at its offset the walk does not
        follow, counted as a write (which it is, read or write, is not known)."""
        if isinstance(value, _Pointer) and not value.shared:
            # of no width: a range's end is a pointer one past its last element
            self.append(expr, value, value.offset, guards, is_write=True, followed=False)

    def barrier_at(self, call: Expr, barrier: str, guards: tuple[Term, ...]) -> None:
        """A block-wide barrier under `guards`, the counted ones split into branch
        conditions and early exits (KC170)."""
        counted = [g for g in guards if not _among(g, self.uncounted)]
        exits = tuple(g for g in counted if _among(g, self.exit_guards))
        branches = tuple(g for g in counted if not _among(g, exits))
        named = sorted({n for g in counted for n in symbol_names(g)})
        symbols = tuple(self.symbols[n] for n in named)
        self.barriers.append(SymbolicBarrier(self.function.usr, call.span, barrier, branches, exits, symbols))

    def synchronizes(self, call: Expr) -> bool:
        """Whether a call is, reaches or may be a block-wide barrier."""
        return bool(self.threads.barrier(call)) or self.synchronizes_by_name(call)

    @staticmethod
    def synchronizes_by_name(call: Expr) -> bool:
        """Whether a call's name says it may synchronize (a helper the walk does not enter)."""
        name = call.name.lower()
        return any(word in name for word in _SYNC_WORDS)

    def launch_bound(self) -> Term | None:
        """The most threads a block of the kernel has, from its `__launch_bounds__(N, ...)`: N
        as a term over its compile-time arguments (`kDim / 16`); None without one, or for one
        naming anything but literals and the template's integer parameters."""
        params = self.function.value_template_params

        def leaf(token: str) -> Term | None:
            if token[:1].isdigit():
                digits = token.rstrip("uUlL")
                return const(int(digits, 0)) if digits.isdigit() and (digits == "0" or digits[0] != "0") else None
            type_ = params.get(token)
            return self.symbol(token, SymbolKind.SCALAR, token, type_.value_range) if type_ is not None else None

        return _arithmetic(list(self.function.launch_bound), leaf)

    def loop_body(self, body: Stmt, guards: tuple[Term, ...], counters: tuple[str, ...] = ()) -> None:
        """A loop's body: shared writes in it have no interval when it reaches a barrier
        (one iteration's writes race with the next one's only across it); `counters`: the
        symbols of its counters."""
        synchronizing = any(self.synchronizes(call) for call in body.calls()) or any(
            stmt.kind is StmtKind.ASM for stmt in body.walk()
        )
        outer = (self.barrier_loops, self.lockstep)
        if synchronizing:
            self.barrier_loops, self.lockstep = (*self.barrier_loops, body.span.start), (*self.lockstep, *counters)
        self.statement(body, guards)
        self.barrier_loops, self.lockstep = outer

    def read(self, expr: Expr, pointer: _Value, index: _Value, guards: tuple[Term, ...]) -> _Value:
        """`pointer[index]` read: the access, and the value it reads when an integer."""
        self.record(expr, pointer, index, guards, is_write=False)
        # a load of a template's `T` (`const TLoc* loc`, `std::integral T` ids): a value an
        # offset can use is an integer
        dependent = expr.type.canonical == _DEPENDENT or "type-parameter-" in expr.type.canonical
        integer = expr.type.bits is not None or dependent
        if not isinstance(pointer, _Pointer) or not isinstance(index, Term) or not integer:
            return None
        if pointer.shared:  # what another thread wrote there: not followed
            return self.opaque(expr)
        offset = pointer.moved(index).offset
        key = (pointer.base, offset)
        if key not in self.loads:
            text = _spelled(expr) or expr_text(pointer.base, offset)
            self.loads[key] = self.symbol(
                f"load{len(self.loads)}", SymbolKind.LOAD, text, expr.type.value_range, expr.span, pointer.base
            )
            if all(n in self.block_wide_loads or self.symbols[n].kind in _BLOCK_WIDE for n in symbol_names(offset)):
                self.block_wide_loads.add(self.loads[key].name)
        return self.loads[key]

    def unfollowed(self, name: str) -> bool:
        """Whether a symbol is a value the walk does not follow for shared accesses: a call's
        result or a load, unless one at an address the whole block shares (`finished[blockIdx.x]`:
        one value the block's threads all read, whichever it is)."""
        return self.symbols[name].kind in _UNFOLLOWED and name not in self.block_wide_loads

    def record(self, expr: Expr, pointer: _Value, index: _Value, guards: tuple[Term, ...], *, is_write: bool) -> None:
        """An access of a received tensor whose offset reads global memory, or any access of
        a shared array (followed or not, see `SymbolicAccess.followed`)."""
        if not isinstance(pointer, _Pointer) or not isinstance(index, Term):
            return
        offset = pointer.moved(index).offset
        if pointer.shared:
            in_rows = pointer.in_row(index)
            named = set(symbol_names(offset)).union(*(symbol_names(g) for g in (*guards, *in_rows)))
            followed = bool(pointer.element) and _unqualified(expr.type.canonical) in (pointer.element, _DEPENDENT)
            followed = followed and not any(self.unfollowed(n) for n in named)
            self.append(expr, replace(pointer, inside=in_rows), offset, guards, is_write=is_write, followed=followed)
        else:
            width: int | Term = pointer.size or pointer.size_term or expr.type.size or 1
            align = pointer.align if pointer.size else 0 if pointer.size_term is not None else expr.type.align
            moved = pointer.moved(index)
            self.append(expr, moved, offset, guards, is_write=is_write, followed=True, width=width, align=align)

    def escape(self, expr: Expr, value: _Value, guards: tuple[Term, ...]) -> None:
        """A shared array handed where the walk does not follow it (a call, an `asm` operand, a
        pointer stored away): a write it does not follow."""
        if isinstance(value, _Pointer) and value.shared:
            self.append(expr, value, value.offset, guards, is_write=True, followed=False)

    def append(
        self,
        expr: Expr,
        pointer: _Pointer,
        offset: Term,
        guards: tuple[Term, ...],
        *,
        is_write: bool,
        followed: bool,
        width: int | Term = 0,
        align: int = 0,
    ) -> None:
        """Record an access; `pointer` a global one's at its place (`width`: the bytes it
        covers, a term where a template decides them; `align`: the alignment its type requires)."""
        in_bytes = pointer.bytes if not pointer.shared else None
        named = set(symbol_names(offset)).union(*(symbol_names(g) for g in (*guards, *pointer.inside)))
        if in_bytes is not None:
            named.update(symbol_names(in_bytes))
        for size in (pointer.extent, self.block_limit):
            if size is not None:
                named.update(symbol_names(size))
        self.accesses.append(
            SymbolicAccess(
                function_usr=self.function.usr,
                span=(self.call_site if not pointer.shared else self.site) or expr.span,
                pointer=pointer.base,
                offset=offset,
                guards=guards,
                symbols=tuple(self.symbols[n] for n in sorted(named)),
                is_write=is_write,
                shared=pointer.shared,
                phase=self.phase,
                in_barrier_loop=bool(self.barrier_loops),
                barrier_loops=self.barrier_loops,
                lockstep=self.lockstep,
                value_varies=pointer.shared and is_write and self.varies(self.stored),
                value_uniform=pointer.shared and is_write and self.uniform(self.stored),
                followed=followed,
                extent=pointer.extent,
                width=pointer.unit,
                block_limit=self.block_limit if pointer.shared else None,
                in_rows=pointer.inside,
                read_checked=pointer.one_dimensional and not self.for_writes,
                bytes=in_bytes,
                byte_width=(width if isinstance(width, int) else 1) if in_bytes is not None else 0,
                byte_width_term=width if isinstance(width, Term) and in_bytes is not None else None,
                byte_align=align if in_bytes is not None else 0,
            )
        )

    def assign(self, target: Expr, source: Expr, guards: tuple[Term, ...]) -> None:
        stripped = target.stripped()
        self.escape(source, self.value(source, guards), guards)  # `p = smem + o`: `p` is not followed
        self.stored = source
        if (scalar := self.shared_scalar(stripped)) is not None:
            self.record(stripped, scalar, _ZERO, guards, is_write=True)
        elif stripped.kind is ExprKind.SUBSCRIPT and len(stripped.children) == 2:
            pointer = self.value(stripped.children[0], guards)
            self.record(stripped, pointer, self.value(stripped.children[1], guards), guards, is_write=True)
        elif stripped.kind is ExprKind.UNARY and stripped.operator == "*" and stripped.children:
            self.record(stripped, self.value(stripped.children[0], guards), _ZERO, guards, is_write=True)
        elif stripped.kind is ExprKind.MEMBER:
            self.member(stripped, guards)  # `smem[i].x = v`
        self.stored = None

    def varies(self, value: Expr | None) -> bool:
        """Whether a stored value may differ from thread to thread: it reads the thread's
        index -- directly, through a value loaded at an address that does, or through a
        local whose initializer or a later assignment does (`len = lens[tx]; s[tx / 2] =
        len;`) -- and every call on the way computes from its arguments alone
        (`elementwise`: `sigmoid(x[tid])`); a warp or block collective returns one value to
        all (`m = warp::reduce_max(v); smem[0] = m;`)."""
        if value is None:
            return False
        reads = [read for read, _ in self.with_initializers(value, assigned=True)]
        if not any(self.threads.source(read, self.thread_locals) for read in reads):
            return False
        return all(
            self.elementwise(node)
            for read in reads
            for node in read.walk()
            if node.kind is ExprKind.CALL and not node.is_construction
        )

    def elementwise(self, call: Expr, depth: int = 0) -> bool:
        """Whether a call's result is a function of its arguments alone, so that two threads
        handing it different values may get different results: an operator, or a call
        whose name is none of a lane, vote, shuffle, reduction, atomic or other per-thread
        or collective call (`_PER_THREAD_CALL`), that reaches no barrier, and whose body,
        where in sight, runs no `asm` and makes only such calls (`_MAX_HELPERS` deep)."""
        operator = _operator(call)
        if operator:
            return operator != "()"  # a lambda's or functor's body is not looked into
        name = call.name or callee_name(call)
        if not name or _PER_THREAD_CALL.search(name) or self.threads.barrier(call):
            return False
        definitions = [self.threads.program.definition(c) for c in call.callees]
        return all(self.elementwise_body(d, depth) for d in definitions if d is not None and d.body is not None)

    def elementwise_body(self, function: Function, depth: int) -> bool:
        """`elementwise` of the calls in a device function's body (remembered by its USR)."""
        known = self.elementwise_helpers.get(function.usr)
        if known is not None:
            return known
        body = function.body
        assert body is not None  # `elementwise` asks only of a body in sight
        self.elementwise_helpers[function.usr] = False  # a recursive call is taken as none
        found = depth < _MAX_HELPERS and not any(stmt.kind is StmtKind.ASM for stmt in body.walk())
        found = found and all(self.elementwise(c, depth + 1) for c in body.calls() if not c.is_construction)
        self.elementwise_helpers[function.usr] = found
        return found

    def uniform(self, value: Expr | None) -> bool:
        """Whether a stored value is provably one for the whole block: it reads no thread
        index, calls no function but a vector maker (a warp collective returns one value per
        warp) and names only shared arrays (at an index so too) and locals whose one value
        (their initializer) is so too, at most `_UNIFORM_DEPTH` locals deep."""
        if value is None:
            return False
        for read, depth in self.with_initializers(value):
            if depth > _UNIFORM_DEPTH or self.threads.source(read, self.thread_locals):
                return False
            for node in read.walk():
                if node.kind is ExprKind.CALL and not node.is_construction and not _VECTOR_MAKER.fullmatch(node.name):
                    return False
                ref = node.ref if node.kind is ExprKind.REF else None
                if ref is not None and ref.is_local and ref.kind is DeclKind.VARIABLE and not self.is_shared(ref):
                    held = ref.key in self.initializers and ref.key not in self.assigned  # one value: its initializer's
                    if not held:
                        return False
        return True

    def with_initializers(self, value: Expr, *, assigned: bool = False) -> Iterator[tuple[Expr, int]]:
        """`value`, then the initializer of each local it reads (and, when `assigned`, each
        value assigned to it after its declaration), of each local those read and so on,
        each once and nearest first: with how many locals deep it is (0: `value`)."""
        pending = deque([(value, 0)])
        seen: set[int] = set()
        while pending:
            read, depth = pending.popleft()
            yield read, depth
            for node in read.walk():
                key = node.ref.key if node.kind is ExprKind.REF and node.ref is not None else None
                if key is None or key in seen:
                    continue
                seen.add(key)
                sources = [self.initializers[key]] if key in self.initializers else []
                sources += self.assignments.get(key, []) if assigned else []
                pending.extend((source, depth + 1) for source in sources)

    def is_shared(self, ref: DeclRef) -> bool:
        """Whether a local names a `__shared__` array or scalar (one for the whole block)."""
        held = self.values.get(ref.key)
        return ref.key in self.shared_scalars or (isinstance(held, _Pointer) and held.shared and held.offset == _ZERO)

    # -- statements --------------------------------------------------------------------------
    def block(self, stmts: tuple[Stmt, ...], guards: tuple[Term, ...]) -> None:
        for stmt in stmts:
            phase = self.phase
            exit_condition = self.statement(stmt, guards)
            if exit_condition is not None:
                guard = Term("not", (exit_condition,))
                # an `if (c) return;` whose branch reaches no barrier: the threads that leave
                # miss the barriers after it; an assert's trap, or a branch that synchronizes
                # (a split of the block), is no divergence KC170 counts
                counted = stmt.kind is StmtKind.IF and self.phase == phase
                (self.exit_guards if counted else self.uncounted).append(guard)
                guards = (*guards, guard)

    def statement(self, stmt: Stmt, guards: tuple[Term, ...]) -> Term | None:
        """Walk `stmt`; the condition under which it leaves the block (`if (c) return;`)."""
        kind = stmt.kind
        if kind is StmtKind.BLOCK:
            self.block(stmt.live_stmts(), guards)
        elif kind is StmtKind.DECL:
            for var in stmt.variables:
                self.declare(var, guards)
        elif kind is StmtKind.IF:
            return self.branch(stmt, guards)
        elif kind is StmtKind.FOR:
            self.loop(stmt, guards)
        elif kind in (StmtKind.WHILE, StmtKind.DO):
            condition = self.condition(stmt.condition, guards) if stmt.condition is not None else None
            inner = (*guards, condition) if condition is not None and kind is StmtKind.WHILE else guards
            self.uncounted += inner[len(guards) :]
            if stmt.body is not None:
                self.loop_body(stmt.body, inner)
        elif kind is StmtKind.EXPR and (checked := _asserted(stmt.exprs[0])) is not None:
            condition = self.condition(checked, guards)
            self.visit_statement_parts(stmt, guards)
            return Term("not", (condition,))  # the thread stops (traps) where it fails
        elif kind is StmtKind.RANGE_FOR:
            self.visit_statement_parts(stmt, guards)
            for child in stmt.live_stmts():
                self.loop_body(child, guards)
        elif kind is StmtKind.ASM:  # may be a barrier (`bar.sync`); may access a pointer operand
            for expr in stmt.exprs:
                value = self.value(expr, guards)
                self.escape(expr, value, guards)
                self.reached(expr, value, guards)
            self.phase += 1
        else:
            self.visit_statement_parts(stmt, guards)
            for child in stmt.live_stmts():
                self.statement(child, guards)
        return None

    def visit_statement_parts(self, stmt: Stmt, guards: tuple[Term, ...]) -> None:
        for expr in stmt.exprs:
            if expr.kind is not ExprKind.LAMBDA:
                self.value(expr, guards)

    def branch(self, stmt: Stmt, guards: tuple[Term, ...]) -> Term | None:
        taken = stmt.taken
        if taken is not None:  # `if constexpr` that folds: one branch runs
            chosen = stmt.then if taken else stmt.orelse
            return self.statement(chosen, guards) if chosen is not None else None
        if stmt.condition is None:
            return None
        for variable in stmt.variables:
            self.declare(variable, guards)
        condition = self.condition(stmt.condition, guards)
        if stmt.then is not None:
            self.statement(stmt.then, (*guards, condition))
        if stmt.orelse is not None:
            self.statement(stmt.orelse, (*guards, Term("not", (condition,))))
        if stmt.orelse is None and stmt.then is not None and _leaves(stmt.then):
            return condition
        if _empty(stmt.then) and stmt.orelse is not None and _fails(stmt.orelse):
            return Term("not", (condition,))  # `CHECK_HOST(c) << ...`: `if (c) {} else Error() << ...`
        return None

    def loop(self, stmt: Stmt, guards: tuple[Term, ...]) -> None:
        """A `for`: a counter declared in its init, compared in its condition and stepped up
        by its increment alone is `start + k * step` for a loop symbol `k` from 0 on."""
        inner = guards
        counters: tuple[str, ...] = ()
        init = stmt.stmts[0] if len(stmt.stmts) == 2 else None
        for var in init.variables if init is not None else ():
            step = _step(stmt, var.key) if var.key in self.assigned and var.type.bits is not None else None
            if step is None or not var.exprs:
                self.declare(var, guards)
                continue
            start = self.term(var.exprs[-1], guards)
            iteration = self.symbol(f"{var.name}#{var.key}", SymbolKind.LOOP, var.name, var.type.value_range)
            stride = const(1) if step == 1 else self.term(step, guards) if isinstance(step, Expr) else None
            self.values[var.key] = _add(start, Term("*", (iteration, stride))) if stride is not None else None
            self.assigned.discard(var.key)
            inner = (*inner, Term("<=", (_ZERO, iteration)))
            counters = (*counters, iteration.name)
        for expr in stmt.exprs:
            if expr.stripped().kind is ExprKind.BINARY and expr.stripped().operator in _CONDITIONS:
                inner = (*inner, self.condition(expr, inner))
        self.uncounted += inner[len(guards) :]
        if stmt.body is not None:
            self.loop_body(stmt.body, inner, counters)

    def declare(self, var: Var, guards: tuple[Term, ...]) -> None:
        if var.is_shared and var.declarator == "array":
            self.values[var.key] = self.shared_array(var, guards)
            return
        # a `__shared__` scalar of a built-in type is followed (a struct's, a template's `T` not)
        if var.is_shared and var.declarator == "value" and var.element_type.canonical in BUILTIN_SCALARS:
            self.shared_scalars[var.key] = _Pointer(
                var.name, _ZERO, True, var.element_type.canonical, const(1), size=var.element_size or 0
            )
            return
        value = self.initial_value(var, guards) if var.exprs else None
        self.bind_fields(var)
        if var.key not in self.assigned and not var.bindings:
            self.values[var.key] = value
            if var.exprs:
                self.initializers[var.key] = var.exprs[-1]
        elif var.exprs:  # a pointer into a shared array that is moved later: not followed
            self.escape(var.exprs[-1], value, guards)

    def initial_value(self, var: Var, guards: tuple[Term, ...]) -> _Value:
        """The value of `var`'s initializer, walked once (a walk may keep more of it)."""
        return self.value(var.exprs[-1], guards)

    def shared_scalar(self, expr: Expr) -> _Pointer | None:
        """The one-element array a `__shared__` scalar (`__shared__ float s_inv;`) is, when
        `expr` names one."""
        node = expr.stripped()
        if node.kind is ExprKind.REF and node.ref is not None:
            return self.shared_scalars.get(node.ref.key)
        return None

    def shared_array(self, var: Var, guards: tuple[Term, ...]) -> _Pointer:
        """A `__shared__` array: its element type, its length and the lengths of its rows when
        every dimension has a length the walk follows (`float smem[kPadded]`, `float
        tile[32][33]`) -- the outermost may be unwritten, `extern __shared__ char smem[]`'s,
        of a length the launch gives -- and its elements are scalars, halves or a template's
        `T`; none for an array of other structs (their members and operators may write it
        unseen)."""
        element = var.scalar_type.canonical
        known = element in BUILTIN_SCALARS or element in _HALVES or element.startswith("type-parameter")
        # clang lists the lengths innermost first, then nothing but a half type's default construction
        written = list(itertools.takewhile(lambda e: not e.is_construction, var.exprs))
        lengths = [self.value(e, guards) for e in reversed(written)]
        terms = [t for t in lengths if isinstance(t, Term)]
        followed = len(terms) == len(lengths) and not any(
            self.symbols[n].kind in _UNFOLLOWED for t in terms for n in symbol_names(t)
        )
        unwritten = len(written) == var.array_rank - 1  # `extern __shared__ float smem[]`
        if not known or not followed or not (unwritten or len(written) == var.array_rank):
            return _Pointer(var.name, _ZERO, shared=True)
        extent = None if unwritten else _product(terms)
        rows = tuple(terms if unwritten else terms[1:])
        one_dimensional = extent is not None and not rows
        return _Pointer(
            var.name,
            _ZERO,
            True,
            _unqualified(element),
            extent,
            size=var.scalar_size or 0,
            rows=rows,
            one_dimensional=one_dimensional,
        )


def _operator(call: Expr) -> str:
    """The operator an overloaded-operator call spells (`+=`; clang leaves the call unnamed
    in a template, its callee spelled by the operator), "" for another call."""
    if call.name.startswith("operator"):
        return call.name.removeprefix("operator")
    if call.name:
        return ""
    callee = next((c for c in call.children if c.kind is ExprKind.REF and not c.name), None)
    return "".join(t.spelling for t in callee.tokens) if callee is not None else ""


def _operands(call: Expr) -> list[Expr]:
    """An unresolved operator call's operands: its children but the callee, which clang
    leaves an unnamed reference spelled by the operator."""
    return [c for c in call.children if not (c.kind is ExprKind.REF and not c.name)]


def _operator_operands(call: Expr) -> list[Expr]:
    """A class's operator call's operands (the target and source of `a = b`, the object and
    index of `s[i]`): its children but the operator's reference."""
    return [c.stripped() for c in call.children if c.stripped().name != call.name]


def _member_axis(member: Expr) -> str:
    """The member a built-in's member expression names (`x` of `threadIdx.x`). clang gives it
    no name (a property), so it is read from the tokens: the one after the first `.`, as in
    a macro's body they run on past the expression (to the end of the macro's expansion)."""
    spellings = [token.spelling for token in member.tokens]
    return spellings[spellings.index(".") + 1] if "." in spellings[:-1] else ""


def _member_object(call: Expr) -> Expr | None:
    """`vec` of `vec.load(ptr, i)`."""
    callee = call.children[0].stripped() if call.children else None
    return callee.children[0] if callee is not None and callee.kind is ExprKind.MEMBER and callee.children else None


def _method_object(call: Expr) -> DeclRef | None:
    """The variable or parameter whose method `call` calls (`N` of `N.unwrap()`)."""
    return call.children[0].stripped().member_base if call.children else None


def _all(terms: tuple[Term, ...]) -> Term:
    return terms[0] if len(terms) == 1 else Term("and", terms)


def _may_wrap(expr: Expr) -> bool:
    """Whether an integer expression may not hold its mathematical value: a sum, difference
    or product in its type, or a conversion to fewer than 64 bits from a wider or unknown
    type, or between signedness."""
    if expr.type.bits is None:
        return False
    if expr.kind is ExprKind.BINARY:
        return expr.operator in ("+", "-", "*")
    if expr.kind not in (ExprKind.CAST, ExprKind.IMPLICIT) or not expr.children:
        return False
    inner = expr.children[-1].type
    if expr.type.bits >= 64 and inner.is_signed is not False:
        return False
    return inner.bits is None or inner.bits > expr.type.bits or inner.is_signed != expr.type.is_signed


def _exact_size(text: str, value: ConstExpr) -> bool:
    """A matcher's dim or stride as the contract holds it: a constant, a `SymbolicSize` or `-1`
    (not an expression, nor a launcher's template parameter)."""
    return (text.isidentifier() and value.op != "param") or (value.op == "int" and value.value >= -1)


def _asserted(expr: Expr) -> Expr | None:
    """The condition of an `assert(c)` (`c ? (void)0 : __assert_fail(...)`, a launcher's
    `CHECK_HOST(c)`: `c ? (void)0 : PanicThrower() & ...`): a conditional whose else branch
    calls a function that fails, traps, aborts or raises; or of a launcher's
    `RuntimeCheck(c, ...)`."""
    node = expr.stripped()
    if is_runtime_check(node):  # it throws where its condition fails
        return checked_condition(node)
    if node.kind is not ExprKind.CONDITIONAL or len(node.children) != 3:
        return None
    fails = any(
        call.kind is ExprKind.CALL and any(word in call.name.lower() for word in _FAILING_CALLS)
        for call in node.children[2].walk()
    )
    return node.children[0] if fails else None


def _empty(stmt: Stmt | None) -> bool:
    """Whether `stmt` is an empty block (`{}`, also as `[[likely]] {}`)."""
    if stmt is None:
        return False
    inner = stmt.live_stmts()
    return not inner if stmt.kind is StmtKind.BLOCK else len(inner) == 1 and _empty(inner[0])


def _fails(stmt: Stmt) -> bool:
    """Whether `stmt` is an expression that raises or stops (`host::Error() << "..."`,
    `Panic(...)`, `__trap()`): a call or construction whose name says so."""
    names = (call.name.lower() for expr in stmt.exprs for call in expr.walk() if call.kind is ExprKind.CALL)
    return stmt.kind is StmtKind.EXPR and any(word in name for name in names for word in _FAILING_CALLS)


def _among(term: Term, terms: list[Term] | tuple[Term, ...]) -> bool:
    """Whether `term` is one of `terms` (the same object, not an equal one)."""
    return any(term is other for other in terms)


def _leaves(stmt: Stmt) -> bool:
    """Whether `stmt` always ends in `return`, `continue` or `break`."""
    if stmt.kind in _EXITS:
        return True
    return stmt.kind is StmtKind.BLOCK and bool(stmt.live_stmts()) and _leaves(stmt.live_stmts()[-1])


def _step(stmt: Stmt, key: int) -> Expr | int | None:
    """How a `for`'s increment steps counter `key` up: 1 (`++i`, `i++`), the expression of
    `i += step`; None when it does otherwise or the body writes the counter too."""
    steps = [e.stripped() for e in stmt.exprs if _writes(e, key)]
    if len(steps) != 1 or (stmt.body is not None and any(_writes(e, key) for e in stmt.body.expressions())):
        return None
    step = steps[0]
    if step.kind is ExprKind.UNARY and step.operator in ("++", "x++"):
        return 1
    if step.kind is ExprKind.BINARY and step.operator == "+=" and len(step.children) == 2:
        return step.children[1]
    return None


def _writes(expr: Expr, key: int) -> bool:
    return any(_written_local(node) == key for node in expr.walk())


def _written_local(node: Expr) -> int | None:
    """The local an assignment or increment writes (its `DeclRef.key`), else None."""
    writes = (node.kind is ExprKind.BINARY and node.operator in _ASSIGNMENTS) or (
        node.kind is ExprKind.UNARY and node.operator in _INCREMENTS
    )
    target = node.children[0].stripped() if writes and node.children else None
    if target is None or target.kind is not ExprKind.REF or target.ref is None:
        return None
    return target.ref.key


def _assigned_locals(body: Stmt) -> set[int]:
    """The locals written after their declaration (their value is not followed)."""
    return {key for node in body.expressions() if (key := _written_local(node)) is not None}


def _assigned_values(body: Stmt) -> dict[int, list[Expr]]:
    """The values each local is assigned after its declaration (`x = v`, `x += v`: `v`), by
    `DeclRef.key`."""
    values: dict[int, list[Expr]] = {}
    for node in body.expressions():
        key = _written_local(node)
        if key is not None and node.kind is ExprKind.BINARY and len(node.children) == 2:
            values.setdefault(key, []).append(node.children[1])
    return values


def _product(terms: Sequence[Term]) -> Term:
    product = terms[0]
    for term in terms[1:]:
        product = Term("*", (product, term))
    return product


def _add(left: Term, right: Term) -> Term:
    if left == _ZERO:
        return right
    return left if right == _ZERO else Term("+", (left, right))


def _pointer_arithmetic(op: str, left: _Value, right: _Value) -> _Value:
    if op in ("+", "-") and isinstance(left, _Pointer) and isinstance(right, Term):
        return left.moved(right, op)
    if op == "+" and isinstance(right, _Pointer) and isinstance(left, Term):
        return right.moved(left)
    return None


def _arithmetic(tokens: list[str], leaf: Callable[[str], Term | None]) -> Term | None:
    """The term `tokens` spell with `+ - * /` and parentheses over the leaves `leaf` gives
    (a literal, a name), consumed from `tokens`; None when they spell anything else."""

    def operation(operators: tuple[str, ...], operand: Callable[[], Term | None]) -> Term | None:
        left = operand()
        while left is not None and tokens and tokens[0] in operators:
            op = tokens.pop(0)
            right = operand()
            left = Term(op, (left, right)) if right is not None else None
        return left

    def factor() -> Term | None:
        token = tokens.pop(0) if tokens else ")"
        if token != "(":
            return leaf(token) if token != ")" else None
        inner = operation(("+", "-"), product)
        return inner if inner is not None and tokens[:1] == [")"] and tokens.pop(0) else None

    def product() -> Term | None:
        return operation(("*", "/"), factor)

    term = operation(("+", "-"), product)
    return term if not tokens else None


def _type_parameter(spelling: str) -> str:
    """The one name a type spells besides its qualifiers (`T` of `const T *`); "" for another."""
    names = [w for w in re.findall(r"\w+", spelling) if w not in _QUALIFIERS]
    return names[0] if len(names) == 1 else ""


def _unqualified(spelling: str) -> str:
    """A type's spelling without its top-level `const`/`volatile` (an access through a
    `const float*` reads the array's `float`)."""
    words = spelling.split(" ")
    while words and words[0] in ("const", "volatile"):
        words = words[1:]
    return " ".join(words)


def _to_unsigned(operand: Expr) -> int | None:
    """The width of the unsigned type a signed value is converted to on its way to being
    `operand` (the conversion nearest the value), None where it is not."""
    bits = None
    node = operand
    while node.kind in (ExprKind.PAREN, ExprKind.IMPLICIT, ExprKind.CAST) and node.children:
        inner = node.children[-1]
        if node.kind is not ExprKind.PAREN and node.type.is_signed is False and inner.type.is_signed:
            bits = node.type.bits
        node = inner
    return bits


def _bit_operation(op: str, left: Term, right: Term) -> Term | None:
    """Shifts and masks by constants (`x & (kSplits - 1)` of a constant local too), as arithmetic."""
    amount = _constant(right)
    if amount is None or not 0 <= amount < 63:
        return None
    if op == "<<":
        return Term("*", (left, const(2**amount)))
    if op == ">>":
        return Term("/", (left, const(2**amount)))
    if op == "&" and amount > 0 and amount & (amount + 1) == 0:
        return Term("%", (left, const(amount + 1)))
    return None


def _power_below(mask: Term) -> Term | None:
    """2^k where `mask` is `(1 << k) - 1` of a shift by a scalar (`shift`), else None."""
    if mask.op != "-" or mask.args[1] != const(1) or mask.args[0].op != "*":
        return None
    one, power = mask.args[0].args
    is_power = power.op == "+" and power.args[0].op == "sym" and power.args[0].name.startswith(_POWER)
    return power if one == const(1) and is_power else None


def _constant(term: Term) -> int | None:
    """The value of a sum, difference or product of constants, None for another term."""
    if term.op == "const":
        return term.value
    if term.op not in ("+", "-", "*"):
        return None
    left, right = (_constant(a) for a in term.args)
    if left is None or right is None:
        return None
    return left + right if term.op == "+" else left - right if term.op == "-" else left * right


def _spelled(expr: Expr) -> str:
    """An expression as written, its tokens joined (a space only between two words)."""
    text = ""
    for token in expr.tokens:
        if text and _is_word(text[-1]) and _is_word(token.spelling[0]):
            text += " "
        text += token.spelling
    return text


def _is_word(character: str) -> bool:
    return character.isalnum() or character == "_"


def expr_text(base: str, offset: Term) -> str:
    return f"{base}[{render(offset)}]"


def render(term: Term) -> str:
    """A term as C-like text (for messages)."""
    if term.op == "const":
        return str(term.value)
    if term.op == "sym":
        return term.name
    if term.op in _ARITHMETIC or term.op in ("<", "<=", "==", "!="):
        return f"({render(term.args[0])} {term.op} {render(term.args[1])})"
    return f"{term.op}({', '.join(render(a) for a in term.args)})"


def symbolic_accesses(function: Function, threads: ThreadDependence) -> list[SymbolicAccess]:
    """A kernel's global accesses, and its accesses of shared arrays (`threads` knows which
    calls are barriers)."""
    return kernel_terms(function, threads)[0]


def kernel_terms(
    function: Function, threads: ThreadDependence, constants: Constants | None = None
) -> tuple[list[SymbolicAccess], list[SymbolicProduct], list[SymbolicBarrier]]:
    """A kernel's recorded accesses (`symbolic_accesses`), its multiplications by a block
    index or grid dimension, and its block-wide barriers (`constants`: the unit's compile-time
    values, `_Walk.constants`)."""
    body = function.body
    if body is None:
        return [], [], []
    walk = _Walk(
        function,
        threads,
        threads.locals(body),
        assigned=_assigned_locals(body),
        assignments=_assigned_values(body),
        constants=constants,
    )
    for param in function.params:
        walk.values[param.key] = walk.received(param.name, param.type)
    walk.block_limit = walk.launch_bound()
    walk.statement(body, ())
    return walk.accesses, walk.products, walk.barriers


@dataclass
class _LauncherWalk(_Walk):
    """A launcher's body: its symbolic sizes, its checks and, at each launch, the grid, the
    block and the kernel arguments as terms over them."""

    # launch span -> index: the launcher's, and those of the file's other functions, which a
    # helper it calls runs (`launching_helper`)
    launches: dict[tuple[int, int], int] = field(default_factory=dict)
    launch_argument_spans: dict[int, tuple[Span, ...]] = field(default_factory=dict)  # by index
    launch_tensors: dict[int, tuple[LaunchTensorArgument, ...]] = field(default_factory=dict)  # by index
    # by index: the names its kernels' template arguments hold (`k<kThreads>`): the contract
    # holds those that are the launcher's own parameters, though its walk may never meet them
    launch_parameters: dict[int, frozenset[str]] = field(default_factory=dict)
    handoffs: tuple[DataHandOff, ...] = ()  # the file's data pointers handed to its functions
    caller: str = ""  # the launcher's qualified name
    # In a helper walked in place: the launcher's tensors its names stand for, by the names
    # its launches give them (a `TensorView` parameter's name, `#k` for data pointer parameter k)
    tensor_names: dict[str, str] = field(default_factory=dict)
    # ... and its compile-time parameters, as the call gives them (`LaunchContract.template_values`)
    template_bindings: dict[str, Term] = field(default_factory=dict)
    chains: tuple[MatcherChain, ...] = ()
    records: dict[int, dict[str, Term]] = field(default_factory=dict)  # params-struct locals' fields
    dim3s: dict[int, tuple[Term | None, Term | None, Term | None]] = field(default_factory=dict)  # dim3 locals
    # a `cudaLaunchConfig_t` local's grid and block (`config.gridDim = n;`), by (local, field)
    config_dims: dict[tuple[int, str], tuple[Term | None, Term | None, Term | None]] = field(default_factory=dict)
    contracts: list[LaunchContract] = field(default_factory=list)
    fits: list[Term] = field(default_factory=list)  # each integer sum, product, conversion keeps its value
    # the integer locals never assigned after their declaration, by name: a matcher's dim
    # that names one (`TensorMatcher({B, hidden_size})`) is its value
    integers: dict[str, Term] = field(default_factory=dict)

    def dim(self, name: str) -> Term:
        return self.symbol(f"dim:{name}", SymbolKind.DIM, name, (1, _DIM_LIMIT))

    def own_parameter(self, name: str) -> Term | None:
        """A compile-time integer parameter of the launcher (`launcher_parameter`); None in a
        helper walked in place (its parameters are what the call gives them,
        `template_bindings`)."""
        return None if self.helpers else self.launcher_parameter(name)

    def launcher_parameter(self, name: str) -> Term | None:
        """A compile-time integer parameter of the launcher (of its function template or of the
        class template it is a member of: `kThreads` of `Gate<kThreads>::run`) as a
        `SymbolKind.TEMPLATE` symbol, the one every use of the name is; None for any other name."""
        types = {**self.function.class_value_template_params, **self.function.value_template_params}
        type_ = types.get(name)
        return self.symbol(name, SymbolKind.TEMPLATE, name, type_.value_range) if type_ is not None else None

    def reference(self, expr: Expr, guards: tuple[Term, ...]) -> _Value:
        ref = expr.ref
        own = None
        if ref is not None and ref.kind is DeclKind.TEMPLATE_PARAMETER and expr.value is None:
            own = self.own_parameter(ref.name)
        return own if own is not None else super().reference(expr, guards)

    def template_value(self, value: ConstExpr) -> Term | None:
        """As a kernel's, the launcher's own compile-time parameters (`constexpr int kBlock =
        kWarps * 32;` of a launcher over `kWarps`) `SymbolKind.TEMPLATE` symbols."""
        own = self.own_parameter(value.name) if value.op == "param" else None
        return own if own is not None else super().template_value(value)

    def value(self, expr: Expr, guards: tuple[Term, ...]) -> _Value:
        if parameter := expr.sized_type_parameter:  # `kAlignment / sizeof(T)` in a launcher over `T`
            name = f"sizeof({parameter})"
            return self.symbol(name, SymbolKind.ELEMENT_SIZE, name, (1, _MAX_ELEMENT_SIZE))
        found = super().value(expr, guards)
        if isinstance(found, Term) and found.op not in _KEPT and _may_wrap(expr):
            low, high = expr.type.value_range  # a witness where the launcher's integers wrap would be wrong
            fits = Term("and", (Term("<=", (const(low), found)), Term("<=", (found, const(high)))))
            # where the conversion runs: under the guards of its path
            self.fits.append(Term("or", (Term("not", (_all(guards),)), fits)) if guards else fits)
            # the value as the launcher computes it, wrapped into its type past its top: equal
            # to `found` where the fit holds, still within the type where it does not (a proof
            # without the fits, KC112's, then sees `static_cast<uint32_t>(n)` below 2^32)
            return _wrapped(found, low, high)
        return found

    def call(self, expr: Expr, guards: tuple[Term, ...]) -> _Value:
        index = self.launches.get(_written_extent(expr))
        if index is not None:
            self.launch(expr, index, guards)
            return None
        helper = self.launching_helper(expr)
        if helper is not None:
            self.launch_through(expr, helper, guards)
            return self.opaque(expr) if expr.type.bits is not None else None
        name, arguments = expr.name, expr.arguments
        operands = _operator_operands(expr) if name == "operator=" else []
        if len(operands) == 2 and self.config_of(operands[0]) is not None:  # `config.gridDim = n;`: dim3's `=`
            self.assign(operands[0], operands[1], guards)
            return None
        if name == "unwrap" and (size := self.symbolic_size(expr)) is not None:
            return self.dim(size)
        if name in ("size", "stride") and len(arguments) == 1 and (dims := self.tensor_dims(expr, name)) is not None:
            position = arguments[0].value
            return dims[position] if position is not None and 0 <= position < len(dims) else self.opaque(expr)
        if name == "operator[]" and (entry := self.shape_entry(expr)) is not None:
            return entry
        if name == "is_contiguous" and not arguments and (contiguous := self.contiguous(expr)) is not None:
            return contiguous
        if name in _DIV_CEIL_CALLS and len(arguments) == 2:
            a, b = (self.term(argument, guards) for argument in arguments)
            return Term("/", (Term("-", (Term("+", (a, b)), const(1))), b))
        if _SM_COUNT_CALL.search(name):  # (its type may be a template's undeduced `auto`)
            return self.symbol("sm_count", SymbolKind.SCALAR, "the SM count", (1, _MAX_SMS))
        if _BLOCKS_PER_SM_CALL.search(name or callee_name(expr)):  # (a template's call names no callee)
            text = "the blocks per SM"
            return self.symbol(f"blocks_per_sm{len(self.symbols)}", SymbolKind.SCALAR, text, (1, _MAX_BLOCKS_PER_SM))
        return super().call(expr, guards)

    def launching_helper(self, call: Expr) -> Function | None:
        """The host function of the file a call runs, when its body launches a kernel (a
        launch of its in `launches`) and the call hands it a tensor of the launcher's (as a
        `TensorView`, or its data pointer): walked in place, its launches get the
        launcher's contract too (`LaunchContract.caller`)."""
        helper = self.in_sight(call) if self.chains else None  # (no tensor verified: none to hand on)
        if helper is None or helper.body is None:
            return None
        span = helper.body.span
        if not any(span.start <= start and end <= span.end for start, end in self.launches):
            return None
        return helper if self.handed_tensors(call, helper) and self.same_types(call, helper) else None

    def same_types(self, call: Expr, helper: Function) -> bool:
        """Whether the call binds each type parameter of the helper to the launcher's type
        parameter of its name (`launch<T, 4>` in a launcher over `T`): its kernels' `sizeof(T)`
        is then the launcher's, as the contract counts it."""
        for position, name in enumerate(helper.template_params):
            if name in helper.value_template_params:
                continue
            given = call.type_arguments[position] if position < len(call.type_arguments) else None
            if given is None or _type_parameter(given.spelling) != name:
                return False
        return True

    def helper_template_values(self, call: Expr, helper: Function) -> dict[str, Term]:
        """The helper's compile-time parameters the call gives a value (`launch<T, 4>`, `<T,
        kMaxVec>` of a launcher's `16 / sizeof(T)`), as terms over the launcher's `sizeof(T)`
        (a launcher's own compile-time parameter is its caller's to pick: none)."""
        callee = call.children[0].stripped() if call.children else None
        given = self.constants.template_args(callee) if self.constants is not None and callee is not None else None
        values = {}
        for name, value in zip(helper.template_params, given or ()):
            if name in helper.value_template_params and (term := const_term(value, self.launcher_constant)) is not None:
                values[name] = term
        return values

    def launcher_constant(self, value: ConstExpr) -> Term | None:
        """A template parameter a compile-time value of the launcher names: `sizeof(T)` of its
        type parameter, or (in a helper walked in place) a compile-time parameter the call
        gave a value."""
        if value.op == "sizeof":
            name = f"sizeof({value.name})"
            return self.symbol(name, SymbolKind.ELEMENT_SIZE, name, (1, _MAX_ELEMENT_SIZE))
        return self.template_bindings.get(value.name) if self.helpers else None

    def handed_tensors(self, call: Expr, helper: Function) -> dict[str, str]:
        """The launcher's tensors a call hands `helper`, by the names the helper's launches
        give them: a `TensorView` parameter's name and `#k` (its position), `#k` for a data
        pointer it receives as argument k (one tensor's alone, of a `DataHandOff` of the
        calling function)."""
        handed = {}
        for position, (argument, param) in enumerate(zip(call.arguments, helper.params)):
            tensor = self.tensor_argument(argument)
            if tensor is not None and is_tensor_type(param.type):
                handed[f"#{position}"] = handed[param.name] = tensor
        calling = self.helpers[-1] if self.helpers else self.function.usr
        pointers: dict[int, set[str]] = {}
        for handoff in self.handoffs:
            if handoff.function == calling and handoff.callee_usr == helper.usr and not handoff.field:
                pointers.setdefault(handoff.argument, set()).add(handoff.tensor)
        for position, tensors in pointers.items():
            named = {self.launcher_tensor(t) for t in tensors}
            if len(named) == 1 and (tensor := named.pop()) is not None:
                handed[f"#{position}"] = tensor
        return handed

    def tensor_argument(self, argument: Expr) -> str | None:
        """The launcher's tensor a `TensorView` argument names (a copy of one too)."""
        node = argument.uncast()
        if node.kind is ExprKind.CALL and node.is_construction and len(node.children) == 1:
            node = node.children[0].uncast()
        ref = node.ref if node.kind is ExprKind.REF else None
        if ref is None or ref.kind not in (DeclKind.PARAMETER, DeclKind.VARIABLE) or not is_tensor_type(ref.type):
            return None
        return self.launcher_tensor(ref.name)

    def launcher_tensor(self, name: str) -> str | None:
        """The launcher's tensor a name of the function being walked stands for (`#k`: its
        parameter k's)."""
        if self.helpers:
            return self.tensor_names.get(name)
        position = int(name[1:]) if name[:1] == "#" and name[1:].isdigit() else None
        if position is None:
            return name
        return self.function.params[position].name if position < len(self.function.params) else None

    def launch_through(self, call: Expr, helper: Function, guards: tuple[Term, ...]) -> None:
        """Walk a launching helper where the launcher calls it (`inline`), its names of
        tensors bound to the launcher's."""
        outer = (self.tensor_names, self.template_bindings)
        self.tensor_names, self.template_bindings = (
            self.handed_tensors(call, helper),
            self.helper_template_values(call, helper),
        )
        self.inline(call, helper, guards)
        self.tensor_names, self.template_bindings = outer

    def statement(self, stmt: Stmt, guards: tuple[Term, ...]) -> Term | None:
        """As a kernel's, and `N.set_value(v)` of a `SymbolicSize`: the matchers after it
        accept `v` alone, as a `RuntimeCheck(N == v)` would (an exit where it differs)."""
        node = stmt.exprs[0].stripped() if stmt.kind is StmtKind.EXPR and stmt.exprs else None
        if node is not None and node.kind is ExprKind.CALL and node.name == "set_value" and len(node.arguments) == 1:
            size = _method_object(node)
            value = self.value(node.arguments[0], guards)
            if size is not None and "SymbolicSize" in size.type.canonical and isinstance(value, Term):
                return Term("!=", (self.dim(size.name), value))
        return super().statement(stmt, guards)

    def symbolic_size(self, call: Expr) -> str | None:
        """The `SymbolicSize` local whose `unwrap()` `call` is."""
        ref = _method_object(call)
        return ref.name if ref is not None and "SymbolicSize" in ref.type.canonical else None

    def tensor_dims(self, call: Expr, query: str = "size") -> tuple[Term, ...] | None:
        """The dims (`query` "stride": the strides) of the verified tensor whose `size(i)`
        (`stride(i)`) `call` is."""
        ref = _method_object(call)
        if ref is None:
            return None
        return dict(self.extents() if query == "size" else self.strides()).get(ref.name)

    def shape_entry(self, call: Expr) -> Term | None:
        """`x.shape()[i]` (`x.strides()[i]`) of a verified tensor: its dim (stride) `i`, as
        `x.size(i)` is."""
        operands = _operator_operands(call)
        if len(operands) != 2 or operands[0].kind is not ExprKind.CALL:
            return None
        query = _SHAPE_VIEWS.get(operands[0].name)
        dims = self.tensor_dims(operands[0], query) if query is not None else None
        position = operands[1].value
        return dims[position] if dims is not None and position is not None and 0 <= position < len(dims) else None

    def contiguous(self, call: Expr) -> Term | None:
        """`x.is_contiguous()` of a verified tensor: each stride the product of the dims
        after it, but a dim of 1's (the test skips those)."""
        dims, strides = self.tensor_dims(call), self.tensor_dims(call, "stride")
        if not dims or strides is None:
            return None
        expected, held = const(1), []
        for dim, stride in reversed(tuple(zip(dims, strides))):
            held.append(Term("or", (Term("==", (dim, const(1))), Term("==", (stride, expected)))))
            expected = Term("*", (dim, expected))
        return _all(tuple(held))

    def aligned_strides(self) -> Iterator[Term]:
        """What `ensure_alignment(w)` checks of a verified tensor's strides besides its data
        pointer (sgl_kernel/tensor.h): each but the innermost, of a dim other than 1, a
        multiple of `w` bytes."""
        sizes = dict(self.element_sizes())
        strides = dict(self.strides())
        for chain in self.chains:
            dims = tuple(self.sizes(chain, chain.dims, chain.dim_values, "size"))
            for tensor in chain.verified:
                request, size = tensor.alignment, sizes.get(tensor.name)
                if request is None or request.value.op != "int" or request.value.value <= 0 or size is None:
                    continue
                alignment = const(request.value.value)
                for dim, stride in zip(dims[:-1], strides.get(tensor.name, ())):
                    in_bytes = Term("*", (stride, const(size)))
                    aligned = Term("==", (Term("%", (in_bytes, alignment)), _ZERO))
                    yield Term("or", (Term("==", (dim, const(1))), aligned))

    def initial_value(self, var: Var, guards: tuple[Term, ...]) -> _Value:
        """A `dim3` local's axes and a params-struct local's fields are kept instead (the
        struct itself has no value the walk follows)."""
        initializer = var.exprs[-1]
        if "dim3" in var.type.canonical and var.key not in self.assigned:
            self.dim3s[var.key] = self.axes(initializer, guards)
            return None
        if _LAUNCH_CONFIG_TYPE in var.type.canonical and (node := initializer.stripped()).kind is ExprKind.INIT_LIST:
            for element, name in initializer_list_fields(node, "", record_fields(node)):
                if name in _CONFIG_DIMS:
                    self.config_dims[(var.key, name)] = self.axes(element, guards)
            return None
        fields = self.record_value(initializer, guards)
        if fields is None:
            value = super().initial_value(var, guards)
            if isinstance(value, Term) and var.type.bits is not None and var.key not in self.assigned:
                self.integers[var.name] = value
            return value
        self.records[var.key] = fields
        return None

    def record_value(self, expr: Expr, guards: tuple[Term, ...]) -> dict[str, Term] | None:
        """The fields of a params struct an initializer list fills (`Params{.n = n, ...}`), or a
        params-struct local's."""
        node = expr.stripped()
        while node.kind in (ExprKind.CAST, ExprKind.CALL) and len(node.children) == 1:
            node = node.children[0].stripped()  # `Params{...}`: a functional cast or construction
        if node.kind is ExprKind.REF and node.ref is not None:
            return self.records.get(node.ref.key)
        if node.kind is not ExprKind.INIT_LIST:
            return None
        fields = {}
        for element, name in initializer_list_fields(node, "", record_fields(node)):
            value = self.value(element, guards)
            if name and isinstance(value, Term):
                fields[name] = value
        return fields

    def assign(self, target: Expr, source: Expr, guards: tuple[Term, ...]) -> None:
        stripped = target.stripped()
        fields = self.record_of(stripped)
        if fields is not None:
            value = self.value(source, guards)
            if isinstance(value, Term):
                fields[stripped.name] = value
            return
        config = self.config_of(stripped)
        if config is not None:
            self.config_dims[(config, stripped.name)] = self.axes(source, guards)
            return
        super().assign(target, source, guards)

    def config_of(self, member: Expr) -> int | None:
        """The `cudaLaunchConfig_t` local (`DeclRef.key`) whose grid or block a member
        expression names (`config.gridDim`)."""
        base = member.member_base
        if member.name not in _CONFIG_DIMS or base is None:
            return None
        return base.key if _LAUNCH_CONFIG_TYPE in base.type.canonical else None

    def member(self, expr: Expr, guards: tuple[Term, ...]) -> _Value:
        """A params-struct local's field read (`(params.n_vecs + k - 1) / k`): the value kept."""
        fields = self.record_of(expr)
        return fields.get(expr.name) if fields is not None else super().member(expr, guards)

    def record_of(self, member: Expr) -> dict[str, Term] | None:
        """The fields kept of the params-struct local a member expression names a field of."""
        base = member.member_base
        return self.records.get(base.key) if base is not None else None

    def lambda_escapes(self, lambda_: Expr, guards: tuple[Term, ...]) -> None:
        """A lambda that launches (`auto launch = [&](auto kernel, int64_t n) {...}`) is walked
        where it is written: its launch's grid and block are computed as written from the
        captured sizes. Its integer parameters are `PASSED` symbols: the calls pass values the
        walk does not tie to them (`numel / kVec` under a `head_dim % kVec` test), so a proof
        covers every value, and no witness sets one against a tensor's extent, which would
        break what the caller checked."""
        body = lambda_.lambda_body
        if body is not None and any(_written_extent(c) in self.launches for c in body.calls()):
            for param in lambda_.lambda_params:
                integer = not param.type.is_pointer and param.type.bits is not None
                self.values[param.key] = (
                    self.symbol(param.name, SymbolKind.PASSED, param.name, param.type.value_range)
                    if integer
                    else self.received(param.name, param.type)
                )
            self.statement(body, guards)
        super().lambda_escapes(lambda_, guards)

    def launch(self, call: Expr, index: int, guards: tuple[Term, ...]) -> None:
        dimensions = launch_dimensions(call)
        if dimensions is not None:
            grid, block = (self.axes(d, guards) for d in dimensions)
        else:  # `cudaLaunchKernelEx(&config, ...)`: what the launcher gave the config's fields
            config = launch_config(call)
            grid, block = (
                self.config_dims.get((config.key, f), (None,) * 3) if config else (None,) * 3 for f in _CONFIG_DIMS
            )
        arguments: list[Term | None] = []
        fields: list[tuple[int, str, Term]] = []
        by_extent = {_written_extent(c): c for c in call.children}
        for position, span in enumerate(self.launch_argument_spans[index]):
            argument = by_extent.get((span.start, span.end))
            record = self.record_value(argument, guards) if argument is not None else None
            fields += [(position, name, term) for name, term in (record or {}).items()]
            value = self.value(argument, guards) if argument is not None and record is None else None
            arguments.append(value if isinstance(value, Term) else None)
        extents, strides = tuple(self.extents()), tuple(self.strides())
        guards = (*guards, *self.aligned_strides())
        terms = [*guards, *self.fits, *(t for t in (*grid, *block, *arguments) if t is not None)]
        terms += [t for _, _, t in fields] + [d for _, dims in (*extents, *strides) for d in dims]
        template_values = tuple(self.template_bindings.items()) if self.helpers else ()
        terms += [t for _, t in template_values]
        terms += [p for name in sorted(self.launch_parameters.get(index, ())) if (p := self.own_parameter(name))]
        named = sorted({n for term in terms for n in symbol_names(term)})
        # in a helper walked in place: the launcher's tensors its launch carries
        carried = tuple(
            replace(argument, tensor=self.tensor_names[argument.tensor])
            for argument in self.launch_tensors.get(index, ())
            if argument.tensor in self.tensor_names
        )
        if self.helpers and not carried:
            return  # hands on no tensor of the launcher's: the helper's own contract tells all
        self.contracts.append(
            LaunchContract(
                launch=index,
                guards=guards,
                fits=tuple(self.fits),
                symbols=tuple(self.symbols[n] for n in named),
                grid=grid,
                block=block,
                arguments=tuple(arguments),
                fields=tuple(fields),
                extents=extents,
                strides=strides,
                element_sizes=tuple(self.element_sizes()),
                element_types=tuple(self.element_types()),
                exact=tuple(self.exact_tensors()),
                caller=self.caller if self.helpers else "",
                carried=carried if self.helpers else (),
                template_values=template_values,
            )
        )

    def axes(self, expr: Expr, guards: tuple[Term, ...]) -> tuple[Term | None, Term | None, Term | None]:
        """A launch dimension's x, y and z: an integer (the x axis), a `dim3` built in place
        (`dim3(x, y)`, `{x, y}`: 1 for each axis not given) or held by a local; None for
        each axis of anything else."""
        node = expr.uncast()
        if node.type.bits is not None:
            value = self.value(node, guards)
            return (value if isinstance(value, Term) else None, const(1), const(1))
        if node.kind is ExprKind.REF and node.ref is not None:
            return self.dim3s.get(node.ref.key, (None, None, None))
        if node.kind is ExprKind.INIT_LIST:
            parts = node.children
        elif node.kind is ExprKind.CALL and node.is_construction:
            parts = node.arguments
            if len(parts) == 1 and parts[0].uncast().type.bits is None:
                return self.axes(parts[0], guards)  # a copy of another dim3
        else:
            return (None, None, None)
        # an argument with no tokens is a default one: dim3's are 1
        values = [self.value(part, guards) if part.tokens else const(1) for part in parts[:3]]
        terms = [v if isinstance(v, Term) else None for v in values] + [const(1)] * (3 - len(values))
        return terms[0], terms[1], terms[2]

    def extents(self) -> Iterator[tuple[str, tuple[Term, ...]]]:
        """Each verified tensor's dims: the launcher's `SymbolicSize`s by name, its
        compile-time constants and parameters, and a size of its own for any other (`-1`: one
        size for every tensor the chain verifies, bound by the first)."""
        for chain in self.chains:
            dims = tuple(self.sizes(chain, chain.dims, chain.dim_values, "size"))
            for tensor in chain.verified:
                yield tensor.name, dims

    def sizes(
        self, chain: MatcherChain, texts: tuple[str, ...], values: tuple[ConstExpr, ...], query: str
    ) -> Iterator[Term]:
        """A chain's dims (`query` "size") or strides ("stride") as terms."""
        first = chain.verified[0].name if chain.verified else ""
        for position, (text, value) in enumerate(zip(texts, values)):
            if value.op == "int" and value.value >= 0:
                yield const(value.value)
            elif text.isidentifier():
                # (a dim the launcher's own parameter spells, `{R, kCopies}`: that parameter's
                # one symbol, the value the launch's `k<kCopies>` takes too)
                parameter = self.launcher_parameter(text) if value.op == "param" else None
                yield self.integers.get(text) or parameter or self.dim(text)
            else:
                yield self.dim(f"{first}.{query}({position})")

    def strides(self) -> Iterator[tuple[str, tuple[Term, ...]]]:
        """Each verified tensor's strides in elements: those of its `with_strides` (as its
        dims are, a stride from 1 up for `-1`), or those of its contiguous layout (the
        product of the dims after each)."""
        for chain in self.chains:
            dims = tuple(self.sizes(chain, chain.dims, chain.dim_values, "size"))
            if len(chain.strides) == len(dims):
                strides = tuple(self.sizes(chain, chain.strides, chain.stride_values, "stride"))
            else:
                after = [const(1)]
                for dim in reversed(dims[1:]):
                    after.insert(0, Term("*", (dim, after[0])))
                strides = tuple(after)
            for tensor in chain.verified:
                yield tensor.name, strides

    def exact_tensors(self) -> Iterator[str]:
        """The verified tensors whose dims and strides are constants, `SymbolicSize`s or `-1`
        (`{static_cast<int64_t>(n)}` is a size the walk does not tie to `n`; `{N, kHeadDim}` of
        a launcher's template parameter is a size its caller picks within limits its
        `static_assert`s state, which the contract does not hold)."""
        for chain in self.chains:
            written = zip((*chain.dims, *chain.strides), (*chain.dim_values, *chain.stride_values))
            if all(_exact_size(text, value) for text, value in written):
                yield from (tensor.name for tensor in chain.verified)

    def element_sizes(self) -> Iterator[tuple[str, int]]:
        """Each verified tensor's element size in bytes, where its matcher allows one dtype
        (or several of one size)."""
        for chain in self.chains:
            sizes = {d.size.value if d.size.op == "int" else 0 for d in chain.dtypes}
            if len(sizes) == 1 and (size := sizes.pop()) > 0:
                for tensor in chain.verified:
                    yield tensor.name, size

    def element_types(self) -> Iterator[tuple[str, str]]:
        """Each verified tensor whose matcher allows one dtype, a template type parameter of
        the launcher (`with_dtype<T>()`), with that parameter's name."""
        for chain in self.chains:
            if len(chain.dtypes) == 1 and chain.dtypes[0].size.op == "sizeof" and chain.dtypes[0].text.isidentifier():
                for tensor in chain.verified:
                    yield tensor.name, chain.dtypes[0].text


def _written_extent(expr: Expr) -> tuple[int, int]:
    """Where an expression is written, as a `Launch` records its call and arguments: inside a
    macro's arguments (`CUDA_CHECK(cudaLaunchKernelEx(...))`) each has its own place, where
    `span` gives every token the invocation's."""
    written = expr.written_span
    return written.start, written.end


@dataclass(frozen=True)
class LauncherScope:
    """What a launcher's walk reads of the rest of its file: every launch (by index in the
    model), for those of the helpers it calls, and the data pointers its functions hand on."""

    launches: dict[int, Launch]
    handoffs: tuple[DataHandOff, ...] = ()


def launch_contracts(
    function: Function,
    threads: ThreadDependence,
    scope: LauncherScope,
    chains: tuple[MatcherChain, ...],
    constants: Constants | None = None,
    name: str = "",
) -> list[LaunchContract]:
    """The contract at each launch of a launcher (`name`), over the symbolic sizes of its
    matcher `chains`, and at each launch of a helper it hands a tensor to (its
    `LaunchContract.caller`) (`constants`: as `kernel_terms`')."""
    body = function.body
    if body is None or not scope.launches:
        return []
    walk = _LauncherWalk(function, threads, threads.locals(body), assigned=_assigned_locals(body), constants=constants)
    launches = scope.launches
    walk.launches = {(launch.span.start, launch.span.end): index for index, launch in launches.items()}
    walk.launch_argument_spans = {index: launch.argument_spans for index, launch in launches.items()}
    walk.launch_tensors = {index: launch.tensors for index, launch in launches.items()}
    walk.launch_parameters = {
        index: frozenset(name for kernel in launch.kernels for arg in kernel.template_args for name in arg.free_names())
        for index, launch in launches.items()
    }
    walk.handoffs = scope.handoffs
    walk.caller = name
    walk.chains = chains
    for param in function.params:
        walk.values[param.key] = walk.received(param.name, param.type)
    walk.statement(body, ())
    return walk.contracts
