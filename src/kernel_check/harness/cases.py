"""Case planning: the list of cases a spec derives, as plain data (no torch, no GPU).

The parent process and its child plan the same list from the same spec, so a case is
named by its index; the child runs them in order and the parent resumes after the case
that faulted. Cases that may poison the CUDA context (bad inputs) come last.

Per instantiation, in order:
- ``reference`` on every grid point: KD101 (values), KD102 (poisoned outputs, two
  poisons), KD103 (bitwise repeat runs), KD104 (inputs unchanged);
- ``strided``: the same checks with rows padded to an aligned stride, for tensors whose
  launcher accepts a row stride;
- ``graph`` (KD403), ``stream`` (KD402), ``pdl`` (KD401, PDL instantiations only);
- ``values``: one adversarial value profile of one input tensor (``profiles.py``), judged
  by its contract (KD101-KD104, or KD301 for ``reject``);
- ``bad-input`` (KD301): CPU tensor (a CUDA one where the launcher takes a host buffer),
  wrong dtype, wrong rank, wrong shape, non-contiguous, base pointer offset by one element,
  padded row stride that breaks the vector width. Returned outputs are not arguments: none.
An instantiation whose ``dtypes`` lists several run-time dtypes plans all of this once
per choice (``KernelSpec.variants``); the build is shared.
Bandwidth (KD501) and sanitizer cases are planned separately: they run in their own
processes (alone on the GPU, or under compute-sanitizer).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .. import codes
from .profiles import SANITIZER_TOOLS, ValueProfile, applicable, contract_of, sanitized
from .spec import Instantiation, KernelSpec, Sizes, Tensor, dim_axes, dim_size, itemsize

# Largest total element count (over all tensors) for sanitizer runs, and for racecheck.
SANITIZE_MAX_ELEMENTS = 1 << 16
RACECHECK_MAX_ELEMENTS = 1 << 13
# A sanitizer shape chosen for an axis's value (its largest, say: the large-batch path) may
# be this big; the rest stay under SANITIZE_MAX_ELEMENTS.
SANITIZE_EXTREME_MAX_ELEMENTS = 1 << 20
SANITIZE_MAX_POINTS = 8
# Largest total element count for the single-shape cases (graph, stream, PDL).
MEDIUM_MAX_ELEMENTS = 1 << 22

# The dtypes a wrong-dtype case tries, in order, instead of the expected one: the first
# that the launcher does not accept (its own dtype set, ``Tensor.accepts``) is passed.
WRONG_DTYPE = {
    "float32": ("float16", "bfloat16", "float64"),
    "float16": ("float32", "bfloat16", "float64"),
    "bfloat16": ("float32", "float16", "float64"),
    "float64": ("float32", "float16"),
    "float8_e4m3fn": ("float16", "float8_e5m2", "float32"),
    "float8_e5m2": ("float16", "float8_e4m3fn", "float32"),
    "int64": ("int32", "float32", "int16"),
    "int32": ("int64", "float32", "int16"),
}
FALLBACK_WRONG_DTYPES = ("float32", "int64", "float16", "int8")


class CaseKind(enum.Enum):
    REFERENCE = "reference"
    STRIDED = "strided"
    PROFILE = "values"
    GRAPH = "graph"
    STREAM = "stream"
    PDL = "pdl"
    BAD_INPUT = "bad-input"
    BANDWIDTH = "bandwidth"
    SANITIZE = "sanitize"


# The check a case kind stands for: what a fault or an exception in it is reported as.
CHECK_CODE = {
    CaseKind.REFERENCE: codes.RESULT_MISMATCH,
    CaseKind.STRIDED: codes.RESULT_MISMATCH,
    CaseKind.PROFILE: codes.RESULT_MISMATCH,
    CaseKind.GRAPH: codes.CUDA_GRAPH,
    CaseKind.STREAM: codes.WRONG_STREAM,
    CaseKind.PDL: codes.PDL_STALE_READ,
    CaseKind.BAD_INPUT: codes.BAD_INPUT_NOT_REJECTED,
    CaseKind.BANDWIDTH: codes.BANDWIDTH_BELOW_FLOOR,
    CaseKind.SANITIZE: codes.MEMCHECK,
}


class BadKind(enum.Enum):
    CPU = "cpu tensor"
    CUDA = "cuda tensor"  # where the launcher takes a host buffer
    DTYPE = "wrong dtype"
    RANK = "wrong rank"
    SHAPE = "wrong shape"
    NON_CONTIGUOUS = "non-contiguous"
    OFFSET = "base pointer offset by one element"
    PADDED_STRIDE = "padded row stride"


@dataclass(frozen=True)
class BadInput:
    """One tensor made invalid in one way; the other arguments stay correct."""

    tensor: str
    kind: BadKind
    dtype: str = ""  # WRONG_DTYPE's choice, for DTYPE
    dim: int = 0  # the dimension that grows by one (SHAPE) or gets stride 2 (NON_CONTIGUOUS)
    pad: int = 0  # elements of padding per row (PADDED_STRIDE)

    @property
    def label(self) -> str:
        detail = {
            BadKind.DTYPE: f" ({self.dtype})",
            BadKind.SHAPE: f" (dim {self.dim} + 1)",
            BadKind.NON_CONTIGUOUS: f" (dim {self.dim} stride 2)",
            BadKind.PADDED_STRIDE: f" (+{self.pad} elements per row)",
        }.get(self.kind, "")
        return f"{self.tensor}: {self.kind.value}{detail}"


@dataclass(frozen=True)
class Case:
    index: int
    inst: str
    kind: CaseKind
    sizes: tuple[tuple[str, int], ...]
    bad: BadInput | None = None
    profile: ValueProfile | None = None
    # inputs filled with one value everywhere: a static finding's witness (its id, `confirm.py`)
    fills: tuple[tuple[str, int], ...] = ()
    # tensors laid out at these strides (in elements) instead of contiguously: a witness's
    # padded or overlapping view (`confirm.py`)
    strides: tuple[tuple[str, tuple[int, ...]], ...] = ()
    # integer scalars given these values instead of the spec's: a witness's launcher scalars
    scalars: tuple[tuple[str, int], ...] = ()

    @property
    def size_map(self) -> dict[str, int]:
        return dict(self.sizes)

    @property
    def label(self) -> str:
        shape = " ".join(f"{k}={v}" for k, v in self.sizes)
        suffix = f" [{self.bad.label}]" if self.bad else ""
        suffix += f" [{self.profile.label}]" if self.profile else ""
        suffix += "".join(f" [{name}={value} everywhere]" for name, value in self.fills)
        suffix += "".join(f" [{name} strides {list(steps)}]" for name, steps in self.strides)
        suffix += "".join(f" [{name}={value}]" for name, value in self.scalars)
        return f"{self.kind.value} {shape}{suffix}"

    def to_json(self) -> dict:
        """A case planned outside the spec (`confirm.py`), for the child that runs it (no bad input)."""
        profile = self.profile
        return {
            "index": self.index,
            "inst": self.inst,
            "kind": self.kind.value,
            "sizes": [list(pair) for pair in self.sizes],
            "profile": [profile.tensor, profile.name, profile.contract] if profile is not None else None,
            "fills": [list(pair) for pair in self.fills],
            "strides": [[name, list(steps)] for name, steps in self.strides],
            "scalars": [list(pair) for pair in self.scalars],
        }

    @classmethod
    def from_json(cls, data: Mapping) -> Case:
        profile = data.get("profile")
        return cls(
            index=int(data["index"]),
            inst=str(data["inst"]),
            kind=CaseKind(data["kind"]),
            sizes=tuple((str(k), int(v)) for k, v in data["sizes"]),
            profile=ValueProfile(*profile) if profile else None,
            fills=tuple((str(k), int(v)) for k, v in data.get("fills", ())),
            strides=tuple((str(k), tuple(int(s) for s in steps)) for k, steps in data.get("strides", ())),
            scalars=tuple((str(k), int(v)) for k, v in data.get("scalars", ())),
        )


def shape_of(tensor: Tensor, sizes: Sizes) -> tuple[int, ...]:
    return tuple(dim_size(d, sizes) for d in tensor.shape)


def numel(shape: Iterable[int]) -> int:
    total = 1
    for d in shape:
        total *= d
    return total


def total_elements(spec: KernelSpec, sizes: Sizes) -> int:
    return sum(numel(shape_of(t, sizes)) for t in spec.tensors)


def _freeze(sizes: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sizes.items())


def base_sizes(spec: KernelSpec, inst: Instantiation | None = None) -> dict[str, int]:
    """The smallest grid point with every axis above 1 (rows and columns both exist)."""
    points = list(spec.grid_points(inst))
    fixed = set(inst.sizes) if inst is not None else set()
    roomy = [p for p in points if all(v > 1 for k, v in p.items() if k not in fixed)] or points
    return min(roomy, key=lambda p: total_elements(spec, p))


def medium_sizes(spec: KernelSpec, inst: Instantiation | None = None) -> dict[str, int]:
    """The largest grid point within MEDIUM_MAX_ELEMENTS (else the smallest point)."""
    points = list(spec.grid_points(inst))
    fitting = [p for p in points if total_elements(spec, p) <= MEDIUM_MAX_ELEMENTS]
    if not fitting:
        return min(points, key=lambda p: total_elements(spec, p))
    return max(fitting, key=lambda p: total_elements(spec, p))


def covering_points(spec: KernelSpec, points: list[dict[str, int]]) -> list[dict[str, int]]:
    """Grid points that reach every value of every axis, extremes first: for each axis its
    smallest and largest value, then the values between (a dispatch threshold written into
    the grid as values on both sides of it), each at the cheapest point that has it. A value
    whose cheapest point is over ``SANITIZE_EXTREME_MAX_ELEMENTS`` is left out; at most
    ``SANITIZE_MAX_POINTS``, and never none."""
    by_cost = sorted(points, key=lambda p: total_elements(spec, p))
    values = {axis: sorted({p[axis] for p in points}) for axis in (points[0] if points else {})}
    wanted = [(axis, v) for axis, vs in values.items() for v in dict.fromkeys((vs[0], vs[-1]))]
    wanted += [(axis, v) for axis, vs in values.items() for v in vs[1:-1]]
    chosen: list[dict[str, int]] = []
    for axis, value in wanted:
        if len(chosen) >= SANITIZE_MAX_POINTS:
            break
        if any(p[axis] == value for p in chosen):
            continue
        cheapest = next(p for p in by_cost if p[axis] == value)
        limit = SANITIZE_EXTREME_MAX_ELEMENTS if value == values[axis][-1] else SANITIZE_MAX_ELEMENTS
        if total_elements(spec, cheapest) <= limit:
            chosen.append(cheapest)
    return chosen or by_cost[:1]


def sanitize_sizes(spec: KernelSpec, tool: str, inst: Instantiation | None = None) -> list[dict[str, int]]:
    """Shapes for compute-sanitizer: the spec's own, else the points that reach every axis's
    extremes (``covering_points``), plus the spec's ``sanitize_extra``; racecheck (about
    2000x slower) gets one small shape."""
    fixed = dict(inst.sizes) if inst is not None else {}
    if spec.sanitize_sizes:
        points = [{**dict(p), **fixed} for p in spec.sanitize_sizes]
    else:
        points = covering_points(spec, list(spec.grid_points(inst)))
    points += [{**dict(p), **fixed} for p in spec.sanitize_extra]
    if spec.constraint is not None:
        points = [p for p in points if spec.constraint(p)] or points
    points = [dict(frozen) for frozen in dict.fromkeys(_freeze(p) for p in points)]
    if tool != "racecheck":
        return points
    small = [p for p in points if total_elements(spec, p) <= RACECHECK_MAX_ELEMENTS]
    return [max(small, key=lambda p: total_elements(spec, p))] if small else points[:1]


def bandwidth_sizes(spec: KernelSpec, inst: Instantiation | None = None) -> dict[str, int] | None:
    """The KD501 shape (None: this instantiation is not measured)."""
    inst = inst if inst is not None else spec.instantiations[0]
    return spec.bandwidth_shape(inst)


# ----- bad inputs -----


def _checked_dims(spec: KernelSpec, tensor: Tensor, inst: Instantiation | None = None) -> list[int]:
    """Dimensions whose size the launcher must check: fixed (in the spec, or by the
    instantiation's template arguments), derived from other axes, or shared with another use."""
    uses: dict[str, int] = {}
    for t in spec.passed_tensors:  # a returned tensor's size is the launcher's choice, not a check
        for d in t.shape:
            for axis in dim_axes(d):
                uses[axis] = uses.get(axis, 0) + 1
    fixed = set(inst.sizes) if inst is not None else set()
    return [i for i, d in enumerate(tensor.shape) if isinstance(d, int) or d in fixed or d not in uses or uses[d] > 1]


def _row_pad(width: int, dtype: str, row: int) -> int:
    """Padding (elements) that makes the row stride a non-multiple of the vector width."""
    size = itemsize(dtype)
    for pad in range(1, width // size + 1):
        if ((row + pad) * size) % width:
            return pad
    return 1


def wrong_dtype(spec: KernelSpec, tensor: Tensor, inst: Instantiation) -> str:
    """A dtype the launcher does not accept for this tensor (none of the accepted ones)."""
    dtype = spec.tensor_dtype(tensor, inst)
    accepted = spec.accepted_dtypes(tensor, inst)
    candidates = (*WRONG_DTYPE.get(dtype, ()), *FALLBACK_WRONG_DTYPES)
    return next((d for d in candidates if d not in accepted), "")


def bad_inputs(spec: KernelSpec, inst: Instantiation, sizes: Sizes) -> list[BadInput]:
    """Every bad variant of every tensor argument that a correct launcher must reject.

    What the launcher allows is left out: a dtype it accepts (its build's run-time dtypes,
    ``Tensor.accepts``), a stride on a dimension it leaves free (``strided_rows``,
    ``strided_dims``): only the innermost dimension that must be contiguous is made
    non-contiguous, and none when every wide dimension is free.
    """
    variants: list[BadInput] = []
    for tensor in spec.passed_tensors:
        dtype = spec.tensor_dtype(tensor, inst)
        shape = shape_of(tensor, sizes)
        width = spec.vector_bytes_of(tensor, inst)
        variants.append(BadInput(tensor.name, BadKind.CUDA if tensor.device == "cpu" else BadKind.CPU))
        other = wrong_dtype(spec, tensor, inst)
        if other:
            variants.append(BadInput(tensor.name, BadKind.DTYPE, dtype=other))
        variants.append(BadInput(tensor.name, BadKind.RANK))
        checked = _checked_dims(spec, tensor, inst)
        if checked:
            variants.append(BadInput(tensor.name, BadKind.SHAPE, dim=checked[-1]))
        free = tensor.free_strides()
        wide = [i for i, d in enumerate(shape) if d > 1 and i not in free]
        if wide:
            variants.append(BadInput(tensor.name, BadKind.NON_CONTIGUOUS, dim=wide[-1]))
        vectorized = width > itemsize(dtype)
        if vectorized:
            variants.append(BadInput(tensor.name, BadKind.OFFSET))
        if vectorized and len(shape) >= 2 and shape[-2] > 1:
            pad = _row_pad(width, dtype, shape[-1])
            variants.append(BadInput(tensor.name, BadKind.PADDED_STRIDE, pad=pad))
    return variants


def value_profiles(spec: KernelSpec, inst: Instantiation) -> list[ValueProfile]:
    """Every adversarial profile of every input tensor, with its contract (``off`` left out)."""
    found = []
    for tensor in spec.tensors:
        if not tensor.read:
            continue
        for name in applicable(tensor.init, spec.tensor_dtype(tensor, inst)):
            contract = contract_of(tensor.profiles, name, tensor.init, spec.reference is not None)
            if contract != "off":
                found.append(ValueProfile(tensor.name, name, contract))
    return found


# ----- plans -----


@dataclass(frozen=True)
class PlanOptions:
    """Which optional case families to plan (all on by default)."""

    bad_inputs: bool = True
    graph: bool = True
    stream: bool = True
    pdl: bool = True
    profiles: bool = True


# (kind, sizes, bad input, value profile) before numbering
_Planned = tuple[CaseKind, Mapping[str, int], BadInput | None, ValueProfile | None]


def _instantiation_cases(spec: KernelSpec, inst: Instantiation, options: PlanOptions) -> list[_Planned]:
    cases: list[_Planned] = [(CaseKind.REFERENCE, p, None, None) for p in spec.grid_points(inst)]
    base = base_sizes(spec, inst)
    if any(t.free_strides() for t in spec.tensors):
        cases.append((CaseKind.STRIDED, base, None, None))
    medium = medium_sizes(spec, inst)
    if options.graph:
        cases.append((CaseKind.GRAPH, medium, None, None))
    if options.stream:
        cases.append((CaseKind.STREAM, medium, None, None))
    if options.pdl and inst.pdl:
        cases.append((CaseKind.PDL, medium, None, None))
    if options.profiles:  # the smallest shape, and the large one (a large-batch path)
        for sizes in dict.fromkeys((_freeze(base), _freeze(medium))):
            cases.extend((CaseKind.PROFILE, dict(sizes), None, p) for p in value_profiles(spec, inst))
    if options.bad_inputs:
        cases.extend((CaseKind.BAD_INPUT, base, bad, None) for bad in bad_inputs(spec, inst, base))
    return cases


def _number(spec_cases: list[tuple[str, _Planned]]) -> list[Case]:
    return [
        Case(index=i, inst=inst_id, kind=kind, sizes=_freeze(sizes), bad=bad, profile=profile)
        for i, (inst_id, (kind, sizes, bad, profile)) in enumerate(spec_cases)
    ]


def plan_cases(spec: KernelSpec, options: PlanOptions = PlanOptions()) -> list[Case]:
    """The checking cases, grouped by instantiation; bad inputs last within each group."""
    return _number([(inst.id, c) for inst in spec.variants for c in _instantiation_cases(spec, inst, options)])


def plan_sanitize(spec: KernelSpec, tool: str) -> list[Case]:
    """Small shapes per instantiation; memcheck and initcheck also get the value profiles
    that steer addresses (``profiles.sanitized``) at the base shape, or the smallest."""
    planned: list[tuple[str, _Planned]] = []
    for inst in spec.variants:
        points = sanitize_sizes(spec, tool, inst)
        planned += [(inst.id, (CaseKind.SANITIZE, p, None, None)) for p in points]
        if tool in SANITIZER_TOOLS:
            base = base_sizes(spec, inst)
            if total_elements(spec, base) > SANITIZE_MAX_ELEMENTS:
                base = min(points, key=lambda p: total_elements(spec, p))
            planned += [
                (inst.id, (CaseKind.SANITIZE, base, None, profile))
                for profile in value_profiles(spec, inst)
                if sanitized(profile)
            ]
    return _number(planned)


def plan_bandwidth(spec: KernelSpec) -> list[Case]:
    if not spec.memory_bound:
        return []
    planned = [(inst.id, bandwidth_sizes(spec, inst)) for inst in spec.variants]
    return _number([(inst_id, (CaseKind.BANDWIDTH, sizes, None, None)) for inst_id, sizes in planned if sizes])


@dataclass(frozen=True)
class Outcome:
    """One check's verdict on one case; ``metric`` is its worst error (or measured ratio)."""

    code: str
    passed: bool
    message: str = ""
    metric: float | None = None
    detail: str = ""

    def to_json(self) -> dict:
        return {
            "code": self.code,
            "passed": self.passed,
            "message": self.message,
            "metric": self.metric,
            "detail": self.detail,
        }

    @classmethod
    def from_json(cls, data: Mapping) -> Outcome:
        return cls(
            data["code"], bool(data["passed"]), data.get("message", ""), data.get("metric"), data.get("detail", "")
        )
