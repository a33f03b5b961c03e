"""The Python model: one pass over a file's `ast` into plain frozen dataclasses.

The KC5xx rules read only this model. It is built from source text alone; the checked code
is never imported or run. Dotted names are resolved through the file's own imports and
simple alias assignments, so after `from functools import lru_cache as lc` the decorator
`@lc` reads as `functools.lru_cache`, and after `reg = register_cuda_ci` the call `reg(...)`
reads as a call of `register_cuda_ci` spelled `reg`.

Resolution is lexical and deliberately simple: a name is looked up in the function that
uses it, then in the enclosing functions and the module (class bodies are skipped, as
Python does); a name bound by none of them resolves to itself.
"""

from __future__ import annotations

import ast
import enum
import re
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from .finding import Location

# CI registration helpers: register_cuda_ci, register_amd_ci, register_cpu_ci...
_CI_REGISTRATION = re.compile(r"register_[a-z0-9]+_ci")

# Tensor metadata (attributes and methods); comparing one of these is input validation.
_TENSOR_METADATA = frozenset(
    {
        "shape",
        "dtype",
        "device",
        "ndim",
        "layout",
        "is_cuda",
        "size",
        "dim",
        "numel",
        "stride",
        "is_contiguous",
        "data_ptr",
        "get_device",
    }
)
# Boolean tensor metadata, which validates without a comparison: `if not x.is_cuda:`.
_TENSOR_PREDICATES = frozenset(
    {"is_cuda", "is_cpu", "is_meta", "is_contiguous", "is_floating_point", "is_complex", "is_sparse"}
)

# Nodes that carry a source position.
_Located = ast.expr | ast.stmt | ast.keyword

_NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


# --------------------------------------------------------------------------- the model


@dataclass(frozen=True)
class Span:
    """A source range: 1-based line and character column; `end_column` is exclusive."""

    line: int
    column: int
    end_line: int
    end_column: int

    def location(self, path: str) -> Location:
        return Location(path, self.line, self.column, self.end_line, self.end_column)


class ArgumentKind(enum.Enum):
    POSITIONAL = "positional"
    KEYWORD = "keyword"
    STAR = "*args"
    DOUBLE_STAR = "**kwargs"


@dataclass(frozen=True)
class Argument:
    """One argument of a call.

    `position` is the index among the positional arguments (`POSITIONAL` and `STAR`),
    `keyword` the name of a `KEYWORD` argument. `is_literal` means a plain constant
    (`ast.Constant`), the only value an AST-reading collector can take without running code.
    """

    kind: ArgumentKind
    is_literal: bool
    span: Span
    position: int | None = None
    keyword: str | None = None


@dataclass(frozen=True)
class Call:
    """A call expression anywhere in the file, decorators included.

    `written` is the callee as spelled (`tt.do_bench`), `callee` the same name resolved
    through imports and aliases (`triton.testing.do_bench`); both are None when the callee
    is not a dotted name (`f()()`, `x[0]()`). `function` is the qualified name of the
    enclosing function (None outside functions). `is_module_statement` means the call is a
    whole statement directly in the module body, the only registrations that CI's AST
    collector reads.
    """

    callee: str | None
    written: str | None
    arguments: tuple[Argument, ...]
    span: Span
    callee_span: Span
    function: str | None
    is_module_statement: bool

    @property
    def name(self) -> str | None:
        """Last segment of the resolved callee: `load_jit`, `register_cuda_ci`..."""
        return self.callee.rpartition(".")[2] if self.callee else None

    @property
    def is_ci_registration(self) -> bool:
        return self.name is not None and _CI_REGISTRATION.fullmatch(self.name) is not None


@dataclass(frozen=True)
class Decorator:
    """A decorator; `qualified` is its resolved dotted name with any call stripped."""

    qualified: str | None
    span: Span

    @property
    def name(self) -> str | None:
        return self.qualified.rpartition(".")[2] if self.qualified else None


class CheckKind(enum.Enum):
    RAISE = "raise"
    ASSERT = "assert"
    TENSOR_TEST = "tensor test"


@dataclass(frozen=True)
class Check:
    """Input validation in a function body.

    A `TENSOR_TEST` is a condition (of an `if`, a `while` or a conditional expression) that
    compares tensor metadata (`x.dim() != 2`, `x.dtype in SUPPORTED`) or tests a boolean one
    (`if not x.is_contiguous():`), outside an `if out is None:` block (which allocates a
    default output). A comparison that only computes a value (`has_bias = b.numel() > 0`) is
    an argument, not a test.
    A test that guards a `raise` (`if x.dim() != 2: raise ...`) or sits in an `assert` is
    not listed separately: the `raise`/`assert` stands for it. `subject` is `raise`,
    `assert`, or the metadata as written (`x.dim()`).

    What a test's branches do: `converts` when they only convert inputs or keep them
    (`x = x.contiguous()`, `r if r.dtype == x.dtype else r.to(x.dtype)`); `selects` the
    resolved callees whose results they pick between when they only assign call results
    (`mod = load_a()` / `mod = load_b()`) or call an export of one (`load_a().run(x)`).
    """

    kind: CheckKind
    subject: str
    span: Span
    converts: bool = False
    selects: tuple[str, ...] = ()


@dataclass(frozen=True)
class ResultAttributeCall:
    """`value.attr(...)` where `value` came from a call of `producer` in the same function.

    Covers `module = producer(...)` (also with a conditional expression of calls, or `:=`)
    followed by `module.attr(...)`, and the chained `producer(...).attr(...)`. The binding is
    flow-insensitive: any assignment of `module` in the function counts, wherever it is.
    `producer` is resolved like `Call.callee`.
    """

    producer: str
    attribute: str
    span: Span

    @property
    def producer_name(self) -> str:
        return self.producer.rpartition(".")[2]


@dataclass(frozen=True)
class Function:
    """A `def` or `async def` at any depth; the facts cover its own body, not nested defs."""

    name: str
    qualname: str
    span: Span
    decorators: tuple[Decorator, ...]
    checks: tuple[Check, ...]
    result_calls: tuple[ResultAttributeCall, ...]

    def has_decorator(self, name: str) -> bool:
        """Whether a decorator's last name segment is `name` (`cache_once`, whatever its import)."""
        return any(decorator.name == name for decorator in self.decorators)


@dataclass(frozen=True)
class PyModel:
    path: str
    functions: tuple[Function, ...]
    calls: tuple[Call, ...]

    def calls_in(self, function: Function) -> Iterator[Call]:
        """Calls made by `function`'s own body and decorators of defs nested in it."""
        return (call for call in self.calls if call.function == function.qualname)


def path_under(rel_path: str, root: str) -> bool:
    """Whether the POSIX path `rel_path` lies under directory `root` (both project-relative)."""
    root_parts = PurePosixPath(root).parts
    path_parts = PurePosixPath(rel_path).parts
    return len(path_parts) > len(root_parts) and path_parts[: len(root_parts)] == root_parts


def build_python_model(path: str, text: str) -> PyModel:
    """Parse `text` (the contents of `path`) into a `PyModel`; raises SyntaxError if invalid."""
    with warnings.catch_warnings():
        # Invalid escape sequences and the like are the checked file's business, not ours.
        warnings.simplefilter("ignore", SyntaxWarning)
        try:
            tree = ast.parse(text, filename=path)
        except ValueError as error:  # null bytes: a ValueError before Python 3.12
            raise SyntaxError(str(error), (path, 1, 1, "")) from error
    builder = _Builder(_Positions(text))
    builder.visit(tree)
    return PyModel(path, tuple(builder.functions), tuple(builder.calls))


# --------------------------------------------------------------------------- names


def _dotted(expr: ast.AST) -> str | None:
    """`a.b.c` for a chain of attributes on a name, else None."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        base = _dotted(expr.value)
        return f"{base}.{expr.attr}" if base else None
    return None


@dataclass
class _Scope:
    """Names bound by imports and aliases in one module, class or function body."""

    parent: _Scope | None
    is_class: bool = False
    bindings: dict[str, str] = field(default_factory=dict)

    def resolve(self, dotted: str) -> str:
        head, dot, rest = dotted.partition(".")
        scope: _Scope | None = self
        while scope is not None:
            if head in scope.bindings:
                return scope.bindings[head] + dot + rest
            scope = scope.parent
            while scope is not None and scope.is_class:  # enclosing class bodies are not visible
                scope = scope.parent
        return dotted

    def resolve_expr(self, expr: ast.AST) -> str | None:
        dotted = _dotted(expr)
        return self.resolve(dotted) if dotted else None


def _own_nodes(body: Iterable[ast.AST]) -> Iterator[ast.AST]:
    """Nodes of `body` in source order, not descending into nested defs, classes or lambdas."""
    stack = list(reversed(list(body)))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _NESTED_SCOPES):
            stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _simple_assignment(node: ast.AST) -> tuple[str, ast.expr] | None:
    """(name, value) for `name = value`, `name: T = value` and `(name := value)`."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id, node.value
    if isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and isinstance(node.target, ast.Name) and node.value:
        return node.target.id, node.value
    return None


def _import_bindings(node: ast.Import | ast.ImportFrom) -> Iterator[tuple[str, str]]:
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:  # `import a.b as c` binds `c` to `a.b`
                yield alias.asname, alias.name
            else:  # `import a.b` binds only `a`
                top = alias.name.partition(".")[0]
                yield top, top
        return
    prefix = "." * node.level + (node.module or "")
    for alias in node.names:
        if alias.name != "*":
            target = f"{prefix}.{alias.name}" if node.module else prefix + alias.name
            yield alias.asname or alias.name, target


def _alias_target(value: ast.expr, scope: _Scope) -> str | None:
    """What `name = value` makes `name` call: a dotted name, or the function of a `partial`."""
    if isinstance(value, ast.Call):
        if scope.resolve_expr(value.func) == "functools.partial" and value.args:
            return scope.resolve_expr(value.args[0])
        return None
    return scope.resolve_expr(value)


def _scope_for(body: list[ast.stmt], parent: _Scope | None, *, is_class: bool = False) -> _Scope:
    scope = _Scope(parent, is_class)
    for node in _own_nodes(body):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            scope.bindings.update(_import_bindings(node))
        elif (assignment := _simple_assignment(node)) is not None:
            name, value = assignment
            if (target := _alias_target(value, scope)) is not None:
                scope.bindings[name] = target
    return scope


def _called_names(expr: ast.AST, scope: _Scope) -> tuple[str, ...]:
    """Resolved callees whose result `expr` is: `f(x)`, or `f(x) if c else g(x)`."""
    if isinstance(expr, ast.Call):
        callee = scope.resolve_expr(expr.func)
        return (callee,) if callee else ()
    if isinstance(expr, ast.IfExp):
        return _called_names(expr.body, scope) + _called_names(expr.orelse, scope)
    return ()


def _producers(body: list[ast.stmt], scope: _Scope) -> dict[str, tuple[str, ...]]:
    """Local name -> the callees whose results were assigned to it in this body."""
    produced: dict[str, tuple[str, ...]] = {}
    for node in _own_nodes(body):
        if (assignment := _simple_assignment(node)) is not None:
            name, value = assignment
            produced[name] = produced.get(name, ()) + _called_names(value, scope)
    return produced


# --------------------------------------------------------------------------- checks


def _is_metadata(expr: ast.AST, names: frozenset[str]) -> bool:
    return isinstance(expr, ast.Attribute) and expr.attr in names


def _metadata_access(expr: ast.AST) -> str | None:
    """The first tensor-metadata access inside `expr`, as written (`x.shape`, `x.dim()`)."""
    for node in ast.walk(expr):  # breadth first: a call is seen before its callee
        if isinstance(node, ast.Call) and _is_metadata(node.func, _TENSOR_METADATA):
            return f"{ast.unparse(node.func)}()"
        if _is_metadata(node, _TENSOR_METADATA):
            return ast.unparse(node)
    return None


def _predicate_access(operand: ast.expr) -> str | None:
    """`x.is_cuda` / `x.is_contiguous()` when `operand` is itself a boolean tensor property."""
    target, suffix = (operand.func, "()") if isinstance(operand, ast.Call) else (operand, "")
    return ast.unparse(target) + suffix if _is_metadata(target, _TENSOR_PREDICATES) else None


def _boolean_operands(test: ast.expr) -> Iterator[ast.expr]:
    """The operands a condition tests for truth, through `not`, `and` and `or`."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        yield from _boolean_operands(test.operand)
    elif isinstance(test, ast.BoolOp):
        for value in test.values:
            yield from _boolean_operands(value)
    else:
        yield test


def _is_none_test(test: ast.expr) -> bool:
    """`out is None`: the test of a block that fills in a default."""
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Is)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    )


def _raises_directly(body: list[ast.stmt]) -> bool:
    return any(isinstance(statement, ast.Raise) for statement in body)


# Tensor methods that convert an input into the form a kernel takes.
_CONVERSIONS = frozenset({"to", "contiguous", "float", "half", "bfloat16", "type"})


def _is_conversion(expr: ast.expr) -> bool:
    """`x.to(dtype)`, `x.contiguous()`, chains of them (`x.to(d).contiguous()`)."""
    return (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr in _CONVERSIONS
        and (isinstance(expr.func.value, (ast.Name, ast.Attribute)) or _is_conversion(expr.func.value))
    )


def _converts(values: list[ast.expr]) -> bool:
    """Whether branch values only convert inputs or keep them, at least one converting."""
    kept = all(_is_conversion(v) or isinstance(v, (ast.Name, ast.Attribute)) for v in values)
    return kept and any(_is_conversion(v) for v in values)


@dataclass(frozen=True)
class _Branches:
    """What the branches of a condition do (see `Check.converts` / `Check.selects`)."""

    converts: bool = False
    selects: tuple[str, ...] = ()


def _expression_branches(values: list[ast.expr], scope: _Scope) -> _Branches:
    if _converts(values):
        return _Branches(converts=True)
    picked = [_called_names(v, scope) for v in values]
    return _Branches(selects=tuple(n for names in picked for n in names)) if all(picked) else _Branches()


def _branch_values(statements: list[ast.stmt]) -> list[ast.expr] | None:
    """The values the statements of `if` branches assign to names or call an export of
    (`mod = load()`, `load().run(x)`, an `elif` in turn); None for any other statement."""
    values: list[ast.expr] = []
    for statement in statements:
        if isinstance(statement, ast.If):
            nested = _branch_values([*statement.body, *statement.orelse])
            if nested is None:
                return None
            values.extend(nested)
        elif (assignment := _simple_assignment(statement)) is not None:
            values.append(assignment[1])
        elif (
            isinstance(statement, (ast.Expr, ast.Return))
            and isinstance(statement.value, ast.Call)
            and isinstance(statement.value.func, ast.Attribute)
            and isinstance(statement.value.func.value, ast.Call)
        ):
            values.append(statement.value.func.value)  # `load().run(x)`: the export of `load()`
        else:
            return None
    return values


def _statement_branches(node: ast.If, scope: _Scope) -> _Branches:
    values = _branch_values([*node.body, *node.orelse])
    return _expression_branches(values, scope) if values else _Branches()


# --------------------------------------------------------------------------- the pass


class _Positions:
    """Converts `ast` positions (UTF-8 byte columns) into character spans."""

    def __init__(self, text: str) -> None:
        self._lines = _LINE_BREAK.split(text)

    def span(self, node: _Located) -> Span:
        end_line = node.end_lineno or node.lineno
        end_offset = node.end_col_offset if node.end_col_offset is not None else node.col_offset
        return Span(
            node.lineno,
            self._column(node.lineno, node.col_offset),
            end_line,
            self._column(end_line, end_offset),
        )

    def _column(self, line: int, byte_offset: int) -> int:
        text = self._lines[line - 1] if line <= len(self._lines) else ""
        if text.isascii():
            return byte_offset + 1
        return len(text.encode("utf-8")[:byte_offset].decode("utf-8", errors="replace")) + 1


@dataclass
class _FunctionFacts:
    """What is gathered while one function body is visited."""

    qualname: str
    producers: dict[str, tuple[str, ...]]
    checks: list[Check] = field(default_factory=list)
    result_calls: list[ResultAttributeCall] = field(default_factory=list)


class _Builder(ast.NodeVisitor):
    def __init__(self, positions: _Positions) -> None:
        self._positions = positions
        self._scope = _Scope(None)
        self._function: _FunctionFacts | None = None
        self._qualname: tuple[str, ...] = ()
        self._module_statements: set[int] = set()
        # > 0 while visiting the test of an `assert`, or of an `if` whose body raises.
        self._guard_depth = 0
        # > 0 while visiting the test of an `if`, `while` or conditional expression: a tensor
        # comparison elsewhere (`has_bias = bias.numel() > 0`) computes an argument, not a check.
        self._condition_depth = 0
        # > 0 inside `if out is None:`: what picks the default output's dtype or shape there
        # is part of allocating it, not a check.
        self._default_depth = 0
        # What the branches of the condition being visited do (`Check.converts` / `selects`).
        self._branches = _Branches()
        self.functions: list[Function] = []
        self.calls: list[Call] = []

    # ---- scopes

    @contextmanager
    def _entered(self, scope: _Scope, name: str, facts: _FunctionFacts | None) -> Iterator[None]:
        saved = self._scope, self._function, self._qualname
        self._scope, self._function, self._qualname = scope, facts, (*self._qualname, name)
        try:
            yield
        finally:
            self._scope, self._function, self._qualname = saved

    @contextmanager
    def _deeper(self, counter: str, active: bool = True) -> Iterator[None]:
        """`counter` (an attribute name) one higher while the block runs, when `active`."""
        setattr(self, counter, getattr(self, counter) + active)
        try:
            yield
        finally:
            setattr(self, counter, getattr(self, counter) - active)

    def _visit_all(self, nodes: Iterable[ast.AST | None]) -> None:
        for node in nodes:
            if node is not None:
                self.visit(node)

    def visit_Module(self, node: ast.Module) -> None:
        self._scope = _scope_for(node.body, None)
        self._module_statements = {
            id(statement.value)
            for statement in node.body
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)
        }
        self._visit_all(node.body)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._visit_all([*node.decorator_list, *node.bases, *node.keywords])
        with self._entered(_scope_for(node.body, self._scope, is_class=True), node.name, None):
            self._visit_all(node.body)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        # Decorators, defaults and annotations run in the enclosing scope.
        decorators = tuple(self._decorator(expr) for expr in node.decorator_list)
        self._visit_all([*node.decorator_list, node.args, node.returns])
        scope = _scope_for(node.body, self._scope)
        qualname = ".".join((*self._qualname, node.name))
        facts = _FunctionFacts(qualname, _producers(node.body, scope))
        with self._entered(scope, node.name, facts):
            self._visit_all(node.body)
        self.functions.append(
            Function(
                name=node.name,
                qualname=qualname,
                span=self._positions.span(node),
                decorators=decorators,
                checks=tuple(facts.checks),
                result_calls=tuple(facts.result_calls),
            )
        )

    visit_AsyncFunctionDef = visit_FunctionDef

    def _decorator(self, expr: ast.expr) -> Decorator:
        target = expr.func if isinstance(expr, ast.Call) else expr
        return Decorator(self._scope.resolve_expr(target), self._positions.span(expr))

    # ---- calls

    def visit_Call(self, node: ast.Call) -> None:
        written = _dotted(node.func)
        self.calls.append(
            Call(
                callee=self._scope.resolve(written) if written else None,
                written=written,
                arguments=tuple(self._arguments(node)),
                span=self._positions.span(node),
                callee_span=self._positions.span(node.func),
                function=self._function.qualname if self._function else None,
                is_module_statement=id(node) in self._module_statements,
            )
        )
        if self._function is not None and isinstance(node.func, ast.Attribute):
            self._record_result_call(node, node.func, self._function)
        self.generic_visit(node)

    def _arguments(self, node: ast.Call) -> Iterator[Argument]:
        for position, arg in enumerate(node.args):
            starred = isinstance(arg, ast.Starred)
            kind = ArgumentKind.STAR if starred else ArgumentKind.POSITIONAL
            literal = not starred and isinstance(arg, ast.Constant)
            yield Argument(kind, literal, self._positions.span(arg), position=position)
        for keyword in node.keywords:
            kind = ArgumentKind.KEYWORD if keyword.arg else ArgumentKind.DOUBLE_STAR
            literal = keyword.arg is not None and isinstance(keyword.value, ast.Constant)
            yield Argument(kind, literal, self._positions.span(keyword), keyword=keyword.arg)

    def _record_result_call(self, node: ast.Call, func: ast.Attribute, facts: _FunctionFacts) -> None:
        receiver = func.value
        if isinstance(receiver, ast.Name):
            producers = facts.producers.get(receiver.id, ())
        else:
            producers = _called_names(receiver, self._scope)
        span = self._positions.span(node)
        facts.result_calls.extend(ResultAttributeCall(p, func.attr, span) for p in producers)

    # ---- checks

    def _add_check(self, kind: CheckKind, subject: str, node: _Located, branches: _Branches = _Branches()) -> None:
        if self._function is not None:
            span = self._positions.span(node)
            self._function.checks.append(Check(kind, subject, span, branches.converts, branches.selects))

    @contextmanager
    def _branching(self, branches: _Branches) -> Iterator[None]:
        saved, self._branches = self._branches, branches
        try:
            yield
        finally:
            self._branches = saved

    def _add_tensor_test(self, subject: str | None, node: _Located) -> None:
        if subject is not None and self._guard_depth == 0 and self._condition_depth > 0 and self._default_depth == 0:
            self._add_check(CheckKind.TENSOR_TEST, subject, node, self._branches)

    def _add_predicate_tests(self, test: ast.expr) -> None:
        for operand in _boolean_operands(test):
            self._add_tensor_test(_predicate_access(operand), operand)

    def visit_Raise(self, node: ast.Raise) -> None:
        self._add_check(CheckKind.RAISE, "raise", node)
        self.generic_visit(node)

    def visit_Assert(self, node: ast.Assert) -> None:
        self._add_check(CheckKind.ASSERT, "assert", node)
        with self._deeper("_guard_depth"):
            self._visit_all([node.test, node.msg])

    def visit_If(self, node: ast.If) -> None:
        branches = _statement_branches(node, self._scope)
        with (
            self._deeper("_guard_depth", _raises_directly(node.body)),
            self._deeper("_condition_depth"),
            self._branching(branches),
        ):
            self._add_predicate_tests(node.test)
            self.visit(node.test)
        with self._deeper("_default_depth", _is_none_test(node.test)):
            self._visit_all(node.body)
        self._visit_all(node.orelse)

    def visit_While(self, node: ast.While) -> None:
        with self._deeper("_condition_depth"), self._branching(_Branches()):
            self._add_predicate_tests(node.test)
            self.visit(node.test)
        self._visit_all([*node.body, *node.orelse])

    def visit_IfExp(self, node: ast.IfExp) -> None:
        branches = _expression_branches([node.body, node.orelse], self._scope)
        with self._deeper("_condition_depth"), self._branching(branches):
            self._add_predicate_tests(node.test)
            self.visit(node.test)
        self._visit_all([node.body, node.orelse])

    def visit_Compare(self, node: ast.Compare) -> None:
        self._add_tensor_test(_metadata_access(node), node)
        self.generic_visit(node)
