"""Integer, index and lane facts of one file, gathered in one walk over its declarations.

The walk visits every cursor the checked file writes (bodies included) once, post-order, and
summarizes each expression bottom-up in a `_Value`: the lane-modulo expressions it carries,
whether it derives from a 64-bit tensor shape or stride, whether it is a CUDA built-in index
(`blockIdx.x`...) and the open 32-bit product it belongs to. A local variable keeps the value
last stored into it, so `lane = threadIdx.x % 32; ... smem[lane]` is an address use of the
modulo. The namespace facts of `scope_facts` ride on the same walk.

Facts feed KC110 (`IntegerDecl`), KC111 (`SizeNarrowing`, `ShapeArgument`), KC112
(`IndexProduct`) and KC151 (`LaneModulo`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import clang.cindex as ci

from ..model import (
    IndexProduct, IntegerDecl, IntegerDeclKind, IntegerFacts, LaneModulo, ShapeArgument, SizeNarrowing, SourceModel,
    Span,
)
from .consteval import Constants
from .cursors import (
    FUNCTION_KINDS, PARENS_AND_CONVERSIONS, RECORD_KINDS, K, MacroRanges, Positions, qualified_name, span_of,
    strip_parens,
)
from .parse import ParsedUnit
from .scope_facts import ScopeCollector

TK = ci.TypeKind
BO = ci.BinaryOperator

# ---- vocabulary ------------------------------------------------------------------------------

_INTEGER_WIDTHS = {
    TK.INT: 32, TK.UINT: 32, TK.LONG: 64, TK.ULONG: 64, TK.LONGLONG: 64, TK.ULONGLONG: 64,
    TK.SHORT: 16, TK.USHORT: 16, TK.CHAR_S: 8, TK.CHAR_U: 8, TK.SCHAR: 8, TK.UCHAR: 8,
}
_BUILTIN_INDEX_VARIABLES = frozenset({"threadIdx", "blockIdx", "blockDim", "gridDim"})
_GRID_SCALE_BUILTINS = ("blockIdx.", "gridDim.")  # a product with these scales with the grid
_LANE_WIDTHS = frozenset({32, 64, 128})  # a warp, and the usual warp-group widths
_LOAD_STORE_CALLEES = frozenset({"load", "store", "load_as", "store_as", "offset"})
_TENSOR_CLASSES = frozenset({"TensorView", "Tensor", "TensorObj"})
_SHAPE_METHODS = {
    "unwrap": frozenset({"SymbolicSize"}),
    "size": _TENSOR_CLASSES, "stride": _TENSOR_CLASSES, "numel": _TENSOR_CLASSES,
    "operator[]": frozenset({"ShapeView", "Shape"}),
}
_DLTENSOR_SHAPE_FIELDS = frozenset({"shape", "strides"})
_EXPLICIT_CASTS = (K.CXX_STATIC_CAST_EXPR, K.CSTYLE_CAST_EXPR, K.CXX_FUNCTIONAL_CAST_EXPR)
# Expressions through which a 32-bit product's value flows on unchanged in width.
_FLOW_KINDS = frozenset({*PARENS_AND_CONVERSIONS, *_EXPLICIT_CASTS, K.BINARY_OPERATOR, K.UNARY_OPERATOR,
                         K.CONDITIONAL_OPERATOR})
_ARRAY_KINDS = (TK.CONSTANTARRAY, TK.INCOMPLETEARRAY, TK.VARIABLEARRAY, TK.DEPENDENTSIZEDARRAY)
_LITERALS = (K.INTEGER_LITERAL, K.CHARACTER_LITERAL, K.CXX_BOOL_LITERAL_EXPR)
_OPAQUE = frozenset({
    K.MACRO_INSTANTIATION, K.MACRO_DEFINITION, K.INCLUSION_DIRECTIVE, K.TYPE_REF, K.TEMPLATE_REF,
    K.NAMESPACE_REF, K.INTEGER_LITERAL, K.FLOATING_LITERAL, K.STRING_LITERAL, K.CHARACTER_LITERAL,
    K.CXX_BOOL_LITERAL_EXPR, K.ASM_STMT,
})
_COMPARISONS = frozenset({BO.LT, BO.GT, BO.LE, BO.GE, BO.EQ, BO.NE, BO.LAnd, BO.LOr, BO.Cmp})
_OPERATOR_NAMES = {
    "operator+": BO.Add, "operator-": BO.Sub, "operator*": BO.Mul, "operator%": BO.Rem,
    "operator&": BO.And, "operator=": BO.Assign, "operator<": BO.LT, "operator>": BO.GT,
    "operator<=": BO.LE, "operator>=": BO.GE, "operator==": BO.EQ, "operator!=": BO.NE,
}
# Operators a constant is folded through (comparisons and logic are not sizes or offsets)
# Words that may surround the integer keywords of a declaration's written type.
_SPECIFIER_WORDS = frozenset({
    "const", "volatile", "static", "constexpr", "constinit", "inline", "extern", "thread_local",
    "register", "mutable", "__shared__", "__constant__", "__device__", "__managed__", "__host__",
    "__restrict__", "__restrict", "__grid_constant__",
})
_INTEGER_KEYWORDS = frozenset({"int", "unsigned", "signed", "long", "short", "char"})
_NOT_INDEX_KEYWORDS = frozenset({"short", "char"})  # narrow storage types, not KC110's concern
_WORD_RE = re.compile(rb"[A-Za-z_]\w*|\S")
_COMMENT_RE = re.compile(rb"/\*.*?\*/|//[^\n]*", re.DOTALL)
# Deeper subtrees (a generated 500-term sum) are not summarized: the walk is recursive, and
# Python's stack is not the place to learn that a file is pathological.
_MAX_DEPTH = 200
_MAX_CONSTANT_DEPTH = 16  # constants are small expressions: `kVecN * sizeof(T) / 4`


def extract_integer_and_scope_facts(top_level: list[ci.Cursor], unit: ParsedUnit, data: bytes,
                                    model: SourceModel) -> None:
    """Fill `model.integer_facts` and `model.scope_facts` from the file's top-level cursors."""
    positions = Positions(data)
    macros = MacroRanges(top_level)
    scope = ScopeCollector(unit.path, macros)
    walker = _Walker(unit.path, data, positions, macros, scope)
    declarations = _outermost(c for c in top_level if c.kind not in _OPAQUE)
    for cursor in declarations:
        walker.visit(cursor, cursor.kind, None)
    model.integer_facts = walker.finish()
    model.scope_facts = scope.finish(declarations, unit.tu)


def _outermost(cursors) -> list[ci.Cursor]:
    """Drop cursors nested in another one: libclang also lists some implicit template
    instantiations at translation-unit level, inside the extent of their namespace."""
    kept: list[ci.Cursor] = []
    end = -1
    for cursor in sorted(cursors, key=lambda c: (c.extent.start.offset, -c.extent.end.offset)):
        if cursor.extent.end.offset <= end:
            continue
        kept.append(cursor)
        end = cursor.extent.end.offset
    return kept


# ---- expression summaries --------------------------------------------------------------------


@dataclass(frozen=True)
class _Product:
    """An open chain of 32-bit multiplications (flattened over nested `*` and parentheses)."""

    node: ci.Cursor
    function_usr: str
    builtins: tuple[str, ...] = ()
    constants: int = 0
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Value:
    lanes: frozenset[int] = frozenset()  # indices into the walker's lane-modulo list
    via: str = ""  # the variable the lanes came through
    shape: str = ""  # the shape/stride expression a 64-bit value derives from
    builtin: str = ""  # "blockIdx.x" when the expression is (a copy of) a CUDA built-in index
    product: _Product | None = None
    # Finished products whose 32-bit value still flows on through 32-bit arithmetic: whether
    # it is widened to 64 bits later is learned where that flow ends.
    flowing: tuple[_Product, ...] = ()


_NONE = _Value()


def _merge(values: list[_Value]) -> _Value:
    """Lanes and shape of the operands of an arithmetic expression (built-in-ness is lost)."""
    lanes = frozenset().union(*(v.lanes for v in values))
    via = next((v.via for v in values if v.via), "")
    shape = next((v.shape for v in values if v.shape), "")
    return _Value(lanes, via, shape) if lanes or shape else _NONE


@dataclass
class _Scope:
    usr: str
    qualified: str
    in_lambda: bool = False
    is_main: bool = False
    is_kernel: bool = False


@dataclass
class _LaneUse:
    span: Span
    text: str
    width: int
    function_usr: str
    address_use: Span | None = None
    address_kind: str = ""
    via: str = ""


@dataclass
class _PendingDecl:
    """An integer declaration whose exemptions may still be learned later in the walk."""

    cursor_hash: int
    decl: IntegerDecl


@dataclass
class _State:
    variables: dict[int, _Value] = field(default_factory=dict)  # locals by declaration hash
    constant_locals: set[int] = field(default_factory=set)  # locals declared with a constant value
    loop_bounds: dict[int, bool] = field(default_factory=dict)  # counter -> constant bound?
    c_api_outputs: dict[int, str] = field(default_factory=dict)  # local -> C function writing it
    decls: list[_PendingDecl] = field(default_factory=list)
    lanes: list[_LaneUse] = field(default_factory=list)


# ---- the walk --------------------------------------------------------------------------------


class _Walker:
    def __init__(self, path: str, data: bytes, positions: Positions, macros: MacroRanges,
                 scope: ScopeCollector) -> None:
        self.path = path
        self.data = data
        self.positions = positions
        self.macros = macros
        self.scope = scope
        self.state = _State()
        self.consts = Constants(data, path)
        self.facts = IntegerFacts()
        self.scopes: list[_Scope] = []
        self._previous_prefix: tuple[int, int] | None = None  # (type start, name) of the last declarator
        self._depth = 0

    # -- traversal -----------------------------------------------------------------------------
    def visit(self, node: ci.Cursor, kind: ci.CursorKind, parent: ci.Cursor | None) -> _Value:
        """Summarize `node` (of `kind`, passed along: reading it costs a libclang call);
        `parent` is its nearest ancestor that is not a parenthesis or an implicit conversion."""
        if kind in _OPAQUE or self._depth >= _MAX_DEPTH:
            return _NONE
        self._depth += 1
        pushed = self._enter(node, kind)
        children = list(node.get_children())
        kinds = [child.kind for child in children]
        self.scope.on_children(node, kind, children, kinds)
        if kind == K.FOR_STMT:
            self._note_loop_counters(children, kinds)
        context = parent if kind in PARENS_AND_CONVERSIONS else node  # conversions look through parentheses
        values = [self.visit(child, child_kind, context) for child, child_kind in zip(children, kinds)]
        value = self._combine(node, kind, parent, children, values)
        ended = [v.product for v in values if v.product is not None] if value.product is None else []
        ended += [product for v in values for product in v.flowing]
        if ended:
            value = self._flow_products(node, kind, value, ended)
        if pushed:
            self.scopes.pop()
        self._depth -= 1
        return value

    def _enter(self, node: ci.Cursor, kind: ci.CursorKind) -> bool:
        if kind in FUNCTION_KINDS:
            parent = node.semantic_parent
            is_main = node.spelling == "main" and parent is not None and parent.kind == K.TRANSLATION_UNIT
            is_kernel = any(c.kind == K.CUDAGLOBAL_ATTR for c in node.get_children())
            self.scopes.append(_Scope(node.get_usr(), qualified_name(node), is_main=is_main, is_kernel=is_kernel))
            return True
        if kind == K.LAMBDA_EXPR:
            outer = self.scopes[-1] if self.scopes else _Scope("", "")
            self.scopes.append(replace(outer, in_lambda=True))
            return True
        return False

    @property
    def _function_usr(self) -> str:
        return self.scopes[-1].usr if self.scopes else ""

    @property
    def _in_kernel(self) -> bool:
        return bool(self.scopes) and self.scopes[-1].is_kernel

    def _combine(self, node: ci.Cursor, kind: ci.CursorKind, parent: ci.Cursor | None,
                 children: list[ci.Cursor], values: list[_Value]) -> _Value:
        if kind == K.DECL_REF_EXPR:
            return self._decl_ref(node)
        if kind == K.MEMBER_REF_EXPR:
            return self._member_ref(node, children, values)
        if kind in PARENS_AND_CONVERSIONS:
            return self._transparent(node, parent, values)
        if kind in _EXPLICIT_CASTS:
            return self._explicit_cast(node, values)
        if kind == K.BINARY_OPERATOR and len(children) == 2:
            return self._binary(node, node.binary_operator, children, values)
        if kind == K.COMPOUND_ASSIGNMENT_OPERATOR and len(children) == 2:
            return self._compound_assignment(children, values)
        if kind == K.ARRAY_SUBSCRIPT_EXPR and len(children) == 2:
            return self._subscript(node, children, values)
        if kind == K.UNARY_OPERATOR:
            return self._unary(node, values)
        if kind == K.CALL_EXPR:
            return self._call(node, children, values)
        if kind == K.VAR_DECL:
            return self._var_decl(node, children, values)
        if kind == K.PARM_DECL and parent is not None and (parent.kind in FUNCTION_KINDS or parent.kind == K.LAMBDA_EXPR):
            self._add_integer_decl(node, IntegerDeclKind.PARAM)
        elif kind == K.FIELD_DECL and parent is not None and parent.kind in RECORD_KINDS and not node.is_bitfield():
            self._add_integer_decl(node, IntegerDeclKind.FIELD)  # a bit-field states its width
        elif kind == K.CONDITIONAL_OPERATOR and len(values) == 3:
            return _merge(values[1:])
        return _NONE

    # -- references ----------------------------------------------------------------------------
    def _decl_ref(self, node: ci.Cursor) -> _Value:
        ref = node.referenced
        if ref is None:
            return _NONE
        if ref.kind == K.PARM_DECL and self._in_kernel and _width(ref.type) == 64:
            return _Value(shape=ref.spelling)  # a 64-bit size or stride handed to the kernel
        return self.state.variables.get(ref.hash, _NONE) if ref.kind == K.VAR_DECL else _NONE

    def _member_ref(self, node: ci.Cursor, children: list[ci.Cursor], values: list[_Value]) -> _Value:
        """`threadIdx.x` and friends are member accesses of the built-in variables; a 64-bit
        field of a kernel's by-value params struct is a size or stride."""
        if len(children) != 1:
            return _NONE
        base = children[0]
        if base.kind == K.DECL_REF_EXPR and base.spelling in _BUILTIN_INDEX_VARIABLES:
            member = self._text(node).rstrip()[-1:]
            return _Value(builtin=f"{base.spelling}.{member}") if member in ("x", "y", "z") else _NONE
        owner = _referenced_variable(base)
        if self._in_kernel and owner is not None and owner.kind == K.PARM_DECL and _width(node.type) == 64:
            return _Value(shape=self._text(node))
        return _NONE

    # -- conversions ---------------------------------------------------------------------------
    def _transparent(self, node: ci.Cursor, parent: ci.Cursor | None, values: list[_Value]) -> _Value:
        """Parentheses and implicit conversions; a 64-bit shape value narrowed here is a fact."""
        if len(values) != 1:
            return _merge(values)
        value = values[0]
        if value.shape or value.product is not None:
            width = _width(node.type)
            if value.shape and width is not None and width < 64:
                self._note_narrowing(node, parent, value.shape)
                value = replace(value, shape="")
            if value.product is not None and width != 32:
                value = replace(value, product=None)  # widened after the multiplication
        return value

    def _explicit_cast(self, node: ci.Cursor, values: list[_Value]) -> _Value:
        """A written cast is a deliberate conversion: it ends a shape value when it narrows."""
        value = values[-1] if values else _NONE
        width = _width(node.type)
        return _Value(value.lanes, value.via, value.shape if width == 64 else "",
                      value.builtin if width is not None and width <= 32 else "")

    def _note_narrowing(self, conversion: ci.Cursor, parent: ci.Cursor | None, source: str) -> None:
        if parent is not None and (parent.kind in _EXPLICIT_CASTS or _is_dim3_construction(parent)):
            return
        operand = next(iter(conversion.get_children()), conversion)
        context, target, offset = _narrowing_context(parent, self.data)
        self._add_narrowing(conversion, source, operand, conversion.type.spelling, context, target, offset)

    def _add_narrowing(self, node: ci.Cursor, source: str, operand: ci.Cursor, target_type: str,
                       context: str, target: str, target_offset: int | None = None) -> None:
        self.facts.size_narrowings.append(SizeNarrowing(
            span=span_of(node.extent), source=source, source_type=operand.type.spelling,
            target_type=target_type, context=context, function_usr=self._function_usr,
            target=target, target_offset=target_offset,
        ))

    # -- operators -----------------------------------------------------------------------------
    def _binary(self, node: ci.Cursor, op: ci.BinaryOperator, operands: list[ci.Cursor],
                values: list[_Value]) -> _Value:
        lhs, rhs = values
        if op in _COMPARISONS:
            return _NONE
        if op == BO.Assign:
            self._store(operands[0], rhs)
            return rhs
        if op == BO.Comma:
            return rhs
        merged = _merge(values)
        if op in (BO.Rem, BO.And):
            lane = self._lane_modulo(node, op, operands, lhs)
            if lane is not None:
                return replace(merged, lanes=merged.lanes | {lane}, via="")
        elif op in (BO.Add, BO.Sub):
            self._pointer_arithmetic(operands, values)
        elif op == BO.Mul:
            product = self._product(node, operands, values)
            if product is not None:
                return replace(merged, product=product)
        return merged

    def _compound_assignment(self, operands: list[ci.Cursor], values: list[_Value]) -> _Value:
        target, value = operands[0], values[1]
        if value.shape:
            target_width, value_width = _width(target.type), _width(operands[1].type)
            if target_width is not None and target_width < 64 and value_width == 64:
                self._add_narrowing(operands[1], value.shape, operands[1], target.type.spelling,
                                    "compound assignment", self._text(target).strip())
        self._store(target, _Value(value.lanes | self._stored(target).lanes, value.via))
        return _NONE

    def _unary(self, node: ci.Cursor, values: list[_Value]) -> _Value:
        """`-x`, `~x`, `++x` keep what `x` carries; `*p`, `&x` and `!x` do not: a load, an
        address or a truth value is not an index any more. (Decided on types: inside a macro
        argument the extent does not point at the operator.)"""
        operand = next(iter(node.get_children()), None)
        if operand is None or _width(node.type) is None or _is_pointer(operand.type):
            return _NONE
        return _merge(values)

    def _subscript(self, node: ci.Cursor, operands: list[ci.Cursor], values: list[_Value]) -> _Value:
        self._address_use(node, values[1], "subscript")
        base = strip_parens(operands[0])
        if base.kind == K.MEMBER_REF_EXPR and base.spelling in _DLTENSOR_SHAPE_FIELDS and _width(node.type) == 64:
            return _Value(shape=self._text(node))
        return _NONE

    def _pointer_arithmetic(self, operands: list[ci.Cursor], values: list[_Value]) -> None:
        for index in (0, 1):
            if values[index].lanes and _is_pointer(operands[1 - index].type):
                self._address_use(operands[index], values[index], "pointer arithmetic")

    # -- calls ---------------------------------------------------------------------------------
    def _call(self, node: ci.Cursor, children: list[ci.Cursor], values: list[_Value]) -> _Value:
        ref = node.referenced
        operator = self._operator_name(node, children)
        if operator is not None:
            return self._operator_call(node, operator, children, values)
        if ref is not None and ref.kind == K.CONSTRUCTOR:
            arguments, argument_values = children, values
        else:
            arguments, argument_values = children[1:], values[1:]
        name = self._callee_name(ref, children)
        if name in _LOAD_STORE_CALLEES:
            for argument_value in argument_values:
                self._address_use(node, argument_value, "load/store offset")
        if ref is not None and any(_is_address_of(a) for a in arguments):
            self._note_c_api_outputs(ref, arguments)
        if ref is None:
            self._note_shape_arguments(arguments, argument_values)
        return self._call_result(node, ref, argument_values)

    def _operator_call(self, node: ci.Cursor, operator: str, children: list[ci.Cursor],
                       values: list[_Value]) -> _Value:
        """An overloaded or type-dependent operator: the same facts as the built-in one."""
        pairs = [(c, v) for c, v in zip(children, values) if not _is_operator_ref(c)]
        operands, operand_values = [c for c, _ in pairs], [v for _, v in pairs]
        if operator == "operator()":
            self._note_shape_arguments(operands[1:], operand_values[1:])
            return _NONE
        if operator == "operator[]" and len(operands) == 2:
            self._address_use(node, operand_values[1], "subscript")
            return self._call_result(node, node.referenced, [])
        op = _OPERATOR_NAMES.get(operator)
        if op is None or len(operands) != 2:
            return _NONE
        if op in (BO.Add, BO.Sub):
            self._pointer_arithmetic(operands, operand_values)
            return _merge(operand_values)
        if op in (BO.Rem, BO.And, BO.Assign) or op in _COMPARISONS:
            return self._binary(node, op, operands, operand_values)
        return _merge(operand_values)

    def _call_result(self, node: ci.Cursor, ref: ci.Cursor | None, argument_values: list[_Value]) -> _Value:
        """A shape accessor yields a shape value; a 64-bit function of one stays one (div_ceil)."""
        if _width(node.type) != 64:
            return _NONE
        if ref is not None and ref.kind == K.CXX_METHOD and ref.spelling in _SHAPE_METHODS:
            owner = ref.semantic_parent
            if owner is not None and owner.spelling in _SHAPE_METHODS[ref.spelling]:
                return _Value(shape=self._text(node))
        shape = next((v.shape for v in argument_values if v.shape), "")
        return _Value(shape=shape) if shape else _NONE

    def _operator_name(self, node: ci.Cursor, children: list[ci.Cursor]) -> str | None:
        if node.spelling.startswith("operator"):
            return node.spelling
        for child in children:
            if _is_operator_ref(child):
                return child.referenced.spelling
        return None

    def _callee_name(self, ref: ci.Cursor | None, children: list[ci.Cursor]) -> str:
        if ref is not None:
            return ref.spelling
        if not children:
            return ""
        callee = children[0]
        if callee.referenced is not None:
            return callee.referenced.spelling
        text = self._text(callee).split("<", 1)[0]
        match = re.search(r"(\w+)\s*$", text)
        return match.group(1) if match else ""

    def _note_c_api_outputs(self, callee: ci.Cursor, arguments: list[ci.Cursor]) -> None:
        """`int device; cudaGetDevice(&device);`: a C API decides the out-parameter's type."""
        if not _is_external_c_function(callee, self.path):
            return
        for argument in arguments:
            if _is_address_of(argument):
                target = _referenced_variable(argument)
                if target is not None:
                    self.state.c_api_outputs[target.hash] = callee.spelling

    def _note_shape_arguments(self, arguments: list[ci.Cursor], values: list[_Value]) -> None:
        for argument, value in zip(arguments, values):
            if value.shape and _width(argument.type) == 64:
                self.facts.shape_arguments.append(ShapeArgument(
                    span_of(argument.extent), self._text(argument), argument.type.spelling, value.shape))

    # -- declarations --------------------------------------------------------------------------
    def _var_decl(self, node: ci.Cursor, children: list[ci.Cursor], values: list[_Value]) -> _Value:
        if not self.scopes:
            return _NONE  # namespace- or class-scope variables are not locals
        initializer = children[-1] if children and children[-1].kind.is_expression() else None
        init_value = values[-1] if initializer is not None else _NONE
        width = _width(node.type)
        self.state.variables[node.hash] = _Value(
            lanes=init_value.lanes,
            via=node.spelling if init_value.lanes else "",
            shape=init_value.shape if width == 64 else "",
            builtin=init_value.builtin if width is not None and width <= 32 else "",
        )
        written = self._written_integer_type(node)
        words = written[2] if written is not None else self._specifier_words(node)
        if initializer is not None and ("constexpr" in words or ("const" in words and self._is_constant(initializer))):
            self.state.constant_locals.add(node.hash)
        if written is not None:
            self._add_integer_decl(node, IntegerDeclKind.LOCAL, written, initializer, init_value)
        return _NONE

    def _add_integer_decl(self, node: ci.Cursor, kind: IntegerDeclKind,
                          written: tuple[str, Span, frozenset[str]] | None = None,
                          initializer: ci.Cursor | None = None, init_value: _Value = _NONE) -> None:
        if self.scopes and self.scopes[-1].is_main:
            return
        written = written or self._written_integer_type(node)
        if written is None:
            return
        keywords, keyword_span, words = written
        scope = self.scopes[-1] if self.scopes else _Scope("", "")
        is_field = kind is IntegerDeclKind.FIELD
        decl = IntegerDecl(
            name=node.spelling,
            keywords=keywords,
            kind=kind,
            owner=qualified_name(node.semantic_parent) if is_field else scope.qualified,
            owner_usr="" if is_field else scope.usr,
            span=keyword_span,
            name_span=self.positions.span(node.location.offset, node.location.offset + len(node.spelling.encode())),
            declarator=_declarator(node.type),
            in_lambda=scope.in_lambda and not is_field,
            is_constexpr="constexpr" in words,
            has_constant_init=initializer is not None and "const" in words and self._is_constant(initializer),
            shape_source=init_value.shape or self._narrowed_shape(initializer),
            c_api=self._c_api_result(initializer, keywords),
        )
        self.state.decls.append(_PendingDecl(node.hash, decl))

    def _written_integer_type(self, node: ci.Cursor) -> tuple[str, Span, frozenset[str]] | None:
        """(keywords, their span, every specifier word) when the declared type is written with
        built-in integer keywords; None for aliases (`int32_t`), templates, macros, `auto`."""
        name = node.spelling
        location = node.location
        if not name or location.file is None or location.file.name != self.path:
            return None
        if self.macros.macro_at(location.offset):
            return None  # produced by a macro expansion: nobody wrote this type here
        start, end = self._type_prefix(node.extent.start.offset, location.offset)
        if not 0 <= start <= end:
            return None
        keywords, words, first, last = [], set(), None, None
        prefix = _COMMENT_RE.sub(lambda m: b" " * len(m.group()), self.data[start:end])
        for match in _WORD_RE.finditer(prefix):
            word = match.group().decode("ascii", "replace")
            if word in _INTEGER_KEYWORDS:
                keywords.append(word)
                first = match.start() if first is None else first
                last = match.end()
            elif word in _SPECIFIER_WORDS:
                words.add(word)
            else:
                break
        if not keywords or _NOT_INDEX_KEYWORDS.intersection(keywords) or _base_width(node.type) is None:
            return None
        return " ".join(keywords), self.positions.span(start + first, start + last), frozenset(words)

    def _type_prefix(self, start: int, name: int) -> tuple[int, int]:
        """The bytes before a declarator's name that spell its type. In `int a = 1, b = 2;`
        the extent of `b` starts at `b`: its type is the one written before `a`."""
        if start == name and self._previous_prefix is not None:
            previous_start, previous_name = self._previous_prefix
            between = self.data[previous_name:start]
            if b"," in between and b";" not in between:
                return previous_start, previous_name
        if start < name:
            self._previous_prefix = (start, name)
        return start, name

    def _specifier_words(self, node: ci.Cursor) -> frozenset[str]:
        start, end = self._type_prefix(node.extent.start.offset, node.location.offset)
        if not 0 <= start <= end:
            return frozenset()
        words = (w.decode("ascii", "replace") for w in _WORD_RE.findall(self.data[start:end]))
        return frozenset(w for w in words if w in _SPECIFIER_WORDS)

    def _narrowed_shape(self, initializer: ci.Cursor | None) -> str:
        """The shape expression behind an initializer narrowed to this (32-bit) variable."""
        if initializer is None:
            return ""
        offset = initializer.extent.start.offset
        return next((n.source for n in reversed(self.facts.size_narrowings)
                     if n.span.start == offset and n.context == "initialization"), "")

    def _c_api_result(self, initializer: ci.Cursor | None, keywords: str) -> str:
        """`int rc = c_function(...)`: the variable holds a C API's `int` result code."""
        call = strip_parens(initializer) if initializer is not None else None
        if call is None or call.kind != K.CALL_EXPR or call.referenced is None:
            return ""
        callee = call.referenced
        result_words = callee.result_type.spelling.replace("const", "").split()
        if not _is_external_c_function(callee, self.path) or " ".join(result_words) != keywords:
            return ""
        return callee.spelling

    def _store(self, target: ci.Cursor, value: _Value) -> None:
        variable = _referenced_variable(target)
        if variable is None or variable.hash not in self.state.variables:
            return
        width = _width(variable.type)
        self.state.variables[variable.hash] = _Value(
            lanes=value.lanes, via=variable.spelling if value.lanes else "",
            shape=value.shape if width == 64 else "",
            builtin=value.builtin if width is not None and width <= 32 else "",
        )

    def _stored(self, target: ci.Cursor) -> _Value:
        variable = _referenced_variable(target)
        return self.state.variables.get(variable.hash, _NONE) if variable is not None else _NONE

    # -- loops ---------------------------------------------------------------------------------
    def _note_loop_counters(self, children: list[ci.Cursor], kinds: list[ci.CursorKind]) -> None:
        """`for (int i = 0; i < kVecN; ++i)`: remember whether each counter's bound is constant."""
        if not children or kinds[0] != K.DECL_STMT:
            return
        for counter in children[0].get_children():
            if counter.kind == K.VAR_DECL:
                bound = self._loop_bound(children[1:], counter)
                self.state.loop_bounds[counter.hash] = bound is not None and self._is_constant(bound)

    def _loop_bound(self, parts: list[ci.Cursor], counter: ci.Cursor) -> ci.Cursor | None:
        for part in parts:
            operands = self._comparison_operands(part)
            if operands is None:
                continue
            for index in (0, 1):
                variable = _referenced_variable(operands[index])
                if variable is not None and variable.hash == counter.hash:
                    return operands[1 - index]
            return None
        return None

    def _comparison_operands(self, node: ci.Cursor) -> list[ci.Cursor] | None:
        children = list(node.get_children())
        if node.kind == K.BINARY_OPERATOR and node.binary_operator in _COMPARISONS and len(children) == 2:
            return children
        if node.kind == K.CALL_EXPR and _OPERATOR_NAMES.get(self._operator_name(node, children) or "") in _COMPARISONS:
            operands = [c for c in children if not _is_operator_ref(c)]
            return operands if len(operands) == 2 else None
        return None

    # -- constants -----------------------------------------------------------------------------
    def _is_constant(self, node: ci.Cursor, depth: int = 0) -> bool:
        """A compile-time constant: literals, template/enum constants, constexpr variables,
        `sizeof`, dependent `Type::kMember`, and operators over those."""
        if depth > _MAX_CONSTANT_DEPTH:
            return False
        kind = node.kind
        if kind in _LITERALS or kind == K.CXX_UNARY_EXPR:
            return True
        if kind in (K.DECL_REF_EXPR, K.MEMBER_REF_EXPR):
            ref = node.referenced
            if ref is None:  # a member of a dependent type: a static constant in practice
                return kind == K.DECL_REF_EXPR and any(c.kind == K.TYPE_REF for c in node.get_children())
            return self._is_constant_declaration(ref)
        if kind in PARENS_AND_CONVERSIONS or kind in _EXPLICIT_CASTS or kind in (
                K.BINARY_OPERATOR, K.UNARY_OPERATOR, K.CONDITIONAL_OPERATOR):
            operands = [c for c in node.get_children() if c.kind not in (K.TYPE_REF, K.TEMPLATE_REF, K.NAMESPACE_REF)]
            return bool(operands) and all(self._is_constant(c, depth + 1) for c in operands)
        return False

    def _is_constant_declaration(self, ref: ci.Cursor) -> bool:
        if ref.kind in (K.TEMPLATE_NON_TYPE_PARAMETER, K.ENUM_CONSTANT_DECL):
            return True
        if ref.kind != K.VAR_DECL:
            return False
        if ref.hash in self.state.constant_locals:
            return True
        parent = ref.semantic_parent
        is_local = parent is not None and (parent.kind in FUNCTION_KINDS or parent.kind == K.LAMBDA_EXPR)
        return not is_local and ref.type.is_const_qualified()

    # -- lanes and products --------------------------------------------------------------------
    def _lane_modulo(self, node: ci.Cursor, op: ci.BinaryOperator, operands: list[ci.Cursor],
                     lhs: _Value) -> int | None:
        if lhs.builtin != "threadIdx.x":
            return None
        value = self.consts.integer(operands[1])
        width = value if op == BO.Rem else (value + 1 if value is not None else None)
        if width not in _LANE_WIDTHS:
            return None
        self.state.lanes.append(_LaneUse(span_of(node.extent), self._text(node), width, self._function_usr))
        return len(self.state.lanes) - 1

    def _address_use(self, node: ci.Cursor, value: _Value, kind: str) -> None:
        for index in value.lanes:
            lane = self.state.lanes[index]
            if lane.address_use is None:
                lane.address_use, lane.address_kind, lane.via = span_of(node.extent), kind, value.via

    def _product(self, node: ci.Cursor, operands: list[ci.Cursor], values: list[_Value]) -> _Product | None:
        if _width(node.type) != 32:
            return None
        product = _Product(node, self._function_usr)
        for operand, value in zip(operands, values):
            if value.product is not None:
                inner = value.product
                product = replace(product, builtins=product.builtins + inner.builtins,
                                  constants=product.constants + inner.constants, values=product.values + inner.values)
            elif value.builtin:
                product = replace(product, builtins=product.builtins + (value.builtin,))
            elif self._is_constant(operand):
                product = replace(product, constants=product.constants + 1)
            else:
                product = replace(product, values=product.values + (self._text(operand).strip(),))
        return product

    def _flow_products(self, node: ci.Cursor, kind: ci.CursorKind, value: _Value,
                       products: list[_Product]) -> _Value:
        """Products whose 32-bit result reaches `node`: carried on through 32-bit arithmetic
        (`blockIdx.x * blockDim.x + threadIdx.x`), recorded as widened where a conversion to
        64 bits takes the value (`int64_t i = ...`, `k += ...`, a 64-bit operand or
        parameter), and as kept in 32 bits where the flow ends anywhere else."""
        width = _width(node.type)
        if kind in _FLOW_KINDS and width == 32:
            return replace(value, flowing=tuple(products))
        widened = width == 64 and (kind in PARENS_AND_CONVERSIONS or kind in _EXPLICIT_CASTS)
        for product in products:
            self._emit_product(product, widened)
        return replace(value, flowing=())

    def _emit_product(self, product: _Product, widened: bool) -> None:
        if not any(b.startswith(_GRID_SCALE_BUILTINS) for b in product.builtins):
            return
        node = product.node
        self.facts.index_products.append(IndexProduct(
            span=span_of(node.extent), text=self._text(node), function_usr=product.function_usr,
            builtins=product.builtins, constant_factors=product.constants, value_factors=product.values,
            result_type=node.type.spelling, widened=widened,
        ))

    # -- results -------------------------------------------------------------------------------
    def finish(self) -> IntegerFacts:
        state = self.state
        for pending in state.decls:
            decl = pending.decl
            counter = state.loop_bounds.get(pending.cursor_hash)
            c_api = decl.c_api or state.c_api_outputs.get(pending.cursor_hash, "")
            self.facts.integer_decls.append(replace(decl, loop_bound_constant=counter, c_api=c_api))
        self.facts.lane_modulos = [
            LaneModulo(lane.span, lane.text, lane.width, lane.function_usr, lane.address_use,
                       lane.address_kind, lane.via)
            for lane in state.lanes
        ]
        return self.facts

    def _text(self, node: ci.Cursor) -> str:
        return _source_text(self.data, node)


# ---- small cursor predicates -----------------------------------------------------------------


def _width(type_: ci.Type) -> int | None:
    """Bit width of an integer type (after typedefs and qualifiers); None for anything else."""
    return _INTEGER_WIDTHS.get(type_.get_canonical().kind)


def _base_width(type_: ci.Type) -> int | None:
    """Width of the integer a declaration holds, points to, refers to or stores an array of."""
    canonical = type_.get_canonical()
    declarator = _declarator(type_)
    if declarator in ("pointer", "reference"):
        canonical = canonical.get_pointee()
    elif declarator == "array":
        canonical = canonical.get_array_element_type()
    return _INTEGER_WIDTHS.get(canonical.get_canonical().kind)


def _declarator(type_: ci.Type) -> str:
    kind = type_.get_canonical().kind
    if kind == TK.POINTER:
        return "pointer"
    if kind in (TK.LVALUEREFERENCE, TK.RVALUEREFERENCE):
        return "reference"
    if kind in _ARRAY_KINDS:
        return "array"
    return "value"


def _is_pointer(type_: ci.Type) -> bool:
    return type_.get_canonical().kind == TK.POINTER or type_.kind == TK.POINTER


def _is_address_of(node: ci.Cursor) -> bool:
    """`&x`: a unary operator whose result points to its operand's type."""
    if node.kind != K.UNARY_OPERATOR or node.type.get_canonical().kind != TK.POINTER:
        return False
    operand = next(iter(node.get_children()), None)
    if operand is None:
        return False
    pointee = node.type.get_canonical().get_pointee().get_canonical()
    return pointee.spelling.replace("const ", "") == operand.type.get_canonical().spelling.replace("const ", "")


def _is_operator_ref(cursor: ci.Cursor) -> bool:
    if cursor.kind not in (K.DECL_REF_EXPR, K.UNEXPOSED_EXPR):
        return False
    ref = cursor.referenced
    return ref is not None and ref.spelling.startswith("operator") and ref.kind in (
        K.CXX_METHOD, K.FUNCTION_DECL, K.FUNCTION_TEMPLATE, K.OVERLOADED_DECL_REF)


def _referenced_variable(node: ci.Cursor) -> ci.Cursor | None:
    """The local/parameter an (address-of or plain) variable expression names."""
    node = strip_parens(node)
    if node.kind == K.UNARY_OPERATOR:
        children = list(node.get_children())
        node = strip_parens(children[0]) if len(children) == 1 else node
    if node.kind != K.DECL_REF_EXPR:
        return None
    ref = node.referenced
    return ref if ref is not None and ref.kind in (K.VAR_DECL, K.PARM_DECL) else None


def _is_external_c_function(callee: ci.Cursor, path: str) -> bool:
    """A function with C language linkage declared outside the checked file (a C API)."""
    if callee.kind != K.FUNCTION_DECL or callee.mangled_name != callee.spelling:
        return False
    location = callee.location
    return location.file is not None and location.file.name != path


def _is_dim3_construction(cursor: ci.Cursor) -> bool:
    """Grid and block sizes are 32-bit by definition; converting to them is not narrowing an index."""
    if cursor.kind != K.CALL_EXPR:
        return False
    ref = cursor.referenced
    return ref is not None and ref.kind == K.CONSTRUCTOR and ref.spelling == "dim3"


def _source_text(data: bytes, node: ci.Cursor) -> str:
    return data[node.extent.start.offset:node.extent.end.offset].decode("utf-8", "replace")


def _narrowing_context(parent: ci.Cursor | None, data: bytes) -> tuple[str, str, int | None]:
    """(context, target variable, target name offset) of a conversion under `parent`."""
    if parent is None:
        return "expression", "", None
    if parent.kind == K.VAR_DECL:
        return "initialization", parent.spelling, parent.location.offset
    if parent.kind == K.BINARY_OPERATOR and parent.binary_operator == BO.Assign:
        target = next(iter(parent.get_children()), None)
        return "assignment", _source_text(data, target).strip() if target is not None else "", None
    if parent.kind == K.CALL_EXPR:
        return "argument", "", None
    if parent.kind == K.RETURN_STMT:
        return "return", "", None
    return "expression", "", None
