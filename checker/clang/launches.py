"""Kernel launches, resolved once: the one `Launch` type every rule reads.

A launch is `LaunchKernel(grid, block, device)[.enable_pdl(x)](kernel, args...)` or
`kernel<<<grid, block>>>(args...)`. Its kernel expression is followed to every kernel it can
name, each with its template arguments evaluated in the launcher's scope (`consteval`) and
the condition under which it is the one launched:

* `kern<T, 8>`, `&kern<...>`, casts, either branch of a ternary (guarded by the condition);
* variables and member variables (`static constexpr auto kernel = k<T>;`) to their
  initializers, member variable templates (`template <int N> static constexpr auto kernel =
  k<N>;`, whose initializer libclang does not expose: the name after `=` is looked up);
* immediately invoked lambdas (`[] { if constexpr (c) return a<T>; else return b<T>; }()`,
  guarded by the `if` conditions) and helpers that return a kernel (`get_kernel<T>(n)`);
* the parameter of a lambda that launches whatever it is called with (`auto launch =
  [&](auto kernel) {...}; launch(k<T>);`), to the arguments of its calls.

The tensors a launch's arguments carry come from the launcher's body walk (launcher_facts.py),
which fills `Launch.tensors`.
"""

from __future__ import annotations

from collections.abc import Iterator

import clang.cindex as ci

from ..model import ConstExpr, Function, Launch, LaunchedKernel, PdlFlag
from .capi import overloaded_decls
from .consteval import (
    MAX_FOLD_DEPTH, Constants, expression_children, function_declaration, initializer_of, named_function, referenced_of,
    template_param_names,
)
from .cursors import K, children, has_child_kind, source_text, span_of, strip_casts, strip_parens, walk
from .pointer_accesses import _definition, _SourceBytes

LAUNCH_CONFIG_FUNCTIONS = ("cudaConfigureCall", "__cudaPushCallConfiguration")
_OPENING = {"<": 1, "(": 1, "[": 1, "{": 1, ">": -1, ">>": -2, ")": -1, "]": -1, "}": -1}


class LaunchResolver:
    """Per translation unit: finds the launches in a body and resolves their kernels."""

    def __init__(self, path: str, data: bytes) -> None:
        self.path = path
        self.data = data
        self.consts = Constants(data, path)
        self.source = _SourceBytes(path, data)
        self._kernels_by_name: dict[str, list[ci.Cursor]] | None = None  # built on first use
        self._lambda_arguments: dict[ci.Cursor, list[ci.Cursor]] = {}  # by parameter: two walks of the file each

    def launches(self, body: ci.Cursor, launcher: Function) -> Iterator[tuple[Launch, list[ci.Cursor]]]:
        """Each launch in a function body, with the declarations of the kernels it can launch."""
        for node in walk(body):
            if node.kind != K.CALL_EXPR:
                continue
            parts = self._launch_kernel_parts(node) or self._chevron_parts(node)
            if parts is not None:
                yield self._launch(node, launcher, *parts)

    # -- the two syntaxes --------------------------------------------------------------------
    def _launch_kernel_parts(self, call: ci.Cursor) -> tuple[str, ci.Cursor, list[ci.Cursor], PdlFlag | None] | None:
        """`LaunchKernel(grid, block, device)[.enable_pdl(x)](kernel, args...)`."""
        parts = [c for c in children(call) if not _is_call_operator_ref(c)]
        # A member call or the LaunchKernel constructor itself (its TYPE_REF names the class).
        if len(parts) < 2 or parts[0].kind in (K.MEMBER_REF_EXPR, K.TYPE_REF):
            return None
        if not _is_launch_kernel_object(parts[0]):
            return None
        return "launch_kernel", parts[1], parts[2:], self._pdl_flag(parts[0])

    def _chevron_parts(self, call: ci.Cursor) -> tuple[str, ci.Cursor, list[ci.Cursor], None] | None:
        """`kernel<<<grid, block>>>(args...)`: a call whose config child calls cudaConfigureCall."""
        parts = children(call)
        config = [c for c in parts if c.kind == K.CALL_EXPR and c.spelling in LAUNCH_CONFIG_FUNCTIONS]
        if not config:
            return None
        return "triple_chevron", parts[0], [c for c in parts[1:] if c not in config], None

    def _launch(self, call: ci.Cursor, launcher: Function, syntax: str, kernel: ci.Cursor,
                arguments: list[ci.Cursor], pdl: PdlFlag | None) -> tuple[Launch, list[ci.Cursor]]:
        found = self._kernels(kernel)
        spans = tuple(span_of(a.extent) for a in arguments)
        launch = Launch(
            span=span_of(call.extent),
            syntax=syntax,
            launcher=launcher.qualified_name,
            launcher_usr=launcher.usr,
            kernels=tuple(found),
            argument_texts=tuple(source_text(self.data, span) for span in spans),
            argument_spans=spans,
            pdl=pdl,
        )
        return launch, list(found.values())

    def _pdl_flag(self, launch_object: ci.Cursor) -> PdlFlag | None:
        """`x` of `.enable_pdl(x)` or `.config({.use_pdl = x, ...})`."""
        for node in [launch_object, *walk(launch_object)]:
            if node.kind == K.CALL_EXPR and node.spelling == "enable_pdl":
                args = [c for c in children(node) if c.kind != K.MEMBER_REF_EXPR]
                if not args:  # `enable_pdl()` uses its default argument, true
                    return PdlFlag(ConstExpr("int", 1), "true")
                return self._flag(args[0])
            if node.kind == K.CALL_EXPR and node.spelling == "config":
                value = _designated_value(node, "use_pdl")
                if value is not None:
                    return self._flag(value)
        return None

    def _flag(self, value: ci.Cursor) -> PdlFlag:
        text = " ".join(source_text(self.data, span_of(value.extent)).split())
        return PdlFlag(self.consts.value(value), text or "true")

    # -- kernels -----------------------------------------------------------------------------
    def _kernels(self, expression: ci.Cursor) -> dict[LaunchedKernel, ci.Cursor]:
        """Every kernel `expression` can name (the one it names directly first), with its
        declaration; one entry per (kernel, written template arguments)."""
        found: dict[tuple[str, tuple[str, ...]], tuple[LaunchedKernel, ci.Cursor]] = {}

        def add(reference: ci.Cursor | None, declaration: ci.Cursor,
                guard: ConstExpr | None) -> tuple[str, tuple[str, ...]]:
            kernel = self._candidate(reference, declaration, guard)
            key = (kernel.usr, kernel.template_arg_texts)
            found.setdefault(key, (kernel, declaration))
            return key

        for reference, guard in _kernel_references(expression, None, self):
            declaration = named_function(reference)
            if declaration is not None:
                add(reference, declaration, guard)
        for reference, declaration in self._named_kernels(expression):
            add(reference, declaration, None)
        direct = self._direct_kernel(expression)
        if direct is not None:
            key = add(*direct, None)
            found = {key: found[key], **found}
        return {kernel: declaration for kernel, declaration in found.values()}

    def _candidate(self, reference: ci.Cursor | None, declaration: ci.Cursor,
                   guard: ConstExpr | None) -> LaunchedKernel:
        written = reference is not None and reference.kind.is_expression()
        return LaunchedKernel(
            name=declaration.spelling,
            usr=declaration.get_usr(),
            template_params=template_param_names(declaration),
            template_args=(self.consts.template_args(reference) or ()) if written else (),
            template_arg_texts=self._argument_texts(reference) if written else (),
            guard=guard,
        )

    def _argument_texts(self, reference: ci.Cursor) -> tuple[str, ...]:
        """The explicit template arguments of a reference as written (`Cfg<A, B>`, `true`),
        split at the commas of its outermost `<...>`."""
        arguments: list[list[ci.Token]] = []
        depth = 0
        for token in reference.get_tokens():
            spelling = token.spelling
            if depth == 0 and spelling != "<":
                continue
            depth += _OPENING.get(spelling, 0)
            if depth <= 0:
                break
            if depth == 1 and spelling in ("<", ","):
                arguments.append([])
            else:
                arguments[-1].append(token)
        return tuple(self._token_text(tokens) for tokens in arguments if tokens)

    def _token_text(self, tokens: list[ci.Token]) -> str:
        extent = ci.SourceRange.from_locations(tokens[0].extent.start, tokens[-1].extent.end)
        return " ".join(self.source.of(extent).decode("utf-8", errors="replace").split())

    def _direct_kernel(self, expression: ci.Cursor) -> tuple[ci.Cursor, ci.Cursor] | None:
        """(reference, function) of the first function the expression names, following a
        variable to its initializer: the kernel a launch names when nothing selects one."""
        for node in [expression, *walk(expression)]:
            # a dependent `kern<T>`: the reference whose child lists the candidates spells the arguments
            overloaded = node if node.kind == K.OVERLOADED_DECL_REF else next(
                (c for c in children(node) if c.kind == K.OVERLOADED_DECL_REF), None)
            if overloaded is not None:
                declaration = function_declaration(overloaded)
                return (node, declaration) if declaration is not None else None
            ref = node.referenced if node.kind in (K.DECL_REF_EXPR, K.UNEXPOSED_EXPR, K.MEMBER_REF_EXPR) else None
            if ref is None:
                continue
            if ref.kind in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE):
                return strip_parens(node), ref.specialized_template or ref
            if ref.kind == K.VAR_DECL:
                initializer = next((c for c in ref.get_children() if c.kind != K.TYPE_REF), None)
                if initializer is not None and initializer != expression:
                    return self._direct_kernel(initializer)
        return None

    def _named_kernels(self, expression: ci.Cursor) -> Iterator[tuple[ci.Cursor | None, ci.Cursor]]:
        """(reference, kernel) for the `__global__` functions named anywhere in the expression,
        following variables to their initializers, helpers to every expression they return,
        lambda parameters to the arguments of the lambda's calls in the file, and member
        variable templates to the kernels of the file named after their `=` (reference None:
        the arguments are not known)."""
        pending, followed = [expression], set()
        while pending:
            node = pending.pop()
            for reference in (n for n in (node, *walk(node)) if n.kind in (K.DECL_REF_EXPR, K.MEMBER_REF_EXPR)):
                overloaded = next((c for c in reference.get_children() if c.kind == K.OVERLOADED_DECL_REF), None)
                targets = overloaded_decls(overloaded) if overloaded is not None else [reference.referenced]
                for target in (t for t in targets if t is not None and t not in followed):
                    if target.kind == K.VAR_DECL:
                        followed.add(target)
                        pending.extend(c for c in target.get_children() if c.kind.is_expression())
                    elif target.kind == K.PARM_DECL:
                        followed.add(target)
                        pending.extend(self.lambda_arguments(target))
                    elif target.kind == K.UNEXPOSED_DECL:  # a variable template
                        followed.add(target)
                        for name in _initializer_names(target):
                            yield from ((None, kernel) for kernel in self._kernels_named(expression, name))
                    elif target.kind in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE, K.CXX_METHOD):
                        kernel = target.specialized_template or target
                        if has_child_kind(kernel, K.CUDAGLOBAL_ATTR):
                            yield reference, kernel
                        else:  # a helper that returns the kernel to launch
                            followed.add(target)
                            pending.extend(_returned_expressions(_definition(target)))

    def _kernels_named(self, anchor: ci.Cursor, name: str) -> list[ci.Cursor]:
        """The checked file's kernels (templates) called `name`, indexed on first use."""
        if self._kernels_by_name is None:
            self._kernels_by_name = {}
            for node in _scope_members(anchor.translation_unit.cursor, self.path):
                if node.kind in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE) and has_child_kind(node, K.CUDAGLOBAL_ATTR):
                    self._kernels_by_name.setdefault(node.spelling, []).append(node)
        return self._kernels_by_name.get(name, [])

    def lambda_arguments(self, param: ci.Cursor) -> list[ci.Cursor]:
        """What the calls of a lambda stored in a variable of the file pass for its parameter
        `param` (`auto launch = [&](auto kernel) {...}; launch(a ? k1 : k2);`); none when
        `param` belongs to no such lambda."""
        if param not in self._lambda_arguments:
            self._lambda_arguments[param] = self._find_lambda_arguments(param)
        return self._lambda_arguments[param]

    def _find_lambda_arguments(self, param: ci.Cursor) -> list[ci.Cursor]:
        for top in _scope_members(param.translation_unit.cursor, self.path):
            for variable in (n for n in walk(top) if n.kind == K.VAR_DECL):
                lam = next((c for c in walk(variable) if c.kind == K.LAMBDA_EXPR), None)
                params = [c for c in lam.get_children() if c.kind == K.PARM_DECL] if lam is not None else []
                if param not in params:
                    continue
                index = params.index(param)
                return [args[index] for call in walk(top) if call.kind == K.CALL_EXPR
                        and (args := _lambda_call_arguments(call, variable)) is not None and index < len(args)]
        return []


def _kernel_references(expression: ci.Cursor, guard: ConstExpr | None, resolver: LaunchResolver,
                       depth: int = 0) -> Iterator[tuple[ci.Cursor, ConstExpr | None]]:
    """The `kern<args...>` references a launch's kernel expression may come down to, each
    with the condition under which it is the one: through `&kern<...>`, ternaries,
    `constexpr auto kernel = ...` variables (also `static constexpr auto` member variable
    templates), immediately invoked lambdas, helper functions that return one of several
    kernels (`get_kernel<T>(n)`), and the parameter of a lambda that launches whatever it is
    called with."""
    node = strip_casts(expression)
    if depth > MAX_FOLD_DEPTH:
        return
    operands = expression_children(node)
    if node.kind == K.UNARY_OPERATOR and operands:
        yield from _kernel_references(operands[-1], guard, resolver, depth + 1)
    elif node.kind == K.CONDITIONAL_OPERATOR and len(operands) == 3:
        condition = resolver.consts.value(operands[0])
        yield from _kernel_references(operands[1], _both(guard, condition), resolver, depth + 1)
        yield from _kernel_references(operands[2], _both(guard, ConstExpr("not", args=(condition,))), resolver,
                                      depth + 1)
    elif node.kind == K.DECL_REF_EXPR:
        decl = referenced_of(node)
        if decl is not None and decl.kind == K.PARM_DECL:
            for argument in resolver.lambda_arguments(decl):
                yield from _kernel_references(argument, guard, resolver, depth + 1)
            return
        initializer = _variable_initializer(node, decl)
        if initializer is None:
            yield node, guard
        elif initializer.kind in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE):
            yield initializer, guard
        else:
            yield from _kernel_references(initializer, guard, resolver, depth + 1)
    elif node.kind == K.CALL_EXPR and operands and strip_casts(operands[0]).kind == K.LAMBDA_EXPR:
        body = next((c for c in strip_casts(operands[0]).get_children() if c.kind == K.COMPOUND_STMT), None)
        for returned, condition in _returns(children(body) if body is not None else [], guard, resolver.consts):
            yield from _kernel_references(returned, condition, resolver, depth + 1)
    elif node.kind == K.CALL_EXPR and operands:
        helper = named_function(strip_parens(operands[0]))
        # any of its returns: the helper's conditions are its own
        for returned in _returned_expressions(_definition(helper) if helper is not None else None):
            yield from _kernel_references(returned, guard, resolver, depth + 1)


def _variable_initializer(node: ci.Cursor, decl: ci.Cursor | None) -> ci.Cursor | None:
    """What a reference to a variable (or a dependent reference to a member variable
    template, `kernel<IdxT, kVec>`) is initialized with."""
    if decl is not None and decl.kind == K.VAR_DECL:
        return initializer_of(decl)
    named = [c for c in node.get_children() if c.kind == K.OVERLOADED_DECL_REF]
    candidates = overloaded_decls(named[0]) if named else []
    if len(candidates) != 1:
        return None
    if candidates[0].kind == K.VAR_DECL:
        return initializer_of(candidates[0])
    if candidates[0].kind == K.UNEXPOSED_DECL:
        return _variable_template_function(candidates[0])
    return None


def _variable_template_function(template: ci.Cursor) -> ci.Cursor | None:
    """The function a variable template is initialized with (`template <...> static
    constexpr auto kernel = my_kernel<T, ...>;`): libclang exposes neither the variable nor
    its initializer, so the name after `=` is looked up in the enclosing namespaces."""
    names = _initializer_names(template)
    name = names[0] if names else ""
    scope = template.semantic_parent
    while name and scope is not None and scope.kind != K.TRANSLATION_UNIT:
        found = [c for c in children(scope) if c.kind in (K.FUNCTION_TEMPLATE, K.FUNCTION_DECL) and c.spelling == name]
        if found:
            return found[0]
        scope = scope.semantic_parent
    return None


def _initializer_names(variable_template: ci.Cursor) -> list[str]:
    """The identifiers after `=` in a variable template's declaration (libclang exposes no
    initializer cursor for it)."""
    tokens = [t.spelling for t in variable_template.get_tokens()]
    after = tokens[tokens.index("=") + 1:] if "=" in tokens else []
    return [t for t in after if t.isidentifier()]


def _returned_expressions(definition: ci.Cursor | None) -> list[ci.Cursor]:
    """Every expression a function definition returns, nested returns too (none for a declaration)."""
    if definition is None:
        return []
    return [child for node in walk(definition) if node.kind == K.RETURN_STMT
            for child in node.get_children() if child.kind.is_expression()]


def _lambda_call_arguments(call: ci.Cursor, variable: ci.Cursor) -> list[ci.Cursor] | None:
    """The arguments of `call` when it calls the lambda held by `variable`, else None."""
    parts = list(call.get_children())
    for index, part in enumerate(parts[:2]):  # `launch(x)`, or `operator()` then `launch` then `x`
        callee = strip_parens(part)
        if callee.kind == K.DECL_REF_EXPR and callee.referenced == variable:
            return parts[index + 1:]
    return None


def _returns(statements: list[ci.Cursor], guard: ConstExpr | None,
             consts: Constants) -> Iterator[tuple[ci.Cursor, ConstExpr | None]]:
    """The expressions a lambda body returns, with the `if` conditions leading to each."""
    for index, statement in enumerate(statements):
        if statement.kind == K.RETURN_STMT:
            values = expression_children(statement)
            if values:
                yield values[0], guard
            return
        if statement.kind == K.COMPOUND_STMT:
            yield from _returns(children(statement) + statements[index + 1:], guard, consts)
            return
        if statement.kind == K.IF_STMT:
            parts = children(statement)
            if len(parts) not in (2, 3) or not parts[0].kind.is_expression():
                return
            condition = consts.value(parts[0])
            yield from _returns([parts[1]], _both(guard, condition), consts)
            otherwise = [parts[2]] if len(parts) == 3 else statements[index + 1:]
            yield from _returns(otherwise, _both(guard, ConstExpr("not", args=(condition,))), consts)
            return


def _both(guard: ConstExpr | None, condition: ConstExpr) -> ConstExpr:
    return condition if guard is None else ConstExpr("&&", args=(guard, condition))


def _scope_members(scope: ci.Cursor, path: str) -> Iterator[ci.Cursor]:
    """The checked file's declarations directly in `scope` and in the namespaces inside it."""
    for child in scope.get_children():
        if child.location.file is None or child.location.file.name != path:
            continue
        yield child
        if child.kind == K.NAMESPACE:
            yield from _scope_members(child, path)


def _is_call_operator_ref(cursor: ci.Cursor) -> bool:
    if cursor.kind not in (K.DECL_REF_EXPR, K.UNEXPOSED_EXPR):
        return False  # before `referenced`: a C call, asked of every call's every child
    ref = cursor.referenced
    return ref is not None and ref.spelling == "operator()"


def _is_launch_kernel_object(cursor: ci.Cursor) -> bool:
    spelling = cursor.type.get_canonical().spelling.replace("&", "").replace("const", "").strip()
    return spelling.split("::")[-1] == "LaunchKernel"


def _designated_value(expression: ci.Cursor, field: str) -> ci.Cursor | None:
    """The value of the designated initializer `.field = value` inside `expression`
    (`config({.use_pdl = kUsePDL})`); None when no initializer names `field`."""
    for node in walk(expression):
        parts = children(node)
        if len(parts) == 2 and parts[0].kind == K.MEMBER_REF and parts[0].spelling == field:
            return parts[1]
    return None
