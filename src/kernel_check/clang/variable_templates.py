"""What libclang does not expose of a variable template, read from its tokens.

`template <int N> static constexpr auto kernel = my_kernel<T, N>;` is an UNEXPOSED_DECL to
libclang, with neither its template parameters nor its initializer as children. Launch
resolution needs both: the kernel the template is initialized with, and how a use binds that
kernel's template arguments (`kernel<4>` launches `my_kernel<T, 4>`). So they are read here,
from the declaration's tokens: its parameter list (names and defaults), the identifiers after
its `=`, and, when the initializer is one template-id, that id's name and arguments.
"""

from __future__ import annotations

from dataclasses import dataclass

import clang.cindex as ci

from ..model import ConstExpr
from .consteval import function_declaration
from .cursors import TEMPLATE_PARAM_KINDS, K
from .program import DeclRef, Token, angle_groups, cursor_of, decl_ref, tokens_of

_BOOLEANS = {"true": 1, "false": 0}


@dataclass(frozen=True)
class TemplateParam:
    name: str
    default: tuple[Token, ...]  # () when it has none


@dataclass(frozen=True)
class VariableTemplate:
    name: str
    params: tuple[TemplateParam, ...]
    initializer_names: tuple[str, ...]  # every identifier after the `=`
    function_name: str  # the template-id's name when the initializer is one (`my_kernel`), else ""
    arguments: tuple[tuple[Token, ...], ...]  # that template-id's arguments as written
    scope_params: dict[str, str]  # enclosing templates' parameters: name -> "type" / "non_type" / "template"


def read_variable_template(declared: DeclRef) -> VariableTemplate | None:
    """The variable template a declaration declares (libclang leaves it unexposed); None for
    every other declaration."""
    declaration = cursor_of(declared)
    if declaration.kind != K.UNEXPOSED_DECL:
        return None
    tokens = tokens_of(declaration)
    if len(tokens) < 2 or tokens[0].spelling != "template" or tokens[1].spelling != "<":
        return None
    param_groups, after_params = angle_groups(tokens)
    equals = next(
        (
            i + 1
            for i in range(after_params, len(tokens) - 1)
            if tokens[i].spelling == declaration.spelling and tokens[i + 1].spelling == "="
        ),
        None,
    )
    if equals is None:
        return None
    initializer = [t for t in tokens[equals + 1 :] if t.spelling != ";"]
    function_name, arguments = _template_id(initializer)
    return VariableTemplate(
        name=declaration.spelling,
        params=tuple(_param(group) for group in param_groups),
        initializer_names=tuple(t.spelling for t in initializer if t.spelling.isidentifier()),
        function_name=function_name,
        arguments=arguments,
        scope_params=_scope_params(declaration),
    )


def initialized_function(declared: DeclRef, template: VariableTemplate) -> DeclRef | None:
    """The function (template) a variable template is initialized with, looked up by name from
    the template's scope outwards."""
    found = _initialized_function(cursor_of(declared), template)
    function = function_declaration(found) if found is not None else None
    return decl_ref(function) if function is not None else None


def _initialized_function(declaration: ci.Cursor, template: VariableTemplate) -> ci.Cursor | None:
    scope = declaration.semantic_parent
    while template.function_name and scope is not None and scope.kind != K.TRANSLATION_UNIT:
        found = [
            c
            for c in scope.get_children()
            if c.kind in (K.FUNCTION_TEMPLATE, K.FUNCTION_DECL) and c.spelling == template.function_name
        ]
        if found:
            return found[0]
        scope = scope.semantic_parent
    return None


def argument_value(tokens: tuple[Token, ...], text: str, template: VariableTemplate) -> ConstExpr:
    """The value of an argument the declaration writes (a default, or one of the initializer's
    arguments; `text` as written): a literal, or a parameter of an enclosing template; anything
    else is unknown, keeping its text."""
    spelling = tokens[0].spelling if len(tokens) == 1 else ""
    number = _BOOLEANS[spelling] if spelling in _BOOLEANS else _integer_literal(spelling)
    if number is not None:
        return ConstExpr("int", number)
    scope_kind = template.scope_params.get(spelling)
    if scope_kind in ("type", "non_type"):
        return ConstExpr("sizeof" if scope_kind == "type" else "param", name=spelling)
    return ConstExpr("unknown", name=spelling if spelling.isidentifier() else "", text=text)


def _param(group: tuple[Token, ...]) -> TemplateParam:
    """`int N`, `bool kUsePDL = false`, `typename T`, `int... Is`."""
    spellings = [t.spelling for t in group]
    equals = spellings.index("=") if "=" in spellings else len(group)
    names = [s for s in spellings[:equals] if s.isidentifier()]
    return TemplateParam(names[-1] if names else "", group[equals + 1 :])


def _template_id(initializer: list[Token]) -> tuple[str, tuple[tuple[Token, ...], ...]]:
    """(name, arguments) when the initializer is `[&] [ns::]name<args...>`, else ("", ())."""
    index = 1 if initializer and initializer[0].spelling == "&" else 0
    name = ""
    while index < len(initializer) and (
        initializer[index].spelling.isidentifier() or initializer[index].spelling == "::"
    ):
        if initializer[index].spelling != "::":
            name = initializer[index].spelling
        index += 1
    if not name:
        return "", ()
    if index == len(initializer):  # `= my_kernel;`
        return name, ()
    if initializer[index].spelling != "<":
        return "", ()
    groups, end = angle_groups(initializer, index)
    return (name, tuple(groups)) if end == len(initializer) else ("", ())


def _scope_params(declaration: ci.Cursor) -> dict[str, str]:
    """The template parameters of the class and function templates around a declaration, the
    innermost first where names repeat."""
    params: dict[str, str] = {}
    scope = declaration.semantic_parent
    while scope is not None and scope.kind != K.TRANSLATION_UNIT:
        for child in scope.get_children():
            if child.kind in TEMPLATE_PARAM_KINDS:
                params.setdefault(child.spelling, TEMPLATE_PARAM_KINDS[child.kind])
        scope = scope.semantic_parent
    return params


def _integer_literal(spelling: str) -> int | None:
    """The value of a C integer literal (`8`, `0x10`, `16u`, `1'024`), None for other tokens."""
    digits = spelling.replace("'", "").rstrip("uUlL")
    if digits[:1].isdigit() and digits.isalnum():
        try:
            return int(digits, 8) if len(digits) > 1 and digits[0] == "0" and digits.isdigit() else int(digits, 0)
        except ValueError:
            return None
    return None
