"""Tier 2: the integer and index values of a file's expressions, over `program.py`'s trees.

Every function the file writes is read through tier 1 (`Program.function`: its parameters
and its body's Stmt/Expr tree, lambda bodies included) and each expression is summarized
bottom-up in a `_Value`: the lane-modulo expressions it carries, whether it derives from a
64-bit tensor shape or stride, whether it is a CUDA built-in index (`blockIdx.x`...) and the
open 32-bit product it belongs to. A local variable (by `Var.key`) keeps the value last
stored into it, so `lane = threadIdx.x % 32; ... smem[lane]` is an address use of the
modulo. Declarations outside bodies (fields, namespace variables) come from the file's
top-level declarations, descending only through namespaces and records.

The results are `IntegerFacts`: integer declarations written with built-in keywords, 64-bit
shape values narrowed or passed on, 32-bit index products over the grid, lane moduli (read by
KC110, KC111, KC112 and KC151).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from ..model import (
    FunctionKind,
    IndexProduct,
    IntegerDecl,
    IntegerDeclKind,
    IntegerFacts,
    LaneModulo,
    ShapeArgument,
    SizeNarrowing,
    SourceModel,
    Span,
)
from .consteval import Constants
from .cursors import (
    MacroRanges,
    NestedTooDeeply,
    Positions,
)
from .program import DeclKind, DeclRef, Expr, ExprKind, Program, Stmt, StmtKind, TypeFacts, Var

# ---- vocabulary ------------------------------------------------------------------------------

_BUILTIN_INDEX_VARIABLES = frozenset({"threadIdx", "blockIdx", "blockDim", "gridDim"})
_GRID_SCALE_BUILTINS = ("blockIdx.", "gridDim.")  # a product with these scales with the grid
_LANE_WIDTHS = frozenset({32, 64, 128})  # a warp, and the usual warp-group widths
_LOAD_STORE_CALLEES = frozenset({"load", "store", "load_as", "store_as", "offset"})
_TENSOR_CLASSES = frozenset({"TensorView", "Tensor", "TensorObj"})
_SHAPE_METHODS = {
    "unwrap": frozenset({"SymbolicSize"}),
    "size": _TENSOR_CLASSES,
    "stride": _TENSOR_CLASSES,
    "numel": _TENSOR_CLASSES,
    "operator[]": frozenset({"ShapeView", "Shape"}),
}
_DLTENSOR_SHAPE_FIELDS = frozenset({"shape", "strides"})
_CONVERSIONS = (ExprKind.PAREN, ExprKind.IMPLICIT)
_COMPOUND_ASSIGNMENTS = frozenset({"*=", "/=", "%=", "+=", "-=", "<<=", ">>=", "&=", "^=", "|="})
_COMPARISONS = frozenset({"<", ">", "<=", ">=", "==", "!=", "&&", "||", "<=>"})
_OPERATOR_NAMES = {
    "operator+": "+",
    "operator-": "-",
    "operator*": "*",
    "operator%": "%",
    "operator&": "&",
    "operator=": "=",
    "operator<": "<",
    "operator>": ">",
    "operator<=": "<=",
    "operator>=": ">=",
    "operator==": "==",
    "operator!=": "!=",
}
# Integer types that are not index arithmetic (a truth value, characters of other widths)
_NOT_INDEX_INTEGERS = frozenset({"bool", "wchar_t", "char8_t", "char16_t", "char32_t", "__int128"})
# Words that may surround the integer keywords of a declaration's written type.
_SPECIFIER_WORDS = frozenset(
    {
        "const",
        "volatile",
        "static",
        "constexpr",
        "constinit",
        "inline",
        "extern",
        "thread_local",
        "register",
        "mutable",
        "__shared__",
        "__constant__",
        "__device__",
        "__managed__",
        "__host__",
        "__restrict__",
        "__restrict",
        "__grid_constant__",
    }
)
_INTEGER_KEYWORDS = frozenset({"int", "unsigned", "signed", "long", "short", "char"})
_NOT_INDEX_KEYWORDS = frozenset({"short", "char"})  # narrow storage types, not KC110's concern
_WORD_RE = re.compile(rb"[A-Za-z_]\w*|\S")
_COMMENT_RE = re.compile(rb"/\*.*?\*/|//[^\n]*", re.DOTALL)
_MAX_CONSTANT_DEPTH = 16  # constants are small expressions: `kVecN * sizeof(T) / 4`

# What an expression's value flows into: an enclosing expression, a declared variable, a
# statement, or nothing that names a narrowing context (a parameter's default argument).
_Parent = Expr | Var | Stmt | None


def extract_index_values(
    program: Program,
    declarations: Iterable[tuple[DeclRef, bool]],
    macros: MacroRanges,
    data: bytes,
    model: SourceModel,
) -> None:
    """Fill `model.integer_facts` from the file's declarations of code (`program.code_declarations`)."""
    reader = _Reader(program, data, macros)
    reader.declarations(declarations)
    model.integer_facts = reader.finish()


# ---- expression summaries --------------------------------------------------------------------


@dataclass(frozen=True)
class _Product:
    """An open chain of 32-bit multiplications (flattened over nested `*` and parentheses)."""

    node: Expr
    function_usr: str
    builtins: tuple[str, ...] = ()
    constants: int = 0
    values: tuple[str, ...] = ()
    derived: bool = False  # a factor is a value computed from grid products (`warp_id` of `tid / 32`)


@dataclass(frozen=True)
class _Value:
    lanes: frozenset[int] = frozenset()  # indices into the reader's lane-modulo list
    via: str = ""  # the variable the lanes came through
    shape: str = ""  # the shape/stride expression a 64-bit value derives from
    builtin: str = ""  # "blockIdx.x" when the expression is (a copy of) a CUDA built-in index
    product: _Product | None = None
    # Finished products whose 32-bit value still flows on through 32-bit arithmetic (or sits
    # in a 32-bit local): whether it is widened to 64 bits later is learned where that flow
    # ends, at every read of the local.
    flowing: tuple[_Product, ...] = ()


_NONE = _Value()


def _merge(values: list[_Value]) -> _Value:
    """Lanes and shape of the operands of an arithmetic expression (built-in-ness is lost)."""
    lanes = frozenset().union(*(v.lanes for v in values))
    via = next((v.via for v in values if v.via), "")
    shape = next((v.shape for v in values if v.shape), "")
    return _Value(lanes, via, shape) if lanes or shape else _NONE


def _ended(values: list[_Value]) -> list[_Product]:
    """The products whose flow ends at a node that carries none on."""
    return [v.product for v in values if v.product is not None] + [p for v in values for p in v.flowing]


@dataclass
class _Scope:
    usr: str
    qualified: str
    in_lambda: bool = False
    is_main: bool = False
    is_kernel: bool = False


_NO_SCOPE = _Scope("", "")


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
    """An integer declaration whose exemptions may still be learned later in the file."""

    key: int
    decl: IntegerDecl


@dataclass
class _State:
    variables: dict[int, _Value] = field(default_factory=dict)  # locals by `Var.key`
    constant_locals: set[int] = field(default_factory=set)  # locals declared with a constant value
    loop_bounds: dict[int, bool] = field(default_factory=dict)  # counter -> constant bound?
    c_api_outputs: dict[int, str] = field(default_factory=dict)  # local -> C function writing it
    decls: list[_PendingDecl] = field(default_factory=list)
    lanes: list[_LaneUse] = field(default_factory=list)
    products: dict[int, int] = field(default_factory=dict)  # product node (by id) -> its fact's index


def _held(name: str, width: int | None, value: _Value) -> _Value:
    """What a local of `width` bits named `name` holds once `value` is stored into it: a
    64-bit one keeps a shape, a 32-bit one a built-in and the grid products it was computed
    from (`const uint32_t row = blockIdx.x * kWarps + warp;` and later `row * stride`)."""
    narrow = width is not None and width <= 32
    return _Value(
        lanes=value.lanes,
        via=name if value.lanes else "",
        shape=value.shape if width == 64 else "",
        builtin=value.builtin if narrow else "",
        flowing=tuple(_ended([value])) if width == 32 else (),
    )


# ---- the reading -----------------------------------------------------------------------------


class _Reader:
    def __init__(self, program: Program, data: bytes, macros: MacroRanges) -> None:
        self.program = program
        self.path = program.path
        self.data = data
        self.positions = Positions(data)
        self.macros = macros
        self.state = _State()
        self.consts = Constants(data, program.path)
        self.facts = IntegerFacts()
        self.scopes: list[_Scope] = []
        self._previous_prefix: tuple[int, int] | None = None  # (type start, name) of the last declarator
        # inside the value stored into a 64-bit variable (its initializer, the right of `=`):
        # a product converted to 64 bits there without a cast is widened for that variable
        self._storing_wide = False

    # -- declarations --------------------------------------------------------------------------
    def declarations(self, declarations: Iterable[tuple[DeclRef, bool]]) -> None:
        """Functions, fields and variables, each with whether it is a record's member."""
        for declaration, in_record in declarations:
            if declaration.kind is DeclKind.FUNCTION:
                self._function(declaration)
            else:
                self._data_member_or_variable(declaration, in_record)

    def _function(self, declaration: DeclRef) -> None:
        function = self.program.declared_function(declaration)
        self.scopes.append(
            _Scope(
                function.usr,
                function.qualified_name,
                is_main=function.name == "main" and declaration.at_file_scope,
                is_kernel=function.kind is FunctionKind.KERNEL,
            )
        )
        self._code(function.params, lambda: function.body)
        self.scopes.pop()

    def _code(self, params: tuple[Var, ...], body: Callable[[], Stmt | None]) -> None:
        """Parameters, then the body `body()` builds. A body tier 1 finds nested too deeply
        (hundreds of macro-made `else if`s) is not summarized: its facts are lost, never
        made up, and the declarations around it keep theirs."""
        for param in params:
            self._end_flows([self._value(e, None) for e in param.exprs])  # default arguments
            self._add_integer_decl(param, IntegerDeclKind.PARAM)
        try:
            tree = body()
        except NestedTooDeeply:
            return
        if tree is not None:
            self._statement(tree)

    def _data_member_or_variable(self, declaration: DeclRef, in_record: bool) -> None:
        """A field, or a namespace- or class-scope variable (not a local). One whose
        initializer tier 1 finds nested too deeply (generated code) gives no facts: they are
        lost, never made up."""
        try:
            if declaration.kind is DeclKind.FIELD:
                self._field(declaration, in_record)
            else:
                self._variable(self.program.declared_variable(declaration))
        except NestedTooDeeply:
            return

    def _field(self, declaration: DeclRef, in_record: bool) -> None:
        var = self.program.declared_variable(declaration)
        self._end_flows([self._value(e, None) for e in var.exprs])  # a default member initializer
        if in_record and not declaration.is_bitfield:  # a bit-field states its width
            self._add_integer_decl(var, IntegerDeclKind.FIELD, owner=declaration.scope_qualified_name)

    def _lambda(self, expr: Expr) -> None:
        outer = self.scopes[-1] if self.scopes else _NO_SCOPE
        self.scopes.append(replace(outer, in_lambda=True))
        self._code(expr.lambda_params, lambda: expr.lambda_body)
        self.scopes.pop()

    # -- statements ----------------------------------------------------------------------------
    def _statement(self, stmt: Stmt) -> None:
        if stmt.kind is StmtKind.ASM:
            return  # operands are registers, not indices
        if stmt.kind is StmtKind.FOR:
            self._note_loop_counters(stmt)
        values: list[_Value] = []
        for part in _parts_in_order(stmt):
            if isinstance(part, Stmt):
                self._statement(part)
            elif isinstance(part, Var):
                self._variable(part)
            else:
                values.append(self._value(part, stmt))
        self._end_flows(values)

    def _variable(self, var: Var) -> None:
        outer, self._storing_wide = self._storing_wide, bool(self.scopes) and _width(var.type) == 64
        values = [self._value(e, var) for e in var.exprs]
        self._storing_wide = outer
        if self.scopes:  # a local (namespace- and class-scope variables are not)
            self._local(var, var.exprs[-1] if var.exprs else None, values[-1] if values else _NONE)
        self._end_flows(values)

    def _end_flows(self, values: list[_Value]) -> None:
        """Products reaching a statement or a declaration end there, in 32 bits."""
        for product in _ended(values):
            self._emit_product(product, widened=False)

    # -- expressions ---------------------------------------------------------------------------
    def _value(self, expr: Expr, parent: _Parent) -> _Value:
        """Summarize `expr`; `parent` is its nearest enclosing node that is not a parenthesis
        or an implicit conversion."""
        if expr.kind is ExprKind.LAMBDA:
            self._lambda(expr)
            return _NONE
        context = parent if expr.kind in _CONVERSIONS else expr  # conversions look through parentheses
        outer = self._storing_wide
        if expr.kind is ExprKind.BINARY and expr.operator == "=":
            self._storing_wide = _width(expr.type) == 64
        elif expr.kind in (ExprKind.SUBSCRIPT, ExprKind.CALL, ExprKind.CAST):
            self._storing_wide = False  # an index, an argument, or a cast's own (explicit) widening
        values = [self._value(child, context) for child in expr.children]
        self._storing_wide = outer
        value = self._combine(expr, parent, values)
        # a product takes on the grid products its operands carry (see `_product`)
        ended = _ended(values) if value.product is None else []
        if ended:
            value = self._flow_products(expr, value, ended)
        return value

    def _combine(self, node: Expr, parent: _Parent, values: list[_Value]) -> _Value:
        kind = node.kind
        if kind is ExprKind.REF:
            return self._decl_ref(node)
        if kind is ExprKind.MEMBER:
            return self._member_ref(node)
        if kind in _CONVERSIONS:
            return self._transparent(node, parent, values)
        if kind is ExprKind.CAST:
            return self._explicit_cast(node, values)
        if kind is ExprKind.BINARY and len(values) == 2:
            if node.operator in _COMPOUND_ASSIGNMENTS:
                return self._compound_assignment(node, values)
            return self._binary(node, node.operator, list(node.children), values)
        if kind is ExprKind.SUBSCRIPT and len(values) == 2:
            return self._subscript(node, values)
        if kind is ExprKind.UNARY:
            return self._unary(node, values)
        if kind is ExprKind.CALL:
            return self._call(node, values)
        if kind is ExprKind.CONDITIONAL and len(values) == 3:
            return _merge(values[1:])
        return _NONE

    # -- references ----------------------------------------------------------------------------
    def _decl_ref(self, node: Expr) -> _Value:
        ref = node.ref
        if ref is None:
            return _NONE
        if ref.kind is DeclKind.PARAMETER and self._in_kernel and _width(ref.type) == 64:
            return _Value(shape=ref.name)  # a 64-bit size or stride handed to the kernel
        return self.state.variables.get(ref.key, _NONE) if ref.kind is DeclKind.VARIABLE else _NONE

    def _member_ref(self, node: Expr) -> _Value:
        """`threadIdx.x` and friends are member accesses of the built-in variables; a 64-bit
        field of a kernel's by-value params struct is a size or stride."""
        if len(node.children) != 1:
            return _NONE
        base = node.children[0]
        if base.kind is ExprKind.REF and base.name in _BUILTIN_INDEX_VARIABLES:
            member = self._text(node).rstrip()[-1:]
            return _Value(builtin=f"{base.name}.{member}") if member in ("x", "y", "z") else _NONE
        owner = _referenced_variable(base)
        if self._in_kernel and owner is not None and owner.kind is DeclKind.PARAMETER and _width(node.type) == 64:
            return _Value(shape=self._text(node))
        return _NONE

    # -- conversions ---------------------------------------------------------------------------
    def _transparent(self, node: Expr, parent: _Parent, values: list[_Value]) -> _Value:
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

    def _explicit_cast(self, node: Expr, values: list[_Value]) -> _Value:
        """A written cast is a deliberate conversion: it ends a shape value when it narrows."""
        value = values[-1] if values else _NONE
        width = _width(node.type)
        return _Value(
            value.lanes,
            value.via,
            value.shape if width == 64 else "",
            value.builtin if width is not None and width <= 32 else "",
        )

    def _note_narrowing(self, conversion: Expr, parent: _Parent, source: str) -> None:
        if isinstance(parent, Expr) and (parent.kind is ExprKind.CAST or _is_dim3_construction(parent)):
            return
        operand = conversion.children[0] if conversion.children else conversion
        context, target, offset = self._narrowing_context(parent)
        self._add_narrowing(conversion, source, operand, conversion.type.spelling, context, target, offset)

    def _narrowing_context(self, parent: _Parent) -> tuple[str, str, int | None]:
        """(context, target variable, target name offset) of a conversion under `parent`."""
        if isinstance(parent, Var):
            return "initialization", parent.name, parent.name_offset
        if isinstance(parent, Expr) and parent.kind is ExprKind.BINARY and parent.operator == "=":
            return "assignment", self._text(parent.children[0]).strip(), None
        if isinstance(parent, Expr) and parent.kind is ExprKind.CALL:
            return "argument", "", None
        if isinstance(parent, Stmt) and parent.kind is StmtKind.RETURN:
            return "return", "", None
        return "expression", "", None

    def _add_narrowing(
        self,
        node: Expr,
        source: str,
        operand: Expr,
        target_type: str,
        context: str,
        target: str,
        target_offset: int | None = None,
    ) -> None:
        self.facts.size_narrowings.append(
            SizeNarrowing(
                span=node.span,
                text=self._text(node),
                source=source,
                source_type=operand.type.spelling,
                target_type=target_type,
                context=context,
                function_usr=self._function_usr,
                target=target,
                target_offset=target_offset,
            )
        )

    # -- operators -----------------------------------------------------------------------------
    def _binary(self, node: Expr, op: str, operands: list[Expr], values: list[_Value]) -> _Value:
        lhs, rhs = values
        if op in _COMPARISONS:
            return _NONE
        if op == "=":
            self._store(operands[0], rhs)
            return rhs
        if op == ",":
            return rhs
        merged = _merge(values)
        if op in ("%", "&"):
            lane = self._lane_modulo(node, op, operands, lhs)
            if lane is not None:
                return replace(merged, lanes=merged.lanes | {lane}, via="")
        elif op in ("+", "-"):
            self._pointer_arithmetic(operands, values)
        elif op == "*":
            product = self._product(node, operands, values)
            if product is not None:
                return replace(merged, product=product)
        return merged

    def _compound_assignment(self, node: Expr, values: list[_Value]) -> _Value:
        target, operand = node.children
        value = values[1]
        if value.shape:
            target_width, value_width = _width(target.type), _width(operand.type)
            if target_width is not None and target_width < 64 and value_width == 64:
                self._add_narrowing(
                    operand,
                    value.shape,
                    operand,
                    target.type.spelling,
                    "compound assignment",
                    self._text(target).strip(),
                )
        self._store(target, _Value(value.lanes | self._stored(target).lanes, value.via))
        return _NONE

    def _unary(self, node: Expr, values: list[_Value]) -> _Value:
        """`-x`, `~x`, `++x` keep what `x` carries; `*p`, `&x` and `!x` do not: a load, an
        address or a truth value is not an index any more. (Decided on types: inside a macro
        argument the extent does not point at the operator.)"""
        if not node.children or _width(node.type) is None or node.children[0].type.is_pointer:
            return _NONE
        return _merge(values)

    def _subscript(self, node: Expr, values: list[_Value]) -> _Value:
        self._address_use(node, values[1], "subscript")
        base = node.children[0].stripped()
        if base.kind is ExprKind.MEMBER and base.name in _DLTENSOR_SHAPE_FIELDS and _width(node.type) == 64:
            return _Value(shape=self._text(node))
        return _NONE

    def _pointer_arithmetic(self, operands: list[Expr], values: list[_Value]) -> None:
        for index in (0, 1):
            if values[index].lanes and operands[1 - index].type.is_pointer:
                self._address_use(operands[index], values[index], "pointer arithmetic")

    # -- calls ---------------------------------------------------------------------------------
    def _call(self, node: Expr, values: list[_Value]) -> _Value:
        operator = _operator_name(node)
        if operator is not None:
            return self._operator_call(node, operator, values)
        ref = node.ref
        arguments = list(node.arguments)
        argument_values = values[len(values) - len(arguments) :]
        if self._callee_name(node, ref) in _LOAD_STORE_CALLEES:
            for argument_value in argument_values:
                self._address_use(node, argument_value, "load/store offset")
        if ref is not None and any(_is_address_of(a) for a in arguments):
            self._note_c_api_outputs(ref, arguments)
        if ref is None:
            self._note_shape_arguments(arguments, argument_values)
        return self._call_result(node, ref, argument_values)

    def _operator_call(self, node: Expr, operator: str, values: list[_Value]) -> _Value:
        """An overloaded or type-dependent operator: the same facts as the built-in one."""
        pairs = [(c, v) for c, v in zip(node.children, values) if not _is_operator_ref(c)]
        operands, operand_values = [c for c, _ in pairs], [v for _, v in pairs]
        if operator == "operator()":
            self._note_shape_arguments(operands[1:], operand_values[1:])
            return _NONE
        if operator == "operator[]" and len(operands) == 2:
            self._address_use(node, operand_values[1], "subscript")
            return self._call_result(node, node.ref, [])
        op = _OPERATOR_NAMES.get(operator)
        if op is None or len(operands) != 2:
            return _NONE
        if op in ("+", "-"):
            self._pointer_arithmetic(operands, operand_values)
            return _merge(operand_values)
        if op in ("%", "&", "=") or op in _COMPARISONS:
            return self._binary(node, op, operands, operand_values)
        return _merge(operand_values)

    def _call_result(self, node: Expr, ref: DeclRef | None, argument_values: list[_Value]) -> _Value:
        """A shape accessor yields a shape value; a 64-bit function of one stays one (div_ceil)."""
        if _width(node.type) != 64:
            return _NONE
        if ref is not None and ref.is_method and ref.name in _SHAPE_METHODS and ref.owner in _SHAPE_METHODS[ref.name]:
            return _Value(shape=self._text(node))
        shape = next((v.shape for v in argument_values if v.shape), "")
        return _Value(shape=shape) if shape else _NONE

    def _callee_name(self, node: Expr, ref: DeclRef | None) -> str:
        if ref is not None:
            return ref.name
        if len(node.arguments) == len(node.children):
            return ""  # no callee expression (a construction)
        callee = node.children[0]
        if callee.ref is not None:
            return callee.ref.name
        match = re.search(r"(\w+)\s*$", self._text(callee).split("<", 1)[0])
        return match.group(1) if match else ""

    def _note_c_api_outputs(self, callee: DeclRef, arguments: list[Expr]) -> None:
        """`int device; cudaGetDevice(&device);`: a C API decides the out-parameter's type."""
        if not self._is_external_c_function(callee):
            return
        for argument in arguments:
            if _is_address_of(argument):
                target = _referenced_variable(argument)
                if target is not None:
                    self.state.c_api_outputs[target.key] = callee.name

    def _note_shape_arguments(self, arguments: list[Expr], values: list[_Value]) -> None:
        for argument, value in zip(arguments, values):
            if value.shape and _width(argument.type) == 64:
                self.facts.shape_arguments.append(
                    ShapeArgument(argument.written_span, self._text(argument), argument.type.spelling, value.shape)
                )

    def _is_external_c_function(self, callee: DeclRef) -> bool:
        """A function with C language linkage declared outside the checked file (a C API)."""
        return callee.has_c_linkage and callee.file != "" and callee.file != self.path

    # -- declarations --------------------------------------------------------------------------
    def _local(self, var: Var, initializer: Expr | None, init_value: _Value) -> None:
        self.state.variables[var.key] = _held(var.name, _width(var.type), init_value)
        written = self._written_integer_type(var)
        words = written[2] if written is not None else self._specifier_words(var)
        if initializer is not None and ("constexpr" in words or ("const" in words and self._is_constant(initializer))):
            self.state.constant_locals.add(var.key)
        if written is not None:
            self._add_integer_decl(
                var, IntegerDeclKind.LOCAL, written=written, initializer=initializer, init_value=init_value
            )

    def _add_integer_decl(
        self,
        var: Var,
        kind: IntegerDeclKind,
        owner: str = "",
        written: tuple[str, Span, frozenset[str]] | None = None,
        initializer: Expr | None = None,
        init_value: _Value = _NONE,
    ) -> None:
        """`owner` names a field's record; other declarations belong to the current function."""
        if self.scopes and self.scopes[-1].is_main:
            return
        written = written or self._written_integer_type(var)
        if written is None:
            return
        keywords, keyword_span, words = written
        scope = self.scopes[-1] if self.scopes else _NO_SCOPE
        is_field = kind is IntegerDeclKind.FIELD
        decl = IntegerDecl(
            name=var.name,
            keywords=keywords,
            kind=kind,
            owner=owner if is_field else scope.qualified,
            owner_usr="" if is_field else scope.usr,
            span=keyword_span,
            name_span=self.positions.span(var.name_offset, var.name_offset + len(var.name.encode())),
            declarator=var.declarator,
            in_lambda=scope.in_lambda and not is_field,
            is_constexpr="constexpr" in words,
            has_constant_init=initializer is not None and "const" in words and self._is_constant(initializer),
            shape_source=init_value.shape or self._narrowed_shape(initializer),
            c_api=self._c_api_result(initializer, keywords),
        )
        self.state.decls.append(_PendingDecl(var.key, decl))

    def _written_integer_type(self, var: Var) -> tuple[str, Span, frozenset[str]] | None:
        """(keywords, their span, every specifier word) when the declared type is written with
        built-in integer keywords; None for aliases (`int32_t`), templates, macros, `auto`."""
        if not var.name or var.name_file != self.path:
            return None
        if self.macros.macro_at(var.name_offset):
            return None  # produced by a macro expansion: nobody wrote this type here
        start, end = self._type_prefix(var.span.start, var.name_offset)
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
        if first is None or last is None:  # no integer keyword
            return None
        if _NOT_INDEX_KEYWORDS.intersection(keywords) or _width(var.element_type) is None:
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

    def _specifier_words(self, var: Var) -> frozenset[str]:
        start, end = self._type_prefix(var.span.start, var.name_offset)
        if not 0 <= start <= end:
            return frozenset()
        words = (w.decode("ascii", "replace") for w in _WORD_RE.findall(self.data[start:end]))
        return frozenset(w for w in words if w in _SPECIFIER_WORDS)

    def _narrowed_shape(self, initializer: Expr | None) -> str:
        """The shape expression behind an initializer narrowed to this (32-bit) variable."""
        if initializer is None:
            return ""
        offset = initializer.span.start
        return next(
            (
                n.source
                for n in reversed(self.facts.size_narrowings)
                if n.span.start == offset and n.context == "initialization"
            ),
            "",
        )

    def _c_api_result(self, initializer: Expr | None, keywords: str) -> str:
        """`int rc = c_function(...)`: the variable holds a C API's `int` result code."""
        call = initializer.stripped() if initializer is not None else None
        if call is None or call.kind is not ExprKind.CALL or call.ref is None:
            return ""
        callee = call.ref
        result_words = callee.result_type.replace("const", "").split()
        if not self._is_external_c_function(callee) or " ".join(result_words) != keywords:
            return ""
        return callee.name

    def _store(self, target: Expr, value: _Value) -> None:
        variable = _referenced_variable(target)
        if variable is None or variable.key not in self.state.variables:
            return
        self.state.variables[variable.key] = _held(variable.name, _width(variable.type), value)

    def _stored(self, target: Expr) -> _Value:
        variable = _referenced_variable(target)
        return self.state.variables.get(variable.key, _NONE) if variable is not None else _NONE

    # -- loops ---------------------------------------------------------------------------------
    def _note_loop_counters(self, loop: Stmt) -> None:
        """`for (int i = 0; i < kVecN; ++i)`: remember whether each counter's bound is constant."""
        init = loop.stmts[0] if loop.stmts and loop.stmts[0] is not loop.body else None
        if init is None or init.kind is not StmtKind.DECL:
            return
        for counter in init.variables:
            bound = self._loop_bound(loop.exprs, counter)
            self.state.loop_bounds[counter.key] = bound is not None and self._is_constant(bound)

    def _loop_bound(self, parts: tuple[Expr, ...], counter: Var) -> Expr | None:
        for part in parts:
            operands = _comparison_operands(part)
            if operands is None:
                continue
            for index in (0, 1):
                variable = _referenced_variable(operands[index])
                if variable is not None and variable.key == counter.key:
                    return operands[1 - index]
            return None
        return None

    # -- constants -----------------------------------------------------------------------------
    def _is_constant(self, node: Expr, depth: int = 0) -> bool:
        """A compile-time constant: literals, template/enum constants, constexpr variables,
        `sizeof`, dependent `Type::kMember`, and operators over those."""
        if depth > _MAX_CONSTANT_DEPTH:
            return False
        kind = node.kind
        if kind is ExprKind.LITERAL:
            return node.value is not None  # an integer, character or bool literal
        if node.is_size_query:
            return True
        if kind in (ExprKind.REF, ExprKind.MEMBER):
            ref = node.ref
            if ref is None:  # a member of a dependent type: a static constant in practice
                return node.names_type_member
            return self._is_constant_declaration(ref)
        if (
            kind in _CONVERSIONS
            or kind in (ExprKind.CAST, ExprKind.UNARY, ExprKind.CONDITIONAL)
            or (kind is ExprKind.BINARY and node.operator not in _COMPOUND_ASSIGNMENTS)
        ):
            return bool(node.children) and all(self._is_constant(c, depth + 1) for c in node.children)
        return False

    def _is_constant_declaration(self, ref: DeclRef) -> bool:
        if ref.kind in (DeclKind.TEMPLATE_PARAMETER, DeclKind.ENUM_CONSTANT):
            return True
        if ref.kind is not DeclKind.VARIABLE:
            return False
        return ref.key in self.state.constant_locals or (not ref.is_local and ref.is_const)

    # -- lanes and products --------------------------------------------------------------------
    def _lane_modulo(self, node: Expr, op: str, operands: list[Expr], lhs: _Value) -> int | None:
        if lhs.builtin != "threadIdx.x":
            return None
        value = self.consts.integer(operands[1])
        width = value if op == "%" else (value + 1 if value is not None else None)
        if width not in _LANE_WIDTHS:
            return None
        self.state.lanes.append(_LaneUse(node.span, self._text(node), width, self._function_usr))
        return len(self.state.lanes) - 1

    def _address_use(self, node: Expr, value: _Value, kind: str) -> None:
        for index in value.lanes:
            lane = self.state.lanes[index]
            if lane.address_use is None:
                lane.address_use, lane.address_kind, lane.via = node.span, kind, value.via

    def _product(self, node: Expr, operands: list[Expr], values: list[_Value]) -> _Product | None:
        if _width(node.type) != 32:
            return None
        product = _Product(node, self._function_usr)
        for operand, value in zip(operands, values):
            if value.product is not None:
                inner = value.product
                product = replace(
                    product,
                    builtins=product.builtins + inner.builtins,
                    constants=product.constants + inner.constants,
                    values=product.values + inner.values,
                )
            elif value.builtin:
                product = replace(product, builtins=product.builtins + (value.builtin,))
            elif value.flowing:  # a value computed from grid products (`tid / 32`): they go on in this one
                product = replace(
                    product,
                    builtins=product.builtins + tuple(b for p in value.flowing for b in p.builtins),
                    constants=product.constants + sum(p.constants for p in value.flowing),
                    values=product.values + tuple(v for p in value.flowing for v in p.values),
                    derived=True,
                )
            elif self._is_constant(operand):
                product = replace(product, constants=product.constants + 1)
            else:
                product = replace(product, values=product.values + (self._text(operand).strip(),))
        return product

    def _flow_products(self, node: Expr, value: _Value, products: list[_Product]) -> _Value:
        """Products whose 32-bit result reaches `node`: carried on through 32-bit arithmetic
        (`blockIdx.x * blockDim.x + threadIdx.x`), recorded as widened where a conversion to
        64 bits takes the value (`int64_t i = ...`, `k += ...`, a 64-bit operand or
        parameter), and as kept in 32 bits where the flow ends anywhere else."""
        width = _width(node.type)
        if _carries_products(node) and width == 32 and not self._remainder(node):
            return replace(value, flowing=tuple(products))
        widened = width == 64 and (node.kind in _CONVERSIONS or node.kind is ExprKind.CAST)
        stored = widened and node.kind in _CONVERSIONS and self._storing_wide
        for product in products:
            self._emit_product(product, widened, stored)
        return replace(value, flowing=())

    def _remainder(self, node: Expr) -> bool:
        """`x % 32`, `x & 31`, `x % (2 * n)`: a value below a constant or a size, whatever `x`
        is (a lane, a column within a flat index): the products in `x` do not flow on through
        it (a mask only by a constant: `x & m` keeps any bit `m` has)."""
        if node.kind is not ExprKind.BINARY or len(node.children) != 2:
            return False
        return node.operator == "%" or (node.operator == "&" and self.consts.integer(node.children[1]) is not None)

    def _emit_product(self, product: _Product, widened: bool, stored: bool = False) -> None:
        """Record where a product's flow ends. A product held in a 32-bit local ends at every
        read of the local: it is one fact, widened when any of those reads widens it."""
        if not any(b.startswith(_GRID_SCALE_BUILTINS) for b in product.builtins):
            return
        node = product.node
        index = self.state.products.get(id(node))
        if index is not None:
            fact = self.facts.index_products[index]
            if widened:
                self.facts.index_products[index] = replace(fact, widened=True, stored_wide=fact.stored_wide or stored)
            return
        self.state.products[id(node)] = len(self.facts.index_products)
        self.facts.index_products.append(
            IndexProduct(
                span=node.span,
                text=self._text(node),
                function_usr=product.function_usr,
                builtins=product.builtins,
                constant_factors=product.constants,
                value_factors=product.values,
                result_type=node.type.spelling,
                widened=widened,
                stored_wide=stored,
                derived=product.derived,
            )
        )

    # -- results -------------------------------------------------------------------------------
    @property
    def _function_usr(self) -> str:
        return self.scopes[-1].usr if self.scopes else ""

    @property
    def _in_kernel(self) -> bool:
        return bool(self.scopes) and self.scopes[-1].is_kernel

    def finish(self) -> IntegerFacts:
        state = self.state
        for pending in state.decls:
            decl = pending.decl
            counter = state.loop_bounds.get(pending.key)
            c_api = decl.c_api or state.c_api_outputs.get(pending.key, "")
            self.facts.integer_decls.append(replace(decl, loop_bound_constant=counter, c_api=c_api))
        self.facts.lane_modulos = [
            LaneModulo(
                lane.span, lane.text, lane.width, lane.function_usr, lane.address_use, lane.address_kind, lane.via
            )
            for lane in state.lanes
        ]
        return self.facts

    def _text(self, node: Expr) -> str:
        span = node.span
        return self.data[span.start : span.end].decode("utf-8", "replace")


# ---- small tier-1 predicates -----------------------------------------------------------------


def _parts_in_order(stmt: Stmt) -> list[Stmt | Var | Expr]:
    """A statement's parts in evaluation (and source) order: an `if`'s, `for`'s or
    `switch`'s init statement, the declared variables, the expressions, then the nested
    statements; a `do`'s body comes before its condition."""
    if stmt.kind is StmtKind.DO:
        return [*stmt.stmts, *stmt.exprs]
    branches = {id(s) for s in (stmt.then, stmt.orelse, stmt.body) if s is not None}
    leading = [s for s in stmt.stmts if id(s) not in branches] if branches else []
    trailing = [s for s in stmt.stmts if id(s) in branches] if branches else list(stmt.stmts)
    return [*leading, *stmt.variables, *stmt.exprs, *trailing]


def _width(type_: TypeFacts) -> int | None:
    """Bit width of an integer type used for sizes and indices (after typedefs and
    qualifiers); None for anything else, `bool` and the character types of other widths."""
    if type_.bits is None or _NOT_INDEX_INTEGERS.intersection(type_.canonical.split()):
        return None
    return type_.bits


def _carries_products(node: Expr) -> bool:
    """Expressions through which a 32-bit product's value flows on unchanged in width."""
    if node.kind is ExprKind.BINARY:
        return node.operator not in _COMPOUND_ASSIGNMENTS
    return node.kind in _CONVERSIONS or node.kind in (ExprKind.CAST, ExprKind.UNARY, ExprKind.CONDITIONAL)


def _is_address_of(node: Expr) -> bool:
    return node.kind is ExprKind.UNARY and node.operator == "&"


def _is_operator_ref(node: Expr) -> bool:
    """The callee of an operator call, which clang lists between the operands."""
    if node.kind not in (ExprKind.REF, ExprKind.IMPLICIT):
        return False
    ref = node.ref
    return ref is not None and ref.name.startswith("operator") and ref.kind in (DeclKind.FUNCTION, DeclKind.OTHER)


def _operator_name(call: Expr) -> str | None:
    """The operator an overloaded or type-dependent operator call applies, else None."""
    if call.name.startswith("operator"):
        return call.name
    return next((c.ref.name for c in call.children if c.ref is not None and _is_operator_ref(c)), None)


def _comparison_operands(node: Expr) -> list[Expr] | None:
    if node.kind is ExprKind.BINARY and node.operator in _COMPARISONS and len(node.children) == 2:
        return list(node.children)
    if node.kind is ExprKind.CALL and _OPERATOR_NAMES.get(_operator_name(node) or "") in _COMPARISONS:
        operands = [c for c in node.children if not _is_operator_ref(c)]
        return operands if len(operands) == 2 else None
    return None


def _referenced_variable(node: Expr) -> DeclRef | None:
    """The local/parameter an (address-of or plain) variable expression names."""
    node = node.stripped()
    if node.kind is ExprKind.UNARY and len(node.children) == 1:
        node = node.children[0].stripped()
    if node.kind is not ExprKind.REF:
        return None
    ref = node.ref
    return ref if ref is not None and ref.kind in (DeclKind.VARIABLE, DeclKind.PARAMETER) else None


def _is_dim3_construction(node: Expr) -> bool:
    """Grid and block sizes are 32-bit by definition; converting to them is not narrowing an index."""
    ref = node.ref if node.kind is ExprKind.CALL else None
    return ref is not None and ref.is_constructor and ref.name == "dim3"
