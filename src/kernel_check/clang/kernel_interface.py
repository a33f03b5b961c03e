"""What each function checks about, and hands across, the host/kernel interface: one walk
per function body over its tier-1 tree (`program.py`), the ancestors of each node kept on
the walk's own stack.

Host functions: `TensorMatcher` chains, `data_ptr()` uses and the launch arguments they
feed (directly, through local pointers, or through params-struct fields: `Launch.tensors`
of the launches launches.py resolved), TensorView inspections and the context they sit in,
TensorViews handed to other functions, and calls of CUDA APIs / arch queries / host check
functions with how their result is used.

Kernels and device functions: vectorized global accesses through pointers that came in
as parameters (or pointer fields of a by-value params struct), followed through local
copies, casts, arithmetic and `pointer::offset` (the rules of `provenance.py`, shared with
the data-flow facts), plus the pointers passed on to other device functions.

Both sides share the one walk, the per-body state and the API-call facts, so they stay one
module. Compile-time values stay symbolic over template parameters (`ConstExpr`,
consteval.py) so that a rule can evaluate them per instantiation. What a node spells beyond
its tier-1 facts (template arguments, written types, a record's fields) the evaluators of
tier 1 (consteval, provenance) read for it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from ..model import (
    AlignmentRequest,
    AlignmentTest,
    ApiCall,
    ConstExpr,
    DataHandOff,
    Function,
    FunctionKind,
    LaunchTensorArgument,
    MatcherChain,
    MatcherDType,
    ParameterTest,
    PointerPass,
    SourceModel,
    Span,
    TemplateCheck,
    TensorDataUse,
    TensorHandOff,
    TensorInspection,
    VectorAccess,
    VerifiedTensor,
    VolatileRead,
)
from . import program as tier1
from .consteval import (
    Constants,
    VectorType,
    bare_record_name,
    callee_name,
    member_name,
    referenced_function,
    template_param_names,
    written_type_names,
)
from .launches import array_elements, launch_arguments
from .program import DeclKind, DeclRef, Expr, ExprKind, Program, Stmt, StmtKind, TypeFacts, Var
from .provenance import (
    Origin,
    Origins,
    initializer_list_fields,
    origins_of,
    parameter,
    record_fields,
    referred_record_fields,
    structured_binding,
)

Node = Stmt | Var | Expr

# ---- small node helpers --------------------------------------------------------------------


def is_tensor_type(type_: TypeFacts) -> bool:
    return type_.unqualified.rstrip("&").strip() in ("tvm::ffi::TensorView", "tvm::ffi::Tensor")


def _is_named_record(type_: TypeFacts, name: str) -> bool:
    return bare_record_name(type_.unqualified) == name or bare_record_name(type_.spelling) == name


def _member_call_object(call: Expr) -> Expr | None:
    """`obj` of `obj.method(...)`."""
    if call.is_construction or not call.children:
        return None
    callee = call.children[0].stripped()
    if callee.kind is not ExprKind.MEMBER or not callee.children:
        return None
    return callee.children[0]


def _call_arguments(call: Expr) -> tuple[Expr, ...]:
    if call.is_construction:  # no callee child: `T(args...)`, `T{args...}`, copies
        return call.children
    return call.children[1:]


def _named(expression: Expr) -> DeclRef | None:
    """The declaration an expression names, inside casts (a variable, a field, a callee)."""
    inner = expression.uncast()
    return inner.ref if inner.kind in (ExprKind.REF, ExprKind.MEMBER, ExprKind.CALL) else None


def _parameter_name(expression: Expr) -> str:
    """The parameter an expression names, inside casts and conversions; "" for anything else."""
    inner = expression.uncast()
    decl = inner.ref if inner.kind is ExprKind.REF else None
    return decl.name if decl is not None and decl.kind is DeclKind.PARAMETER else ""


def _string_literal(expression: Expr) -> str | None:
    """The value of the string literal an operand is (or converts from: `String("a")`)."""
    for node in expression.walk():
        spelling = node.tokens[0].spelling if node.kind is ExprKind.LITERAL and node.tokens else ""
        if spelling.startswith('"'):
            try:
                value = ast.literal_eval(spelling)
            except (ValueError, SyntaxError):
                return None
            return value if isinstance(value, str) else None
    return None


def _is_null_constant(expression: Expr) -> bool:
    """`nullptr`, `NULL` or `0`."""
    inner = expression.uncast()
    return inner.value == 0 or (inner.kind is ExprKind.LITERAL and inner.type.canonical.endswith("nullptr_t"))


def _only_tested_for_null(pointer: Expr, ancestors: list[Node]) -> bool:
    """Whether a pointer value is only compared with null or tested as a bool (`p == nullptr`,
    `!p`, `if (p)`): nothing is read through it."""
    child: Node = pointer
    for parent in reversed(ancestors):
        if not isinstance(parent, Expr):
            return False
        if parent.kind in (ExprKind.IMPLICIT, ExprKind.CAST) and parent.type.canonical == "bool":
            return True
        if parent.kind in (ExprKind.PAREN, ExprKind.IMPLICIT, ExprKind.CAST):
            child = parent
            continue
        if parent.kind is ExprKind.UNARY:
            return parent.operator == "!"
        if parent.kind is ExprKind.BINARY and parent.operator in ("==", "!=") and len(parent.children) == 2:
            other = parent.children[1] if parent.children[0] is child else parent.children[0]
            return _is_null_constant(other)
        return False
    return False


def _initialized_pointer(value: Expr, ancestors: list[Node]) -> Var | None:
    """The pointer local whose initializer is `value` (through parentheses and casts)."""
    for parent in reversed(ancestors):
        if isinstance(parent, Expr) and parent.kind in (ExprKind.PAREN, ExprKind.IMPLICIT, ExprKind.CAST):
            continue
        if isinstance(parent, Var) and parent.declarator == "pointer" and not parent.bindings:
            return parent
        return None
    return None


def handed_out_tensor(call: Expr, program: Program, data: bytes, path: str) -> Expr | None:
    """The argument whose data pointer a called helper only hands out: a function, or a lambda
    a local holds (`auto ptr = [](const auto& t) { return t.data_ptr(); };`), whose body is
    `return t.data_ptr();` (through casts) for its tensor parameter `t`, such as `cptr(t)`.
    Such a call is a `data_ptr()` use, not a hand-off that may verify."""
    found: dict[int, Expr] = {}
    for body, params, arguments in _called_bodies(call, program):
        if body is None or body.kind is not StmtKind.BLOCK or len(body.stmts) != 1:
            return None
        returned = body.stmts[0]
        if returned.kind is not StmtKind.RETURN or len(returned.exprs) != 1:
            return None
        value = returned.exprs[0].uncast()
        # `callee_name` names a dependent call too: `t.data_ptr()` of a lambda's `const auto& t`
        is_data_ptr = value.kind is ExprKind.CALL and callee_name(value, data, path) == "data_ptr"
        obj = _member_call_object(value) if is_data_ptr else None
        ref = obj.uncast().ref if obj is not None else None
        keys = [p.key for p in params]
        if ref is None or ref.key not in keys or keys.index(ref.key) >= len(arguments):
            return None
        argument = arguments[keys.index(ref.key)]
        if not (is_tensor_type(ref.type) or is_tensor_type(argument.type)):  # `const auto& t`: the argument's
            return None
        found[keys.index(ref.key)] = argument
    return found.popitem()[1] if len(found) == 1 else None


def _called_bodies(call: Expr, program: Program) -> Iterator[tuple[Stmt | None, tuple[Var, ...], tuple[Expr, ...]]]:
    """(body, parameters, arguments) of each function a call can run: the functions it names,
    or the lambda held by the local it calls (`ptr(x)`: `operator()` of its closure, or, in a
    template, where the call is dependent, the call of the variable itself)."""
    if call.callees:
        arguments = _call_arguments(call)
        yield from ((callee.buildable_body, callee.params, arguments) for callee in call.callees)
        return
    # `ptr` then `operator()`, or the other way round; a dependent call names `ptr` alone
    callees = call.children[:2] if call.name == "operator()" else call.children[:1]
    for index, part in enumerate(callees):
        ref = part.stripped().ref
        if ref is None or ref.kind is not DeclKind.VARIABLE:
            continue
        held = (n for e in program.declared_variable(ref).exprs for n in e.walk() if n.kind is ExprKind.LAMBDA)
        lam = next(held, None)
        if lam is not None:
            arguments = tuple(c for c in call.children[index + 1 :] if c.stripped().name != "operator()")
            yield lam.lambda_body, lam.lambda_params, arguments
        return


def _callee(call: Expr) -> Expr | None:
    """The callee expression of a call, inside parentheses and conversions."""
    return call.children[0].stripped() if call.children else None


def _nodes(root: Node) -> Iterator[tuple[Node, int]]:
    """Pre-order `(node, depth)` over a statement / variable / expression and everything in
    it, in source order: every branch (also an `if constexpr`'s discarded one) and lambda
    bodies included. An explicit stack, not recursion: generated code nests deeply."""
    pending: list[tuple[Node, int]] = [(root, 0)]
    while pending:
        node, depth = pending.pop()
        yield node, depth
        pending.extend((child, depth + 1) for child in reversed(_parts(node)))


def _parts(node: Node) -> tuple[Node, ...]:
    """A node's parts in source order."""
    if isinstance(node, Expr):
        if node.kind is ExprKind.LAMBDA:
            return (node.lambda_body,) if node.lambda_body is not None else ()
        return node.children
    if isinstance(node, Var):
        return node.exprs
    if node.kind is StmtKind.DO:
        return (*node.stmts, *node.exprs)
    tail = {id(s) for s in (node.then, node.orelse, node.body) if s is not None}
    leading = tuple(s for s in node.stmts if id(s) not in tail)  # an init statement, or a block's
    trailing = tuple(s for s in node.stmts if id(s) in tail)
    return (*leading, *node.variables, *node.exprs, *trailing)


# ---- statement context -------------------------------------------------------------------

_FAILURE_CALLS = frozenset(
    {"Panic", "PanicThrower", "ErrorBuilder", "__assert_fail", "__assert_rtn", "_wassert", "abort"}
)
_CONDITION_STMTS = (StmtKind.IF, StmtKind.WHILE, StmtKind.DO, StmtKind.SWITCH)
_CHECK_FUNCTIONS = frozenset({"RuntimeCheck"})


def is_runtime_check(node: Expr) -> bool:
    """A `RuntimeCheck(ok, ...)`: a call, or with the condition alone the functional cast that
    `RuntimeCheck(ok)` of a class template deduced from its arguments is in a template."""
    if node.kind is ExprKind.CALL:
        return node.name in _CHECK_FUNCTIONS
    if node.kind is ExprKind.CAST and node.children:
        return any(_is_named_record(node.type, name) for name in _CHECK_FUNCTIONS)
    return False


def checked_condition(check: Expr) -> Expr | None:
    """The condition of a `RuntimeCheck` (`is_runtime_check`)."""
    arguments = _call_arguments(check) if check.kind is ExprKind.CALL else check.children
    return arguments[0] if arguments else None


def _fails(root: Node) -> bool:
    """Whether a branch throws or aborts (`throw`, `Panic`, a CHECK macro's failure path)."""
    for node, _depth in _nodes(root):
        if not isinstance(node, Expr):
            continue
        if node.is_throw:
            return True
        if node.kind is ExprKind.CALL and (
            callee_name(node) in _FAILURE_CALLS or bare_record_name(node.type.spelling) in _FAILURE_CALLS
        ):
            return True  # `Panic(...)`, `__assert_fail`, a PanicThrower / tvm ErrorBuilder object
    return False


def _is_alignment_operator(node: Expr) -> bool:
    return node.kind is ExprKind.BINARY and node.operator in ("%", "&")


def _is_condition(statement: Stmt, part: Node) -> bool:
    """Whether `part` is the condition of an if / loop / switch, or the variable it declares
    there (`if (auto* p = find(x))`, `while (T* p = next())`)."""
    return statement.condition is part or any(v is part for v in statement.variables)


def condition_context(node: Expr, ancestors: list[Node]) -> str:
    """ "check", "condition" or "value": where an expression sits (see TensorInspection)."""
    child: Node = node
    for parent in reversed(ancestors):
        if isinstance(parent, Expr):
            if parent.kind is ExprKind.CONDITIONAL and parent.children and parent.children[0] is child:
                return "check" if any(_fails(p) for p in parent.children[1:]) else "condition"
            if is_runtime_check(parent) and checked_condition(parent) is child:
                return "check"
            if parent.kind is ExprKind.LAMBDA:
                return "value"
        elif isinstance(parent, Stmt):
            if parent.kind in _CONDITION_STMTS or parent.kind is StmtKind.FOR:
                if parent.kind is not StmtKind.FOR and _is_condition(parent, child):
                    # a condition variable too: TVM_FFI_ICHECK_EQ is `if (auto err = ...) throw`
                    then = parent.then if parent.kind is StmtKind.IF else None
                    return "check" if then is not None and _fails(then) else "condition"
                return "value"
            if parent.kind in (StmtKind.BLOCK, StmtKind.DECL, StmtKind.RETURN):
                return "value"
        child = parent
    return "value"


def _refuses(node: Expr, ancestors: list[Node]) -> bool:
    """Whether a read serves only to refuse: it sits in the condition of a check that fails
    (`TVM_FFI_ICHECK(major == 10)`, `if (major != 10) throw ...`), or in the failure path of
    one (the message naming the value)."""
    if condition_context(node, ancestors) == "check":
        return True
    child: Node = node
    for parent in reversed(ancestors):
        if isinstance(parent, Stmt) and parent.kind is StmtKind.IF and parent.then is child:
            return _fails(child)
        if isinstance(parent, Expr) and parent.kind is ExprKind.CONDITIONAL and parent.children[0] is not child:
            return _fails(child)  # `CHECK_HOST(ok) << value`: `ok ? (void)0 : Panic... << value`
        if isinstance(parent, Expr) and is_runtime_check(parent):
            return True  # `RuntimeCheck(ok, "message", value)`: the condition is a check, the rest its message
        child = parent
    return False


def result_use(node: Expr, ancestors: list[Node]) -> str:
    """ "discarded", "void_cast" or "used": what happens to a call's value."""
    child: Node = node
    for parent in reversed(ancestors):
        if isinstance(parent, Expr):
            if parent.kind in (ExprKind.PAREN, ExprKind.IMPLICIT):
                child = parent
                continue
            if parent.kind is ExprKind.CAST:
                return "void_cast" if parent.type.spelling == "void" else "used"
            if parent.kind is ExprKind.BINARY and parent.operator == "," and parent.children[0] is child:
                return "discarded"
            return "used"
        if isinstance(parent, Var):
            return "used"
        kind = parent.kind
        if kind is StmtKind.EXPR:  # the statement an expression makes: what holds it decides
            child = parent
            continue
        if kind is StmtKind.BLOCK:
            return "discarded"
        if kind in _CONDITION_STMTS:
            return "used" if parent.condition is child else "discarded"
        if kind is StmtKind.FOR:
            return "discarded" if parent.body is child else "used"  # the header's parts are used
        if kind is StmtKind.CASE or kind is StmtKind.OTHER:  # `case x: f();`, a label
            return "discarded" if parent.stmts and parent.stmts[-1] is child else "used"
        return "used"
    return "used"


def launch_error_checked(node: Expr, ancestors: list[Node]) -> bool:
    """Whether a later statement reads the launch error: the first `cudaGetLastError()` /
    `cudaPeekAtLastError()` after the launch -- in the rest of its block, else of the blocks
    around it (a launch in a dispatch `switch`, checked after it) -- has its value used
    (checked, returned, stored), as `kernel<<<...>>>(...); CHECK(cudaPeekAtLastError());`
    does. The error of a launch stays the last error until read, so a check further down
    covers it; a read that drops the value (`cudaGetLastError();`) clears it unchecked."""
    child: Node = node
    for parent in reversed(ancestors):
        if isinstance(parent, Stmt) and parent.kind is StmtKind.BLOCK:
            position = next((i for i, s in enumerate(parent.stmts) if s is child), len(parent.stmts))
            for statement in parent.stmts[position + 1 :]:
                read = _launch_error_read(parent, statement)
                if read is not None:
                    return read == "used"
        child = parent
    return False


def _launch_error_read(block: Stmt, statement: Stmt) -> str | None:
    """What the first read of the last error in a statement of `block` does with it
    (`result_use`); None when the statement reads none."""
    ancestors: list[Node] = [block]
    for node, depth in _nodes(statement):
        del ancestors[depth + 1 :]
        if isinstance(node, Expr) and node.kind is ExprKind.CALL and node.name in _ERROR_QUERIES:
            return result_use(node, ancestors)
        ancestors.append(node)
    return None


# ---- API calls ----------------------------------------------------------------------------

_CUDA_API = re.compile(r"(?:cuda|cu)[A-Z]\w*")
_ARCH_QUERIES = frozenset({"get_cc_major", "get_cc_minor", "get_sm_version"})
_HOST_CHECKS = frozenset({"RuntimeCheck", "RuntimeDeviceCheck"})
_ERROR_QUERIES = frozenset({"cudaGetLastError", "cudaPeekAtLastError"})  # the last (launch) error
_LAUNCH_APIS = frozenset({"cudaLaunchKernel", "cudaLaunchKernelEx", "cudaLaunchCooperativeKernel"})


def _is_api_name(name: str) -> bool:
    return name in _ARCH_QUERIES or name in _HOST_CHECKS or bool(_CUDA_API.fullmatch(name))


_CUDA_ERROR_TYPES = frozenset(
    {"cudaError", "enum cudaError", "cudaError_t", "CUresult", "enum cudaError_enum", "cudaError_enum"}
)


def _returns_cuda_error(call: Expr) -> bool:
    if call.type.unqualified in _CUDA_ERROR_TYPES:
        return True
    # A call with dependent arguments has no type yet: ask the functions it may call.
    candidates = call.candidate_result_types
    return bool(candidates) and all(t.unqualified in _CUDA_ERROR_TYPES for t in candidates)


# ---- the walk ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Subject:
    """The function a body belongs to: one of the checked file's, or a device function of
    an included header that the file's kernels hand pointers to."""

    usr: str
    name: str
    is_device: bool
    launches: tuple[int, ...] = ()  # indices in `SourceModel.launches` of the launches in the body
    path: str = ""  # "" for the checked file


@dataclass
class _TensorSource:
    field: str
    tensor: str
    data_use: Span


@dataclass
class _BodyState:
    """Per-body dataflow: what local variables hold (keyed by `DeclRef.key` / `Var.key`)."""

    origins: dict[int, Origins] = field(default_factory=dict)  # device: local -> what it points into
    tensor_sources: dict[int, list[_TensorSource]] = field(default_factory=dict)  # host
    matcher_alignment: dict[int, AlignmentRequest | None] = field(default_factory=dict)
    matcher_dtypes: dict[int, tuple[MatcherDType, ...]] = field(default_factory=dict)
    dtype_options: dict[int, tuple[MatcherDType, ...]] = field(default_factory=dict)
    chain_calls: set[int] = field(default_factory=set)  # id() of the calls of a chain already read
    # host: a pointer local a `data_ptr()` initializes -> that use, and whether the local was
    # tested for null before any other reference (then its first reading reference is the use)
    held_data: dict[int, tuple[TensorDataUse, bool]] = field(default_factory=dict)


_INSPECTIONS = frozenset(
    {
        "dtype",
        "shape",
        "sizes",
        "ndim",
        "dim",
        "numel",
        "device",
        "strides",
        "size",
        "stride",
        "is_contiguous",
        "IsContiguous",
    }
)
_PRESENCE_TESTS = frozenset({"has_value", "defined"})  # of a tvm-ffi / std `Optional`
_EQUALITY_OPERATORS = frozenset({"operator==", "operator!="})  # of a std::string / tvm::ffi::String
_VECTOR_MEMBER_CALLS = frozenset({"load", "store"})
_WARP_ROW_CALLS = frozenset({"load_bytes", "store_bytes"})
_TYPED_CALLS = frozenset({"load_as", "store_as"})
_VECTOR_CASTS = frozenset({"static", "reinterpret", "c_style"})
_WARP_UNIFORM_16B = -16  # the default kPattern of warp::load_bytes / store_bytes


class _BodyFacts:
    """Collects the facts of one function body in a single pre-order walk."""

    def __init__(
        self, model: SourceModel, program: Program, subject: _Subject, function: tier1.Function, data: bytes, path: str
    ) -> None:
        self.model = model
        self.program = program
        self.facts = model.launcher_facts
        self.function = subject
        self.tree = function
        self.data = data
        self.path = path
        self.consts = Constants(data, path)
        self.state = _BodyState()
        self.device = subject.is_device
        self.params = {p.key: index for index, p in enumerate(function.params)}
        self.param_origins = {
            p.key: (origin,) for index, p in enumerate(function.params) if (origin := parameter(p, index)) is not None
        }
        # by extent, in source order: the launches of one macro expansion share the macro's extent
        self.launches: dict[tuple[int, int], list[int]] = {}
        for i in subject.launches:
            self.launches.setdefault((model.launches[i].span.start, model.launches[i].span.end), []).append(i)
        self.arrays: dict[int, tuple[Expr, ...]] = {}  # local arrays' elements (a runtime-API launch's arguments)
        self.ancestors: list[Node] = []  # of the node being visited, outermost first
        # the local an API call writes its answer to (`&major`), by variable: the call, its index
        # in `facts.api_calls`, and whether each later read of it only refuses (`_refuses`)
        self.api_outputs: dict[int, tuple[Expr, int, list[bool]]] = {}

    def run(self) -> None:
        if self.device:
            self._vector_parameters()
        assert self.tree.body is not None  # callers pass definitions
        for node, depth in _nodes(self.tree.body):
            del self.ancestors[depth:]
            if isinstance(node, Var):
                self._on_variable(node)
            elif isinstance(node, Expr):
                self._on_expression(node)
            self.ancestors.append(node)
        # a pointer local never read: taken as a use unless it was only tested for null
        self.facts.tensor_data_uses.extend(use for use, probed in self.state.held_data.values() if not probed)
        for _call, index, reads in self.api_outputs.values():
            if reads and all(reads):
                self.facts.api_calls[index] = replace(self.facts.api_calls[index], output_only_refuses=True)

    def _on_expression(self, node: Expr) -> None:
        kind = node.kind
        if not self.device and is_runtime_check(node) and (condition := checked_condition(node)) is not None:
            self._add_template_check(condition)
        if kind is ExprKind.CALL:
            self._on_call(node)
        elif kind is ExprKind.BINARY:
            self._on_assignment(node)
            if not self.device:
                self._on_alignment_test(node)
        elif self.device and kind in (ExprKind.CAST, ExprKind.IMPLICIT):
            if node.type.pointee_volatile:
                self._add_volatile_read(node)
            if kind is ExprKind.CAST and node.cast_kind in _VECTOR_CASTS:
                self._on_cast(node)
        elif kind is ExprKind.INIT_LIST and not self.device:
            self._add_handoffs(node, "{...}", node.children)
        elif kind is ExprKind.REF and node.ref is not None:
            self._on_reference(node, node.ref)

    def _on_reference(self, node: Expr, decl: DeclRef) -> None:
        if decl.key in self.api_outputs:
            call, _index, reads = self.api_outputs[decl.key]
            if not any(a is call for a in self.ancestors):  # not the `&x` of the call itself
                reads.append(_refuses(node, self.ancestors))
        held = self.state.held_data.get(decl.key)
        if held is None:
            return
        use, probed = held
        if _only_tested_for_null(node, self.ancestors):
            self.state.held_data[decl.key] = (use, True)
            return
        del self.state.held_data[decl.key]
        # a pointer first probed for null (is the optional tensor there?) is read here; one
        # read without a probe was taken as a value to use, where the call is
        self.facts.tensor_data_uses.append(replace(use, read_at=node.span.start) if probed else use)

    def _vector_parameters(self) -> None:
        """A parameter declared as a pointer to a vector type (`const float4*`): every
        access through it is vectorized."""
        for index, param in enumerate(self.tree.params):
            found = self.consts.pointee_vector(param)
            if found is not None:
                vector, pointee = found
                self.facts.vector_accesses.append(
                    VectorAccess(
                        self.function.usr,
                        index,
                        "",
                        param.span,
                        "vector_param",
                        vector.width,
                        pointee,
                        self.function.path,
                    )
                )

    def _member_name(self, member: Expr) -> str:
        return member_name(member, self.data, self.path)

    def _text(self, node: Expr) -> str:
        return self.consts.text(node)

    def _function_usr(self, callee: Expr) -> str:
        """The USR of the one function (template) a callee expression names, else ""."""
        declaration = referenced_function(callee.stripped())
        return declaration.usr if declaration is not None else ""

    # -- dispatch --------------------------------------------------------------------------
    def _on_call(self, call: Expr) -> None:
        name = callee_name(call, self.data, self.path)
        if _is_api_name(name):
            self._add_api_call(call, name)
        if self.device:
            self._device_call(call, name)
            return
        self._add_parameter_test(call, name)
        pending = self.launches.get((call.written_span.start, call.written_span.end))
        # inside a macro expansion every call has the macro's extent: only a launch call is the launch
        launched = launch_arguments(call, self.arrays) if pending else None
        if pending and launched is not None:
            self._add_launch(call, pending.pop(0), launched)
        arguments = _call_arguments(call)
        handed_out = handed_out_tensor(call, self.program, self.data, self.path)
        if handed_out is None:
            self._add_handoffs(call, name, arguments)
        self._add_data_handoffs(call, arguments)
        if "align" in name.lower() and name != "ensure_alignment":
            self._add_alignment_tests(call, arguments)
        obj = _member_call_object(call)
        if handed_out is not None:
            obj, name = handed_out, "data_ptr"  # `cptr(x)` reads as `x.data_ptr()`
        tensor = self._tensor_name(obj) if obj is not None else None
        if tensor is not None and name == "data_ptr":
            if not _only_tested_for_null(call, self.ancestors):
                in_check = condition_context(call, self.ancestors) == "check"
                use = TensorDataUse(self.function.usr, tensor, call.span, in_check)
                held_by = _initialized_pointer(call, self.ancestors)
                if held_by is not None:
                    self.state.held_data[held_by.key] = (use, False)
                else:
                    self.facts.tensor_data_uses.append(use)
        elif tensor is not None and name in _INSPECTIONS:
            self.facts.tensor_inspections.append(
                TensorInspection(self.function.usr, tensor, name, call.span, condition_context(call, self.ancestors))
            )
        elif name == "set_options" and obj is not None and _is_named_record(obj.type, "SymbolicDType"):
            self._add_dtype_options(call, obj)
        elif id(call) not in self.state.chain_calls:
            self._add_matcher_chain(call, "")

    def _add_template_check(self, condition: Expr) -> None:
        """A `RuntimeCheck` whose condition names template parameters: a value of theirs
        that breaks it fails every call."""
        value = self.consts.value(condition)
        if value.free_names():
            self.facts.template_checks.append(
                TemplateCheck(self.function.usr, "RuntimeCheck", value, self._text(condition), condition.span)
            )

    def _add_parameter_test(self, call: Expr, name: str) -> None:
        """`x.has_value()` / `x.defined()` and `s == "literal"` of a parameter `x` / `s`."""
        if name in _PRESENCE_TESTS:
            obj = _member_call_object(call)
            operands: tuple[Expr, ...] = (obj,) if obj is not None else ()
            test = "present"
        elif name in _EQUALITY_OPERATORS:
            operands, test = call.children, "equals"
        else:
            return
        parameter = next((named for o in operands if (named := _parameter_name(o))), "")
        literal = next((text for o in operands if (text := _string_literal(o)) is not None), None)
        if not parameter or (test == "equals" and literal is None):
            return
        self.facts.parameter_tests.append(ParameterTest(self.function.usr, parameter, test, call.span, literal or ""))

    # -- API calls -------------------------------------------------------------------------
    def _add_api_call(self, call: Expr, name: str) -> None:
        decl = call.ref
        use = result_use(call, self.ancestors)
        if use == "discarded" and name in _LAUNCH_APIS and launch_error_checked(call, self.ancestors):
            use = "checked_after"
        arguments = _call_arguments(call)
        output = arguments[0].uncast() if arguments else None
        if output is not None and output.kind is ExprKind.UNARY and output.operator == "&" and output.children:
            written = _named(output.children[0])
            if written is not None and written.kind is DeclKind.VARIABLE:
                self.api_outputs[written.key] = (call, len(self.facts.api_calls), [])
        self.facts.api_calls.append(
            ApiCall(
                function=self.function.usr,
                function_name=self.function.name,
                name=name,
                qualified_name=decl.qualified_name if decl is not None else "",
                span=call.span,
                returns_cuda_error=_returns_cuda_error(call),
                result_use=use,
                argument_names=tuple(self._argument_name(a) for a in arguments),
            )
        )

    def _argument_name(self, argument: Expr) -> str:
        inner = argument.uncast()
        ref = inner.ref if inner.kind is ExprKind.REF else None
        return ref.name if ref is not None else self._text(argument)

    # -- host: tensors ---------------------------------------------------------------------
    def _tensor_name(self, expression: Expr) -> str | None:
        inner = expression.uncast()
        if inner.kind is ExprKind.CALL and inner.is_construction and len(inner.children) == 1:
            inner = inner.children[0].uncast()  # a by-value copy
        if inner.kind is not ExprKind.REF:
            return None
        decl = inner.ref
        if decl is None or decl.kind not in (DeclKind.PARAMETER, DeclKind.VARIABLE) or not is_tensor_type(decl.type):
            return None
        return decl.name

    def _add_handoffs(self, at: Expr | Var, callee: str, values: tuple[Expr, ...]) -> None:
        """Tensors passed on as a whole: call arguments, `{a, b}` lists, copies."""
        call = at if isinstance(at, Expr) and at.kind is ExprKind.CALL and at.children else None
        callee_usr = self._function_usr(call.children[0]) if call is not None else ""
        for value in values:
            tensor = self._tensor_name(value)
            if tensor is not None:
                self.facts.tensor_handoffs.append(TensorHandOff(self.function.usr, tensor, callee, callee_usr, at.span))

    def _on_variable(self, decl: Var) -> None:
        if not decl.exprs:
            return
        initializer = decl.exprs[0]
        if self.device:
            origins = self._origins(initializer)
            for binding in decl.bindings:  # `const auto& [input, output, n] = params;`
                held = structured_binding(origins, binding.index, binding)
                if held:
                    self.state.origins[binding.key] = held
            if origins and not decl.bindings:
                self.state.origins[decl.key] = origins
            return
        if _is_named_record(decl.type, "TensorMatcher"):
            self._add_matcher_chain(initializer, decl.name, variable=decl)
            return
        self._add_handoffs(decl, decl.name, (initializer,))
        elements = array_elements(decl)
        if elements is not None:
            self.arrays[decl.key] = elements
        sources = list(self._tensor_sources(initializer, "", decl))
        if sources:
            self.state.tensor_sources[decl.key] = sources

    def _on_alignment_test(self, node: Expr) -> None:
        """`address % w` and `address & (w - 1)` over a tensor's data pointer."""
        if _is_alignment_operator(node) and len(node.children) == 2:
            self._add_alignment_tests(node, node.children[:1])

    def _add_data_handoffs(self, call: Expr, arguments: tuple[Expr, ...]) -> None:
        callee_usr = self._function_usr(call.children[0]) if call.children else ""
        if not callee_usr:
            return
        for index, argument in enumerate(arguments):
            for source in self._tensor_sources(argument, ""):
                self.facts.data_handoffs.append(
                    DataHandOff(self.function.usr, source.tensor, callee_usr, index, source.data_use, source.field)
                )

    def _add_alignment_tests(self, at: Expr, operands: tuple[Expr, ...]) -> None:
        tensors = {source.tensor for operand in operands for source in self._tensor_sources(operand, "")}
        self.facts.alignment_tests.extend(
            AlignmentTest(self.function.usr, tensor, at.span) for tensor in sorted(tensors)
        )

    def _on_assignment(self, node: Expr) -> None:
        if node.operator != "=" or len(node.children) != 2:
            return
        target, value = node.children[0].stripped(), node.children[1]
        if self.device:
            origins = self._origins(value)
            decl = target.ref if target.kind is ExprKind.REF else None
            if origins and decl is not None and decl.kind is DeclKind.VARIABLE:
                self.state.origins[decl.key] = origins
            return
        field_name = ""
        if target.kind is ExprKind.MEMBER:  # params.src = x.data_ptr();
            field_name = self._member_name(target)
            target = target.children[0].uncast() if target.children else target
        decl = target.ref if target.kind is ExprKind.REF else None
        if decl is None or decl.kind is not DeclKind.VARIABLE:
            return
        sources = list(self._tensor_sources(value, field_name))
        if sources:
            self.state.tensor_sources.setdefault(decl.key, []).extend(sources)

    def _tensor_sources(
        self, expression: Expr, field_name: str, record: Expr | Var | None = None
    ) -> Iterator[_TensorSource]:
        """The tensors whose data an expression carries, with the struct field each fills.
        `record` is what has the struct type an initializer list below initializes (a
        dependent `Params<T>{...}` list has no type of its own). Pre-order with an explicit
        stack, not recursion: generated code nests expressions thousands of levels deep."""
        pending: list[tuple[Expr, str, Expr | Var | None]] = [(expression, field_name, record)]
        while pending:
            expression, field_name, record = pending.pop()
            node = expression.stripped()
            if node.kind is ExprKind.CALL and (obj := self._data_pointer_of(node)) is not None:
                tensor = self._tensor_name(obj)
                if tensor is not None:
                    yield _TensorSource(field_name, tensor, node.span)
                    continue
            if node.kind is ExprKind.REF:
                yield from self._reference_sources(node, field_name)
                continue
            if node.kind is ExprKind.MEMBER and (read := self._field_sources(node, field_name)) is not None:
                yield from read
                continue
            if node.kind is ExprKind.INIT_LIST:
                fields = record_fields(node) or (record_fields(record) if record is not None else [])
                named = initializer_list_fields(node, field_name, fields)
                elements = [(element, name, None) for element, (_, name) in zip(node.children, named)]
                pending.extend(reversed(elements))
                continue
            own_record = node if record_fields(node) else record
            # `use ? ids.data_ptr() : nullptr` carries the branches' data, never the condition's
            children = node.children[1:] if node.kind is ExprKind.CONDITIONAL else node.children
            pending.extend((child, field_name, own_record) for child in reversed(children))

    def _data_pointer_of(self, call: Expr) -> Expr | None:
        """The object of `x.data_ptr()`, or the argument of a helper that hands it out."""
        if callee_name(call) == "data_ptr":
            return _member_call_object(call)
        return handed_out_tensor(call, self.program, self.data, self.path)

    def _field_sources(self, member: Expr, field_name: str) -> list[_TensorSource] | None:
        """The tensors a params-struct local's field carries (`params.out` handed to a kernel
        as its pointer, `params.n` none), with the path below the field (a nested struct's);
        None where the local's fields are not told apart (a helper's params parameter)."""
        base = member.children[0].stripped() if member.member_base is not None else None
        sources = list(self._reference_sources(base, "")) if base is not None else []
        if not sources or any(source.field in ("", "*") for source in sources):
            return None
        name = self._member_name(member)
        read = []
        for source in sources:
            head, _, rest = source.field.partition(".")
            if head == name:
                path = f"{field_name}.{rest}" if field_name and rest else rest or field_name
                read.append(_TensorSource(path, source.tensor, source.data_use))
        return read

    def _reference_sources(self, node: Expr, field_name: str) -> Iterator[_TensorSource]:
        decl = node.ref
        if decl is not None and decl.key in self.params and not self.device:
            # a helper's parameter: the tensor (or params struct) a caller hands it
            if decl.type.is_pointer:
                yield _TensorSource(field_name, f"#{self.params[decl.key]}", node.span)
            elif referred_record_fields(decl) and not is_tensor_type(decl.type):
                # a `TensorView` has fields too, but its data leaves through `data_ptr()` alone
                # (`ids.numel() > 0` hands on no data)
                yield _TensorSource("*", f"#{self.params[decl.key]}", node.span)
            return
        for source in self.state.tensor_sources.get(decl.key if decl is not None else 0, []):
            # a params struct nested in another (`.params = params`): the field path `params.out`
            nested = field_name and source.field and source.field != "*"
            path = f"{field_name}.{source.field}" if nested else source.field or field_name
            yield _TensorSource(path, source.tensor, source.data_use)

    # -- host: launches ----------------------------------------------------------------------
    def _add_launch(self, call: Expr, index: int, arguments: tuple[Expr, ...]) -> None:
        """The tensors whose data the `arguments` of the launch at `model.launches[index]`
        carry (by position: a macro expansion gives every argument the same extent)."""
        launch = self.model.launches[index]
        tensors = []
        for position, argument in enumerate(arguments):
            for source in self._tensor_sources(argument, ""):
                tensors.append(LaunchTensorArgument(position, source.field, source.tensor, source.data_use))
        checked = launch_error_checked(call, self.ancestors)
        self.model.launches[index] = replace(launch, tensors=tuple(tensors), error_checked=checked)

    # -- host: matcher chains ----------------------------------------------------------------
    def _add_dtype_options(self, call: Expr, obj: Expr) -> None:
        decl = _named(obj)
        callee = _callee(call)
        options = self._dtype_list(callee) if callee is not None else ()
        if decl is not None and options:
            self.state.dtype_options[decl.key] = options

    def _dtype_list(self, reference: Expr) -> tuple[MatcherDType, ...]:
        """The types a reference's template argument list names (`with_dtype<float, half>`)."""
        return tuple(
            MatcherDType(text, canonical, size) for text, canonical, size in self.consts.written_types(reference)
        )

    def _add_matcher_chain(self, expression: Expr, variable_name: str, variable: Var | None = None) -> None:
        links, root = self._chain_links(expression)
        root_variable = root.ref if root.kind is ExprKind.REF else None
        if root_variable is not None and _is_named_record(root_variable.type, "TensorMatcher"):
            key: int | None = root_variable.key
            variable_name = root_variable.name
            alignment = self.state.matcher_alignment.get(root_variable.key)
            dtypes = self.state.matcher_dtypes.get(root_variable.key, ())
            dims: tuple[Expr, ...] = ()
        elif _constructs_matcher(root):
            key = variable.key if variable is not None else None
            alignment, dtypes = None, ()
            dims = self._matcher_dims(root)
        else:
            return
        if not links and variable is None:
            return
        verified, alignments = [], []
        dtype_symbol = ""
        strides: tuple[Expr, ...] = ()
        for name, call, member, arguments in links:
            self.state.chain_calls.add(id(call))
            if name == "with_strides" and arguments:
                strides = self._matcher_dims(arguments[0])
            if name == "with_dtype":
                dtypes += self._dtype_list(member) + self._bound_dtypes(arguments)
                dtype_symbol = self._bind_dtype_symbol(member, arguments) or dtype_symbol
            elif name == "ensure_alignment" and arguments:
                alignment = AlignmentRequest(
                    self._text(arguments[0]), _link_span(call, member, name), self.consts.value(arguments[0])
                )
                alignments.append(alignment)
            elif name == "verify" and arguments:
                tensor = self._tensor_name(arguments[0])
                if tensor is not None:
                    verified.append(VerifiedTensor(tensor, _link_span(call, member, name), alignment))
        if key is not None:
            self.state.matcher_alignment[key] = alignment
            self.state.matcher_dtypes[key] = dtypes
        self.facts.matcher_chains.append(
            MatcherChain(
                self.function.usr,
                expression.span,
                tuple(self._text(d) for d in dims),
                dtypes,
                tuple(verified),
                tuple(alignments),
                variable_name,
                tuple(self.consts.value(d) for d in dims),
                dtype_symbol,
                tuple(self._text(d) for d in strides),
                tuple(self.consts.value(d) for d in strides),
            )
        )

    def _chain_links(self, expression: Expr) -> tuple[list[tuple[str, Expr, Expr, tuple[Expr, ...]]], Expr]:
        """The `.name<targs>(args)` links of a method chain in source order (name, call,
        member expression, arguments), and its root."""
        links = []
        node = expression.stripped()
        while node.kind is ExprKind.CALL and not node.is_construction:
            callee = _callee(node)
            if callee is None or callee.kind is not ExprKind.MEMBER or not callee.children:
                break
            links.append((self._member_name(callee), node, callee, node.children[1:]))
            node = callee.children[0].stripped()
        links.reverse()
        return links, node

    def _bind_dtype_symbol(self, member: Expr, arguments: tuple[Expr, ...]) -> str:
        """The ``SymbolicDType`` local a ``.with_dtype<Ts...>(sym)`` link binds ("" for none);
        the options it lists hold for every later matcher binding ``sym``."""
        decl = _named(arguments[0]) if arguments else None
        if decl is None or not _is_named_record(decl.type, "SymbolicDType"):
            return ""
        options = self._dtype_list(member)
        if options and decl.key not in self.state.dtype_options:
            self.state.dtype_options[decl.key] = options
        return decl.name

    def _bound_dtypes(self, arguments: tuple[Expr, ...]) -> tuple[MatcherDType, ...]:
        if not arguments:
            return ()
        decl = _named(arguments[0])
        return self.state.dtype_options.get(decl.key, ()) if decl is not None else ()

    def _matcher_dims(self, root: Expr) -> tuple[Expr, ...]:
        for node in root.walk():
            if node.kind is ExprKind.INIT_LIST:
                return node.children
        return ()

    # -- device: vector accesses ---------------------------------------------------------------
    def _origins(self, expression: Expr) -> Origins:
        """The parameters (and params-struct fields) a pointer expression may derive from."""
        return origins_of(expression, self._holds, self._member_name, callee_name)

    def _holds(self, declaration: DeclRef) -> Origins:
        """What a parameter or local variable of a device body points into."""
        if declaration.key in self.params:
            return self.param_origins.get(declaration.key, ())
        return self.state.origins.get(declaration.key, ())

    def _device_call(self, call: Expr, name: str) -> None:
        obj = _member_call_object(call)
        arguments = _call_arguments(call)
        if obj is not None and name in _VECTOR_MEMBER_CALLS and arguments:
            accessor = self._accessor(obj)
            if accessor is not None:
                self._add_access(arguments[0], call, *accessor)
            return
        if obj is not None:
            return
        callee = _callee(call)
        if callee is None:
            return
        if name in _WARP_ROW_CALLS and arguments:
            template_args = self.consts.template_args(callee) or ()
            if template_args:
                pattern = template_args[1] if len(template_args) > 1 else ConstExpr("int", _WARP_UNIFORM_16B)
                width = ConstExpr("vec_bytes", args=(template_args[0], pattern))
                self._add_access(arguments[0], call, "warp_bytes", VectorType(width, name))
            return
        if name in _TYPED_CALLS and arguments:
            vector = self.consts.written_vector(callee)
            if vector is not None:
                self._add_access(arguments[0], call, name, vector)
            return
        self._add_pointer_passes(call, callee, name, arguments)

    def _accessor(self, obj: Expr) -> tuple[str, VectorType] | None:
        """("aligned_vector" | "tile_memory", vector type) for the object of `.load`/`.store`."""
        node = obj.uncast()
        decl = node.ref if node.kind in (ExprKind.REF, ExprKind.MEMBER) else None
        if decl is not None and decl.kind in (DeclKind.VARIABLE, DeclKind.PARAMETER, DeclKind.FIELD):
            return self.consts.accessor(decl)
        if node.kind is ExprKind.CALL and node.children:  # a temporary: tile::Memory<vec_t>::cta().load(...)
            return self.consts.memory_accessor(node.children[0].stripped())
        return None

    def _on_cast(self, cast: Expr) -> None:
        if not cast.type.is_pointer:
            return
        vector = self.consts.cast_vector(cast)
        if vector is not None and cast.children:
            self._add_access(cast.children[-1], cast, "cast", vector)

    def _add_volatile_read(self, cast: Expr) -> None:
        """A conversion to a pointer to volatile data of a pointer that came in as a parameter."""
        if not cast.children or cast.children[-1].type.pointee_volatile:
            return  # already volatile: the conversion that made it so was recorded
        for param, field_name in _outermost(self._origins(cast.children[-1])):
            self.facts.volatile_reads.append(VolatileRead(self.function.usr, param, field_name, cast.span))

    def _add_access(self, pointer: Expr, at: Expr, kind: str, vector: VectorType) -> None:
        tested = self._alignment_tested_origins()
        untested = tuple(o for o in self._origins(pointer) if o not in tested)
        for param, field_name in _outermost(untested):  # `if ((uintptr_t)p % 16 == 0)`: the kernel checks
            self.facts.vector_accesses.append(
                VectorAccess(
                    self.function.usr, param, field_name, at.span, kind, vector.width, vector.text, self.function.path
                )
            )

    def _alignment_tested_origins(self) -> set[Origin]:
        """Pointers whose address an enclosing `if` tests for alignment (`% w`, `& (w - 1)`)."""
        tested: set[Origin] = set()
        for statement in self.ancestors:
            if not isinstance(statement, Stmt) or statement.kind is not StmtKind.IF or statement.condition is None:
                continue
            for node in statement.condition.walk():
                if _is_alignment_operator(node) and node.children:
                    for reference in node.children[0].walk():
                        if reference.kind in (ExprKind.REF, ExprKind.MEMBER):
                            tested.update(self._origins(reference))
        return tested

    def _add_pointer_passes(self, call: Expr, callee: Expr, name: str, arguments: tuple[Expr, ...]) -> None:
        if name.startswith("operator"):
            return
        passed = [(index, self._origins(a)) for index, a in enumerate(arguments) if not a.is_arithmetic]
        passed = [(index, origins) for index, origins in passed if origins]
        if not passed:
            return
        declaration = referenced_function(callee)
        callee_usr = declaration.usr if declaration is not None else ""
        template_params = template_param_names(declaration) if declaration is not None else ()
        if declaration is not None:
            analyze_elsewhere(self.model, self.program, declaration, self.path)
        template_args = self.consts.template_args(callee) or ()
        for index, origins in passed:
            for param, field_name in _outermost(origins):
                self.facts.pointer_passes.append(
                    PointerPass(
                        self.function.usr,
                        callee_usr,
                        name,
                        call.span,
                        index,
                        param,
                        field_name,
                        template_args,
                        template_params,
                    )
                )


def _link_span(call: Expr, member: Expr, name: str) -> Span:
    """From the method name to the end of the call (`ensure_alignment(16)`)."""
    whole, callee = call.span, member.span
    width = len(name.encode())
    if callee.end_line != whole.end_line and callee.end - width < whole.start:
        return whole
    return Span(
        callee.end_line,
        max(1, callee.end_column - width),
        whole.end_line,
        whole.end_column,
        max(whole.start, callee.end - width),
        whole.end,
    )


def _outermost(origins: Origins) -> list[tuple[int, str]]:
    """(parameter, outermost field) of each origin, once: the part a launcher fills (a
    tensor's data pointer in `params.src`, or a whole struct handed to a helper)."""
    return list(dict.fromkeys((origin.param, origin.field) for origin in origins))


def _constructs_matcher(root: Expr) -> bool:
    """`TensorMatcher(...)` / `TensorMatcher{...}`, through parentheses and conversions."""
    node = root
    for _ in range(4):
        if node.kind is ExprKind.CALL and node.name == "TensorMatcher":
            return True
        is_cast = node.kind is ExprKind.CAST and node.cast_kind == "functional"
        if not is_cast and node.kind not in (ExprKind.PAREN, ExprKind.IMPLICIT):
            return False
        if any(bare_record_name(name) == "TensorMatcher" for name in written_type_names(node)):
            return True
        if not node.children:
            return False
        node = node.children[0]
    return False


def collect_function_facts(
    model: SourceModel, program: Program, function: Function, tree: tier1.Function, data: bytes, path: str
) -> None:
    """Add the launcher / kernel-interface facts of one function body to `model`."""
    if tree.is_implicit_instantiation:
        return  # the template's own body already gave (more general) facts
    launches = tuple(
        index
        for index, launch in enumerate(model.launches)
        if launch.launcher == function.qualified_name
        and function.body is not None
        and function.body.contains(launch.span)
    )
    is_device = function.kind in (FunctionKind.KERNEL, FunctionKind.DEVICE)
    if not is_device and tree.buildable_body is None:
        return  # generated code nested too deeply: its facts are lost, never made up
    subject = _Subject(function.usr, function.name, is_device, launches)
    _BodyFacts(model, program, subject, tree, data, path).run()


def analyze_elsewhere(model: SourceModel, program: Program, declaration: DeclRef, checked_path: str) -> None:
    """Collect the kernel-side facts of a kernel / device function defined in an included
    header (once per translation unit), so a launch or pointer hand-off can be followed
    into it. Its facts carry the header's path."""
    tree = program.defined(declaration)
    if not tree.file or tree.file == checked_path:
        return  # the checked file's own functions are visited by the extractor
    usr = tree.usr
    if not usr or usr in model.launcher_facts.foreign_functions:
        return
    model.launcher_facts.foreign_functions.append(usr)
    data = _file_bytes(tree.file)
    if tree.kind is FunctionKind.HOST or tree.body is None or data is None:
        return
    subject = _Subject(usr, tree.name, True, path=tree.file)
    _BodyFacts(model, program, subject, tree, data, tree.file).run()


def _file_bytes(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None
