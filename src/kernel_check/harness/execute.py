"""Running planned cases on the GPU (inside a child process): tensors, calls, verdicts.

Each ``run_*`` function takes a ``CaseContext`` and one ``Case`` and returns its
``Outcome`` list. A CUDA error that survives a case (a sticky fault) raises
``ContextPoisoned``: the child reports it and exits, and the parent resumes after it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from .. import codes
from .cases import BadInput, BadKind, Case, CaseKind, Outcome, numel, shape_of
from .profiles import FINITE_PROFILES, index_bound
from .spec import CurrentStream, Instantiation, KernelSpec, Role, Tensor, dim_size, itemsize

# Runs per reference case: poison A, poison B, poison A again (KD102 needs two poisons,
# KD103 compares every run with the first).
POISON_SEQUENCE = (0, 1, 0)
# How long the producer kernel waits before it writes the real inputs: long enough that
# a consumer which does not wait for it has certainly read the stale values.
PDL_DELAY_NS = 2_000_000
# The PDL case runs this many times (fresh stale values each time).
PDL_REPEATS = 3
# An ordered case (stream, graph, PDL) reports a difference only when it shows this many
# times; after a first difference it runs up to ``CONFIRM_RUNS`` more times to see it again.
CONFIRM_SEEN, CONFIRM_RUNS = 2, 2
# The plain runs an ordered case is judged against (poisons A and B in turn), and how far
# beyond their range a nondeterministic kernel's next run may land.
PLAIN_RUNS, NOISE_MARGIN = 4, 4.0
# The canary's stale and late words (see probe.cuh's pdl_canary).
CANARY_STALE, CANARY_LATE = 0, 0x5A5A5A5A
STREAM_DELAY_NS = 20_000_000
BANDWIDTH_WARMUP, BANDWIDTH_ITERS = 3, 20
# KD501 judges only calls that move more than a GPU's L2 (50-60 MB on H100/H200): below it
# the figure is the L2's or the launch latency's, not the HBM bandwidth the floor is about
MIN_BANDWIDTH_BYTES = 64 << 20
COPY_BYTES = 1 << 30
ARENA_ALIGN = 256
CUDA_ERROR_TEXT = re.compile(
    r"cudaError|CUDA error|illegal memory access|misaligned address|unspecified launch failure|"
    r"illegal instruction|device-side assert",
    re.IGNORECASE,
)
# Two poison bit patterns per dtype (run A, run B). An element is never written when it
# holds A after run A and B after run B: no reference needed, and no value a correct
# kernel produces can fake it (it would have to produce A, then B, from the same inputs).
# Floats get NaNs with payloads no arithmetic produces; bool gets bytes that are no bool.
POISON_BITS: dict[str, tuple[int, int]] = {
    "float64": (0xFFF5A5A5A5A5A5A5, 0x7FF5A5A5A5A5A5A5),
    "float32": (0xFFA5A5A5, 0x7FD5A5A5),
    "float16": (0xFDA5, 0x7EA5),
    "bfloat16": (0xFFA5, 0x7FD5),
    "float8_e4m3fn": (0xFF, 0x7F),  # e4m3fn's only NaN encodings
    "float8_e5m2": (0xFE, 0x7D),
    "int64": (0xA5A5A5A5A5A5A5A5, 0x5A5A5A5A5A5A5A5B),
    "int32": (0xA5A5A5A5, 0x5A5A5A5B),
    "int16": (0xA5A5, 0x5A5B),
    "int8": (0xA5, 0x5B),
    "uint8": (0xA5, 0x5A),
    "bool": (0xA5, 0x5A),
}


class ContextPoisoned(RuntimeError):
    """The CUDA context holds a sticky error; nothing more can run in this process."""


@dataclass
class CaseContext:
    """What a case needs: the spec, the loaded kernel per instantiation, the probe module."""

    spec: KernelSpec
    kernels: Mapping[str, Callable[..., Any]]
    probe: Any = None
    bandwidth_floor: float = 0.8
    device: torch.device = field(default_factory=lambda: torch.device("cuda"))
    _copy_bandwidth: float | None = None
    _pdl_overlap: tuple[bool, str] | None = None

    def instantiation(self, inst_id: str) -> Instantiation:
        return self.spec.variant(inst_id)

    def dtype_of(self, tensor: Tensor, inst_id: str) -> torch.dtype:
        return getattr(torch, self.spec.tensor_dtype(tensor, self.instantiation(inst_id)))


# ----- tensors -----


def _generator(case: Case, salt: int = 0) -> torch.Generator:
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1000003 * (case.index + 1) + salt)
    return gen


def _fill(
    tensor: Tensor, dtype: torch.dtype, shape: tuple[int, ...], sizes: Mapping[str, int], gen: torch.Generator
) -> torch.Tensor:
    """A contiguous tensor of initial values, as the tensor's ``init`` says."""
    cuda = torch.device("cuda")
    if callable(tensor.init):
        return tensor.init(shape, dtype, cuda, gen, sizes).to(cuda).contiguous()
    preset, _, dim = tensor.init.partition(":")
    if preset == "perm":
        count, bound = numel(shape), dim_size(dim, sizes)
        if count > bound:
            raise ValueError(f"{tensor.name}: perm:{dim} needs {count} distinct values below {bound}")
        return torch.randperm(bound, generator=gen, device=cuda)[:count].view(shape).to(dtype)
    if preset == "randint":
        return torch.randint(0, dim_size(dim, sizes), shape, generator=gen, device=cuda).to(dtype)
    if preset == "cumsum":  # a prefix sum: 0 first, the dimension's size last, sorted between
        count, bound = numel(shape), dim_size(dim, sizes)
        inner = torch.randint(0, bound + 1, (max(count - 2, 0),), generator=gen, device=cuda).sort().values
        ends = torch.tensor([0, bound][: min(count, 2)], device=cuda)
        return torch.cat([ends[:1], inner, ends[1:]]).view(shape).to(dtype)
    if preset in ("zeros", "ones"):
        return (torch.zeros if preset == "zeros" else torch.ones)(shape, dtype=dtype, device=cuda)
    if not dtype.is_floating_point:
        return torch.randint(-64, 64, shape, generator=gen, device=cuda).to(dtype)
    values = torch.randn(shape, generator=gen, device=cuda)
    if preset == "uniform":
        values = torch.rand(shape, generator=gen, device=cuda) * 2 - 1
    return values.to(dtype)


def empty_for(tensor: Tensor, shape: Sequence[int], dtype: torch.dtype) -> torch.Tensor:
    """An uninitialized tensor where the launcher takes ``tensor``: on the GPU, or in (pinned) host memory."""
    return torch.empty(tuple(shape), dtype=dtype, device=tensor.device, pin_memory=tensor.pinned)


def placed(tensor: Tensor, values: torch.Tensor) -> torch.Tensor:
    """A copy of ``values`` where the launcher takes ``tensor`` (a host tensor pinned when the spec says so)."""
    copy = empty_for(tensor, values.shape, values.dtype)
    copy.copy_(values)
    return copy


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).rsplit(".", 1)[-1]


def poison_bits(dtype: torch.dtype, which: int) -> int:
    """Poison ``which`` (0: run A, 1: run B) as a signed integer of the dtype's width."""
    bits = POISON_BITS[_dtype_name(dtype)][which]
    width = 8 * torch.empty((), dtype=dtype).element_size()
    return bits - (1 << width) if bits >> (width - 1) else bits


def fill_poison(out: torch.Tensor, which: int) -> None:
    """Every element of ``out`` set to poison ``which``, bit for bit (any dtype, any layout)."""
    out.view(_INT_OF_SIZE[out.element_size()]).fill_(poison_bits(out.dtype, which))


def holds_poison(t: torch.Tensor, which: int) -> torch.Tensor:
    return _bits(t) == poison_bits(t.dtype, which)


def _zeros(shape: Sequence[int], dtype: torch.dtype, device: torch.device, pinned: bool = False) -> torch.Tensor:
    """Zero-filled, made through bytes: fill kernels do not cover every dtype (fp8)."""
    size = torch.empty((), dtype=dtype).element_size()
    raw_shape = (*shape[:-1], shape[-1] * size) if shape else (size,)
    raw = torch.zeros(raw_shape, dtype=torch.uint8, device=device, pin_memory=pinned)
    return raw.view(dtype).view(shape) if shape else raw.view(dtype).reshape(())


def _zeros_beside(values: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
    """A zeroed buffer where ``values`` lives: a pinned host tensor's in pinned memory too,
    since a kernel reads a host buffer over the bus, and pageable memory there faults (a
    fault that surfaces at a later call, blamed on the wrong case)."""
    return _zeros(shape, values.dtype, values.device, values.is_pinned())


def _padded_rows(values: torch.Tensor, pad: int) -> torch.Tensor:
    """``values`` viewed inside a zeroed buffer whose rows are ``pad`` elements longer."""
    buffer = _zeros_beside(values, (*values.shape[:-1], values.shape[-1] + pad))
    view = buffer[..., : values.shape[-1]]
    view.copy_(values)
    return view


def _aligned_pad(width: int, dtype: str) -> int:
    """Row padding that keeps every row start aligned to the vector width (or 16 bytes)."""
    return max(width, 16) // itemsize(dtype)


def _apply_bad(values: torch.Tensor, bad: BadInput) -> torch.Tensor:
    """The invalid view or copy of ``values`` that ``bad`` describes."""
    if bad.kind is BadKind.CPU:
        return values.cpu()
    if bad.kind is BadKind.CUDA:  # a host buffer's launcher handed a device tensor instead
        return values.to("cuda")
    if bad.kind is BadKind.DTYPE:
        converted = values.to(getattr(torch, bad.dtype))
        return converted.pin_memory() if values.is_pinned() else converted
    if bad.kind is BadKind.RANK:
        return values.unsqueeze(0)
    if bad.kind is BadKind.SHAPE:
        wider = list(values.shape)
        wider[bad.dim] += 1
        grown = _zeros_beside(values, tuple(wider))
        grown.narrow(bad.dim, 0, values.shape[bad.dim]).copy_(values)
        grown.narrow(bad.dim, values.shape[bad.dim], 1).copy_(values.narrow(bad.dim, 0, 1))
        return grown
    if bad.kind is BadKind.NON_CONTIGUOUS:
        wide = list(values.shape)
        wide[bad.dim] *= 2
        buffer = _zeros_beside(values, tuple(wide))
        view = buffer[(slice(None),) * bad.dim + (slice(None, None, 2),)]
        view.copy_(values)
        return view
    if bad.kind is BadKind.OFFSET:
        flat = _zeros_beside(values, (values.numel() + 1,))
        view = flat[1:].view(values.shape)
        view.copy_(values)
        return view
    return _padded_rows(values, bad.pad)


@dataclass
class Arguments:
    """One call's arguments by name, plus the initial values of what the call reads."""

    values: dict[str, Any]
    initial: dict[str, torch.Tensor]

    def ordered(self, spec: KernelSpec) -> list[Any]:
        return [self.values[a.name] for a in spec.passed_args]


def padded_strides(shape: tuple[int, ...], free: tuple[int, ...], pad: int) -> tuple[int, ...]:
    """Strides of ``shape`` where each free dimension's stride grows by ``pad`` elements
    (and the dimensions outside it follow), any rank: ``(2, 3, 4)``, free ``(0, 1)``, pad 8
    -> ``(3 * 12 + 8, 12, 1)``."""
    strides = [1] * len(shape)
    for dim in range(len(shape) - 2, -1, -1):
        strides[dim] = shape[dim + 1] * strides[dim + 1] + (pad if dim in free else 0)
    if len(shape) and len(shape) - 1 in free:
        strides = [s * 2 for s in strides]  # a free innermost stride: every other element
    return tuple(strides)


def laid_out_at(values: torch.Tensor, strides: tuple[int, ...]) -> torch.Tensor:
    """``values`` viewed at ``strides`` inside a zeroed buffer just its span long. Written by
    each index's offset into the buffer, so a view that overlaps itself (a stride the
    launcher allows below the extent inside it) holds, in each shared element, one of the
    values written there."""
    span = 1 + sum((n - 1) * st for n, st in zip(values.shape, strides)) if values.numel() else 1
    buffer = _zeros_beside(values, (span,))
    offsets = torch.arange(span, device=values.device).as_strided(values.shape, strides)
    buffer[offsets] = values
    return buffer.as_strided(values.shape, strides)


def _layout(ctx: CaseContext, tensor: Tensor, values: torch.Tensor, case: Case) -> torch.Tensor:
    """``values`` in the case's layout: the strides the case names for it (a witness's view),
    else padded strides on every free dimension (STRIDED), else contiguous."""
    named = dict(case.strides).get(tensor.name)
    if named is not None:
        return laid_out_at(values, named)
    if case.kind is CaseKind.STRIDED and tensor.free_strides():
        inst = ctx.instantiation(case.inst)
        pad = _aligned_pad(ctx.spec.vector_bytes_of(tensor, inst), ctx.spec.tensor_dtype(tensor, inst))
        return laid_out_at(values, padded_strides(tuple(values.shape), tensor.free_strides(), pad))
    return values


def _outputs(ctx: CaseContext, case: Case, which_poison: int | None) -> dict[str, torch.Tensor]:
    """Output tensors filled with poison ``which_poison`` (None: left uninitialized); the
    ones the launcher returns are its own to allocate."""
    sizes = case.size_map
    outs = {}
    for tensor in ctx.spec.passed_tensors:
        if tensor.role is Role.OUT:
            dtype = ctx.dtype_of(tensor, case.inst)
            out = empty_for(tensor, shape_of(tensor, sizes), dtype)
            if which_poison is not None:
                fill_poison(out, which_poison)
            outs[tensor.name] = _layout(ctx, tensor, out, case)
    return outs


def make_initial(ctx: CaseContext, case: Case, salt: int = 0) -> dict[str, torch.Tensor]:
    """Contiguous initial values of every tensor the kernel reads (IN and INPLACE), one of
    them replaced by the case's value profile, the case's fills filled; each where the launcher
    takes it (made on the GPU, then a host tensor copied to pinned or pageable memory)."""
    gen = _generator(case, salt)
    sizes = case.size_map
    read = [t for t in ctx.spec.tensors if t.read]
    initial = {t.name: _fill(t, ctx.dtype_of(t, case.inst), shape_of(t, sizes), sizes, gen) for t in read}
    if case.profile is not None:
        tensor = next(t for t in ctx.spec.tensors if t.name == case.profile.tensor)
        bound = index_bound(tensor.init)
        initial[tensor.name] = profile_values(
            initial[tensor.name], case.profile.name, dim_size(bound, sizes) if bound else 0, gen
        )
    for name, value in case.fills:
        initial[name] = torch.full_like(initial[name], value)
    return {t.name: initial[t.name] if t.device == "cuda" else placed(t, initial[t.name]) for t in read}


def _sprinkled(values: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """A mask of a few positions (one in 64, at least one)."""
    count = max(1, values.numel() // 64)
    picked = torch.randperm(values.numel(), generator=gen, device=values.device)[:count]
    mask = torch.zeros(values.numel(), dtype=torch.bool, device=values.device)
    mask[picked] = True
    return mask.view(values.shape)


def profile_values(values: torch.Tensor, profile: str, bound: int, gen: torch.Generator) -> torch.Tensor:
    """``values`` (contiguous) turned into one adversarial profile (see ``profiles.py``);
    ``bound`` is an index tensor's valid range [0, bound)."""
    if profile in ("dup", "edge", "oob"):
        ids = values.clone()
        flat = ids.view(-1)
        if profile == "dup":
            flat.fill_(int(torch.randint(0, bound, (1,), generator=gen, device=values.device)))
        elif profile == "edge":  # 0 first, bound - 1 last, swapped in so distinct ids stay distinct
            for position, edge in ((0, 0), (flat.numel() - 1, bound - 1)):
                holder = (flat == edge).nonzero()
                if holder.numel():
                    flat[int(holder[0])] = flat[position].clone()
                flat[position] = edge
        else:  # every other id out of range: -1 and bound in turn, the rest valid
            flat[0::4], flat[2::4] = -1, bound
        return ids
    wide = values.float()
    finfo = torch.finfo(values.dtype)
    if profile == "zeros":
        wide = torch.zeros_like(wide)
    elif profile == "equal":
        wide = torch.full_like(wide, 0.75)
    elif profile == "subnormal":
        wide = (torch.rand(wide.shape, generator=gen, device=wide.device) * 2 - 1) * finfo.tiny
    else:
        sign = torch.where(torch.rand(wide.shape, generator=gen, device=wide.device) < 0.5, -1.0, 1.0)
        special = {"huge": finfo.max / 2, "inf": float("inf"), "nan": float("nan")}[profile]
        wide = torch.where(_sprinkled(wide, gen), sign * special, wide)
    return wide.to(values.dtype)


def scalar_values(spec: KernelSpec, case: Case) -> dict[str, Any]:
    """Each scalar argument's value in the case: the case's own (a witness's; a flag's 0 or 1
    as a `bool`), else the spec's."""
    given = dict(case.scalars)
    return {
        s.name: (bool(given[s.name]) if isinstance(s.value, bool) else given[s.name])
        if s.name in given
        else s.resolve(case.size_map)
        for s in spec.scalars
    }


def make_arguments(
    ctx: CaseContext, case: Case, initial: Mapping[str, torch.Tensor], which_poison: int | None = 0
) -> Arguments:
    """Arguments for one call: fresh in-place copies, fresh outputs (poisoned unless None)."""
    values: dict[str, Any] = scalar_values(ctx.spec, case)
    for tensor in ctx.spec.tensors:
        if tensor.role is Role.IN:
            values[tensor.name] = _layout(ctx, tensor, initial[tensor.name], case)
        elif tensor.role is Role.INPLACE:
            values[tensor.name] = _layout(ctx, tensor, placed(tensor, initial[tensor.name]), case)
    values.update(_outputs(ctx, case, which_poison))
    return Arguments(values, dict(initial))


def expected_outputs(ctx: CaseContext, case: Case, initial: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The reference's values for every written tensor, keyed by name."""
    kwargs: dict[str, Any] = {name: t.clone() for name, t in initial.items()}
    kwargs.update(scalar_values(ctx.spec, case))
    reference = ctx.spec.reference_for(ctx.instantiation(case.inst))
    if reference is None:
        raise ValueError(f"spec {ctx.spec.name} has no reference to compute the expected outputs")
    result = reference(**kwargs)
    written = [t.name for t in ctx.spec.tensors if t.written]
    if isinstance(result, torch.Tensor):
        if len(written) != 1:
            raise ValueError(f"reference returned one tensor for {len(written)} outputs {written}")
        result = {written[0]: result}
    missing = set(written) - set(result)
    if missing:
        raise ValueError(f"reference returned no value for {sorted(missing)}")
    return {name: result[name] for name in written}


@dataclass
class Yardstick:
    """What an ordered call (stream, graph, PDL) is judged against: ``PLAIN_RUNS`` plain
    launches of the same inputs and state (default stream, no graph, poisons A and B in
    turn), made afresh for every attempt of the ordered call.

    The ordered call is compared with the first plain run, not with the reference: KD101
    already judges the reference, and KD401-KD403 report only what the ordering changes.
    Elements the plain runs never wrote are left out (KD102 reports them). Where the plain
    runs differ among themselves (atomics, a sum at a rounding boundary) the kernel has
    noise of its own, which KD103 reports: every element of that tensor gets
    ``NOISE_MARGIN`` times the widest range seen on top of its tolerance, since another
    run's noise lands elsewhere than these runs'. A stale read or a lost ordering changes
    values by their own size, far beyond rounding.
    """

    expected: dict[str, torch.Tensor]
    unwritten: dict[str, torch.Tensor]
    noise: dict[str, torch.Tensor]


def _noise(runs: Sequence[torch.Tensor], unwritten: torch.Tensor | None) -> torch.Tensor:
    """The slack per element: ``NOISE_MARGIN`` x the widest finite range (max - min) over
    ``runs``, and inf where some runs hold NaN and others do not."""
    stacked = torch.stack([r.double() for r in runs])
    nans = torch.isnan(stacked)
    some_nan = nans.any(0) & ~nans.all(0)
    finite = stacked.nan_to_num(nan=0.0, posinf=0.0, neginf=0.0)
    spread = finite.amax(0) - finite.amin(0)
    spread = torch.where(nans.any(0), torch.zeros_like(spread), spread)
    if unwritten is not None:
        spread = torch.where(unwritten, torch.zeros_like(spread), spread)
        some_nan &= ~unwritten
    widest = float(spread.max()) if spread.numel() else 0.0
    return torch.where(some_nan, float("inf"), NOISE_MARGIN * widest)


def yardstick(ctx: CaseContext, case: Case, initial: Mapping[str, torch.Tensor]) -> Yardstick:
    runs = plain_runs(ctx, case, initial, (0, 1) * (PLAIN_RUNS // 2))
    unwritten = never_written(ctx, runs)
    noise = {name: _noise([run[name] for run in runs], unwritten.get(name)) for name in runs[0]}
    return Yardstick(runs[0], unwritten, noise)


def plain_runs(
    ctx: CaseContext, case: Case, initial: Mapping[str, torch.Tensor], poisons: Sequence[int]
) -> list[dict[str, torch.Tensor]]:
    """What plain launches (default stream, no graph) write, one per poison of ``poisons``,
    each on fresh outputs and fresh copies of the in-place tensors."""
    runs = []
    for which in poisons:
        args = make_arguments(ctx, case, initial, which)
        call(ctx, case, args)
        synchronize()
        runs.append(_written(ctx, args))
    return runs


def never_written(ctx: CaseContext, runs: Sequence[Mapping[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Per output tensor, the elements that held poison A after run 0 and poison B after run 1
    (a returned output was never poisoned: none)."""
    return {
        t.name: unwritten_mask(runs[0][t.name], runs[1][t.name]) for t in ctx.spec.passed_tensors if t.role is Role.OUT
    }


def canonical(spec: KernelSpec, outputs: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Outputs in the canonical form the spec's ``canonicalize`` names (order removed)."""
    if callable(spec.canonicalize):
        return dict(spec.canonicalize({name: t.clone() for name, t in outputs.items()}))
    result = dict(outputs)
    for name, how in (spec.canonicalize or {}).items():
        if name in result and how in ("sort", "set"):
            value = result[name]
            wide = value.float() if value.dtype.is_floating_point else value
            result[name] = torch.sort(wide, dim=-1).values.to(value.dtype)
    return result


# ----- verdicts -----


def synchronize() -> None:
    try:
        torch.cuda.synchronize()
    except Exception as exc:  # torch raises RuntimeError (AcceleratorError) for sticky faults
        raise ContextPoisoned(str(exc)) from exc


_INT_OF_SIZE = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().view(_INT_OF_SIZE[t.element_size()])


def unwritten_mask(run_a: torch.Tensor, run_b: torch.Tensor) -> torch.Tensor:
    """Elements that held poison A after run A and poison B after run B: never written."""
    return holds_poison(run_a, 0) & holds_poison(run_b, 1)


@dataclass(frozen=True)
class Mismatch:
    count: int
    total: int
    max_abs: float
    max_rel: float
    first_index: tuple[int, ...]
    actual: float
    expected: float

    def describe(self) -> str:
        return (
            f"{self.count} of {self.total} elements differ; max abs err {self.max_abs:.3g}, "
            f"max rel err {self.max_rel:.3g}; first at index {self.first_index}: "
            f"got {self.actual:.6g}, expected {self.expected:.6g}"
        )


def compare(
    actual: torch.Tensor,
    expected: torch.Tensor,
    rtol: float,
    atol: float,
    ignore: torch.Tensor | None = None,
    slack: torch.Tensor | None = None,
) -> Mismatch | None:
    """assert_close's rule (|a - e| <= atol + rtol * |e|, NaN equal to NaN) with a report;
    ``slack`` widens the bound per element (inf: any value)."""
    a = actual.float().double() if actual.dtype.is_floating_point else actual.double()
    e = expected.to(device=actual.device, dtype=actual.dtype)
    e = e.float().double() if e.dtype.is_floating_point else e.double()
    diff = (a - e).abs()
    bound = atol + rtol * e.abs()
    if slack is not None:
        bound = bound + slack
    close = (diff <= bound) | (torch.isnan(a) & torch.isnan(e)) | (a == e)
    if slack is not None:
        close |= torch.isinf(slack)
    if ignore is not None:
        close |= ignore
    bad = ~close
    count = int(bad.sum())
    if count == 0:
        return None
    diff = torch.where(bad, diff.nan_to_num(float("inf")), torch.zeros_like(diff))
    rel = diff / e.abs().clamp_min(torch.finfo(torch.float64).tiny)
    flat = int(bad.flatten().nonzero()[0])
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), bad.shape))
    return Mismatch(count, bad.numel(), float(diff.max()), float(rel.max()), index, float(a[index]), float(e[index]))


def _tolerance(ctx: CaseContext, t: torch.Tensor) -> tuple[float, float]:
    return ctx.spec.tolerance_for(str(t.dtype).rsplit(".", 1)[-1])


def _check_values(
    ctx: CaseContext,
    code: str,
    actual: Mapping[str, torch.Tensor],
    expected: Mapping[str, torch.Tensor],
    what: str,
    ignore: Mapping[str, torch.Tensor] | None = None,
    slack: Mapping[str, torch.Tensor] | None = None,
) -> Outcome:
    problems, worst = [], 0.0
    if ctx.spec.canonicalize is not None:  # unspecified order: positions say nothing
        actual, expected, ignore, slack = canonical(ctx.spec, actual), canonical(ctx.spec, expected), None, None
    for name, value in actual.items():
        rtol, atol = _tolerance(ctx, value)
        mismatch = compare(value, expected[name], rtol, atol, (ignore or {}).get(name), (slack or {}).get(name))
        if mismatch:
            problems.append(f"{name}: {mismatch.describe()} (rtol {rtol:g}, atol {atol:g})")
            worst = max(worst, mismatch.max_abs)
    if problems:
        return Outcome(code, False, f"{what}: " + "; ".join(problems), worst)
    return Outcome(code, True)


def _written(ctx: CaseContext, args: Arguments) -> dict[str, torch.Tensor]:
    return {t.name: args.values[t.name] for t in ctx.spec.tensors if t.written}


def call(ctx: CaseContext, case: Case, args: Arguments) -> None:
    """One launch; the outputs the launcher returns join ``args`` by name."""
    passed = [_on_stream(value) for value in args.ordered(ctx.spec)]
    result = ctx.kernels[case.inst](*passed)
    args.values.update(returned_outputs(ctx.spec, ctx.instantiation(case.inst), case.size_map, result))


def _on_stream(value: Any) -> Any:
    """A scalar's value as passed: ``CURRENT_STREAM`` becomes the handle of the stream this
    call runs on (read at the call: the stream and graph checks run it on their own)."""
    return torch.cuda.current_stream().cuda_stream if isinstance(value, CurrentStream) else value


def returned_outputs(spec: KernelSpec, inst: Instantiation, sizes: Mapping[str, int], result: Any) -> dict[str, Any]:
    """The launcher's returned outputs as torch tensors by name, each checked against its
    declaration (shape, dtype, device): a mismatch is a ValueError naming the output."""
    found = {}
    for name, value in spec.returned(result).items():
        tensor = next(t for t in spec.tensors if t.name == name)
        value = value if isinstance(value, torch.Tensor) else torch.from_dlpack(value)
        want = (shape_of(tensor, sizes), spec.tensor_dtype(tensor, inst), tensor.device)
        got = (tuple(value.shape), _dtype_name(value.dtype), value.device.type)
        if got != want:
            raise ValueError(f"returned output {name} is {got} (shape, dtype, device); the spec declares {want}")
        found[name] = value
    return found


def run_reference(ctx: CaseContext, case: Case) -> list[Outcome]:
    """KD101-KD104 on one grid point: three runs with two poisons, inputs snapshotted.

    Without a reference (or where a value profile's contract compares nothing), KD101 is
    left out and the rest, which needs none, still runs.
    """
    initial = make_initial(ctx, case)
    return check_runs(ctx, case, initial, compare_values=ctx.spec.reference is not None)


def check_runs(
    ctx: CaseContext, case: Case, initial: Mapping[str, torch.Tensor], compare_values: bool
) -> list[Outcome]:
    expected = expected_outputs(ctx, case, initial) if compare_values else None
    read_only = {t.name for t in ctx.spec.tensors if t.role is Role.IN}
    snapshot = {name: _bits(t).clone() for name, t in initial.items() if name in read_only}
    runs = plain_runs(ctx, case, initial, POISON_SEQUENCE)
    unwritten = never_written(ctx, runs)
    outcomes = [_poison(_must_be_written(ctx, unwritten, initial))]
    if expected is not None:
        outcomes.append(
            _check_values(
                ctx, codes.RESULT_MISMATCH, runs[0], expected, "result differs from the reference", ignore=unwritten
            )
        )
    return [*outcomes, _determinism(ctx, runs, unwritten), _inputs_unchanged(initial, snapshot)]


def _must_be_written(
    ctx: CaseContext, unwritten: Mapping[str, torch.Tensor], initial: Mapping[str, torch.Tensor]
) -> dict[str, torch.Tensor]:
    """The never-written elements KD102 reports: of a tensor scattered into (``written_rows``),
    those of the rows its ids name."""
    required = dict(unwritten)
    for tensor in ctx.spec.tensors:
        if tensor.written_rows and tensor.name in required:
            required[tensor.name] = in_named_rows(required[tensor.name], initial[tensor.written_rows])
    return required


def in_named_rows(mask: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """``mask`` kept on the rows (first dimension) that the ids in range name; an id out of
    range (an ``oob`` profile's) names none."""
    rows = mask.shape[0]
    flat = ids.reshape(-1).to(device=mask.device, dtype=torch.int64)
    named = torch.zeros(rows, dtype=torch.bool, device=mask.device)
    named[flat[(flat >= 0) & (flat < rows)]] = True
    return mask & named.view(rows, *([1] * (mask.dim() - 1)))


def _poison(unwritten: Mapping[str, torch.Tensor]) -> Outcome:
    """KD102: elements that held both poisons in turn."""
    holes = {n: m for n, m in unwritten.items() if bool(m.any())}
    if not holes:
        return Outcome(codes.OUTPUT_NOT_WRITTEN, True)
    parts = []
    for name, mask in holes.items():
        first = tuple(int(i) for i in mask.nonzero()[0])
        parts.append(f"{name}: {int(mask.sum())} of {mask.numel()} elements never written (first at index {first})")
    return Outcome(codes.OUTPUT_NOT_WRITTEN, False, "; ".join(parts), float(sum(int(m.sum()) for m in holes.values())))


def _determinism(
    ctx: CaseContext, runs: list[dict[str, torch.Tensor]], unwritten: Mapping[str, torch.Tensor]
) -> Outcome:
    """KD103: every run bitwise equal to the first, never-written elements aside.

    Where the spec canonicalizes (the order of the outputs is not fixed), the canonical forms
    are compared instead, and only between runs of the same poison: the poisons of
    never-written elements would otherwise sort differently.
    """
    if not ctx.spec.deterministic:
        return Outcome(codes.NONDETERMINISTIC, True, "declared nondeterministic")
    numbered = list(enumerate(runs, start=1))
    if ctx.spec.canonicalize is not None:
        numbered = [(n, canonical(ctx.spec, outs)) for n, outs in numbered if POISON_SEQUENCE[n - 1] == 0]
        unwritten = {}
    (_, first), *later = numbered
    for run_number, outs in later:
        for name, value in outs.items():
            differs = _bits(value) != _bits(first[name])
            if name in unwritten:
                differs &= ~unwritten[name].contiguous()
            count = int(differs.sum())
            if count:
                at = tuple(int(i) for i in differs.nonzero()[0])
                return Outcome(
                    codes.NONDETERMINISTIC,
                    False,
                    f"{name}: run {run_number} differs bitwise from run 1 in {count} elements "
                    f"(first at index {at}: {float(value[at]):.9g} vs {float(first[name][at]):.9g})",
                    float(count),
                )
    return Outcome(codes.NONDETERMINISTIC, True)


def _inputs_unchanged(initial: Mapping[str, torch.Tensor], snapshot: Mapping[str, torch.Tensor]) -> Outcome:
    changed = [name for name, bits in snapshot.items() if not torch.equal(_bits(initial[name]), bits)]
    if changed:
        return Outcome(codes.INPUT_MODIFIED, False, f"read-only input(s) {', '.join(changed)} changed during the call")
    return Outcome(codes.INPUT_MODIFIED, True)


def run_graph(ctx: CaseContext, case: Case) -> list[Outcome]:
    """KD403: capture one call, replay it on new inputs, compare with an eager call."""
    initial = make_initial(ctx, case)
    args = make_arguments(ctx, case, initial)
    call(ctx, case, args)  # eager warm-up: loads the module's kernels before capture
    synchronize()
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            call(ctx, case, args)
    except Exception as exc:
        synchronize()
        return [
            Outcome(
                codes.CUDA_GRAPH,
                False,
                f"the call cannot be captured in a CUDA graph: {_first_line(exc)}",
                detail=str(exc),
            )
        ]
    fresh = make_initial(ctx, case, salt=7)

    def replay(_attempt: int) -> Outcome:
        stick = yardstick(ctx, case, fresh)
        for name, value in fresh.items():  # the same state each time: in-place tensors too
            args.values[name].copy_(value)
        for name, out in _outputs(ctx, case, 0).items():
            args.values[name].copy_(out)
        graph.replay()
        synchronize()
        replayed = {n: t.clone() for n, t in _written(ctx, args).items()}
        return _judge(ctx, codes.CUDA_GRAPH, replayed, stick, "graph replay differs from eager")

    return [_confirmed(replay, 1)]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]


# ----- ordering probes: a producer kernel that writes the inputs late -----


@dataclass
class Arena:
    """Every read tensor as a view into one byte buffer, so one probe launch rewrites all."""

    buffer: torch.Tensor
    views: dict[str, torch.Tensor]


def _arena(initial: Mapping[str, torch.Tensor]) -> Arena:
    offsets, total = {}, 0
    for name, t in initial.items():
        offsets[name] = total
        total += -(-t.numel() * t.element_size() // ARENA_ALIGN) * ARENA_ALIGN
    buffer = torch.zeros(max(total, ARENA_ALIGN), dtype=torch.uint8, device="cuda")
    views = {}
    for name, t in initial.items():
        nbytes = t.numel() * t.element_size()
        views[name] = buffer[offsets[name] : offsets[name] + nbytes].view(t.dtype).view(t.shape)
    return Arena(buffer, views)


def _late_inputs(
    ctx: CaseContext, case: Case, real: Mapping[str, torch.Tensor], salt: int
) -> tuple[Arena, torch.Tensor]:
    """An arena holding stale values, and the staging bytes of the ``real`` ones: the GPU
    inputs only (a host buffer holds its real values: the producer writes device memory)."""
    arena = _arena({name: value for name, value in real.items() if value.is_cuda})
    for name, view in arena.views.items():
        view.copy_(real[name])
    staging = arena.buffer.clone()
    stale = make_initial(ctx, case, salt=salt)
    for name, view in arena.views.items():
        view.copy_(stale[name])
    return arena, staging


def _ordered_call(
    ctx: CaseContext,
    case: Case,
    code: str,
    delay_ns: int,
    pdl: bool,
    salt: int,
) -> Outcome:
    """One ordered call on late-written inputs, judged against fresh plain runs."""
    real = make_initial(ctx, case)
    arena, staging = _late_inputs(ctx, case, real, salt)  # copies `real`: before any launch reads it
    stick = yardstick(ctx, case, real)
    stream = torch.cuda.Stream()
    args = make_arguments(ctx, case, {**real, **arena.views})
    for name, view in arena.views.items():  # the kernel must see the arena itself, in place
        args.values[name] = view
    synchronize()
    producer = ctx.probe.late_write_pdl if pdl else ctx.probe.late_write
    with torch.cuda.stream(stream):
        producer(arena.buffer, staging, delay_ns)
        call(ctx, case, args)
    synchronize()
    what = (
        "with PDL, the result differs when the preceding kernel writes the inputs late"
        if pdl
        else "on a non-default stream behind a delaying kernel, the result differs"
    )
    return _judge(ctx, code, _written(ctx, args), stick, what)


def _judge(ctx: CaseContext, code: str, actual: Mapping[str, torch.Tensor], stick: Yardstick, what: str) -> Outcome:
    return _check_values(ctx, code, actual, stick.expected, what, ignore=stick.unwritten, slack=stick.noise)


def _confirmed(attempt: Callable[[int], Outcome], runs: int) -> Outcome:
    """``attempt(i)`` for i in 0..runs-1, and after a first difference until it shows
    ``CONFIRM_SEEN`` times or ``CONFIRM_RUNS`` more runs pass: a difference that never
    repeats is no verdict (the passing outcome keeps it in its detail)."""
    failures: list[Outcome] = []
    ran = 0
    while ran < runs or (failures and ran < runs + CONFIRM_RUNS):
        outcome = attempt(ran)
        ran += 1
        if not outcome.passed:
            failures.append(outcome)
            if len(failures) >= CONFIRM_SEEN:
                first = failures[0]
                return Outcome(first.code, False, f"{first.message} (in {len(failures)} of {ran} runs)", first.metric)
    if failures:
        return Outcome(failures[0].code, True, detail=f"seen once in {ran} runs, not again: {failures[0].message}")
    return Outcome(outcome.code, True)


def run_stream(ctx: CaseContext, case: Case) -> list[Outcome]:
    return [
        _confirmed(
            lambda attempt: _ordered_call(ctx, case, codes.WRONG_STREAM, STREAM_DELAY_NS, False, 13 + attempt), 1
        )
    ]


def pdl_overlap(ctx: CaseContext, attempts: int = 3) -> tuple[bool, str]:
    """Whether a PDL launch really starts before its predecessor ends, on this GPU and driver.

    The canary reads a word before ``PDLWaitPrimary`` that the producer rewrites only after
    its delay: the stale value proves the overlap the KD401 case relies on. Cached per process.
    """
    if ctx._pdl_overlap is None:
        seen: list[int] = []
        stream = torch.cuda.Stream()
        for _ in range(attempts):
            flag = torch.zeros(16, dtype=torch.uint8, device="cuda")
            staging = torch.full((16,), CANARY_LATE & 0xFF, dtype=torch.uint8, device="cuda")
            words = torch.full((2,), -1, dtype=torch.int32, device="cuda")
            synchronize()
            with torch.cuda.stream(stream):
                ctx.probe.late_write_pdl(flag, staging, PDL_DELAY_NS)
                ctx.probe.pdl_canary(flag, words)
            synchronize()
            seen = [int(w) & 0xFFFFFFFF for w in words.tolist()]
            if seen[0] == CANARY_STALE:
                break
        overlap = seen[0] == CANARY_STALE
        ctx._pdl_overlap = (
            overlap,
            f"PDL canary read {seen[0]:#x} before its wait and {seen[1]:#x} after "
            f"(stale {CANARY_STALE:#x}, late {CANARY_LATE:#x})",
        )
    return ctx._pdl_overlap


def run_pdl(ctx: CaseContext, case: Case) -> list[Outcome]:
    """KD401: the producer-then-kernel sequence, PDL_REPEATS times (fresh stale values each
    time); a stale read that shows twice fails it.

    A created stream: PDL does not overlap launches on the legacy default stream. When the
    canary shows that PDL launches do not overlap here at all, a pass says nothing: it is
    reported as inconclusive.
    """
    outcome = _confirmed(
        lambda attempt: _ordered_call(ctx, case, codes.PDL_STALE_READ, PDL_DELAY_NS, True, 13 + attempt),
        PDL_REPEATS,
    )
    if not outcome.passed:
        return [outcome]
    overlap, canary = pdl_overlap(ctx)
    detail = "; ".join(filter(None, (canary, outcome.detail)))
    if not overlap:
        return [
            Outcome(
                codes.PDL_STALE_READ,
                True,
                f"inconclusive: PDL launches did not overlap on this device ({canary})",
                detail=detail,
            )
        ]
    return [Outcome(codes.PDL_STALE_READ, True, detail=detail)]


# ----- bad inputs -----


def run_bad_input(ctx: CaseContext, case: Case) -> list[Outcome]:
    """KD301: the call must raise a host-side error and leave the context healthy."""
    assert case.bad is not None
    initial = make_initial(ctx, case)
    args = make_arguments(ctx, case, initial)
    args.values[case.bad.tensor] = _apply_bad(args.values[case.bad.tensor], case.bad)
    return [_expect_rejection(ctx, case, args, case.bad.label)]


def _expect_rejection(ctx: CaseContext, case: Case, args: Arguments, what: str) -> Outcome:
    error: Exception | None = None
    try:
        call(ctx, case, args)
    except Exception as exc:  # the launcher's PanicError surfaces as a Python exception
        error = exc
    try:
        synchronize()
    except ContextPoisoned as fault:
        raise ContextPoisoned(f"{what} was not rejected and the kernel faulted: {fault}") from fault
    if error is None:
        return Outcome(codes.BAD_INPUT_NOT_REJECTED, False, f"{what} was accepted without an error")
    if CUDA_ERROR_TEXT.search(str(error)):
        return Outcome(
            codes.BAD_INPUT_NOT_REJECTED, False, f"{what} was rejected only by a CUDA error: {_first_line(error)}"
        )
    return Outcome(codes.BAD_INPUT_NOT_REJECTED, True, _first_line(error))


def run_profile(ctx: CaseContext, case: Case) -> list[Outcome]:
    """One value profile of one input, judged by its contract (see ``profiles.py``)."""
    assert case.profile is not None
    initial = make_initial(ctx, case)
    if case.profile.contract == "reject":
        return [_expect_rejection(ctx, case, make_arguments(ctx, case, initial), case.profile.label)]
    if case.profile.contract == "match":
        return check_runs(ctx, case, initial, compare_values=True)
    try:
        outcomes = check_runs(ctx, case, initial, compare_values=False)
        if case.profile.name in FINITE_PROFILES:
            outcomes.append(_nan_from_finite(ctx, case, initial))
        return outcomes
    except ContextPoisoned:
        raise
    except Exception as exc:  # "safe": a host-side refusal is an acceptable answer
        synchronize()
        if CUDA_ERROR_TEXT.search(str(exc)):
            raise
        return [Outcome(codes.RESULT_MISMATCH, True, f"rejected on the host: {_first_line(exc)}")]


def _nan_from_finite(ctx: CaseContext, case: Case, initial: Mapping[str, torch.Tensor]) -> Outcome:
    """KD105: a profile of finite values (all zeros, all equal) against the ordinary inputs of
    the same sizes, one plain call each: with no reference to compare with, a NaN the
    ordinary values never give is the sign of a missing guard (a division by a zero norm)."""
    ordinary = replace(case, profile=None)
    (profiled,) = plain_runs(ctx, case, initial, (0,))
    (plain,) = plain_runs(ctx, ordinary, make_initial(ctx, ordinary), (0,))
    message, count = new_nans(profiled, plain, which_poison=0)
    return Outcome(codes.NAN_FROM_FINITE, not message, message, float(count) if count else None)


def new_nans(
    profiled: Mapping[str, torch.Tensor], ordinary: Mapping[str, torch.Tensor], which_poison: int
) -> tuple[str, int]:
    """The written tensors that hold NaN after the profile's call and none after the ordinary
    one (poison ``which_poison``, the mark of an element never written, is no NaN of the
    kernel's): what to report ("" when none) and how many NaNs."""
    parts, total = [], 0
    for name, value in profiled.items():
        if not value.is_floating_point() or bool(_computed_nans(ordinary[name], which_poison).any()):
            continue
        nans = _computed_nans(value, which_poison)
        count = int(nans.sum())
        if count:
            first = tuple(int(i) for i in nans.nonzero()[0])
            parts.append(f"{name}: {count} of {nans.numel()} elements NaN (first at index {first})")
            total += count
    return "; ".join(parts), total


def _computed_nans(value: torch.Tensor, which_poison: int) -> torch.Tensor:
    # widened first: torch tests no fp8 tensor for NaN
    return torch.isnan(value.float()) & ~holds_poison(value, which_poison)


# ----- bandwidth -----


def _timed(fn: Callable[[], object], iters: int) -> float:
    """Seconds per call, CUDA-event timed after warm-up."""
    for _ in range(BANDWIDTH_WARMUP):
        fn()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    stop.record()
    synchronize()
    return start.elapsed_time(stop) / 1e3 / iters


def copy_bandwidth(ctx: CaseContext) -> float:
    """Bytes per second (read + written) of a device-to-device copy of 1 GiB."""
    if ctx._copy_bandwidth is None:
        src = torch.empty(COPY_BYTES // 2, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        seconds = _timed(lambda: dst.copy_(src), 10)
        ctx._copy_bandwidth = COPY_BYTES / seconds
    return ctx._copy_bandwidth


def run_bandwidth(ctx: CaseContext, case: Case) -> list[Outcome]:
    """KD501 (advisory): bytes moved per second against the device's copy bandwidth."""
    args = make_arguments(ctx, case, make_initial(ctx, case), None)
    call(ctx, case, args)  # the outputs the launcher returns count too
    if ctx.spec.bytes_moved is not None:
        moved = int(ctx.spec.bytes_moved(args.values))
    else:
        moved = sum(
            t.numel() * t.element_size() * (2 if spec_t.role is Role.INPLACE else 1)
            for spec_t in ctx.spec.tensors
            for t in [args.values[spec_t.name]]
        )
    if moved < MIN_BANDWIDTH_BYTES:
        return [
            Outcome(
                codes.BANDWIDTH_BELOW_FLOOR,
                True,
                f"inconclusive: one call moves {moved / 1e6:.1f} MB, under the "
                f"{MIN_BANDWIDTH_BYTES >> 20} MiB a bandwidth figure needs",
            )
        ]
    seconds = _timed(lambda: call(ctx, case, args), BANDWIDTH_ITERS)
    achieved, peak = moved / seconds, copy_bandwidth(ctx)
    fraction = achieved / peak
    message = (
        f"{achieved / 1e9:.0f} GB/s = {fraction:.0%} of the device copy bandwidth "
        f"{peak / 1e9:.0f} GB/s ({moved / 1e6:.1f} MB per call, {seconds * 1e6:.1f} us)"
    )
    return [Outcome(codes.BANDWIDTH_BELOW_FLOOR, fraction >= ctx.bandwidth_floor, message, fraction)]


# ----- sanitizer runs -----


def run_sanitize(ctx: CaseContext, case: Case) -> list[Outcome]:
    """One plain call on unpoisoned outputs: compute-sanitizer, outside, judges it."""
    args = make_arguments(ctx, case, make_initial(ctx, case), None)
    call(ctx, case, args)
    synchronize()
    return []


RUNNERS: dict[CaseKind, Callable[[CaseContext, Case], list[Outcome]]] = {
    CaseKind.REFERENCE: run_reference,
    CaseKind.STRIDED: run_reference,
    CaseKind.PROFILE: run_profile,
    CaseKind.GRAPH: run_graph,
    CaseKind.STREAM: run_stream,
    CaseKind.PDL: run_pdl,
    CaseKind.BAD_INPUT: run_bad_input,
    CaseKind.BANDWIDTH: run_bandwidth,
    CaseKind.SANITIZE: run_sanitize,
}


def run_case(ctx: CaseContext, case: Case) -> list[Outcome]:
    outcomes = RUNNERS[case.kind](ctx, case)
    synchronize()
    return outcomes
