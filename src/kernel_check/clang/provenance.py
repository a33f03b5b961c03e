"""Pointer provenance: where a pointer value of a kernel or device function comes from.

One value type, `Origin`: parameter `param` of a callable (the function itself, or one of
its lambdas: `scope`), then a field path `fields` inside a params struct received by value
or by reference, with the `shape` of the value there. Both extractors describe pointers
with it: `pointer_accesses` (loads, stores and escapes through received pointers, KC101 /
KC102 / KC2xx) and `launcher_facts` (vectorized accesses and pointers handed to device
functions, KC120 / KC121).

The combination rules, each written once here:

* a parameter has the shape of its type (`classify`, `parameter`): a pointer, a params
  struct, nothing for scalars and unknown types;
* `s.f` of a params struct is its field, with the field's shape (`member`, `field_shape`);
  members of anything else (`p->f` loads through `p`) are not received pointers;
* `p + n`, `n + p`, `p - n`, `pointer::offset(p, n)` stay `p` (`offset`); `p - q` is a
  distance, not a pointer;
* casts, parentheses and local copies leave a value unchanged;
* `c ? a : b` is either branch (`union`), never the condition;
* `ptrs[i]` / `*ptrs` of an array of pointers (or of structs) inside a params struct is
  an element of it (`element`); `&p[i]` is `p` again (`address_of`);
* each name of a structured binding (`const auto& [input, weight] = params;`) is the field
  at its position, or an element of a decomposed array (`structured_binding`);
* what a callee does to `param.fields` is, at a call, what it does to the caller's
  argument extended by those fields (`Origin.extended`).

`origins_of` evaluates a pointer expression (a tier-1 tree) under these rules without side
effects (the launcher facts); the data-flow walk applies the same rules while it records
accesses. The shapes of types and the fields of records are read from libclang here, which
makes this module part of tier 1 (docs/architecture.md); its callers hand it tier-1 nodes.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import clang.cindex as ci

from .cursors import RECORD_KINDS, K, children
from .program import Binding, DeclRef, Expr, ExprKind, Var, cursor_of

T = ci.TypeKind

_ARRAY_KINDS = (T.CONSTANTARRAY, T.INCOMPLETEARRAY, T.DEPENDENTSIZEDARRAY, T.VARIABLEARRAY)
_UNKNOWN_TYPE_KINDS = (T.DEPENDENT, T.UNEXPOSED, T.INVALID)
# Calls whose result is their first pointer argument (`device::pointer::offset(p, n)`).
POINTER_OFFSET = "offset"
PASS_THROUGH = ("__builtin_assume_aligned",)
_MAX_DEPTH = 12  # nested operands followed by `origins_of`


class Shape(enum.Enum):
    POINTER = "pointer"  # points into memory the function received
    STRUCT = "struct"  # a params struct (by value or by reference): its pointer fields are roots
    POINTER_ARRAY = "pointer array"  # an array of pointers inside a params struct
    STRUCT_ARRAY = "struct array"
    ELEMENT = "element"  # a reference bound to memory behind a pointer: using it is an access
    # A value of a type only the instantiation knows (`T p`, `typename Cond<kPack>::type params`):
    # a pointer or a params struct. It is followed (its members, offsets, copies), but no
    # access through it is recorded, since what it is stays unknown.
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Origin:
    """Where a value came from: parameter `param` of callable `scope`, then `fields`."""

    param: int
    fields: tuple[str, ...] = ()
    shape: Shape = Shape.POINTER
    scope: int = 0  # 0: the function walked; 1, 2...: its lambdas
    record: ci.Cursor | None = field(default=None, compare=False, hash=False)  # for STRUCT shapes

    @property
    def field(self) -> str:
        """The outermost field ("" for the parameter itself): the part a launcher fills."""
        return self.fields[0] if self.fields else ""

    def reshaped(self, shape: Shape, record: ci.Cursor | None = None) -> Origin:
        return Origin(self.param, self.fields, shape, self.scope, record)

    def member(self, name: str, shape: Shape, record: ci.Cursor | None) -> Origin:
        return Origin(self.param, (*self.fields, name), shape, self.scope, record)

    def extended(self, fields: tuple[str, ...]) -> Origin | None:
        """What a callee reaches as `its parameter.fields`, seen from the caller whose
        argument is `self`: the pointer itself, or a pointer field of a passed struct."""
        if not fields:
            return self.reshaped(Shape.POINTER) if self.shape is Shape.POINTER else None
        if self.shape is not Shape.STRUCT:
            return None
        return Origin(self.param, (*self.fields, *fields), Shape.POINTER, self.scope)


Origins = tuple[Origin, ...]  # () when the expression is not a tracked pointer or struct


# -- combination rules ----------------------------------------------------------------------------


def union(*values: Iterable[Origin]) -> Origins:
    """Every origin of several values (branches of a conditional, assignments), once each."""
    return tuple(dict.fromkeys(origin for value in values for origin in value))


def pointers(values: Origins) -> Origins:
    return tuple(o for o in values if o.shape is Shape.POINTER)


def offset(left: Origins, right: Origins) -> Origins:
    """`p + n` / `n + p` / `p - n`: the pointer side (`p - q` is a distance, not a pointer).
    Without a known pointer on either side, whichever side of unknown type is the pointer."""
    left_pointers, right_pointers = pointers(left), pointers(right)
    if left_pointers and right_pointers:
        return ()
    return left_pointers or right_pointers or _unknown(union(left, right))


def _unknown(values: Origins) -> Origins:
    return tuple(o for o in values if o.shape is Shape.UNKNOWN)


def element(bases: Origins) -> Origins:
    """`a[i]` / `*a` of an array of pointers or structs in a params struct: its element."""
    result: list[Origin] = []
    for origin in bases:
        if origin.shape is Shape.POINTER_ARRAY:
            result.append(origin.reshaped(Shape.POINTER))
        elif origin.shape is Shape.STRUCT_ARRAY:
            result.append(origin.reshaped(Shape.STRUCT, origin.record))
    return tuple(result)


def address_of(bases: Origins) -> Origins:
    """`&a[i]` / `&*a`: the pointer itself, or an element's address inside an array field."""
    return union(pointers(bases), element(bases), _unknown(bases))


def member(bases: Origins, name: str, expression: Expr | Binding) -> Origins:
    """`s.name` for each params struct `s` among `bases`, with the field's shape (a member of
    a value of unknown type is unknown too)."""
    result: list[Origin] = []
    for origin in bases:
        if origin.shape is Shape.STRUCT:
            shape = field_shape(origin.record, name, cursor_of(expression).type)
            if shape is not None:
                result.append(origin.member(name, *shape))
        elif origin.shape is Shape.UNKNOWN:
            result.append(origin.member(name, Shape.UNKNOWN, None))
    return tuple(result)


def structured_binding(decomposed: Origins, index: int, binding: Binding) -> Origins:
    """What the `index`-th name of a structured binding holds (`input` of `const auto& [input,
    weight] = params;`), given the origins of the decomposed value: a params struct's field at
    that position (in declaration order), an element of an array of pointers or structs, or
    memory behind a pointer the declaration binds by reference (using a name accesses it)."""
    result: list[Origin] = []
    for origin in decomposed:
        if origin.shape is Shape.STRUCT and origin.record is not None:
            fields = _field_declarations(origin.record)
            if index < len(fields):
                result.extend(member((origin,), fields[index].spelling, binding))
        elif origin.shape in (Shape.POINTER_ARRAY, Shape.STRUCT_ARRAY):
            result.extend(element((origin,)))
        elif origin.shape is Shape.ELEMENT:
            result.append(origin)
    return union(result)


def at_call(arguments: Sequence[Origins], target: Origin) -> Origins:
    """What a callee's `target` (its parameter, then a field path) is at a call whose
    arguments have the origins `arguments` (how a callee summary is replayed)."""
    if target.param >= len(arguments):
        return ()
    mapped = (origin.extended(target.fields) for origin in arguments[target.param])
    return tuple(origin for origin in mapped if origin is not None)


# -- record and field classification --------------------------------------------------------------


def classify(type_: ci.Type) -> tuple[Shape, ci.Cursor | None] | None:
    """The shape of a parameter or field type (and the record of a struct), or None for
    scalars and function pointers; UNKNOWN for a type only the instantiation knows."""
    if type_.kind in (T.LVALUEREFERENCE, T.RVALUEREFERENCE):
        return classify(type_.get_pointee())
    canonical = type_.get_canonical()
    if canonical.kind == T.POINTER:
        pointee = canonical.get_pointee()
        return None if pointee.kind in (T.FUNCTIONPROTO, T.FUNCTIONNOPROTO) else (Shape.POINTER, None)
    if canonical.kind in _ARRAY_KINDS:
        inner = classify(canonical.element_type)
        if inner is None:
            return None
        if inner[0] is Shape.POINTER:
            return Shape.POINTER_ARRAY, None
        return (Shape.STRUCT_ARRAY, inner[1]) if inner[0] is Shape.STRUCT else None
    declaration = type_.get_declaration()
    if declaration.kind not in RECORD_KINDS:
        declaration = canonical.get_declaration()
    if declaration.kind in RECORD_KINDS:
        return Shape.STRUCT, declaration
    return (Shape.UNKNOWN, None) if canonical.kind in _UNKNOWN_TYPE_KINDS else None


def field_shape(owner: ci.Cursor | None, name: str, type_: ci.Type) -> tuple[Shape, ci.Cursor | None] | None:
    """The shape of field `name`: from the member expression's type `type_`, else from the
    struct declaration (a member of a dependent `Params<T>` has no type until instantiation)."""
    if type_.kind not in _UNKNOWN_TYPE_KINDS:
        return classify(type_)
    if owner is None or not name:
        return None
    declared = next((f for f in _field_declarations(owner) if f.spelling == name), None)
    return classify(declared.type) if declared is not None else None


def record_fields(typed: Expr | Var | DeclRef) -> list[str]:
    """Field names of the struct type of an expression or declaration, in declaration order
    (of the class template for a dependent specialization)."""
    return _type_record_fields(cursor_of(typed).type)


def _type_record_fields(type_: ci.Type) -> list[str]:
    for candidate in (type_, type_.get_canonical()):
        names = [f.spelling for f in _field_declarations(candidate.get_declaration())]
        if names:
            return names
    return []


def initializer_list_fields(init_list: Expr, field_name: str, fields: list[str]) -> list[tuple[Expr, str]]:
    """Each element of an initializer list with the field it fills: its designator's, else
    the field at its position (an enclosing list's field name, when given, wins)."""
    elements = []
    for index, value in enumerate(init_list.children):
        designator = next((c for c in children(cursor_of(value)) if c.kind == K.MEMBER_REF), None)
        if designator is not None:
            name = designator.spelling
        elif index < len(fields):
            name = fields[index]
        else:
            name = ""
        elements.append((value, field_name or name))
    return elements


def _field_declarations(record: ci.Cursor) -> list[ci.Cursor]:
    return [c for c in record.get_children() if c.kind == K.FIELD_DECL]


def parameter(param: Var, index: int, scope: int = 0) -> Origin | None:
    """The origin a pointer, params-struct or unknown-typed parameter starts as (None for
    scalars and arrays)."""
    shape = classify(cursor_of(param).type)
    if shape is None or shape[0] not in (Shape.POINTER, Shape.STRUCT, Shape.UNKNOWN):
        return None
    return Origin(index, (), shape[0], scope, shape[1])


# -- side-effect-free evaluation ------------------------------------------------------------------


def origins_of(
    expression: Expr,
    lookup: Callable[[DeclRef], Origins],
    member_name: Callable[[Expr], str],
    call_name: Callable[[Expr], str],
    depth: int = 0,
) -> Origins:
    """The origins a pointer expression may have. `lookup` gives what a referenced parameter
    or local variable holds, `member_name` a member expression's name and `call_name` a
    call's callee name (both also for dependent expressions libclang leaves unnamed)."""
    if depth > _MAX_DEPTH:
        return ()

    def of(operand: Expr) -> Origins:
        return origins_of(operand, lookup, member_name, call_name, depth + 1)

    node = expression.uncast()
    kind = node.kind
    operands = node.children
    if kind is ExprKind.REF:
        return lookup(node.ref) if node.ref is not None else ()
    if kind is ExprKind.MEMBER:
        name = member_name(node)
        return member(of(operands[0]), name, node) if operands and name else ()
    if kind is ExprKind.SUBSCRIPT and len(operands) == 2:
        return element(of(operands[0]))
    if kind is ExprKind.UNARY and len(operands) == 1:
        if node.operator == "&":
            return _address(operands[0], of)
        return element(of(operands[0])) if node.operator == "*" else ()
    if kind is ExprKind.BINARY and len(operands) == 2:
        if node.operator in ("+", "-"):
            return offset(of(operands[0]), of(operands[1]))
        return of(operands[1]) if node.operator == "," else ()
    if kind is ExprKind.CONDITIONAL and len(operands) == 3:
        return union(of(operands[1]), of(operands[2]))
    if kind is ExprKind.CALL:
        return _call_origins(call_name(node), operands, of)
    return ()


def _call_origins(name: str, parts: tuple[Expr, ...], of: Callable[[Expr], Origins]) -> Origins:
    """Calls that compute a pointer from a pointer argument, also dependent operator calls
    (libclang lists a dependent `a + b` as operand, operator, operand)."""
    if (name == POINTER_OFFSET or name in PASS_THROUGH) and len(parts) >= 2:
        return of(parts[1])
    if name in ("operator+", "operator-") and len(parts) == 3:
        return offset(of(parts[0]), of(parts[2]))
    if name == "operator&" and len(parts) == 2:
        return _address(parts[1], of)
    if name == "operator*" and len(parts) == 2:
        return element(of(parts[1]))
    return ()


def _address(operand: Expr, of: Callable[[Expr], Origins]) -> Origins:
    """`&a[i]` (and `&*a`): the address of an element is inside the same buffer."""
    inner = operand.uncast()
    parts = inner.children
    is_dereference = inner.kind is ExprKind.UNARY and inner.operator == "*"
    if (inner.kind is ExprKind.SUBSCRIPT and len(parts) == 2) or (is_dereference and len(parts) == 1):
        return address_of(of(parts[0]))
    return ()


def referred_record_fields(declared: DeclRef) -> list[str]:
    """`record_fields` of a declaration of struct type, or of the struct an lvalue reference
    refers to."""
    type_ = cursor_of(declared).type
    return _type_record_fields(type_.get_pointee() if type_.kind == ci.TypeKind.LVALUEREFERENCE else type_)
