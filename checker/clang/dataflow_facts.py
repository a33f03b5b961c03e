"""Data-flow facts of kernel and device-function bodies (KC102, KC201-KC205).

For every kernel and device function of the checked file, one walk over its body records,
in execution order:

* the PDL calls: `PDLWaitPrimary<flag>()` / `PDLTriggerSecondary<flag>()` (with the
  template-argument text), raw `griddepcontrol.wait` / `.launch_dependents` asm, the CUDA API
  spellings, and calls of device functions that do any of these;
* the accesses through the pointers the function received: a pointer parameter, a pointer
  field of a by-value params struct (also in arrays and nested structs of it), or a pointer
  derived from those by arithmetic, casts, `pointer::offset`, local copies and references. An
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

import clang.cindex as ci

from ..model import (
    AccessKind, DataflowFacts, Function, FunctionDataflow, FunctionKind, InlineAsm, LaunchCandidates,
    LaunchedKernel, PdlCall, PdlCallKind, PointerAccess, Span,
)
from .capi import (
    UNARY_ADDRESS_OF, UNARY_DEREF, UNARY_POST_DEC, UNARY_POST_INC, UNARY_PRE_DEC, UNARY_PRE_INC, asm_parts,
    overloaded_decls, skipped_spans, unary_operator,
)
from .cursors import (
    FUNCTION_KINDS, MAX_NESTING, PARENS_AND_CONVERSIONS, RECORD_KINDS, K, NestedTooDeeply, has_child_kind,
    qualified_name, span_of, strip_parens, walk,
)

T = ci.TypeKind

# -- what is known about callees by name -------------------------------------------------------

# The PDL pair as spelled by the library, the CUDA runtime and CUTLASS (`cutlass::arch::`).
_PDL_FUNCTIONS = {
    "PDLWaitPrimary": PdlCallKind.WAIT, "cudaGridDependencySynchronize": PdlCallKind.WAIT,
    "wait_on_dependent_grids": PdlCallKind.WAIT,
    "PDLTriggerSecondary": PdlCallKind.TRIGGER, "cudaTriggerProgrammaticLaunchCompletion": PdlCallKind.TRIGGER,
    "launch_dependent_grids": PdlCallKind.TRIGGER,
}
_R, _W = (AccessKind.READ,), (AccessKind.WRITE,)
_RW = (AccessKind.READ, AccessKind.WRITE)
# Effects of well-known helpers on their pointer arguments, used when no body is visible (CUDA
# built-ins, dependent member calls such as `vec.load(src, i)` in a template).
_KNOWN_EFFECTS: dict[str, tuple[tuple[int, tuple[AccessKind, ...]], ...]] = {
    **{name: ((0, _R),) for name in ("__ldg", "__ldca", "__ldcg", "__ldcs", "__ldlu", "__ldcv",
                                     "load", "load_as", "load_bytes", "Load")},
    **{name: ((0, _W),) for name in ("__stcg", "__stcs", "__stwt", "__stwb", "store", "store_as",
                                     "store_bytes", "Store", "memset", "__builtin_memset")},
    "memcpy": ((0, _W), (1, _R)),
    "__builtin_memcpy": ((0, _W), (1, _R)),
}
# Asynchronous copies (`cg::memcpy_async(group, dst, src, n)`, `cuda::memcpy_async(dst, src, ...)`,
# `__pipeline_memcpy_async(dst, src, n)`): the first pointer argument is written, later ones read.
_ASYNC_COPIES = ("memcpy_async", "__pipeline_memcpy_async")
_ATOMIC_PREFIX = "atomic"  # atomicAdd, atomicCAS, atomicMax_block...: read-modify-write of arg 0
_PASS_THROUGH = ("__builtin_assume_aligned",)  # return their first argument's pointer

# Inline PTX: which instructions read or write the global memory their pointer operands name.
_PTX_MNEMONIC = re.compile(r"(?<![\w.%$])(ldu|ld|st|red|atom|cp|prefetchu|prefetch)(?=[.\s])((?:\.[\w:]+)*)")
_PTX_PRIVATE_SPACES = (".shared", ".local", ".param", ".const")

_ASSIGNMENT_OPERATORS = {"operator=", "operator+=", "operator-=", "operator*=", "operator/=",
                         "operator%=", "operator&=", "operator|=", "operator^=", "operator<<=",
                         "operator>>="}
_CAST_KINDS = (K.CSTYLE_CAST_EXPR, K.CXX_STATIC_CAST_EXPR, K.CXX_REINTERPRET_CAST_EXPR,
               K.CXX_CONST_CAST_EXPR, K.CXX_FUNCTIONAL_CAST_EXPR, K.CXX_DYNAMIC_CAST_EXPR)
_COMPILE_TIME_DECLS = (K.TYPE_ALIAS_DECL, K.TYPEDEF_DECL, K.USING_DECLARATION, K.USING_DIRECTIVE,
                       K.STATIC_ASSERT, K.TYPE_ALIAS_TEMPLATE_DECL, K.NAMESPACE_ALIAS, *RECORD_KINDS,
                       K.ENUM_DECL)
_MEMBER_TAIL = re.compile(rb"(\.|->)\s*(?:template\s+)?(~?\w+)\s*$")
_UNEVALUATED = (K.CXX_UNARY_EXPR, K.CXX_TYPEID_EXPR, K.SIZE_OF_PACK_EXPR)  # sizeof, alignof, typeid
_MAX_CANDIDATES = 8


# -- values the walk tracks ---------------------------------------------------------------------

class _Shape(enum.Enum):
    POINTER = "pointer"  # points into memory the function received
    STRUCT = "struct"  # a params struct (by value or by reference): its pointer fields are roots
    POINTER_ARRAY = "pointer array"  # an array of pointers inside a params struct
    STRUCT_ARRAY = "struct array"
    ELEMENT = "element"  # a reference bound to memory behind a pointer: using it is an access


@dataclass(frozen=True)
class _Origin:
    """Where a value came from: parameter `param` of callable `scope`, then `fields`."""

    scope: int  # 0: the function walked; 1, 2...: its lambdas
    param: int
    fields: tuple[str, ...]
    shape: _Shape
    record: ci.Cursor | None = field(default=None, compare=False, hash=False)  # for STRUCT shapes

    def reshaped(self, shape: _Shape, record: ci.Cursor | None = None) -> "_Origin":
        return _Origin(self.scope, self.param, self.fields, shape, record)

    def field(self, name: str, shape: _Shape, record: ci.Cursor | None) -> "_Origin":
        return _Origin(self.scope, self.param, (*self.fields, name), shape, record)


Values = tuple[_Origin, ...]  # () when the expression is not a tracked pointer or struct


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
    target: _Origin
    span: Span
    how: str


@dataclass(frozen=True)
class _Pdl:
    kind: PdlCallKind
    span: Span
    flag: str
    via: str
    leads_body: bool
    flag_through_type: bool = False


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
    returns: frozenset[tuple[int, tuple[str, ...]]]  # (param, fields) a returned pointer derives from
    param_count: int


@dataclass
class _WalkResult:
    events: list[tuple[int | None, _Event]]
    returns: set[tuple[int, tuple[str, ...]]]
    asm: list[InlineAsm]
    referenced: set[int]
    params: list[ci.Cursor]

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
            key = (event.kind, event.target.param, event.target.fields)
            if key not in seen:
                seen.add(key)
                events.append(event)
        return _Summary(tuple(events), frozenset(self.returns), len(self.params))


# -- type helpers ---------------------------------------------------------------------------------

def _classify(type_: ci.Type) -> tuple[_Shape, ci.Cursor | None] | None:
    """The shape of a parameter or field type, or None for scalars and unknown types."""
    if type_.kind in (T.LVALUEREFERENCE, T.RVALUEREFERENCE):
        return _classify(type_.get_pointee())
    canonical = type_.get_canonical()
    if canonical.kind == T.POINTER:
        pointee = canonical.get_pointee()
        return None if pointee.kind in (T.FUNCTIONPROTO, T.FUNCTIONNOPROTO) else (_Shape.POINTER, None)
    if canonical.kind in (T.CONSTANTARRAY, T.INCOMPLETEARRAY, T.DEPENDENTSIZEDARRAY, T.VARIABLEARRAY):
        element = _classify(canonical.element_type)
        if element is None:
            return None
        if element[0] is _Shape.POINTER:
            return _Shape.POINTER_ARRAY, None
        return (_Shape.STRUCT_ARRAY, element[1]) if element[0] is _Shape.STRUCT else None
    declaration = type_.get_declaration()
    if declaration.kind not in RECORD_KINDS:
        declaration = canonical.get_declaration()
    if declaration.kind in RECORD_KINDS:
        return _Shape.STRUCT, declaration
    return None


def _field_shape(owner: ci.Cursor | None, name: str, member: ci.Cursor) -> tuple[_Shape, ci.Cursor | None] | None:
    """The shape of field `name`: from the member expression, else from the struct declaration
    (a member of a dependent `Params<T>` has no type until instantiation)."""
    if member.type.kind not in (T.DEPENDENT, T.UNEXPOSED, T.INVALID):
        return _classify(member.type)
    if owner is None or not name:
        return None
    for child in owner.get_children():
        if child.kind == K.FIELD_DECL and child.spelling == name:
            return _classify(child.type)
    return None


def _is_pointer_like(type_: ci.Type) -> bool:
    """A pointer, or an array (which decays to one when passed)."""
    return type_.get_canonical().kind in (T.POINTER, T.CONSTANTARRAY, T.INCOMPLETEARRAY,
                                          T.DEPENDENTSIZEDARRAY, T.VARIABLEARRAY)


def _callable_params(cursor: ci.Cursor) -> list[ci.Cursor]:
    return [c for c in cursor.get_children() if c.kind == K.PARM_DECL]


def _definition(candidate: ci.Cursor) -> ci.Cursor | None:
    """The definition (with a body) of a called function or of the template it instantiates."""
    if candidate.kind not in FUNCTION_KINDS:
        return None
    template = candidate.specialized_template
    definition = (template or candidate).get_definition()
    if definition is None or definition.location.is_in_system_header:
        return None
    has_body = any(c.kind == K.COMPOUND_STMT for c in definition.get_children())
    return definition if has_body else None


def _may_write_through(candidates: list[ci.Cursor], index: int, element: bool = False) -> bool:
    """Whether a callee we cannot see into may write through its `index`-th argument: a
    pointer argument, or with `element` an lvalue argument (`f(out[i])`), which only a
    non-const reference parameter can write (a by-value `T x` never deduces a reference)."""
    if not candidates:
        return True
    for candidate in candidates:
        params = _callable_params(candidate) if candidate.kind in FUNCTION_KINDS else []
        if index >= len(params):
            return True  # variadic, or an unknown shape
        type_ = params[index].type
        if type_.kind in (T.LVALUEREFERENCE, T.RVALUEREFERENCE):
            if not type_.get_pointee().is_const_qualified():
                return True
            continue
        if element:
            continue
        canonical = type_.get_canonical()
        if canonical.kind == T.POINTER and not canonical.get_pointee().is_const_qualified():
            return True
        if canonical.kind in (T.UNEXPOSED, T.DEPENDENT, T.INVALID):
            return True
    return False


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

class _SourceBytes:
    """File contents by path: the checked file's (possibly unsaved) bytes, headers from disk."""

    def __init__(self, main_path: str, main_data: bytes) -> None:
        self.main_path = main_path
        self._files = {main_path: main_data}

    def of(self, extent: ci.SourceRange) -> bytes:
        start, end = extent.start, extent.end
        if start.file is None or end.file is None or start.file.name != end.file.name:
            return b""
        name = start.file.name
        if name not in self._files:
            try:
                self._files[name] = Path(name).read_bytes()
            except OSError:
                self._files[name] = b""
        return self._files[name][start.offset:end.offset]


class _Walker:
    """One pass over one function body; see the module docstring for what it records."""

    def __init__(self, extractor: "DataflowExtractor", function: ci.Cursor, body: ci.Cursor) -> None:
        self.extractor = extractor
        self.source = extractor.source
        self.function = function
        self.params = _callable_params(function)
        self.env: dict[ci.Cursor, Values] = {}
        self.lambda_vars: dict[ci.Cursor, _Lambda] = {}
        self.lambdas: dict[ci.Cursor, _Lambda] = {}
        self.events: list[tuple[int | None, _Event]] = []
        self.returns: set[tuple[int, tuple[str, ...]]] = set()
        self.asm: list[InlineAsm] = []
        self.referenced: set[int] = set()
        self.order = 0
        self.scopes = 0
        self.scope_params: dict[ci.Cursor, int] = {p: i for i, p in enumerate(self.params)}
        self.lead = _leading_statement(body, self.source)
        self.body = body
        for index, param in enumerate(self.params):
            self._bind_param(param, 0, index)

    def run(self) -> _WalkResult:
        self.visit(self.body)
        for lam in self.lambdas.values():
            if not lam.invoked:  # its writes and escapes still count, its order is unknown
                self.events.extend((None, event) for event in lam.events
                                   if not (isinstance(event, _Access) and event.target.scope == lam.scope))
        return _WalkResult(self.events, self.returns, self.asm, self.referenced, self.params)

    # -- bookkeeping ---------------------------------------------------------------------------
    def _bind_param(self, param: ci.Cursor, scope: int, index: int) -> None:
        shape = _classify(param.type)
        if shape is not None and shape[0] in (_Shape.POINTER, _Shape.STRUCT):
            self.env[param] = (_Origin(scope, index, (), shape[0], shape[1]),)

    def _emit(self, event: _Event) -> None:
        self.order += 1
        self.events.append((self.order, event))

    def _access(self, values: Values, use: _Use, span: Span, how: str) -> None:
        for origin in values:
            for kind in use.value:
                self._emit(_Access(kind, origin.reshaped(_Shape.POINTER), span, how))

    def _escape(self, values: Values, span: Span, how: str) -> None:
        for origin in values:
            if origin.shape in (_Shape.POINTER, _Shape.STRUCT, _Shape.POINTER_ARRAY):
                self._emit(_Access(AccessKind.ESCAPE, origin, span, how))

    def _children(self, node: ci.Cursor) -> list[ci.Cursor]:
        return list(node.get_children())

    # -- dispatch ------------------------------------------------------------------------------
    def visit(self, node: ci.Cursor, use: _Use = _Use.READ) -> Values:
        # Recursive, one level per AST level; the depth counts across the walks of callee
        # summaries too, since those nest inside a call's visit on the same stack.
        extractor = self.extractor
        if extractor.nesting >= MAX_NESTING:
            raise NestedTooDeeply(node, extractor.path)
        extractor.nesting += 1
        try:
            kind = node.kind
            handler = _HANDLERS.get(kind)
            if handler is not None:
                return handler(self, node, use)
            if kind in _CAST_KINDS or kind in PARENS_AND_CONVERSIONS:
                return self._visit_wrapper(node, use)
            if kind == K.LAMBDA_EXPR:
                self._lambda(node)
                return ()
            if kind in _UNEVALUATED or kind.is_declaration():
                return ()  # sizeof operands, local types, aliases, static_asserts: nothing runs
            for child in node.get_children():
                self.visit(child)
            return ()
        finally:
            extractor.nesting -= 1

    def _visit_wrapper(self, node: ci.Cursor, use: _Use) -> Values:
        children = self._children(node)
        if node.kind == K.UNEXPOSED_EXPR and _is_unresolved_call(node, children):
            return self._visit_call_parts(node, children[0], children[1:], use)
        values: Values = ()
        for child in children:
            if child.kind in (K.TYPE_REF, K.TEMPLATE_REF, K.NAMESPACE_REF):
                continue
            values = self.visit(child, use)
        return values

    def _visit_decl_ref(self, node: ci.Cursor, use: _Use) -> Values:
        declaration = node.referenced
        if declaration is None:
            return ()
        if declaration.kind == K.PARM_DECL and declaration in self.scope_params:
            self.referenced.add(self.scope_params[declaration])
        values = self.env.get(declaration, ())
        elements = tuple(o for o in values if o.shape is _Shape.ELEMENT)
        if elements:
            if use is _Use.ADDRESS:
                return tuple(o.reshaped(_Shape.POINTER) for o in elements)
            self._access(elements, use, span_of(node.extent), "reference")
            return ()
        if use is _Use.ADDRESS:  # `&p`: the pointer variable itself leaves our sight
            self._escape(tuple(o for o in values if o.shape is _Shape.POINTER), span_of(node.extent), "&")
            return tuple(o for o in values if o.shape is _Shape.STRUCT)
        return values

    def _visit_member(self, node: ci.Cursor, use: _Use) -> Values:
        children = self._children(node)
        if not children:
            return ()  # an implicit `this->member`: not a received pointer
        name, arrow = _member_name(node, children[0], self.source)
        if arrow:
            bases = self.visit(children[0])
            pointers = tuple(o for o in bases if o.shape is _Shape.POINTER)
            if use is _Use.ADDRESS:
                return pointers
            self._access(pointers, use, span_of(node.extent), "->")
            return ()
        bases = self.visit(children[0], use)
        result: list[_Origin] = []
        for origin in bases:
            if origin.shape is _Shape.STRUCT:
                shape = _field_shape(origin.record, name, node)
                if shape is not None:
                    result.append(origin.field(name, *shape))
            elif origin.shape is _Shape.POINTER and use is _Use.ADDRESS:
                result.append(origin)  # `&p[i].x`: still an address inside the same buffer
        return tuple(result)

    def _visit_subscript(self, node: ci.Cursor, use: _Use) -> Values:
        children = self._children(node)
        if len(children) != 2:
            return ()
        bases = self.visit(children[0])
        self.visit(children[1])
        return self._through(bases, use, span_of(node.extent), "subscript")

    def _through(self, bases: Values, use: _Use, span: Span, how: str) -> Values:
        """`*p` / `p[i]`: an access through pointers, or the element of an array of them."""
        result: list[_Origin] = []
        pointers = tuple(o for o in bases if o.shape is _Shape.POINTER)
        if use is _Use.ADDRESS:
            result.extend(pointers)
        else:
            self._access(pointers, use, span, how)
        for origin in bases:
            if origin.shape is _Shape.POINTER_ARRAY:
                result.append(origin.reshaped(_Shape.POINTER))
            elif origin.shape is _Shape.STRUCT_ARRAY:
                result.append(origin.reshaped(_Shape.STRUCT, origin.record))
        return tuple(result)

    def _visit_unary(self, node: ci.Cursor, use: _Use) -> Values:
        children = self._children(node)
        if len(children) != 1:
            return ()
        operator = unary_operator(node)
        if operator == UNARY_DEREF:
            return self._through(self.visit(children[0]), use, span_of(node.extent), "dereference")
        if operator == UNARY_ADDRESS_OF:
            return self.visit(children[0], _Use.ADDRESS)
        if operator in (UNARY_PRE_INC, UNARY_PRE_DEC, UNARY_POST_INC, UNARY_POST_DEC):
            return self.visit(children[0], _Use.READ_WRITE)
        self.visit(children[0])
        return ()

    def _visit_binary(self, node: ci.Cursor, use: _Use) -> Values:
        children = self._children(node)
        if len(children) != 2:
            return ()
        operator = node.binary_operator
        if operator == ci.BinaryOperator.Assign:
            return self._assign(children[0], children[1])
        left, right = self.visit(children[0]), self.visit(children[1])
        if operator == ci.BinaryOperator.Comma:
            return right
        if operator in (ci.BinaryOperator.Add, ci.BinaryOperator.Sub):
            return _pointer_operand(left, right)
        return ()

    def _visit_compound_assignment(self, node: ci.Cursor, use: _Use) -> Values:
        children = self._children(node)
        if len(children) != 2:
            return ()
        target = self.visit(children[0], _Use.READ_WRITE)
        self.visit(children[1])
        return target

    def _assign(self, target: ci.Cursor, value_node: ci.Cursor) -> Values:
        value = self.visit(value_node)
        lhs = strip_parens(target)
        declaration = lhs.referenced if lhs.kind == K.DECL_REF_EXPR else None
        binds_element = declaration is not None and any(
            o.shape is _Shape.ELEMENT for o in self.env.get(declaration, ()))
        if declaration is not None and self._is_local(declaration) and not binds_element:
            self.env[declaration] = _union(self.env.get(declaration, ()), value)
            return self.env[declaration]
        self.visit(target, _Use.WRITE)
        self._escape(value, span_of(value_node.extent), "stored")  # into memory we do not track
        return ()

    def _is_local(self, declaration: ci.Cursor) -> bool:
        """A parameter or variable of the walked body (a global pointer is memory we do not track)."""
        if declaration.kind not in (K.VAR_DECL, K.PARM_DECL):
            return False
        if declaration.kind == K.PARM_DECL and declaration in self.scope_params:
            return True
        location, body = declaration.location, self.body.extent
        return location.file is not None and body.start.file is not None \
            and location.file.name == body.start.file.name \
            and body.start.offset <= location.offset <= body.end.offset

    def _visit_conditional(self, node: ci.Cursor, use: _Use) -> Values:
        children = self._children(node)
        if len(children) != 3:
            return ()
        self.visit(children[0])
        return _union(self.visit(children[1], use), self.visit(children[2], use))

    def _visit_var(self, node: ci.Cursor, use: _Use) -> Values:
        expressions = [c for c in node.get_children() if c.kind.is_expression()]
        if not expressions or not _has_initializer(node, self.source):
            for expression in expressions:  # array bounds
                self.visit(expression)
            return ()
        for expression in expressions[:-1]:
            self.visit(expression)
        initializer = expressions[-1]
        is_reference = node.type.kind in (T.LVALUEREFERENCE, T.RVALUEREFERENCE)
        # an object (a record, or a dependent type: `Writer<N> w(out, n)`) may write later
        # through a pointer it is built from
        is_object = not is_reference and node.type.get_canonical().kind in (T.RECORD, T.UNEXPOSED)
        lam = self._lambda_at(initializer, create=True)
        if lam is not None:
            self.lambda_vars[node] = lam
            return ()
        inner = strip_parens(initializer)
        if is_reference and _is_memory_access(inner, self.source):
            values = tuple(o.reshaped(_Shape.ELEMENT) for o in self.visit(initializer, _Use.ADDRESS)
                           if o.shape is _Shape.POINTER)
        else:
            values = self._visit_constructor_arguments(initializer) if is_object else self.visit(initializer)
            if is_object:  # a struct copy stays a struct
                self._escape(tuple(o for o in values if o.shape is not _Shape.STRUCT),
                             span_of(initializer.extent), "stored")
                values = tuple(o for o in values if o.shape is _Shape.STRUCT)
        if values:
            self.env[node] = _union(self.env.get(node, ()), values)
        return ()

    def _visit_constructor_arguments(self, initializer: ci.Cursor) -> Values:
        """The values of an object's initializer; of every argument of a dependent type's
        `(a, b)` list (one unexposed expression whose children are the arguments)."""
        children = self._children(initializer)
        if initializer.kind != K.UNEXPOSED_EXPR or len(children) < 2 or _is_unresolved_call(initializer, children):
            return self.visit(initializer)
        return tuple(value for child in children for value in self.visit(child))

    def _visit_return(self, node: ci.Cursor, use: _Use) -> Values:
        for child in node.get_children():
            for origin in self.visit(child):
                if origin.scope == 0 and origin.shape is _Shape.POINTER:
                    self.returns.add((origin.param, origin.fields))
        return ()

    def _visit_init_list(self, node: ci.Cursor, use: _Use) -> Values:
        for child in node.get_children():
            self._escape(self.visit(child), span_of(child.extent), "stored")
        return ()

    # -- calls ---------------------------------------------------------------------------------
    def _visit_call(self, node: ci.Cursor, use: _Use) -> Values:
        children = self._children(node)
        operator_at = next((i for i, c in enumerate(children) if _operator_name(c)), None)
        if operator_at is not None:
            name = _operator_name(children[operator_at])
            return self._operator_call(node, name, [c for i, c in enumerate(children) if i != operator_at], use)
        referenced = node.referenced
        if referenced is not None and referenced.kind == K.CONSTRUCTOR:
            return self._construct(node, children, use)
        if not children:
            return ()
        return self._visit_call_parts(node, children[0], children[1:], use)

    def _construct(self, node: ci.Cursor, args: list[ci.Cursor], use: _Use) -> Values:
        """A copy of a params struct flows through; a pointer handed to an object's
        constructor leaves our sight (the object may write through it later)."""
        copies: list[_Origin] = []
        for arg in args:
            values = self.visit(arg, use if len(args) == 1 else _Use.READ)
            copies.extend(o for o in values if o.shape is _Shape.STRUCT and len(args) == 1)
            self._escape(tuple(o for o in values if o.shape is not _Shape.STRUCT or len(args) > 1),
                         span_of(arg.extent), f"{node.spelling}()")
        return tuple(copies)

    def _operator_call(self, node: ci.Cursor, name: str, operands: list[ci.Cursor], use: _Use) -> Values:
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
            return _pointer_operand(*values)
        if name == "operator*" and len(values) == 1:  # `*p` in a template: a dereference
            return self._through(values[0], use, span_of(node.extent), "dereference")
        return ()

    def _visit_call_parts(self, node: ci.Cursor, callee: ci.Cursor, args: list[ci.Cursor], use: _Use) -> Values:
        lam = self._lambda_at(callee, create=True)  # `[&] {...}()` or a variable bound to one
        if lam is not None:
            self._invoke(lam, args, [self.visit(arg) for arg in args])
            return ()
        name, candidates = self._callee(callee)
        pdl_kind = _PDL_FUNCTIONS.get(name)
        if pdl_kind is not None:
            for arg in args:
                self.visit(arg)
            self._pdl(pdl_kind, node, _template_argument_text(self.source.of(callee.extent)), name,
                      flag_through_type=_names_type_parameter(callee))
            return ()
        arg_values = [self.visit(arg, self._argument_use(arg, candidates, index))
                      for index, arg in enumerate(args)]
        result = self._apply_callee(node, name, candidates, args, arg_values)
        for arg in args:  # a lambda handed to a callee runs during the call
            passed = self._lambda_at(arg, create=False)
            if passed is not None:
                self._invoke(passed, [], [])
        return result

    def _argument_use(self, arg: ci.Cursor, candidates: list[ci.Cursor] | None, index: int) -> _Use:
        """An lvalue argument (`f(out[i])`) may be bound to a reference the callee writes."""
        if not _is_memory_access(strip_parens(arg), self.source):
            return _Use.READ
        if candidates is None or _may_write_through(candidates, index, element=True):
            return _Use.MAY_WRITE
        return _Use.READ

    def _callee(self, callee: ci.Cursor) -> tuple[str, list[ci.Cursor] | None]:
        """The callee's name and candidate declarations (None when they cannot be known)."""
        inner = strip_parens(callee)
        if inner.kind == K.MEMBER_REF_EXPR:
            children = self._children(inner)
            name, _ = _member_name(inner, children[0], self.source) if children else (inner.spelling, False)
            referenced = inner.referenced
            if children and _is_mutating_method(referenced):
                # `counters[i].inc(1)` writes the element. Recorded as a write only: what such a
                # method reads (an atomic's old value) is its own state, not a producer's output.
                self._visit_member(inner, _Use.WRITE)
            elif children:
                self.visit(children[0])
            if referenced is not None and referenced.kind in FUNCTION_KINDS:
                return name, [referenced]
            owner = children[0].type.get_declaration() if children else None
            if owner is not None and owner.kind in RECORD_KINDS:
                methods = [c for c in owner.get_children() if c.kind in FUNCTION_KINDS and c.spelling == name]
                return name, methods or None
            return name, None
        decls = _callee_decls(inner)
        if decls is None:
            trait_member = _member_of_type_parameter(inner, self.source)
            if trait_member is not None:  # `Trait::forward(params)`: a static member of some trait
                return trait_member, self.extractor.static_members_named(inner, trait_member)
            self.visit(callee)
            return "", None
        name = decls[0].spelling if decls else _overloaded_name(inner)
        return name, [d for d in decls if d.kind in FUNCTION_KINDS]

    def _apply_callee(self, node: ci.Cursor, name: str, candidates: list[ci.Cursor] | None,
                      args: list[ci.Cursor], arg_values: list[Values]) -> Values:
        is_pointer_offset = name == "offset" and bool(candidates) and all(
            c.semantic_parent.spelling == "pointer" for c in candidates)
        if is_pointer_offset or name in _PASS_THROUGH:  # `pointer::offset(p, ...)` is still `p`
            return arg_values[0] if arg_values else ()
        summaries = self._summaries(candidates or [], args)
        if summaries:
            result: Values = ()
            for summary in summaries:
                result = _union(result, self._replay(summary, node, name, args, arg_values))
            return result
        effects = _KNOWN_EFFECTS.get(name)
        if effects is None and name.startswith(_ATOMIC_PREFIX):
            effects = ((0, _RW),)
        if effects is None and name in _ASYNC_COPIES:
            pointers = [i for i, arg in enumerate(args) if _is_pointer_like(arg.type)]
            effects = tuple((i, _W if i == pointers[0] else _R) for i in pointers)
        if effects is not None:
            for index, kinds in effects:
                if index < len(args):
                    self._emit_kinds(arg_values[index], kinds, span_of(args[index].extent), f"{name}()")
            return ()
        for index, (arg, values) in enumerate(zip(args, arg_values, strict=True)):
            if values and (candidates is None or _may_write_through(candidates, index)):
                self._escape(values, span_of(arg.extent), f"{name or 'call'}()")
        return ()

    def _emit_kinds(self, values: Values, kinds: Iterable[AccessKind], span: Span, how: str) -> None:
        for origin in values:
            if origin.shape is _Shape.POINTER:
                for kind in kinds:
                    self._emit(_Access(kind, origin, span, how))

    def _summaries(self, candidates: list[ci.Cursor], args: list[ci.Cursor]) -> list[_Summary]:
        """Summaries of the candidates whose bodies are visible (outside system headers)."""
        summaries = []
        for candidate in candidates:
            definition = _definition(candidate)
            if definition is None:
                continue
            params = _callable_params(definition)
            if len(params) < len(args) and not any("..." in p.type.spelling for p in params):
                continue
            summary = self.extractor.summary(definition)
            if summary is None:
                return []  # recursion: treat the callee as unknown
            summaries.append(summary)
        return summaries

    def _replay(self, summary: _Summary, node: ci.Cursor, name: str, args: list[ci.Cursor],
                arg_values: list[Values]) -> Values:
        call_span = span_of(node.extent)
        how = f"{name}()"
        for event in summary.events:
            if isinstance(event, _Pdl):
                leads = event.leads_body and self._is_lead(node)
                self._emit(_Pdl(event.kind, call_span, "", how, leads))
                continue
            index = event.target.param
            if index >= len(args):
                continue
            for origin in arg_values[index]:
                mapped = _extend(origin, event.target.fields)
                if mapped is not None:
                    self._emit(_Access(event.kind, mapped, span_of(args[index].extent), how))
        result: list[_Origin] = []
        for index, fields in summary.returns:
            for origin in arg_values[index] if index < len(arg_values) else ():
                mapped = _extend(origin, fields)
                if mapped is not None:
                    result.append(mapped)
        return tuple(result)

    def _pdl(self, kind: PdlCallKind, node: ci.Cursor, flag: str, via: str, flag_through_type: bool = False) -> None:
        self._emit(_Pdl(kind, span_of(node.extent), flag, via, self._is_lead(node), flag_through_type))

    def _is_lead(self, node: ci.Cursor) -> bool:
        """Whether `node` is (or starts) the body's leading statement."""
        if self.lead is None:
            return False
        lead, here = self.lead.extent.start, node.extent.start
        return lead.offset == here.offset and lead.file is not None and here.file is not None \
            and lead.file.name == here.file.name

    # -- lambdas -------------------------------------------------------------------------------
    def _lambda(self, node: ci.Cursor) -> _Lambda:
        if node in self.lambdas:
            return self.lambdas[node]
        self.scopes += 1
        scope = self.scopes
        for index, param in enumerate(_callable_params(node)):
            self._bind_param(param, scope, index)
        saved_events, saved_returns, saved_order = self.events, self.returns, self.order
        self.events, self.returns = [], set()
        for child in node.get_children():
            if child.kind == K.COMPOUND_STMT:
                self.visit(child)
        lam = _Lambda(scope, [event for _, event in self.events])
        self.events, self.returns, self.order = saved_events, saved_returns, saved_order
        self.lambdas[node] = lam
        return lam

    def _lambda_at(self, node: ci.Cursor, create: bool) -> _Lambda | None:
        """The lambda an expression evaluates to: a lambda expression or a variable bound to one."""
        inner = strip_parens(node)
        while inner.kind == K.CALL_EXPR and inner.referenced is not None \
                and inner.referenced.kind == K.CONSTRUCTOR and len(self._children(inner)) == 1:
            inner = strip_parens(self._children(inner)[0])  # the closure's copy/move
        if inner.kind == K.LAMBDA_EXPR:
            return self._lambda(inner) if create or inner in self.lambdas else None
        if inner.kind == K.DECL_REF_EXPR and inner.referenced is not None:
            return self.lambda_vars.get(inner.referenced)
        return None

    def _invoke(self, lam: _Lambda, args: list[ci.Cursor], arg_values: list[Values]) -> None:
        lam.invoked = True
        for event in lam.events:
            if isinstance(event, _Access) and event.target.scope == lam.scope:
                index = event.target.param
                if index < len(args):
                    for origin in arg_values[index]:
                        mapped = _extend(origin, event.target.fields)
                        if mapped is not None:
                            self._emit(_Access(event.kind, mapped, span_of(args[index].extent), event.how))
                continue
            self._emit(event)

    # -- inline asm ----------------------------------------------------------------------------
    def _visit_asm(self, node: ci.Cursor, use: _Use) -> Values:
        parts = asm_parts(node)
        span = span_of(node.extent)
        self.asm.append(InlineAsm(span, parts.template, parts.clobbers, parts.is_volatile,
                                  qualified_name(self.function)))
        for output in parts.outputs:
            self.visit(output, _Use.WRITE)
        effects = _ptx_effects(parts.template)
        for operand in parts.inputs:
            self._emit_kinds(self.visit(operand), effects, span_of(operand.extent), "asm")
        if "griddepcontrol.wait" in parts.template:
            self._pdl(PdlCallKind.WAIT, node, "", "asm")
        if "griddepcontrol.launch_dependents" in parts.template:
            self._pdl(PdlCallKind.TRIGGER, node, "", "asm")
        return ()



_HANDLERS: dict[ci.CursorKind, Callable[[_Walker, ci.Cursor, _Use], Values]] = {
    K.DECL_REF_EXPR: _Walker._visit_decl_ref,
    K.MEMBER_REF_EXPR: _Walker._visit_member,
    K.ARRAY_SUBSCRIPT_EXPR: _Walker._visit_subscript,
    K.UNARY_OPERATOR: _Walker._visit_unary,
    K.BINARY_OPERATOR: _Walker._visit_binary,
    K.COMPOUND_ASSIGNMENT_OPERATOR: _Walker._visit_compound_assignment,
    K.CONDITIONAL_OPERATOR: _Walker._visit_conditional,
    K.VAR_DECL: _Walker._visit_var,
    K.RETURN_STMT: _Walker._visit_return,
    K.INIT_LIST_EXPR: _Walker._visit_init_list,
    K.CALL_EXPR: _Walker._visit_call,
    K.ASM_STMT: _Walker._visit_asm,
}


def _member_name(node: ci.Cursor, base: ci.Cursor, source: _SourceBytes) -> tuple[str, bool]:
    """The member's name and whether it is reached with `->`. A member of a dependent type has
    no spelling or declaration yet, so both come from the source text when they can."""
    match = _MEMBER_TAIL.search(source.of(node.extent))
    name = node.spelling or (match.group(2).decode() if match else "")
    if match:
        return name, match.group(1) == b"->"
    return name, base.type.get_canonical().kind == T.POINTER


def _union(first: Values, second: Values) -> Values:
    return tuple(dict.fromkeys((*first, *second)))


def _is_mutating_method(method: ci.Cursor | None) -> bool:
    """A non-const, non-static member function: called on an object, it may change it."""
    return (method is not None and method.kind == K.CXX_METHOD and not method.is_const_method()
            and not method.is_static_method())


def _pointer_operand(left: Values, right: Values) -> Values:
    """`p + n` / `n + p` / `p - n`: the pointer side (`p - q` is a distance, not a pointer)."""
    left_pointers = tuple(o for o in left if o.shape is _Shape.POINTER)
    right_pointers = tuple(o for o in right if o.shape is _Shape.POINTER)
    if left_pointers and right_pointers:
        return ()
    return left_pointers or right_pointers


def _extend(origin: _Origin, fields: tuple[str, ...]) -> _Origin | None:
    """A callee's access to `param.fields` seen from the caller whose argument is `origin`."""
    if not fields:
        return origin.reshaped(_Shape.POINTER) if origin.shape is _Shape.POINTER else None
    if origin.shape is not _Shape.STRUCT:
        return None
    return _Origin(origin.scope, origin.param, (*origin.fields, *fields), _Shape.POINTER)


def _is_memory_access(node: ci.Cursor, source: _SourceBytes) -> bool:
    """Whether an expression names memory behind a pointer (`p[i]`, `*p`, `p->x`, `p[i].x`)."""
    if node.kind == K.ARRAY_SUBSCRIPT_EXPR:
        return True
    if node.kind == K.UNARY_OPERATOR:
        return unary_operator(node) == UNARY_DEREF
    if node.kind == K.MEMBER_REF_EXPR:
        children = list(node.get_children())
        if not children:
            return False
        _, arrow = _member_name(node, children[0], source)
        return arrow or _is_memory_access(strip_parens(children[0]), source)
    return False


def _callee_decls(callee: ci.Cursor) -> list[ci.Cursor] | None:
    """The declarations a callee expression names; None when it names no function."""
    inner = strip_parens(callee)
    if inner.kind != K.DECL_REF_EXPR:
        return None
    overloaded = next((c for c in inner.get_children() if c.kind == K.OVERLOADED_DECL_REF), None)
    if overloaded is not None:
        return overloaded_decls(overloaded)[:_MAX_CANDIDATES]
    referenced = inner.referenced
    if referenced is None:
        return None
    if referenced.kind == K.OVERLOADED_DECL_REF:
        return overloaded_decls(referenced)[:_MAX_CANDIDATES]
    return [referenced] if referenced.kind in FUNCTION_KINDS else None


_LAST_NAME = re.compile(rb"(\w+)\s*(?:<.*)?$", re.S)


def _member_of_type_parameter(callee: ci.Cursor, source: "_SourceBytes") -> str | None:
    """`forward` for a callee spelled `Trait::forward` / `Trait::template forward<T>` where
    `Trait` is a template type parameter: a dependent name clang leaves unresolved."""
    if callee.kind != K.DECL_REF_EXPR or callee.spelling:
        return None
    qualifier = next(iter(callee.get_children()), None)
    if qualifier is None or qualifier.kind != K.TYPE_REF or qualifier.referenced is None \
            or qualifier.referenced.kind != K.TEMPLATE_TYPE_PARAMETER:
        return None
    match = _LAST_NAME.search(source.of(callee.extent))
    return match.group(1).decode() if match else None


def _main_file_records(cursor: ci.Cursor, path: str) -> Iterator[ci.Cursor]:
    """The struct and class (template) definitions of the checked file, nested ones included."""
    for child in cursor.get_children():
        if child.location.file is None or child.location.file.name != path:
            continue
        if child.kind in RECORD_KINDS:
            yield child
            yield from _main_file_records(child, path)
        elif child.kind == K.NAMESPACE:
            yield from _main_file_records(child, path)


def _is_unresolved_call(node: ci.Cursor, children: list[ci.Cursor]) -> bool:
    """A call clang could not resolve shows as an expression over the callee and the arguments."""
    if not children or _callee_decls(children[0]) is None:
        return False
    return len(children) > 1 or node.extent.end.offset > children[0].extent.end.offset


def _operator_name(node: ci.Cursor) -> str:
    """`operator=` when `node` is the operator reference inside an overloaded-operator call."""
    inner = strip_parens(node)
    if inner.kind != K.DECL_REF_EXPR:
        return ""
    referenced = inner.referenced
    name = referenced.spelling if referenced is not None else ""
    if not name:
        name = _overloaded_name(inner)
    return name if re.match(r"operator\W", name) else ""


def _overloaded_name(node: ci.Cursor) -> str:
    overloaded = next((c for c in node.get_children() if c.kind == K.OVERLOADED_DECL_REF), None)
    return overloaded.spelling if overloaded is not None else ""


def _names_type_parameter(expression: ci.Cursor) -> bool:
    """Whether `expression` names a template type parameter (`PDLWaitPrimary<Trait::kUsePDL>`:
    a member of a type only the instantiation knows)."""
    return any(node.kind == K.TYPE_REF and node.referenced is not None
               and node.referenced.kind == K.TEMPLATE_TYPE_PARAMETER for node in expression.walk_preorder())


def _template_argument_text(callee_text: bytes) -> str:
    """`kUsePDL` from `device::PDLWaitPrimary<kUsePDL>`."""
    text = callee_text.decode("utf-8", errors="replace")
    start, end = text.find("<"), text.rfind(">")
    return " ".join(text[start + 1:end].split()) if 0 <= start < end else ""


def _has_initializer(var: ci.Cursor, source: _SourceBytes) -> bool:
    """`T x = ...`, `T x{...}`, `T x(...)`; not `T x[N]` (whose bound is an expression child)."""
    text = source.of(var.extent)
    name_at = var.location.offset - var.extent.start.offset
    tail = re.sub(rb"\[[^\]]*\]", b"", text[max(name_at, 0):])
    return any(token in tail for token in (b"=", b"{", b"("))


def _is_compile_time_only(statement: ci.Cursor, source: _SourceBytes) -> bool:
    """Statements that run no code: aliases, static_assert, constexpr or uninitialized locals."""
    if statement.kind in (K.NULL_STMT, K.STATIC_ASSERT):
        return True
    if statement.kind != K.DECL_STMT:
        return False
    for declaration in statement.get_children():
        if declaration.kind in _COMPILE_TIME_DECLS:
            continue
        if declaration.kind != K.VAR_DECL:
            return False
        name_at = max(declaration.location.offset - declaration.extent.start.offset, 0)
        if b"constexpr" not in source.of(declaration.extent)[:name_at] and _has_initializer(declaration, source):
            return False
    return True


def _leading_statement(body: ci.Cursor, source: _SourceBytes) -> ci.Cursor | None:
    """The first statement that does work, looking into blocks and `if constexpr` branches."""
    scope = body
    while True:
        statement = next((s for s in scope.get_children() if not _is_compile_time_only(s, source)), None)
        if statement is None:
            return None
        if statement.kind == K.COMPOUND_STMT:
            scope = statement
            continue
        if statement.kind == K.IF_STMT and re.match(rb"if\s+constexpr\b", source.of(statement.extent)):
            branches = list(statement.get_children())
            if len(branches) < 2:
                return statement
            if branches[1].kind == K.COMPOUND_STMT:
                scope = branches[1]
                continue
            return branches[1]
        return statement


# -- the extractor ----------------------------------------------------------------------------------

class DataflowExtractor:
    """Per translation unit: walks each file function once and memoizes callee summaries."""

    def __init__(self, facts: DataflowFacts, path: str, data: bytes) -> None:
        self.facts = facts
        self.path = path
        self.source = _SourceBytes(path, data)
        self._walks: dict[ci.Cursor, _WalkResult | None] = {}  # None while in progress
        self._skipped: list[Span] | None = None
        self._static_members: dict[str, list[ci.Cursor]] | None = None  # by name, built on first use
        self._kernels_by_name: dict[str, list[ci.Cursor]] | None = None  # likewise
        self.nesting = 0  # `_Walker.visit` levels open now, in all walks (see MAX_NESTING)

    def add_function(self, cursor: ci.Cursor, body: ci.Cursor | None, function: Function) -> None:
        """Record the facts of a kernel or device function definition of the checked file."""
        if body is None or function.kind is FunctionKind.HOST:
            return
        result = self._walk(cursor, body)
        if result is None:
            return
        names = [p.spelling for p in result.params]
        body_span = span_of(body.extent)
        self.facts.functions.append(FunctionDataflow(
            function_usr=function.usr,
            qualified_name=function.qualified_name,
            body=body_span,
            pdl_calls=[PdlCall(e.kind, e.span, order, e.flag, e.via, e.leads_body, e.flag_through_type)
                       for order, e in result.events if isinstance(e, _Pdl)],
            accesses=[_model_access(e, order, names) for order, e in result.events
                      if isinstance(e, _Access) and e.target.scope == 0 and e.target.param < len(names)],
            referenced_params=frozenset(names[i] for i in result.referenced if i < len(names)),
            inactive_spans=tuple(s for s in self._skipped_in(cursor) if body_span.contains(s)),
        ))
        self.facts.inline_asm.extend(result.asm)

    def add_launch(self, launch: Span, kernel_expression: ci.Cursor) -> None:
        """Record every kernel a launch's kernel expression can name."""
        self.facts.launch_kernels.append(
            LaunchCandidates(launch, _launched_kernels(kernel_expression, self.source, self._kernels_named)))

    def _kernels_named(self, anchor: ci.Cursor, name: str) -> list[ci.Cursor]:
        """The checked file's kernels (templates) called `name`, indexed on first use."""
        if self._kernels_by_name is None:
            self._kernels_by_name = {}
            for node in _scope_members(anchor.translation_unit.cursor, self.path):
                if node.kind in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE) and has_child_kind(node, K.CUDAGLOBAL_ATTR):
                    self._kernels_by_name.setdefault(node.spelling, []).append(node)
        return self._kernels_by_name.get(name, [])

    def _skipped_in(self, cursor: ci.Cursor) -> list[Span]:
        if self._skipped is None:
            self._skipped = skipped_spans(cursor.translation_unit, self.path)
        return self._skipped

    def static_members_named(self, anchor: ci.Cursor, name: str) -> list[ci.Cursor] | None:
        """The static member functions called `name` of the checked file's records (struct and
        class templates, nested ones too): what `Trait::name(...)` can call once `Trait` is
        bound. None when there are none (the callee stays unknown)."""
        if self._static_members is None:
            self._static_members = {}
            for record in _main_file_records(anchor.translation_unit.cursor, self.path):
                for member in record.get_children():
                    if member.kind in FUNCTION_KINDS and member.is_static_method():  # defined here or out of line
                        self._static_members.setdefault(member.spelling, []).append(member)
        return self._static_members.get(name)[:_MAX_CANDIDATES] if name in self._static_members else None

    def summary(self, definition: ci.Cursor) -> _Summary | None:
        """What calling `definition` does to its parameters; None while it is being walked."""
        body = next((c for c in definition.get_children() if c.kind == K.COMPOUND_STMT), None)
        result = self._walk(definition, body) if body is not None else None
        return result.summary if result is not None else None

    def _walk(self, cursor: ci.Cursor, body: ci.Cursor) -> _WalkResult | None:
        if cursor in self._walks:
            return self._walks[cursor]
        self._walks[cursor] = None  # in progress: a recursive call sees an unknown callee
        try:
            result = _Walker(self, cursor, body).run()
        except RecursionError:
            return None  # absurdly deep nesting: no facts (rules stay silent), callers see unknown
        self._walks[cursor] = result
        return result


def _launched_kernels(expression: ci.Cursor, source: _SourceBytes,
                      kernels_named: Callable[[ci.Cursor, str], list[ci.Cursor]]) -> tuple[LaunchedKernel, ...]:
    """The kernels named in a launch expression, following variables to their initializers
    (`static constexpr auto kernel = k<T>;`, `const auto kernel = [] { ... }();`), helper
    functions to what they return (`get_kernel<T>(n)`), and member variable templates
    (`template <int N> static constexpr auto kernel = k<N>;`, whose initializer libclang does not
    expose: the kernels it names are looked up by name, their template arguments unknown)."""
    found: dict[tuple[str, str], LaunchedKernel] = {}
    pending, followed = [expression], set()

    def add(kernel: ci.Cursor, arguments: str) -> None:
        found.setdefault((kernel.get_usr(), arguments), LaunchedKernel(kernel.spelling, kernel.get_usr(), arguments))

    while pending:
        node = pending.pop()
        for reference in (n for n in (node, *walk(node)) if n.kind in (K.DECL_REF_EXPR, K.MEMBER_REF_EXPR)):
            overloaded = next((c for c in reference.get_children() if c.kind == K.OVERLOADED_DECL_REF), None)
            targets = overloaded_decls(overloaded) if overloaded is not None else [reference.referenced]
            for target in (t for t in targets if t is not None and t not in followed):
                if target.kind == K.VAR_DECL:
                    followed.add(target)
                    pending.extend(c for c in target.get_children() if c.kind.is_expression())
                elif target.kind == K.PARM_DECL:  # `auto launch = [&](auto kernel) {...}; launch(k<T>);`
                    followed.add(target)
                    pending.extend(_lambda_arguments(target, expression.translation_unit, source.main_path))
                elif target.kind == K.UNEXPOSED_DECL:  # a variable template
                    followed.add(target)
                    for name in _initializer_names(target):
                        for kernel in kernels_named(expression, name):
                            add(kernel, "")
                elif target.kind in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE, K.CXX_METHOD):
                    kernel = target.specialized_template or target
                    if has_child_kind(kernel, K.CUDAGLOBAL_ATTR):
                        add(kernel, _template_argument_text(source.of(reference.extent)))
                    else:  # a helper that returns the kernel to launch
                        followed.add(target)
                        pending.extend(_returned_expressions(_definition(target)))
    return tuple(found.values())


def _lambda_arguments(param: ci.Cursor, tu: ci.TranslationUnit, path: str) -> list[ci.Cursor]:
    """What the calls of a lambda stored in a variable pass for its parameter `param` (none
    when `param` belongs to no such lambda)."""
    for top in _scope_members(tu.cursor, path):
        for variable in (n for n in walk(top) if n.kind == K.VAR_DECL):
            lam = next((c for c in walk(variable) if c.kind == K.LAMBDA_EXPR), None)
            params = [c for c in lam.get_children() if c.kind == K.PARM_DECL] if lam is not None else []
            if param not in params:
                continue
            index = params.index(param)
            return [args[index] for call in walk(top) if call.kind == K.CALL_EXPR
                    and (args := _call_arguments(call, variable)) is not None and index < len(args)]
    return []


def _call_arguments(call: ci.Cursor, variable: ci.Cursor) -> list[ci.Cursor] | None:
    """The arguments of `call` when it calls the lambda held by `variable`, else None."""
    parts = list(call.get_children())
    for index, part in enumerate(parts[:2]):  # `launch(x)`, or `operator()` then `launch` then `x`
        callee = strip_parens(part)
        if callee.kind == K.DECL_REF_EXPR and callee.referenced == variable:
            return parts[index + 1:]
    return None


def _returned_expressions(definition: ci.Cursor | None) -> list[ci.Cursor]:
    """The expressions a function definition returns (none for a declaration)."""
    if definition is None:
        return []
    return [child for node in walk(definition) if node.kind == K.RETURN_STMT
            for child in node.get_children() if child.kind.is_expression()]


def _initializer_names(variable_template: ci.Cursor) -> list[str]:
    """The identifiers after `=` in a variable template's declaration (libclang exposes no
    initializer cursor for it)."""
    tokens = [t.spelling for t in variable_template.get_tokens()]
    after = tokens[tokens.index("=") + 1:] if "=" in tokens else []
    return [t for t in after if t.isidentifier()]


def _scope_members(scope: ci.Cursor, path: str) -> Iterator[ci.Cursor]:
    """The checked file's declarations directly in `scope` and in the namespaces inside it."""
    for child in scope.get_children():
        if child.location.file is None or child.location.file.name != path:
            continue
        yield child
        if child.kind == K.NAMESPACE:
            yield from _scope_members(child, path)


def _model_access(event: _Access, order: int | None, names: list[str]) -> PointerAccess:
    target = event.target
    root = ".".join((names[target.param], *target.fields))
    return PointerAccess(event.kind, event.span, root, target.param, target.fields, event.how, order)
