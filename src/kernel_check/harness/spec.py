"""Kernel specs: a declarative description of one kernel under test.

A spec file (``*_spec.py``, next to the kernel) defines ``SPEC`` (or a list ``SPECS``)::

    from kernel_check.harness.spec import KernelSpec, Instantiation, Role, Scalar, Tensor, TAILS

    SPEC = KernelSpec(
        name="scale",
        source="scale.cuh",                  # relative to the spec file
        export="scale",                      # the exported function Python calls
        symbol="scale",                      # the C++ launcher template: scale<args>
        args=(
            Tensor("dst", ("n",), role=Role.OUT, vector_bytes=16),
            Tensor("src", ("n",), vector_bytes=16),
            Scalar("factor", 2.0),
        ),
        reference=lambda src, factor: src * factor,
        instantiations=(
            Instantiation(("float16", True), dtypes={"T": "float16"}, pdl=True),
            Instantiation(("float32", False), dtypes={"T": "float32"}),
        ),
        grid={"n": TAILS + (1024, 1 << 20)},
        memory_bound=True,
    )

The harness calls the exported function directly with the arguments in ``args`` order
(outputs are allocated by the harness, so it can poison them), and compares every
``OUT``/``INPLACE`` tensor with what ``reference`` returns. A launcher that returns its
outputs instead names them in ``returns=("sum", "diff")`` (``OUT`` tensors of ``args``, left
out of the call); a host buffer is ``Tensor(..., device="cpu", pinned=True)``. ``reference`` receives the
``IN``/``INPLACE`` tensors (fresh clones) and the scalars as keyword arguments and returns
one tensor (a kernel with one output) or a dict keyed by output name.

A template argument that fixes a size (a hidden size, a head size) pins that grid axis per
instantiation, and the access widths often follow from it::

    Tensor("input", ("m", "h"), strided_rows=True),
    ...
    instantiations=(
        Instantiation(("float16", 4096, True), dtypes={"T": "float16"}, pdl=True,
                      sizes={"h": 4096}, vector_bytes={"input": 16, "out": 16}),
        Instantiation(("bfloat16", 127, False), dtypes={"T": "bfloat16"},
                      sizes={"h": 127}, vector_bytes={"input": 2, "out": 2}),
    ),
    grid={"m": TAILS + (1024,)},                         # "h" needs no grid values
    bandwidth_sizes=lambda fixed: {"m": (1 << 25) // fixed["h"]},
    bytes_moved=lambda args: 2 * args["input"].nbytes,   # KD501's byte count, when the default
                                                         # (every tensor once) is wrong

This module imports neither torch nor CUDA: specs load (and validate) on any machine.
"""

from __future__ import annotations

import ast
import enum
import itertools
import json
import math
import operator
import os
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .profiles import INDEX_PRESETS, check_profile

# The tails every spec's grid must cover on some axis: a single element, one short of a
# power of two, one past one (both non-multiples of any vector width).
TAILS: tuple[int, ...] = (1, 127, 4097)
# Grid points one instantiation may have: each is a reference case, and the case planner
# lists them (a product of a dozen free axes would not fit in memory).
MAX_GRID_POINTS = 100_000

# dtype name (torch's spelling) -> (bytes per element, the project's C++ alias)
DTYPES: dict[str, tuple[int, str]] = {
    "float64": (8, "fp64_t"),
    "float32": (4, "fp32_t"),
    "float16": (2, "fp16_t"),
    "bfloat16": (2, "bf16_t"),
    "float8_e4m3fn": (1, "fp8_e4m3_t"),
    "float8_e5m2": (1, "fp8_e5m2_t"),
    "int64": (8, "int64_t"),
    "int32": (4, "int32_t"),
    "int16": (2, "int16_t"),
    "int8": (1, "int8_t"),
    "uint8": (1, "uint8_t"),
    "bool": (1, "bool"),
}


def itemsize(dtype: str) -> int:
    return DTYPES[dtype][0]


# Default (rtol, atol) per dtype: torch.testing.assert_close's defaults, plus fp8 (not
# covered there) at one unit in the last place of e4m3/e5m2.
DEFAULT_TOLERANCE: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-7),
    "float32": (1.3e-6, 1e-5),
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float8_e4m3fn": (0.125, 1e-3),
    "float8_e5m2": (0.25, 1e-3),
}

# a dimension: a fixed size, a grid axis ("n"), or an expression over axes ("h*d", "B+1")
Dim = str | int


class CurrentStream:
    """The value of a scalar that passes the stream the call runs on (the handle of torch's
    current stream at the call): for a launcher that takes its stream as an integer argument
    (``int64_t stream`` cast to ``cudaStream_t``) instead of reading the current one, so the
    stream and graph checks (KD402, KD403) reach its launch as they reach any other."""

    def __repr__(self) -> str:
        return "CURRENT_STREAM"


CURRENT_STREAM = CurrentStream()
_SCALAR_TYPES = (bool, int, float, str, CurrentStream, type(None))

# a str passes a std::string / tvm::ffi::String; None passes an absent Optional (a tensor left out)
ScalarValue = bool | int | float | str | CurrentStream | None
Sizes = Mapping[str, int]
# A custom initializer: (shape, torch dtype, device, torch.Generator, sizes) -> tensor.
InitFn = Callable[[tuple[int, ...], Any, Any, Any, Sizes], Any]

DEVICES = ("cuda", "cpu")
INIT_PRESETS = ("randn", "uniform", "zeros", "ones", "perm", "randint", "cumsum")
CANONICAL_FORMS = ("sort", "set")


class SpecError(ValueError):
    """A spec is malformed; the message names the spec and the field."""


def tree_path(variable: str) -> Path:
    """The kernel tree an environment variable names: specs kept outside the tree they test
    (``source=str(tree_path("SGLANG_TREE") / "python/...")``) find it this way, so they hold
    no machine's path; unset or not a folder is a ``SpecError`` naming the variable."""
    value = os.environ.get(variable, "")
    if not value:
        raise SpecError(f"set {variable} to the kernel tree this spec tests")
    if not Path(value).is_dir():
        raise SpecError(f"{variable}={value} is not a folder")
    return Path(value)


class Role(enum.Enum):
    """How the kernel uses a tensor argument."""

    IN = "in"  # read only: must be unchanged after the call (KD104)
    OUT = "out"  # written only: poisoned before the call (KD102), compared (KD101)
    INPLACE = "inplace"  # read and written: compared with the reference's new value


@dataclass(frozen=True)
class Tensor:
    """A tensor argument.

    ``shape`` holds symbolic dimension names (sized by the grid) or fixed integers.
    ``dtype`` is a dtype name (``"int64"``) or a type variable bound per instantiation
    (``"T"``). ``vector_bytes`` is the widest vectorized access the kernel makes on it
    (0 for scalar accesses): it decides which misaligned views must be rejected (KD301).
    ``strided_rows`` says the launcher accepts a row stride other than the row length;
    ``strided_dims`` names, for any rank, every dimension whose stride the launcher leaves
    free (``(0, 1)`` for a ``[B, H, D]`` cache with strides ``{SB, SH, 1}``; negative counts
    from the end; ``strided_rows`` is ``(-2,)``); the other dimensions must be contiguous.
    ``init`` fills inputs: ``randn``, ``uniform`` (in [-1, 1)), ``zeros``, ``ones``,
    ``perm:<dim>`` (distinct indices below that dimension's size), ``randint:<dim>``
    (indices below it), ``cumsum:<dim>`` (a prefix sum, an ``indptr``: sorted, from 0 to that
    dimension's size), or a callable ``InitFn``; ``<dim>`` is an axis or an expression of
    axes, as a shape's dimension is (``randint:(n+1)//2``).
    ``accepts`` lists further dtypes the launcher's matcher allows for this tensor (the
    wrong-dtype case of KD301 picks one outside them). ``profiles`` maps a value profile
    (``profiles.PROFILES``: ``nan``, ``oob``, ...) to its contract (``match``, ``safe``,
    ``reject``, ``off``); unnamed profiles get ``profiles.default_contract``.
    ``device`` is where the launcher takes the tensor: ``"cuda"``, or ``"cpu"`` for a host
    buffer (``pinned=True``: page-locked, as a kernel that reads it over the bus needs).
    ``written_rows`` names the index tensor of an ``OUT`` tensor scattered into (``cache[ids[i]]
    = ...``): the kernel writes the rows its ids name and leaves the others alone, so only
    those must be written (KD102).
    """

    name: str
    shape: tuple[Dim, ...]
    dtype: str = "T"
    role: Role = Role.IN
    vector_bytes: int = 0
    strided_rows: bool = False
    init: str | InitFn = "randn"
    strided_dims: tuple[int, ...] = ()
    accepts: tuple[str, ...] = ()
    profiles: Mapping[str, str] = field(default_factory=dict)
    device: str = "cuda"
    pinned: bool = False
    written_rows: str = ""

    def free_strides(self) -> tuple[int, ...]:
        """The dimensions (0-based, ascending) whose stride the launcher leaves free."""
        rank = len(self.shape)
        dims = set(self.strided_dims) | ({-2} if self.strided_rows else set())
        return tuple(sorted({d % rank for d in dims if -rank <= d < rank}))

    @property
    def written(self) -> bool:
        return self.role is not Role.IN

    @property
    def read(self) -> bool:
        return self.role is not Role.OUT


@dataclass(frozen=True)
class Scalar:
    """A scalar argument: a constant, or a function of the case's sizes. A ``str`` passes a
    ``std::string`` / ``tvm::ffi::String`` parameter; ``None`` an absent ``Optional`` (an
    ``Optional<TensorView>`` the launcher tests with ``has_value()``, left out)."""

    name: str
    value: ScalarValue | Callable[[Sizes], ScalarValue]

    def resolve(self, sizes: Sizes) -> ScalarValue:
        return self.value(sizes) if callable(self.value) else self.value


Arg = Tensor | Scalar


@dataclass(frozen=True)
class Instantiation:
    """One compiled specialisation: its C++ template arguments and what they bind.

    ``template_args`` are spelled in C++ as ``make_cpp_args`` does: dtype names such as
    ``"float16"`` become ``fp16_t``, booleans ``true``/``false``, other strings pass through. ``dtypes`` binds the
    spec's type variables. ``pdl`` says the launcher enables PDL in this instantiation,
    which turns on the PDL stress case (KD401). ``sizes`` pins grid axes to the values a
    template argument fixes (``sizes={"hidden": 4096}`` for ``rmsnorm<fp16_t, 4096>``), and
    ``vector_bytes`` overrides a tensor's access width for this specialisation.
    """

    template_args: tuple[str | int | bool, ...]
    # type variable -> dtype; a tuple of dtypes: this one build serves each of them at run
    # time (``{"I": ("int32", "int64")}``), and every case runs once per choice
    dtypes: Mapping[str, str | tuple[str, ...]] = field(default_factory=dict)
    pdl: bool = False
    # grid axes this specialisation fixes (a template argument such as the hidden size):
    # its cases use these values instead of the grid's
    sizes: Mapping[str, int] = field(default_factory=dict)
    # per-tensor access width of this specialisation, where it differs from the tensor's
    # ``vector_bytes`` (the width often follows from a size fixed here)
    vector_bytes: Mapping[str, int] = field(default_factory=dict)
    # set by ``variants()``, not by hand: the run-time dtype choices of this variant
    runtime: tuple[tuple[str, str], ...] = ()

    @property
    def build_id(self) -> str:
        """``("float16", True)`` -> ``float16-true``; ``-pdl`` marks a PDL launch."""
        parts = [str(a).lower() if isinstance(a, bool) else str(a) for a in self.template_args]
        return "-".join(parts or ["default"]) + ("-pdl" if self.pdl else "")

    @property
    def id(self) -> str:
        """The build's id, plus the run-time dtype choices (``float16-pdl-int64``)."""
        return "-".join([self.build_id, *(dtype for _, dtype in self.runtime)])

    @property
    def key(self) -> str:
        """What identifies this instantiation within its spec, the same in every process and
        on every machine: the template arguments with their types (``128`` is not ``"128"``),
        the dtypes (a run-time choice as its tuple) and PDL. ``id`` is its short spelling."""
        dtypes = {var: d if isinstance(d, str) else list(d) for var, d in self.dtypes.items()}
        return json.dumps([list(self.template_args), dtypes, self.pdl], sort_keys=True)

    def variants(self) -> list[Instantiation]:
        """One instantiation per choice of the run-time dtypes (itself when there are none)."""
        choices = {var: d for var, d in self.dtypes.items() if not isinstance(d, str)}
        if not choices:
            return [self]
        result = []
        for picked in itertools.product(*choices.values()):
            runtime = tuple(zip(choices, picked))
            result.append(replace(self, dtypes={**self.dtypes, **dict(runtime)}, runtime=runtime))
        return result

    def allowed(self, var: str) -> tuple[str, ...]:
        """Every dtype this build accepts for a type variable at run time."""
        bound = self.dtypes.get(var, var)
        return (bound,) if isinstance(bound, str) else tuple(bound)

    def cpp_args(self) -> str:
        return ", ".join(_cpp_spelling(a) for a in self.template_args)


def _cpp_spelling(arg: str | int | bool) -> str:
    if isinstance(arg, bool):
        return "true" if arg else "false"
    if isinstance(arg, str) and arg in DTYPES:
        return DTYPES[arg][1]
    return str(arg)


@runtime_checkable
class InstantiationReference(Protocol):
    """A reference that depends on the instantiation a case runs, not only on its inputs
    (``--against REV``: REV's build of that same instantiation)."""

    def for_instantiation(self, inst: Instantiation) -> Callable[..., Any]: ...


@dataclass(frozen=True)
class KernelSpec:
    """Everything the harness needs to build, run and judge one kernel."""

    name: str
    source: str
    export: str
    # the C++ launcher: ``scale`` (called as ``scale<args>``), or a pattern whose ``<>``
    # receives the arguments: ``QKNormKernel<>::run`` (a static member of a class template)
    symbol: str
    args: tuple[Arg, ...]
    # None: no reference; every check that needs none still runs (see ``REFERENCE_FREE``)
    reference: Callable[..., Any] | InstantiationReference | None
    instantiations: tuple[Instantiation, ...]
    grid: Mapping[str, tuple[int, ...]]
    tolerance: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    # drops grid points the kernel does not support (e.g. a hidden size it has no variant for)
    constraint: Callable[[Sizes], bool] | None = None
    deterministic: bool = True
    memory_bound: bool = False
    # one large shape for the bandwidth figure (KD501); default: the largest grid point. A
    # callable gets an instantiation's fixed ``sizes`` and returns the shape (None: skip it)
    bandwidth_sizes: Mapping[str, int] | Callable[[Sizes], Mapping[str, int] | None] | None = None
    # bytes one call moves (KD501), from the call's arguments by name; default: every tensor
    # once, in-place ones twice
    bytes_moved: Callable[[Mapping[str, Any]], int] | None = None
    # shapes for compute-sanitizer; default: points reaching every axis's values (see
    # cases.sanitize_sizes); sanitize_extra adds shapes to whichever is used
    sanitize_sizes: tuple[Mapping[str, int], ...] = ()
    sanitize_extra: tuple[Mapping[str, int], ...] = ()
    # registers per thread allowed (KC601): one number, or per kernel name with "default"
    register_budget: int | Mapping[str, int] | None = None
    extra_cuda_cflags: tuple[str, ...] = ()
    # include directories, relative to the spec file, searched before the bundled include/:
    # a kernel tree that ships its own sgl_kernel/ headers builds against those
    include_dirs: tuple[str, ...] = ()
    # codes a planted-bug fixture must produce; an empty tuple means "must pass clean"
    expect: tuple[str, ...] = ()
    # outputs whose order is unspecified: ``{"ids": "sort"}`` compares each one sorted along
    # its last dimension ("set" says the same), or a function over the dict of outputs
    # returning them in a canonical form; applied to results and reference alike
    canonicalize: Mapping[str, str] | Callable[[dict[str, Any]], Mapping[str, Any]] | None = None
    # outputs the exported function returns instead of writing into buffers the harness
    # passes: OUT tensors of ``args`` (their shape and dtype), in the order the launcher
    # returns them (one: a tensor; several: a tuple); they are left out of the call
    returns: tuple[str, ...] = ()
    # the oldest GPU architecture the kernel runs on, as in sm_NN (100: sm_100); on an older
    # card nothing of the spec runs (a kernel that traps below it would fault in every case)
    # and the run says so instead of reporting KD001
    min_arch: int | None = None
    # filled in by discovery: the spec file that defined this spec
    spec_path: str = ""

    # ----- derived views -----

    @property
    def variants(self) -> tuple[Instantiation, ...]:
        """Every instantiation with its run-time dtypes chosen: what cases run on."""
        return tuple(v for inst in self.instantiations for v in inst.variants())

    def variant(self, variant_id: str) -> Instantiation:
        return next(v for v in self.variants if v.id == variant_id)

    def reference_for(self, inst: Instantiation) -> Callable[..., Any] | None:
        """The reference of the cases of ``inst`` (the spec's own, unless it depends on the instantiation)."""
        if isinstance(self.reference, InstantiationReference):
            return self.reference.for_instantiation(inst)
        return self.reference

    @property
    def instantiation_keys(self) -> list[str]:
        return [inst.key for inst in self.instantiations]

    def narrowed(self, keys: Collection[str]) -> KernelSpec:
        """This spec with only the instantiations whose ``key`` is in ``keys``, in its order."""
        return replace(self, instantiations=tuple(i for i in self.instantiations if i.key in keys))

    def launcher(self, inst: Instantiation) -> str:
        """The C++ expression the build exports: ``scale<fp16_t, true>``, ``K<fp16_t>::run``."""
        args = inst.cpp_args()
        if "<>" in self.symbol:
            return self.symbol.replace("<>", f"<{args}>", 1)
        return f"{self.symbol}<{args}>" if args else self.symbol

    @property
    def launcher_name(self) -> str:
        """The launcher's own name, as its definition spells it (``run`` in ``K<>::run``)."""
        return self.symbol.replace("<>", "").rsplit("::", 1)[-1]

    @property
    def tensors(self) -> tuple[Tensor, ...]:
        return tuple(a for a in self.args if isinstance(a, Tensor))

    @property
    def scalars(self) -> tuple[Scalar, ...]:
        return tuple(a for a in self.args if isinstance(a, Scalar))

    @property
    def passed_args(self) -> tuple[Arg, ...]:
        """The arguments the exported function takes, in order: ``args`` less ``returns``."""
        return tuple(a for a in self.args if a.name not in self.returns)

    @property
    def passed_tensors(self) -> tuple[Tensor, ...]:
        return tuple(t for t in self.tensors if t.name not in self.returns)

    def returned(self, result: Any) -> dict[str, Any]:
        """The launcher's return value by output name: one tensor for one name in ``returns``,
        else a tuple (or any sequence) of them in ``returns`` order; ValueError otherwise."""
        if not self.returns:
            return {}
        if hasattr(result, "__dlpack__"):  # a tensor (iterable too: tested first)
            values = [result]
        elif result is None or isinstance(result, (str, bytes)) or not hasattr(result, "__len__"):
            raise ValueError(f"the launcher returned {type(result).__name__}, not the outputs {list(self.returns)}")
        else:
            values = list(result)
        if len(values) != len(self.returns):
            raise ValueError(f"the launcher returned {len(values)} value(s) for the outputs {list(self.returns)}")
        return dict(zip(self.returns, values))

    def tensor_dtype(self, tensor: Tensor, inst: Instantiation) -> str:
        """The tensor's dtype in a variant (a build with several run-time dtypes: its first)."""
        return inst.allowed(tensor.dtype)[0]

    def accepted_dtypes(self, tensor: Tensor, inst: Instantiation) -> set[str]:
        """Every dtype the launcher takes for this tensor in this build (KD301 avoids them)."""
        base = next((i for i in self.instantiations if i.build_id == inst.build_id), inst)
        return {*base.allowed(tensor.dtype), *inst.allowed(tensor.dtype), *tensor.accepts}

    def vector_bytes_of(self, tensor: Tensor, inst: Instantiation | None) -> int:
        """The tensor's access width in this instantiation (its own ``vector_bytes`` by default)."""
        if inst is not None and tensor.name in inst.vector_bytes:
            return inst.vector_bytes[tensor.name]
        return tensor.vector_bytes

    def tolerance_for(self, dtype: str) -> tuple[float, float]:
        return self.tolerance.get(dtype, DEFAULT_TOLERANCE.get(dtype, (0.0, 0.0)))

    def axes(self, inst: Instantiation | None = None) -> dict[str, tuple[int, ...]]:
        """The grid's axes, with the ones ``inst`` fixes reduced to its value."""
        axes = {name: tuple(values) for name, values in self.grid.items()}
        if inst is not None:
            axes.update({name: (int(value),) for name, value in inst.sizes.items()})
        return axes

    def grid_points(self, inst: Instantiation | None = None) -> Iterator[dict[str, int]]:
        """Every combination of the axes (``inst``'s fixed sizes applied) that passes
        ``constraint``, in order."""
        axes = self.axes(inst)
        names = list(axes)
        for values in itertools.product(*(axes[n] for n in names)):
            sizes = dict(zip(names, values))
            if self.constraint is None or self.constraint(sizes):
                yield sizes

    def bandwidth_shape(self, inst: Instantiation) -> dict[str, int] | None:
        """The KD501 shape of one instantiation (None: not measured)."""
        if not self.memory_bound:
            return None
        if self.bandwidth_sizes is None:
            points = list(self.grid_points(inst))
            return max(points, key=lambda p: sum(_numel(t.shape, p) for t in self.tensors)) if points else None
        chosen = self.bandwidth_sizes(dict(inst.sizes)) if callable(self.bandwidth_sizes) else self.bandwidth_sizes
        if chosen is None:
            return None
        return {**dict(chosen), **{k: int(v) for k, v in inst.sizes.items()}}

    def validate(self) -> None:
        """Raise SpecError on the first problem; a valid spec builds a case plan."""
        validate_spec(self)


def _fail(spec: KernelSpec, message: str) -> None:
    raise SpecError(f"spec {spec.name or '?'}: {message}")


def _numel(shape: tuple[Dim, ...], sizes: Sizes) -> int:
    total = 1
    for d in shape:
        total *= dim_size(d, sizes)
    return total


_DIM_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv}


def _dim_tree(dim: str) -> ast.expr:
    try:
        tree = ast.parse(dim, mode="eval").body
    except SyntaxError as exc:
        raise SpecError(f"dimension {dim!r} is not an axis name nor an expression (+ - * // over axes)") from exc
    for node in ast.walk(tree):
        allowed = (
            isinstance(node, (ast.Name, ast.Load, *_DIM_OPERATORS))
            or (isinstance(node, ast.Constant) and isinstance(node.value, int))
            or (isinstance(node, ast.BinOp) and type(node.op) in _DIM_OPERATORS)
        )
        if not allowed:
            raise SpecError(f"dimension {dim!r}: only integers, axis names and + - * // are allowed")
    return tree


def dim_axes(dim: Dim) -> set[str]:
    """The grid axes a dimension names (an expression may name several)."""
    if isinstance(dim, int):
        return set()
    return {node.id for node in ast.walk(_dim_tree(dim)) if isinstance(node, ast.Name)}


def dim_size(dim: Dim, sizes: Sizes) -> int:
    """A dimension's size at one grid point: ``"h*d"`` with h=4, d=8 -> 32."""
    if isinstance(dim, int):
        return dim
    if dim in sizes:
        return int(sizes[dim])
    return _evaluate(_dim_tree(dim), sizes)


def _evaluate(node: ast.expr, sizes: Sizes) -> int:
    """A tree ``_dim_tree`` accepted: integers, axis names, + - * //."""
    if isinstance(node, ast.Name):
        return int(sizes[node.id])
    if isinstance(node, ast.BinOp):
        return _DIM_OPERATORS[type(node.op)](_evaluate(node.left, sizes), _evaluate(node.right, sizes))
    assert isinstance(node, ast.Constant) and isinstance(node.value, int)
    return int(node.value)


def _known_axes(spec: KernelSpec) -> set[str]:
    """Grid axes, and axes that every instantiation fixes."""
    fixed = [set(i.sizes) for i in spec.instantiations]
    return set(spec.grid) | (set.intersection(*fixed) if fixed else set())


def _validate_tensor(spec: KernelSpec, tensor: Tensor) -> None:
    known = _known_axes(spec)
    for dim in tensor.shape:
        try:
            unknown = sorted(dim_axes(dim) - known)
        except SpecError as exc:
            _fail(spec, f"tensor {tensor.name}: {exc}")
        if unknown:
            _fail(spec, f"tensor {tensor.name}: dimension {dim!r} names {unknown}, which is not an axis of the grid")
        if isinstance(dim, int) and dim < 1:
            _fail(spec, f"tensor {tensor.name}: fixed dimension {dim} must be positive")
    if tensor.vector_bytes < 0 or tensor.vector_bytes & (tensor.vector_bytes - 1):
        _fail(spec, f"tensor {tensor.name}: vector_bytes {tensor.vector_bytes} is not a power of two")
    if tensor.strided_rows and len(tensor.shape) < 2:
        _fail(spec, f"tensor {tensor.name}: strided_rows needs a tensor of rank 2 or more")
    rank = len(tensor.shape)
    for dim in tensor.strided_dims:
        if not -rank <= dim < rank:
            _fail(spec, f"tensor {tensor.name}: strided_dims names dimension {dim} of a rank-{rank} tensor")
    if tensor.device not in DEVICES:
        _fail(spec, f"tensor {tensor.name}: device {tensor.device!r} is not one of {DEVICES}")
    if tensor.pinned and tensor.device != "cpu":
        _fail(spec, f"tensor {tensor.name}: pinned=True needs device='cpu' (pinned memory is host memory)")
    for dtype in tensor.accepts:
        if dtype not in DTYPES:
            _fail(spec, f"tensor {tensor.name}: accepts names an unknown dtype {dtype!r}")
    if tensor.written_rows:
        ids = next((t for t in spec.tensors if t.name == tensor.written_rows), None)
        if tensor.role is not Role.OUT or ids is None or ids.role is Role.OUT:
            _fail(spec, f"tensor {tensor.name}: written_rows needs an OUT tensor and the name of an input of ids")
    for profile, contract in tensor.profiles.items():
        problem = check_profile(profile, contract)
        if problem:
            _fail(spec, f"tensor {tensor.name}: {problem}")
    if isinstance(tensor.init, str):
        preset, _, dim = tensor.init.partition(":")
        if preset not in INIT_PRESETS:
            _fail(spec, f"tensor {tensor.name}: unknown init {tensor.init!r} (one of {INIT_PRESETS})")
        if preset in INDEX_PRESETS and not (dim_axes(dim) and dim_axes(dim) <= _known_axes(spec)):
            _fail(spec, f"tensor {tensor.name}: init {tensor.init!r} names no grid axis")
    elif not callable(tensor.init):
        _fail(spec, f"tensor {tensor.name}: init must be a preset name or a callable")


def _validate_instantiation(spec: KernelSpec, inst: Instantiation) -> None:
    for tensor in spec.tensors:
        dtype = spec.tensor_dtype(tensor, inst)
        if dtype not in DTYPES:
            _fail(
                spec,
                f"instantiation {inst.id}: tensor {tensor.name} has dtype {dtype!r}, "
                f"which is neither a dtype name nor bound by `dtypes`",
            )
        width = spec.vector_bytes_of(tensor, inst)
        if width < 0 or width & (width - 1):
            _fail(spec, f"instantiation {inst.id}: tensor {tensor.name}: vector_bytes {width} is not a power of two")
        if width and width < itemsize(dtype):
            _fail(spec, f"tensor {tensor.name}: vector_bytes {width} is narrower than one {dtype} element")
    names = {t.name for t in spec.tensors}
    for name in inst.vector_bytes:
        if name not in names:
            _fail(spec, f"instantiation {inst.id}: vector_bytes names no tensor {name!r}")
    axes = {a for t in spec.tensors for d in t.shape for a in dim_axes(d)} | set(spec.grid)
    for name, value in inst.sizes.items():
        if name not in axes:
            _fail(spec, f"instantiation {inst.id}: sizes names no axis {name!r}")
        if int(value) < 1:
            _fail(spec, f"instantiation {inst.id}: size {name}={value} must be positive")


def _validate_canonicalize(spec: KernelSpec) -> None:
    if spec.canonicalize is None or callable(spec.canonicalize):
        return
    if not isinstance(spec.canonicalize, Mapping):
        _fail(spec, "`canonicalize` must be a mapping {output: 'sort'|'set'} or a function")
    written = {t.name for t in spec.tensors if t.written}
    for name, how in spec.canonicalize.items():
        if name not in written:
            _fail(spec, f"canonicalize names {name!r}, which is no OUT or INPLACE tensor")
        if how not in CANONICAL_FORMS:
            _fail(spec, f"canonicalize[{name!r}] is {how!r}; one of {CANONICAL_FORMS}")


def _validate_returns(spec: KernelSpec) -> None:
    if not isinstance(spec.returns, tuple) or not all(isinstance(n, str) for n in spec.returns):
        _fail(spec, f"`returns` must be a tuple of output names, not {spec.returns!r}")
    if len(set(spec.returns)) != len(spec.returns):
        _fail(spec, f"`returns` names an output twice: {list(spec.returns)}")
    tensors = {t.name: t for t in spec.tensors}
    for name in spec.returns:
        tensor = tensors.get(name)
        if tensor is None:
            _fail(spec, f"`returns` names {name!r}, which is no Tensor of `args` (declare its shape and dtype there)")
        elif tensor.role is not Role.OUT:
            _fail(spec, f"`returns` names {name!r}, whose role is {tensor.role.name}: a returned tensor is an OUT")
        elif tensor.free_strides():
            _fail(spec, f"tensor {name}: a returned tensor's layout is the launcher's, so no strided_rows/strided_dims")


def validate_spec(spec: KernelSpec) -> None:
    """Check a spec's internal consistency (no GPU, no torch)."""
    for attr in ("name", "source", "export", "symbol"):
        if not getattr(spec, attr):
            _fail(spec, f"`{attr}` is empty")
    if spec.reference is not None and not (
        callable(spec.reference) or isinstance(spec.reference, InstantiationReference)
    ):
        _fail(spec, "`reference` is neither callable nor None")
    if spec.symbol.count("<>") > 1:
        _fail(spec, f"`symbol` {spec.symbol!r} has more than one `<>` for the template arguments")
    _validate_canonicalize(spec)
    _validate_returns(spec)
    names = [a.name for a in spec.args]
    if len(set(names)) != len(names):
        _fail(spec, f"argument names repeat: {names}")
    if not any(t.written for t in spec.tensors):
        _fail(spec, "no OUT or INPLACE tensor: nothing to compare")
    if not spec.instantiations:
        _fail(spec, "no instantiations")
    if len({i.id for i in spec.variants}) != len(spec.variants):
        _fail(spec, "two instantiations have the same id")
    for tensor in spec.tensors:
        _validate_tensor(spec, tensor)
    if spec.min_arch is not None and (isinstance(spec.min_arch, bool) or not isinstance(spec.min_arch, int)):
        _fail(spec, f"min_arch {spec.min_arch!r} is not an architecture number (100 for sm_100)")
    for scalar in spec.scalars:
        if not callable(scalar.value) and not isinstance(scalar.value, _SCALAR_TYPES):
            kinds = "a bool, int, float, str, CURRENT_STREAM or None"
            _fail(spec, f"scalar {scalar.name!r}: value {scalar.value!r} is not {kinds}")
    for inst in spec.instantiations:
        for var, bound in inst.dtypes.items():
            if not isinstance(bound, str) and not (isinstance(bound, tuple) and bound):
                _fail(spec, f"instantiation {inst.id}: dtypes[{var!r}] must be a dtype name or a non-empty tuple")
    for inst in spec.variants:
        _validate_instantiation(spec, inst)
    fixed_everywhere = set.intersection(*(set(i.sizes) for i in spec.instantiations))
    if not any(set(TAILS) <= set(values) for name, values in spec.grid.items() if name not in fixed_everywhere):
        _fail(spec, f"no grid axis covers the tails {TAILS}")
    for inst in spec.instantiations:
        points = math.prod(len(values) for values in spec.axes(inst).values())
        if points > MAX_GRID_POINTS:
            _fail(
                spec,
                f"instantiation {inst.id}: the grid has {points:,} points, more than {MAX_GRID_POINTS:,} "
                "(each is a reference case): give its axes fewer values",
            )
        if next(spec.grid_points(inst), None) is None:
            _fail(spec, f"instantiation {inst.id}: the grid has no point that passes `constraint`")
    fixed_somewhere = set().union(*(set(i.sizes) for i in spec.instantiations))
    shapes = [*spec.sanitize_sizes, *spec.sanitize_extra]
    if spec.bandwidth_sizes is not None and not callable(spec.bandwidth_sizes):
        shapes.append(spec.bandwidth_sizes)
    for sizes in shapes:
        missing = set(spec.grid) - fixed_somewhere - set(sizes)
        if missing:
            _fail(spec, f"sizes {dict(sizes)} lack the axes {sorted(missing)}")
