"""Tier 2: the range of the floating values that reach a narrowing conversion, over
`program.py`'s trees (KC405).

A narrowing conversion here is one that has no saturation of its own: a floating value
converted to an integer type (a cast or an implicit conversion: out of range, or NaN, is
undefined behaviour; an integer that `__float2int_rn` and its kin saturated to 32 bits,
narrowed further, wraps), `__nv_cvt_*_to_fp8*` called with `__NV_NOSAT` (a finite value
past the format's largest becomes NaN in e4m3, inf in e5m2), and PyTorch's `c10::Float8_*`
constructors, which do not saturate either. The CUDA fp8 and fp4 types' constructors
(`__nv_fp8_e4m3(x)`, `__nv_fp4_e2m1(x)`), CUTLASS's `float_e4m3_t` and `cvt...satfinite`
saturate: they are not narrowing conversions in this sense.

Each function of the checked file that runs on the device is walked in execution order
with an environment from local variables to a `Value`: the bounds known to hold, and what
is known to be *reachable* -- arbitrarily large magnitudes (an infinite bound) or NaN -- because
the value comes, through arithmetic that keeps it so, from a floating element read from
memory (a tensor's element: the contract bounds its shape, never its values). Clamps
(`fminf`/`fmaxf`, `min`/`max`, `clamp`, `__saturatef`, `tanhf`) bound it, constants and
integers have the range of their type, and anything the walk does not follow (an
unknown call, a member of a params struct, shared memory, a conditional testing the value,
inline assembly's other outputs) is unknown, which is never reported. Inline assembly that
loads from global, constant or generic memory (`ld.global.nc.f32`), or accumulates a matrix
product (`mma.sync`, `wgmma`), gives its floating outputs any value, as a read does: the one
reads memory, the other sums products of tensors' elements, which overflows to inf and
carries NaN. Its integer outputs keep their type's range, `ld.shared`/`ld.local` read what
the kernel put there itself, and an instruction that computes (`ex2.approx`, `max.f32`,
`cvt...sat`) is unknown, since it may bound. A value whose variables
(or whose memory) an earlier condition tests -- `if (isnan(v)) ...`, a loop bound, a
`?:` -- counts as guarded and is not reported either.

A call of a device function whose body is in sight -- defined in the checked file or in a
header of the project it includes, never a system header's (`Program.definition`, the door
the pointer-access summaries and the launch resolution use) -- is followed with its
arguments' values bound to its scalar parameters (`MAX_CALL_DEPTH` deep): a helper that
converts its parameter is reported at the conversion, with the call that feeds it a
tensor's element, and what it returns is the join of its `return`s; a reference parameter it
leaves holding memory's values (an MMA wrapper's `asm` accumulating into `float (&d)[4]`) makes
the caller's local it was handed hold them after the call. In a header's
function, the checked file's call that leads there stands for what happens inside: a read
of memory there comes from that call, and a conversion there of a value the file passes in
is reported at that call (one of what the function reads itself is the header's own
finding, when the header is checked). A lambda's body is walked where it is
written; inside a template, a call or operator clang leaves dependent is named by its
candidates (`cast<T>(x)`, `x * s`). A pointer or array parameter of a device function counts
as memory: what a helper reads through one, a caller's tensor or not, is any value.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field, replace

from ..model import FunctionKind, NarrowingConversion, Span
from .program import Expr, ExprKind, Function, Program, Stmt, StmtKind, TypeFacts

MAX_CALL_DEPTH = 3  # how deep a call of a device function of the file is followed
MAX_CANDIDATES = 4  # the functions one call may reach that are followed (overloads, specializations)
FLOATING = frozenset({"float", "double", "long double"})
FP8_MAX: dict[int | None, float] = {0: 448.0, 1: 57344.0}  # `__NV_E4M3`, `__NV_E5M2`: the largest finite value
# The fp8 conversions that take a saturation argument (second), then the format (third).
FP8_CONVERSIONS = frozenset(
    {
        "__nv_cvt_float_to_fp8",
        "__nv_cvt_double_to_fp8",
        "__nv_cvt_float2_to_fp8x2",
        "__nv_cvt_double2_to_fp8x2",
        "__nv_cvt_halfraw_to_fp8",
        "__nv_cvt_halfraw2_to_fp8x2",
        "__nv_cvt_bfloat16raw_to_fp8",
        "__nv_cvt_bfloat16raw2_to_fp8x2",
    }
)
NOSAT = 0  # `__NV_NOSAT` in `__nv_saturation_t`
# PyTorch's fp8 types: their constructors from float do not saturate (overflow is NaN or inf).
C10_FP8 = {
    "c10::Float8_e4m3fn": 448.0,
    "c10::Float8_e4m3fnuz": 240.0,
    "c10::Float8_e5m2": 57344.0,
    "c10::Float8_e5m2fnuz": 57344.0,
}
_MINIMA = frozenset({"fminf", "fmin", "fminl", "min", "__hmin", "__hmin2", "__nv_min"})
_MAXIMA = frozenset({"fmaxf", "fmax", "fmaxl", "max", "__hmax", "__hmax2", "__nv_max"})
_CLAMPS = frozenset({"clamp", "clampf"})
_ROUNDING = frozenset(
    {
        "roundf",
        "rintf",
        "nearbyintf",
        "truncf",
        "floorf",
        "ceilf",
        "round",
        "rint",
        "nearbyint",
        "trunc",
        "floor",
        "ceil",
    }
)
_ABSOLUTE = frozenset({"fabsf", "fabs", "abs", "__habs"})
_UNIT_RANGE = {"tanhf": (-1.0, 1.0), "tanh": (-1.0, 1.0), "sinf": (-1.0, 1.0), "cosf": (-1.0, 1.0)}
_EXPONENTIALS = frozenset({"expf", "exp", "exp2f", "exp2", "__expf", "exp10f"})
# Conversions between floating formats: the value is kept (its range fits every one of them).
_FLOAT_CONVERSIONS = frozenset(
    {
        "__half2float",
        "__bfloat162float",
        "__low2float",
        "__high2float",
        "__float2half",
        "__float2half_rn",
        "__float2bfloat16",
        "__float2bfloat16_rn",
        "__half2bfloat16",
        "__bfloat162half",
        "__ldg",
        "__ldcg",
        "__ldca",
        "__ldcs",
        "__ldlu",
        "__ldcv",
        "cast",  # sgl_kernel's `cast<To>(from)` between floating scalars and vectors
    }
)
# Float to 32/64-bit integer with saturation (NaN becomes 0): defined, but its result keeps
# the magnitude, which a narrower integer then wraps. Each with the integer type it saturates to.
_SATURATING_TO_INT = {
    prefix + rounding: TypeFacts(name, name, bits, signed, is_pointer=False)
    for prefix, name, bits, signed in (
        ("__float2int_", "int", 32, True),
        ("__float2uint_", "unsigned int", 32, False),
        ("__float2ll_", "long long", 64, True),
        ("__float2ull_", "unsigned long long", 64, False),
    )
    for rounding in ("rn", "rz", "rd", "ru")
}
# Build a vector of their arguments: it holds what they hold.
_VECTOR_BUILDERS = frozenset(
    {"make_float2", "make_float4", "make_double2", "__floats2half2_rn", "__floats2bfloat162_rn", "__halves2half2"}
)
_SHUFFLES = frozenset({"__shfl_sync", "__shfl_xor_sync", "__shfl_up_sync", "__shfl_down_sync"})
_LOAD_METHODS = ("load", "ld", "cast_load")  # a vector's method that fills it from a pointer
# Inline assembly whose floating outputs are memory's values: a load from global, constant or
# generic memory (not `ld.shared`/`ld.local`: what the kernel put there itself), and a matrix
# multiply-accumulate (sums of products of tensors' elements).
_ASM_LOAD = re.compile(r"\bld\b((?:\.[\w:]+)*)")
_ASM_MMA = re.compile(r"\b(?:mma\.sync|mma\.sp|wgmma\.mma_async|tcgen05\.mma)\b")
_OWN_SPACES = frozenset({"shared", "local"})
_NARROW_FLOATS = re.compile(r"fp8|fp4|e4m3|e5m2|e2m1")  # the byte-sized floating formats' type names


INF = math.inf


@dataclass(frozen=True)
class Value:
    """What is known of a value. `low`/`high`: a bound that holds, where an infinite one is a
    reachable side (the value can be arbitrarily large that way) and None is a side nothing
    is known of (a finite bound the walk cannot name: never reported); `nan`: NaN is
    reachable; `origin`: the read of memory that makes the value reachable at all (None for
    constants and integers); `deps`: the variables (and the pointers read) it is computed
    from, for the guards."""

    low: float | None = None
    high: float | None = None
    nan: bool = False
    origin: Span | None = None
    deps: frozenset[int] = frozenset()
    # An integer that `__float2int_*` made of a floating value: the only integer that is wild
    # (an integer read from memory has its type's range: narrowing it is KC111's business).
    saturated: bool = False

    @property
    def wild(self) -> bool:
        return self.origin is not None

    @property
    def two_sided(self) -> bool:
        return self.low == -INF and self.high == INF

    def with_deps(self, deps: frozenset[int]) -> Value:
        return replace(self, deps=self.deps | deps)


UNKNOWN = Value()


def _read(span: Span, key: int | None) -> Value:
    """An element read from memory at `span` (through the pointer or vector `key`): any value."""
    return Value(-INF, INF, nan=True, origin=span, deps=frozenset({key}) if key is not None else frozenset())


def _constant(number: float) -> Value:
    return Value(number, number)


def _integer_range(type_: TypeFacts) -> Value:
    if type_.bits is None or type_.is_signed is None:
        return UNKNOWN
    low, high = type_.value_range
    return Value(float(low), float(high))


def is_floating(type_: TypeFacts) -> bool:
    return type_.unqualified in FLOATING


def _is_integer(type_: TypeFacts) -> bool:
    return type_.bits is not None and type_.unqualified != "bool"


def _lowest(a: float | None, b: float | None) -> float | None:
    """The lower of two lower bounds: a reachable -inf wins, an unknown one makes it unknown."""
    if a == -INF or b == -INF:
        return -INF
    return None if a is None or b is None else min(a, b)


def _highest(a: float | None, b: float | None) -> float | None:
    if a == INF or b == INF:
        return INF
    return None if a is None or b is None else max(a, b)


def _combined(a: Value, b: Value, low: float | None, high: float | None, nan: bool) -> Value:
    return Value(low, high, nan, a.origin or b.origin, a.deps | b.deps, a.saturated or b.saturated)


def join(a: Value, b: Value) -> Value:
    """A value that is `a` on one path and `b` on another."""
    return _combined(a, b, _lowest(a.low, b.low), _highest(a.high, b.high), a.nan or b.nan)


def _product(x: float, y: float) -> float:
    return 0.0 if x == 0 or y == 0 else x * y


def _ends(values: list[float]) -> tuple[float, float] | None:
    if any(math.isnan(v) for v in values):
        return None
    return min(values), max(values)


def arithmetic(a: Value, b: Value, op: str) -> Value:
    """`a op b` for + - * /, each side's bound from the operands' (NaN propagates). With an
    operand unknown, only a value unbounded both ways stays so (`x * scale`, `x / scale`)."""
    nan = a.nan or b.nan
    if op in ("+", "-"):
        b_low, b_high = (b.low, b.high) if op == "+" else (_negated(b.high), _negated(b.low))
        low = -INF if -INF in (a.low, b_low) else None if None in (a.low, b_low) else a.low + b_low  # type: ignore[operator]
        high = INF if INF in (a.high, b_high) else None if None in (a.high, b_high) else a.high + b_high  # type: ignore[operator]
        return _combined(a, b, low, high, nan)
    known = None not in (a.low, a.high, b.low, b.high)
    if known and op == "*":
        ends = _ends([_product(x, y) for x in (a.low, a.high) for y in (b.low, b.high)])  # type: ignore[arg-type]
        if ends is not None:
            return _combined(a, b, ends[0], ends[1], nan)
    if known and op == "/" and not b.low <= 0 <= b.high:  # type: ignore[operator]
        ends = _ends([x / y for x in (a.low, a.high) for y in (b.low, b.high)])  # type: ignore[operator]
        if ends is not None:
            return _combined(a, b, ends[0], ends[1], nan)
    zero = (0.0, 0.0)
    spread = (a.two_sided and (b.low, b.high) != zero) or (op == "*" and b.two_sided and (a.low, a.high) != zero)
    return _combined(a, b, -INF, INF, nan) if spread else _combined(a, b, None, None, nan)


def _negated(bound: float | None) -> float | None:
    return -bound if bound is not None else None


def minimum(a: Value, b: Value) -> Value:
    """`fminf(a, b)`: at most either's upper bound; NaN only when both can be."""
    highs = [h for h in (a.high, b.high) if h is not None]
    high = min(highs) if len(highs) == 2 else (highs[0] if highs and highs[0] != INF else None)
    return _combined(a, b, _lowest(a.low, b.low), high, a.nan and b.nan)


def maximum(a: Value, b: Value) -> Value:
    """`fmaxf(a, b)`: at least either's lower bound; NaN only when both can be."""
    lows = [low for low in (a.low, b.low) if low is not None]
    low = max(lows) if len(lows) == 2 else (lows[0] if lows and lows[0] != -INF else None)
    return _combined(a, b, low, _highest(a.high, b.high), a.nan and b.nan)


def violation(value: Value, low: float, high: float, nan_counts: bool) -> str:
    """Why `value` can leave [low, high] ("" when it cannot, or nothing makes it reachable)."""
    if not value.wild:
        return ""
    if nan_counts and value.nan:
        return "can be NaN"
    if value.two_sided:
        return "has no bound"
    if value.low == -INF:
        return "has no lower bound"
    if value.high == INF:
        return "has no upper bound"
    if value.low is not None and value.low < low:
        return f"can be as low as {value.low:g}"
    if value.high is not None and value.high > high:
        return f"can be as high as {value.high:g}"
    return ""


@dataclass
class _Walk:
    """One function's walk under one binding of its parameters."""

    env: dict[int, Value]
    guarded: set[int]  # variables and pointers an earlier condition tests
    untracked: set[int]  # shared arrays: their reads are unknown
    depth: int
    call: Span | None  # the call that bound the parameters (for the finding's related location)
    body: Span  # the function's body
    # The call of the checked file through which the walk went into a function of an included
    # header (None in the checked file's own functions): it stands for what happens in there.
    entry: Expr | None = None
    returns: list[Value] = field(default_factory=list)  # what its `return` statements give


@dataclass(frozen=True)
class _Result:
    """What a walked function gives its caller: its return value, and the values it leaves
    in its reference parameters (by position) that hold memory's values."""

    value: Value
    outputs: dict[int, Value] = field(default_factory=dict)


class Numerics:
    """The analysis for one translation unit: conversions found once, calls followed with
    their arguments' values."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.found: dict[int, NarrowingConversion] = {}  # by the conversion's start offset
        # by callee, arguments and (in a header's function) the file's call that leads there
        self._returns: dict[tuple[int, tuple[Value, ...], int | None], _Result] = {}
        self._called: set[str] = set()  # the functions a call of the walked ones may reach, by USR
        self._helpers: list[Function] = []  # conversion helpers, walked again once every call is seen

    def add_function(self, function: Function) -> None:
        """Walk a kernel or device function of the checked file, its parameters unknown."""
        body = function.buildable_body
        if function.kind is FunctionKind.HOST or body is None:
            return
        self._called.update(callee.usr for call in body.calls() for callee in call.callees)
        if _converts_floats(function):
            self._helpers.append(function)
        self._guarded_walk(function, {})

    def _guarded_walk(self, function: Function, env: dict[int, Value]) -> None:
        try:
            self._walk(function, env, 0, None, None, ())
        except RecursionError:
            return  # generated code nested past what the walk follows: nothing is reported of it

    def conversions(self) -> list[NarrowingConversion]:
        """The conversions found; a conversion helper no call in sight reaches is walked with
        its floating parameters any value first (`_converts_floats`)."""
        while self._helpers:
            helper = self._helpers.pop()
            if helper.usr not in self._called:
                inputs = [p for p in helper.params if p.declarator == "value" and is_floating(p.type)]
                self._guarded_walk(helper, {p.key: _read(p.span, p.key) for p in inputs})
        return sorted(self.found.values(), key=lambda c: c.span.start)

    def _walk(
        self,
        function: Function,
        env: dict[int, Value],
        depth: int,
        call: Span | None,
        entry: Expr | None,
        outputs: tuple[int, ...],
    ) -> _Result:
        """Walk `function`'s body from `env`; what it returns (unknown when nothing is known),
        and what it leaves in its parameters at the positions `outputs` (references it writes)."""
        body = function.buildable_body
        if body is None:
            return _Result(UNKNOWN)
        walk = _Walk(dict(env), set(), set(), depth, call, body.span, entry)
        self._block(body, walk)
        returned = _join_all(walk.returns) if walk.returns else UNKNOWN
        left = {i: walk.env[function.params[i].key] for i in outputs if function.params[i].key in walk.env}
        return _Result(returned, {i: v for i, v in left.items() if v.wild})

    # -- statements --------------------------------------------------------------------------
    def _block(self, stmt: Stmt, walk: _Walk) -> None:
        kind = stmt.kind
        if kind is StmtKind.IF:
            self._branches(stmt, walk)
        elif kind in (StmtKind.FOR, StmtKind.WHILE, StmtKind.DO, StmtKind.RANGE_FOR):
            self._loop(stmt, walk)
        elif kind is StmtKind.ASM:
            reads = _asm_reads_memory(stmt)
            for output in stmt.asm_outputs:
                if reads and is_floating(output.type):
                    self._assign(output, _read(_origin(stmt, walk), None), walk)
                else:
                    self._forget(output, walk)
            for expr in stmt.exprs[len(stmt.asm_outputs) :]:
                self.value(expr, walk)
        else:
            self._declare(stmt, walk)
            for expr in stmt.exprs:
                value = self.value(expr, walk)
                if kind is StmtKind.RETURN:
                    walk.returns.append(value)
            for nested in stmt.live_stmts():
                self._block(nested, walk)

    def _declare(self, stmt: Stmt, walk: _Walk) -> None:
        for var in stmt.variables:
            if var.is_shared:
                walk.untracked.add(var.key)
                continue
            if var.declarator == "pointer":
                for expr in var.exprs:
                    self.value(expr, walk)
                continue  # a read through a local pointer reads memory
            initial = UNKNOWN
            for expr in var.exprs:
                initial = self.value(expr, walk)
            if var.declarator == "array" or var.is_reference or not var.exprs:
                initial = UNKNOWN
            if _is_integer(var.type) and not initial.wild:
                initial = _integer_range(var.type)
            walk.env[var.key] = initial.with_deps(frozenset({var.key}))
            for binding in var.bindings:  # `auto [x, y] = pair`: each name holds what the pair holds
                walk.env[binding.key] = initial.with_deps(frozenset({binding.key}))

    def _guard(self, condition: Expr | None, walk: _Walk) -> None:
        if condition is None:
            return
        walk.guarded |= self.value(condition, walk).deps
        for node in condition.walk():
            if node.kind is ExprKind.REF and node.ref is not None:
                walk.guarded.add(node.ref.key)

    def _branches(self, stmt: Stmt, walk: _Walk) -> None:
        for nested in stmt.stmts:
            if nested is not stmt.then and nested is not stmt.orelse:
                self._block(nested, walk)  # the init statement
        self._guard(stmt.condition, walk)
        before = dict(walk.env)
        ends = []
        for branch in (stmt.then, stmt.orelse):
            if branch is None or (stmt.taken is not None and (branch is stmt.then) != stmt.taken):
                ends.append(dict(before))
                continue
            walk.env = dict(before)
            self._block(branch, walk)
            ends.append(walk.env)
        walk.env = _join_envs(ends[0], ends[1])

    def _loop(self, stmt: Stmt, walk: _Walk) -> None:
        self._declare(stmt, walk)
        for nested in stmt.stmts:
            if nested is not stmt.body:
                self._block(nested, walk)  # the init statement
        for expr in stmt.exprs:  # a `while`'s or `do`'s condition among them
            self._guard(expr, walk)
        before = dict(walk.env)
        for _ in range(2):  # the second pass sees what one iteration leaves to the next
            if stmt.body is not None:
                self._block(stmt.body, walk)
            for expr in stmt.exprs:
                self.value(expr, walk)
            walk.env = _join_envs(before, walk.env)

    # -- expressions -------------------------------------------------------------------------
    def value(self, expr: Expr, walk: _Walk) -> Value:
        """`expr`'s value, recording the narrowing conversions inside it and applying its
        assignments to the environment."""
        result = self._evaluate(expr, walk)
        if _is_integer(expr.type) and (result is UNKNOWN or (result.wild and not result.saturated)):
            return _integer_range(expr.type).with_deps(result.deps)
        return result

    def _evaluate(self, expr: Expr, walk: _Walk) -> Value:
        kind = expr.kind
        if kind is ExprKind.LITERAL:
            number = _literal(expr)
            return _constant(number) if number is not None else UNKNOWN
        if kind in (ExprKind.PAREN, ExprKind.IMPLICIT, ExprKind.CAST) and len(expr.children) == 1:
            return self._conversion(expr, self.value(expr.children[0], walk), walk)
        if kind is ExprKind.REF:
            return self._reference(expr, walk)
        if kind is ExprKind.SUBSCRIPT and len(expr.children) == 2:
            return self._element(expr, expr.children[0], walk, expr.children[1])
        if kind is ExprKind.MEMBER:
            return self._member(expr, walk)
        if kind is ExprKind.UNARY and expr.children:
            return self._unary(expr, walk)
        if kind is ExprKind.BINARY and len(expr.children) == 2:
            return self._binary(expr, walk)
        if kind is ExprKind.CONDITIONAL and len(expr.children) == 3:
            return self._conditional(expr, walk)
        if kind is ExprKind.CALL:
            return self._call(expr, walk)
        if kind is ExprKind.LAMBDA:
            self._lambda(expr, walk)
            return UNKNOWN
        if kind is ExprKind.INIT_LIST and expr.children:
            return _join_all([self.value(child, walk) for child in expr.children])  # `float2{a, b}`
        for child in expr.children:
            self.value(child, walk)
        return UNKNOWN

    def _lambda(self, expr: Expr, walk: _Walk) -> None:
        """A lambda's body, walked where it is written (a kernel's work often sits in one handed
        to a scheduler): what it captures is what the enclosing code holds there, its own
        parameters are unknown, and its effects stay inside it."""
        body = expr.lambda_body
        if body is not None:
            inner = replace(walk, env=dict(walk.env), guarded=set(walk.guarded), untracked=set(walk.untracked))
            inner.returns = []
            self._block(body, inner)

    def _reference(self, expr: Expr, walk: _Walk) -> Value:
        ref = expr.ref
        if ref is None:
            return UNKNOWN
        known = walk.env.get(ref.key)
        if known is not None:
            return known
        return _integer_range(expr.type) if _is_integer(expr.type) else UNKNOWN.with_deps(frozenset({ref.key}))

    def _conversion(self, expr: Expr, inner: Value, walk: _Walk) -> Value:
        """An implicit conversion or a cast: a floating value (or one saturated from it) into an
        integer type is checked; the value itself passes."""
        if expr.kind is ExprKind.PAREN or not _is_integer(expr.type):
            return inner
        source = expr.children[0]
        target = _integer_range(expr.type)
        from_float = is_floating(source.type)
        narrower = _is_integer(source.type) and (source.type.bits or 0) > (expr.type.bits or 0)
        if (from_float or narrower) and target.low is not None and target.high is not None:
            reason = violation(inner, target.low, target.high, nan_counts=from_float)
            if reason:
                self._record(expr, source, inner, expr.type.spelling, reason, walk)
                return replace(target, deps=inner.deps)
        if from_float:
            return replace(inner, nan=False)
        return inner

    def _element(self, expr: Expr, base: Expr, walk: _Walk, index: Expr | None) -> Value:
        """`base[index]` (or `*base`): a read of memory through a pointer, or of a local array."""
        if index is not None:
            self.value(index, walk)
        stripped = base.stripped()
        key = stripped.ref.key if stripped.kind is ExprKind.REF and stripped.ref is not None else None
        if key is not None and key in walk.untracked:
            return UNKNOWN
        if key is not None and key in walk.env:
            return walk.env[key]  # a local array or vector (local pointers are not in `env`)
        self.value(base, walk)
        if not base.type.is_pointer or _is_integer(expr.type):
            return UNKNOWN
        return _read(_origin(expr, walk), key)

    def _member(self, expr: Expr, walk: _Walk) -> Value:
        """`v.x` of a local vector holds what the vector holds; other members are unknown."""
        if not expr.children:
            return UNKNOWN
        base = expr.children[0].stripped()
        if base.kind is ExprKind.REF and base.ref is not None and base.ref.key in walk.env:
            return walk.env[base.ref.key]
        if base.kind is ExprKind.SUBSCRIPT or (base.kind is ExprKind.UNARY and base.operator == "*"):
            return self.value(base, walk)  # `ptr[i].x`: a member of an element read from memory
        self.value(expr.children[0], walk)
        return UNKNOWN

    def _unary(self, expr: Expr, walk: _Walk) -> Value:
        operand = expr.children[0]
        op = expr.operator
        if op == "*":
            return self._element(expr, operand, walk, None)
        if op == "&":
            self._forget(operand, walk)
            return UNKNOWN
        inner = self.value(operand, walk)
        if op == "-":
            low = -inner.high if inner.high is not None else None
            high = -inner.low if inner.low is not None else None
            return replace(inner, low=low, high=high)
        if op == "+":
            return inner
        if op in ("++", "--", "x++", "x--"):
            self._assign(operand, arithmetic(inner, _constant(1.0), "+"), walk)
        return UNKNOWN

    def _binary(self, expr: Expr, walk: _Walk) -> Value:
        left, right = expr.children
        op = expr.operator
        if op == "=":
            value = self.value(right, walk)
            self._assign(left, value, walk)
            return value
        if op in ("+=", "-=", "*=", "/="):
            value = arithmetic(self.value(left, walk), self.value(right, walk), op[0])
            self._assign(left, value, walk)
            return value
        a, b = self.value(left, walk), self.value(right, walk)
        if op in ("+", "-", "*", "/"):
            return arithmetic(a, b, op)
        if op in ("<", ">", "<=", ">=", "==", "!=", "&&", "||"):
            return Value(0.0, 1.0, deps=a.deps | b.deps)
        return UNKNOWN.with_deps(a.deps | b.deps)

    def _conditional(self, expr: Expr, walk: _Walk) -> Value:
        """`c ? a : b`: the join of both, unless the condition tests what they compute (a
        clamp written as a conditional): then unknown."""
        condition = self.value(expr.children[0], walk)
        a, b = self.value(expr.children[1], walk), self.value(expr.children[2], walk)
        tested = condition.deps | {n.ref.key for n in expr.children[0].walk() if n.ref is not None}
        if tested & (a.deps | b.deps):
            return UNKNOWN
        return join(a, b)

    # -- calls -------------------------------------------------------------------------------
    def _call(self, expr: Expr, walk: _Walk) -> Value:
        name = _callee_name(expr)
        arguments = expr.arguments
        if name.startswith("operator") and name not in ("operator[]", "operator()"):
            return self._operator(expr, name, walk)
        if name == "operator[]":
            operands = _operands(expr)
            if operands:
                return self._element(expr, operands[0], walk, operands[1] if len(operands) > 1 else None)
        values = [self.value(a, walk) for a in arguments]
        if expr.is_construction:
            return self._construction(expr, values, walk)
        known = _library_call(name, values)
        if known is not None:
            return known
        loads = name.startswith(_LOAD_METHODS) and any(_points(a) for a in arguments)
        if loads and expr.type.unqualified not in ("void", "<dependent type>"):
            return _read(_origin(expr, walk), None)  # `gmem.load(ptr, i)`: a vector of memory's values
        if name in FP8_CONVERSIONS and len(arguments) >= 3:
            self._fp8_conversion(expr, arguments, values, walk)
            return UNKNOWN
        self._method_effects(expr, name, loads, walk)
        return self._follow(expr, name, values, walk)

    def _operator(self, expr: Expr, name: str, walk: _Walk) -> Value:
        """An overloaded operator call (or a dependent one in a template): a conversion operator
        (`float(h)` of a half) keeps its object's value; arithmetic is followed as arithmetic."""
        operands = _operands(expr)
        if name.startswith("operator ") and expr.children:  # a conversion: `operator float`
            member = expr.children[0].stripped()
            base = member.children[0] if member.kind is ExprKind.MEMBER and member.children else member
            return self.value(base, walk)
        values = [self.value(o, walk) for o in operands]
        op = name.removeprefix("operator")
        if op in ("+", "-", "*", "/") and len(values) == 2:
            return arithmetic(values[0], values[1], op)
        if op == "=" and len(operands) == 2:
            self._assign(operands[0], values[1], walk)
            return values[1]
        return UNKNOWN

    def _construction(self, expr: Expr, values: list[Value], walk: _Walk) -> Value:
        """`T(x)`: a c10 fp8 type converts without saturation; a floating or vector type keeps
        the value."""
        target = expr.type.unqualified
        largest = C10_FP8.get("c10::" + target.rsplit("c10::", 1)[-1]) if "c10::" in target else None
        if largest is not None and len(values) == 1 and is_floating(expr.arguments[0].type):
            reason = violation(values[0], -largest, largest, nan_counts=False)
            if reason:
                self._record(expr, expr.arguments[0], values[0], expr.type.spelling, reason, walk)
            return UNKNOWN
        if len(values) == 1:
            return values[0]
        return _join_all(values) if values else UNKNOWN

    def _fp8_conversion(self, expr: Expr, arguments: tuple[Expr, ...], values: list[Value], walk: _Walk) -> None:
        if arguments[1].stripped().value != NOSAT:
            return  # `__NV_SATFINITE`, or a saturation not known here
        largest = FP8_MAX.get(arguments[2].stripped().value, max(FP8_MAX.values()))  # unknown: e5m2's, the wider
        reason = violation(values[0], -largest, largest, nan_counts=False)
        if reason:
            target = f"fp8 (`{_callee_name(expr)}` with `__NV_NOSAT`)"
            self._record(expr, arguments[0], values[0], target, reason, walk)

    def _method_effects(self, expr: Expr, name: str, loads: bool, walk: _Walk) -> None:
        """A method of a local vector that fills it from a pointer (`v.load(ptr, i)`) makes it
        hold memory's values; any other non-const method, or a reference argument, makes it
        unknown."""
        callee = expr.children[0].stripped() if expr.children else None
        if callee is not None and callee.kind is ExprKind.MEMBER and callee.children:
            obj = callee.children[0].stripped()
            if obj.kind is ExprKind.REF and obj.ref is not None and obj.ref.key in walk.env:
                if loads:
                    walk.env[obj.ref.key] = _read(_origin(expr, walk), obj.ref.key)
                elif not name.startswith("store") and (expr.ref is None or expr.ref.is_mutating_method):
                    walk.env[obj.ref.key] = UNKNOWN.with_deps(frozenset({obj.ref.key}))
        for argument in expr.arguments:
            stripped = argument.stripped()
            by_reference = argument.kind is not ExprKind.IMPLICIT or stripped.type.canonical.endswith("]")
            if (
                by_reference
                and stripped.kind is ExprKind.REF
                and stripped.ref is not None
                and stripped.ref.key in walk.env
            ):
                walk.env[stripped.ref.key] = UNKNOWN.with_deps(frozenset({stripped.ref.key}))

    def _follow(self, expr: Expr, name: str, values: list[Value], walk: _Walk) -> Value:
        """Walk the device functions a call may reach whose bodies are in sight -- the checked
        file's and those of the project's headers it includes, never a system header's (the
        door `Program.definition` opens for the other analyses) -- the arguments' values bound
        to their scalar parameters (a non-const reference parameter is an output: unknown, but
        for memory's values a callee leaves in it, `_written_back`);
        the join of what they return, once per callee and arguments. A dependent
        `Trait::f(...)` in a template may reach each static method `f` of the file's records."""
        if walk.depth >= MAX_CALL_DEPTH:
            return UNKNOWN
        candidates = list(expr.callees)
        if not candidates and name and _names_type_member(expr):
            candidates = self.program.static_methods_named(expr, name)
        defined = [self.program.definition(c) for c in candidates]
        callees = [c for c in defined if c is not None and c.kind is not FunctionKind.HOST]
        if not callees or len(callees) > MAX_CANDIDATES:
            return UNKNOWN
        results = [self._returned(callee, expr, values, walk) for callee in callees]
        self._written_back(expr, results, walk)
        returned = _join_all([r.value for r in results])
        return replace(returned, deps=returned.deps | frozenset().union(*(v.deps for v in values)))

    def _written_back(self, call: Expr, results: list[_Result], walk: _Walk) -> None:
        """A local the call hands to a reference parameter that a callee leaves holding memory's
        values (`mma(acc, a, b)`, whose `asm` accumulates into `float (&d)[4]`) holds them after
        the call."""
        for position, argument in enumerate(call.arguments):
            written = [r.outputs[position] for r in results if position in r.outputs]
            node = argument.stripped()
            if written and node.kind is ExprKind.REF and node.ref is not None and node.ref.key in walk.env:
                walk.env[node.ref.key] = _join_all(written).with_deps(frozenset({node.ref.key}))

    def _returned(self, callee: Function, call: Expr, values: list[Value], walk: _Walk) -> _Result:
        if callee.buildable_body is None:
            return _Result(UNKNOWN)
        bound = tuple(values[: len(callee.params)])
        entry = walk.entry if walk.entry is not None or callee.file == self.program.path else call
        # a header's function is walked once per call of the file that enters it: what it reads
        # comes from that call, and what it converts is reported there
        key = (id(callee), tuple(replace(v, deps=frozenset()) for v in bound), entry.span.start if entry else None)
        if key not in self._returns:
            self._returns[key] = _Result(UNKNOWN)  # a recursive call meanwhile is unknown
            env = {  # a pointer parameter's reads are reads of memory
                p.key: v
                for p, v in zip(callee.params, bound, strict=False)
                if p.declarator == "value" or (p.declarator == "reference" and p.pointee_is_const)
            }
            # a non-const reference parameter is an output: unknown until the body writes it
            outputs = tuple(
                i
                for i, p in enumerate(callee.params[: len(call.arguments)])
                if p.declarator == "reference" and not p.pointee_is_const
            )
            env.update({callee.params[i].key: UNKNOWN for i in outputs})
            self._returns[key] = self._walk(callee, env, walk.depth + 1, call.span, entry, outputs)
        return self._returns[key]

    # -- effects -----------------------------------------------------------------------------
    def _assign(self, target: Expr, value: Value, walk: _Walk) -> None:
        """An assignment: a local (or an element or member of a local array or vector) holds
        the value from here on; a store to memory is not followed."""
        node = target.stripped()
        while node.kind in (ExprKind.SUBSCRIPT, ExprKind.MEMBER) and node.children:
            if node.kind is ExprKind.SUBSCRIPT:
                self.value(node.children[1], walk)
            node = node.children[0].stripped()
        if node.kind is ExprKind.CALL and node.name == "operator[]":
            refs = [c.stripped() for c in node.children if c.stripped().kind is ExprKind.REF]
            node = refs[0] if refs else node
        if node.kind is ExprKind.REF and node.ref is not None and node.ref.key in walk.env:
            walk.env[node.ref.key] = value.with_deps(frozenset({node.ref.key}))

    def _record_elsewhere(self, expr: Expr, value: Value, target: str, reason: str, walk: _Walk) -> None:
        """A conversion in an included header's function, of a value the checked file passes
        in: reported at the checked file's call that leads there. One the function makes of
        what it reads itself is the header's own finding (its pointer parameters are memory
        when the header is checked)."""
        entry = walk.entry
        if entry is None or value.origin is None or value.origin == entry.span or entry.span.start in self.found:
            return
        where = f"{os.path.relpath(expr.file, os.path.dirname(self.program.path))}:{expr.span.line}"
        self.found[entry.span.start] = NarrowingConversion(
            span=entry.span, source=entry.span, target=target, reason=reason, origin=value.origin, elsewhere=where
        )

    def _forget(self, target: Expr, walk: _Walk) -> None:
        node = target.stripped()
        if node.kind is ExprKind.REF and node.ref is not None and node.ref.key in walk.env:
            walk.env[node.ref.key] = UNKNOWN.with_deps(frozenset({node.ref.key}))

    def _record(self, expr: Expr, source: Expr, value: Value, target: str, reason: str, walk: _Walk) -> None:
        if value.deps & walk.guarded or value.origin is None:
            return
        if expr.file != self.program.path:
            self._record_elsewhere(expr, value, target, reason, walk)
            return
        if expr.span.start in self.found:
            return
        passed_in = walk.call is not None and not walk.body.contains(value.origin)
        self.found[expr.span.start] = NarrowingConversion(
            span=expr.span,
            source=source.span,
            target=target,
            reason=reason,
            origin=value.origin,
            call=walk.call if passed_in else None,
        )


def _library_call(name: str, values: list[Value]) -> Value | None:
    """The value of a math or conversion function the walk knows (None for others)."""
    bare = name.rsplit("::", 1)[-1]
    if bare in _MINIMA and len(values) == 2:
        return minimum(values[0], values[1])
    if bare in _MAXIMA and len(values) == 2:
        return maximum(values[0], values[1])
    if bare in _CLAMPS and len(values) == 3:
        return minimum(maximum(values[0], values[1]), values[2])
    if bare == "__saturatef" and values:
        return Value(0.0, 1.0, deps=values[0].deps)
    if not values:
        return None
    first = values[0]
    if bare in _ROUNDING or bare in _FLOAT_CONVERSIONS:
        widened = (first.low - 1 if first.low is not None else None, first.high + 1 if first.high is not None else None)
        return replace(first, low=widened[0], high=widened[1]) if bare in _ROUNDING else first
    if bare in _ABSOLUTE:
        ends = (first.low, first.high)
        high = max(abs(e) for e in ends) if None not in ends else None  # type: ignore[arg-type]
        return replace(first, low=0.0, high=high)
    if bare in _UNIT_RANGE:
        low, high = _UNIT_RANGE[bare]
        return Value(low, high, nan=first.nan, origin=first.origin if first.nan else None, deps=first.deps)
    if bare in _EXPONENTIALS:
        return Value(0.0, INF if first.high == INF else None, first.nan, first.origin, first.deps)
    if bare in _SATURATING_TO_INT:
        low, high = _SATURATING_TO_INT[bare].value_range
        clamp_low = max(first.low, low) if first.low is not None else None
        clamp_high = min(first.high, high) if first.high is not None else None
        return Value(clamp_low, clamp_high, False, first.origin, first.deps, saturated=True)
    if bare in _SHUFFLES and len(values) >= 2:
        return values[1]
    if bare in _VECTOR_BUILDERS:
        return _join_all(values)
    return None


def _converts_floats(function: Function) -> bool:
    """A device function that makes a narrow value of a floating one (`int8_t
    cvt_rni_sat_s8(float x)`): it takes a floating parameter by value and returns an integer
    of at most 16 bits or an fp8/fp4 byte. With no caller in sight (they are in other files),
    its parameter is whatever they pass: a conversion there without a clamp of its own is
    the helper's."""
    result = function.result
    narrow = (result.bits is not None and result.bits <= 16) or bool(_NARROW_FLOATS.search(result.canonical))
    floating = any(p.declarator == "value" and is_floating(p.type) for p in function.params)
    return function.kind is FunctionKind.DEVICE and narrow and floating


def _origin(read: Expr | Stmt, walk: _Walk) -> Span:
    """Where a read of memory is reported from: itself, or in an included header's function,
    the checked file's call that leads there."""
    return walk.entry.span if walk.entry is not None else read.span


def _asm_reads_memory(stmt: Stmt) -> bool:
    """Whether an asm statement loads from memory the kernel did not fill itself, or is a
    matrix multiply-accumulate: its floating outputs then hold any value."""
    template = stmt.asm.template if stmt.asm is not None else ""
    if _ASM_MMA.search(template):
        return True
    for load in _ASM_LOAD.finditer(template):
        spaces = {qualifier.split(":")[0] for qualifier in load.group(1).split(".")}
        if not spaces & _OWN_SPACES:
            return True
    return False


def _operands(call: Expr) -> list[Expr]:
    """An operator call's operands: its children but the operator's name."""
    return [
        c
        for c in call.children
        if not (c.stripped().kind is ExprKind.REF and _callee_name(c.stripped()).startswith("operator"))
    ]


def _callee_name(node: Expr) -> str:
    """The name a call (or a reference) names; inside a template, where clang leaves a call
    dependent, the name of the candidates it may call (`cast<T>(x)`, `x * s`) or the member
    of a dependent type it names (`Trait::quant(x)`)."""
    if node.name:
        return node.name
    for part in (node, *node.children):
        stripped = part.stripped()
        if stripped.candidates:
            return stripped.candidates[0].name
        named_by_tokens = stripped.names_type_member or stripped.kind is ExprKind.MEMBER  # `in.load` in a template
        if named_by_tokens and stripped.tokens:
            return stripped.tokens[-1].spelling
    return ""


def _points(argument: Expr) -> bool:
    """Whether an argument is a pointer, or (in a template) arithmetic on one."""
    return argument.type.is_pointer or any(n.kind is ExprKind.REF and n.type.is_pointer for n in argument.walk())


def _names_type_member(call: Expr) -> bool:
    """Whether a call's callee is a member named through a type (`Trait::quant`)."""
    return bool(call.children) and call.children[0].stripped().names_type_member


def _literal(expr: Expr) -> float | None:
    if expr.value is not None:
        return float(expr.value)
    tokens = expr.tokens
    if len(tokens) != 1:
        return None
    spelling = tokens[0].spelling.rstrip("fFlL")
    try:
        return float.fromhex(spelling) if spelling.lower().startswith("0x") else float(spelling)
    except ValueError:
        return None


def _join_all(values: list[Value]) -> Value:
    result = values[0]
    for value in values[1:]:
        result = join(result, value)
    return result


def _join_envs(a: dict[int, Value], b: dict[int, Value]) -> dict[int, Value]:
    return {key: join(a[key], b[key]) for key in a.keys() & b.keys()}
