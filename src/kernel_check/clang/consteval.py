"""Constant evaluation with C++ semantics, written once for every analysis.

`Constants` turns an expression (or a type, as its size in bytes) of one translation unit into
a `ConstExpr` kept symbolic over template parameters, so that a rule can evaluate it once per
instantiation (`ConstExpr.evaluate`, whose operators are `model.apply_const_op`: division
truncates toward zero, the remainder takes the dividend's sign). Whatever clang folds on its
own (literals, constexpr variables, enumerators, `sizeof` of complete types) is folded by
clang; the rest is followed through constant variables, `if constexpr` helpers that only
return, `min`/`max`/`gcd` and the vector types of the kernel library.

It belongs to tier 1 (docs/architecture.md): it reads what no tier-1 node models (the types
and template arguments an expression spells, alias declarations, helpers' bodies), so it
walks cursors; the analyses of tier 2 call it with tier-1 nodes (`Constants.value`,
`callee_name`, `returns_of`...).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

import clang.cindex as ci

from ..model import BINARY_OPERATOR_SPELLINGS, ConstExpr, Span
from .capi import folded_int, overloaded_decls
from .cursors import (
    EXPLICIT_CASTS,
    FUNCTION_KINDS,
    PARENS_AND_CONVERSIONS,
    TEMPLATE_PARAM_KINDS,
    K,
    children,
    initializer_of,
    referenced_of,
    source_text,
    span_of,
    strip_casts,
    strip_parens,
    walk,
)
from .program import (
    DeclRef,
    Expr,
    Program,
    Stmt,
    Var,
    angle_groups,
    cursor_of,
    decl_ref,
    tokens_of,
    unqualified_name,
)

Value = TypeVar("Value")
_NAME_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_BINARY_SPELLINGS = frozenset(BINARY_OPERATOR_SPELLINGS.values())
_UNARY_TOKENS = {"-": "neg", "!": "not", "~": "bitnot", "+": ""}
_CONSTEXPR_HELPERS = {"min": "min", "max": "max", "gcd": "gcd"}
# CUDA's built-in constants declared without a value (`extern const int warpSize`).
_DEVICE_CONSTANTS = {"warpSize": 32}
MAX_FOLD_DEPTH = 12  # variable initializers / helper calls followed in a row
ARGUMENT_PREFIX = "arg:"
VECTOR_TEMPLATES = frozenset({"AlignedVector", "AlignedStorage"})  # <T, N>: N elements of T
_CUDA_VECTOR_NAME = re.compile(r"(?:u?char|u?short|u?int|u?long|u?longlong|float|double)[234]")
_PACKED_NAMES = frozenset(
    {
        "__half2",
        "half2",
        "__nv_bfloat162",
        "nv_bfloat162",
        "__nv_fp8x2_e4m3",
        "__nv_fp8x2_e5m2",
        "__nv_fp8x4_e4m3",
        "__nv_fp8x4_e5m2",
    }
)


def expression_children(cursor: ci.Cursor) -> list[ci.Cursor]:
    return [c for c in cursor.get_children() if c.kind.is_expression()]


def canonical_name(type_: ci.Type) -> str:
    return unqualified_name(type_.get_canonical().spelling)


def bare_record_name(spelling: str) -> str:
    return spelling.split("<", 1)[0].replace("const ", "").strip().split("::")[-1]


def function_declaration(decl: ci.Cursor | None) -> ci.Cursor | None:
    """The function (template) a callee reference names, when it names exactly one."""
    if decl is not None and decl.kind == K.OVERLOADED_DECL_REF:
        candidates = overloaded_decls(decl)
        decl = candidates[0] if len({c.get_usr() for c in candidates}) == 1 else None
    if decl is None or decl.kind not in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE, K.CXX_METHOD):
        return None
    return decl.specialized_template or decl


def _named_function(reference: ci.Cursor) -> ci.Cursor | None:
    """`function_declaration` of what a reference names: its overload set when it spells
    one (a dependent call), else the declaration it refers to."""
    named = next((c for c in reference.get_children() if c.kind == K.OVERLOADED_DECL_REF), None)
    return function_declaration(named if named is not None else referenced_of(reference))


def referenced_function(callee: Expr) -> DeclRef | None:
    """The function (template) a callee expression refers to, when it refers to exactly one."""
    declaration = function_declaration(referenced_of(cursor_of(callee)))
    return decl_ref(declaration) if declaration is not None else None


def named_function(reference: Expr) -> DeclRef | None:
    """The function (template) a reference names: through the overload set it spells (a
    dependent call), else as `referenced_function`."""
    declaration = _named_function(cursor_of(reference))
    return decl_ref(declaration) if declaration is not None else None


def _specialization_arg(specialization: ci.Cursor, index: int) -> ConstExpr:
    """A function template specialization's argument at `index`: a type as its size, an
    integer as its value; unknown for another (a declaration, a null pointer)."""
    kind = specialization.get_template_argument_kind(index)
    if kind == ci.TemplateArgumentKind.INTEGRAL:
        return ConstExpr("int", specialization.get_template_argument_value(index))
    size = specialization.get_template_argument_type(index).get_canonical().get_size()
    if kind == ci.TemplateArgumentKind.TYPE and size > 0:
        return ConstExpr("int", size)
    return ConstExpr("unknown", text=specialization.spelling)


def template_param_names(declaration: DeclRef) -> tuple[str, ...]:
    """The names of a template's parameters (() for a declaration that is no template)."""
    return _template_param_names(cursor_of(declaration))


def _member_aliases(record: ci.Cursor, member: str) -> list[ci.Cursor]:
    """The type aliases named `member` declared in a class (template)."""
    return [c for c in record.get_children() if c.kind in (K.TYPE_ALIAS_DECL, K.TYPEDEF_DECL) and c.spelling == member]


def _explicit_specializations(template: ci.Cursor) -> list[ci.Cursor]:
    """The explicit (full) specializations of a class template declared beside it, in the
    same namespace block: where C++ requires them to be declared before their first use."""
    parent = template.lexical_parent
    if parent is None:
        return []
    return [
        c
        for c in parent.get_children()
        if c.kind in (K.STRUCT_DECL, K.CLASS_DECL) and c.specialized_template == template and c.is_definition()
    ]


def _template_param_names(declaration: ci.Cursor) -> tuple[str, ...]:
    return tuple(c.spelling for c in declaration.get_children() if c.kind in TEMPLATE_PARAM_KINDS)


@dataclass(frozen=True)
class VectorType:
    width: ConstExpr
    text: str


@dataclass(frozen=True)
class Returns(Generic[Value]):
    """What a body returns through blocks and `if`s: `value` (a return's), or `taken` when
    `condition` holds and `otherwise` when not (None: that path returns no value). The
    values are tier-1 expressions (`returns_of`), or cursors inside this module."""

    value: Value | None = None
    condition: Value | None = None
    taken: Returns[Value] | None = None
    otherwise: Returns[Value] | None = None


def returns_of(program: Program, body: Stmt, only_returns: bool) -> Returns[Expr] | None:
    """The returns of a body (a helper's or a lambda's), through nested blocks and `if`s
    (the statements after an `if` without `else` are its `otherwise`). With `only_returns`,
    a statement other than those and local declarations ends the walk with None (a body
    that does more than return); else it is passed over."""
    return _as_expressions(program, _body_returns(cursor_of(body), only_returns))


def _as_expressions(program: Program, returns: Returns[ci.Cursor] | None) -> Returns[Expr] | None:
    if returns is None:
        return None
    return Returns(
        value=program.expression(returns.value, 0) if returns.value is not None else None,
        condition=program.expression(returns.condition, 0) if returns.condition is not None else None,
        taken=_as_expressions(program, returns.taken),
        otherwise=_as_expressions(program, returns.otherwise),
    )


def _body_returns(block: ci.Cursor, only_returns: bool) -> Returns[ci.Cursor] | None:
    """`returns_of` over a body's cursor."""
    return _returns_of(children(block), only_returns)


def _returns_of(statements: list[ci.Cursor], only_returns: bool) -> Returns[ci.Cursor] | None:
    for index, statement in enumerate(statements):
        if statement.kind == K.RETURN_STMT:
            values = expression_children(statement)
            return Returns(value=values[0]) if values else None
        if statement.kind == K.COMPOUND_STMT:
            return _returns_of(children(statement) + statements[index + 1 :], only_returns)
        if statement.kind == K.IF_STMT:
            parts = children(statement)
            if len(parts) not in (2, 3) or not parts[0].kind.is_expression():
                return None  # an init statement or a condition variable
            rest = [parts[2]] if len(parts) == 3 else statements[index + 1 :]
            return Returns(
                condition=parts[0],
                taken=_returns_of([parts[1]], only_returns),
                otherwise=_returns_of(rest, only_returns),
            )
        if only_returns and statement.kind not in (K.DECL_STMT, K.STATIC_ASSERT, K.NULL_STMT):
            return None  # local constexprs are inlined where they are used
    return None


def is_vector_record(name: str) -> bool:
    """A type that packs several elements into one access (AlignedVector, int4, half2...)."""
    bare = bare_record_name(name)
    return bare in VECTOR_TEMPLATES or bare in _PACKED_NAMES or bool(_CUDA_VECTOR_NAME.fullmatch(bare))


class Constants:
    """Turns expressions and types of one translation unit into `ConstExpr`s."""

    def __init__(self, data: bytes, path: str) -> None:
        self.data = data
        self.path = path

    def _text(self, cursor: ci.Cursor) -> str:
        location = cursor.extent.start
        if location.file is None or location.file.name != self.path:
            return cursor.spelling
        return source_text(self.data, span_of(cursor.extent))

    def unknown(self, cursor: ci.Cursor) -> ConstExpr:
        return ConstExpr("unknown", text=self._text(cursor))

    # -- values --------------------------------------------------------------------------
    def integer(self, node: Expr) -> int | None:
        """The value of an expression that does not depend on template parameters, else None."""
        return self._value(cursor_of(node)).evaluate({})

    def value(self, node: Expr) -> ConstExpr:
        """An expression's value, symbolic over template parameters."""
        return self._value(cursor_of(node))

    def text(self, node: Expr) -> str:
        """An expression as written in the checked file (its spelling elsewhere)."""
        return self._text(cursor_of(node))

    def static_asserts(self, scope: ci.Cursor) -> list[tuple[ConstExpr, str, Span]]:
        """(condition, as written, where) of each `static_assert` in a function (its body,
        nested blocks too) or in a class template's own body (not its member functions':
        those are theirs)."""
        found = walk(scope) if scope.kind in FUNCTION_KINDS else scope.get_children()
        conditions = (
            next(iter(expression_children(cursor)), None) for cursor in found if cursor.kind == K.STATIC_ASSERT
        )
        return [(self._value(c), self._text(c), span_of(c.extent)) for c in conditions if c is not None]

    def template_args(self, reference: Expr) -> tuple[ConstExpr, ...] | None:
        """`_template_args` of a reference."""
        return self._template_args(cursor_of(reference))

    def _value(self, cursor: ci.Cursor, depth: int = 0) -> ConstExpr:
        folded = folded_int(cursor)
        if folded is not None:
            return ConstExpr("int", folded)
        if depth > MAX_FOLD_DEPTH:
            return self.unknown(cursor)
        kind = cursor.kind
        if kind in PARENS_AND_CONVERSIONS or kind in EXPLICIT_CASTS:
            operands = expression_children(cursor)
            return self._value(operands[-1], depth) if operands else self.unknown(cursor)
        if kind == K.BINARY_OPERATOR:
            return self._binary(cursor, depth)
        if kind == K.UNARY_OPERATOR:
            return self._unary(cursor, depth)
        if kind == K.CONDITIONAL_OPERATOR:
            parts = expression_children(cursor)
            if len(parts) == 3:
                return ConstExpr("?:", args=tuple(self._value(p, depth) for p in parts))
        if kind == K.CXX_UNARY_EXPR:
            return self._sizeof(cursor)
        if kind == K.DECL_REF_EXPR:
            value = self._reference(cursor, depth)
            # a named value not known here (`enable_pdl`, `Trait::kUsePDL`) keeps its name
            return replace(value, name=self._text(cursor)) if value.op == "unknown" and not value.name else value
        if kind == K.MEMBER_REF_EXPR:
            return self._reference(cursor, depth)
        if kind == K.CALL_EXPR:
            return self._call(cursor, depth)
        return self.unknown(cursor)

    def _binary(self, cursor: ci.Cursor, depth: int) -> ConstExpr:
        operands = expression_children(cursor)
        try:
            op = BINARY_OPERATOR_SPELLINGS.get(cursor.binary_operator.name)
        except ValueError:
            op = None
        if op is None or len(operands) != 2:
            return self.unknown(cursor)
        return ConstExpr(op, args=(self._value(operands[0], depth), self._value(operands[1], depth)))

    def _unary(self, cursor: ci.Cursor, depth: int) -> ConstExpr:
        operands = expression_children(cursor)
        first = next(cursor.get_tokens(), None)
        op = _UNARY_TOKENS.get(first.spelling) if first is not None else None
        if op is None or len(operands) != 1:
            return self.unknown(cursor)
        inner = self._value(operands[0], depth)
        return ConstExpr(op, args=(inner,)) if op else inner

    def _sizeof(self, cursor: ci.Cursor) -> ConstExpr:
        first = next(cursor.get_tokens(), None)
        type_refs = [c for c in cursor.get_children() if c.kind == K.TYPE_REF]
        if first is None or first.spelling != "sizeof" or len(type_refs) != 1:
            return self.unknown(cursor)
        return self.type_size(type_refs[0])

    def _reference(self, cursor: ci.Cursor, depth: int) -> ConstExpr:
        ref = referenced_of(cursor)
        if ref is None:
            return self._dependent_member(cursor)
        if ref.kind == K.TEMPLATE_NON_TYPE_PARAMETER:
            return ConstExpr("param", name=ref.spelling)
        if ref.kind == K.PARM_DECL:  # bound when the enclosing constexpr helper is inlined
            return ConstExpr("param", name=ARGUMENT_PREFIX + ref.spelling)
        if ref.kind == K.ENUM_CONSTANT_DECL:
            return ConstExpr("int", ref.enum_value)
        if ref.kind == K.VAR_DECL and ref.spelling in _DEVICE_CONSTANTS:
            return ConstExpr("int", _DEVICE_CONSTANTS[ref.spelling])
        if ref.kind == K.VAR_DECL and ref.type.is_const_qualified():  # constexpr implies const
            initializer = initializer_of(ref)
            if initializer is not None:
                return self._value(initializer, depth + 1)
        return self.unknown(cursor)

    def _dependent_member(self, cursor: ci.Cursor) -> ConstExpr:
        """`vec_t::kBytes` / `vec_t::kSize` of a dependent AlignedVector alias."""
        type_refs = [c for c in cursor.get_children() if c.kind == K.TYPE_REF]
        member = (
            trailing_name(self.data, cursor) if cursor.location.file and cursor.location.file.name == self.path else ""
        )
        if len(type_refs) == 1 and member in ("kBytes", "kSize"):
            vector = self._aligned_vector_parts(type_refs[0].type)
            if vector is not None:
                return vector[0] if member == "kBytes" else vector[1]
        return self.unknown(cursor)

    def _call(self, cursor: ci.Cursor, depth: int) -> ConstExpr:
        parts = children(cursor)
        if not parts:
            return self.unknown(cursor)
        callee = strip_parens(parts[0])
        name = _callee_name(cursor)
        if name in ("get_vec_bytes",):
            args = self._template_args(callee)
            if args is not None and len(args) == 2:
                return ConstExpr("vec_bytes", args=args)
        if name in _CONSTEXPR_HELPERS and len(parts) >= 3:
            return ConstExpr(_CONSTEXPR_HELPERS[name], args=tuple(self._value(p, depth) for p in parts[1:]))
        operator = name[len("operator") :] if name.startswith("operator") else ""
        if operator in _BINARY_SPELLINGS and len(parts) == 3:  # a dependent `a * b`
            return ConstExpr(operator, args=(self._value(parts[0], depth), self._value(parts[2], depth)))
        inlined = self._inline(cursor, callee, parts[1:], depth)
        return inlined if inlined is not None else self.unknown(cursor)

    def _inline(self, call: ci.Cursor, callee: ci.Cursor, arguments: list[ci.Cursor], depth: int) -> ConstExpr | None:
        """A call of a helper whose body only returns (through local constexprs and `if
        constexpr`), with its template and function parameters bound. Such a body has no
        side effects, so its value is the call's also when it is not constexpr."""
        declaration = function_declaration(referenced_of(callee))
        if declaration is None:
            named = [c for c in callee.get_children() if c.kind == K.OVERLOADED_DECL_REF]
            declaration = function_declaration(named[0]) if named else None
        definition = declaration.get_definition() if declaration is not None else None
        if definition is None:
            return None
        body = next((c for c in definition.get_children() if c.kind == K.COMPOUND_STMT), None)
        returned = self._returned(_body_returns(body, only_returns=True), depth + 1) if body is not None else None
        if returned is None:
            return None
        template_args = self._template_args(callee) or ()
        mapping = dict(zip(_template_param_names(definition), template_args))
        params = [c.spelling for c in definition.get_children() if c.kind == K.PARM_DECL]
        mapping.update((ARGUMENT_PREFIX + name, self._value(arg, depth)) for name, arg in zip(params, arguments))
        return returned.substitute(mapping)

    def _returned(self, returns: Returns[ci.Cursor] | None, depth: int) -> ConstExpr | None:
        """The value a helper's body returns (`returns_of`), or None unless every path returns."""
        if returns is None or returns.condition is None:
            return self._value(returns.value, depth) if returns is not None and returns.value is not None else None
        taken = self._returned(returns.taken, depth)
        otherwise = self._returned(returns.otherwise, depth)
        if taken is None or otherwise is None:
            return None
        return ConstExpr("?:", args=(self._value(returns.condition, depth), taken, otherwise))

    def _template_args(self, reference: ci.Cursor) -> tuple[ConstExpr, ...] | None:
        """The template arguments of a DECL_REF_EXPR (types as their size): those of the
        specialization it names where clang resolved one (`kernel<float, 4>`: 4 and 4), else
        the explicit ones written; None when their positions cannot be told apart (a nested
        template-id, or a type clang lists no node for: `float` in a template)."""
        called = reference.referenced
        if called is not None and called.kind in FUNCTION_KINDS and called.get_num_template_arguments() > 0:
            return tuple(_specialization_arg(called, i) for i in range(called.get_num_template_arguments()))
        args = []
        named = [c for c in reference.get_children() if c.kind == K.OVERLOADED_DECL_REF]
        name_offset = (named[0] if named else reference).location.offset
        for child in reference.get_children():
            if child.extent.start.offset <= name_offset:
                continue  # a qualifier (`ns::`, `Class::`) before the name, not an argument
            if child.kind == K.TEMPLATE_REF:
                return None
            if child.kind == K.TYPE_REF:
                args.append(self.type_size(child))
            elif child.kind.is_expression():
                args.append(self._value(child))
        tokens = tokens_of(reference)
        name = next((i for i, t in enumerate(tokens) if t.start >= name_offset), len(tokens))
        return tuple(args) if len(angle_groups(tokens, name)[0]) == len(args) else None

    # -- types ---------------------------------------------------------------------------
    def type_size(self, type_ref: ci.Cursor) -> ConstExpr:
        """The size in bytes of the type a TYPE_REF names."""
        size = type_ref.type.get_canonical().get_size()
        if size > 0:
            return ConstExpr("int", size)
        decl = referenced_of(type_ref)
        if decl is not None and decl.kind == K.TEMPLATE_TYPE_PARAMETER:
            return ConstExpr("sizeof", name=decl.spelling)
        vector = self.vector_type(type_ref.type)
        return vector.width if vector is not None else self.unknown(type_ref)

    def vector_type(self, type_: ci.Type, written: ci.Cursor | None = None) -> VectorType | None:
        """The access width of a multi-element type, or None for a scalar / unknown type.
        `written` is a declaration whose children spell the type (for dependent types)."""
        size = type_.get_canonical().get_size()
        if size > 0:
            name = canonical_name(type_)
            return VectorType(ConstExpr("int", size), type_.spelling) if is_vector_record(name) else None
        decl = type_.get_declaration()
        spelling_source = None
        if decl.kind in (K.TYPE_ALIAS_DECL, K.TYPEDEF_DECL):
            spelling_source = decl
        elif written is not None:
            spelling_source = written
        if spelling_source is None:
            return None
        return self._vector_from_spelling(spelling_source, type_.spelling)

    def _vector_from_spelling(self, declaration: ci.Cursor, text: str) -> VectorType | None:
        template, args = template_spelling(declaration)
        if template in VECTOR_TEMPLATES and len(args) == 2 and args[0].kind == K.TYPE_REF:
            width = ConstExpr("*", args=(self.type_size(args[0]), self._value(args[1])))
            return VectorType(width, text)
        if template in VECTOR_TEMPLATES and len(args) == 1 and args[0].kind.is_expression():
            element = _builtin_element_size(declaration)  # `AlignedVector<float, N>`: no TYPE_REF
            if element is not None:
                return VectorType(ConstExpr("*", args=(ConstExpr("int", element), self._value(args[0]))), text)
        if template in VECTOR_TEMPLATES:
            return VectorType(ConstExpr("unknown", text=text), text)
        if template == "packed_t" and len(args) == 1 and args[0].kind == K.TYPE_REF:
            return VectorType(ConstExpr("*", args=(ConstExpr("int", 2), self.type_size(args[0]))), text)
        if len(args) == 1 and args[0].kind == K.TYPE_REF and template is None:
            return self.vector_type(args[0].type)  # an alias of another alias
        return self._member_vector(declaration, text)

    def _member_vector(self, declaration: ci.Cursor, text: str) -> VectorType | None:
        """`using vec_t = typename Plan<N>::vec_t;`: the vector type the class template's member
        alias spells, its width with the class template's parameters bound to the arguments
        written here (symbolic over the enclosing template's, so each instantiation evaluates it)."""
        if declaration.kind not in (K.TYPE_ALIAS_DECL, K.TYPEDEF_DECL):
            return None
        _, separator, member = declaration.underlying_typedef_type.spelling.rpartition("::")
        templates = [referenced_of(c) for c in declaration.get_children() if c.kind == K.TEMPLATE_REF]
        if not separator or len(templates) != 1 or templates[0] is None or templates[0].kind != K.CLASS_TEMPLATE:
            return None
        template = templates[0]
        aliases = _member_aliases(template, member)
        names = _template_param_names(template)
        _, args = template_spelling(declaration)
        if not aliases and len(args) == len(names):
            return self._specialized_member_vector(template, member, text)
        if len(aliases) != 1 or len(args) != len(names):
            return None
        inner = self._vector_from_spelling(aliases[0], text)
        if inner is None:
            return None
        mapping = {
            name: self.type_size(arg) if arg.kind == K.TYPE_REF else self._value(arg) for name, arg in zip(names, args)
        }
        return VectorType(inner.width.substitute(mapping), text)

    def _specialized_member_vector(self, template: ci.Cursor, member: str, text: str) -> VectorType | None:
        """The member alias of a class template declared only through explicit
        specializations (`template <> struct Trait<bf16_t, 16> { using vec_t = ...; };`): the
        narrowest of their vector widths, as every instantiation needs at least that alignment
        (which specialization the arguments pick is not followed)."""
        widths: list[ConstExpr] = []
        for specialization in _explicit_specializations(template):
            aliases = _member_aliases(specialization, member)
            vector = self._vector_from_spelling(aliases[0], text) if len(aliases) == 1 else None
            if vector is None:
                return None
            widths.append(vector.width)
        if not widths:
            return None
        distinct = tuple(dict.fromkeys(widths))
        return VectorType(distinct[0] if len(distinct) == 1 else ConstExpr("min", args=distinct), text)

    def _aligned_vector_parts(self, type_: ci.Type) -> tuple[ConstExpr, ConstExpr] | None:
        decl = type_.get_declaration()
        if decl.kind not in (K.TYPE_ALIAS_DECL, K.TYPEDEF_DECL):
            return None
        template, args = template_spelling(decl)
        if template not in VECTOR_TEMPLATES or len(args) != 2 or args[0].kind != K.TYPE_REF:
            return None
        count = self._value(args[1])
        return ConstExpr("*", args=(self.type_size(args[0]), count)), count

    # -- the types an access or a template argument list spells (kernel_interface.py) -------
    def written_types(self, reference: Expr) -> tuple[tuple[str, str, ConstExpr], ...]:
        """(text, canonical spelling, size) of each type among a reference's template
        arguments (`.with_dtype<fp32_t, half>`: `fp32_t` is `float`), in order. A named type
        is a TYPE_REF child; a built-in one (`float`, `unsigned int`) has no cursor, so it is
        read from the argument list's tokens. A dependent type's canonical spelling is its text."""
        cursor = cursor_of(reference)
        named = [c for c in cursor.get_children() if c.kind == K.TYPE_REF]
        arguments = _template_argument_tokens([t.spelling for t in cursor.get_tokens()])
        if not any(_builtin_size(a) for a in arguments):
            return tuple(self._named_type(c) for c in named)
        types = []
        for argument in arguments:
            size = _builtin_size(argument)
            if size:
                types.append((" ".join(argument), " ".join(argument), ConstExpr("int", size)))
            elif named and not set(argument) <= _BUILTIN_WORDS:  # `long double`: no size here
                types.append(self._named_type(named.pop(0)))
        return tuple(types)

    def _named_type(self, type_ref: ci.Cursor) -> tuple[str, str, ConstExpr]:
        text, size = self._text(type_ref), self.type_size(type_ref)
        return text, type_ref.type.get_canonical().spelling if size.op == "int" else text, size

    def written_vector(self, reference: Expr) -> VectorType | None:
        """The vector type a reference names as its one written type (`load_as<float4>`)."""
        return self._written_vector(cursor_of(reference))

    def _written_vector(self, reference: ci.Cursor) -> VectorType | None:
        """The vector type a reference (or cast) names as its one written type (`load_as<float4>`)."""
        type_refs = [c for c in reference.get_children() if c.kind == K.TYPE_REF]
        return self.vector_type(type_refs[0].type) if len(type_refs) == 1 else None

    def cast_vector(self, node: Expr) -> VectorType | None:
        """The vector type a cast to a pointer points to (`reinterpret_cast<const float4*>(p)`),
        from the written type when the target type is dependent."""
        cast = cursor_of(node)
        return self.vector_type(cast.type.get_pointee()) or self._written_vector(cast)

    def pointee_vector(self, param: Var) -> tuple[VectorType, str] | None:
        """A pointer declaration's vector pointee (`const float4* src`) and the pointee as written."""
        declaration = cursor_of(param)
        type_ = declaration.type.get_canonical()
        vector = self.vector_type(type_.get_pointee()) if type_.kind == ci.TypeKind.POINTER else None
        return (vector, declaration.type.get_pointee().spelling) if vector is not None else None

    def accessor(self, declared: DeclRef) -> tuple[str, VectorType] | None:
        """("aligned_vector" | "tile_memory", vector type) for a variable, parameter or field
        whose `.load` / `.store` moves a whole vector (`AlignedVector<T, N>`, `tile::Memory<vec_t>`)."""
        decl = cursor_of(declared)
        type_ = decl.type
        if type_.get_canonical().get_size() > 0:
            record = bare_record_name(canonical_name(type_))
            if "Memory" in (record, bare_record_name(type_.spelling)) and type_.get_num_template_arguments() == 1:
                element = self.vector_type(type_.get_template_argument_type(0))
                return ("tile_memory", element) if element is not None else None
            vector = self.vector_type(type_)
            return ("aligned_vector", vector) if vector is not None and record in VECTOR_TEMPLATES else None
        vector = self.vector_type(type_, written=decl)
        if vector is not None:
            return "aligned_vector", vector
        initializer = initializer_of(decl)
        call = strip_casts(initializer) if initializer is not None else None
        if call is not None and call.kind == K.CALL_EXPR:
            return self._memory_accessor(strip_parens(children(call)[0])) if children(call) else None
        return self._memory_accessor(decl)

    def memory_accessor(self, spelled: Expr) -> tuple[str, VectorType] | None:
        """("tile_memory", element vector type) when an expression names `Memory<vec_t>`."""
        return self._memory_accessor(cursor_of(spelled))

    def _memory_accessor(self, spelled: ci.Cursor) -> tuple[str, VectorType] | None:
        template, args = template_spelling(spelled)
        if template != "Memory" or len(args) != 1 or args[0].kind != K.TYPE_REF:
            return None
        element = self.vector_type(args[0].type)
        return ("tile_memory", element) if element is not None else None


def _builtin_element_size(declaration: ci.Cursor) -> int | None:
    """The size of the first template argument of the type a declaration spells, when
    that argument is a builtin type (libclang gives builtin types no TYPE_REF cursor)."""
    if declaration.kind in (K.TYPE_ALIAS_DECL, K.TYPEDEF_DECL):
        spelled = declaration.underlying_typedef_type
    else:
        spelled = declaration.type
    if spelled.get_num_template_arguments() < 1:
        return None
    size = spelled.get_template_argument_type(0).get_canonical().get_size()
    return size if size > 0 else None


def template_spelling(declaration: ci.Cursor) -> tuple[str | None, list[ci.Cursor]]:
    """(template name, argument cursors) of a type spelled `ns::Template<args...>` in a
    declaration's children; (None, [type refs]) when no template is named."""
    template = None
    args: list[ci.Cursor] = []
    for child in declaration.get_children():
        if child.kind == K.TEMPLATE_REF:
            if template is not None:
                return template, []  # nested template-id: argument positions are unclear
            ref = referenced_of(child)
            template = ref.spelling if ref is not None else child.spelling
        elif child.kind == K.TYPE_REF or (template is not None and child.kind.is_expression()):
            args.append(child)
    return template, args


def trailing_name(data: bytes, cursor: ci.Cursor) -> str:
    """The identifier that ends a reference's extent, skipping `<...>` template arguments
    (libclang leaves dependent member references unnamed)."""
    end = cursor.extent.end.offset
    start = cursor.extent.start.offset
    position = end
    if position > start and data[position - 1 : position] == b">":
        depth = 0
        while position > start:
            position -= 1
            char = data[position : position + 1]
            depth += {b">": 1, b"<": -1}.get(char, 0)
            if depth == 0:
                break
    while position > start and data[position - 1 : position] in (b" ", b"\t", b"\n", b"\r"):
        position -= 1
    name_end = position
    while position > start and data[position - 1] in _NAME_CHARS:
        position -= 1
    return data[position:name_end].decode("ascii", errors="replace")


def callee_name(call: Expr, data: bytes | None = None, path: str = "") -> str:
    """The called function's (or method's) name, also for dependent calls: with the file's
    `data` and `path`, a dependent member's name is read from the text (libclang leaves it
    unnamed)."""
    return _callee_name(cursor_of(call), data, path)


def _callee_name(call: ci.Cursor, data: bytes | None = None, path: str = "") -> str:
    if call.spelling:
        return call.spelling
    parts = children(call)
    if not parts:
        return ""
    operator = _operator_part(parts)
    if operator is not None:
        return operator
    callee = strip_parens(parts[0])
    for node in [callee, *callee.get_children()]:
        if node.kind == K.OVERLOADED_DECL_REF:
            return node.spelling
    if callee.kind == K.MEMBER_REF_EXPR:
        if callee.spelling:
            return callee.spelling
        if data is not None and callee.location.file and callee.location.file.name == path:
            return trailing_name(data, callee)
    ref = referenced_of(callee)
    return ref.spelling if ref is not None else ""


def _operator_part(parts: list[ci.Cursor]) -> str | None:
    """The operator of a dependent `a + b` / `&a`, which libclang lists in source order
    (operand, operator, operand) instead of callee first."""
    if len(parts) not in (2, 3):
        return None
    ref = referenced_of(strip_parens(parts[len(parts) - 2]))
    if ref is not None and ref.spelling.startswith("operator") and ref.spelling != "operator()":
        return ref.spelling
    return None


def member_name(node: Expr, data: bytes, path: str) -> str:
    """`x.name`'s name, also when `x` has a dependent type (libclang leaves it unnamed; the
    name is read from the text of the file `path`, whose bytes are `data`)."""
    member = cursor_of(node)
    if member.spelling:
        return member.spelling
    location = member.extent.end
    return trailing_name(data, member) if location.file and location.file.name == path else ""


def written_type_names(node: Expr) -> tuple[str, ...]:
    """The spellings of the types an expression names as written (`T(...)`, `T{...}`)."""
    return tuple(c.spelling for c in cursor_of(node).get_children() if c.kind == K.TYPE_REF)


# Bytes of the built-in arithmetic types a template argument list may spell, on the LP64
# hosts and devices CUDA builds for (a canonical type of size 0 is dependent, not these).
_BUILTIN_SIZES = {
    "bool": 1,
    "char": 1,
    "short": 2,
    "int": 4,
    "long": 8,
    "long long": 8,
    "float": 4,
    "double": 8,
}
_SIGNEDNESS = frozenset({"signed", "unsigned"})
_BUILTIN_WORDS = frozenset({*_SIGNEDNESS, *(word for name in _BUILTIN_SIZES for word in name.split())})
# The canonical spellings of those types (`unsigned long`, `signed char`): what clang
# writes for a scalar's type, whichever way the source spelled it.
BUILTIN_SCALARS = frozenset(
    {*_BUILTIN_SIZES, "signed char"}
    | {f"unsigned {name}" for name in _BUILTIN_SIZES if name not in ("bool", "float", "double")}
)


def _builtin_size(argument: list[str]) -> int:
    """The size of a template argument that spells a built-in type (`unsigned int`,
    `long long`, `signed char`); 0 for anything else."""
    words = [w for w in argument if w not in _SIGNEDNESS]
    if words[-1:] == ["int"] and len(words) > 1:  # `short int`, `long long int`
        words = words[:-1]
    if not words and argument:  # `unsigned` alone
        return 4
    return _BUILTIN_SIZES.get(" ".join(words), 0)


def _template_argument_tokens(tokens: list[str]) -> list[list[str]]:
    """The arguments of the template argument list a reference's tokens end with
    (`m.with_dtype<float, bf16_t>` -> [["float"], ["bf16_t"]]); [] when they end with none."""
    if tokens[-1:] != [">"]:
        return []
    depth, start = 0, None
    for index in range(len(tokens) - 1, -1, -1):
        depth += {">": 1, "<": -1}.get(tokens[index], 0)
        if depth == 0:
            start = index
            break
    if start is None:
        return []
    arguments: list[list[str]] = [[]]
    depth = 0
    for token in tokens[start + 1 : -1]:
        depth += {"<": 1, ">": -1, "(": 1, ")": -1}.get(token, 0)
        if token == "," and depth == 0:
            arguments.append([])
        else:
            arguments[-1].append(token)
    return [a for a in arguments if a]
