"""Kernel launches, resolved once: the one `Launch` type every rule reads.

A launch is `LaunchKernel(grid, block, device)[.enable_pdl(x)](kernel, args...)`,
`kernel<<<grid, block>>>(args...)`, or a runtime API call: `cudaLaunchKernel(kernel, grid,
block, args)` or `cudaLaunchKernelEx(&config, kernel, args...)`, whose `cudaLaunchConfig_t`
local holds the grid and block and whose launch attributes set PDL; a named launch object
(`auto launch = LaunchKernel{...}; launch.enable_pdl(x); launch(kernel, args...);`) takes the
PDL flag its methods set before the launch. Its kernel expression is followed to every
kernel it can name, each with its template arguments evaluated in the launcher's scope
(`consteval`) and the condition under which it is the one launched:

* `kern<T, 8>`, `&kern<...>`, casts, either branch of a ternary (guarded by the condition);
* variables and member variables (`static constexpr auto kernel = k<T>;`) to their
  initializers, variable templates (`template <int N> static constexpr auto kernel =
  k<T, N>;`, read from their tokens by `variable_templates`) to the kernel they are
  initialized with, its arguments bound at each use (`kernel<4>` launches `k<T, 4>`);
* immediately invoked lambdas (`[] { if constexpr (c) return a<T>; else return b<T>; }()`,
  guarded by the `if` conditions) and helpers that return a kernel (`get_kernel<T>(n)`);
* the parameter of a lambda that launches whatever it is called with (`auto launch =
  [&](auto kernel) {...}; launch(k<T>);`), to the arguments of its calls.

The launcher's body is read once, through tier 1 (`program.Function.body`): its calls, and the
lambdas it stores in variables with what each call of them passes. Template arguments and
conditions are evaluated by `consteval` (tier 1: it reads what they spell). The
tensors a launch's arguments carry come from the launcher's body walk (kernel_interface.py),
which fills `Launch.tensors`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from ..model import ConstExpr, Function, FunctionKind, Launch, LaunchedKernel, PdlFlag, Span
from .consteval import (
    MAX_FOLD_DEPTH,
    Constants,
    Returns,
    named_function,
    returns_of,
    template_param_names,
)
from .cursors import source_text
from .program import (
    DeclKind,
    DeclRef,
    Expr,
    ExprKind,
    Program,
    Stmt,
    StmtKind,
    Token,
    Var,
    angle_groups,
)
from .program import Function as FunctionCode
from .variable_templates import VariableTemplate, argument_value, initialized_function, read_variable_template

# the runtime's launch calls taking an array of the kernel arguments' addresses: the positions
# of the kernel and of the array among their arguments
_ARRAY_LAUNCHES = {"cudaLaunchKernel": (0, 3), "cudaLaunchCooperativeKernel": (0, 3), "cudaLaunchKernelExC": (1, 2)}
# the runtime's launch calls taking a `cudaLaunchConfig_t*` first (grid, block and attributes)
_CONFIG_LAUNCHES = frozenset({"cudaLaunchKernelEx", "cudaLaunchKernelExC"})
# the launch attribute field that turns PDL on (`attrs[0].val.programmaticStreamSerializationAllowed = 1`)
_PDL_ATTRIBUTE_FIELD = "programmaticStreamSerializationAllowed"
_ATTRIBUTES_FIELD = "attrs"  # a `cudaLaunchConfig_t`'s array of launch attributes
LAUNCH_CONFIG_FUNCTIONS = ("cudaConfigureCall", "__cudaPushCallConfiguration")
# what a launcher's method that turns PDL on sets (`with_attr(use_pdl)` of a tree's own launcher)
_PDL_ATTRIBUTE = frozenset(
    {"cudaLaunchAttributeProgrammaticStreamSerialization", "programmaticStreamSerializationAllowed"}
)
# statements whose parts run only under a condition (or not at all, or many times)
_CONDITIONAL_STATEMENTS = (
    StmtKind.IF,
    StmtKind.FOR,
    StmtKind.RANGE_FOR,
    StmtKind.WHILE,
    StmtKind.DO,
    StmtKind.SWITCH,
    StmtKind.CASE,
)


@dataclass(frozen=True)
class _Arguments:
    """A kernel's explicit template arguments at a launch: evaluated (() when their positions
    cannot be told apart) and as written, whitespace collapsed."""

    values: tuple[ConstExpr, ...]
    texts: tuple[str, ...]


@dataclass
class _Code:
    """What one traversal of a body (lambda bodies and discarded `if constexpr` branches
    included: a launch written there is the launcher's) finds: its calls, its variables and
    the values it returns and assigns to its variables."""

    expressions: list[Expr] = field(default_factory=list)  # pre-order, each lambda's body after it
    calls: list[Expr] = field(default_factory=list)
    variables: list[Var] = field(default_factory=list)
    returned: list[Expr] = field(default_factory=list)
    assigned: dict[int, list[Expr]] = field(default_factory=dict)  # `x = value`, by variable (`DeclRef.key`)
    # `launch.enable_pdl(x)`: the calls of a variable's methods, by variable, each with whether
    # it runs only under a condition (a branch or a loop of the body)
    method_calls: dict[int, list[tuple[Expr, bool]]] = field(default_factory=dict)
    # the values given to a launch attribute's PDL field (assigned or designated), in source
    # order, each with whether it is given only under a condition
    attribute_values: list[tuple[Expr, bool]] = field(default_factory=list)
    # the arrays given to a launch configuration's attributes (`config.attrs = attrs;`)
    attribute_arrays: list[Expr] = field(default_factory=list)

    @classmethod
    def of(cls, body: Stmt) -> _Code:
        code = cls()
        code._statement(body)
        return code

    def _statement(self, stmt: Stmt) -> None:
        pending = [(stmt, False)]
        while pending:
            node, conditional = pending.pop()
            for var in node.variables:
                self.variables.append(var)
                for expr in var.exprs:
                    self._expression(expr, conditional)
            for expr in node.exprs:
                self._expression(expr, conditional)
            if node.kind is StmtKind.RETURN and node.exprs:
                self.returned.append(node.exprs[0])
            nested = conditional or node.kind in _CONDITIONAL_STATEMENTS
            pending.extend((child, nested) for child in reversed(node.stmts))

    def _expression(self, expr: Expr, conditional: bool = False) -> None:
        for node in expr.walk():
            self.expressions.append(node)
            if node.kind is ExprKind.CALL:
                self.calls.append(node)
                variable = _method_call_object(node)
                if variable is not None:
                    self.method_calls.setdefault(variable, []).append((node, conditional))
            elif node.kind is ExprKind.BINARY and len(node.children) == 2 and node.operator == "=":
                target = node.children[0].stripped()
                if target.kind is ExprKind.REF and target.ref is not None and target.ref.kind is DeclKind.VARIABLE:
                    self.assigned.setdefault(target.ref.key, []).append(node.children[1])
                elif target.kind is ExprKind.MEMBER:
                    self._launch_field(target.name, node.children[1], conditional)
            elif node.kind is ExprKind.INIT_LIST:  # `{.attrs = attrs}`: a designator names the field
                for element in node.children:
                    if element.designator and element.children:
                        self._launch_field(element.designator, element.children[0], conditional)
            elif node.kind is ExprKind.LAMBDA and node.lambda_body is not None:
                self._statement(node.lambda_body)

    def _launch_field(self, name: str, value: Expr, conditional: bool) -> None:
        """Keep a value given to a launch attribute's PDL field or to a config's attributes."""
        if name == _PDL_ATTRIBUTE_FIELD:
            self.attribute_values.append((value, conditional))
        elif name == _ATTRIBUTES_FIELD:
            self.attribute_arrays.append(value)

    def bound(self) -> dict[int, list[Expr]]:
        """By local name (`DeclRef.key`), the values the body gives it besides its declaration:
        to a variable, what it assigns (`kernel = k3<T>;`); to the parameter of a lambda it
        stores in a variable, what the calls of that lambda pass (`auto launch = [&](auto
        kernel) {...}; launch(a ? k1 : k2);`)."""
        passed: dict[int, list[Expr]] = dict(self.assigned)
        for variable in self.variables:
            lam = next((n for e in variable.exprs for n in e.walk() if n.kind is ExprKind.LAMBDA), None)
            params = lam.lambda_params if lam is not None else ()
            for index, param in enumerate(params):
                if param.key in passed:
                    continue
                passed[param.key] = [
                    args[index]
                    for call in self.calls
                    if (args := _lambda_call_arguments(call, variable)) is not None and index < len(args)
                ]
        return passed


class LaunchResolver:
    """Per translation unit: finds the launches in a body and resolves their kernels."""

    def __init__(self, program: Program, data: bytes) -> None:
        self.program = program
        self.path = program.path
        self.data = data
        self.consts = Constants(data, program.path)
        self._files: dict[str, bytes] = {program.path: data}  # the bytes template arguments are read from
        self._returned: dict[int, list[Expr]] = {}  # by function declaration (`DeclRef.key`)
        self._pdl_methods: dict[int, bool] = {}  # by method declaration (`DeclRef.key`): whether it turns PDL on

    def launches(self, code: FunctionCode, launcher: Function) -> Iterator[tuple[Launch, list[DeclRef]]]:
        """Each launch in a function's body, with the declarations of the kernels it can launch;
        none in a body nested too deeply for tier 1 (a generated `else if` chain of hundreds,
        as kernel-selection helpers have: its launches are not seen)."""
        tree = code.buildable_body
        if tree is None:
            return
        body = _Code.of(tree)
        bound = body.bound()
        arrays = {v.key: held for v in body.variables if (held := array_elements(v)) is not None}
        # in source order, an enclosing call before those inside it (as a pre-order walk)
        for call in sorted(body.calls, key=lambda c: (c.span.start, -c.span.end)):
            parts = _launch_kernel_parts(call) or _chevron_parts(call) or _api_launch_parts(call, arrays)
            if parts is not None:
                syntax, kernel, arguments, launch_object = parts
                if launch_object is not None:
                    pdl = self._launch_flag(launch_object, call, body)
                else:
                    pdl = self._attribute_flag(call, body) if launch_config(call) is not None else None
                yield self._launch(call, launcher, syntax, kernel, arguments, pdl, bound)

    def _launch(
        self,
        call: Expr,
        launcher: Function,
        syntax: str,
        kernel: Expr,
        arguments: tuple[Expr, ...],
        pdl: PdlFlag | None,
        bound: dict[int, list[Expr]],
    ) -> tuple[Launch, list[DeclRef]]:
        found = _Resolution(self, bound).kernels(kernel)
        spans = tuple(a.written_span for a in arguments)
        launch = Launch(
            span=call.written_span,
            syntax=syntax,
            launcher=launcher.qualified_name,
            launcher_usr=launcher.usr,
            kernels=tuple(found),
            argument_texts=tuple(_argument_text(self.data, a, spans) for a in arguments),
            argument_spans=spans,
            pdl=pdl,
        )
        return launch, list(found.values())

    def _launch_flag(self, launch_object: Expr, call: Expr, body: _Code) -> PdlFlag | None:
        """The PDL flag of the launch object `call` calls: set in its own expression
        (`LaunchKernel(...).enable_pdl(x)(...)`), else, for a named launch object (`auto launch =
        LaunchKernel{...}; launch.enable_pdl(x); launch(kernel, ...);`), by the last call of its
        methods that sets it before this launch, or by its initializer. A flag set only under
        a condition of the launcher's (`if (pdl) launch.enable_pdl();`) may be on or off: its
        value is not known."""
        flag = self._pdl_flag(launch_object)
        named = _launch_object_variable(launch_object)
        if flag is not None or named is None:
            return flag
        calls = body.method_calls.get(named.key, ())
        earlier = [(c, conditional) for c, conditional in calls if c.span.end <= call.span.start]
        for method_call, conditional in reversed(earlier):
            flag = self._pdl_flag(method_call)
            if flag is not None:
                return PdlFlag(ConstExpr("unknown", text=flag.text), flag.text) if conditional else flag
        declaration = next((v for v in body.variables if v.key == named.key), None)
        initializer = declaration.exprs[-1] if declaration is not None and declaration.exprs else None
        return self._pdl_flag(initializer) if initializer is not None else None

    def _attribute_flag(self, call: Expr, body: _Code) -> PdlFlag | None:
        """The PDL flag of a `cudaLaunchKernelEx(&config, ...)` launch: the value the launcher
        last gives a launch attribute's `programmaticStreamSerializationAllowed` before the
        call (unknown when it does so only under a condition). Where it gives none: unknown
        when the config takes attributes the body does not fill (`config.attrs = attrs;`, a
        parameter: its caller may turn PDL on), else None (no PDL)."""
        earlier = [(v, c) for v, c in body.attribute_values if v.span.end <= call.span.start]
        if not earlier:
            local = {v.key for v in body.variables}
            given = [a for a in body.attribute_arrays if a.span.end <= call.span.start]
            foreign = [a for a in given if (ref := _named_variable(a)) is None or ref.key not in local]
            text = " ".join(source_text(self.data, foreign[-1].span).split()) if foreign else ""
            return PdlFlag(ConstExpr("unknown", text=text), text) if foreign else None
        value, conditional = earlier[-1]
        flag = self._flag(value)
        return PdlFlag(ConstExpr("unknown", text=flag.text), flag.text) if conditional else flag

    def _pdl_flag(self, launch_object: Expr) -> PdlFlag | None:
        """`x` of `.enable_pdl(x)` or `.config({.use_pdl = x, ...})`, or of another method of
        the launch object that sets the PDL launch attribute (`.with_attr(use_pdl)`)."""
        for node in launch_object.walk():
            if node.kind is ExprKind.CALL and (node.name == "enable_pdl" or self._sets_pdl(node)):
                args = [c for c in node.children if c.kind is not ExprKind.MEMBER]
                if not args:  # `enable_pdl()` uses its default argument, true
                    return PdlFlag(ConstExpr("int", 1), "true")
                return self._flag(args[0])
            if node.kind is ExprKind.CALL and node.name == "config":
                value = next((n.children[0] for n in node.walk() if n.designator == "use_pdl" and n.children), None)
                if value is not None:
                    return self._flag(value)
        return None

    def _sets_pdl(self, call: Expr) -> bool:
        """Whether `call` calls a method (`launch.with_attr(use_pdl)`) whose body sets the
        programmatic-stream-serialization launch attribute: a launcher of the tree's own
        whose PDL switch has another name than `enable_pdl`."""
        callee = call.children[0].stripped() if call.children else None
        if callee is None or callee.kind is not ExprKind.MEMBER or call.ref is None:
            return False
        key = call.ref.key
        if key not in self._pdl_methods:
            definition = self.program.definition(call.ref)
            body = definition.buildable_body if definition is not None else None
            expressions = _Code.of(body).expressions if body is not None else []
            self._pdl_methods[key] = any(node.name in _PDL_ATTRIBUTE for node in expressions)
        return self._pdl_methods[key]

    def _flag(self, value: Expr) -> PdlFlag:
        text = " ".join(source_text(self.data, value.span).split())
        return PdlFlag(self.consts.value(value), text or "true")

    def candidate(self, arguments: _Arguments | None, declaration: DeclRef, guard: ConstExpr | None) -> LaunchedKernel:
        """The kernel `declaration` launched with `arguments` (None: not known)."""
        return LaunchedKernel(
            name=declaration.name,
            usr=declaration.usr,
            template_params=template_param_names(declaration),
            template_args=arguments.values if arguments is not None else (),
            template_arg_texts=arguments.texts if arguments is not None else (),
            guard=guard,
        )

    def arguments_of(self, reference: Expr) -> _Arguments:
        """The explicit template arguments of a reference: evaluated in its scope, and as
        written (`Cfg<A, B>`, `true`), split at the commas of its outermost `<...>`."""
        groups, _ = angle_groups(reference.tokens)
        return _Arguments(
            self.consts.template_args(reference) or (), tuple(self.token_text(tokens) for tokens in groups)
        )

    def token_text(self, tokens: Sequence[Token]) -> str:
        first, last = tokens[0], tokens[-1]
        written = self._bytes(first.file)[first.start : last.end] if first.file and first.file == last.file else b""
        return " ".join(written.decode("utf-8", errors="replace").split())

    def _bytes(self, path: str) -> bytes:
        """A file's bytes: the checked file's as given, a header's from disk."""
        if path not in self._files:
            try:
                with open(path, "rb") as file:
                    self._files[path] = file.read()
            except OSError:
                self._files[path] = b""
        return self._files[path]

    def returned(self, declaration: DeclRef | None) -> list[Expr]:
        """Every expression a function returns, nested returns too; none without a body, and
        none for a helper nested too deeply for tier 1 (a generated `else if` chain of
        hundreds: the launch keeps what its own expression names)."""
        if declaration is None:
            return []
        key = declaration.key
        if key not in self._returned:
            definition = self.program.definition(declaration)
            body = definition.buildable_body if definition is not None else None
            self._returned[key] = _Code.of(body).returned if body is not None else []
        return self._returned[key]


class _Resolution:
    """The kernels one launch's kernel expression can name."""

    def __init__(self, resolver: LaunchResolver, bound: dict[int, list[Expr]]) -> None:
        self.resolver = resolver
        self.consts = resolver.consts
        self.bound = bound  # what the launcher assigns to its variables and passes to its lambdas

    def kernels(self, expression: Expr) -> dict[LaunchedKernel, DeclRef]:
        """Every kernel `expression` can name (the one it names directly first), with its
        declaration; one entry per (kernel, written template arguments)."""
        found: dict[tuple[str, tuple[str, ...]], tuple[LaunchedKernel, DeclRef]] = {}

        def add(
            arguments: _Arguments | None, declaration: DeclRef, guard: ConstExpr | None
        ) -> tuple[str, tuple[str, ...]]:
            kernel = self.resolver.candidate(arguments, declaration, guard)
            key = (kernel.usr, kernel.template_arg_texts)
            found.setdefault(key, (kernel, declaration))
            return key

        for arguments, declaration, guard in self._selected(expression, None, 0):
            if declaration is not None:
                add(arguments, declaration, guard)
        for arguments, declaration in self._named(expression):
            add(arguments, declaration, None)
        direct = self._direct(expression)
        if direct is not None:
            key = add(*direct, None)
            found = {key: found[key], **found}
        return dict(found.values())

    def _selected(
        self, expression: Expr, guard: ConstExpr | None, depth: int
    ) -> Iterator[tuple[_Arguments | None, DeclRef | None, ConstExpr | None]]:
        """(template arguments, function, guard) for the `kern<args...>` references a launch's kernel
        expression may come down to, each with the condition under which it is the one:
        through `&kern<...>`, ternaries, `constexpr auto kernel = ...` variables (also
        `static constexpr auto` member variable templates), immediately invoked lambdas,
        helper functions that return one of several kernels (`get_kernel<T>(n)`), and the
        parameter of a lambda that launches whatever it is called with."""
        node = expression.uncast()
        if depth > MAX_FOLD_DEPTH:
            return
        operands = node.children
        if node.kind is ExprKind.UNARY and operands:
            yield from self._selected(operands[-1], guard, depth + 1)
        elif node.kind is ExprKind.CONDITIONAL and len(operands) == 3:
            condition = self.consts.value(operands[0])
            yield from self._selected(operands[1], _both(guard, condition), depth + 1)
            yield from self._selected(operands[2], _both(guard, ConstExpr("not", args=(condition,))), depth + 1)
        elif node.kind is ExprKind.REF:
            decl = node.ref
            if decl is not None and decl.kind is DeclKind.PARAMETER:
                for argument in self.bound.get(decl.key, ()):
                    yield from self._selected(argument, guard, depth + 1)
                return
            initializer = self._variable_initializer(node, decl)
            if initializer is None:
                yield self.resolver.arguments_of(node), named_function(node), guard
            elif isinstance(initializer, Expr):
                yield from self._selected(initializer, guard, depth + 1)
            else:  # a variable template: the function it is initialized with, bound at this use
                function = initialized_function(*initializer)
                yield (self._bound(node, initializer[1]) if function is not None else None), function, guard
            for value in self.bound.get(decl.key, ()) if decl is not None else ():  # assigned later
                yield from self._selected(value, guard, depth + 1)
        elif node.kind is ExprKind.CALL and operands and operands[0].uncast().kind is ExprKind.LAMBDA:
            body = operands[0].uncast().lambda_body
            returns = returns_of(self.resolver.program, body, only_returns=False) if body is not None else None
            for returned, returned_guard in self._returns(returns, guard):
                yield from self._selected(returned, returned_guard, depth + 1)
        elif node.kind is ExprKind.CALL and operands:
            # any of its returns: the helper's conditions are its own
            for returned in self.resolver.returned(named_function(operands[0].stripped())):
                yield from self._selected(returned, guard, depth + 1)

    def _returns(
        self, returns: Returns[Expr] | None, guard: ConstExpr | None
    ) -> Iterator[tuple[Expr, ConstExpr | None]]:
        """The expressions a lambda body returns, with the `if` conditions leading to each."""
        if returns is None:
            return
        if returns.condition is None:
            if returns.value is not None:
                yield returns.value, guard
            return
        condition = self.consts.value(returns.condition)
        yield from self._returns(returns.taken, _both(guard, condition))
        yield from self._returns(returns.otherwise, _both(guard, ConstExpr("not", args=(condition,))))

    def _variable_initializer(self, node: Expr, decl: DeclRef | None) -> Expr | tuple[DeclRef, VariableTemplate] | None:
        """What a reference to a variable (or a dependent reference to a member variable
        template, `kernel<IdxT, kVec>`) is initialized with: an expression, or the variable
        template as read from its tokens."""
        if decl is not None and decl.kind is DeclKind.VARIABLE:
            return self.resolver.program.initializer(decl)
        candidates = node.candidates
        if len(candidates) != 1:
            return None
        if candidates[0].kind is DeclKind.VARIABLE:
            return self.resolver.program.initializer(candidates[0])
        template = read_variable_template(candidates[0])
        return (candidates[0], template) if template is not None else None

    def _bound(self, use: Expr, template: VariableTemplate) -> _Arguments:
        """The arguments of the kernel a variable template is initialized with, at one use of
        it (`kernel<4>`): the template's own parameters take the use's arguments (or their
        defaults); every other argument is what the initializer writes."""
        given = self.resolver.arguments_of(use)
        bound: dict[str, tuple[str, ConstExpr]] = {}
        for index, param in enumerate(template.params):
            if index < len(given.texts):
                text = given.texts[index]
                bound[param.name] = (
                    text,
                    given.values[index] if index < len(given.values) else ConstExpr("unknown", text=text),
                )
            elif param.default:
                bound[param.name] = self._declared(param.default, template)
        pairs = [
            bound[group[0].spelling]
            if len(group) == 1 and group[0].spelling in bound
            else self._declared(group, template)
            for group in template.arguments
        ]
        return _Arguments(tuple(value for _, value in pairs), tuple(text for text, _ in pairs))

    def _declared(self, tokens: tuple[Token, ...], template: VariableTemplate) -> tuple[str, ConstExpr]:
        """(text, value) of an argument as the variable template's declaration writes it."""
        text = self.resolver.token_text(tokens)
        return text, argument_value(tokens, text, template)

    def _named(self, expression: Expr) -> Iterator[tuple[_Arguments | None, DeclRef]]:
        """(template arguments, kernel) for the `__global__` functions named anywhere in the expression,
        following variables to their initializers, helpers to every expression they return,
        lambda parameters to the arguments of the lambda's calls, and member variable
        templates to the kernels of the file named after their `=` (reference None: the
        arguments are not known)."""
        pending, followed = [expression], set()
        while pending:
            node = pending.pop()
            for reference in _written(node):
                if reference.kind not in (ExprKind.REF, ExprKind.MEMBER):
                    continue
                targets = reference.candidates or ((reference.ref,) if reference.ref is not None else ())
                for target in (t for t in targets if t.key not in followed):
                    if target.kind is DeclKind.VARIABLE:
                        followed.add(target.key)
                        variable = self.resolver.program.declared_variable(target)
                        pending.extend((*variable.exprs, *self.bound.get(target.key, ())))
                    elif target.kind is DeclKind.PARAMETER:
                        followed.add(target.key)
                        pending.extend(self.bound.get(target.key, ()))
                    elif (template := read_variable_template(target)) is not None:  # bound at each use
                        arguments = self._bound(reference, template)
                        program = self.resolver.program
                        for name in template.initializer_names:
                            bound = arguments if name == template.function_name else None
                            yield from ((bound, kernel) for kernel in program.kernels_named(expression, name))
                    elif target.kind is DeclKind.FUNCTION and not target.is_special_member:
                        kernel = target.template
                        if kernel.function_kind is FunctionKind.KERNEL:
                            yield self.resolver.arguments_of(reference), kernel
                        else:  # a helper that returns the kernel to launch
                            followed.add(target.key)
                            pending.extend(self.resolver.returned(target))

    def _direct(self, expression: Expr) -> tuple[_Arguments, DeclRef] | None:
        """(template arguments, function) of the first function the expression names, following a
        variable to its initializer: the kernel a launch names when nothing selects one."""
        for node in _written(expression):
            if node.candidates:  # a dependent `kern<T>`: this reference spells the arguments
                declaration = named_function(node)
                return (self.resolver.arguments_of(node), declaration) if declaration is not None else None
            ref = node.ref if node.kind in (ExprKind.REF, ExprKind.IMPLICIT, ExprKind.MEMBER) else None
            if ref is None:
                continue
            if ref.kind is DeclKind.FUNCTION and not ref.is_method and not ref.is_special_member:
                return self.resolver.arguments_of(node.stripped()), ref.template
            if ref.kind is DeclKind.VARIABLE:
                initializer = self.resolver.program.initializer(ref)
                if initializer is not None and not initializer.same_node(expression):
                    return self._direct(initializer)
        return None


def _written(expression: Expr) -> Iterator[Expr]:
    """Every expression in `expression`, pre-order, the bodies of its lambdas included."""
    for node in expression.walk():
        yield node
        if node.kind is ExprKind.LAMBDA and node.lambda_body is not None:
            yield from _Code.of(node.lambda_body).expressions


def launch_arguments(call: Expr, arrays: dict[int, tuple[Expr, ...]]) -> tuple[Expr, ...] | None:
    """The kernel arguments of a launch call, in order (None: `call` launches nothing);
    `arrays`: the elements of the body's local arrays (`array_elements`), by variable."""
    parts = _launch_kernel_parts(call) or _chevron_parts(call) or _api_launch_parts(call, arrays)
    return parts[2] if parts is not None else None


def _argument_text(data: bytes, argument: Expr, spans: tuple[Span, ...]) -> str:
    """An argument as written; inside a macro expansion (no text of its own, or the extent
    of the whole invocation, which every argument shares), the name it refers to (else "")."""
    text = source_text(data, argument.span)
    if text.strip() and spans.count(argument.span) == 1:
        return text
    node = argument.stripped()
    return node.ref.name if node.kind is ExprKind.REF and node.ref is not None else ""


def array_elements(variable: Var) -> tuple[Expr, ...] | None:
    """What a local array initialized from a list holds (`void* args[] = {&a, &n}`: `a`, `n`,
    the values its elements point at when they take addresses)."""
    initializer = variable.exprs[-1].stripped() if variable.exprs else None
    if initializer is None or initializer.kind is not ExprKind.INIT_LIST:
        return None
    elements = [e.stripped() for e in initializer.children]
    return tuple(
        e.children[0].stripped() if e.kind is ExprKind.UNARY and e.operator == "&" and e.children else e
        for e in elements
    )


def _api_launch_parts(
    call: Expr, arrays: dict[int, tuple[Expr, ...]]
) -> tuple[str, Expr, tuple[Expr, ...], None] | None:
    """The kernel and its arguments of a runtime API launch: `cudaLaunchKernel((void*)kernel,
    grid, block, args, ...)` and `cudaLaunchKernelExC(&config, (void*)kernel, args)`, `args`
    a local array of the arguments' addresses (its elements: what they point at), and
    `cudaLaunchKernelEx(&config, kernel, args...)`."""
    name, arguments = _called_name(call), call.children[1:]
    if name == "cudaLaunchKernelEx" and len(arguments) >= 2:
        return "runtime_api", arguments[1].stripped(), tuple(arguments[2:]), None
    if name not in _ARRAY_LAUNCHES or len(arguments) <= _ARRAY_LAUNCHES[name][1]:
        return None
    kernel_at, array_at = _ARRAY_LAUNCHES[name]
    array = arguments[array_at].stripped()
    held = arrays.get(array.ref.key) if array.kind is ExprKind.REF and array.ref is not None else None
    return ("runtime_api", arguments[kernel_at].stripped(), held, None) if held is not None else None


def launch_config(call: Expr) -> DeclRef | None:
    """The `cudaLaunchConfig_t` local whose address a `cudaLaunchKernelEx(&config, ...)` launch
    passes (None for other calls, or a config that is not a local's)."""
    if _called_name(call) not in _CONFIG_LAUNCHES or len(call.children) < 2:
        return None
    ref = _named_variable(call.children[1])
    return ref if ref is not None and ref.kind is DeclKind.VARIABLE else None


def _named_variable(expression: Expr) -> DeclRef | None:
    """The declaration an expression names, directly or by its address (`attrs`, `&config`,
    a cast of either)."""
    node = expression.uncast()
    if node.kind is ExprKind.UNARY and node.operator == "&" and node.children:
        node = node.children[0].uncast()
    return node.ref if node.kind is ExprKind.REF else None


def _called_name(call: Expr) -> str:
    """The name a call calls; in a template, a call with a dependent argument (`(void*)kernel`
    of `auto kernel = k<T>`) has none of its own: the name its callee's overload set spells."""
    if call.name or not call.children:
        return call.name
    callee = call.children[0].stripped()
    names = {d.name for d in callee.candidates} if callee.kind is ExprKind.REF else set()
    return names.pop() if len(names) == 1 else ""


def _launch_kernel_parts(call: Expr) -> tuple[str, Expr, tuple[Expr, ...], Expr] | None:
    """`LaunchKernel(grid, block, device)[.enable_pdl(x)](kernel, args...)`."""
    parts = [c for c in call.children if not _is_call_operator_ref(c)]
    # a member call (`.enable_pdl(x)` itself)
    if len(parts) < 2 or parts[0].kind is ExprKind.MEMBER or not _is_launch_kernel_object(parts[0]):
        return None
    return "launch_kernel", parts[1], tuple(parts[2:]), parts[0]


def _chevron_parts(call: Expr) -> tuple[str, Expr, tuple[Expr, ...], None] | None:
    """`kernel<<<grid, block>>>(args...)`: a call whose config child calls cudaConfigureCall."""
    parts = call.children
    config = [c for c in parts if c.kind is ExprKind.CALL and c.name in LAUNCH_CONFIG_FUNCTIONS]
    if not config or not parts:
        return None
    return "triple_chevron", parts[0], tuple(c for c in parts[1:] if c not in config), None


def launch_dimensions(call: Expr) -> tuple[Expr, Expr] | None:
    """The grid and block expressions of a launch call: the first two arguments of the
    `LaunchKernel(...)` object it calls (through `.enable_pdl(x)` and the like), or the
    `<<<grid, block>>>` of a chevron launch; None for a named launch object."""
    chevron = _chevron_parts(call)
    if chevron is not None:
        config = next(c for c in call.children if c.kind is ExprKind.CALL and c.name in LAUNCH_CONFIG_FUNCTIONS)
        arguments = config.arguments
    else:
        parts = _launch_kernel_parts(call)
        if parts is None:
            return None
        node = parts[3].stripped()
        while node.kind is ExprKind.CALL and node.children and node.children[0].stripped().kind is ExprKind.MEMBER:
            member = node.children[0].stripped()
            node = member.children[0].stripped() if member.children else member
        arguments = node.arguments if node.kind is ExprKind.CALL else node.children
    return (arguments[0], arguments[1]) if len(arguments) >= 2 else None


def _is_call_operator_ref(expr: Expr) -> bool:
    if expr.kind not in (ExprKind.REF, ExprKind.IMPLICIT):
        return False  # before `ref`: a C call, asked of every call's every child
    return expr.ref is not None and expr.ref.name == "operator()"


def _method_call_object(call: Expr) -> int | None:
    """The variable (`DeclRef.key`) whose method a call calls directly: `launch` of
    `launch.enable_pdl(x)`; None for other calls."""
    callee = call.children[0].stripped() if call.children else None
    if callee is None or callee.kind is not ExprKind.MEMBER or not callee.children:
        return None
    base = callee.children[0].stripped()
    ref = base.ref if base.kind is ExprKind.REF else None
    return ref.key if ref is not None and ref.kind is DeclKind.VARIABLE else None


def _launch_object_variable(launch_object: Expr) -> DeclRef | None:
    """The local variable a launch object expression starts from (`launch` of `launch(...)`
    or `launch.enable_pdl(x)(...)`), when it holds a `LaunchKernel`."""
    node = launch_object.stripped()
    while node.kind is ExprKind.CALL and node.children and node.children[0].stripped().kind is ExprKind.MEMBER:
        member = node.children[0].stripped()
        if not member.children:
            return None
        node = member.children[0].stripped()
    ref = node.ref if node.kind is ExprKind.REF else None
    is_variable = ref is not None and ref.kind is DeclKind.VARIABLE
    return ref if is_variable and _is_launch_kernel_object(node) else None


def _is_launch_kernel_object(expr: Expr) -> bool:
    spelling = expr.type.canonical.replace("&", "").replace("const", "").strip()
    return spelling.split("::")[-1] == "LaunchKernel"


def _lambda_call_arguments(call: Expr, variable: Var) -> tuple[Expr, ...] | None:
    """The arguments of `call` when it calls the lambda held by `variable`, else None."""
    parts = call.children
    for index, part in enumerate(parts[:2]):  # `launch(x)`, or `operator()` then `launch` then `x`
        callee = part.stripped()
        if callee.kind is ExprKind.REF and callee.ref is not None and callee.ref.key == variable.key:
            return parts[index + 1 :]
    return None


def _both(guard: ConstExpr | None, condition: ConstExpr) -> ConstExpr:
    return condition if guard is None else ConstExpr("&&", args=(guard, condition))
