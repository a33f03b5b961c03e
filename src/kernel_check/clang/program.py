"""Tier 1: a typed picture of a function's code -- statements and expressions -- built from
libclang cursors by one walk, with no rule knowledge.

An analysis asks `Program.function(cursor)` for a function and reads its `body`: a tree of
`Stmt` (blocks, `if`s, loops, returns, declarations, expression statements, inline asm...)
whose expressions are `Expr` trees (calls, references, operators, casts, literals...). The
tree's shape (kinds, names, children) is read in one walk when a body is first asked for,
so a file that no analysis needs pays nothing; a node's other facts -- its span, type,
operator, referenced declaration, callees, folded value -- are read from libclang when first
asked and kept. `if constexpr` whose condition folds records the branch it keeps
(`Stmt.taken`), and the walks here (`Stmt.walk`, `Stmt.calls`) skip the discarded one.

Everything libclang-specific about statements and expressions lives in this module: the
nodes keep their cursor privately (`_cursor`) and expose only plain values.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import clang.cindex as ci

from ..model import FunctionKind, Span
from .capi import asm_parts, folded_int, overloaded_decls, skipped_spans, unary_operator, written_span
from .cursors import (
    EXPLICIT_CASTS,
    FUNCTION_KINDS,
    MAX_NESTING,
    RECORD_KINDS,
    SCOPE_KINDS,
    TEMPLATE_PARAM_KINDS,
    K,
    NestedTooDeeply,
    has_child_kind,
    initializer_of,
    is_implicit_instantiation,
    outermost,
    qualified_name,
    span_of,
    strip_parens,
)

MAX_CALLEES = 8  # overloads considered behind one call (a name can have dozens in a header)
# Declarations whose members `code_declarations` reads: namespaces, `extern "C"` blocks,
# unions, friends (and records, whose fields it names as theirs).
_DEFAULT_BITS = 32  # the width of an integer type's value range where the type has none
_CONTAINERS = (*SCOPE_KINDS, K.UNION_DECL, K.FRIEND_DECL)


class StmtKind(enum.Enum):
    BLOCK = "block"
    IF = "if"
    FOR = "for"
    RANGE_FOR = "range_for"
    WHILE = "while"
    DO = "do"
    SWITCH = "switch"
    CASE = "case"  # `case x:` and `default:`, with the statement they label as `body`
    RETURN = "return"
    DECL = "decl"  # variable declarations (`variables`)
    EXPR = "expr"  # an expression statement (`exprs[0]`)
    ASM = "asm"  # inline assembly; its operands are `exprs`
    BREAK = "break"
    CONTINUE = "continue"
    OTHER = "other"  # goto, labels, try, null statements...: only their parts are read


class ExprKind(enum.Enum):
    CALL = "call"  # `name` is the callee's name; children: the callee expression, then the arguments
    REF = "ref"  # a name (`ref` is what it names)
    MEMBER = "member"  # `base.name` / `base->name`; children: the base when written
    BINARY = "binary"  # `operator`: "+", "<", "=", "+="...
    UNARY = "unary"  # `operator`: "-", "!", "~", "*", "&", "++" (prefix) / "x++" (postfix)...
    CONDITIONAL = "conditional"  # `c ? a : b`
    SUBSCRIPT = "subscript"
    CAST = "cast"  # an explicit cast
    IMPLICIT = "implicit"  # an implicit conversion, temporary or construction clang leaves unexposed
    PAREN = "paren"
    LITERAL = "literal"
    LAMBDA = "lambda"  # its body is not part of the tree: it runs where the lambda is called
    INIT_LIST = "init_list"
    OTHER = "other"


class DeclKind(enum.Enum):
    FUNCTION = "function"
    VARIABLE = "variable"
    PARAMETER = "parameter"
    FIELD = "field"
    ENUM_CONSTANT = "enum_constant"
    TEMPLATE_PARAMETER = "template_parameter"
    TYPE = "type"
    OTHER = "other"


_STMT_KINDS = {
    K.COMPOUND_STMT: StmtKind.BLOCK,
    K.IF_STMT: StmtKind.IF,
    K.FOR_STMT: StmtKind.FOR,
    K.CXX_FOR_RANGE_STMT: StmtKind.RANGE_FOR,
    K.WHILE_STMT: StmtKind.WHILE,
    K.DO_STMT: StmtKind.DO,
    K.SWITCH_STMT: StmtKind.SWITCH,
    K.CASE_STMT: StmtKind.CASE,
    K.DEFAULT_STMT: StmtKind.CASE,
    K.RETURN_STMT: StmtKind.RETURN,
    K.DECL_STMT: StmtKind.DECL,
    K.ASM_STMT: StmtKind.ASM,
    K.BREAK_STMT: StmtKind.BREAK,
    K.CONTINUE_STMT: StmtKind.CONTINUE,
}
_EXPR_KINDS = {
    K.CALL_EXPR: ExprKind.CALL,
    K.DECL_REF_EXPR: ExprKind.REF,
    K.MEMBER_REF_EXPR: ExprKind.MEMBER,
    K.BINARY_OPERATOR: ExprKind.BINARY,
    K.COMPOUND_ASSIGNMENT_OPERATOR: ExprKind.BINARY,
    K.UNARY_OPERATOR: ExprKind.UNARY,
    K.CONDITIONAL_OPERATOR: ExprKind.CONDITIONAL,
    K.ARRAY_SUBSCRIPT_EXPR: ExprKind.SUBSCRIPT,
    K.UNEXPOSED_EXPR: ExprKind.IMPLICIT,
    K.PAREN_EXPR: ExprKind.PAREN,
    K.LAMBDA_EXPR: ExprKind.LAMBDA,
    K.INIT_LIST_EXPR: ExprKind.INIT_LIST,
    **dict.fromkeys(
        (
            K.INTEGER_LITERAL,
            K.FLOATING_LITERAL,
            K.CXX_BOOL_LITERAL_EXPR,
            K.STRING_LITERAL,
            K.CHARACTER_LITERAL,
            K.CXX_NULL_PTR_LITERAL_EXPR,
        ),
        ExprKind.LITERAL,
    ),
    **dict.fromkeys(EXPLICIT_CASTS, ExprKind.CAST),
}
_DECL_KINDS = {
    kind: decl_kind
    for decl_kind, kinds in (
        (DeclKind.FUNCTION, FUNCTION_KINDS),
        (DeclKind.VARIABLE, (K.VAR_DECL,)),
        (DeclKind.PARAMETER, (K.PARM_DECL,)),
        (DeclKind.FIELD, (K.FIELD_DECL,)),
        (DeclKind.ENUM_CONSTANT, (K.ENUM_CONSTANT_DECL,)),
        (DeclKind.TEMPLATE_PARAMETER, tuple(TEMPLATE_PARAM_KINDS)),
        (DeclKind.TYPE, (K.TYPEDEF_DECL, K.TYPE_ALIAS_DECL, K.ENUM_DECL, *RECORD_KINDS)),
    )
    for kind in kinds
}
_CODE_DECLARATIONS = frozenset({*_CONTAINERS, *RECORD_KINDS, *FUNCTION_KINDS, K.VAR_DECL})
# clang's BinaryOperatorKind and UnaryOperatorKind values, spelled
_BINARY_SPELLINGS = (
    "",
    ".*",
    "->*",
    "*",
    "/",
    "%",
    "+",
    "-",
    "<<",
    ">>",
    "<=>",
    "<",
    ">",
    "<=",
    ">=",
    "==",
    "!=",
    "&",
    "^",
    "|",
    "&&",
    "||",
    "=",
    "*=",
    "/=",
    "%=",
    "+=",
    "-=",
    "<<=",
    ">>=",
    "&=",
    "^=",
    "|=",
    ",",
)
_UNARY_SPELLINGS = (
    "",
    "x++",
    "x--",
    "++",
    "--",
    "&",
    "*",
    "+",
    "-",
    "~",
    "!",
    "__real",
    "__imag",
    "__extension__",
    "co_await",
)
_SIGNED_INTEGERS = frozenset(
    {
        ci.TypeKind.CHAR_S,
        ci.TypeKind.SCHAR,
        ci.TypeKind.SHORT,
        ci.TypeKind.INT,
        ci.TypeKind.LONG,
        ci.TypeKind.LONGLONG,
        ci.TypeKind.INT128,
        ci.TypeKind.WCHAR,
    }
)
_UNSIGNED_INTEGERS = frozenset(
    {
        ci.TypeKind.BOOL,
        ci.TypeKind.CHAR_U,
        ci.TypeKind.UCHAR,
        ci.TypeKind.USHORT,
        ci.TypeKind.UINT,
        ci.TypeKind.ULONG,
        ci.TypeKind.ULONGLONG,
        ci.TypeKind.UINT128,
        ci.TypeKind.CHAR16,
        ci.TypeKind.CHAR32,
    }
)
# The kinds whose size `TypeFacts` asks clang: scalars, pointers, records, enums, fixed arrays.
_SIZED = frozenset(
    {
        *_SIGNED_INTEGERS,
        *_UNSIGNED_INTEGERS,
        ci.TypeKind.FLOAT,
        ci.TypeKind.DOUBLE,
        ci.TypeKind.HALF,
        ci.TypeKind.FLOAT16,
        ci.TypeKind.BFLOAT16,
        ci.TypeKind.POINTER,
        ci.TypeKind.RECORD,
        ci.TypeKind.ENUM,
        ci.TypeKind.CONSTANTARRAY,
    }
)


@dataclass(frozen=True)
class TypeFacts:
    """What an expression's or a declaration's type is."""

    spelling: str  # as written (`uint32_t`, `T`)
    canonical: str  # after typedefs (`unsigned int`, `type-parameter-0-0`)
    bits: int | None  # an integer type's width; None for other and dependent types
    is_signed: bool | None  # an integer type's signedness; None for other types
    is_pointer: bool
    size: int = 0  # bytes of a value of the type; 0 where clang cannot tell (dependent, void)
    pointee_size: int = 0  # for a pointer: bytes of what it points to (0 as for `size`)
    # The alignment in bytes its type requires (0 as for `size`), and for a pointer what it
    # points to requires: a `float4` and an `alignas(16)` vector 16, a struct of floats 4
    align: int = 0
    pointee_align: int = 0
    pointee_volatile: bool = False  # a pointer to volatile data (`const volatile int*`)

    @property
    def unqualified(self) -> str:
        """The canonical spelling with every `const` and `volatile` left out."""
        return unqualified_name(self.canonical)

    @property
    def value_range(self) -> tuple[int, int]:
        """The least and the greatest value of an integer type (of an `int` for another); a
        `bool` holds 0 or 1, though it takes a byte."""
        if self.unqualified == "bool":
            return 0, 1
        bits = self.bits or _DEFAULT_BITS
        if self.is_signed is False:
            return 0, 2**bits - 1
        return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


def unqualified_name(spelling: str) -> str:
    """A type's spelling with every `const` and `volatile` left out (`const float *`: `float *`)."""
    return spelling.replace("const ", "").replace("volatile ", "").strip()


def _type_facts(type_: ci.Type) -> TypeFacts:
    canonical = type_.get_canonical()
    integer = canonical.kind in _SIGNED_INTEGERS or canonical.kind in _UNSIGNED_INTEGERS
    size = _size(canonical)
    is_pointer = canonical.kind == ci.TypeKind.POINTER
    return TypeFacts(
        spelling=type_.spelling,
        canonical=canonical.spelling,
        bits=size * 8 if integer and size > 0 else None,
        is_signed=(canonical.kind in _SIGNED_INTEGERS) if integer else None,
        is_pointer=is_pointer,
        size=size,
        pointee_size=_size(canonical.get_pointee().get_canonical()) if is_pointer else 0,
        align=_align(canonical),
        pointee_align=_align(canonical.get_pointee().get_canonical()) if is_pointer else 0,
        pointee_volatile=is_pointer and canonical.get_pointee().is_volatile_qualified(),
    )


def _size(canonical: ci.Type) -> int:
    """A canonical type's size in bytes, 0 where it has none clang tells: asked only of the
    kinds it lays out (libclang crashes on some others, an overload set's)."""
    return max(canonical.get_size(), 0) if canonical.kind in _SIZED else 0


def _align(canonical: ci.Type) -> int:
    """A canonical type's alignment in bytes, 0 where clang tells none (as `_size`)."""
    return max(canonical.get_align(), 0) if canonical.kind in _SIZED else 0


class _Spanned:
    """A node's source span, read from its cursor when first asked."""

    _cursor: ci.Cursor

    @cached_property
    def span(self) -> Span:
        return span_of(self._cursor.extent)

    @cached_property
    def written_span(self) -> Span:
        """Where the node is written: unlike `span`, a node inside a macro's arguments has
        its own place, so two launches in one dispatch macro's lambda stay apart."""
        return written_span(self._cursor.extent)

    @cached_property
    def file(self) -> str:
        """The name of the file the node starts in ("" for none): where `span`'s offsets point."""
        start = self._cursor.extent.start
        return start.file.name if start.file is not None else ""


class _Typed(_Spanned):
    """A node's span and type, read from its cursor when first asked."""

    @cached_property
    def type(self) -> TypeFacts:
        return _type_facts(self._cursor.type)


@dataclass(eq=False)
class DeclRef:
    """A declaration an expression names. `key` identifies it within one translation unit
    (a local variable's `Var.key` equals the `key` of every reference to it)."""

    name: str
    kind: DeclKind
    key: int
    _cursor: ci.Cursor = field(repr=False)

    @cached_property
    def usr(self) -> str:
        return self._cursor.get_usr()

    @cached_property
    def type(self) -> TypeFacts:
        """The declared type (a function's is its signature)."""
        return _type_facts(self._cursor.type)

    @cached_property
    def is_const(self) -> bool:
        """Whether the declared type is const-qualified (`const int kN = 4`)."""
        return self._cursor.type.is_const_qualified()

    @cached_property
    def is_local(self) -> bool:
        """Whether it is declared inside a function or lambda (a local or a parameter)."""
        parent = self._cursor.semantic_parent
        return parent is not None and (parent.kind in FUNCTION_KINDS or parent.kind == K.LAMBDA_EXPR)

    @cached_property
    def owner(self) -> str:
        """The name of the scope declaring it: a method's class, a variable's function..."""
        parent = self._cursor.semantic_parent
        return parent.spelling if parent is not None else ""

    @cached_property
    def is_constructor(self) -> bool:
        return self._cursor.kind == K.CONSTRUCTOR

    @cached_property
    def is_method(self) -> bool:
        """A member function other than a constructor or destructor."""
        return self._cursor.kind == K.CXX_METHOD

    @cached_property
    def at_file_scope(self) -> bool:
        """Declared at translation-unit level, outside every namespace and record."""
        parent = self._cursor.semantic_parent
        return parent is not None and parent.kind == K.TRANSLATION_UNIT

    @cached_property
    def is_bitfield(self) -> bool:
        """A bit-field (`unsigned flag : 1`)."""
        return bool(self._cursor.is_bitfield())

    @cached_property
    def scope_qualified_name(self) -> str:
        """The qualified name of the scope declaring it (a field's record: `ns::Params`)."""
        return qualified_name(self._cursor.semantic_parent)

    @cached_property
    def is_special_member(self) -> bool:
        """A constructor or destructor."""
        return self._cursor.kind in (K.CONSTRUCTOR, K.DESTRUCTOR)

    @cached_property
    def template(self) -> DeclRef:
        """The template a specialization instantiates; the declaration itself otherwise."""
        template = self._cursor.specialized_template
        return decl_ref(template) if template is not None else self

    @cached_property
    def function_kind(self) -> FunctionKind:
        """A function's kind (kernel, device, host) by its CUDA attributes."""
        return function_kind(self._cursor)

    @cached_property
    def result_type(self) -> str:
        """A function's result type as written ("" for other declarations)."""
        return self._cursor.result_type.spelling if self.kind is DeclKind.FUNCTION else ""

    @cached_property
    def has_c_linkage(self) -> bool:
        """A non-template function whose symbol is its bare name (`extern "C"`, a C API)."""
        return self._cursor.kind == K.FUNCTION_DECL and self._cursor.mangled_name == self.name

    @cached_property
    def file(self) -> str:
        """The file it is declared in ("" for built-in declarations)."""
        return _file_of(self._cursor)

    @cached_property
    def qualified_name(self) -> str:
        """`ns::Class::name`; "" for an unresolved overload set."""
        if self._cursor.kind == K.OVERLOADED_DECL_REF:
            return ""
        parts = []
        node: ci.Cursor | None = self._cursor
        while node is not None and node.kind != K.TRANSLATION_UNIT:
            if node.spelling:
                parts.append(node.spelling)
            node = node.semantic_parent
        return "::".join(reversed(parts))

    @cached_property
    def is_mutating_method(self) -> bool:
        """A non-const, non-static member function: called on an object, it may change it."""
        cursor = self._cursor
        return cursor.kind == K.CXX_METHOD and not cursor.is_const_method() and not cursor.is_static_method()


def decl_ref(cursor: ci.Cursor) -> DeclRef:
    return DeclRef(cursor.spelling, _DECL_KINDS.get(cursor.kind, DeclKind.OTHER), cursor.hash, cursor)


@dataclass(eq=False)
class Expr(_Typed):
    """An expression: its kind, its name (a call's callee, a reference's or member's name;
    "" for others) and its operand expressions, in source order."""

    kind: ExprKind
    name: str
    children: tuple[Expr, ...]
    _cursor: ci.Cursor = field(repr=False)
    _program: Program = field(repr=False)

    @cached_property
    def operator(self) -> str:
        """A BINARY or UNARY expression's operator ("" for other kinds)."""
        if self.kind is ExprKind.BINARY:
            return _BINARY_SPELLINGS[self._cursor.binary_operator.value]
        if self.kind is ExprKind.UNARY:
            index = unary_operator(self._cursor)
            return _UNARY_SPELLINGS[index] if 0 <= index < len(_UNARY_SPELLINGS) else ""
        return ""

    @cached_property
    def ref(self) -> DeclRef | None:
        """The declaration a REF, MEMBER or CALL expression names: None when clang could
        not resolve it (a dependent name); an unresolved overload set is of kind OTHER
        (its candidates are a call's `callees`)."""
        referenced = self._cursor.referenced
        return decl_ref(referenced) if referenced is not None else None

    @property
    def member_base(self) -> DeclRef | None:
        """The variable or parameter a member expression names a member of (`params` of
        `params.n`, `config` of `config.gridDim`)."""
        base = self.children[0].stripped() if self.kind is ExprKind.MEMBER and self.children else None
        return base.ref if base is not None and base.kind is ExprKind.REF else None

    @cached_property
    def value(self) -> int | None:
        """The integer clang computes for a non-dependent constant expression."""
        return folded_int(self._cursor)

    @cached_property
    def type_arguments(self) -> tuple[TypeFacts | None, ...]:
        """A CALL's template arguments by position (`load_as<float4>(p, i)`: `float4`'s type),
        None for a value or a type clang lists no node for: the specialization's arguments
        (deduced and default ones too) where clang resolved the call, else those written
        (in a template: `load_as<vec_t>`, `f<T>`), each a type only where one name is the
        whole argument (`AlignedVector<T, 8>` is none: clang lists `T` inside it)."""
        if self.kind is not ExprKind.CALL or not self.children:
            return ()
        called = self._cursor.referenced
        count = called.get_num_template_arguments() if called is not None and called.kind in FUNCTION_KINDS else -1
        if count > 0:
            return tuple(
                _type_facts(called.get_template_argument_type(i))
                if called.get_template_argument_kind(i) == ci.TemplateArgumentKind.TYPE
                else None
                for i in range(count)
            )
        callee = self.children[0]._cursor
        tokens = tokens_of(callee)
        name = next((i for i, t in enumerate(tokens) if t.start >= callee.location.offset), len(tokens))
        groups, _ = angle_groups(tokens, name)  # after the name: `Plan<A>::run<B>`'s `B`
        named = [c for c in callee.walk_preorder() if c.kind == K.TYPE_REF]
        return tuple(next((_type_facts(c.type) for c in named if _spans_exactly(c, group)), None) for group in groups)

    @cached_property
    def callees(self) -> tuple[Function, ...]:
        """The functions a CALL can reach: the one it names, the candidates of an overload
        set, or the template a dependent `f<T>(...)` names (definitions where known)."""
        if self.kind is not ExprKind.CALL or not self.children:
            return ()
        return tuple(self._program.function(_definition(c)) for c in _named_functions(self.children[0]._cursor))

    def same_node(self, other: Expr) -> bool:
        """Whether both trees were built from the same expression of the translation unit."""
        return bool(self._cursor == other._cursor)

    def walk(self) -> Iterator[Expr]:
        """This expression and every one inside it, pre-order."""
        pending = [self]
        while pending:
            node = pending.pop()
            yield node
            pending.extend(reversed(node.children))

    def stripped(self) -> Expr:
        """The expression inside parentheses and implicit conversions."""
        node = self
        while node.kind in (ExprKind.PAREN, ExprKind.IMPLICIT) and len(node.children) == 1:
            node = node.children[0]
        return node

    def uncast(self) -> Expr:
        """The expression inside parentheses, implicit conversions and explicit casts."""
        node = self
        while node.kind in (ExprKind.PAREN, ExprKind.IMPLICIT, ExprKind.CAST) and len(node.children) == 1:
            node = node.children[0]
        return node

    @cached_property
    def candidates(self) -> tuple[DeclRef, ...]:
        """The declarations a dependent name may stand for: the overload set `kern<T>` spells
        inside a template, or the variable template `kernel<N>` names (() for a name clang
        resolved, and for other expressions)."""
        overloaded = next((c for c in self._cursor.get_children() if c.kind == K.OVERLOADED_DECL_REF), None)
        return tuple(decl_ref(c) for c in overloaded_decls(overloaded)) if overloaded is not None else ()

    @cached_property
    def arguments(self) -> tuple[Expr, ...]:
        """A CALL's argument expressions: the children after the callee expression, or all
        of them where clang lists none (a construction, whose callee is a type)."""
        if self.kind is not ExprKind.CALL:
            return ()
        first = next(iter(self._cursor.get_children()), None)
        has_callee = first is not None and first.kind.is_expression() and not self.is_construction
        return self.children[1:] if has_callee else self.children

    @cached_property
    def declarations_named(self) -> tuple[DeclRef, ...] | None:
        """The function declarations a callee expression names (`declarations_named`): one,
        or an overload set's candidates; None when it names no function."""
        named = declarations_named(self._cursor)
        return tuple(decl_ref(c) for c in named) if named is not None else None

    @cached_property
    def is_size_query(self) -> bool:
        """`sizeof(...)` / `alignof(...)` (an OTHER expression)."""
        return self._cursor.kind == K.CXX_UNARY_EXPR

    @cached_property
    def sized_type_parameter(self) -> str:
        """The template type parameter `sizeof(T)` measures (`T`); "" for any other
        expression (`alignof(T)`, `sizeof(float)`, `sizeof(n)`)."""
        if not self.is_size_query or not self.tokens or self.tokens[0].spelling != "sizeof":
            return ""
        operand = next(iter(self._cursor.get_children()), None)
        if operand is None or operand.kind != K.TYPE_REF or operand.referenced is None:
            return ""
        return operand.spelling if operand.referenced.kind == K.TEMPLATE_TYPE_PARAMETER else ""

    @cached_property
    def names_type_member(self) -> bool:
        """A REF qualified by a type (`T::kSize`, `Traits<T>::kN`): in a template, a member
        clang cannot resolve yet."""
        return self.kind is ExprKind.REF and has_child_kind(self._cursor, K.TYPE_REF)

    @cached_property
    def part_count(self) -> int:
        """How many parts clang lists under the expression: `children` and the written type,
        template and namespace names they leave out (`T(a)` has two)."""
        return sum(1 for _ in self._cursor.get_children())

    @cached_property
    def is_unevaluated(self) -> bool:
        """`sizeof`, `alignof`, `typeid`, `sizeof...`: their operands never run."""
        return self._cursor.kind in _UNEVALUATED

    @cached_property
    def qualifier(self) -> DeclRef | None:
        """The type a name's leading qualifier names (`Trait` in `Trait::f`); None without one."""
        first = next(iter(self._cursor.get_children()), None)
        if first is None or first.kind != K.TYPE_REF or first.referenced is None:
            return None
        return decl_ref(first.referenced)

    @cached_property
    def names_type_parameter(self) -> bool:
        """Whether the written expression names a template type parameter anywhere
        (`Trait::kUsePDL`, `f<T>`): something only an instantiation knows."""
        return any(
            node.kind == K.TYPE_REF
            and node.referenced is not None
            and node.referenced.kind == K.TEMPLATE_TYPE_PARAMETER
            for node in self._cursor.walk_preorder()
        )

    def record_methods(self, name: str) -> tuple[Function, ...] | None:
        """The member functions called `name` of the record this expression's type declares;
        None when its type is no record."""
        owner = self._cursor.type.get_declaration()
        if owner is None or owner.kind not in RECORD_KINDS:
            return None
        return tuple(
            self._program.function(c) for c in owner.get_children() if c.kind in FUNCTION_KINDS and c.spelling == name
        )

    @cached_property
    def lambda_params(self) -> tuple[Var, ...]:
        """A LAMBDA's parameters (its call operator's)."""
        if self.kind is not ExprKind.LAMBDA:
            return ()
        return tuple(self._program.var(c) for c in self._cursor.get_children() if c.kind == K.PARM_DECL)

    @cached_property
    def cast_kind(self) -> str:
        """A CAST's form: "static", "reinterpret", "const", "c_style" or "functional" (`T(x)`);
        "" for other kinds."""
        return _CAST_FORMS.get(self._cursor.kind, "") if self.kind is ExprKind.CAST else ""

    @cached_property
    def pointee(self) -> tuple[str, int] | None:
        """For an expression of pointer type: what it points to, as the canonical spelling and
        the size in bytes; None for other types and a size clang cannot tell (dependent)."""
        canonical = self._cursor.type.get_canonical()
        if canonical.kind != ci.TypeKind.POINTER:
            return None
        pointee = canonical.get_pointee()
        size = pointee.get_size()
        return (pointee.spelling, size) if size > 0 else None

    @cached_property
    def is_throw(self) -> bool:
        """Whether this is a `throw` expression."""
        return self._cursor.kind == K.CXX_THROW_EXPR

    @cached_property
    def is_construction(self) -> bool:
        """Whether a CALL constructs an object (`T(args)`, `T{args}`, a copy): it has no
        callee child, every child is an argument."""
        if self.kind is not ExprKind.CALL:
            return False
        referenced = self._cursor.referenced
        return referenced is not None and referenced.kind == K.CONSTRUCTOR

    @cached_property
    def is_arithmetic(self) -> bool:
        """Whether the expression's type is a builtin arithmetic or enum type (a size, a
        scale: never a pointer nor a struct holding one)."""
        return self._cursor.type.get_canonical().kind in _ARITHMETIC_TYPES

    @cached_property
    def lambda_body(self) -> Stmt | None:
        """A LAMBDA's body, built when first read (it is not among `children`: it runs where
        the lambda is called); None for other kinds."""
        if self.kind is not ExprKind.LAMBDA:
            return None
        block = next((c for c in self._cursor.get_children() if c.kind == K.COMPOUND_STMT), None)
        return self._program.statement(block, 0) if block is not None else None

    @cached_property
    def called_lambda(self) -> Expr | None:
        """For a CALL of a local variable a lambda initializes (`auto step = [&] { ... };
        step();`): that LAMBDA, whose body runs here; None for other calls."""
        callee = self.children[0].stripped() if self.kind is ExprKind.CALL and self.children else None
        ref = callee.ref if callee is not None and callee.kind is ExprKind.REF else None
        if ref is None or ref.kind is not DeclKind.VARIABLE or not ref.is_local:
            return None
        exprs = self._program.var(ref._cursor).exprs
        held = exprs[-1].stripped() if exprs else None
        return held if held is not None and held.kind is ExprKind.LAMBDA else None

    @cached_property
    def candidate_result_types(self) -> tuple[TypeFacts, ...]:
        """For a CALL whose own type clang leaves dependent: the result types of the overload
        set its callee names (the functions it may call); () otherwise."""
        if self.kind is not ExprKind.CALL or not self.children:
            return ()
        if self._cursor.type.kind not in (ci.TypeKind.DEPENDENT, ci.TypeKind.UNEXPOSED):
            return ()
        return tuple(_type_facts(d._cursor.result_type) for d in self.children[0].stripped().candidates)

    @cached_property
    def tokens(self) -> tuple[Token, ...]:
        """The tokens clang lexes over the expression's extent, each where it is spelled: for
        an expression a macro expands into, the macro definition's tokens."""
        return tokens_of(self._cursor)

    @cached_property
    def designator(self) -> str:
        """The field a designated initializer `.field = value` names, its one child being the
        value (`config({.use_pdl = x})`); "" for other expressions."""
        if self.kind is not ExprKind.IMPLICIT:
            return ""
        parts = list(self._cursor.get_children())
        return parts[0].spelling if len(parts) == 2 and parts[0].kind == K.MEMBER_REF else ""


@dataclass(eq=False)
class Binding(_Typed):
    """One name a structured binding declaration introduces (`input` in `const auto& [input,
    weight] = params;`) and its position in the brackets; references to it name its `key`."""

    name: str
    key: int  # as `DeclRef.key`
    index: int
    _cursor: ci.Cursor = field(repr=False)


@dataclass(eq=False)
class Var(_Typed):
    """A declared variable (or parameter): its name and the expressions its declaration
    evaluates (array bounds, the initializer). A structured binding declaration is one `Var`
    (named as written, `[input, weight]`) whose `bindings` are the names it introduces; what
    each one holds is `provenance.structured_binding` of the initializer's value."""

    name: str
    key: int  # as `DeclRef.key`
    exprs: tuple[Expr, ...]
    _cursor: ci.Cursor = field(repr=False)
    bindings: tuple[Binding, ...] = ()

    @cached_property
    def name_offset(self) -> int:
        """The byte offset of its name (clang's location: a macro's expansion site)."""
        return self._cursor.location.offset

    @cached_property
    def name_file(self) -> str:
        """The file its name is in ("" when none; `file` is where its span starts)."""
        return _file_of(self._cursor)

    @cached_property
    def declarator(self) -> str:
        """ "pointer", "reference", "array" or "value": what its declarator makes of the type."""
        kind = self._cursor.type.get_canonical().kind
        if kind == ci.TypeKind.POINTER:
            return "pointer"
        if kind in (ci.TypeKind.LVALUEREFERENCE, ci.TypeKind.RVALUEREFERENCE):
            return "reference"
        return "array" if kind in _ARRAY_TYPE_KINDS else "value"

    @cached_property
    def element_type(self) -> TypeFacts:
        """The type it holds, points to, refers to or stores an array of."""
        return _type_facts(self._element())

    @cached_property
    def element_size(self) -> int | None:
        """The size in bytes of `element_type`; None where clang cannot tell (a template's `T`)."""
        size = self._element().get_size()
        return size if size > 0 else None

    @cached_property
    def array_rank(self) -> int:
        """How many array dimensions its type has (`float tile[32][33]`: 2; 0 for no array)."""
        rank, type_ = 0, self._cursor.type.get_canonical()
        while type_.kind in _ARRAY_TYPE_KINDS:
            rank, type_ = rank + 1, type_.get_array_element_type()
        return rank

    @cached_property
    def scalar_type(self) -> TypeFacts:
        """What an array of arrays holds at its innermost (`float` of `float tile[32][33]`);
        `element_type` for any other variable."""
        return _type_facts(self._scalar())

    @cached_property
    def scalar_size(self) -> int | None:
        """The size in bytes of `scalar_type`; None where clang cannot tell."""
        size = self._scalar().get_size()
        return size if size > 0 else None

    def _scalar(self) -> ci.Type:
        type_ = self._element()
        while type_.kind in _ARRAY_TYPE_KINDS:
            type_ = type_.get_array_element_type()
        return type_

    def _element(self) -> ci.Type:
        canonical = self._cursor.type.get_canonical()
        declarator = self.declarator
        if declarator in ("pointer", "reference"):
            return canonical.get_pointee()
        if declarator == "array":
            return canonical.get_array_element_type()
        return canonical

    @cached_property
    def is_shared(self) -> bool:
        """Whether it is declared `__shared__` (one copy for the whole block)."""
        return has_child_kind(self._cursor, K.CUDASHARED_ATTR)

    @cached_property
    def is_reference(self) -> bool:
        """Whether the declared type is a reference (`T&`, `auto&&`)."""
        return self._cursor.type.kind in (ci.TypeKind.LVALUEREFERENCE, ci.TypeKind.RVALUEREFERENCE)

    @cached_property
    def canonical_kind(self) -> str:
        """Clang's name for the kind of the canonical type (`Record`, `Pointer`, `Unexposed`...)."""
        return self._cursor.type.get_canonical().kind.spelling

    @cached_property
    def pointee_is_const(self) -> bool:
        """Whether what a reference binds, or what a pointer points to, is const (`const T&`,
        `const T*`); False for other types."""
        type_ = self._cursor.type
        if type_.kind in (ci.TypeKind.LVALUEREFERENCE, ci.TypeKind.RVALUEREFERENCE):
            return type_.get_pointee().is_const_qualified()
        canonical = type_.get_canonical()
        return canonical.kind == ci.TypeKind.POINTER and canonical.get_pointee().is_const_qualified()


@dataclass(frozen=True)
class AsmText:
    template: str
    clobbers: tuple[str, ...]
    is_volatile: bool


@dataclass(eq=False)
class Stmt(_Spanned):
    """A statement. `exprs`: the expressions it evaluates itself, in source order (an `if`'s
    or loop's condition, a return value, an expression statement, a loop's increment, asm
    operands); `stmts`: the statements nested in it, in source order (a block's; an `if`'s
    init, then and else; a loop's init and body); `variables`: those it declares (a
    declaration, a condition variable, a range-for's loop variable)."""

    kind: StmtKind
    _cursor: ci.Cursor = field(repr=False)
    exprs: tuple[Expr, ...] = ()
    stmts: tuple[Stmt, ...] = ()
    variables: tuple[Var, ...] = ()
    condition: Expr | None = None  # IF, WHILE, DO, SWITCH
    then: Stmt | None = None  # IF
    orelse: Stmt | None = None  # IF
    body: Stmt | None = None  # loops, SWITCH, CASE

    @cached_property
    def is_constexpr(self) -> bool:
        """Whether an IF is `if constexpr`."""
        return self.kind is StmtKind.IF and _second_token(self._cursor) == "constexpr"

    @cached_property
    def taken(self) -> bool | None:
        """For `if constexpr` whose condition folds: whether the then branch is kept (the
        other is discarded); None for every other statement."""
        if self.kind is not StmtKind.IF or self.condition is None:
            return None
        value = self.condition.value
        return None if value is None or not self.is_constexpr else value != 0

    @cached_property
    def asm(self) -> AsmText | None:
        """An ASM statement's template, clobbers and `volatile` (its operands are `exprs`)."""
        if self.kind is not StmtKind.ASM:
            return None
        parts = asm_parts(self._cursor)
        return AsmText(parts.template, parts.clobbers, parts.is_volatile)

    def live_stmts(self) -> tuple[Stmt, ...]:
        """`stmts` without the branch a resolved `if constexpr` discards."""
        if self.taken is None:
            return self.stmts
        dropped = self.orelse if self.taken else self.then
        return tuple(s for s in self.stmts if s is not dropped)

    def walk(self) -> Iterator[Stmt]:
        """This statement and every live one nested in it, pre-order."""
        pending = [self]
        while pending:
            node = pending.pop()
            yield node
            pending.extend(reversed(node.live_stmts()))

    def expressions(self) -> Iterator[Expr]:
        """Every expression this statement and its live nested ones evaluate, pre-order
        within each statement (a declaration's initializers included)."""
        for stmt in self.walk():
            for var in stmt.variables:
                for expr in var.exprs:
                    yield from expr.walk()
            for expr in stmt.exprs:
                yield from expr.walk()

    def calls(self) -> Iterator[Expr]:
        """Every call in the live code of this statement (lambda bodies aside)."""
        return (e for e in self.expressions() if e.kind is ExprKind.CALL)

    @cached_property
    def asm_outputs(self) -> tuple[Expr, ...]:
        """An ASM statement's output operands: the first of its `exprs` (the rest are inputs)."""
        if self.kind is not StmtKind.ASM:
            return ()
        return self.exprs[: len(asm_parts(self._cursor).outputs)]


def _non_type_params(template: ci.Cursor) -> dict[str, TypeFacts]:
    """A function or class template's non-type parameters (`int kDim`), by name, with their types."""
    children = template.get_children()
    return {c.spelling: _type_facts(c.type) for c in children if c.kind == K.TEMPLATE_NON_TYPE_PARAMETER}


@dataclass(eq=False)
class Function:
    """A function declaration: its name, kind and parameters, and its body's tree (None
    without a definition), built when first read."""

    name: str
    kind: FunctionKind
    _cursor: ci.Cursor = field(repr=False)
    _program: Program = field(repr=False)

    @cached_property
    def usr(self) -> str:
        return self._cursor.get_usr()

    @cached_property
    def params(self) -> tuple[Var, ...]:
        return tuple(self._program.var(c) for c in self._cursor.get_children() if c.kind == K.PARM_DECL)

    @cached_property
    def result(self) -> TypeFacts:
        """The type it returns."""
        return _type_facts(self._cursor.result_type)

    @cached_property
    def body(self) -> Stmt | None:
        if self._cursor.kind not in FUNCTION_KINDS:
            return None
        block = next((c for c in self._cursor.get_children() if c.kind == K.COMPOUND_STMT), None)
        return self._program.statement(block, 0) if block is not None else None

    @cached_property
    def launch_bound(self) -> tuple[str, ...]:
        """The tokens (spellings) of the first argument of the declaration's
        `__launch_bounds__(...)`, the most threads a block may have; () without one."""
        body = next((c for c in self._cursor.get_children() if c.kind == K.COMPOUND_STMT), None)
        start, end = self._cursor.extent.start, body.extent.start if body is not None else self._cursor.extent.end
        if start.file is None or end.file is None or start.file.name != end.file.name:
            return ()
        unit = self._cursor.translation_unit
        # the declaration's head, from a location of its own (an extent that starts at a
        # macro, `__global__`, lexes no tokens)
        opening = ci.SourceLocation.from_position(unit, end.file, start.line, start.column)
        head = ci.SourceRange.from_locations(opening, end)
        spellings = [t.spelling for t in unit.get_tokens(extent=head)]
        rest = spellings[spellings.index("__launch_bounds__") + 1 :] if "__launch_bounds__" in spellings else []
        if rest[:1] != ["("]:
            return ()
        depth = 0
        for position, spelling in enumerate(rest[1:], 1):
            if depth == 0 and spelling in (",", ")"):
                return tuple(rest[1:position])
            depth += {"(": 1, ")": -1}.get(spelling, 0)
        return ()

    @cached_property
    def template_params(self) -> tuple[str, ...]:
        """The template's parameters' names, in order (() for a function that is no template)."""
        return tuple(c.spelling for c in self._cursor.get_children() if c.kind in TEMPLATE_PARAM_KINDS)

    @cached_property
    def value_template_params(self) -> dict[str, TypeFacts]:
        """The template's non-type parameters (`int kDim`), by name, with their types."""
        return _non_type_params(self._cursor)

    @cached_property
    def class_value_template_params(self) -> dict[str, TypeFacts]:
        """The non-type parameters of the class template that declares it (`kThreads` of
        `template <int kThreads> struct Gate { static void run(...); }`), by name."""
        parent = self._cursor.semantic_parent
        return _non_type_params(parent) if parent is not None and parent.kind == K.CLASS_TEMPLATE else {}

    @cached_property
    def parent_name(self) -> str:
        """The name of the namespace or record that declares it (`pointer` for `pointer::offset`)."""
        parent = self._cursor.semantic_parent
        return parent.spelling if parent is not None else ""

    @cached_property
    def file(self) -> str:
        """The file its name is in ("" for none)."""
        return _file_of(self._cursor)

    @cached_property
    def qualified_name(self) -> str:
        """`ns::Class::name`, an anonymous namespace as `(anonymous)`."""
        return qualified_name(self._cursor)

    @cached_property
    def is_implicit_instantiation(self) -> bool:
        """An instantiation libclang lists beside its template (whose own body is the one read)."""
        return is_implicit_instantiation(self._cursor)

    @property
    def buildable_body(self) -> Stmt | None:
        """`body`, or None where it nests deeper than tier 1 builds (generated code). The
        host-side analyses, which can do without one function's facts, skip such a body;
        the data-flow walk a kernel's rules rest on reads `body`, and the file is KC000."""
        try:
            return self.body
        except NestedTooDeeply:
            return None


class Program:
    """The functions of one translation unit, each built once; `path` is the checked file
    (named when a body nests too deeply to analyze)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._functions: dict[int, Function] = {}
        self._skipped: list[Span] | None = None
        self._static_methods: dict[str, list[ci.Cursor]] | None = None  # by name, built on first use
        self._kernels: dict[str, list[ci.Cursor]] | None = None  # by name, built on first use

    # -- facts of the checked file, read through any node of its translation unit -------------
    def skipped_spans(self, anchor: Function) -> list[Span]:
        """The preprocessor-inactive regions (`#if` branches not taken) of the checked file."""
        if self._skipped is None:
            self._skipped = skipped_spans(anchor._cursor.translation_unit, self.path)
        return self._skipped

    def static_methods_named(self, anchor: Expr, name: str) -> list[Function]:
        """The static member functions called `name` of the checked file's records (struct
        and class templates, nested ones too), defined there or out of line."""
        if self._static_methods is None:
            self._static_methods = {}
            members = _file_members(anchor._cursor.translation_unit.cursor, self.path, (K.NAMESPACE, *RECORD_KINDS))
            for record in (c for c in members if c.kind in RECORD_KINDS):
                for method in record.get_children():
                    if method.kind in FUNCTION_KINDS and method.is_static_method():
                        self._static_methods.setdefault(method.spelling, []).append(method)
        return [self.function(m) for m in self._static_methods.get(name, ())]

    def function(self, cursor: ci.Cursor) -> Function:
        """The function (or function template) declared by `cursor`."""
        key = cursor.hash  # the same for every cursor of one declaration
        known = self._functions.get(key)
        if known is None:
            known = self._functions[key] = Function(cursor.spelling, function_kind(cursor), cursor, self)
        return known

    # -- the one walk -----------------------------------------------------------------------
    def statement(self, cursor: ci.Cursor, depth: int, orelse: Stmt | None = None) -> Stmt:
        """`orelse`: an `if`'s else branch, already built (see `_else_ifs`)."""
        if depth >= MAX_NESTING:
            raise NestedTooDeeply(cursor, self.path)
        kind = _STMT_KINDS.get(cursor.kind)
        if kind is None and cursor.kind.is_expression():
            return Stmt(StmtKind.EXPR, cursor, exprs=(self.expression(cursor, depth + 1),))
        kind = kind or StmtKind.OTHER
        if kind is StmtKind.IF and orelse is None:  # an `else if` chain: a sequence, not nesting
            for link in reversed(_else_ifs(cursor)):
                orelse = self.statement(link, depth, orelse)
        children = list(cursor.get_children())
        nested = _nested_statements(kind, children)
        else_index = max(nested) if orelse is not None else -1
        exprs: list[Expr] = []
        stmts: list[Stmt] = []
        variables: list[Var] = []
        for index, child in enumerate(children):
            if child.kind == K.VAR_DECL or _is_decomposition(child):
                variables.append(self.var(child, depth + 1))
            elif kind is StmtKind.DECL:
                continue  # a local type or alias: not code
            elif index == else_index and orelse is not None:
                stmts.append(orelse)
            elif index in nested or child.kind.is_statement():
                stmts.append(self.statement(child, depth + 1))
            elif child.kind.is_expression():
                exprs.append(self.expression(child, depth + 1))
        stmt = Stmt(kind, cursor, tuple(exprs), tuple(stmts), tuple(variables))
        _name_parts(stmt, children, nested)
        return stmt

    def expression(self, cursor: ci.Cursor, depth: int) -> Expr:
        if depth >= MAX_NESTING:
            raise NestedTooDeeply(cursor, self.path)
        kind = _EXPR_KINDS.get(cursor.kind, ExprKind.OTHER)
        children = (
            ()
            if kind is ExprKind.LAMBDA
            else tuple(self.expression(c, depth + 1) for c in cursor.get_children() if c.kind.is_expression())
        )
        return Expr(kind, cursor.spelling, children, cursor, self)

    def var(self, cursor: ci.Cursor, depth: int = 0) -> Var:
        exprs = tuple(self.expression(c, depth + 1) for c in cursor.get_children() if c.kind.is_expression())
        bindings: tuple[Binding, ...] = ()
        if _is_decomposition(cursor):
            names = (c for c in cursor.get_children() if c.kind == K.UNEXPOSED_DECL)
            bindings = tuple(Binding(c.spelling, c.hash, index, c) for index, c in enumerate(names))
        return Var(cursor.spelling, cursor.hash, exprs, cursor, bindings)

    def declared_function(self, declaration: DeclRef) -> Function:
        """The function (or function template) a declaration names."""
        return self.function(declaration._cursor)

    def declared_variable(self, declaration: DeclRef) -> Var:
        """The variable a declaration declares, with the expressions of its declaration."""
        return self.var(declaration._cursor)

    def initializer(self, declaration: DeclRef) -> Expr | None:
        """The first expression a variable's declaration evaluates: its initializer (a
        declaration-level expression, built as a tree of its own)."""
        first = initializer_of(declaration._cursor)
        return self.expression(first, 0) if first is not None else None

    def kernels_named(self, anchor: Expr, name: str) -> list[DeclRef]:
        """The kernels (templates) called `name` declared in the checked file (at namespace
        scope), indexed on first use."""
        if self._kernels is None:
            self._kernels = {}
            for node in _file_members(anchor._cursor.translation_unit.cursor, self.path, (K.NAMESPACE,)):
                if (
                    node.kind in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE)
                    and not is_implicit_instantiation(node)
                    and function_kind(node) is FunctionKind.KERNEL
                ):
                    self._kernels.setdefault(node.spelling, []).append(node)
        return [decl_ref(c) for c in self._kernels.get(name, ())]

    def defined(self, declaration: DeclRef) -> Function:
        """The function a declaration declares, at its definition when one is in sight."""
        cursor = declaration._cursor
        return self.function(cursor.get_definition() or cursor)

    def definition(self, function: DeclRef | Function) -> Function | None:
        """The function whose body a call of `function` runs: its definition, through the
        template a specialization instantiates; None when no body is in sight (a declaration
        only, a system header's function, or no function at all)."""
        declaration = function._cursor
        if declaration.kind not in FUNCTION_KINDS:
            return None
        definition = (declaration.specialized_template or declaration).get_definition()
        if definition is None or definition.location.is_in_system_header:
            return None
        has_body = any(c.kind == K.COMPOUND_STMT for c in definition.get_children())  # not built yet
        return self.function(definition) if has_body else None


def code_declarations(top_level: list[ci.Cursor]) -> Iterator[tuple[DeclRef, bool]]:
    """The functions, variables and fields among a file's top-level declarations (in source
    order, through namespaces, `extern "C"` blocks, records, unions and friend declarations),
    each with whether it is a member of a record (a union's are not)."""
    return _code_declarations(outermost(c for c in top_level if c.kind in _CODE_DECLARATIONS), False)


def _code_declarations(cursors: Iterable[ci.Cursor], in_record: bool) -> Iterator[tuple[DeclRef, bool]]:
    for cursor in cursors:
        kind = cursor.kind
        if kind in FUNCTION_KINDS or kind in (K.FIELD_DECL, K.VAR_DECL):
            yield decl_ref(cursor), in_record
        elif kind in RECORD_KINDS:
            yield from _code_declarations(cursor.get_children(), True)
        elif kind in _CONTAINERS:
            yield from _code_declarations(cursor.get_children(), False)


def _file_members(scope: ci.Cursor, path: str, descend: tuple[ci.CursorKind, ...]) -> Iterator[ci.Cursor]:
    """The declarations of file `path` in `scope`, pre-order, and inside those of kinds `descend`."""
    for child in scope.get_children():
        if child.location.file is None or child.location.file.name != path:
            continue
        yield child
        if child.kind in descend:
            yield from _file_members(child, path, descend)


def too_deep(node: Expr | Stmt | Var, path: str) -> NestedTooDeeply:
    """The error a walk raises at `node` when it nests past `MAX_NESTING` (checking `path`)."""
    return NestedTooDeeply(node._cursor, path)


def _is_decomposition(cursor: ci.Cursor) -> bool:
    """A structured binding declaration: libclang leaves it unexposed, its bindings (unexposed
    too) and its initializer as children."""
    return cursor.kind == K.UNEXPOSED_DECL and has_child_kind(cursor, K.UNEXPOSED_DECL)


def _nested_statements(kind: StmtKind, children: list[ci.Cursor]) -> frozenset[int]:
    """Which children are statements of their own even where clang gives an expression (an
    expression statement): all of a block's; an `if`'s after its condition (then, else); a
    loop's, switch's or case's body (last; a `do`'s first)."""
    if kind in (StmtKind.BLOCK, StmtKind.OTHER):
        return frozenset(range(len(children)))
    if kind is StmtKind.IF:
        condition = _condition_index(children)
        return frozenset(range(condition + 1, len(children))) if condition is not None else frozenset()
    if kind in (StmtKind.FOR, StmtKind.RANGE_FOR, StmtKind.WHILE, StmtKind.SWITCH, StmtKind.CASE) and children:
        return frozenset({len(children) - 1})
    return frozenset({0}) if kind is StmtKind.DO and children else frozenset()


def _condition_index(children: list[ci.Cursor]) -> int | None:
    """An `if`'s condition among its children (clang's order: init, condition variable,
    condition, then, else): the first expression."""
    return next((i for i, c in enumerate(children) if c.kind.is_expression()), None)


def _name_parts(stmt: Stmt, children: list[ci.Cursor], nested: frozenset[int]) -> None:
    """Name the condition, branches and body of an `if`, a loop, a switch or a case."""
    kind = stmt.kind
    if kind in (StmtKind.IF, StmtKind.WHILE, StmtKind.SWITCH, StmtKind.DO) and stmt.exprs:
        stmt.condition = stmt.exprs[-1] if kind is StmtKind.DO else stmt.exprs[0]
    if kind is StmtKind.IF:
        branches = stmt.stmts[len(stmt.stmts) - len(nested) :]
        stmt.then = branches[0] if branches else None
        stmt.orelse = branches[1] if len(branches) > 1 else None
    elif kind is StmtKind.DO:
        stmt.body = stmt.stmts[0] if stmt.stmts else None
    elif nested and kind is not StmtKind.BLOCK and kind is not StmtKind.OTHER:
        stmt.body = stmt.stmts[-1] if stmt.stmts else None


def _second_token(cursor: ci.Cursor) -> str:
    """The token after a statement's first (`constexpr` in `if constexpr`), read from a
    small range at the statement's start rather than from its whole extent."""
    extent = cursor.extent
    start = extent.start
    if start.file is None:
        return ""
    unit = cursor.translation_unit
    end = ci.SourceLocation.from_offset(unit, start.file, min(start.offset + 32, extent.end.offset))
    tokens = ci.TokenGroup.get_tokens(unit, ci.SourceRange.from_locations(start, end))
    spellings = [token.spelling for _, token in zip(range(2), tokens)]
    return spellings[1] if len(spellings) == 2 else ""


def cursor_of(node: Expr | Stmt | Var | Binding | DeclRef | Function) -> ci.Cursor:
    """The libclang cursor behind a tier-1 node: for the other modules of tier 1 only (the
    evaluators `consteval` and `provenance`, the declaration passes), never for a tier-2
    analysis (tests/test_architecture.py holds to that)."""
    return node._cursor


def function_kind(cursor: ci.Cursor) -> FunctionKind:
    if has_child_kind(cursor, K.CUDAGLOBAL_ATTR):
        return FunctionKind.KERNEL
    return FunctionKind.DEVICE if has_child_kind(cursor, K.CUDADEVICE_ATTR) else FunctionKind.HOST


def _definition(declaration: ci.Cursor) -> ci.Cursor:
    """Where a function's body is: its definition; for a specialization used from a template
    (maybe not instantiated yet) its template; else the declaration itself."""
    return declaration.get_definition() or declaration.specialized_template or declaration


def declarations_named(callee: ci.Cursor) -> list[ci.Cursor] | None:
    """The function declarations a callee reference names: one, or the candidates of an
    overload set (at most `MAX_CALLEES`); None when the expression names no function."""
    inner = strip_parens(callee)
    if inner.kind != K.DECL_REF_EXPR:
        return None
    overloaded = next((c for c in inner.get_children() if c.kind == K.OVERLOADED_DECL_REF), None)
    referenced = inner.referenced if overloaded is None else None
    if referenced is not None and referenced.kind == K.OVERLOADED_DECL_REF:
        overloaded = referenced
    if overloaded is not None:
        return overloaded_decls(overloaded)[:MAX_CALLEES]
    if referenced is None:
        return _class_template_members(inner)
    return [referenced] if referenced.kind in FUNCTION_KINDS else None


def _class_template_members(reference: ci.Cursor) -> list[ci.Cursor] | None:
    """`Pdl<kUsePDL>::wait` inside a template, a name clang leaves unresolved until the class
    template is instantiated: the template's member functions of that name (its definitions
    are every instantiation's); None when the qualifier is no class template or it has none."""
    template = next((c.referenced for c in reference.get_children() if c.kind == K.TEMPLATE_REF), None)
    if template is None or template.kind != K.CLASS_TEMPLATE:
        return None
    name = _last_qualified_name(tokens_of(reference))
    members = [c for c in template.get_children() if c.kind in FUNCTION_KINDS and c.spelling == name]
    return members[:MAX_CALLEES] or None


def _last_qualified_name(tokens: Sequence[Token]) -> str:
    """`wait` of `ns::Pdl<kUsePDL>::wait` (or of `Pdl<A, B>::template wait<C>`): the name after
    the last `::` outside template arguments."""
    depth, name = 0, ""
    for index, token in enumerate(tokens):
        depth += _NESTING.get(token.spelling, 0)
        if depth == 0 and token.spelling == "::":
            following = tokens[index + 1 : index + 3]
            names = [t.spelling for t in following if t.spelling != "template"]
            name = names[0] if names else ""
    return name


def _named_functions(callee: ci.Cursor) -> list[ci.Cursor]:
    """`declarations_named`, else the template named through a TEMPLATE_REF (`f<Op>` with
    dependent template arguments)."""
    named = declarations_named(callee)
    if named:
        return named
    template = next((c.referenced for c in strip_parens(callee).get_children() if c.kind == K.TEMPLATE_REF), None)
    return [template] if template is not None and template.kind == K.FUNCTION_TEMPLATE else []


_ARRAY_TYPE_KINDS = (
    ci.TypeKind.CONSTANTARRAY,
    ci.TypeKind.INCOMPLETEARRAY,
    ci.TypeKind.VARIABLEARRAY,
    ci.TypeKind.DEPENDENTSIZEDARRAY,
)


def _file_of(cursor: ci.Cursor) -> str:
    """The file a declaration's name is in ("" when none)."""
    location = cursor.location
    return location.file.name if location.file is not None else ""


_CAST_FORMS = {
    K.CXX_STATIC_CAST_EXPR: "static",
    K.CXX_REINTERPRET_CAST_EXPR: "reinterpret",
    K.CXX_CONST_CAST_EXPR: "const",
    K.CSTYLE_CAST_EXPR: "c_style",
    K.CXX_FUNCTIONAL_CAST_EXPR: "functional",
}
_ARITHMETIC_TYPES = frozenset(
    {
        *_SIGNED_INTEGERS,
        *_UNSIGNED_INTEGERS,
        ci.TypeKind.FLOAT,
        ci.TypeKind.DOUBLE,
        ci.TypeKind.ENUM,
    }
)


def _else_ifs(cursor: ci.Cursor) -> list[ci.Cursor]:
    """The `else if` links after an `if`, in order. A chain is built from its last link back,
    each at the depth of the first: generated dispatch code chains hundreds of them, which
    is no deeper than a block of hundreds of statements."""
    chain: list[ci.Cursor] = []
    node = cursor
    while True:
        children = list(node.get_children())
        nested = _nested_statements(StmtKind.IF, children)
        if len(nested) != 2 or children[max(nested)].kind != K.IF_STMT:
            return chain
        node = children[max(nested)]
        chain.append(node)


_UNEVALUATED = (K.CXX_UNARY_EXPR, K.CXX_TYPEID_EXPR, K.SIZE_OF_PACK_EXPR)  # sizeof, alignof, typeid


@dataclass(frozen=True)
class Token:
    """One token as written: its spelling, and the file and byte offsets it is spelled at."""

    spelling: str
    file: str  # "" when clang names none
    start: int
    end: int


def tokens_of(cursor: ci.Cursor) -> tuple[Token, ...]:
    """The tokens clang lexes over a cursor's extent, comments left out (`k</*kWrite=*/true>`)."""
    return tuple(_token(t) for t in cursor.get_tokens() if t.kind != ci.TokenKind.COMMENT)


def _token(token: ci.Token) -> Token:
    start, end = token.extent.start, token.extent.end
    same_file = start.file is not None and end.file is not None and start.file.name == end.file.name
    return Token(token.spelling, start.file.name if same_file else "", start.offset, end.offset)


_NESTING = {"<": 1, "(": 1, "[": 1, "{": 1, ">": -1, ">>": -2, ")": -1, "]": -1, "}": -1}


def angle_groups(tokens: Sequence[Token], start: int = 0) -> tuple[list[tuple[Token, ...]], int]:
    """The comma-separated groups inside the first `<...>` at or after `start` (template
    arguments or parameters as written), and the index just past its closing `>` (the
    length when there is none)."""
    groups: list[list[Token]] = []
    depth = 0
    for index in range(start, len(tokens)):
        spelling = tokens[index].spelling
        if depth == 0 and spelling != "<":
            continue
        depth += _NESTING.get(spelling, 0)
        if depth <= 0:
            return [tuple(g) for g in groups if g], index + 1
        if depth == 1 and spelling in ("<", ","):
            groups.append([])
        else:
            groups[-1].append(tokens[index])
    return [tuple(g) for g in groups if g], len(tokens)


def _spans_exactly(cursor: ci.Cursor, tokens: Sequence[Token]) -> bool:
    """Whether a cursor's extent is the tokens' from the first to the last."""
    extent = cursor.extent
    return extent.start.offset == tokens[0].start and extent.end.offset == tokens[-1].end
