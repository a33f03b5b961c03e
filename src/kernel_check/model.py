"""The extracted C++/CUDA model: plain dataclasses that rules read instead of clang cursors.

`src/kernel_check/clang/extract.py` builds a `SourceModel` in one pass over a translation unit.
Positions are `Span`s in the checked file (1-based line/column, 0-based byte offsets).
Only entities whose declaration lies in the checked file are recorded; included headers
are checked when they are themselves given to the checker.
"""

from __future__ import annotations

import enum
import functools
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

# Where a line ends, as clang (and every editor) numbers lines: `\r\n`, a lone `\r` or `\n`.
# Not `str.splitlines()`, which also breaks at \f, \v, \x1c-\x1e, \x85, U+2028 and U+2029 and
# would put a line number on a line clang does not have.
_LINE_BREAK = r"\r\n|\r|\n"
_LINE_BREAK_RE = re.compile(_LINE_BREAK)
_LINE_BREAK_BYTES_RE = re.compile(_LINE_BREAK.encode())


def split_lines(text: str) -> list[str]:
    """The lines of `text` as clang numbers them: line N is item N - 1."""
    return _LINE_BREAK_RE.split(text)


def line_starts(data: bytes) -> list[int]:
    """The byte offset each line of `data` starts at, as clang numbers lines: line N at N - 1."""
    return [0, *(match.end() for match in _LINE_BREAK_BYTES_RE.finditer(data))]


def split_template_arguments(text: str) -> list[str]:
    """Template argument text (a wrapper manifest symbol's `<...>`) split at its top-level
    commas: `T, Cfg<A, B>, (x > 1)` -> [`T`, `Cfg<A, B>`, `(x > 1)`]."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char in "([{<":
            depth += 1
        elif char in ")]}>" and depth > 0:
            depth -= 1
        elif char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    tail = "".join(current).strip()
    return [*parts, tail] if tail or parts else []


@dataclass(frozen=True)
class Span:
    line: int
    column: int
    end_line: int
    end_column: int
    start: int  # byte offset
    end: int  # byte offset, exclusive

    def contains(self, other: Span) -> bool:
        return self.start <= other.start and other.end <= self.end


class FunctionKind(enum.Enum):
    KERNEL = "kernel"  # __global__
    DEVICE = "device"  # __device__ (SGL_DEVICE), possibly also __host__
    HOST = "host"


@dataclass(frozen=True)
class DocParamName:
    """One name a `\\param` or `\\tparam` command documents, with where its text stands."""

    command: str  # "param" or "tparam"
    name: str
    line: int
    column: int  # character column of the command's backslash (or `@`), 1-based
    end_column: int  # character column just after the name


@dataclass(frozen=True)
class DocComment:
    """A Doxygen-style comment attached to a declaration."""

    text: str
    span: Span
    is_doxygen: bool  # `///`, `//!`, `/**` or `/*!`
    has_brief: bool
    params: tuple[str, ...]  # names given to \param / @param
    tparams: tuple[str, ...]  # names given to \tparam / @tparam
    has_return: bool
    param_spans: tuple[DocParamName, ...] = ()  # where each \param / \tparam name is written
    copies_doc: bool = False  # \copydoc, \copydetails, \overload or \inheritdoc: documented elsewhere


@dataclass(frozen=True)
class TypeInfo:
    spelling: str
    is_pointer: bool
    pointee_const: bool
    is_restrict: bool
    is_reference: bool
    canonical: str
    is_dependent: bool = False
    pointee_volatile: bool = False


@dataclass(frozen=True)
class Param:
    name: str
    type: TypeInfo
    span: Span
    # Byte offset right after the outermost `*` of a pointer declarator, where a
    # `__restrict__` can be inserted (None when the type is spelled through an alias).
    restrict_insert_offset: int | None = None
    is_grid_constant: bool = False


@dataclass(frozen=True)
class TemplateParam:
    name: str
    kind: str  # "type", "non_type", "template"
    type_spelling: str = ""


@dataclass(frozen=True)
class Field:
    name: str
    type: TypeInfo
    span: Span
    restrict_insert_offset: int | None = None


@dataclass
class Struct:
    name: str
    qualified_name: str
    span: Span
    name_span: Span
    fields: list[Field]
    template_params: list[TemplateParam]
    doc: DocComment | None
    is_exported: bool
    is_class: bool
    is_definition: bool
    access: str = ""  # "public"/"protected"/"private" for a nested record, "" at namespace scope
    usr: str = ""
    owner_usr: str = ""  # the enclosing record's USR for a nested record, "" at namespace scope
    # `template <> struct T<int>` or `template <class U> struct T<U*>`: documented by the primary.
    is_specialization: bool = False
    from_macro: bool = False  # declared by a macro expansion (its name is not written here)


@dataclass
class Function:
    name: str
    qualified_name: str
    kind: FunctionKind
    span: Span
    name_span: Span
    params: list[Param]
    template_params: list[TemplateParam]
    return_type: str
    doc: DocComment | None
    is_exported: bool
    is_definition: bool
    is_method: bool
    body: Span | None
    is_host_device: bool = False
    # How a device function's specifiers were spelled: "SGL_DEVICE", "__device__ __forceinline__"...
    specifier_spelling: str = ""
    specifier_span: Span | None = None
    usr: str = ""
    access: str = ""  # "public"/"protected"/"private" for a method, "" otherwise
    is_deleted: bool = False  # `= delete`
    is_defaulted: bool = False  # `= default`
    owner_usr: str = ""  # the enclosing record's USR for a member, "" at namespace scope
    from_macro: bool = False  # declared by a macro expansion (its name is not written here)
    return_canonical: str = ""  # the return type with aliases resolved (`PrefillPlan` -> `tvm::ffi::Tuple<...>`)


# ---- launcher facts (KC120, KC121, KC131, KC140, KC141, KC150, KC160) ----
# Written by src/kernel_check/clang/kernel_interface.py. Functions are named by their clang USR
# (`Function.usr`); a lambda's facts belong to the function that contains it.


@dataclass(frozen=True)
class ConstExpr:
    """A compile-time integer kept symbolic over template parameters, so that a rule can
    evaluate it once per instantiation.

    `op` is one of: "int" (`value`); "param" (`name`, a non-type template parameter, or
    "arg:<name>" for a function parameter of an inlined constexpr helper);
    "sizeof" (`name`, the size in bytes of a template type parameter); "unknown" (`text`, and
    `name` when it is one named value: a variable, a member of a type parameter);
    a unary operator ("neg", "not", "bitnot") or a C++ binary operator spelling ("+", "<<",
    "==", "&&", ...) over `args`; "?:" over (condition, then, else); or a constexpr helper
    over `args`: "min", "max", "gcd", "vec_bytes" (`LoadStorePattern::get_vec_bytes<kBytes,
    kPattern>()` of sgl_kernel/warp.cuh).
    """

    op: str
    value: int = 0
    name: str = ""
    args: tuple[ConstExpr, ...] = ()
    text: str = ""

    def free_names(self) -> frozenset[str]:
        """The template parameters the value depends on ("param" and "sizeof" names)."""
        own = frozenset((self.name,)) if self.op in ("param", "sizeof") else frozenset()
        return own.union(*(arg.free_names() for arg in self.args))

    def substitute(self, mapping: Mapping[str, ConstExpr]) -> ConstExpr:
        """This expression with parameters replaced (names missing from `mapping` stay)."""
        if self.op in ("param", "sizeof"):
            return mapping.get(self.name, self)
        if not self.args:
            return self
        return ConstExpr(self.op, self.value, self.name, tuple(a.substitute(mapping) for a in self.args), self.text)

    def evaluate(self, env: Mapping[str, int]) -> int | None:
        """The value with template parameters bound by `env`; None when unknown."""
        if self.op == "int":
            return self.value
        if self.op in ("param", "sizeof"):
            return env.get(self.name)
        if self.op == "?:":
            condition = self.args[0].evaluate(env)
            return None if condition is None else self.args[1 if condition else 2].evaluate(env)
        values = [arg.evaluate(env) for arg in self.args]
        known = [v for v in values if v is not None]
        if not self.args or len(known) < len(values):
            return None
        return apply_const_op(self.op, known)


def apply_const_op(op: str, values: list[int]) -> int | None:
    """`op` (a `ConstExpr` operator) applied to integer operands with C++ semantics: division
    truncates toward zero, the remainder takes the dividend's sign; None where C++ leaves the
    result undefined (division by zero, a shift by a negative or too large count)."""
    if op in _UNARY_CONST_OPS and len(values) == 1:
        return _UNARY_CONST_OPS[op](values[0])
    if op == "vec_bytes" and len(values) == 2:
        return _vec_bytes(*values)
    if op in ("min", "max", "gcd") and values:
        return _FOLDS[op](*values)
    if op in ("/", "%") and len(values) == 2 and values[1] == 0:
        return None
    if op in ("<<", ">>") and len(values) == 2 and not 0 <= values[1] < 64:
        return None
    if op in _BINARY_CONST_OPS and len(values) == 2:
        return _BINARY_CONST_OPS[op](values[0], values[1])
    return None


def _vec_bytes(row_bytes: int, pattern: int) -> int | None:
    """`LoadStorePattern::get_vec_bytes<row_bytes, pattern>()`, as sgl_kernel/warp.cuh defines it."""
    cap = abs(pattern)
    if row_bytes <= 0 or cap == 0 or cap > 32 or cap & (cap - 1):
        return None
    width = math.gcd(row_bytes, cap)
    if pattern > 0:
        return width
    while width > 4 and row_bytes // width < 32:
        width //= 2
    return math.gcd(row_bytes, 4) if width < 4 else width


def _truncating_quotient(a: int, b: int) -> int:
    """C++ `a / b` on integers: the exact quotient rounded toward zero (Python's `//` floors)."""
    quotient = abs(a) // abs(b)
    return quotient if (a < 0) == (b < 0) else -quotient


# clang's name of a binary operator (`BinaryOperator.name`) -> its `ConstExpr` operator
BINARY_OPERATOR_SPELLINGS = {
    "Mul": "*",
    "Div": "/",
    "Rem": "%",
    "Add": "+",
    "Sub": "-",
    "Shl": "<<",
    "Shr": ">>",
    "LT": "<",
    "GT": ">",
    "LE": "<=",
    "GE": ">=",
    "EQ": "==",
    "NE": "!=",
    "And": "&",
    "Xor": "^",
    "Or": "|",
    "LAnd": "&&",
    "LOr": "||",
}
_UNARY_CONST_OPS: dict[str, Callable[[int], int]] = {
    "neg": lambda a: -a,
    "not": lambda a: int(not a),
    "bitnot": lambda a: ~a,
}
_FOLDS: dict[str, Callable[..., int]] = {"min": min, "max": max, "gcd": math.gcd}
_BINARY_CONST_OPS: dict[str, Callable[[int, int], int]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: _truncating_quotient(a, b),
    "%": lambda a, b: a - b * _truncating_quotient(a, b),
    "<<": lambda a, b: a << b,
    ">>": lambda a, b: a >> b,
    "&": lambda a, b: a & b,
    "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b,
    "<": lambda a, b: int(a < b),
    ">": lambda a, b: int(a > b),
    "<=": lambda a, b: int(a <= b),
    ">=": lambda a, b: int(a >= b),
    "==": lambda a, b: int(a == b),
    "!=": lambda a, b: int(a != b),
    "&&": lambda a, b: int(bool(a and b)),
    "||": lambda a, b: int(bool(a or b)),
}


@dataclass(frozen=True)
class MatcherDType:
    """One type of `.with_dtype<...>()` (or of the `SymbolicDType` options it binds)."""

    text: str  # as written: "fp16_t", "T"
    canonical: str  # the type it names: "__half" for "fp16_t"; a template parameter's text
    size: ConstExpr  # bytes: "int" for a concrete type, "sizeof" for a template parameter


@dataclass(frozen=True)
class AlignmentRequest:
    """An `.ensure_alignment(w)` call of a matcher chain."""

    text: str  # the argument as written
    span: Span  # the `ensure_alignment(...)` call
    value: ConstExpr


@dataclass(frozen=True)
class VerifiedTensor:
    """One `.verify(x)` of a chain: the tensor and the alignment the matcher then checks."""

    name: str  # the TensorView (parameter or local) passed to verify
    span: Span
    alignment: AlignmentRequest | None  # the last ensure_alignment before this verify


@dataclass(frozen=True)
class MatcherChain:
    """A `TensorMatcher({dims...}).with_...().verify(...)` chain (or a statement continuing
    a `TensorMatcher` variable)."""

    function: str
    span: Span
    dims: tuple[str, ...]
    dtypes: tuple[MatcherDType, ...]
    verified: tuple[VerifiedTensor, ...]
    alignments: tuple[AlignmentRequest, ...]
    matcher_variable: str = ""  # the TensorMatcher local it builds or continues, if any
    dim_values: tuple[ConstExpr, ...] = ()  # each of `dims` evaluated ("unknown" for a SymbolicSize)
    dtype_symbol: str = ""  # the SymbolicDType local `.with_dtype(sym)` binds: one dtype for its matchers
    # `.with_strides({S, 1})`: each stride as written and evaluated ("unknown" for a
    # SymbolicSize, -1 for any); () without one (the tensor is contiguous)
    strides: tuple[str, ...] = ()
    stride_values: tuple[ConstExpr, ...] = ()


@dataclass(frozen=True)
class TensorDataUse:
    """`x.data_ptr()` of a TensorView `x`, or a call of a helper that only returns it
    (`cptr(x)`); not one only compared with null or tested as a bool. A pointer local it
    initializes (`void* p = x.data_ptr();`) that is tested for null before any other
    reference (`p != nullptr`: is the optional tensor there?) is read where its first other
    reference is (`read_at`), and one only tested is no use; a local read without such a
    probe is a use where the call is."""

    function: str
    tensor: str
    span: Span
    in_check: bool  # inside a check condition (e.g. a hand-written alignment check)
    read_at: int | None = None  # offset of the local's first reading reference; None: the call reads

    @property
    def first_read(self) -> int:
        """The offset where the data pointer is first used for more than a null test."""
        return self.span.start if self.read_at is None else self.read_at


@dataclass(frozen=True)
class DataHandOff:
    """A host call argument that carries a tensor's data pointer (`helper(x.data_ptr(), ...)`,
    or a params struct holding it in `field`) to parameter `argument` of a function of the
    file. In that function the parameter stands for the tensor: its launches name it
    `#<argument>` (a pointer) or `#<argument>` with field `*` (a struct: any of its fields)."""

    function: str
    tensor: str
    callee_usr: str
    argument: int
    span: Span
    field: str = ""


@dataclass(frozen=True)
class AlignmentTest:
    """A launcher tests the address of a tensor's data for alignment at run time:
    `reinterpret_cast<uintptr_t>(x.data_ptr()) % 16`, `... & 15`, or a call of a helper
    named `...align...` on it (then it may reject the tensor or pick a scalar kernel)."""

    function: str
    tensor: str
    span: Span


@dataclass(frozen=True)
class LaunchTensorArgument:
    """A launch argument that carries a tensor's data pointer."""

    argument: int  # the kernel parameter index
    field: str  # the params-struct field it initializes; "" when the pointer is the argument
    tensor: str
    data_use: Span  # the data_ptr() call


@dataclass(frozen=True)
class LaunchedKernel:
    """One kernel a launch can launch: the one its kernel expression names (`kern<T, 8>`,
    `&kern<...>`), or each one a selection picks from (either branch of a ternary, a
    `constexpr auto kernel = ...` variable or member variable template, a return of an
    immediately invoked lambda or of a helper such as `get_kernel<T>(n)`, what a lambda that
    launches its parameter is called with)."""

    name: str
    usr: str  # of the function template (or function), as in Function.usr
    template_params: tuple[str, ...]  # the kernel's template parameter names
    # The explicit template arguments in the launcher's scope, evaluated (a type as its size in
    # bytes); () when their positions cannot be told apart (a nested template-id).
    template_args: tuple[ConstExpr, ...]
    template_arg_texts: tuple[str, ...]  # each argument as written, whitespace collapsed
    guard: ConstExpr | None = None  # when this one is launched (None: always)

    def argument_for(self, param: str) -> tuple[str, ConstExpr] | None:
        """The written text and value of the argument bound to template parameter `param`."""
        if param not in self.template_params:
            return None
        index = self.template_params.index(param)
        if index >= len(self.template_arg_texts):
            return None
        value = (
            self.template_args[index]
            if index < len(self.template_args)
            else ConstExpr("unknown", text=self.template_arg_texts[index])
        )
        return self.template_arg_texts[index], value


@dataclass(frozen=True)
class PdlFlag:
    """The PDL switch of a launch: `x` of `.enable_pdl(x)` or `.config({.use_pdl = x})`."""

    value: ConstExpr  # in the launcher's scope; `enable_pdl()` is `true`
    text: str  # as written, whitespace collapsed

    @property
    def always_off(self) -> bool:
        return self.value.evaluate({}) == 0

    @property
    def always_on(self) -> bool:
        return self.value.evaluate({}) not in (None, 0)


@dataclass(frozen=True)
class Launch:
    """A kernel launch, `LaunchKernel(...)(kernel, args...)` or `kernel<<<...>>>(args...)`,
    resolved once (src/kernel_check/clang/launches.py) for every rule."""

    span: Span
    syntax: str  # "launch_kernel", "triple_chevron" or "runtime_api" (`cudaLaunchKernel`, `cudaLaunchKernelEx`)
    launcher: str  # qualified name of the enclosing function
    launcher_usr: str
    # Every kernel it can launch, the one the expression names first; () when unresolved.
    kernels: tuple[LaunchedKernel, ...]
    argument_texts: tuple[str, ...]
    argument_spans: tuple[Span, ...]  # one per kernel argument
    pdl: PdlFlag | None  # None when the launch does not enable PDL
    # The arguments that carry a tensor's data (filled by the launcher's body walk,
    # kernel_interface.py; () for a launch in device code).
    tensors: tuple[LaunchTensorArgument, ...] = ()
    # A later statement of its block reads the launch error (`cudaPeekAtLastError()` checked,
    # returned or stored; filled by the launcher's body walk)
    error_checked: bool = False

    @property
    def pdl_off(self) -> bool:
        """The launch runs without PDL whatever the instantiation."""
        return self.pdl is None or self.pdl.always_off


@dataclass(frozen=True)
class TensorInspection:
    """A TensorView query (`dtype()`, `shape()`, `ndim()`, `device()`, `strides()`,
    `size(i)`, `stride(i)`, `is_contiguous()`) in host code."""

    function: str
    tensor: str
    method: str
    span: Span
    # "check": the condition of CHECK_HOST / RuntimeCheck / assert / an `if` whose branch
    # throws; "condition": another condition; "value": anything else.
    context: str


@dataclass(frozen=True)
class TensorHandOff:
    """A TensorView passed on as a whole (which may get it verified elsewhere): a call
    argument, an element of a `{a, b}` list, or the initializer of a copy."""

    function: str
    tensor: str
    callee: str  # the called function's name; "{...}" for a list; the variable for a copy
    callee_usr: str  # "" when unresolved (dependent call)
    span: Span


@dataclass(frozen=True)
class ApiCall:
    """A call of a CUDA runtime/driver API, an arch query or a host check function."""

    function: str
    function_name: str  # the enclosing function's name
    name: str  # the callee's name
    qualified_name: str  # the callee's qualified name ("" when unresolved)
    span: Span
    returns_cuda_error: bool
    # "discarded", "void_cast" (explicit `(void)`), "used", or "checked_after" (a launch whose
    # result is discarded but whose error a later statement reads, as `launch_error_checked`)
    result_use: str
    argument_names: tuple[str, ...]  # each argument's referenced name, else its text
    # The local it writes its answer to (`&major`) is read, and only to refuse: in the condition
    # of a check that fails or in that check's failure message (a device precondition)
    output_only_refuses: bool = False


@dataclass(frozen=True)
class VolatileRead:
    """A kernel's or device function's pointer parameter (or pointer field of a by-value params
    struct) converted to a pointer to volatile data (`(const volatile int*)flag`): the kernel
    polls memory that another agent writes while it runs."""

    function: str
    param_index: int
    field: str  # the params-struct field; "" for a pointer parameter
    span: Span


@dataclass(frozen=True)
class VectorAccess:
    """A vectorized global access in a kernel or device function through a pointer that
    came in as a parameter (or a pointer field of a by-value params struct)."""

    function: str
    param_index: int
    field: str  # the params-struct field; "" for a pointer parameter
    span: Span
    # "aligned_vector", "tile_memory", "warp_bytes", "load_as", "store_as", "cast", or
    # "vector_param" (a parameter declared as a pointer to a vector type; `span` is the parameter)
    kind: str
    width: ConstExpr  # bytes per access, over the function's template parameters
    type_text: str  # the vector type as written
    path: str = ""  # the header the function is defined in; "" for the checked file


@dataclass(frozen=True)
class PointerPass:
    """A device call that receives a pointer derived from a parameter of the caller."""

    function: str
    callee_usr: str
    callee_name: str
    span: Span
    argument: int  # the callee's parameter index
    param_index: int  # the caller's parameter the pointer came from
    field: str
    template_args: tuple[ConstExpr, ...]  # explicit template arguments of the callee
    callee_template_params: tuple[str, ...] = ()  # the callee's template parameter names


@dataclass(frozen=True)
class TemplateCheck:
    """A condition over template parameters the code requires: a `static_assert` (the build
    fails without it) or a `RuntimeCheck` whose condition names template parameters (the call
    fails without it), in a function body or a class template's body."""

    function: str  # USR of the function, or of the class template whose body holds it
    kind: str  # "static_assert" or "RuntimeCheck"
    condition: ConstExpr  # evaluates to None where it names something the model does not know
    text: str  # the condition as written
    span: Span


@dataclass(frozen=True)
class TemplateInstantiation:
    """A place the file names a specialization of a template with its arguments: a call or
    reference of a function template's (`launch<4, true>(...)`) or of a member of a class
    template's (`Gate<128>::run(...)`, `&Gate<128>::run`): what the code builds it with."""

    template: str  # USR of the function template, or of the class template
    arguments: tuple[int | None, ...]  # each argument's integer value (a bool's `true`: -1); None: a type, or not known


@dataclass(frozen=True)
class ParameterTest:
    """A host function's test of a parameter that is not a tensor: `x.has_value()` or
    `x.defined()` of an `Optional` (the function accepts it absent), or `s == "literal"` /
    `s != "literal"` of a string (a value the function accepts or rejects)."""

    function: str
    parameter: str
    test: str  # "present" (has_value / defined) or "equals" (== / != a string literal)
    span: Span
    literal: str = ""  # the string an "equals" test compares with


@dataclass
class LauncherFacts:
    matcher_chains: list[MatcherChain] = field(default_factory=list)
    tensor_data_uses: list[TensorDataUse] = field(default_factory=list)
    alignment_tests: list[AlignmentTest] = field(default_factory=list)
    data_handoffs: list[DataHandOff] = field(default_factory=list)
    tensor_inspections: list[TensorInspection] = field(default_factory=list)
    tensor_handoffs: list[TensorHandOff] = field(default_factory=list)
    api_calls: list[ApiCall] = field(default_factory=list)
    vector_accesses: list[VectorAccess] = field(default_factory=list)
    volatile_reads: list[VolatileRead] = field(default_factory=list)
    pointer_passes: list[PointerPass] = field(default_factory=list)
    template_checks: list[TemplateCheck] = field(default_factory=list)
    parameter_tests: list[ParameterTest] = field(default_factory=list)
    # USRs of kernels / device functions of included headers whose facts were collected
    # because a launch or a pointer hand-off of this file reaches them.
    foreign_functions: list[str] = field(default_factory=list)


# ---- end of launcher facts ----

# ---- integer and scope facts (KC110, KC111, KC112, KC151, KC320, KC321, KC330) ----
# Written by src/kernel_check/clang/index_values.py (over tier 1, src/kernel_check/clang/program.py) and
# src/kernel_check/clang/scope_facts.py. Functions are named by their clang USR (`Function.usr`);
# a lambda's facts belong to the function that contains it.


class IntegerDeclKind(enum.Enum):
    PARAM = "param"  # a function or lambda parameter
    FIELD = "field"  # a non-static data member
    LOCAL = "local"  # a variable declared in a function (or lambda) body


@dataclass(frozen=True)
class IntegerDecl:
    """A parameter, field or local variable whose type is written with the built-in integer
    keywords (`int`, `unsigned`, `long long`...) instead of a fixed-width alias. Only the
    spelling counts: `int32_t` is also `int` to clang, but is not recorded."""

    name: str
    keywords: str  # the integer keywords as written: "int", "unsigned int", "long long"
    kind: IntegerDeclKind
    owner: str  # qualified name of the declaring function (or struct, for a field)
    owner_usr: str  # USR of the declaring function ("" for a field)
    span: Span  # the integer keywords
    name_span: Span
    declarator: str = "value"  # "value", "pointer", "reference" or "array"
    in_lambda: bool = False
    is_constexpr: bool = False
    has_constant_init: bool = False  # `const int k = 4 * kVec;`: a constant by another spelling
    # For the counter of a `for` loop: whether its bound is a compile-time constant.
    loop_bound_constant: bool | None = None
    c_api: str = ""  # the C function whose `int*` out-parameter or `int` result it holds
    shape_source: str = ""  # the shape/stride expression it is initialized from


@dataclass(frozen=True)
class SizeNarrowing:
    """An implicit conversion of a 64-bit value derived from a tensor shape or stride
    (`SymbolicSize::unwrap()`, `TensorView::size(i)`/`stride(i)`/`numel()`/`shape()[i]`) to
    a narrower integer type. Explicit casts and `dim3` grid/block arguments are not recorded."""

    span: Span  # the converted expression
    text: str  # that expression as written
    source: str  # the shape/stride expression it derives from, e.g. "N.unwrap()"
    source_type: str
    target_type: str
    context: str  # "initialization", "assignment", "compound assignment", "argument", "return", "expression"
    function_usr: str
    target: str = ""  # the variable initialized or assigned
    target_offset: int | None = None  # byte offset of that variable's declared name


@dataclass(frozen=True)
class ShapeArgument:
    """A 64-bit shape/stride-derived value passed unconverted to a forwarding call
    (`LaunchKernel(...)(kernel, args...)` converts it only inside the launcher)."""

    span: Span
    text: str
    type: str
    source: str  # the shape/stride expression it derives from


@dataclass(frozen=True)
class IndexProduct:
    """A multiplication computed in 32 bits with a `blockIdx` or `gridDim` factor (the maximal
    such product: `blockIdx.x * blockDim.x * n` is one fact)."""

    span: Span
    text: str
    function_usr: str
    builtins: tuple[str, ...]  # built-in factors: "blockIdx.x", "blockDim.x", "gridDim.y"...
    constant_factors: int  # factors that are compile-time constants
    value_factors: tuple[str, ...]  # the other runtime factors, as written
    result_type: str
    widened: bool = False  # the 32-bit result is converted to 64 bits later: widened too late
    stored_wide: bool = False  # ... by storing it into a 64-bit variable (`int64_t i = ...`)
    derived: bool = False  # a factor is a value computed from grid products (`warp_id = tid / 32`)


@dataclass(frozen=True)
class LaneModulo:
    """`threadIdx.x % W` / `threadIdx.x & (W - 1)` for a warp or warp-group width W, and the
    first place the value (or a variable holding it) addresses memory."""

    span: Span
    text: str
    width: int
    function_usr: str
    address_use: Span | None = None
    address_kind: str = ""  # "subscript", "pointer arithmetic", "load/store offset"
    via: str = ""  # the variable it flows through; "" when it indexes directly


@dataclass
class IntegerFacts:
    integer_decls: list[IntegerDecl] = field(default_factory=list)
    size_narrowings: list[SizeNarrowing] = field(default_factory=list)
    shape_arguments: list[ShapeArgument] = field(default_factory=list)
    index_products: list[IndexProduct] = field(default_factory=list)
    lane_modulos: list[LaneModulo] = field(default_factory=list)


@dataclass(frozen=True)
class GlobalDeclaration:
    """A declaration written directly at global namespace scope (inside `extern "C"` too)."""

    kind: str  # "namespace", "function", "struct", "enum", "variable", "alias", "using", "static_assert", "other"
    name: str
    span: Span
    name_span: Span
    macro: str = ""  # the macro whose expansion produced it ("" when written out)
    redeclares_external: bool = False  # reopens or redeclares an entity first declared in another file
    is_specialization: bool = False  # `template <> struct T<int>`, a partial or explicit specialization


@dataclass(frozen=True)
class DetailsReference:
    """A `details::` qualifier (or `using namespace ...details`) written in this file."""

    span: Span  # the `details` token
    namespace: str  # qualified name of that `details` namespace
    is_using_directive: bool = False
    target: str = ""  # qualified name of the entity named through it ("" when unresolved)
    target_path: str = ""  # the file declaring that entity
    target_line: int = 0
    namespace_opened_here: bool = False  # this file itself opens that `details` namespace


@dataclass
class ScopeFacts:
    global_declarations: list[GlobalDeclaration] = field(default_factory=list)
    details_references: list[DetailsReference] = field(default_factory=list)
    included_files: tuple[str, ...] = ()  # every header the translation unit includes


# ---- end of integer and scope facts ----

# ---- dataflow facts (KC102, KC201, KC202, KC203, KC204, KC205) ----
# Built by src/kernel_check/clang/pointer_accesses.py: per kernel and device function, the PDL calls and
# the accesses through the pointers it received, in execution order; plus every inline asm.


class PdlCallKind(enum.Enum):
    WAIT = "wait"  # PDLWaitPrimary, `griddepcontrol.wait`, cudaGridDependencySynchronize
    TRIGGER = "trigger"  # PDLTriggerSecondary, `griddepcontrol.launch_dependents`, ...


@dataclass(frozen=True)
class PdlCall:
    kind: PdlCallKind
    span: Span  # the call, the asm statement, or the call of a device function that waits
    # Position in the function's execution order (comparable with PointerAccess.order);
    # None inside a lambda that is never called where the analysis can see it.
    order: int | None
    flag: str  # template-argument text of `PDLWaitPrimary<flag>()`; "" for asm, CUDA API, calls
    via: str  # "PDLWaitPrimary", "asm", "cudaGridDependencySynchronize", or "helper()" that waits
    leads_body: bool = False  # the first statement of the body (compile-time-only ones aside)
    # The flag names a template type parameter (`Trait::kUsePDL`): its value is the bound
    # type's member, which only the instantiation knows.
    flag_through_type: bool = False
    flag_value: ConstExpr | None = None  # the flag evaluated (over the kernel's template parameters)

    @property
    def always_off(self) -> bool:
        """A wait or trigger compiled out whatever the instantiation (`PDLWaitPrimary<false>`)."""
        return self.flag_value is not None and self.flag_value.evaluate({}) == 0


class AccessKind(enum.Enum):
    READ = "read"  # a load from the memory the pointer points to
    WRITE = "write"  # a store (assignment, store helper, atomic)
    ESCAPE = "escape"  # handed to code that may write through it (unknown callee, stored, asm)


@dataclass(frozen=True)
class PointerAccess:
    """A load/store through a pointer the function received, or the pointer escaping."""

    kind: AccessKind
    span: Span  # the access expression, or the argument that hands the pointer to a callee
    root: str  # the incoming pointer as spelled from the parameter: "src", "params.src"
    param_index: int
    fields: tuple[str, ...]  # field path inside a by-value params struct; () for a pointer param
    how: str  # "subscript", "dereference", "->", "reference", "asm", or "callee()"
    order: int | None  # see PdlCall.order
    # The pointer is the address operand of a CUDA atomic (`atomicAdd(p, 1ull)`), here or in
    # a callee replayed at this call: its pointee type is the one an atomic overload takes.
    atomic: bool = False


@dataclass(frozen=True)
class InlineAsm:
    span: Span
    template: str  # the assembler template as clang sees it (operands spelled `$0`)
    clobbers: tuple[str, ...]
    is_volatile: bool
    function: str  # qualified name of the enclosing function


@dataclass
class FunctionDataflow:
    """The events of one kernel or device function body (see pointer_accesses.py)."""

    function_usr: str
    qualified_name: str
    body: Span
    pdl_calls: list[PdlCall] = field(default_factory=list)
    accesses: list[PointerAccess] = field(default_factory=list)
    referenced_params: frozenset[str] = frozenset()  # parameters named anywhere in the body
    # Preprocessor-inactive regions (`#if` branches not taken) inside the body: code the
    # analysis cannot see, so rules stay silent about what those regions mention.
    inactive_spans: tuple[Span, ...] = ()
    inactive_names: frozenset[str] = frozenset()  # the identifiers those regions spell


@dataclass
class DataflowFacts:
    functions: list[FunctionDataflow] = field(default_factory=list)
    inline_asm: list[InlineAsm] = field(default_factory=list)


# ---- end of dataflow facts ----


@dataclass(frozen=True)
class DivergentBarrier:
    """A block-wide barrier (`__syncthreads()`, or a call of a device function that reaches
    one) inside a branch of an `if` whose condition depends on the thread's index: threads of
    one block can take different paths, so some never arrive (built by thread_dependence.py)."""

    span: Span  # the barrier call, or the call of the function that reaches it
    barrier: str  # "__syncthreads" or the helper called, e.g. "reduce_sum"
    condition: Span  # the `if` condition
    source: str  # what makes it thread-dependent: "threadIdx", or the local variable that holds it
    # The branch returns after N plain barriers and the code after the `if` issues N as well:
    # a deliberate split of the block whose barriers pair up by count.
    matched_by_rest: bool = False


@dataclass(frozen=True)
class NarrowingConversion:
    """A conversion without saturation (a floating value to an integer type, an integer
    saturated from one to a narrower type, fp8 with `__NV_NOSAT`, a c10 fp8 type) of a value
    that can reach NaN or past the target's range, from a tensor's element, with no clamp
    and no guard on the way (built by numerics.py)."""

    span: Span  # the conversion
    source: Span  # the value converted
    target: str  # the type (or call) it is converted to
    reason: str  # "can be NaN", "has no bound", "can be as high as 1000"
    origin: Span  # the read of memory the value comes from
    call: Span | None = None  # the call that passes it into the helper holding the conversion
    # Where the conversion is ("../include/quant.cuh:12") when it lies in an included header's
    # function; `span` and `source` are then the checked file's call that leads there.
    elsewhere: str = ""


@dataclass(frozen=True)
class HeaderLibrary:
    """The `sgl_kernel/` header library a file is checked against: the user's own (found on
    the include path), whose API can differ from the one the guide describes. Rules whose
    message names a library API ask `provides` first and otherwise say what works there."""

    root: str = ""  # the include directory holding `sgl_kernel/`; "" when there is none
    names: frozenset[str] = frozenset()  # the identifiers its headers spell
    # The tree's own library (found walking up from the file, or configured), not the copy
    # bundled with kernel-check that a tree without one is parsed against.
    own: bool = False
    included: bool = False  # the file includes one of its headers (directly or through others)
    namespace_home: str = ""  # a header of it that opens `namespace sglang`; "" when none does

    def adopted(self) -> bool:
        """Whether the file's tree uses the library: its own copy, or a file that includes
        it. The guide's conventions (Doxygen, `SGL_DEVICE`, `TensorMatcher`, the check
        macros) are that tree's conventions; the bundled copy a tree without the library is
        parsed against is no reason to ask for them."""
        return bool(self.root) and (self.own or self.included)

    def provides(self, name: str) -> bool:
        """Whether the file's tree has `name` in the library it uses (assumed when no
        library was found at all)."""
        return not self.root or (self.adopted() and name in self.names)

    def namespace_convention(self) -> str:
        """The header that makes `namespace sglang` this file's convention (KC320): the
        library's, when the library is the tree's own or the file includes it; else ""."""
        return self.namespace_home if self.own or self.included else ""


@dataclass(frozen=True)
class Term:
    """A symbolic integer or truth value over a kernel's symbols (built by
    clang/symbolic.py, handed to the solver by solver.py). `op` is "const" (`value`),
    "sym" (`name`, one of the access's `symbols`), an arithmetic operator ("+", "-", "*",
    "/", "%"), a comparison ("<", "<=", "==", "!="), "and", "or", "not", "ite"
    (condition, then, else), "wrap" (a value, then the constant bounds of the integer type
    holding it: past the top it wraps), or "forall" (the symbols it binds, then the
    condition that holds for every value of them)."""

    op: str
    args: tuple[Term, ...] = ()
    name: str = ""
    value: int = 0


class SymbolKind(enum.Enum):
    """What a symbol of a kernel stands for; the solver gives each kind its range."""

    THREAD = "thread"  # threadIdx.{x,y,z}: below the block dimension of the same axis
    BLOCK = "block"  # blockIdx.{x,y,z}: below the grid dimension of the same axis
    BLOCK_DIM = "block_dim"  # blockDim.{x,y,z}
    GRID_DIM = "grid_dim"  # gridDim.{x,y,z}
    SCALAR = "scalar"  # a scalar argument, or a field of a by-value params struct
    LOOP = "loop"  # a loop counter (its bounds are guards)
    LOAD = "load"  # an integer read from global memory: whatever the tensor holds
    OPAQUE = "opaque"  # a value the walk does not follow (a call, a local assigned later)
    # A call's result that nothing tells apart from thread to thread (`prefix_op.GetTileIdx()`,
    # `div_ceil(n, 4)`): one value for the whole block, any within its type
    UNIFORM = "uniform"
    # A received pointer's address, of which the walk follows a null test alone
    # (`if (scale_ptr != nullptr)`): the same for every thread of the block, one per pointer
    ADDRESS = "address"
    DIM = "dim"  # a launcher's symbolic size (`SymbolicSize N` of its TensorMatcher chains)
    # The bytes of a kernel's template type parameter (`sizeof(T)` of a `const T* x`; `text`
    # is the parameter's name): what the launch instantiates it with; in a launcher, the
    # `sizeof(T)` of its own type parameter it computes with (`text` as written), any type's
    ELEMENT_SIZE = "element_size"
    # A launching lambda's integer parameter (`[&](auto kernel, int64_t n) {...}`): whatever its
    # calls pass (`launch(k, numel / kVec)`), which the walk does not tie to them; a size a
    # proof covers every value of, which no witness sets against a tensor's extent
    PASSED = "passed"
    # A launcher's own compile-time integer parameter (`kThreads` of `template <int kThreads>
    # struct Gate`, of `LaunchKernel(blocks, kThreads)(k<kThreads>, ...)`): a value its
    # instantiations pick, within what the code states of it (`witness.template_limits`)
    TEMPLATE = "template"


@dataclass(frozen=True)
class Symbol:
    name: str  # as the terms name it
    kind: SymbolKind
    text: str  # the source it stands for: `threadIdx.x`, `idx[i]`, `n`
    low: int  # the range of its type
    high: int
    span: Span | None = None  # where a load reads
    pointer: str = ""  # the tensor a load reads from, as written (`loc`, `params.ids`)


@dataclass(frozen=True)
class SymbolicAccess:
    """An access as a term under the guards on its path (clang/symbolic.py): a global one
    (KC401 asks those whose offset depends on an integer read from global memory, KC406 all),
    or an access of a `__shared__` array (KC402, KC403)."""

    function_usr: str
    span: Span  # the access expression
    pointer: str  # the tensor or shared array accessed, as written (`out`, `params.out_loc`, `smem`)
    offset: Term  # in elements of the pointer (of the vector type for `.load(p, i)`; of a shared array: its own)
    guards: tuple[Term, ...]
    symbols: tuple[Symbol, ...]  # every symbol the offset and guards name
    is_write: bool
    shared: bool = False  # into a `__shared__` array
    # Its barrier interval: how many block-wide barriers (or anything that may be one) the
    # walk passed before it in the body (a loop's body walked once).
    phase: int = 0
    in_barrier_loop: bool = False  # inside a loop that reaches a barrier: its interval is not one
    # The loops around it that reach a barrier, outermost first (each named by where its body
    # starts), and their counters: between two barriers of one iteration every thread of the
    # block runs that iteration (KC404 compares two accesses there at one counter value).
    barrier_loops: tuple[int, ...] = ()
    lockstep: tuple[str, ...] = ()
    # A shared write's value may differ from thread to thread (it reads the thread's index,
    # directly or through a local's initializer or later assignment, and calls only functions
    # that compute from their arguments, no collective): two threads storing one value (a
    # flag, a warp's reduced sum) leave the element the same whichever runs last.
    value_varies: bool = False
    # A shared write's value is provably one for the whole block (it reads no thread index,
    # calls no function, names only locals of such one value): any two threads store it alike.
    value_uniform: bool = False
    # A shared access the walk follows: its offset and guards name only values it follows,
    # and it reads or writes the array's element type (of its scalars, for `smem[a][b]`), or
    # a wider one spanning whole elements. Not followed: an access through a narrower cast,
    # or the array handed to a call, a lambda or `asm` (recorded as a write at the pointer's
    # offset). A global pointer handed to a call
    # (the drafter's walk, `every_access`) is recorded the same way: not followed.
    followed: bool = True
    extent: Term | None = None  # a shared array's declared length in elements (None: `extern __shared__ T smem[]`)
    # The array's elements the access covers from `offset` on: more than one through a wider
    # type (`reinterpret_cast<float4*>(smem)[i]` covers floats 4 * i to 4 * i + 3).
    width: int = 1
    # A shared access's kernel's `__launch_bounds__`: the most threads its block has, as a
    # term over its compile-time arguments (None without one the walk follows).
    block_limit: Term | None = None
    # The conditions that each subscript into a row of an array of arrays stays in its row
    # (`c < 33` of `tile[r][c]` of a `tile[32][33]`): two threads meet at an element so
    # (an index past a row's end is a defect of its own); not guards: past it, the access
    # still happens, at the element the flat offset names.
    in_rows: tuple[Term, ...] = ()
    # KC403 and KC404 check it: of a one-dimensional array of a declared length, not in a
    # helper the walk enters for KC402 alone (one that declares its own shared array, or a
    # template's call of one handed a shared array). Arrays of arrays, `extern __shared__`
    # memory and those helpers are KC402's: the read rules are not yet measured there.
    read_checked: bool = True
    # A global access's offset in bytes from the tensor's start (None where a step's type has
    # no size clang tells), and the bytes it covers from there (an element, a vector; none
    # for a pointer handed to a call, which may be a range's end)
    bytes: Term | None = None
    byte_width: int = 0
    byte_align: int = 0  # the alignment in bytes the access's type requires (0: not known)
    # Where a template decides the bytes it covers (`sizeof(T)` of a `T`, `sizeof(T) * kVecSize`
    # of an `AlignedVector<T, kVecSize>`), that term over the symbols the launch binds;
    # `byte_width` is then 1 (its first byte)
    byte_width_term: Term | None = None

    def width_term(self) -> Term:
        """The bytes a global access covers, as a term."""
        return self.byte_width_term if self.byte_width_term is not None else Term("const", value=self.byte_width)


@dataclass(frozen=True)
class SymbolicProduct:
    """A multiplication of a kernel with a `blockIdx` or `gridDim` factor, as a term
    (clang/symbolic.py): what KC112's witness evaluates."""

    function_usr: str
    span: Span  # the `*` expression
    term: Term
    symbols: tuple[Symbol, ...]  # every symbol the term names


@dataclass(frozen=True)
class SymbolicBarrier:
    """A block-wide barrier of a kernel (`__syncthreads()` or a call of a device function that
    reaches one) under the guards of its path, as terms (clang/symbolic.py): what KC170
    decides with two symbolic threads. Loop conditions are left out of its guards (every
    thread of the block runs the loop's iterations together, as far as KC170 asks), and so
    is an early exit from a branch that synchronizes itself (a split of the block whose
    barriers are judged on their own)."""

    function_usr: str
    span: Span  # the barrier call, or the call of the function that reaches it
    barrier: str  # "__syncthreads" or the helper called, e.g. "reduce_sum"
    branches: tuple[Term, ...]  # the conditions of the `if`s and `?:`s it sits in
    exits: tuple[Term, ...]  # the negated conditions of the earlier `if (c) return;`s (or continue, break)
    symbols: tuple[Symbol, ...]  # every symbol the guards name


@dataclass(frozen=True)
class LaunchContract:
    """What a launcher's code guarantees at one launch (clang/symbolic.py, from its body and
    its `MatcherChain`s): terms over its symbolic sizes (`SymbolKind.DIM`) for the grid, the
    block and each kernel argument, and the conditions that hold there (`RuntimeCheck`s,
    early returns, `if`s around the launch)."""

    launch: int  # index in `SourceModel.launches`
    guards: tuple[Term, ...]
    symbols: tuple[Symbol, ...]  # every symbol the terms name
    grid: tuple[Term | None, Term | None, Term | None]  # x, y, z; None where not known
    block: tuple[Term | None, Term | None, Term | None]
    arguments: tuple[Term | None, ...]  # each kernel argument's value (None: not an integer followed)
    fields: tuple[tuple[int, str, Term], ...] = ()  # (argument, field, value) of a params struct argument
    extents: tuple[tuple[str, tuple[Term, ...]], ...] = ()  # (tensor, its dims) of each verified tensor
    strides: tuple[tuple[str, tuple[Term, ...]], ...] = ()  # (tensor, its strides in elements), as extents
    element_sizes: tuple[tuple[str, int], ...] = ()  # (tensor, bytes of its one dtype) where the matcher fixes one
    # (tensor, the launcher's template type parameter) where the matcher's one dtype is one
    # (`with_dtype<T>()` in a launcher over `T`): its bytes are whatever `T` is
    element_types: tuple[tuple[str, str], ...] = ()
    # The tensors whose every dim and stride is as the matcher states it (a constant, a
    # SymbolicSize, a -1 wildcard), none an expression the contract stands a free size for
    exact: tuple[str, ...] = ()
    # Each sum, product and narrowing conversion of the launcher's integers stays within its
    # type where it runs: a witness must hold them (the launcher computes no wrapped grid),
    # a proof must not need them (a launcher that wraps first is no proof of safety).
    fits: tuple[Term, ...] = ()
    # A caller's contract of a launch in a helper it calls (`launch_one(q, ...)` of a function
    # that verifies `q` and hands it on, the helper launching with `data_ptr(x)` of its `x`):
    # the caller's qualified name, and the tensors the launch's arguments carry as the caller
    # names them (the launch's own `Launch.tensors` name the helper's parameters). "" and ()
    # for the contract of the launch's own launcher.
    caller: str = ""
    carried: tuple[LaunchTensorArgument, ...] = ()
    # ... and the helper's compile-time parameters as the call gives them (`launch<T, 4>(...)`:
    # `kVec` is 4), which its launch may hand the kernel (`kernel<T, kVec>`)
    template_values: tuple[tuple[str, Term], ...] = ()


@dataclass
class SourceModel:
    """Everything the C++ rules know about one file."""

    path: str
    text: str
    data: bytes
    functions: list[Function] = field(default_factory=list)
    structs: list[Struct] = field(default_factory=list)
    launches: list[Launch] = field(default_factory=list)
    # Spans of top-level declarations that contain a clang error: rules never report inside.
    error_spans: list[Span] = field(default_factory=list)
    launcher_facts: LauncherFacts = field(default_factory=LauncherFacts)
    integer_facts: IntegerFacts = field(default_factory=IntegerFacts)
    scope_facts: ScopeFacts = field(default_factory=ScopeFacts)
    dataflow_facts: DataflowFacts = field(default_factory=DataflowFacts)
    divergent_barriers: list[DivergentBarrier] = field(default_factory=list)
    symbolic_accesses: list[SymbolicAccess] = field(default_factory=list)
    symbolic_products: list[SymbolicProduct] = field(default_factory=list)
    symbolic_barriers: list[SymbolicBarrier] = field(default_factory=list)
    launch_contracts: list[LaunchContract] = field(default_factory=list)
    instantiations: list[TemplateInstantiation] = field(default_factory=list)
    narrowing_conversions: list[NarrowingConversion] = field(default_factory=list)
    header_library: HeaderLibrary = field(default_factory=HeaderLibrary)

    @property
    def kernels(self) -> list[Function]:
        return [f for f in self.functions if f.kind is FunctionKind.KERNEL]

    @property
    def device_functions(self) -> list[Function]:
        return [f for f in self.functions if f.kind is FunctionKind.DEVICE]

    @property
    def launchers(self) -> list[Function]:
        names = {launch.launcher for launch in self.launches}
        return [f for f in self.functions if f.qualified_name in names and f.kind is FunctionKind.HOST]

    def line_text(self, line: int) -> str:
        return self.line_bytes(line).decode("utf-8", errors="replace")

    def line_bytes(self, line: int) -> bytes:
        """Line `line` as clang numbers lines (1-based), without its line break."""
        starts = self._line_starts
        if not 0 < line <= len(starts):
            return b""
        end = starts[line] if line < len(starts) else len(self.data)
        return self.data[starts[line - 1] : end].rstrip(b"\r\n")

    @functools.cached_property
    def _line_starts(self) -> list[int]:
        return line_starts(self.data)
