"""Kernel specs: a declarative description of one kernel under test.

A spec file (``*_spec.py``, next to the kernel) defines ``SPEC`` (or a list ``SPECS``)::

    from kernel_check.harness.spec import KernelSpec, Instantiation, Role, Scalar, Tensor, TAILS

    SPEC = KernelSpec(
        name="scale",
        source="scale.cuh",                  # relative to the spec file
        export="scale",                      # the exported function Python calls
        symbol="scale",                      # the C++ launcher template: scale<args>
                                             # (a member of a class template: "Kernel<{args}>::run")
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
``OUT``/``INPLACE`` tensor with what ``reference`` returns. ``reference`` receives the
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

import enum
import itertools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Union

# The tails every spec's grid must cover on some axis: a single element, one short of a
# power of two, one past one (both non-multiples of any vector width).
TAILS: tuple[int, ...] = (1, 127, 4097)

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

Dim = Union[str, int]
ScalarValue = Union[bool, int, float]
Sizes = Mapping[str, int]
# A custom initializer: (shape, torch dtype, device, torch.Generator, sizes) -> tensor.
InitFn = Callable[[tuple[int, ...], Any, Any, Any, Sizes], Any]

INIT_PRESETS = ("randn", "uniform", "zeros", "ones", "perm", "randint")


class SpecError(ValueError):
    """A spec is malformed; the message names the spec and the field."""


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
    otherwise the tensor must be contiguous. ``init`` fills inputs: ``randn``, ``uniform``
    (in [-1, 1)), ``zeros``, ``ones``, ``perm:<dim>`` (distinct indices below that
    dimension's size), ``randint:<dim>`` (indices below it), or a callable ``InitFn``.
    """

    name: str
    shape: tuple[Dim, ...]
    dtype: str = "T"
    role: Role = Role.IN
    vector_bytes: int = 0
    strided_rows: bool = False
    init: str | InitFn = "randn"

    @property
    def written(self) -> bool:
        return self.role is not Role.IN

    @property
    def read(self) -> bool:
        return self.role is not Role.OUT


@dataclass(frozen=True)
class Scalar:
    """A scalar argument: a constant, or a function of the case's sizes."""

    name: str
    value: ScalarValue | Callable[[Sizes], ScalarValue]

    def resolve(self, sizes: Sizes) -> ScalarValue:
        return self.value(sizes) if callable(self.value) else self.value


Arg = Union[Tensor, Scalar]


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
    dtypes: Mapping[str, str] = field(default_factory=dict)
    pdl: bool = False
    # grid axes this specialisation fixes (a template argument such as the hidden size):
    # its cases use these values instead of the grid's
    sizes: Mapping[str, int] = field(default_factory=dict)
    # per-tensor access width of this specialisation, where it differs from the tensor's
    # ``vector_bytes`` (the width often follows from a size fixed here)
    vector_bytes: Mapping[str, int] = field(default_factory=dict)

    @property
    def id(self) -> str:
        """``("float16", True)`` -> ``float16-true``; ``-pdl`` marks a PDL launch."""
        parts = [str(a).lower() if isinstance(a, bool) else str(a) for a in self.template_args]
        return "-".join(parts or ["default"]) + ("-pdl" if self.pdl else "")

    def cpp_args(self) -> str:
        return ", ".join(_cpp_spelling(a) for a in self.template_args)


def _cpp_spelling(arg: str | int | bool) -> str:
    if isinstance(arg, bool):
        return "true" if arg else "false"
    if isinstance(arg, str) and arg in DTYPES:
        return DTYPES[arg][1]
    return str(arg)


@dataclass(frozen=True)
class KernelSpec:
    """Everything the harness needs to build, run and judge one kernel."""

    name: str
    source: str
    export: str
    symbol: str
    args: tuple[Arg, ...]
    # None: not written yet (a drafted spec); the checks that need one are skipped
    reference: Callable[..., Any] | None
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
    # shapes for compute-sanitizer; default: small grid points (see cases.sanitize_sizes)
    sanitize_sizes: tuple[Mapping[str, int], ...] = ()
    # registers per thread allowed (KC601): one number, or per kernel name with "default"
    register_budget: int | Mapping[str, int] | None = None
    extra_cuda_cflags: tuple[str, ...] = ()
    # include directories, relative to the spec file, searched before the bundled include/:
    # a kernel tree that ships its own sgl_kernel/ headers builds against those
    include_dirs: tuple[str, ...] = ()
    # codes a planted-bug fixture must produce; an empty tuple means "must pass clean"
    expect: tuple[str, ...] = ()
    # filled in by discovery: the spec file that defined this spec
    spec_path: str = ""

    # ----- derived views -----

    @property
    def tensors(self) -> tuple[Tensor, ...]:
        return tuple(a for a in self.args if isinstance(a, Tensor))

    @property
    def scalars(self) -> tuple[Scalar, ...]:
        return tuple(a for a in self.args if isinstance(a, Scalar))

    def tensor_dtype(self, tensor: Tensor, inst: Instantiation) -> str:
        return inst.dtypes.get(tensor.dtype, tensor.dtype)

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
        total *= d if isinstance(d, int) else sizes[d]
    return total


def _known_axes(spec: KernelSpec) -> set[str]:
    """Grid axes, and axes that every instantiation fixes."""
    fixed = [set(i.sizes) for i in spec.instantiations]
    return set(spec.grid) | (set.intersection(*fixed) if fixed else set())


def _validate_tensor(spec: KernelSpec, tensor: Tensor) -> None:
    known = _known_axes(spec)
    for dim in tensor.shape:
        if isinstance(dim, str) and dim not in known:
            _fail(spec, f"tensor {tensor.name}: dimension {dim!r} is not an axis of the grid")
        if isinstance(dim, int) and dim < 1:
            _fail(spec, f"tensor {tensor.name}: fixed dimension {dim} must be positive")
    if tensor.vector_bytes < 0 or tensor.vector_bytes & (tensor.vector_bytes - 1):
        _fail(spec, f"tensor {tensor.name}: vector_bytes {tensor.vector_bytes} is not a power of two")
    if tensor.strided_rows and len(tensor.shape) < 2:
        _fail(spec, f"tensor {tensor.name}: strided_rows needs a tensor of rank 2 or more")
    if isinstance(tensor.init, str):
        preset, _, dim = tensor.init.partition(":")
        if preset not in INIT_PRESETS:
            _fail(spec, f"tensor {tensor.name}: unknown init {tensor.init!r} (one of {INIT_PRESETS})")
        if preset in ("perm", "randint") and dim not in _known_axes(spec):
            _fail(spec, f"tensor {tensor.name}: init {tensor.init!r} names no grid axis")
    elif not callable(tensor.init):
        _fail(spec, f"tensor {tensor.name}: init must be a preset name or a callable")


def _validate_instantiation(spec: KernelSpec, inst: Instantiation) -> None:
    for tensor in spec.tensors:
        dtype = spec.tensor_dtype(tensor, inst)
        if dtype not in DTYPES:
            _fail(spec, f"instantiation {inst.id}: tensor {tensor.name} has dtype {dtype!r}, "
                        f"which is neither a dtype name nor bound by `dtypes`")
        width = spec.vector_bytes_of(tensor, inst)
        if width < 0 or width & (width - 1):
            _fail(spec, f"instantiation {inst.id}: tensor {tensor.name}: vector_bytes {width} is not a power of two")
        if width and width < itemsize(dtype):
            _fail(spec, f"tensor {tensor.name}: vector_bytes {width} is narrower "
                        f"than one {dtype} element")
    names = {t.name for t in spec.tensors}
    for name in inst.vector_bytes:
        if name not in names:
            _fail(spec, f"instantiation {inst.id}: vector_bytes names no tensor {name!r}")
    axes = {d for t in spec.tensors for d in t.shape if isinstance(d, str)} | set(spec.grid)
    for name, value in inst.sizes.items():
        if name not in axes:
            _fail(spec, f"instantiation {inst.id}: sizes names no axis {name!r}")
        if int(value) < 1:
            _fail(spec, f"instantiation {inst.id}: size {name}={value} must be positive")


def validate_spec(spec: KernelSpec) -> None:
    """Check a spec's internal consistency (no GPU, no torch)."""
    for attr in ("name", "source", "export", "symbol"):
        if not getattr(spec, attr):
            _fail(spec, f"`{attr}` is empty")
    if spec.reference is not None and not callable(spec.reference):
        _fail(spec, "`reference` is not callable")
    names = [a.name for a in spec.args]
    if len(set(names)) != len(names):
        _fail(spec, f"argument names repeat: {names}")
    if not any(t.written for t in spec.tensors):
        _fail(spec, "no OUT or INPLACE tensor: nothing to compare")
    if not spec.instantiations:
        _fail(spec, "no instantiations")
    if len({i.id for i in spec.instantiations}) != len(spec.instantiations):
        _fail(spec, "two instantiations have the same id")
    for tensor in spec.tensors:
        _validate_tensor(spec, tensor)
    for inst in spec.instantiations:
        _validate_instantiation(spec, inst)
    fixed_everywhere = set.intersection(*(set(i.sizes) for i in spec.instantiations))
    if not any(set(TAILS) <= set(values) for name, values in spec.grid.items() if name not in fixed_everywhere):
        _fail(spec, f"no grid axis covers the tails {TAILS}")
    for inst in spec.instantiations:
        if next(spec.grid_points(inst), None) is None:
            _fail(spec, f"instantiation {inst.id}: the grid has no point that passes `constraint`")
    fixed_somewhere = set().union(*(set(i.sizes) for i in spec.instantiations))
    shapes = list(spec.sanitize_sizes)
    if spec.bandwidth_sizes is not None and not callable(spec.bandwidth_sizes):
        shapes.append(spec.bandwidth_sizes)
    for sizes in shapes:
        missing = set(spec.grid) - fixed_somewhere - set(sizes)
        if missing:
            _fail(spec, f"sizes {dict(sizes)} lack the axes {sorted(missing)}")
