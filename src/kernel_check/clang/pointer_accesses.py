"""The accesses through received pointers and the PDL events of each kernel and device
function body, in execution order, with callee summaries (read by KC102 and KC201-KC205).

For every kernel and device function of the checked file, one walk over its tier-1 tree
(`Function.body`, `program.py`) records, in execution order:

* the PDL calls: `PDLWaitPrimary<flag>()` / `PDLTriggerSecondary<flag>()` (with the
  template argument's text and value), raw `griddepcontrol.wait` / `.launch_dependents` asm, the CUDA API
  spellings, and calls of device functions that do any of these;
* the accesses through the pointers the function received: a pointer parameter, a pointer
  field of a by-value params struct (also in arrays and nested structs of it), or a pointer
  derived from those by arithmetic, casts, `pointer::offset`, local copies, references and
  structured bindings (the rules of `provenance.py`, shared with the launcher facts). An
  access is a load, a store, or the pointer escaping to code that may write through it (a
  callee whose body is not visible and whose parameter is not pointer-to-const, a store into
  memory or a global, an object's constructor, an asm operand of unknown effect);
* every inline asm statement (template and clobbers), and the preprocessor-inactive regions.

Order is structural: a statement's events come after those of the statements before it, an
argument's before its call's, and the right-hand side of an assignment before the store. A
callee whose definition is visible (the checked file and project headers; system headers
never) is replayed at the call from its summary: which parameters it reads, writes or lets
escape, where it waits, what pointer it returns. Summaries are computed once per definition,
recursion-safe. Without a body, well-known helpers are known by name (`__ldg`, `load`,
`store`, `load_as`, atomics, `memcpy`, async copies...). A lambda is replayed where it is
called (by name, immediately, or when handed to a call); one that never visibly runs keeps
its events with no order, so they count for writes but cannot be ordered against a wait.

Not accesses, by design: reading a scalar parameter or a non-pointer field of a params struct,
computing an address (`&p[i]`, `p + i`), shared memory and locals, unevaluated operands
(`sizeof`), and loads through a pointer that was itself loaded from memory (that load of the
pointer is the recorded access).
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..model import (
    AccessKind,
    ConstExpr,
    DataflowFacts,
    Function,
    FunctionDataflow,
    FunctionKind,
    InlineAsm,
    PdlCall,
    PdlCallKind,
    PointerAccess,
    Span,
)
from .consteval import Constants
from .cursors import MAX_NESTING
from .program import DeclKind, DeclRef, Expr, ExprKind, Program, Stmt, StmtKind, Var, too_deep
from .program import Function as TreeFunction
from .provenance import (
    PASS_THROUGH,
    POINTER_OFFSET,
    Origin,
    Origins,
    Shape,
    address_of,
    at_call,
    element,
    member,
    offset,
    parameter,
    pointers,
    structured_binding,
    union,
)

# -- what is known about callees by name -------------------------------------------------------

# The PDL pair as spelled by the library, the CUDA runtime and CUTLASS (`cutlass::arch::`).
_PDL_FUNCTIONS = {
    "PDLWaitPrimary": PdlCallKind.WAIT,
    "cudaGridDependencySynchronize": PdlCallKind.WAIT,
    "wait_on_dependent_grids": PdlCallKind.WAIT,
    "PDLTriggerSecondary": PdlCallKind.TRIGGER,
    "cudaTriggerProgrammaticLaunchCompletion": PdlCallKind.TRIGGER,
    "launch_dependent_grids": PdlCallKind.TRIGGER,
}
_R, _W = (AccessKind.READ,), (AccessKind.WRITE,)
_RW = (AccessKind.READ, AccessKind.WRITE)
# Effects of well-known helpers on their pointer arguments, used when no body is visible (CUDA
# built-ins, dependent member calls such as `vec.load(src, i)` in a template).
_KNOWN_EFFECTS: dict[str, tuple[tuple[int, tuple[AccessKind, ...]], ...]] = {
    **dict.fromkeys(
        ("__ldg", "__ldca", "__ldcg", "__ldcs", "__ldlu", "__ldcv", "load", "load_as", "load_bytes", "Load"), ((0, _R),)
    ),
    **dict.fromkeys(
        (
            "__stcg",
            "__stcs",
            "__stwt",
            "__stwb",
            "store",
            "store_as",
            "store_bytes",
            "Store",
            "memset",
            "__builtin_memset",
        ),
        ((0, _W),),
    ),
    "memcpy": ((0, _W), (1, _R)),
    "__builtin_memcpy": ((0, _W), (1, _R)),
}
# A bodiless helper named for a load or a store of its first argument (`v.cast_load(src)`,
# `v.cast_store(dst)`, `store_global_release(p)` of a dependent vector type in a template).
_LOAD_OR_STORE = re.compile(r"(?:^|_)(load|store)(?:_|$)")
# Asynchronous copies (`cg::memcpy_async(group, dst, src, n)`, `cuda::memcpy_async(dst, src, ...)`,
# `__pipeline_memcpy_async(dst, src, n)`): the first pointer argument is written, later ones read.
_ASYNC_COPIES = ("memcpy_async", "__pipeline_memcpy_async")
_ATOMIC_PREFIX = "atomic"  # atomicAdd, atomicCAS, atomicMax_block...: read-modify-write of arg 0

# Inline PTX: which instructions read or write the global memory their pointer operands name.
_PTX_MNEMONIC = re.compile(r"(?<![\w.%$])(ldu|ld|st|red|atom|cp|prefetchu|prefetch)(?=[.\s])((?:\.[\w:]+)*)")
_PTX_PRIVATE_SPACES = (".shared", ".local", ".param", ".const")

_ASSIGNMENT_OPERATORS = {
    "operator=",
    "operator+=",
    "operator-=",
    "operator*=",
    "operator/=",
    "operator%=",
    "operator&=",
    "operator|=",
    "operator^=",
    "operator<<=",
    "operator>>=",
}
_COMPOUND_ASSIGNMENTS = ("*=", "/=", "%=", "+=", "-=", "<<=", ">>=", "&=", "^=", "|=")
_MEMBER_TAIL = re.compile(rb"(\.|->)\s*(?:template\s+)?(~?\w+)\s*$")
_MAX_CANDIDATES = 8


# -- values the walk tracks ---------------------------------------------------------------------


class _Use(enum.Enum):
    """How the enclosing expression uses an lvalue: what an access through it amounts to."""

    READ = (AccessKind.READ,)
    WRITE = (AccessKind.WRITE,)
    READ_WRITE = (AccessKind.READ, AccessKind.WRITE)
    MAY_WRITE = (AccessKind.READ, AccessKind.ESCAPE)  # bound to a callee we cannot see
    ADDRESS = ()  # `&lvalue`: computes an address, touches nothing


@dataclass(frozen=True)
class _Access:
    kind: AccessKind
    target: Origin
    span: Span
    how: str
    atomic: bool = False  # see PointerAccess.atomic


@dataclass(frozen=True)
class _Pdl:
    kind: PdlCallKind
    span: Span
    flag: str
    via: str
    leads_body: bool
    flag_through_type: bool = False
    flag_value: ConstExpr | None = None


_Event = _Access | _Pdl


@dataclass
class _Lambda:
    scope: int
    events: list[_Event]
    invoked: bool = False


@dataclass(frozen=True)
class _Summary:
    """What calling a function does to its parameters, in order (waits included)."""

    events: tuple[_Event, ...]
    returns: frozenset[Origin]  # the parameter pointers (or their fields) a returned pointer derives from
    param_count: int


@dataclass
class _WalkResult:
    events: list[tuple[int | None, _Event]]
    returns: set[Origin]
    asm: list[InlineAsm]
    referenced: set[int]
    params: list[Var]

    @functools.cached_property
    def summary(self) -> _Summary:
        events: list[_Event] = []
        seen: set[tuple] = set()
        for order, event in self.events:
            if isinstance(event, _Pdl):
                events.append(event)
                seen.clear()  # accesses before and after a wait are different facts
                continue
            if event.target.scope != 0 or (order is None and event.kind is AccessKind.READ):
                continue  # unplaceable reads cannot be ordered at a call site
            # an atomic is kept beside a plain access of the same kind: it tells the operand's type
            key = (event.kind, event.target.param, event.target.fields, event.atomic)
            if key not in seen:
                seen.add(key)
                events.append(event)
        return _Summary(tuple(events), frozenset(self.returns), len(self.params))


# -- type helpers ---------------------------------------------------------------------------------


def _may_write_through(candidates: Sequence[TreeFunction], index: int, element: bool = False) -> bool:
    """Whether a callee we cannot see into may write through its `index`-th argument: a
    pointer argument, or with `element` an lvalue argument (`f(out[i])`), which only a
    non-const reference parameter can write (a by-value `T x` never deduces a reference)."""
    if not candidates:
        return True
    for candidate in candidates:
        params = candidate.params
        if index >= len(params):
            return True  # variadic, or an unknown shape
        param = params[index]
        if param.is_reference:
            if not param.pointee_is_const:
                return True
            continue
        if element:
            continue
        if param.canonical_kind == "Pointer" and not param.pointee_is_const:
            return True
        if param.canonical_kind in ("Unexposed", "Dependent", "Invalid"):
            return True
    return False


def _named_effects(name: str) -> tuple[tuple[int, tuple[AccessKind, ...]], ...] | None:
    """A load reads its first argument, a store writes it (a name with both words says neither)."""
    words = set(_LOAD_OR_STORE.findall(name))
    if len(words) != 1:
        return None
    return ((0, _R),) if words == {"load"} else ((0, _W),)


def _ptx_effects(template: str) -> tuple[AccessKind, ...]:
    """What the instructions of an asm template do to global memory named by pointer operands."""
    effects: list[AccessKind] = []
    for mnemonic, suffix in _PTX_MNEMONIC.findall(template):
        if mnemonic in ("prefetch", "prefetchu"):
            continue
        if mnemonic == "cp":  # cp.async...dst.src: a read when the source is global
            global_at, shared_at = suffix.find(".global"), suffix.find(".shared")
            if global_at >= 0:
                effects.append(AccessKind.READ if shared_at < 0 or shared_at < global_at else AccessKind.WRITE)
            continue
        if any(space in suffix for space in _PTX_PRIVATE_SPACES):
            continue
        effects.extend({"ld": _R, "ldu": _R, "st": _W}.get(mnemonic, _RW))
    return tuple(dict.fromkeys(effects)) or (AccessKind.ESCAPE,)


# -- the walk -------------------------------------------------------------------------------------

_IDENTIFIER = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


class _SourceBytes:
    """File contents by path: the checked file's (possibly unsaved) bytes, headers from disk."""

    def __init__(self, main_path: str, main_data: bytes) -> None:
        self.main_path = main_path
        self._files = {main_path: main_data}

    def at(self, name: str, span: Span) -> bytes:
        """The bytes of `span` in file `name` (b"" for no file)."""
        if not name:
            return b""
        if name not in self._files:
            try:
                self._files[name] = Path(name).read_bytes()
            except OSError:
                self._files[name] = b""
        return self._files[name][span.start : span.end]

    def text(self, node: Expr | Var | Stmt) -> bytes:
        """The source text of a tier-1 node."""
        return self.at(node.file, node.span)

    def identifiers_in(self, spans: tuple[Span, ...]) -> frozenset[str]:
        """The identifiers the checked file spells inside `spans` (code clang did not parse:
        lexically, the one view there is of it)."""
        data = self._files[self.main_path]
        return frozenset(word.decode() for span in spans for word in _IDENTIFIER.findall(data[span.start : span.end]))


def _parts(stmt: Stmt) -> Iterator[Stmt | Var | Expr]:
    """A statement's parts in execution (source) order: an init statement, the variables
    it declares, its expressions (condition, increment...), then its branches or body (a
    `do` runs its body first). Both branches of an `if constexpr` are walked, `taken` aside:
    in a template its condition is dependent, and either branch's events count."""
    if stmt.kind is StmtKind.DO:
        yield from stmt.stmts
        yield from stmt.exprs
        return
    tail = [s for s in stmt.stmts if s is stmt.then or s is stmt.orelse or s is stmt.body]
    yield from (s for s in stmt.stmts if not any(s is t for t in tail))
    yield from stmt.variables
    yield from stmt.exprs
    yield from tail


class _Walker:
    """One pass over one function body; see the module docstring for what it records."""

    def __init__(self, extractor: DataflowExtractor, function: TreeFunction, body: Stmt) -> None:
        self.extractor = extractor
        self.source = extractor.source
        self.function = function
        self.params = function.params
        self.env: dict[int, Origins] = {}  # by declaration key
        self.lambda_vars: dict[int, _Lambda] = {}
        self.lambdas: dict[Expr, _Lambda] = {}
        self.locals: set[int] = set()  # the variables declared in the walked body
        self.events: list[tuple[int | None, _Event]] = []
        self.returns: set[Origin] = set()
        self.asm: list[InlineAsm] = []
        self.referenced: set[int] = set()
        self.order = 0
        self.scopes = 0
        self.scope_params: dict[int, int] = {p.key: i for i, p in enumerate(self.params)}
        self.lead = _leading_statement(body, self.source)
        self.body = body
        for index, param in enumerate(self.params):
            self._bind_param(param, 0, index)

    def run(self) -> _WalkResult:
        self.statement(self.body)
        for lam in self.lambdas.values():
            if not lam.invoked:  # its writes and escapes still count, its order is unknown
                self.events.extend(
                    (None, event)
                    for event in lam.events
                    if not (isinstance(event, _Access) and event.target.scope == lam.scope)
                )
        return _WalkResult(self.events, self.returns, self.asm, self.referenced, list(self.params))

    # -- bookkeeping ---------------------------------------------------------------------------
    def _bind_param(self, param: Var, scope: int, index: int) -> None:
        origin = parameter(param, index, scope)
        if origin is not None:
            self.env[param.key] = (origin,)

    def _emit(self, event: _Event) -> None:
        self.order += 1
        self.events.append((self.order, event))

    def _access(self, values: Origins, use: _Use, span: Span, how: str) -> None:
        for origin in values:
            for kind in use.value:
                self._emit(_Access(kind, origin.reshaped(Shape.POINTER), span, how))

    def _escape(self, values: Origins, span: Span, how: str) -> None:
        for origin in values:
            if origin.shape in (Shape.POINTER, Shape.STRUCT, Shape.POINTER_ARRAY):
                self._emit(_Access(AccessKind.ESCAPE, origin, span, how))

    def _enter(self, node: Expr | Stmt | Var) -> None:
        # Recursive, one level per tree level; the depth counts across the walks of callee
        # summaries too, since those nest inside a call's visit on the same stack.
        extractor = self.extractor
        if extractor.nesting >= MAX_NESTING:
            raise too_deep(node, extractor.path)
        extractor.nesting += 1

    # -- statements ----------------------------------------------------------------------------
    def statement(self, stmt: Stmt) -> None:
        self._enter(stmt)
        try:
            if stmt.kind is StmtKind.RETURN:
                self._visit_return(stmt)
            elif stmt.kind is StmtKind.ASM:
                self._visit_asm(stmt)
            else:
                for part in _parts(stmt):
                    self._part(part)
        finally:
            self.extractor.nesting -= 1

    def _part(self, part: Stmt | Var | Expr) -> None:
        if isinstance(part, Stmt):
            self.statement(part)
        elif isinstance(part, Var):
            self._visit_var(part)
        else:
            self.visit(part)

    # -- expressions ---------------------------------------------------------------------------
    def visit(self, node: Expr, use: _Use = _Use.READ) -> Origins:
        self._enter(node)
        try:
            handler = _HANDLERS.get(node.kind)
            if handler is not None:
                return handler(self, node, use)
            if node.is_unevaluated:
                return ()  # sizeof operands: nothing runs
            for child in node.children:
                self.visit(child)
            return ()
        finally:
            self.extractor.nesting -= 1

    def _visit_wrapper(self, node: Expr, use: _Use) -> Origins:
        children = node.children
        if node.kind is ExprKind.IMPLICIT and self._is_unresolved_call(node):
            return self._visit_call_parts(node, children[0], children[1:], use)
        values: Origins = ()
        for child in children:
            values = self.visit(child, use)
        return values

    def _is_unresolved_call(self, node: Expr) -> bool:
        """A call clang could not resolve shows as an expression over the callee (written
        first) and the arguments."""
        children = node.children
        if not children or children[0].declarations_named is None or node.span.start != children[0].span.start:
            return False
        return len(children) > 1 or node.span.end > children[0].span.end

    def _visit_lambda(self, node: Expr, use: _Use) -> Origins:
        self._lambda(node)
        return ()

    def _visit_decl_ref(self, node: Expr, use: _Use) -> Origins:
        declaration = node.ref
        if declaration is None:
            return ()
        if declaration.kind is DeclKind.PARAMETER and declaration.key in self.scope_params:
            self.referenced.add(self.scope_params[declaration.key])
        values = self.env.get(declaration.key, ())
        elements = tuple(o for o in values if o.shape is Shape.ELEMENT)
        if elements:
            if use is _Use.ADDRESS:
                return tuple(o.reshaped(Shape.POINTER) for o in elements)
            self._access(elements, use, node.span, "reference")
            return ()
        if use is _Use.ADDRESS:  # `&p`: the pointer variable itself leaves our sight
            self._escape(pointers(values), node.span, "&")
            return tuple(o for o in values if o.shape is Shape.STRUCT)
        return values

    def _visit_member(self, node: Expr, use: _Use) -> Origins:
        children = node.children
        if not children:
            return ()  # an implicit `this->member`: not a received pointer
        name, arrow = _member_name(node, children[0], self.source)
        if arrow:
            bases = self.visit(children[0])
            if use is _Use.ADDRESS:
                return pointers(bases)
            self._access(pointers(bases), use, node.span, "->")
            return ()
        bases = self.visit(children[0], use)
        fields = member(bases, name, node)
        if use is _Use.ADDRESS:  # `&p[i].x`: still an address inside the same buffer
            return union(fields, pointers(bases))
        return fields

    def _visit_subscript(self, node: Expr, use: _Use) -> Origins:
        children = node.children
        if len(children) != 2:
            return ()
        bases = self.visit(children[0])
        self.visit(children[1])
        return self._through(bases, use, node.span, "subscript")

    def _through(self, bases: Origins, use: _Use, span: Span, how: str) -> Origins:
        """`*p` / `p[i]`: an access through pointers, or the element of an array of them."""
        if use is _Use.ADDRESS:
            return address_of(bases)
        self._access(pointers(bases), use, span, how)
        return element(bases)

    def _visit_unary(self, node: Expr, use: _Use) -> Origins:
        if len(node.children) != 1:
            return ()
        operand, operator = node.children[0], node.operator
        if operator == "*":
            return self._through(self.visit(operand), use, node.span, "dereference")
        if operator == "&":
            return self.visit(operand, _Use.ADDRESS)
        if operator in ("++", "--", "x++", "x--"):
            return self.visit(operand, _Use.READ_WRITE)
        self.visit(operand)
        return ()

    def _visit_binary(self, node: Expr, use: _Use) -> Origins:
        children = node.children
        if len(children) != 2:
            return ()
        operator = node.operator
        if operator == "=":
            return self._assign(children[0], children[1])
        if operator in _COMPOUND_ASSIGNMENTS:
            target = self.visit(children[0], _Use.READ_WRITE)
            self.visit(children[1])
            return target
        left, right = self.visit(children[0]), self.visit(children[1])
        if operator == ",":
            return right
        if operator in ("+", "-"):
            return offset(left, right)
        return ()

    def _assign(self, target: Expr, value_node: Expr) -> Origins:
        value = self.visit(value_node)
        lhs = target.stripped()
        declaration = lhs.ref if lhs.kind is ExprKind.REF else None
        binds_element = declaration is not None and any(
            o.shape is Shape.ELEMENT for o in self.env.get(declaration.key, ())
        )
        if declaration is not None and self._is_local(declaration) and not binds_element:
            self.env[declaration.key] = union(self.env.get(declaration.key, ()), value)
            return self.env[declaration.key]
        self.visit(target, _Use.WRITE)
        self._escape(value, value_node.span, "stored")  # into memory we do not track
        return ()

    def _is_local(self, declaration: DeclRef) -> bool:
        """A parameter or variable of the walked body (a global pointer is memory we do not track)."""
        if declaration.kind not in (DeclKind.VARIABLE, DeclKind.PARAMETER):
            return False
        return declaration.key in self.scope_params or declaration.key in self.locals

    def _visit_conditional(self, node: Expr, use: _Use) -> Origins:
        children = node.children
        if len(children) != 3:
            return ()
        self.visit(children[0])
        return union(self.visit(children[1], use), self.visit(children[2], use))

    def _visit_var(self, var: Var) -> None:
        self._enter(var)
        try:
            self._declare(var)
        finally:
            self.extractor.nesting -= 1

    def _declare(self, var: Var) -> None:
        self.locals.add(var.key)
        expressions = var.exprs
        if not expressions or not _has_initializer(var, self.source):
            for expression in expressions:  # array bounds
                self.visit(expression)
            return
        for expression in expressions[:-1]:
            self.visit(expression)
        initializer = expressions[-1]
        if var.bindings:
            self._decompose(var, initializer)
            return
        is_reference = var.is_reference
        # an object (a record, or a dependent type: `Writer<N> w(out, n)`) may write later
        # through a pointer it is built from
        is_object = not is_reference and var.canonical_kind in ("Record", "Unexposed")
        lam = self._lambda_at(initializer, create=True)
        if lam is not None:
            self.lambda_vars[var.key] = lam
            return
        if is_reference and _is_memory_access(initializer.stripped(), self.source):
            values = self._referenced_memory(initializer)
        else:
            values = self._visit_constructor_arguments(initializer) if is_object else self.visit(initializer)
            if is_object:  # a struct copy stays a struct
                self._escape(tuple(o for o in values if o.shape is not Shape.STRUCT), initializer.span, "stored")
                values = tuple(o for o in values if o.shape is Shape.STRUCT)
        if values:
            self.env[var.key] = union(self.env.get(var.key, ()), values)

    def _referenced_memory(self, initializer: Expr) -> Origins:
        """A reference bound to memory behind a pointer (`auto& x = out[i];`): using it is an
        access through that pointer."""
        return tuple(
            o.reshaped(Shape.ELEMENT) for o in self.visit(initializer, _Use.ADDRESS) if o.shape is Shape.POINTER
        )

    def _decompose(self, var: Var, initializer: Expr) -> None:
        """`const auto& [input, weight] = params;`: each name holds what
        `provenance.structured_binding` makes of the decomposed value."""
        if var.is_reference and _is_memory_access(initializer.stripped(), self.source):
            decomposed = self._referenced_memory(initializer)
        else:
            decomposed = self.visit(initializer)
        for binding in var.bindings:
            self.locals.add(binding.key)
            values = structured_binding(decomposed, binding.index, binding)
            if values:
                self.env[binding.key] = values

    def _visit_constructor_arguments(self, initializer: Expr) -> Origins:
        """The values of an object's initializer; of every argument of a dependent type's
        `(a, b)` list (one unexposed expression whose children are the arguments)."""
        if (
            initializer.kind is not ExprKind.IMPLICIT
            or initializer.part_count < 2
            or self._is_unresolved_call(initializer)
        ):
            return self.visit(initializer)
        return tuple(value for child in initializer.children for value in self.visit(child))

    def _visit_return(self, node: Stmt) -> None:
        for child in node.exprs:
            for origin in self.visit(child):
                if origin.scope == 0 and origin.shape is Shape.POINTER:
                    self.returns.add(origin)

    def _visit_init_list(self, node: Expr, use: _Use) -> Origins:
        for child in node.children:
            self._escape(self.visit(child), child.span, "stored")
        return ()

    # -- calls ---------------------------------------------------------------------------------
    def _visit_call(self, node: Expr, use: _Use) -> Origins:
        children = node.children
        operator_at = next((i for i, c in enumerate(children) if _operator_name(c)), None)
        if operator_at is not None:
            name = _operator_name(children[operator_at])
            return self._operator_call(node, name, [c for i, c in enumerate(children) if i != operator_at], use)
        referenced = node.ref
        if referenced is not None and referenced.is_constructor:
            return self._construct(node, use)
        if not children:
            return ()
        return self._visit_call_parts(node, children[0], children[1:], use)

    def _construct(self, node: Expr, use: _Use) -> Origins:
        """A copy of a params struct flows through; a pointer handed to an object's
        constructor leaves our sight (the object may write through it later)."""
        single = node.part_count == 1  # no written type beside the one argument
        copies: list[Origin] = []
        for arg in node.children:
            values = self.visit(arg, use if single else _Use.READ)
            copies.extend(o for o in values if o.shape is Shape.STRUCT and single)
            self._escape(
                tuple(o for o in values if o.shape is not Shape.STRUCT or not single), arg.span, f"{node.name}()"
            )
        return tuple(copies)

    def _operator_call(self, node: Expr, name: str, operands: list[Expr], use: _Use) -> Origins:
        if name == "operator()" and operands:
            lam = self._lambda_at(operands[0], create=True)
            if lam is not None:
                arg_values = [self.visit(arg) for arg in operands[1:]]
                self._invoke(lam, operands[1:], arg_values)
                return ()
        if name in _ASSIGNMENT_OPERATORS and len(operands) == 2:
            if name == "operator=":
                return self._assign(operands[0], operands[1])
            target = self.visit(operands[0], _Use.READ_WRITE)
            self.visit(operands[1])
            return target
        if name in ("operator++", "operator--") and operands:
            return self.visit(operands[0], _Use.READ_WRITE)
        values = [self.visit(operand) for operand in operands]
        if name in ("operator+", "operator-") and len(values) == 2:
            return offset(*values)
        if name == "operator*" and len(values) == 1:  # `*p` in a template: a dereference
            return self._through(values[0], use, node.span, "dereference")
        return ()

    def _visit_call_parts(self, node: Expr, callee: Expr, args: Sequence[Expr], use: _Use) -> Origins:
        lam = self._lambda_at(callee, create=True)  # `[&] {...}()` or a variable bound to one
        if lam is not None:
            self._invoke(lam, args, [self.visit(arg) for arg in args])
            return ()
        name, candidates = self._callee(callee)
        pdl_kind = _PDL_FUNCTIONS.get(name)
        if pdl_kind is not None:
            for arg in args:
                self.visit(arg)
            flags = self.extractor.consts.template_args(callee.stripped())
            self._pdl(
                pdl_kind,
                node,
                _template_argument_text(self.source.text(callee)),
                name,
                flag_through_type=callee.names_type_parameter,
                flag_value=flags[0] if flags else None,
            )
            return ()
        arg_values = [self.visit(arg, self._argument_use(arg, candidates, index)) for index, arg in enumerate(args)]
        result = self._apply_callee(node, name, candidates, args, arg_values)
        for arg in args:  # a lambda handed to a callee runs during the call
            passed = self._lambda_at(arg, create=False)
            if passed is not None:
                self._invoke(passed, [], [])
        return result

    def _argument_use(self, arg: Expr, candidates: list[TreeFunction] | None, index: int) -> _Use:
        """An lvalue argument (`f(out[i])`) may be bound to a reference the callee writes."""
        if not _is_memory_access(arg.stripped(), self.source):
            return _Use.READ
        if candidates is None or _may_write_through(candidates, index, element=True):
            return _Use.MAY_WRITE
        return _Use.READ

    def _callee(self, callee: Expr) -> tuple[str, list[TreeFunction] | None]:
        """The callee's name and candidate declarations (None when they cannot be known)."""
        inner = callee.stripped()
        if inner.kind is ExprKind.MEMBER:
            children = inner.children
            name, _ = _member_name(inner, children[0], self.source) if children else (inner.name, False)
            referenced = inner.ref
            if children and referenced is not None and referenced.is_mutating_method:
                # `counters[i].inc(1)` writes the element. Recorded as a write only: what such a
                # method reads (an atomic's old value) is its own state, not a producer's output.
                self._visit_member(inner, _Use.WRITE)
            elif children:
                self.visit(children[0])
            if referenced is not None and referenced.kind is DeclKind.FUNCTION:
                return name, [self.extractor.program.declared_function(referenced)]
            methods = children[0].record_methods(name) if children else None
            return name, (list(methods) or None) if methods is not None else None
        decls = inner.declarations_named
        if decls is None:
            trait_member = _member_of_type_parameter(inner, self.source)
            if trait_member is not None:  # `Trait::forward(params)`: a static member of some trait
                return trait_member, self.extractor.static_members_named(inner, trait_member)
            self.visit(callee)
            return "", None
        name = decls[0].name if decls else inner.name
        return name, [self.extractor.program.declared_function(d) for d in decls if d.kind is DeclKind.FUNCTION]

    def _apply_callee(
        self,
        node: Expr,
        name: str,
        candidates: list[TreeFunction] | None,
        args: Sequence[Expr],
        arg_values: list[Origins],
    ) -> Origins:
        is_pointer_offset = (
            name == POINTER_OFFSET and bool(candidates) and all(c.parent_name == "pointer" for c in candidates or ())
        )
        if is_pointer_offset or name in PASS_THROUGH:  # `pointer::offset(p, ...)` is still `p`
            return arg_values[0] if arg_values else ()
        summaries = self._summaries(candidates or [], args)
        if summaries:
            result: Origins = ()
            for summary in summaries:
                result = union(result, self._replay(summary, node, name, args, arg_values))
            return result
        effects = _KNOWN_EFFECTS.get(name) or _named_effects(name)
        atomic = effects is None and name.startswith(_ATOMIC_PREFIX)
        if atomic:
            effects = ((0, _RW),)
        if effects is None and name in _ASYNC_COPIES:
            pointers = [i for i, arg in enumerate(args) if _is_pointer_like(arg)]
            effects = tuple((i, _W if i == pointers[0] else _R) for i in pointers)
        if effects is not None:
            for index, kinds in effects:
                if index < len(args):
                    self._emit_kinds(arg_values[index], kinds, args[index].span, f"{name}()", atomic)
            return ()
        for index, (arg, values) in enumerate(zip(args, arg_values, strict=True)):
            if values and (candidates is None or _may_write_through(candidates, index)):
                self._escape(values, arg.span, f"{name or 'call'}()")
        return ()

    def _emit_kinds(
        self, values: Origins, kinds: Iterable[AccessKind], span: Span, how: str, atomic: bool = False
    ) -> None:
        for origin in values:
            if origin.shape is Shape.POINTER:
                for kind in kinds:
                    self._emit(_Access(kind, origin, span, how, atomic))

    def _summaries(self, candidates: list[TreeFunction], args: Sequence[Expr]) -> list[_Summary]:
        """Summaries of the candidates whose bodies are visible (outside system headers)."""
        summaries = []
        for candidate in candidates:
            function = self.extractor.program.definition(candidate)
            if function is None:
                continue
            params = function.params
            if len(params) < len(args) and not any("..." in p.type.spelling for p in params):
                continue
            summary = self.extractor.summary(function)
            if summary is None:
                return []  # recursion: treat the callee as unknown
            summaries.append(summary)
        return summaries

    def _replay(
        self, summary: _Summary, node: Expr, name: str, args: Sequence[Expr], arg_values: list[Origins]
    ) -> Origins:
        how = f"{name}()"
        for event in summary.events:
            if isinstance(event, _Pdl):
                leads = event.leads_body and self._is_lead(node)
                self._emit(_Pdl(event.kind, node.span, "", how, leads))
                continue
            for mapped in at_call(arg_values, event.target):
                self._emit(_Access(event.kind, mapped, args[event.target.param].span, how, event.atomic))
        return tuple(mapped for returned in summary.returns for mapped in at_call(arg_values, returned))

    def _pdl(
        self,
        kind: PdlCallKind,
        node: Expr | Stmt,
        flag: str,
        via: str,
        flag_through_type: bool = False,
        flag_value: ConstExpr | None = None,
    ) -> None:
        self._emit(_Pdl(kind, node.span, flag, via, self._is_lead(node), flag_through_type, flag_value))

    def _is_lead(self, node: Expr | Stmt) -> bool:
        """Whether `node` is (or starts) the body's leading statement."""
        lead = self.lead
        return lead is not None and lead.span.start == node.span.start and bool(lead.file) and lead.file == node.file

    # -- lambdas -------------------------------------------------------------------------------
    def _lambda(self, node: Expr) -> _Lambda:
        if node in self.lambdas:
            return self.lambdas[node]
        self.scopes += 1
        scope = self.scopes
        for index, param in enumerate(node.lambda_params):
            self.locals.add(param.key)  # local to the body, but not one of the function's own
            self._bind_param(param, scope, index)
        saved_events, saved_returns, saved_order = self.events, self.returns, self.order
        self.events, self.returns = [], set()
        body = node.lambda_body
        if body is not None:
            self.statement(body)
        lam = _Lambda(scope, [event for _, event in self.events])
        self.events, self.returns, self.order = saved_events, saved_returns, saved_order
        self.lambdas[node] = lam
        return lam

    def _lambda_at(self, node: Expr, create: bool) -> _Lambda | None:
        """The lambda an expression evaluates to: a lambda expression or a variable bound to one."""
        inner = node.stripped()
        while (
            inner.kind is ExprKind.CALL
            and inner.ref is not None
            and inner.ref.is_constructor
            and inner.part_count == 1
            and inner.children
        ):
            inner = inner.children[0].stripped()  # the closure's copy/move
        if inner.kind is ExprKind.LAMBDA:
            return self._lambda(inner) if create or inner in self.lambdas else None
        if inner.kind is ExprKind.REF and inner.ref is not None:
            return self.lambda_vars.get(inner.ref.key)
        return None

    def _invoke(self, lam: _Lambda, args: Sequence[Expr], arg_values: list[Origins]) -> None:
        lam.invoked = True
        for event in lam.events:
            if isinstance(event, _Access) and event.target.scope == lam.scope:
                for mapped in at_call(arg_values, event.target):
                    self._emit(_Access(event.kind, mapped, args[event.target.param].span, event.how, event.atomic))
                continue
            self._emit(event)

    # -- inline asm ----------------------------------------------------------------------------
    def _visit_asm(self, node: Stmt) -> None:
        parts = node.asm
        assert parts is not None  # an ASM statement's
        self.asm.append(
            InlineAsm(node.span, parts.template, parts.clobbers, parts.is_volatile, self.function.qualified_name)
        )
        outputs = node.asm_outputs
        for output in outputs:
            self.visit(output, _Use.WRITE)
        effects = _ptx_effects(parts.template)
        for operand in node.exprs[len(outputs) :]:
            self._emit_kinds(self.visit(operand), effects, operand.span, "asm")
        if "griddepcontrol.wait" in parts.template:
            self._pdl(PdlCallKind.WAIT, node, "", "asm")
        if "griddepcontrol.launch_dependents" in parts.template:
            self._pdl(PdlCallKind.TRIGGER, node, "", "asm")


_HANDLERS: dict[ExprKind, Callable[[_Walker, Expr, _Use], Origins]] = {
    ExprKind.REF: _Walker._visit_decl_ref,
    ExprKind.MEMBER: _Walker._visit_member,
    ExprKind.SUBSCRIPT: _Walker._visit_subscript,
    ExprKind.UNARY: _Walker._visit_unary,
    ExprKind.BINARY: _Walker._visit_binary,
    ExprKind.CONDITIONAL: _Walker._visit_conditional,
    ExprKind.INIT_LIST: _Walker._visit_init_list,
    ExprKind.CALL: _Walker._visit_call,
    ExprKind.CAST: _Walker._visit_wrapper,
    ExprKind.PAREN: _Walker._visit_wrapper,
    ExprKind.IMPLICIT: _Walker._visit_wrapper,
    ExprKind.LAMBDA: _Walker._visit_lambda,
}


def _is_pointer_like(expression: Expr) -> bool:
    """A pointer, or an array (which decays to one when passed)."""
    return expression.type.is_pointer or expression.type.canonical.endswith("]")


def _member_name(node: Expr, base: Expr, source: _SourceBytes) -> tuple[str, bool]:
    """The member's name and whether it is reached with `->`. A member of a dependent type has
    no spelling or declaration yet, so both come from the source text when they can."""
    match = _MEMBER_TAIL.search(source.text(node))
    name = node.name or (match.group(2).decode() if match else "")
    if match:
        return name, match.group(1) == b"->"
    return name, base.type.is_pointer


def _is_memory_access(node: Expr, source: _SourceBytes) -> bool:
    """Whether an expression names memory behind a pointer (`p[i]`, `*p`, `p->x`, `p[i].x`)."""
    if node.kind is ExprKind.SUBSCRIPT:
        return True
    if node.kind is ExprKind.UNARY:
        return node.operator == "*"
    if node.kind is ExprKind.MEMBER:
        if not node.children:
            return False
        _, arrow = _member_name(node, node.children[0], source)
        return arrow or _is_memory_access(node.children[0].stripped(), source)
    return False


_LAST_NAME = re.compile(rb"(\w+)\s*(?:<.*)?$", re.S)


def _member_of_type_parameter(callee: Expr, source: _SourceBytes) -> str | None:
    """`forward` for a callee spelled `Trait::forward` / `Trait::template forward<T>` where
    `Trait` is a template type parameter, or an alias of a type that depends on one (`using
    Traits = VecTraits<T>;`): a dependent name clang leaves unresolved."""
    if callee.kind is not ExprKind.REF or callee.name:
        return None
    qualifier = callee.qualifier
    if qualifier is None or qualifier.kind not in (DeclKind.TEMPLATE_PARAMETER, DeclKind.TYPE):
        return None
    match = _LAST_NAME.search(source.text(callee))
    return match.group(1).decode() if match else None


def _operator_name(node: Expr) -> str:
    """`operator=` when `node` is the operator reference inside an overloaded-operator call."""
    inner = node.stripped()
    if inner.kind is not ExprKind.REF:
        return ""
    name = (inner.ref.name if inner.ref is not None else "") or inner.name
    return name if re.match(r"operator\W", name) else ""


def _template_argument_text(callee_text: bytes) -> str:
    """`kUsePDL` from `device::PDLWaitPrimary<kUsePDL>`."""
    text = callee_text.decode("utf-8", errors="replace")
    start, end = text.find("<"), text.rfind(">")
    return " ".join(text[start + 1 : end].split()) if 0 <= start < end else ""


def _has_initializer(var: Var, source: _SourceBytes) -> bool:
    """`T x = ...`, `T x{...}`, `T x(...)`; not `T x[N]` (whose bound is an expression child)."""
    text = source.text(var)
    name_at = var.name_offset - var.span.start
    tail = re.sub(rb"\[[^\]]*\]", b"", text[max(name_at, 0) :])
    return any(token in tail for token in (b"=", b"{", b"("))


def _is_compile_time_only(statement: Stmt, source: _SourceBytes) -> bool:
    """Statements that run no code: aliases, static_assert, constexpr or uninitialized locals,
    structured bindings by reference of a named object (`const auto& [in, out] = params;`),
    empty statements."""
    if statement.kind is StmtKind.OTHER:
        return not (statement.stmts or statement.exprs or statement.variables)
    if statement.kind is not StmtKind.DECL:
        return False
    for var in statement.variables:
        name_at = max(var.name_offset - var.span.start, 0)
        names_only = bool(var.bindings) and var.is_reference and var.exprs[-1].stripped().kind is ExprKind.REF
        if b"constexpr" not in source.text(var)[:name_at] and _has_initializer(var, source) and not names_only:
            return False
    return True


def _leading_statement(body: Stmt, source: _SourceBytes) -> Stmt | None:
    """The first statement that does work, looking into blocks and `if constexpr` branches."""
    scope = body
    while True:
        statement = next((s for s in scope.stmts if not _is_compile_time_only(s, source)), None)
        if statement is None:
            return None
        if statement.kind is StmtKind.BLOCK:
            scope = statement
            continue
        if statement.kind is StmtKind.IF and statement.is_constexpr:
            branch = statement.then
            if branch is None:
                return statement
            if branch.kind is StmtKind.BLOCK:
                scope = branch
                continue
            return branch
        return statement


# -- the extractor ----------------------------------------------------------------------------------


class DataflowExtractor:
    """Per translation unit: walks each file function once and memoizes callee summaries."""

    def __init__(self, facts: DataflowFacts, program: Program, data: bytes) -> None:
        self.facts = facts
        self.program = program
        path = self.path = program.path
        self.source = _SourceBytes(path, data)
        self.consts = Constants(data, path)
        self._walks: dict[TreeFunction, _WalkResult | None] = {}  # per definition; None while in progress
        self.nesting = 0  # tree levels open now in `_Walker`, in all walks (see MAX_NESTING)

    def add_function(self, tree: TreeFunction, function: Function) -> None:
        """Record the facts of a kernel or device function definition of the checked file."""
        body_span = function.body
        if body_span is None or function.kind is FunctionKind.HOST:
            return
        result = self._walk(tree)
        if result is None:
            return
        names = [p.name for p in result.params]
        inactive = tuple(s for s in self.program.skipped_spans(tree) if body_span.contains(s))
        self.facts.functions.append(
            FunctionDataflow(
                function_usr=function.usr,
                qualified_name=function.qualified_name,
                body=body_span,
                pdl_calls=[
                    PdlCall(e.kind, e.span, order, e.flag, e.via, e.leads_body, e.flag_through_type, e.flag_value)
                    for order, e in result.events
                    if isinstance(e, _Pdl)
                ],
                accesses=[
                    _model_access(e, order, names)
                    for order, e in result.events
                    if isinstance(e, _Access) and e.target.scope == 0 and e.target.param < len(names)
                ],
                referenced_params=frozenset(names[i] for i in result.referenced if i < len(names)),
                inactive_spans=inactive,
                inactive_names=self.source.identifiers_in(inactive),
            )
        )
        self.facts.inline_asm.extend(result.asm)

    def static_members_named(self, anchor: Expr, name: str) -> list[TreeFunction] | None:
        """The static member functions called `name` of the checked file's records: what
        `Trait::name(...)` can call once `Trait` is bound. None when there are none (the
        callee stays unknown)."""
        methods = self.program.static_methods_named(anchor, name)
        return methods[:_MAX_CANDIDATES] if methods else None

    def summary(self, definition: TreeFunction) -> _Summary | None:
        """What calling `definition` does to its parameters; None while it is being walked."""
        result = self._walk(definition)
        return result.summary if result is not None else None

    def _walk(self, function: TreeFunction) -> _WalkResult | None:
        if function in self._walks:
            return self._walks[function]
        self._walks[function] = None  # in progress: a recursive call sees an unknown callee
        try:
            body = function.body
            if body is None:
                return None
            result = _Walker(self, function, body).run()
        except RecursionError:
            return None  # absurdly deep nesting: no facts (rules stay silent), callers see unknown
        self._walks[function] = result
        return result


def _model_access(event: _Access, order: int | None, names: list[str]) -> PointerAccess:
    target = event.target
    root = ".".join((names[target.param], *target.fields))
    return PointerAccess(event.kind, event.span, root, target.param, target.fields, event.how, order, event.atomic)
