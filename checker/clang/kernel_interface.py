"""Launcher and kernel-interface facts, one walk per function body.

Host functions: `TensorMatcher` chains, `data_ptr()` uses and the launch arguments they
feed (directly, through local pointers, or through params-struct fields: `Launch.tensors`
of the launches launches.py resolved), TensorView inspections and the context they sit in, TensorViews handed to other functions, and calls of CUDA APIs / arch queries /
host check functions with how their result is used.

Kernels and device functions: vectorized global accesses through pointers that came in
as parameters (or pointer fields of a by-value params struct), followed through local
copies, casts, arithmetic and `pointer::offset` (the rules of `provenance.py`, shared with
the data-flow facts), plus the pointers passed on to other device functions.

Compile-time values stay symbolic over template parameters (`ConstExpr`, consteval.py) so
that a rule can evaluate them per instantiation.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import clang.cindex as ci

from ..model import (
    AlignmentRequest,
    AlignmentTest,
    DataHandOff,
    ApiCall,
    ConstExpr,
    Function,
    FunctionKind,
    LaunchTensorArgument,
    MatcherChain,
    MatcherDType,
    PointerPass,
    SourceModel,
    Span,
    TensorDataUse,
    TensorHandOff,
    TensorInspection,
    VectorAccess,
    VerifiedTensor,
)
from .provenance import Origin, Origins, initializer_list_fields, origins_of, parameter, record_fields
from .consteval import (
    VECTOR_TEMPLATES, Constants, VectorType, bare_record_name, callee_name, canonical_name,
    expression_children, function_declaration, function_usr, initializer_of, overloaded_decls, referenced_of,
    template_param_names, template_spelling, trailing_name,
)
from .cursors import (
    EXPLICIT_CASTS, PARENS_AND_CONVERSIONS, K, children, is_implicit_instantiation, span_of, strip_casts,
    strip_parens, walk,
)

# ---- small cursor helpers ------------------------------------------------------------------

_VECTOR_CASTS = (K.CXX_STATIC_CAST_EXPR, K.CXX_REINTERPRET_CAST_EXPR, K.CSTYLE_CAST_EXPR)


def _offsets(cursor: ci.Cursor) -> tuple[int, int]:
    return cursor.extent.start.offset, cursor.extent.end.offset


def _is_tensor_type(type_: ci.Type) -> bool:
    name = canonical_name(type_).rstrip("&").strip()
    return name in ("tvm::ffi::TensorView", "tvm::ffi::Tensor")


def _is_named_record(type_: ci.Type, name: str) -> bool:
    return bare_record_name(canonical_name(type_)) == name or bare_record_name(type_.spelling) == name


_SCALAR_TYPE_KINDS = frozenset({
    ci.TypeKind.BOOL, ci.TypeKind.CHAR_U, ci.TypeKind.UCHAR, ci.TypeKind.USHORT, ci.TypeKind.UINT,
    ci.TypeKind.ULONG, ci.TypeKind.ULONGLONG, ci.TypeKind.CHAR_S, ci.TypeKind.SCHAR, ci.TypeKind.SHORT,
    ci.TypeKind.INT, ci.TypeKind.LONG, ci.TypeKind.LONGLONG, ci.TypeKind.FLOAT, ci.TypeKind.DOUBLE,
    ci.TypeKind.ENUM,
})


def _may_carry_pointer(argument: ci.Cursor) -> bool:
    """False for arguments of a known arithmetic type (a size, a scale)."""
    return argument.type.get_canonical().kind not in _SCALAR_TYPE_KINDS


# ---- symbolic constants ----------------------------------------------------------------------

_WARP_UNIFORM_16B = -16  # the default kPattern of warp::load_bytes / store_bytes


def _member_call_object(call: ci.Cursor) -> ci.Cursor | None:
    """`obj` of `obj.method(...)`."""
    parts = children(call)
    if not parts:
        return None
    callee = strip_parens(parts[0])
    if callee.kind != K.MEMBER_REF_EXPR:
        return None
    objects = children(callee)
    return objects[0] if objects else None


def _call_arguments(call: ci.Cursor) -> list[ci.Cursor]:
    if _is_constructor_call(call):  # no callee child: `T(args...)`, `T{args...}`, copies
        return expression_children(call)
    parts = children(call)
    return parts[1:] if parts else []


def _is_constructor_call(call: ci.Cursor) -> bool:
    ref = referenced_of(call)
    return ref is not None and ref.kind == K.CONSTRUCTOR


# ---- statement context -------------------------------------------------------------------

_FAILURE_CALLS = frozenset({"Panic", "PanicThrower", "ErrorBuilder", "__assert_fail", "__assert_rtn",
                            "_wassert", "abort"})
_LOOPS = (K.WHILE_STMT, K.FOR_STMT, K.DO_STMT, K.SWITCH_STMT)
_STATEMENT_BOUNDARIES = (K.COMPOUND_STMT, K.DECL_STMT, K.RETURN_STMT, K.LAMBDA_EXPR)
_CHECK_FUNCTIONS = frozenset({"RuntimeCheck"})


def _fails(statement: ci.Cursor) -> bool:
    """Whether a branch throws or aborts (`throw`, `Panic`, a CHECK macro's failure path)."""
    for node in [statement, *walk(statement)]:
        if node.kind == K.CXX_THROW_EXPR:
            return True
        if node.kind == K.CALL_EXPR and (callee_name(node) in _FAILURE_CALLS or
                                         bare_record_name(node.type.spelling) in _FAILURE_CALLS):
            return True  # `Panic(...)`, `__assert_fail`, a PanicThrower / tvm ErrorBuilder object
    return False


def _is_pointer_type(type_: ci.Type) -> bool:
    return type_.get_canonical().kind == ci.TypeKind.POINTER


def _is_alignment_operator(node: ci.Cursor) -> bool:
    try:
        return node.binary_operator in (ci.BinaryOperator.Rem, ci.BinaryOperator.And)
    except ValueError:
        return False


def _condition_index(statement: ci.Cursor, parts: list[ci.Cursor]) -> int | None:
    """Which child of an if/loop statement is its condition (None for a do-loop body...)."""
    if statement.kind == K.DO_STMT:
        return len(parts) - 1 if len(parts) == 2 else None
    if statement.kind == K.FOR_STMT:
        return None  # for-loop parts are not told apart reliably
    for index, part in enumerate(parts):
        if part.kind.is_expression() or part.kind == K.VAR_DECL:
            return index
    return None


def condition_context(node: ci.Cursor, ancestors: list[ci.Cursor]) -> str:
    """"check", "condition" or "value": where an expression sits (see TensorInspection)."""
    child = node
    for parent in reversed(ancestors):
        kind = parent.kind
        if kind == K.CONDITIONAL_OPERATOR:
            parts = children(parent)
            if parts and parts[0] == child:
                return "check" if any(_fails(p) for p in parts[1:]) else "condition"
        elif kind == K.IF_STMT or kind in _LOOPS:
            parts = children(parent)
            index = _condition_index(parent, parts)
            if index is not None and parts[index] == child:
                then = parts[index + 1] if kind == K.IF_STMT and index + 1 < len(parts) else None
                return "check" if then is not None and _fails(then) else "condition"
            return "value"
        elif kind == K.CALL_EXPR and parent.spelling in _CHECK_FUNCTIONS:
            arguments = _call_arguments(parent)
            if arguments and arguments[0] == child:
                return "check"
        elif kind in _STATEMENT_BOUNDARIES:
            return "value"
        child = parent
    return "value"


def result_use(node: ci.Cursor, ancestors: list[ci.Cursor]) -> str:
    """"discarded", "void_cast" or "used": what happens to a call's value."""
    child = node
    for parent in reversed(ancestors):
        kind = parent.kind
        if kind in PARENS_AND_CONVERSIONS:
            child = parent
            continue
        if kind in EXPLICIT_CASTS:
            return "void_cast" if parent.type.kind == ci.TypeKind.VOID else "used"
        if kind == K.COMPOUND_STMT:
            return "discarded"
        if kind in (K.IF_STMT, *_LOOPS):
            parts = children(parent)
            index = _condition_index(parent, parts)
            is_condition = index is not None and parts[index] == child
            is_for_header = kind == K.FOR_STMT and parts and parts[-1] != child
            return "used" if is_condition or is_for_header else "discarded"
        if kind in (K.CASE_STMT, K.DEFAULT_STMT, K.LABEL_STMT):
            return "discarded" if children(parent)[-1] == child else "used"
        if kind == K.BINARY_OPERATOR:
            try:
                is_comma = parent.binary_operator.name == "Comma"
            except ValueError:
                is_comma = False
            if is_comma and children(parent)[0] == child:
                return "discarded"
        return "used"
    return "used"


# ---- API calls ----------------------------------------------------------------------------

_CUDA_API = re.compile(r"(?:cuda|cu)[A-Z]\w*")
_ARCH_QUERIES = frozenset({"get_cc_major", "get_cc_minor", "get_sm_version"})
_HOST_CHECKS = frozenset({"RuntimeCheck", "RuntimeDeviceCheck"})


def _is_api_name(name: str) -> bool:
    return name in _ARCH_QUERIES or name in _HOST_CHECKS or bool(_CUDA_API.fullmatch(name))


_CUDA_ERROR_TYPES = frozenset({"cudaError", "enum cudaError", "cudaError_t", "CUresult", "enum cudaError_enum",
                               "cudaError_enum"})


def _returns_cuda_error(call: ci.Cursor) -> bool:
    if canonical_name(call.type) in _CUDA_ERROR_TYPES:
        return True
    if call.type.kind not in (ci.TypeKind.DEPENDENT, ci.TypeKind.UNEXPOSED):
        return False
    # A call with dependent arguments has no type yet: ask the functions it may call.
    parts = children(call)
    callee = strip_parens(parts[0]) if parts else None
    named = [c for c in callee.get_children() if c.kind == K.OVERLOADED_DECL_REF] if callee is not None else []
    candidates = overloaded_decls(named[0]) if named else []
    return bool(candidates) and all(canonical_name(d.result_type) in _CUDA_ERROR_TYPES for d in candidates)


# ---- pointer origins in device code --------------------------------------------------------


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
    """Per-body dataflow: what local variables hold."""

    origins: dict[int, Origins] = field(default_factory=dict)  # device: local -> what it points into
    tensor_sources: dict[int, list[_TensorSource]] = field(default_factory=dict)  # host
    matcher_alignment: dict[int, AlignmentRequest | None] = field(default_factory=dict)
    matcher_dtypes: dict[int, tuple[MatcherDType, ...]] = field(default_factory=dict)
    dtype_options: dict[int, tuple[MatcherDType, ...]] = field(default_factory=dict)
    chain_calls: set[tuple[int, int]] = field(default_factory=set)


_INSPECTIONS = frozenset({"dtype", "shape", "sizes", "ndim", "dim", "numel", "device", "strides", "size",
                          "stride", "is_contiguous", "IsContiguous"})
_VECTOR_MEMBER_CALLS = frozenset({"load", "store"})
_WARP_ROW_CALLS = frozenset({"load_bytes", "store_bytes"})
_TYPED_CALLS = frozenset({"load_as", "store_as"})


class _BodyFacts:
    """Collects the facts of one function body in a single pre-order walk."""

    def __init__(self, model: SourceModel, subject: _Subject, cursor: ci.Cursor,
                 data: bytes, path: str) -> None:
        self.model = model
        self.facts = model.launcher_facts
        self.function = subject
        self.data = data
        self.path = path
        self.consts = Constants(data, path)
        self.state = _BodyState()
        self.device = subject.is_device
        params = [c for c in cursor.get_children() if c.kind == K.PARM_DECL]
        self.params = {p.hash: index for index, p in enumerate(params)}
        self.param_origins = {p.hash: (origin,) for index, p in enumerate(params)
                              if (origin := parameter(p, index)) is not None}
        self.launches = {(model.launches[i].span.start, model.launches[i].span.end): i for i in subject.launches}
        self.ancestors: list[ci.Cursor] = []  # of the node being visited, outermost first

    def run(self, cursor: ci.Cursor, body: ci.Cursor) -> None:
        if self.device:
            self._vector_parameters(cursor)
        self._visit(body, [])

    def _vector_parameters(self, cursor: ci.Cursor) -> None:
        """A parameter declared as a pointer to a vector type (`const float4*`): every
        access through it is vectorized."""
        for index, param in enumerate(c for c in cursor.get_children() if c.kind == K.PARM_DECL):
            type_ = param.type.get_canonical()
            if type_.kind != ci.TypeKind.POINTER:
                continue
            vector = self.consts.vector_type(type_.get_pointee())
            if vector is not None:
                self.facts.vector_accesses.append(VectorAccess(
                    self.function.usr, index, "", self._span(param), "vector_param", vector.width,
                    param.type.get_pointee().spelling, self.function.path))

    def _visit(self, root: ci.Cursor, ancestors: list[ci.Cursor]) -> None:
        """Pre-order over `root`'s subtree, each node seen with its ancestors (outermost
        first). An explicit stack, not recursion: generated code nests expressions thousands
        of levels deep, past Python's recursion limit."""
        base = len(ancestors)
        self.ancestors = ancestors
        pending = [(root, base)]  # (node, its depth = how many ancestors it has)
        while pending:
            node, depth = pending.pop()
            del ancestors[depth:]
            kind = node.kind
            if kind == K.CALL_EXPR:
                self._on_call(node, ancestors)
            elif kind == K.VAR_DECL:
                self._on_variable(node)
            elif kind == K.BINARY_OPERATOR:
                self._on_assignment(node)
                if not self.device:
                    self._on_alignment_test(node)
            elif self.device and kind in _VECTOR_CASTS:
                self._on_cast(node)
            elif kind == K.INIT_LIST_EXPR and not self.device:
                self._add_handoffs(node, "{...}", children(node))
            ancestors.append(node)
            pending.extend((child, depth + 1) for child in reversed(children(node)))
        del ancestors[base:]

    def _span(self, cursor: ci.Cursor) -> Span:
        return span_of(cursor.extent)

    def _member_name(self, member: ci.Cursor) -> str:
        """`x.name`'s name, also when `x` has a dependent type (libclang leaves it unnamed)."""
        if member.spelling:
            return member.spelling
        location = member.extent.end
        return trailing_name(self.data, member) if location.file and location.file.name == self.path else ""

    # -- dispatch --------------------------------------------------------------------------
    def _on_call(self, call: ci.Cursor, ancestors: list[ci.Cursor]) -> None:
        name = callee_name(call, self.data, self.path)
        if _is_api_name(name):
            self._add_api_call(call, name, ancestors)
        if self.device:
            self._device_call(call, name)
            return
        launch = self.launches.get(_offsets(call))
        if launch is not None:
            self._add_launch(call, launch)
        self._add_handoffs(call, name, _call_arguments(call))
        self._add_data_handoffs(call)
        if "align" in name.lower() and name != "ensure_alignment":
            self._add_alignment_tests(call, _call_arguments(call))
        obj = _member_call_object(call)
        tensor = self._tensor_name(obj) if obj is not None else None
        if tensor is not None and name == "data_ptr":
            in_check = condition_context(call, ancestors) == "check"
            self.facts.tensor_data_uses.append(TensorDataUse(self.function.usr, tensor, self._span(call), in_check))
        elif tensor is not None and name in _INSPECTIONS:
            self.facts.tensor_inspections.append(TensorInspection(
                self.function.usr, tensor, name, self._span(call), condition_context(call, ancestors)))
        elif name == "set_options" and _is_named_record(obj.type, "SymbolicDType"):
            self._add_dtype_options(call, obj)
        elif _offsets(call) not in self.state.chain_calls:
            self._add_matcher_chain(call, "")

    # -- API calls -------------------------------------------------------------------------
    def _add_api_call(self, call: ci.Cursor, name: str, ancestors: list[ci.Cursor]) -> None:
        parts = children(call)
        decl = referenced_of(call)
        qualified = _qualified(decl) if decl is not None and decl.kind != K.OVERLOADED_DECL_REF else ""
        self.facts.api_calls.append(ApiCall(
            function=self.function.usr,
            function_name=self.function.name,
            name=name,
            qualified_name=qualified,
            span=self._span(call),
            returns_cuda_error=_returns_cuda_error(call),
            result_use=result_use(call, ancestors),
            argument_names=tuple(self._argument_name(a) for a in parts[1:]),
        ))

    def _argument_name(self, argument: ci.Cursor) -> str:
        inner = strip_casts(argument)
        ref = referenced_of(inner) if inner.kind == K.DECL_REF_EXPR else None
        return ref.spelling if ref is not None else self.consts.text(argument)

    # -- host: tensors ---------------------------------------------------------------------
    def _tensor_name(self, expression: ci.Cursor) -> str | None:
        inner = strip_casts(expression)
        if inner.kind == K.CALL_EXPR and _is_constructor_call(inner):  # a by-value copy
            operands = expression_children(inner)
            inner = strip_casts(operands[0]) if len(operands) == 1 else inner
        if inner.kind != K.DECL_REF_EXPR:
            return None
        decl = referenced_of(inner)
        if decl is None or decl.kind not in (K.PARM_DECL, K.VAR_DECL) or not _is_tensor_type(decl.type):
            return None
        return decl.spelling

    def _add_handoffs(self, at: ci.Cursor, callee: str, values: list[ci.Cursor]) -> None:
        """Tensors passed on as a whole: call arguments, `{a, b}` lists, copies."""
        parts = children(at) if at.kind == K.CALL_EXPR else []
        callee_usr = function_usr(referenced_of(strip_parens(parts[0]))) if parts else ""
        for value in values:
            tensor = self._tensor_name(value)
            if tensor is not None:
                self.facts.tensor_handoffs.append(
                    TensorHandOff(self.function.usr, tensor, callee, callee_usr, self._span(at)))

    def _on_variable(self, decl: ci.Cursor) -> None:
        initializer = initializer_of(decl)
        if initializer is None:
            return
        if self.device:
            origins = self._origins(initializer)
            if origins:
                self.state.origins[decl.hash] = origins
            return
        if _is_named_record(decl.type, "TensorMatcher"):
            self._add_matcher_chain(initializer, decl.spelling, variable=decl)
            return
        self._add_handoffs(decl, decl.spelling, [initializer])
        sources = list(self._tensor_sources(initializer, "", decl.type))
        if sources:
            self.state.tensor_sources[decl.hash] = sources

    def _on_alignment_test(self, node: ci.Cursor) -> None:
        """`address % w` and `address & (w - 1)` over a tensor's data pointer."""
        parts = children(node)
        if _is_alignment_operator(node) and len(parts) == 2:
            self._add_alignment_tests(node, parts[:1])

    def _add_data_handoffs(self, call: ci.Cursor) -> None:
        parts = children(call)
        callee_usr = function_usr(referenced_of(strip_parens(parts[0]))) if parts else ""
        if not callee_usr:
            return
        for index, argument in enumerate(_call_arguments(call)):
            for source in self._tensor_sources(argument, ""):
                self.facts.data_handoffs.append(
                    DataHandOff(self.function.usr, source.tensor, callee_usr, index, source.data_use, source.field))

    def _add_alignment_tests(self, at: ci.Cursor, operands: list[ci.Cursor]) -> None:
        tensors = {source.tensor for operand in operands for source in self._tensor_sources(operand, "")}
        self.facts.alignment_tests.extend(
            AlignmentTest(self.function.usr, tensor, self._span(at)) for tensor in sorted(tensors))

    def _on_assignment(self, node: ci.Cursor) -> None:
        try:
            if node.binary_operator.name != "Assign":
                return
        except ValueError:
            return
        parts = children(node)
        if len(parts) != 2:
            return
        target, value = strip_parens(parts[0]), parts[1]
        if self.device:
            origins = self._origins(value)
            decl = referenced_of(target) if target.kind == K.DECL_REF_EXPR else None
            if origins and decl is not None and decl.kind == K.VAR_DECL:
                self.state.origins[decl.hash] = origins
            return
        field_name = ""
        if target.kind == K.MEMBER_REF_EXPR:  # params.src = x.data_ptr();
            field_name = self._member_name(target)
            bases = children(target)
            target = strip_casts(bases[0]) if bases else target
        decl = referenced_of(target) if target.kind == K.DECL_REF_EXPR else None
        if decl is None or decl.kind != K.VAR_DECL:
            return
        sources = list(self._tensor_sources(value, field_name))
        if sources:
            self.state.tensor_sources.setdefault(decl.hash, []).extend(sources)

    def _tensor_sources(self, expression: ci.Cursor, field_name: str,
                        record: ci.Type | None = None) -> Iterator[_TensorSource]:
        """The tensors whose data an expression carries, with the struct field each fills.
        `record` is the struct type an initializer list below initializes (a dependent
        `Params<T>{...}` list has no type of its own). Pre-order with an explicit stack, not
        recursion: generated code nests expressions thousands of levels deep."""
        pending: list[tuple[ci.Cursor, str, ci.Type | None]] = [(expression, field_name, record)]
        while pending:
            expression, field_name, record = pending.pop()
            node = strip_parens(expression)
            if node.kind == K.CALL_EXPR and callee_name(node) == "data_ptr":
                obj = _member_call_object(node)
                tensor = self._tensor_name(obj) if obj is not None else None
                if tensor is not None:
                    yield _TensorSource(field_name, tensor, self._span(node))
                    continue
            if node.kind == K.DECL_REF_EXPR:
                decl = referenced_of(node)
                if decl is not None and decl.hash in self.params and not self.device:
                    # a helper's parameter: the tensor (or params struct) a caller hands it
                    if _is_pointer_type(decl.type):
                        yield _TensorSource(field_name, f"#{self.params[decl.hash]}", self._span(node))
                    elif record_fields(decl.type.get_pointee() if decl.type.kind == ci.TypeKind.LVALUEREFERENCE
                                        else decl.type):
                        yield _TensorSource("*", f"#{self.params[decl.hash]}", self._span(node))
                    continue
                for source in self.state.tensor_sources.get(decl.hash if decl is not None else 0, []):
                    yield _TensorSource(source.field or field_name, source.tensor, source.data_use)
                continue
            if node.kind == K.INIT_LIST_EXPR:
                fields = record_fields(node.type) or (record_fields(record) if record is not None else [])
                elements = initializer_list_fields(node, field_name, fields)
                pending.extend((element, name, None) for element, name in reversed(elements))
                continue
            own_record = node.type if record_fields(node.type) else record
            pending.extend((child, field_name, own_record) for child in reversed(children(node)))

    # -- host: launches ----------------------------------------------------------------------
    def _add_launch(self, call: ci.Cursor, index: int) -> None:
        """The tensors whose data the arguments of the launch at `model.launches[index]` carry."""
        launch = self.model.launches[index]
        by_extent = {_offsets(c): c for c in call.get_children()}
        tensors = []
        for position, span in enumerate(launch.argument_spans):
            argument = by_extent.get((span.start, span.end))
            if argument is None:
                continue
            for source in self._tensor_sources(argument, ""):
                tensors.append(LaunchTensorArgument(position, source.field, source.tensor, source.data_use))
        self.model.launches[index] = replace(launch, tensors=tuple(tensors))

    # -- host: matcher chains ----------------------------------------------------------------
    def _add_dtype_options(self, call: ci.Cursor, obj: ci.Cursor) -> None:
        decl = referenced_of(strip_casts(obj))
        callee = strip_parens(children(call)[0])
        options = self._dtype_list(children(callee)[1:])
        if decl is not None and options:
            self.state.dtype_options[decl.hash] = options

    def _dtype_list(self, template_args: list[ci.Cursor]) -> tuple[MatcherDType, ...]:
        return tuple(MatcherDType(self.consts.text(c), self.consts.type_size(c))
                     for c in template_args if c.kind == K.TYPE_REF)

    def _add_matcher_chain(self, expression: ci.Cursor, variable_name: str,
                           variable: ci.Cursor | None = None) -> None:
        links, root = self._chain_links(expression)
        root_variable = referenced_of(root) if root.kind == K.DECL_REF_EXPR else None
        if root_variable is not None and _is_named_record(root_variable.type, "TensorMatcher"):
            key = root_variable.hash
            variable_name = root_variable.spelling
            alignment = self.state.matcher_alignment.get(key)
            dtypes = self.state.matcher_dtypes.get(key, ())
            dims: tuple[str, ...] = ()
        elif _constructs_matcher(root):
            key = variable.hash if variable is not None else None
            alignment, dtypes = None, ()
            dims = self._matcher_dims(root)
        else:
            return
        if not links and variable is None:
            return
        verified, alignments = [], []
        for name, call, template_args, arguments in links:
            self.state.chain_calls.add(_offsets(call))
            if name == "with_dtype":
                dtypes += self._dtype_list(template_args) + self._bound_dtypes(arguments)
            elif name == "ensure_alignment" and arguments:
                alignment = AlignmentRequest(self.consts.text(arguments[0]), self._link_span(call, name),
                                             self.consts.value(arguments[0]))
                alignments.append(alignment)
            elif name == "verify" and arguments:
                tensor = self._tensor_name(arguments[0])
                if tensor is not None:
                    verified.append(VerifiedTensor(tensor, self._link_span(call, name), alignment))
        if key is not None:
            self.state.matcher_alignment[key] = alignment
            self.state.matcher_dtypes[key] = dtypes
        self.facts.matcher_chains.append(MatcherChain(
            self.function.usr, self._span(expression), dims, dtypes, tuple(verified), tuple(alignments),
            variable_name))

    def _chain_links(self, expression: ci.Cursor) -> tuple[list, ci.Cursor]:
        """The `.name<targs>(args)` links of a method chain in source order, and its root."""
        links = []
        node = strip_parens(expression)
        while node.kind == K.CALL_EXPR:
            parts = children(node)
            callee = strip_parens(parts[0]) if parts else None
            if callee is None or callee.kind != K.MEMBER_REF_EXPR:
                break
            member_parts = children(callee)
            if not member_parts:
                break
            links.append((self._member_name(callee), node, member_parts[1:], parts[1:]))
            node = strip_parens(member_parts[0])
        links.reverse()
        return links, node

    def _bound_dtypes(self, arguments: list[ci.Cursor]) -> tuple[MatcherDType, ...]:
        if not arguments:
            return ()
        decl = referenced_of(strip_casts(arguments[0]))
        return self.state.dtype_options.get(decl.hash, ()) if decl is not None else ()

    def _matcher_dims(self, root: ci.Cursor) -> tuple[str, ...]:
        for node in walk(root):
            if node.kind == K.INIT_LIST_EXPR:
                return tuple(self.consts.text(c) for c in children(node))
        return ()

    def _link_span(self, call: ci.Cursor, name: str) -> Span:
        """From the method name to the end of the call (`ensure_alignment(16)`)."""
        whole = self._span(call)
        callee = strip_parens(children(call)[0])
        end = callee.extent.end
        width = len(name.encode())
        if end.line != whole.end_line and end.offset - width < whole.start:
            return whole
        return Span(end.line, max(1, end.column - width), whole.end_line, whole.end_column,
                    max(whole.start, end.offset - width), whole.end)

    # -- device: vector accesses ---------------------------------------------------------------
    def _origins(self, expression: ci.Cursor) -> Origins:
        """The parameters (and params-struct fields) a pointer expression may derive from."""
        return origins_of(expression, self._holds, self._member_name, callee_name)

    def _holds(self, declaration: ci.Cursor) -> Origins:
        """What a parameter or local variable of a device body points into."""
        if declaration.hash in self.params:
            return self.param_origins.get(declaration.hash, ())
        return self.state.origins.get(declaration.hash, ())

    def _device_call(self, call: ci.Cursor, name: str) -> None:
        obj = _member_call_object(call)
        arguments = _call_arguments(call)
        if obj is not None and name in _VECTOR_MEMBER_CALLS and arguments:
            accessor = self._accessor(obj)
            if accessor is not None:
                self._add_access(arguments[0], call, *accessor)
            return
        if obj is not None:
            return
        callee = strip_parens(children(call)[0]) if children(call) else None
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
            type_refs = [c for c in callee.get_children() if c.kind == K.TYPE_REF]
            vector = self.consts.vector_type(type_refs[0].type) if len(type_refs) == 1 else None
            if vector is not None:
                self._add_access(arguments[0], call, name, vector)
            return
        self._add_pointer_passes(call, callee, name, arguments)

    def _accessor(self, obj: ci.Cursor) -> tuple[str, VectorType] | None:
        """("aligned_vector" | "tile_memory", vector type) for the object of `.load`/`.store`."""
        node = strip_casts(obj)
        decl = referenced_of(node) if node.kind in (K.DECL_REF_EXPR, K.MEMBER_REF_EXPR) else None
        if decl is not None and decl.kind in (K.VAR_DECL, K.PARM_DECL, K.FIELD_DECL):
            return self._accessor_of_declaration(decl)
        if node.kind == K.CALL_EXPR:  # a temporary: tile::Memory<vec_t>::cta().load(...)
            return self._memory_accessor(strip_parens(children(node)[0])) if children(node) else None
        return None

    def _accessor_of_declaration(self, decl: ci.Cursor) -> tuple[str, VectorType] | None:
        type_ = decl.type
        if type_.get_canonical().get_size() > 0:
            if _is_named_record(type_, "Memory") and type_.get_num_template_arguments() == 1:
                element = self.consts.vector_type(type_.get_template_argument_type(0))
                return ("tile_memory", element) if element is not None else None
            vector = self.consts.vector_type(type_)
            is_aligned_vector = bare_record_name(canonical_name(type_)) in VECTOR_TEMPLATES
            return ("aligned_vector", vector) if vector is not None and is_aligned_vector else None
        vector = self.consts.vector_type(type_, written=decl)
        if vector is not None:
            return "aligned_vector", vector
        initializer = initializer_of(decl)
        if initializer is not None and strip_casts(initializer).kind == K.CALL_EXPR:
            call = strip_casts(initializer)
            return self._memory_accessor(strip_parens(children(call)[0])) if children(call) else None
        return self._memory_accessor(decl)

    def _memory_accessor(self, spelled: ci.Cursor) -> tuple[str, VectorType] | None:
        template, args = template_spelling(spelled)
        if template != "Memory" or len(args) != 1 or args[0].kind != K.TYPE_REF:
            return None
        element = self.consts.vector_type(args[0].type)
        return ("tile_memory", element) if element is not None else None

    def _on_cast(self, cast: ci.Cursor) -> None:
        target = cast.type
        if target.kind != ci.TypeKind.POINTER and target.get_canonical().kind != ci.TypeKind.POINTER:
            return
        type_refs = [c for c in cast.get_children() if c.kind == K.TYPE_REF]
        vector = self.consts.vector_type(target.get_pointee())
        if vector is None and len(type_refs) == 1:
            vector = self.consts.vector_type(type_refs[0].type)
        operands = expression_children(cast)
        if vector is not None and operands:
            self._add_access(operands[-1], cast, "cast", vector)

    def _add_access(self, pointer: ci.Cursor, at: ci.Cursor, kind: str, vector: VectorType) -> None:
        tested = self._alignment_tested_origins()
        untested = tuple(o for o in self._origins(pointer) if o not in tested)
        for param, field_name in _outermost(untested):  # `if ((uintptr_t)p % 16 == 0)`: the kernel checks
            self.facts.vector_accesses.append(VectorAccess(
                self.function.usr, param, field_name, self._span(at), kind, vector.width,
                vector.text, self.function.path))

    def _alignment_tested_origins(self) -> set[Origin]:
        """Pointers whose address an enclosing `if` tests for alignment (`% w`, `& (w - 1)`)."""
        tested: set[Origin] = set()
        for statement in self.ancestors:
            if statement.kind != K.IF_STMT:
                continue
            parts = children(statement)
            index = _condition_index(statement, parts)
            if index is None:
                continue
            for node in walk(parts[index]):
                if node.kind == K.BINARY_OPERATOR and _is_alignment_operator(node):
                    operand = children(node)[0]
                    references = [n for n in (operand, *walk(operand))
                                  if n.kind in (K.DECL_REF_EXPR, K.MEMBER_REF_EXPR)]
                    for reference in references:
                        tested.update(self._origins(reference))
        return tested

    def _add_pointer_passes(self, call: ci.Cursor, callee: ci.Cursor, name: str,
                            arguments: list[ci.Cursor]) -> None:
        if name.startswith("operator"):
            return
        passed = [(index, self._origins(a)) for index, a in enumerate(arguments) if _may_carry_pointer(a)]
        passed = [(index, origins) for index, origins in passed if origins]
        if not passed:
            return
        declaration = function_declaration(referenced_of(callee))
        callee_usr = declaration.get_usr() if declaration is not None else ""
        template_params = template_param_names(declaration) if declaration is not None else ()
        if declaration is not None:
            analyze_elsewhere(self.model, declaration, self.path)
        template_args = self.consts.template_args(callee) or ()
        for index, origins in passed:
            for param, field_name in _outermost(origins):
                self.facts.pointer_passes.append(PointerPass(
                    self.function.usr, callee_usr, name, self._span(call), index, param,
                    field_name, template_args, template_params))


def _outermost(origins: Origins) -> list[tuple[int, str]]:
    """(parameter, outermost field) of each origin, once: the part a launcher fills (a
    tensor's data pointer in `params.src`, or a whole struct handed to a helper)."""
    return list(dict.fromkeys((origin.param, origin.field) for origin in origins))


def _constructs_matcher(root: ci.Cursor) -> bool:
    node = root
    for _ in range(4):
        if node.kind == K.CALL_EXPR and node.spelling == "TensorMatcher":
            return True
        if node.kind not in (K.CXX_FUNCTIONAL_CAST_EXPR, *PARENS_AND_CONVERSIONS):
            return False
        if any(c.kind == K.TYPE_REF and bare_record_name(c.spelling) == "TensorMatcher"
               for c in node.get_children()):
            return True
        operands = expression_children(node)
        if not operands:
            return False
        node = operands[0]
    return False


def _qualified(decl: ci.Cursor) -> str:
    parts = []
    node: ci.Cursor | None = decl
    while node is not None and node.kind != K.TRANSLATION_UNIT:
        if node.spelling:
            parts.append(node.spelling)
        node = node.semantic_parent
    return "::".join(reversed(parts))


def collect_function_facts(model: SourceModel, function: Function, cursor: ci.Cursor,
                           body: ci.Cursor, data: bytes, path: str) -> None:
    """Add the launcher / kernel-interface facts of one function body to `model`."""
    if is_implicit_instantiation(cursor):
        return  # the template's own body already gave (more general) facts
    launches = tuple(index for index, launch in enumerate(model.launches) if launch.launcher == function.qualified_name
                     and function.body is not None and function.body.contains(launch.span))
    is_device = function.kind in (FunctionKind.KERNEL, FunctionKind.DEVICE)
    subject = _Subject(function.usr, function.name, is_device, launches)
    _BodyFacts(model, subject, cursor, data, path).run(cursor, body)


def analyze_elsewhere(model: SourceModel, declaration: ci.Cursor, checked_path: str) -> None:
    """Collect the kernel-side facts of a kernel / device function defined in an included
    header (once per translation unit), so a launch or pointer hand-off can be followed
    into it. Its facts carry the header's path."""
    definition = declaration.get_definition() or declaration
    location = definition.location
    if location.file is None or location.file.name == checked_path:
        return  # the checked file's own functions are visited by the extractor
    usr = definition.get_usr()
    if not usr or usr in model.launcher_facts.foreign_functions:
        return
    model.launcher_facts.foreign_functions.append(usr)
    is_device = any(c.kind in (K.CUDADEVICE_ATTR, K.CUDAGLOBAL_ATTR) for c in definition.get_children())
    body = next((c for c in definition.get_children() if c.kind == K.COMPOUND_STMT), None)
    data = _file_bytes(location.file.name)
    if not is_device or body is None or data is None:
        return
    subject = _Subject(usr, definition.spelling, True, path=location.file.name)
    _BodyFacts(model, subject, definition, data, location.file.name).run(definition, body)


def _file_bytes(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None
