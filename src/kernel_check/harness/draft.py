"""Drafted specs: ``kernel-check spec new FILE.cuh`` writes a ``*_spec.py`` from the static model.

What the draft takes from the code (``src/kernel_check/model.py``, filled by
``src/kernel_check/clang/kernel_interface.py`` and ``pointer_accesses.py``):

- the launcher: a host function (or a static member function of a class template, the
  sglang export style ``Kernel<...>::run``) that launches a kernel or runs a ``TensorMatcher``;
- each ``TensorView`` argument's symbolic shape, dtype set, alignment (``ensure_alignment``),
  stride pattern (``with_strides``) and device from the ``TensorMatcher`` chain that verifies it;
- roles: a tensor whose data the launched kernel (or a device function it hands the pointer
  to) writes is ``OUT`` (``INPLACE`` when it also reads it), else ``IN``; where the accesses
  are not visible, the constness of the kernel's pointer decides;
- scalar arguments, with a placeholder value;
- template parameters and the instantiations to build: the ``INSTANTIATIONS`` manifest of a
  wrapper beside the ``.cuh``, else the ``load_jit``/``make_cpp_args`` call of one (which
  argument is PDL), else the matcher's dtypes (a type parameter gets the usual three float
  types) and both values of every ``bool`` parameter;
- a grid whose innermost free axis holds the tails (``TAILS`` plus a multiple of every
  vector width).

The reference is left to the user (``reference=None`` with a ``TODO(kernel-check)`` marker):
a draft without one loads, runs the checks that need no reference and, with
``kernel-check test --against REV``, compares against the kernel at another revision.
Everything the drafter guessed is listed in the draft's docstring as a ``TODO(kernel-check)``.
"""

from __future__ import annotations

import ast
import itertools
import keyword
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..includes import find_repo_include_dir, included_files, sgl_include_dirs
from ..model import (
    AccessKind,
    ConstExpr,
    Function,
    FunctionKind,
    MatcherChain,
    Param,
    ParameterTest,
    SourceModel,
    Struct,
    TemplateCheck,
    TemplateParam,
    split_template_arguments,
)
from ..semantic import SemanticModel
from .arch_guards import ArchTrap, arch_traps
from .dispatch_sizes import dispatched_sizes
from .draft_model import CPP_DTYPES, TODO, Draft, DraftInstantiation, DraftScalar, DraftTensor
from .draft_render import render
from .hand_checks import HandChecks, clean, constants_of, expanded_invocation, read_hand_checks
from .launch_sites import GuardedLength, HeaderModels, LaunchSite, guarded_lengths, launch_sites, loaded_indices
from .parsed import parse_model
from .spec import CURRENT_STREAM, DTYPES, TAILS, Role, dim_axes

if TYPE_CHECKING:
    from .compile_probe import ProbeResult

# A template type parameter nobody lists the values of: the float types kernels usually take.
DEFAULT_FLOAT_TYPES = ("float16", "bfloat16", "float32")
# Values tried for an integer template parameter that sizes a dimension.
DEFAULT_FIXED_SIZES = (128, 4096)
# With nvcc probing, more of them: head and rope dims are often pinned by a static_assert
# to one of these (a rope dim of two per lane of a warp is 64; an MLA head dim is 512).
PROBED_FIXED_SIZES = (64, 128, 256, 512, 4096)
# Axes other than the tail axis: one, a small odd count, a few warps' worth.
OTHER_AXIS = (1, 3, 32)
# The tail axis: the tails and a multiple of every vector width.
TAIL_AXIS = TAILS + (4096,)
# Reference cases one drafted instantiation plans at most (every grid point is one): past
# it, the later free axes hold one value each (a launcher with a dozen independent lengths
# would otherwise plan 3^12 cases).
MAX_DRAFT_GRID_POINTS = 128
MAX_INSTANTIATIONS = 12
# With nvcc probing, the candidates compiled at most (a batch of MAX_INSTANTIATIONS at a
# time, until that many build): a cap applied before probing could keep only failing ones.
MAX_PROBED_INSTANTIATIONS = 48
# Tried for an integer template parameter nobody gives a value for, when the drafter probes
# with nvcc (element bytes, a group size, a warp, a block, a rope and a head dim): those
# that compile are kept.
PROBED_VALUES = (1, 2, 8, 32, 64, 128, 512)
# Python files read when looking for a wrapper that is not beside the kernel.
WRAPPER_SEARCH_LIMIT = 5000
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
# Files beside a kernel read for the headers they include (tree_includes): a bound, not a walk of the tree.
MAX_LOCAL_INCLUDES = 32
_OWN_EXPORT = re.compile(r"\bTVM_FFI_DLL_EXPORT_TYPED_FUNC\s*\(\s*(\w+)")
_SYMBOLIC_SIZE = re.compile(r"(?:SymbolicSize\s+(\w+)\s*[{(;]|(\w+)\s*=\s*SymbolicSize\b)")


class DraftError(Exception):
    """The file cannot be drafted from (no launcher, an unknown --launcher): one line."""


@dataclass(frozen=True)
class WrapperCall:
    """What a wrapper says about one launcher: its export name, the symbol's shape with
    ``<>`` where ``make_cpp_args`` goes, and each template argument's source (or, from a
    manifest, the complete argument lists)."""

    export: str
    symbol: str
    argument_sources: tuple[str, ...] = ()  # "pdl", "dtype", or a literal's repr
    manifest: tuple[tuple[str, ...], ...] = ()


# ----- the launcher -----


def launchers(model: SourceModel) -> list[Function]:
    """Host functions with a TensorView parameter that launch a kernel or verify a tensor,
    and those that forward their tensors to one (``silu_and_mul`` -> ``act_and_mul<...>``)."""
    busy = {launch.launcher for launch in model.launches}
    verifying = {chain.function for chain in model.launcher_facts.matcher_chains}
    taking = [
        f
        for f in model.functions
        if f.kind is FunctionKind.HOST and f.is_definition and any(_is_tensor(p.type.spelling) for p in f.params)
    ]
    direct = [f for f in taking if f.qualified_name in busy or f.usr in verifying]
    found = direct + [f for f in taking if f not in direct and forward_target(model, f, direct) is not None]
    if found:
        return found
    # Nothing launches where the model sees it (a launch behind a raw-pointer helper, a
    # parse error): the entry points, the tensor-taking functions no other one calls.
    called = {h.callee for h in model.launcher_facts.tensor_handoffs}
    called |= {c.name for f in taking for c in _written_tensor_callees(model, f, taking)}
    return [f for f in taking if f.name not in called]


def _written_tensor_callees(model: SourceModel, function: Function, candidates: Sequence[Function]) -> list[Function]:
    """The candidates ``function``'s body calls with one of its tensors, read from the text:
    for the calls the parse lost (``helper<float, float32_code>(a, b)`` with
    ``float32_code`` from a header the parse did not reach), so no handoff records them."""
    if function.body is None:
        return []
    body = clean(_body_text(model, function))
    tensors = [p.name for p in function.params if _is_tensor(p.type.spelling)]
    found = []
    for callee in candidates:
        if callee.usr == function.usr:
            continue
        for match in re.finditer(rf"\b{re.escape(callee.name)}\s*(?:<[^;{{}}]*?>)?\s*\(([^;]*?)\)\s*;", body):
            if any(re.search(rf"\b{re.escape(t)}\b", match.group(1)) for t in tensors):
                found.append(callee)
                break
    return found


def entry_points(model: SourceModel, found: Sequence[Function]) -> list[Function]:
    """The launchers no other one hands its tensors to: a helper (``generic_op<T, 128>``
    called by each exported ``op``, ``act_and_mul<...>`` by ``silu_and_mul<...>``) is reached
    through its callers, whose drafts read its facts (``facts_function``), and is no launcher
    of its own. All of them when every one is called (a cycle)."""
    semantic = SemanticModel(model)
    usrs = {f.usr for f in found}
    entries = [f for f in found if not semantic.tensor_callers(f) & usrs]
    return entries or list(found)


def forward_target(model: SourceModel, function: Function, direct: Sequence[Function]) -> Function | None:
    """The launcher a function hands all its tensors to, when it does nothing else with them."""
    names = {f.name: f for f in direct}
    # a TensorView passed by value hands itself to its copy constructor: no call of interest
    callees = {
        h.callee
        for h in model.launcher_facts.tensor_handoffs
        if h.function == function.usr and not _is_tensor(h.callee)
    }
    targets = [names[c] for c in callees if c in names]
    return targets[0] if len(targets) == 1 and len(callees) == 1 else None


def facts_function(model: SourceModel, launcher: Function) -> Function:
    """Where the tensors are verified and the kernel launched: the launcher, or the one it forwards to."""
    busy = {launch.launcher for launch in model.launches}
    verifying = {chain.function for chain in model.launcher_facts.matcher_chains}
    if launcher.qualified_name in busy or launcher.usr in verifying:
        return launcher
    direct = [f for f in model.functions if f.qualified_name in busy or f.usr in verifying]
    target = forward_target(model, launcher, direct)
    if target is None:  # a call the parse lost: the one tensor-taking function the text calls
        taking = [f for f in launchers(model) if f.body is not None] + [
            f for f in model.functions if f.kind is FunctionKind.HOST and f.is_definition and f.template_params
        ]
        callees = list({f.usr: f for f in _written_tensor_callees(model, launcher, taking)}.values())
        target = callees[0] if len(callees) == 1 else None
    return target or launcher


def pick_launchers(model: SourceModel, wanted: str | None) -> list[Function]:
    found = launchers(model)
    if not found:
        raise DraftError(
            "no launcher found (a host function taking TensorView arguments that "
            "launches a kernel or runs a TensorMatcher)"
        )
    if wanted is None:
        return found
    chosen = [f for f in found if wanted in (f.name, f.qualified_name, _short_name(f.qualified_name))]
    if not chosen:
        names = ", ".join(_short_name(f.qualified_name) for f in found)
        raise DraftError(f"no launcher named {wanted!r} (launchers: {names})")
    return chosen


def _is_tensor(spelling: str) -> bool:
    """``tvm::ffi::TensorView`` or ``tvm::ffi::Tensor`` (not an ``Optional`` of one)."""
    return re.search(r"\bTensor(View)?\b", spelling) is not None and "Optional" not in spelling


def _short_name(qualified: str) -> str:
    """``sglang::(anonymous namespace)::Kernel::run`` -> ``Kernel::run``: what the generated
    export (inside ``namespace sglang``) can name."""
    parts = [p for p in qualified.split("::") if p and p != "sglang" and not p.startswith("(")]
    return "::".join(parts)


def _owner(model: SourceModel, launcher: Function) -> Struct | None:
    """The class template a static member launcher belongs to (None for a free function)."""
    if not launcher.is_method:
        return None
    owner = launcher.qualified_name.rsplit("::", 1)[0]
    return next((s for s in model.structs if s.qualified_name == owner), None)


def template_params(model: SourceModel, launcher: Function) -> list[TemplateParam]:
    owner = _owner(model, launcher)
    return list(owner.template_params) if owner is not None else list(launcher.template_params)


def symbol_of(model: SourceModel, launcher: Function) -> str:
    """The launcher as the harness spells it: ``scale`` (gets ``<args>``) or, for a member
    of a class template, ``Kernel<>::run`` (the harness puts the arguments in the ``<>``)."""
    short = _short_name(launcher.qualified_name)
    owner = _owner(model, launcher)
    if owner is None:
        return short
    klass, method = short.rsplit("::", 1)
    return f"{klass}<>::{method}" if owner.template_params else short


# ----- tensors -----


def _chain_of(model: SourceModel, launcher: Function, tensor: str) -> MatcherChain | None:
    for chain in model.launcher_facts.matcher_chains:
        if chain.function == launcher.usr and any(v.name == tensor for v in chain.verified):
            return chain
    return None


def _chain_text(model: SourceModel, chain: MatcherChain) -> str:
    return model.data[chain.span.start : chain.span.end].decode("utf-8", errors="replace")


def dim_aliases(model: SourceModel, launcher: Function, params: set[str]) -> dict[str, str]:
    """Locals of the launcher that stand for a template parameter (``const int64_t hidden =
    kHiddenSize;``, ``D.set_value(kHeadDim)``): a dimension named by one is pinned by it."""
    if launcher.body is None:
        return {}
    body = _body_text(model, launcher)
    aliases = {}
    for local, value in re.findall(r"(\w+)\s*=\s*(?:static_cast<[^>]*>\()?\s*(\w+)\s*\)?\s*;", body):
        if value in params:
            aliases[local] = value
    for local, value in re.findall(r"(\w+)\.set_value\(\s*(\w+)\s*\)", body):
        if value in params:
            aliases[local] = value
    return aliases


def _dim(text: str, tensor: str, index: int, params: set[str], aliases: dict[str, str]) -> str | int:
    text = aliases.get(text.strip(), text.strip())
    if re.fullmatch(r"\d+", text) and int(text) > 0:
        return int(text)
    if text in params:
        return text
    if _IDENTIFIER.fullmatch(text):
        return text.lower() if text.lower() not in params else text
    return f"{tensor}_{index}"  # a wildcard (-1) or an expression: a free axis of the matcher's own


def _dtype(chain: MatcherChain | None, type_params: set[str], notes: list[str], tensor: str) -> str:
    if chain is None or not chain.dtypes:
        notes.append(f"{TODO}: tensor {tensor}: no dtype in its TensorMatcher; float32 assumed")
        return "float32"
    texts = [d.text for d in chain.dtypes]
    for text in texts:
        if text in type_params:
            return text
    known = [CPP_DTYPES[t] for t in texts if t in CPP_DTYPES]
    if not known:
        notes.append(f"{TODO}: tensor {tensor}: dtype {texts[0]} has no torch name; float32 assumed")
        return "float32"
    return known[0]


def runtime_dtypes(chain: MatcherChain | None) -> tuple[str, ...]:
    """The dtypes a matcher allows at run time (a ``SymbolicDType`` with several options)."""
    known = tuple(dict.fromkeys(CPP_DTYPES[d.text] for d in chain.dtypes if d.text in CPP_DTYPES)) if chain else ()
    return known if len(known) > 1 else ()


def _tensor(
    model: SourceModel,
    launcher: Function,
    name: str,
    type_params: set[str],
    roles: dict[str, Role],
    notes: list[str],
    checks: HandChecks,
) -> DraftTensor:
    """One tensor argument; ``launcher`` is where its matcher runs (``facts_function``)."""
    chain = _chain_of(model, launcher, name)
    params = {p.name for p in template_params(model, launcher)}
    text = _chain_text(model, chain) if chain is not None else ""
    device = "cpu" if host_buffer(model, launcher, name, text) else "cuda"
    if device == "cpu":
        notes.append(f"{TODO}: tensor {name} is a host buffer; pinned assumed (a kernel may read it over the bus)")
    if chain is None:
        return _hand_checked_tensor(name, roles.get(name, Role.IN), checks, notes, device)
    aliases = dim_aliases(model, launcher, params)
    # a wildcard dimension is the matcher's, not the tensor's: a matcher may bind it on its
    # first verify (mini-sglang's), so every tensor it verifies gets one size
    shape = tuple(_dim(d, chain.verified[0].name, i, params, aliases) for i, d in enumerate(chain.dims))
    strided = len(shape) >= 2 and padded_rows(text, chain.dims)
    alignment = next((v.alignment.value for v in chain.verified if v.name == name and v.alignment), None)
    runtime = runtime_dtypes(chain)
    dtype = _dtype_variable(model, launcher, chain) if runtime else _dtype(chain, type_params, notes, name)
    return DraftTensor(name, shape, dtype, roles.get(name, Role.IN), strided, alignment, runtime=runtime, device=device)


def _dtype_variable(model: SourceModel, launcher: Function, chain: MatcherChain) -> str:
    """The dtype variable of a matcher allowing several dtypes: one per matcher, and one for
    every matcher binding the same ``SymbolicDType`` (named by the first tensor they verify)."""
    if chain.dtype_symbol:
        chain = next(
            c
            for c in model.launcher_facts.matcher_chains
            if c.function == launcher.usr and c.dtype_symbol == chain.dtype_symbol and c.verified
        )
    return f"{chain.verified[0].name}_dtype"


_HOST_DEVICE = re.compile(r"\bkDL(?:CPU|CUDAHost)\b")
# helpers a launcher asks whether a tensor is in host memory (``RuntimeCheck(is_cpu(lens))``)
_HOST_PREDICATES = frozenset({"is_cpu", "is_host", "is_pinned"})


def host_buffer(model: SourceModel, launcher: Function, name: str, chain_text: str) -> bool:
    """Whether ``launcher`` takes tensor ``name`` in host memory: its matcher allows only a
    host device (``with_device<kDLCPU>``), a check on its ``device()`` compares it with one,
    or it is handed to a host predicate (``is_cpu(x)``)."""
    if re.search(r"\.with_device\s*<\s*kDL(?:CPU|CUDAHost)\s*>", chain_text):
        return True
    facts = model.launcher_facts
    if any(
        (h.function, h.tensor) == (launcher.usr, name) and h.callee in _HOST_PREDICATES for h in facts.tensor_handoffs
    ):
        return True
    for seen in facts.tensor_inspections:
        if (seen.function, seen.tensor, seen.method, seen.context) == (launcher.usr, name, "device", "check"):
            start = model.data.rfind(b"\n", 0, seen.span.start) + 1
            end = model.data.find(b"\n", seen.span.end)
            if _HOST_DEVICE.search(model.data[start : end if end >= 0 else None].decode("utf-8", errors="replace")):
                return True
    return False


def returned_outputs(launcher: Function, tensors: Sequence[DraftTensor], notes: list[str]) -> list[DraftTensor]:
    """The outputs a launcher returns (``tvm::ffi::Tensor``, ``tvm::ffi::Tuple<Tensor, ...>``),
    each shaped and typed as its first tensor argument (a guess to check); another return
    type that is not ``void`` (an alias of a tuple) is a note."""
    spelling = (launcher.return_canonical or launcher.return_type).replace(" ", "")
    tuple_of = re.fullmatch(r"(?:\w+::)*Tuple<(.*)>", spelling)
    parts = split_template_arguments(tuple_of.group(1)) if tuple_of else [spelling]
    if not parts or not all(re.fullmatch(r"(?:\w+::)*Tensor", p) for p in parts):
        if spelling not in ("void", ""):
            notes.append(f"{TODO}: {launcher.name} returns {launcher.return_type}: if that is its outputs, name them")
        return []
    taken = {t.name for t in tensors}
    names = ["out"] if len(parts) == 1 else [f"out{i}" for i in range(len(parts))]
    names = [n if n not in taken else f"{n}_returned" for n in names]
    like = tensors[0] if tensors else DraftTensor("", ("n",), "float32", Role.OUT)
    notes.append(
        f"{TODO}: {launcher.name} returns {', '.join(names)}: shape {like.shape} and dtype {like.dtype} assumed"
    )
    return [DraftTensor(n, like.shape, like.dtype, Role.OUT, runtime=like.runtime) for n in names]


_NO_SHAPE = "neither a TensorMatcher nor a check gives its shape; 1-D assumed"


def _hand_checked_tensor(name: str, role: Role, checks: HandChecks, notes: list[str], device: str) -> DraftTensor:
    """A tensor no ``TensorMatcher`` verifies: its rank, dimensions and dtype from the
    launcher's own checks (``hand_checks``); a tensor nothing checks takes the shape of a
    checked one whose data the launcher casts to the same type (an output beside its input)."""
    dtypes = checks.dtypes.get(name, ())
    if not dtypes:
        notes.append(f"{TODO}: tensor {name}: no dtype check nor cast of its data; float32 assumed")
    dtype, accepts = (dtypes[0], dtypes[1:]) if dtypes else ("float32", ())
    shape = checks.shapes.get(name)
    if shape is None:
        cast = checks.casts.get(name)
        # an output beside its input: only a tensor written (or cast to a non-const pointer) takes a twin's shape
        writable = role is not Role.IN or name in checks.mutable
        twin = (
            next((t for t, c in checks.casts.items() if c == cast and t in checks.shapes), None)
            if cast and writable
            else None
        )
        if twin is not None:
            shape = checks.shapes[twin]
            notes.append(f"{TODO}: tensor {name}: no check of its shape; {twin}'s assumed (its data is a {cast} too)")
        else:
            shape = (f"{name}_0",)
            notes.append(f"{TODO}: tensor {name}: {_NO_SHAPE}")
    return DraftTensor(name, shape, dtype, role, accepts=accepts, device=device)


def padded_rows(chain_text: str, dims: Sequence[str]) -> bool:
    """Whether ``with_strides`` lets the rows be padded: ``{S, 1}`` with a stride of its own
    does, ``{D, 1}`` naming the row length (or no ``with_strides``) keeps them contiguous."""
    found = re.search(r"\.with_strides\s*\(\s*\{([^}]*)\}", chain_text)
    if found is None:
        return False
    strides = [s.strip() for s in found.group(1).split(",")]
    return not (len(dims) == 2 and len(strides) == 2 and strides[0] == dims[1].strip())


def tensor_roles(sites: Sequence[LaunchSite], unseen: set[str]) -> dict[str, Role]:
    """Each tensor's role from what the launched kernels do with its data pointer; the
    tensors whose accesses are out of sight are added to ``unseen``."""
    roles: dict[str, Role] = {}
    for site in sites:
        for argument, field_name, tensor in site.tensors:
            kinds: set[AccessKind] = set()
            consts: list[bool] = []
            for kernel in site.launch.kernels:
                kinds |= site.semantic.access_kinds(kernel.usr, argument, field_name)
                consts += _pointee_const(site.semantic.source, kernel.usr, argument, field_name)
            # None: the pointer goes where the model cannot follow it (a struct of a header):
            # it may be written, so it is compared but never poisoned
            role = _role(kinds, consts) or Role.INPLACE
            roles[tensor] = _stronger(roles.get(tensor), role)
            if not kinds and not consts:
                unseen.add(tensor)
    return roles


def sized_by_guards(
    args: Sequence[DraftTensor | DraftScalar], lengths: Sequence[GuardedLength], body: str, notes: list[str]
) -> None:
    """A tensor no check gives the shape of holds what the kernel's guards let it reach
    (``guarded_lengths``): over the axis of a dimension the launcher names (``n_post =
    w.size(1)``, ``n = x.numel()`` of a 1-D ``x``), or over an integer scalar argument,
    which then takes that axis's size (``num_seqs`` passed as the case's ``num_seqs``,
    ``output`` of ``num_seqs+1``). ``body``: the launcher's text."""
    tensors = {a.name: a for a in args if isinstance(a, DraftTensor)}
    scalars = {a.name: a for a in args if isinstance(a, DraftScalar)}
    axes = {d for t in tensors.values() for d in t.shape if isinstance(d, str) and d.isidentifier()}
    text = clean(body)
    for length in lengths:
        tensor = tensors.get(length.tensor)
        if tensor is None or tensor.shape != (f"{tensor.name}_0",):  # a checked shape stands
            continue
        scalar = scalars.get(length.scalar)
        counted = re.search(rf"\b{re.escape(length.scalar)}\s*=\s*(\w+)\s*\.\s*numel\s*\(\s*\)", text)
        whole = tensors.get(counted.group(1)) if counted else None
        if whole is not None and len(whole.shape) == 1 and whole is not tensor:  # a 1-D tensor's count: its axis
            axis = str(whole.shape[0])
        elif scalar is not None and scalar.value == 1 and not scalar.axis:  # an integer nothing gave a value
            axis = scalar.axis = scalar.name
            scalar.comment = f"{TODO}: the size of axis {scalar.name}, which bounds {tensor.name} in the kernel"
        elif length.scalar in axes or (scalar is not None and scalar.axis == length.scalar):
            axis = length.scalar
        else:
            continue
        tensor.shape = (length.expression(axis),)
        notes[:] = [n for n in notes if n != f"{TODO}: tensor {tensor.name}: {_NO_SHAPE}"]
        notes.append(
            f"{TODO}: tensor {tensor.name}: {tensor.shape[0]} elements, as the kernel's guards on its accesses say"
        )


def _role(kinds: set[AccessKind], consts: list[bool]) -> Role | None:
    if AccessKind.WRITE in kinds:
        return Role.INPLACE if AccessKind.READ in kinds else Role.OUT
    if AccessKind.READ in kinds and AccessKind.ESCAPE not in kinds:
        return Role.IN
    if consts:
        return Role.IN if all(consts) else Role.INPLACE
    return None


def _stronger(old: Role | None, new: Role) -> Role:
    order = {Role.IN: 0, Role.OUT: 1, Role.INPLACE: 2}
    return new if old is None or order[new] > order[old] else old


def _pointee_const(model: SourceModel, usr: str, param: int, field_name: str) -> list[bool]:
    kernel = next((f for f in model.functions if f.usr == usr), None)
    if kernel is None or param >= len(kernel.params):
        return []
    ptype = kernel.params[param].type
    if not field_name:
        return [ptype.pointee_const] if ptype.is_pointer else []
    *outer, last = field_name.split(".")  # `params.out`: a struct nested in the params struct
    struct = _record_named(model, ptype.spelling)
    for name in outer:
        inner = next((f for f in struct.fields if f.name == name), None) if struct is not None else None
        struct = _record_named(model, inner.type.spelling) if inner is not None else None
    if struct is None:
        return []
    return [f.type.pointee_const for f in struct.fields if f.name == last and f.type.is_pointer]


def _record_named(model: SourceModel, spelling: str) -> Struct | None:
    """The struct of the file a type spells (`const sglang::Params<T>` -> `Params`)."""
    record = spelling.replace("const ", "").strip().split("<")[0].split("::")[-1]
    return next((s for s in model.structs if s.name == record), None)


# ----- scalars -----


# an integer named as a shift (`offset`, `start_pos`, `shift`): added to ids or rows, so any
# value but 0 moves the largest in-range id past its tensor's end (`loc * mult + offset`)
_SHIFT_NAME = re.compile(r"(?:^|_)(?:offset|start|begin|shift)s?(?:_|$)", re.IGNORECASE)

_STRING_TYPE = re.compile(r"(std::)?string|((tvm::)?ffi::)?String")


def parameter_tests(model: SourceModel, functions: set[str]) -> dict[str, list[ParameterTest]]:
    """The tests (``has_value()``, ``== "literal"``) the launcher (or the function it forwards
    to) makes of each parameter, by parameter name, in source order."""
    tests: dict[str, list[ParameterTest]] = {}
    for test in model.launcher_facts.parameter_tests:
        if test.function in functions:
            tests.setdefault(test.parameter, []).append(test)
    return tests


def _is_optional_tensor(spelling: str) -> bool:
    return "Optional" in spelling and re.search(r"\bTensor(View)?\b", spelling) is not None


def _required(spelling: str, tests: Sequence[ParameterTest], body: str, name: str) -> bool:
    """An ``Optional<TensorView>`` the launcher uses (``body`` names it) without testing
    whether it was given; one it never names is left out too."""
    if not _is_optional_tensor(spelling) or any(t.test == "present" for t in tests):
        return False
    return re.search(rf"\b{re.escape(name)}\b", body) is not None


def _body_text(model: SourceModel, function: Function) -> str:
    """A definition's body as written (a declaration's: empty); of a function a macro
    defines, the macro's expansion (its whole definition: the body is not written out)."""
    if function.body is None:
        return ""
    if function.from_macro:
        start = len(model.data[: function.span.start].decode("utf-8", errors="replace"))  # in characters
        return expanded_invocation(model.data.decode("utf-8", errors="replace"), start) or ""
    return model.data[function.body.start : function.body.end].decode("utf-8", errors="replace")


def _written_type(model: SourceModel, param: Param) -> str:
    """A parameter's type; as written where clang fell back to ``int`` (a type it could not
    resolve, ``Optional<TensorView>`` without the tree's headers)."""
    if param.type.spelling != "int":
        return param.type.spelling
    text = model.data[param.span.start : param.span.end].decode("utf-8", errors="replace")
    written = text[: text.rfind(param.name)].strip() if param.name in text else ""
    return written if written and not re.search(r"\bint\b", written) else param.type.spelling


def _scalar(name: str, spelling: str, tests: Sequence[ParameterTest], body: str) -> DraftScalar:
    bare = spelling.replace("const", "").replace("&", "").strip()
    if _stream_handle(name, body):
        return DraftScalar(name, CURRENT_STREAM, "the stream the call runs on: the launcher launches on this handle")
    if _is_optional_tensor(bare):
        return DraftScalar(name, None, f"{TODO}: an optional tensor left out (the launcher tests whether it is given)")
    if "Optional" in bare:
        return DraftScalar(name, None, f"{TODO}: {bare}: None passes nothing")
    if _STRING_TYPE.fullmatch(bare):
        return _string(name, tests)
    if bare == "bool":
        return DraftScalar(name, False, f"{TODO}: pick a value")
    if bare in ("float", "double"):
        return DraftScalar(name, 1e-6 if "eps" in name.lower() else 1.0, f"{TODO}: pick a value")
    if re.fullmatch(r"(u?int\d+_t|int|unsigned|long|long long|size_t|unsigned int)", bare):
        if _SHIFT_NAME.search(name):
            return DraftScalar(name, 0, f"{TODO}: a shift, 0 assumed (ids and rows it shifts stay in range)")
        return DraftScalar(name, 1, f"{TODO}: pick a value (a size? a function of the case's sizes?)")
    return DraftScalar(name, None, f"{TODO}: {bare} cannot be drafted; pass a value of that type")


def _stream_handle(name: str, body: str) -> bool:
    """Whether the launcher turns the integer parameter ``name`` into the stream it launches
    on (``reinterpret_cast<cudaStream_t>(stream)``, ``(cudaStream_t)stream``): a constant
    there would launch on some other stream than the one the harness runs the call on."""
    named = re.escape(name)
    return (
        re.search(rf"cast\s*<\s*cudaStream_t\s*>\s*\(\s*{named}\s*\)|\(\s*cudaStream_t\s*\)\s*\(?\s*{named}\b", body)
        is not None
    )


def _string(name: str, tests: Sequence[ParameterTest]) -> DraftScalar:
    """The first string the launcher compares the parameter with; "" where it compares it with none."""
    literals = list(dict.fromkeys(t.literal for t in tests if t.test == "equals"))
    if not literals:
        return DraftScalar(name, "", f"{TODO}: a guess: the launcher compares {name} with no string literal")
    others = f" (it also compares it with {', '.join(map(repr, literals[1:]))})" if literals[1:] else ""
    return DraftScalar(name, literals[0], f"{TODO}: a guess: the first value the launcher compares {name} with{others}")


# ----- wrappers -----


def read_wrapper(path: Path, cuda_file: str) -> list[WrapperCall]:
    """The launchers a wrapper module exports for ``cuda_file``, read with ``ast``: its
    ``INSTANTIATIONS`` manifest, else its ``load_jit(..., cuda_wrappers=[...])`` calls."""
    from ..build import read_manifest

    manifest = read_manifest(path)
    if manifest is not None:
        if not any(names_file(str(f), cuda_file) for f in manifest["CUDA_FILES"]):
            return []
        grouped: dict[tuple[str, str], list[tuple[str, ...]]] = {}
        for export, symbol in manifest["INSTANTIATIONS"]:
            base, _, rest = str(symbol).partition("<")
            args = tuple(split_template_arguments(rest.rsplit(">", 1)[0])) if rest else ()
            grouped.setdefault((str(export), base.strip()), []).append(args)
        return [WrapperCall(export, symbol, manifest=tuple(args)) for (export, symbol), args in grouped.items()]
    tree = _parse_python(path)
    if tree is None:
        return []
    module = _WrapperModule(path, tree)
    return [
        call
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        for call in _load_jit_calls(node, cuda_file, module)
    ]


def _parse_python(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None


@dataclass(frozen=True)
class _WrapperModule:
    """A wrapper module, for the names its ``make_cpp_args`` arguments are made of: its
    module-level constants and the config classes it defines or imports from a sibling
    module (``from .utils import KernelConfig``)."""

    path: Path
    tree: ast.Module

    def constant(self, name: str) -> ast.expr | None:
        """The value a module-level ``NAME = ...`` gives ``name``."""
        for node in self.tree.body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                return node.value
        return None

    def class_fields(self, name: str) -> list[tuple[str, ast.expr | None]] | None:
        """The fields of a ``NamedTuple``/dataclass ``name`` in order, with their defaults."""
        found = self._class(self.tree, name)
        if found is None:
            imports = [node for node in self.tree.body if isinstance(node, ast.ImportFrom)]
            for node in imports:
                sibling_import = 0 < node.level <= len(self.path.parents)
                if sibling_import and any(a.name == name for a in node.names):
                    sibling = self.path.parents[node.level - 1].joinpath(*(node.module or "").split("."))
                    imported = _parse_python(sibling.with_suffix(".py"))
                    found = self._class(imported, name) if imported is not None else None
        if found is None:
            return None
        return [
            (field.target.id, field.value)
            for field in found.body
            if isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)
        ]

    @staticmethod
    def _class(tree: ast.Module, name: str) -> ast.ClassDef | None:
        return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)


def _call_name(node: ast.AST) -> str:
    func = node.func if isinstance(node, ast.Call) else None
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _load_jit_calls(function: ast.FunctionDef, cuda_file: str, module: _WrapperModule) -> list[WrapperCall]:
    cpp_args: dict[str, tuple[str, ...]] = {}
    for node in ast.walk(function):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and _call_name(node.value) == "make_cpp_args"
        ):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    cpp_args[target.id] = _argument_sources(node.value.args, function, module)
    calls = []
    for node in ast.walk(function):
        if not (isinstance(node, ast.Call) and _call_name(node) == "load_jit"):
            continue
        keywords = {k.arg: k.value for k in node.keywords}
        files = keywords.get("cuda_files")
        if not (
            isinstance(files, ast.List)
            and any(isinstance(f, ast.Constant) and names_file(str(f.value), cuda_file) for f in files.elts)
        ):
            continue
        wrappers = keywords.get("cuda_wrappers")
        for item in wrappers.elts if isinstance(wrappers, ast.List) else ():
            if isinstance(item, ast.Tuple) and len(item.elts) == 2 and isinstance(item.elts[0], ast.Constant):
                symbol, used = _symbol_shape(item.elts[1])
                calls.append(WrapperCall(str(item.elts[0].value), symbol, cpp_args.get(used, ())))
    return calls


def _argument_sources(args: Sequence[ast.expr], function: ast.FunctionDef, module: _WrapperModule) -> tuple[str, ...]:
    """Each template argument's source (see ``_argument_source``); ``*config`` unpacks a
    config the wrapper constructs (``KernelConfig(num_threads=128, ...)``, the parameter's
    default or a module constant) into its fields, and a parameter with an integer default
    (``num_splits: int = 1``) gives that value."""
    sources: list[str] = []
    for arg in args:
        if isinstance(arg, ast.Starred):
            fields = _unpacked(_value_of(arg.value, function, module), module)
            if fields is None:
                break  # how many arguments it stands for is unknown: the rest are unknown too
            sources += fields
            continue
        value = _value_of(arg, function, module) if isinstance(arg, ast.Name) else None
        sources.append(_integer_literal(value) or _argument_source(arg))
    return tuple(sources)


def _value_of(node: ast.expr, function: ast.FunctionDef, module: _WrapperModule) -> ast.expr | None:
    """What a name stands for: the function parameter's default, else a module constant."""
    if not isinstance(node, ast.Name):
        return node
    parameters = function.args.posonlyargs + function.args.args
    defaults: dict[str, ast.expr | None] = dict(
        zip([a.arg for a in parameters[len(parameters) - len(function.args.defaults) :]], function.args.defaults)
    )
    defaults.update({a.arg: d for a, d in zip(function.args.kwonlyargs, function.args.kw_defaults)})
    if node.id in defaults:
        default = defaults[node.id]
        return module.constant(default.id) if isinstance(default, ast.Name) else default
    if node.id in {a.arg for a in parameters + function.args.kwonlyargs}:
        return None  # a parameter the caller always passes
    return module.constant(node.id)


def _unpacked(value: ast.expr | None, module: _WrapperModule) -> list[str] | None:
    """The sources of a ``*value`` (a tuple literal, or a config class constructed with
    literals); None when it cannot be read. A bool field is left unknown ("") so that both
    of its values are drafted, as for any ``bool`` parameter."""
    if isinstance(value, ast.Tuple):
        return [_integer_literal(v) for v in value.elts]
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)):
        return None
    fields = module.class_fields(value.func.id)
    if not fields:
        return None
    given: dict[str, ast.expr | None] = dict(fields)
    given.update(zip([name for name, _ in fields], value.args))
    given.update({k.arg: k.value for k in value.keywords if k.arg is not None})
    return [_integer_literal(given[name]) for name, _ in fields]


def _integer_literal(value: ast.expr | None) -> str:
    """A literal integer's repr (not a bool), else ""."""
    if isinstance(value, ast.Constant) and isinstance(value.value, int) and not isinstance(value.value, bool):
        return repr(value.value)
    return ""


def _argument_source(arg: ast.expr) -> str:
    if isinstance(arg, ast.Call) and "pdl" in _call_name(arg).lower():
        return "pdl"
    if isinstance(arg, ast.Constant):
        return repr(arg.value)
    return "dtype" if "dtype" in ast.unparse(arg).lower() else ast.unparse(arg)


def _symbol_shape(node: ast.expr) -> tuple[str, str]:
    """``f"Kernel<{args}>::run"`` -> (``Kernel<>::run``, ``args``)."""
    if isinstance(node, ast.Constant):
        return str(node.value), ""
    if not isinstance(node, ast.JoinedStr):
        return ast.unparse(node), ""
    # the harness's pattern keeps the brackets empty: the arguments go between them
    text = "".join(str(p.value) for p in node.values if isinstance(p, ast.Constant))  # the rest: FormattedValue
    used = next((ast.unparse(p.value) for p in node.values if isinstance(p, ast.FormattedValue)), "")
    return text, used


def names_file(entry: str, cuda_file: str) -> bool:
    """Whether a wrapper's ``cuda_files`` entry (relative to its csrc root) is ``cuda_file``
    (a path, or a bare file name): whole path components, so ``rmsnorm.cuh`` is not
    ``fused_add_rmsnorm.cuh``."""
    entry = entry.removeprefix("./")
    return cuda_file == entry or cuda_file.endswith("/" + entry) or entry.endswith("/" + cuda_file)


def find_wrapper(cuh: Path, include_dirs: Sequence[Path] = ()) -> Path | None:
    """A wrapper beside the kernel (``NAME.py`` next to ``NAME.cuh``), else one elsewhere in
    the kernel package that loads it (see ``_wrapper_in_package``)."""
    candidate = cuh.with_suffix(".py")
    return candidate if candidate.is_file() else _wrapper_in_package(cuh, include_dirs)


def _wrapper_in_package(cuh: Path, include_dirs: Sequence[Path] = ()) -> Path | None:
    """A tree whose wrappers live in a package of their own (``jit/csrc/elementwise/add3.cuh``
    loaded by ``ops/elementwise/add3.py``, ``kernel/csrc/jit/store.cu`` by ``kernel/store.py``):
    the first Python file, in path order, below ``_wrapper_scope`` whose ``load_jit`` names
    this file (a path, or its bare name). Files are read as text first and parsed only when
    they mention its name."""
    cuda_file = cuh.resolve().as_posix()
    for path in _python_files(_wrapper_scope(cuh, include_dirs)):
        try:
            if not path.is_file():  # a FIFO or socket named *.py would block the read forever
                continue
            if cuh.name in path.read_text(encoding="utf-8", errors="replace") and read_wrapper(path, cuda_file):
                return path
        except OSError:
            continue
    return None


def _wrapper_scope(cuh: Path, include_dirs: Sequence[Path]) -> Path:
    """Where a kernel's wrapper is looked for: the folder above the one holding the tree's
    ``include/`` (the one with ``sgl_kernel/``, else the first of ``include_dirs``, the tree's
    own header folders), or the project root (``find_project_root``: a ``kernel-check.toml``,
    ``pyproject.toml`` or ``.git``) where that lies below it: a tree's parent holds other
    projects (a checkout's parent, or all of ``/tmp`` for a tree copied there)."""
    from ..config import CONFIG_FILES, find_project_root

    include = find_repo_include_dir(cuh) or next(iter(include_dirs), None)
    scope = (include.parent if include is not None else cuh.parent).resolve().parent
    root, config = find_project_root(cuh)
    marked = config is not None or any((root / m).exists() for m in (*CONFIG_FILES, "pyproject.toml", ".git"))
    return root if marked and root != scope and root.is_relative_to(scope) else scope


def _python_files(scope: Path) -> list[Path]:
    """Up to ``WRAPPER_SEARCH_LIMIT`` ``*.py`` files below ``scope``, in path order. A folder
    that vanishes or cannot be read while the walk is in it (another process's temporary
    folder) ends the walk there, with what was found kept: `rglob` raises mid-iteration."""
    found: list[Path] = []
    try:
        found.extend(itertools.islice(scope.rglob("*.py"), WRAPPER_SEARCH_LIMIT))
    except OSError:
        pass
    return sorted(found)


def _without_template_arguments(symbol: str) -> str:
    """``Kernel<fp16_t, true>::run`` -> ``Kernel::run`` (nested brackets too)."""
    while True:
        bare = re.sub(r"<[^<>]*>", "", symbol)
        if bare == symbol:
            return bare.strip()
        symbol = bare


def _matching_call(calls: Sequence[WrapperCall], symbol: str) -> WrapperCall | None:
    """The wrapper's export of this launcher: the same name, and for a member function the
    same class and member (``Kernel<>::run_a`` is not ``Kernel<>::run_b``)."""
    wanted = _without_template_arguments(symbol).split("::")[-2:]
    for call in calls:
        given = _without_template_arguments(call.symbol).split("::")[-2:]
        if given[-len(wanted) :] == wanted or given == wanted[-len(given) :] or call.symbol == symbol:
            return call
    return None


# ----- instantiations -----


def _cpp_literal(text: str) -> str | int | bool:
    """A template argument's text: a bool, an integer, else the spelling itself."""
    text = text.strip()
    if text in ("true", "false"):
        return text == "true"
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    return text


def _cpp_value(text: str) -> str | int | bool:
    """A template argument's text, a C++ type spelled as the harness's dtype name."""
    value = _cpp_literal(text)
    return CPP_DTYPES.get(value, value) if isinstance(value, str) else value


def _candidates(
    param: TemplateParam,
    pdl_param: str,
    type_params_used: set[str],
    source: str,
    dim_params: set[str],
    notes: list[str],
    probing: bool = False,
    guessed: set[str] | None = None,
) -> tuple:
    """A template parameter's candidate values; one the kernel's checks constrain and nothing
    else gives a value for joins ``guessed`` (``satisfying`` then picks its value)."""
    if source and source not in ("pdl", "dtype") and not source.isidentifier():
        try:
            return (ast.literal_eval(source),)
        except (ValueError, SyntaxError):
            pass  # an expression of the wrapper's (``size * 2``): no value known
    name = param.name
    if param.kind == "type":
        if name in type_params_used:
            return _noted(
                notes, f"type parameter {name}: {', '.join(DEFAULT_FLOAT_TYPES)} assumed", DEFAULT_FLOAT_TYPES
            )
        if probing:
            return _noted(
                notes,
                f"type parameter {name} is no tensor's dtype; {_probed(DEFAULT_FLOAT_TYPES)}",
                DEFAULT_FLOAT_TYPES,
            )
        return _noted(notes, f"type parameter {name} is no tensor's dtype; float32 assumed", ("float32",))
    if name == pdl_param or source == "pdl" or param.type_spelling == "bool":
        return (True, False) if name == pdl_param or source == "pdl" else (False, True)
    if name in dim_params and probing:
        return _noted(notes, f"{name} sizes a dimension: {_probed(PROBED_FIXED_SIZES)}", PROBED_FIXED_SIZES)
    if name in dim_params:
        return _noted(notes, f"{name} sizes a dimension: {DEFAULT_FIXED_SIZES} assumed", DEFAULT_FIXED_SIZES)
    if probing:
        return _noted(notes, f"template parameter {name}: no value known; {_probed(PROBED_VALUES)}", PROBED_VALUES)
    if guessed is not None:
        guessed.add(name)
        return PROBED_VALUES
    return _noted(notes, f"template parameter {name}: no candidate value known; 1 assumed", (1,))


def _noted(notes: list[str], assumption: str, values: tuple) -> tuple:
    """``values``, with the ``TODO`` note that says they are an assumption to check."""
    notes.append(f"{TODO}: {assumption}")
    return values


def _probed(values: tuple) -> str:
    """How a note names the values the compile probe tries (``keep_building`` keeps those that build)."""
    return f"those of {values} that compile kept"


def _pdl_param(model: SourceModel, launcher: Function) -> str:
    for launch in model.launches:
        if launch.launcher == launcher.qualified_name and launch.pdl is not None and launch.pdl.value.op == "param":
            return launch.pdl.text  # a template parameter of the launcher, or its runtime argument
    return ""


def _value_tuples(
    model: SourceModel,
    launcher: Function,
    pdl: str,
    wrapper: WrapperCall | None,
    tensors: list[DraftTensor],
    notes: list[str],
    probing: bool = False,
) -> list[tuple]:
    params = template_params(model, launcher)
    if wrapper is not None and wrapper.manifest:
        return [tuple(_cpp_value(a) for a in args) for args in wrapper.manifest]
    called = dispatched_arguments(model, launcher, len(params)) if wrapper is None else []
    if called:
        notes.append(f"{TODO}: template arguments of {launcher.name} from the calls that dispatch to it in the source")
        return called
    used = {t.dtype for t in tensors}
    dims = {d for t in tensors for d in t.shape if isinstance(d, str)}
    sources = list(wrapper.argument_sources) if wrapper else []
    sources += [""] * (len(params) - len(sources))
    if wrapper is not None and pdl == "" and "pdl" in sources:
        pdl = params[sources.index("pdl")].name
    checks = template_checks(model, launcher)
    constrained = {name for check in checks for name in check.condition.free_names()}
    guessed: set[str] = set()
    per_param = [
        _candidates(p, pdl, used, s, dims, notes, probing, guessed if p.name in constrained else None)
        for p, s in zip(params, sources)
    ]
    tuples = satisfying(list(itertools.product(*per_param)), params, checks, guessed, notes, tensors)
    if probing and len(tuples) > MAX_INSTANTIATIONS:
        probed = _spread(tuples, MAX_PROBED_INSTANTIATIONS)
        notes.append(
            f"{TODO}: {len(tuples)} combinations of template arguments; the first {MAX_INSTANTIATIONS} that compile "
            f"of {len(probed)} spread over them kept"
        )
        return probed
    if len(tuples) > MAX_INSTANTIATIONS:
        notes.append(f"{TODO}: {len(tuples)} combinations of template arguments; the first {MAX_INSTANTIATIONS} kept")
        tuples = tuples[:MAX_INSTANTIATIONS]
    return tuples


def _spread(tuples: list[tuple], count: int) -> list[tuple]:
    """``count`` of ``tuples`` evenly spaced, in order (all of them when they are fewer): a
    prefix of a product varies only its last parameters, and where the first one's first
    values all fail to compile (a divisor of 1, a type a static_assert rules out) a prefix
    holds nothing that builds."""
    if len(tuples) <= count:
        return tuples
    return [tuples[i * len(tuples) // count] for i in range(count)]


def template_checks(model: SourceModel, launcher: Function) -> list[TemplateCheck]:
    """The ``static_assert``s and template-valued ``RuntimeCheck``s of the launcher, of the
    function it forwards to, and of its class template's body."""
    owner = _owner(model, launcher)
    owners = {launcher.usr, facts_function(model, launcher).usr, owner.usr if owner is not None else ""}
    return [c for c in model.launcher_facts.template_checks if c.function in owners]


def _named_arguments(params: Sequence[TemplateParam], args: Sequence[str | int | bool]) -> dict[str, str | int | bool]:
    """Template arguments by parameter name, a C++ spelling the source's dispatch used
    (``float``, ``__nv_bfloat16``) read as its dtype."""
    return {p.name: CPP_DTYPES.get(v, v) if isinstance(v, str) else v for p, v in zip(params, args)}


def template_env(params: Sequence[TemplateParam], args: Sequence[str | int | bool]) -> dict[str, int]:
    """Template arguments as the model's constant evaluator reads them: a dtype as its size in
    bytes (``sizeof(T)``), an integer or a bool as itself; other types are left out."""
    named = _named_arguments(params, args)
    return {
        name: DTYPES[v][0] if isinstance(v, str) else int(v)
        for name, v in named.items()
        if not isinstance(v, str) or v in DTYPES
    }


def satisfying(
    tuples: list[tuple],
    params: Sequence[TemplateParam],
    checks: Sequence[TemplateCheck],
    guessed: set[str],
    notes: list[str],
    tensors: Sequence[DraftTensor] = (),
) -> list[tuple]:
    """The candidate template arguments that break none of ``checks``, evaluated with the
    model (no compiler; a check it cannot evaluate breaks none; a RuntimeCheck that ties a
    size to them breaks where no whole size satisfies it). A ``guessed`` parameter keeps
    only the value of the first candidate that satisfies them, marked as a guess."""
    if not checks:
        return tuples
    names = {p.name for p in params}

    def broken(args: tuple) -> TemplateCheck | None:
        env = template_env(params, args)
        dtypes = _dtypes_of(params, args, tensors)

        def breaks(check: TemplateCheck) -> bool:
            if check.condition.evaluate(env) == 0:
                return True
            if check.kind != "RuntimeCheck":
                return False
            return _solve_for_size(check.condition, env, tensors, dtypes, names) is None

        return next((c for c in checks if breaks(c)), None)

    kept = [args for args in tuples if broken(args) is None]
    if not kept:
        notes.append(f"{TODO}: no candidate template arguments satisfy `{checks[0].text}`; all kept")
        return tuples
    if len(kept) < len(tuples):
        first = next(c for args in tuples if (c := broken(args)) is not None)
        notes.append(f"{TODO}: {len(tuples) - len(kept)} candidate instantiations break `{first.text}`: left out")
    picked = [i for i, p in enumerate(params) if p.name in guessed]
    for i in picked:
        notes.append(
            f"{TODO}: template parameter {params[i].name}: no value known; {kept[0][i]!r}, the first of "
            f"{PROBED_VALUES} that satisfies the kernel's static_assert/RuntimeCheck, assumed"
        )
    return [args for args in kept if all(args[i] == kept[0][i] for i in picked)]


def dispatched_arguments(model: SourceModel, launcher: Function, count: int) -> list[tuple]:
    """The template arguments the source's own dispatch passes the launcher
    (``generic_router_gemm_op<float, float32_code, 256, 7168, 1, 16>(...)``,
    ``Kernel<fp16_t, true>::run(...)``): what the code is built with, in order, each once."""
    if count == 0:
        return []
    text = model.data.decode("utf-8", errors="replace")
    owner = _owner(model, launcher)
    name = owner.name if owner is not None and owner.template_params else launcher.name
    after = rf"\s*::\s*{re.escape(launcher.name)}\s*\(" if name != launcher.name else r"\s*\("
    # a call inside another template passes that template's parameters: no value
    dependent = {p.name for f in model.functions for p in f.template_params}
    dependent |= {p.name for st in model.structs for p in st.template_params}
    found: list[tuple] = []
    for match in re.finditer(rf"\b{re.escape(name)}\s*<", text):
        close = _closing_bracket(text, match.end())
        if close is None or not re.match(after, text[close + 1 :]):
            continue
        # as spelled (``float``, not the project's ``fp32_t``, which the tree may not define)
        args = tuple(_cpp_literal(a) for a in split_template_arguments(text[match.end() : close]))
        if len(args) == count and args not in found and not dependent & {a for a in args if isinstance(a, str)}:
            found.append(args)
    return found


def _closing_bracket(text: str, start: int) -> int | None:
    """The index of the ``>`` closing the ``<`` just before ``start`` (None: not on this statement)."""
    depth = 1
    for index in range(start, min(len(text), start + 400)):
        char = text[index]
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
            if depth == 0:
                return index
        elif char in ";{}":
            return None
    return None


def _width(tensor: DraftTensor, env: dict[str, int]) -> int | None:
    if tensor.alignment is None:
        return 0
    return tensor.alignment.evaluate(env)


def instantiations(
    model: SourceModel, launcher: Function, pdl: str, values: list[tuple], tensors: list[DraftTensor], notes: list[str]
) -> list[DraftInstantiation]:
    params = template_params(model, launcher)
    checks = [c for c in template_checks(model, launcher) if c.kind == "RuntimeCheck"]
    result = []
    for args in values:
        named = _named_arguments(params, args)
        env = template_env(params, args)
        dtypes = _dtypes_of(params, args, tensors)
        sizes = {
            n: int(v)
            for n, v in named.items()
            if isinstance(v, int) and not isinstance(v, bool) and any(n in t.shape for t in tensors)
        }
        pinned = _sizes_runtime_checks_pin(checks, env, tensors, dtypes, {p.name for p in params})
        if pinned is None:
            notes.append(f"{TODO}: {args!r}: no size satisfies the launcher's RuntimeCheck: left out")
            continue
        sizes.update(pinned)
        widths = {}
        for tensor in tensors:
            width = _width(tensor, env)
            if width is None:
                notes.append(f"{TODO}: tensor {tensor.name}: ensure_alignment not evaluated; 0 assumed")
                width = 0
            element = max((DTYPES[d][0] for d in _bound(dtypes, tensor.dtype) if d in DTYPES), default=1)
            widths[tensor.name] = width if width >= element and width & (width - 1) == 0 else 0
        result.append(DraftInstantiation(tuple(args), dtypes, bool(named.get(pdl, False)), sizes, widths))
    return _dedupe(result)


def _dtypes_of(
    params: Sequence[TemplateParam], args: Sequence[str | int | bool], tensors: Sequence[DraftTensor]
) -> dict[str, str | tuple[str, ...]]:
    """The dtype variables an instantiation binds: its type arguments, and the run-time
    choices of the tensors' symbolic dtypes."""
    named = _named_arguments(params, args)
    dtypes: dict[str, str | tuple[str, ...]] = {n: v for n, v in named.items() if isinstance(v, str) and v in DTYPES}
    dtypes.update({t.dtype: t.runtime for t in tensors if t.runtime})
    return dtypes


_UNWRAPPED_SIZE = re.compile(r"(\w+)\.unwrap\(\)")  # a SymbolicSize's value: `D.unwrap()`
_DTYPE_BITS = re.compile(r"(\w+\.)?bits")  # a DLDataType's bits, as an inlined `dtype.bits / 8` leaves it


def _sizes_runtime_checks_pin(
    checks: Sequence[TemplateCheck],
    env: Mapping[str, int],
    tensors: Sequence[DraftTensor],
    dtypes: dict,
    params: set[str],
) -> dict[str, int] | None:
    """The axes a RuntimeCheck pins for one instantiation: `element_size == dtype_bytes(dt) *
    D.unwrap()` (a dtype's `bits / 8` read for the dtype of the tensors sized by `D`) makes
    `D` `element_size` over the element bytes. None where the check admits no whole size."""
    pinned: dict[str, int] = {}
    for check in checks:
        solved = _solve_for_size(check.condition, env, tensors, dtypes, params)
        if solved is None:
            return None
        pinned.update(solved)
    return pinned


def _solve_for_size(
    condition: ConstExpr, env: Mapping[str, int], tensors: Sequence[DraftTensor], dtypes: dict, params: set[str]
) -> dict[str, int] | None:
    """`{axis: value}` from `value_of(...) == product with one unwrapped size`; {} where the
    condition has another form or a factor is unknown; None where no whole size satisfies it."""
    if condition.op != "==" or len(condition.args) != 2:
        return {}
    for product, other in (condition.args, condition.args[::-1]):
        target = other.evaluate(env)
        factors = _factors(product)
        sizes = [m.group(1) for f in factors if f.op == "unknown" and (m := _UNWRAPPED_SIZE.fullmatch(f.text))]
        if target is None or len(sizes) != 1:
            continue
        axis = str(_dim(sizes[0], "", 0, params, {}))
        bits = {DTYPES[d][0] * 8 for t in tensors if axis in t.shape for d in _bound(dtypes, t.dtype) if d in DTYPES}
        others = [_with_bits(f, min(bits) if len(bits) == 1 else None) for f in factors]
        rest = [f.evaluate(env) for f in others if not _UNWRAPPED_SIZE.fullmatch(f.text)]
        divisor = 1
        for value in rest:
            if value is None:
                return {}
            divisor *= value
        if divisor <= 0 or target % divisor or target // divisor <= 0:
            return None
        return {axis: target // divisor}
    return {}


def _factors(expression: ConstExpr) -> list[ConstExpr]:
    if expression.op == "*":
        return [f for arg in expression.args for f in _factors(arg)]
    return [expression]


def _with_bits(expression: ConstExpr, bits: int | None) -> ConstExpr:
    """`expression` with a dtype's `bits` (the unknown `dtype_bytes` leaves) bound to `bits`."""
    if expression.op == "unknown" and _DTYPE_BITS.fullmatch(expression.text) and bits is not None:
        return ConstExpr("int", bits)
    if not expression.args:
        return expression
    return ConstExpr(
        expression.op,
        expression.value,
        expression.name,
        tuple(_with_bits(a, bits) for a in expression.args),
        expression.text,
    )


def _bound(dtypes: dict, variable: str) -> tuple[str, ...]:
    """The dtype names a variable (or a plain dtype name) stands for in one instantiation."""
    value = dtypes.get(variable, variable)
    return (value,) if isinstance(value, str) else tuple(value)


def _dedupe(found: list[DraftInstantiation]) -> list[DraftInstantiation]:
    seen, unique = set(), []
    for inst in found:
        key = (inst.template_args, inst.pdl)
        if key not in seen:
            seen.add(key)
            unique.append(inst)
    return unique


# ----- the grid -----


def grid_for(
    tensors: list[DraftTensor],
    pinned: set[str],
    notes: list[str],
    multiples: Mapping[str, int] | None = None,
    choices: Mapping[str, tuple[int, ...]] | None = None,
) -> dict[str, tuple[int, ...]]:
    """Free axes in order of appearance; the last dimension of the first written tensor (the
    vectorized one, usually) gets the tails. An axis the launcher requires a multiple of
    (``multiples``) takes multiples, and never the tails; one it dispatches over
    (``choices``) takes the values dispatched, and when it is that last dimension a dummy
    axis holds the tails (an outer one would get sizes the dispatch never meant: heads x
    the dispatched width past a block)."""
    multiples, choices = multiples or {}, choices or {}
    free = list(dict.fromkeys(a for t in tensors for d in t.shape for a in sorted(dim_axes(d)) if a not in pinned))
    tails = [axis for axis in free if axis not in multiples and axis not in choices]
    written = [t for t in tensors if t.role is not Role.IN] + tensors
    reach = [*tails, *(a for a in free if a in choices)]
    tail = next((d for t in written for d in reversed(t.shape) if d in reach), tails[-1] if tails else "tail")
    if tail in choices or tail == "tail":
        tail = "tail"
        notes.append(f"{TODO}: no dimension takes the tails (each is fixed or dispatched); a dummy axis holds them")
    grid = {axis: choices.get(axis) or tuple(multiples.get(axis, 1) * v for v in OTHER_AXIS) for axis in free}
    grid[tail] = TAIL_AXIS
    return _within_budget(grid, {tail, *choices}, notes)


def _within_budget(grid: dict[str, tuple[int, ...]], kept: set[str], notes: list[str]) -> dict[str, tuple[int, ...]]:
    """``grid`` with at most ``MAX_DRAFT_GRID_POINTS`` points: the ``kept`` axes (the tails,
    the dispatched values) and then the free axes in order of appearance vary while the
    product fits; each later one holds its middle value (a small odd count, rows of more
    than one)."""
    points = math.prod(len(values) for axis, values in grid.items() if axis in kept)
    held = []
    for axis, values in grid.items():
        if axis in kept:
            continue
        if points * len(values) <= MAX_DRAFT_GRID_POINTS:
            points *= len(values)
        else:
            grid[axis] = (values[len(values) // 2],)
            held.append(axis)
    if held:
        notes.append(
            f"{TODO}: axes {', '.join(held)} hold one value each, to keep the grid at {points} points; "
            "give them more where the kernel's paths depend on them"
        )
    return grid


def _dispatched_axes(
    dispatched: Mapping[str, tuple[int, ...]], tensors: Sequence[DraftTensor]
) -> dict[str, tuple[int, ...]]:
    """The axes a switch dispatches over, by the launcher's name for the variable: the axis
    a hand check names after it (``head_dim``), or a matcher's symbol (``D`` -> ``d``)."""
    axes = {a for t in tensors for d in t.shape for a in dim_axes(d)}
    found = {}
    for name, values in dispatched.items():
        axis = name if name in axes else name.lower()
        if axis in axes:
            found[axis] = values
    return found


# ----- the whole draft -----


def draft_launcher(
    model: SourceModel,
    launcher: Function,
    cuh: Path,
    spec_dir: Path,
    wrapper_calls: Sequence[WrapperCall],
    probing: bool = False,
    constants: Mapping[str, int] | None = None,
    headers: HeaderModels | None = None,
) -> Draft:
    """The draft of one launcher; ``constants``: the named integers its checks may pin a
    dimension to; ``headers``: where the helpers it hands tensors to are defined."""
    notes: list[str] = []
    symbol = symbol_of(model, launcher)
    wrapper = _matching_call(wrapper_calls, symbol)
    if wrapper is not None and "<>" in wrapper.symbol:
        symbol = wrapper.symbol
    params = template_params(model, launcher)
    facts = facts_function(model, launcher)
    if facts is not launcher:
        notes.append(
            f"{TODO}: {launcher.name} forwards to {facts.name}: its tensors are read from there, by parameter name"
        )
    type_params = {p.name for p in params if p.kind == "type"}
    unseen: set[str] = set()
    sites = launch_sites(model, facts, headers)
    roles = tensor_roles(sites, unseen)
    notes += [f"{TODO}: how the kernel uses {name} is out of sight; INPLACE assumed" for name in sorted(unseen)]
    traps = _arch_traps(sites)
    notes += [
        f"{TODO}: {kernel} calls {trap.function}, which traps (`__trap()`) below sm_{trap.arch // 10}: "
        f"min_arch is set, so an older card runs none of its cases (each would fault, KD001)"
        for kernel, trap in traps
    ]
    tests = parameter_tests(model, {launcher.usr, facts.usr})
    checks = hand_checks_of(model, facts, constants or {})
    written = {p.name: _written_type(model, p) for p in launcher.params}
    body = _body_text(model, launcher) + _body_text(model, facts)
    required = {p.name for p in launcher.params if _required(written[p.name], tests.get(p.name, []), body, p.name)}
    args: list[DraftTensor | DraftScalar] = [
        _tensor(model, facts, p.name, type_params, roles, notes, checks)
        if _is_tensor(p.type.spelling) or p.name in required
        else _scalar(p.name, written[p.name], tests.get(p.name, []), body)
        for p in launcher.params
    ]
    notes += [
        f"{TODO}: {p.name} is an optional tensor the launcher uses without testing that it is given: drafted given"
        for p in launcher.params
        if p.name in required
    ]
    sized_by_guards(args, guarded_lengths(sites), body, notes)
    for arg in args:  # the reference takes them as keyword arguments: `in` cannot be one
        arg.name = arg.name + "_" if keyword.iskeyword(arg.name) else arg.name
    tensors = [a for a in args if isinstance(a, DraftTensor)]
    returned = returned_outputs(launcher, tensors, notes)
    args += returned
    tensors += returned
    _ensure_written(tensors, checks, notes)
    pdl = _pdl_param(model, facts)
    insts = instantiations(
        model, launcher, pdl, _value_tuples(model, launcher, pdl, wrapper, tensors, notes, probing), tensors, notes
    )
    canonical = _loaded_value_uses(sites, tensors, insts, notes)
    constraint = _index_inits(tensors, insts, notes)
    pinned = set.intersection(*(set(i.sizes) for i in insts)) if insts else set()
    dispatched = dispatched_sizes(model, facts, body, headers or HeaderModels(cuh))
    grid = grid_for(tensors, pinned, notes, checks.divisible, _dispatched_axes(dispatched, tensors))
    if constraint and not _every_instantiation_runs(grid, insts, constraint):
        constraint = _fewer_ids(tensors, notes)
    name = _spec_name(launcher)
    export = wrapper.export if wrapper else launcher.name
    return Draft(
        name=name,
        source=_relative(cuh, spec_dir),
        export=export,
        symbol=symbol.split("<", 1)[0] if wrapper and wrapper.manifest else symbol,
        args=args,
        instantiations=insts,
        grid=grid,
        notes=list(dict.fromkeys(notes)),
        constraint=constraint,
        canonicalize=canonical,
        returns=tuple(t.name for t in returned),
        min_arch=max((trap.arch // 10 for _, trap in traps), default=None),
    )


def _arch_traps(sites: Sequence[LaunchSite]) -> list[tuple[str, ArchTrap]]:
    """The calls of each launched kernel that trap on older cards (``arch_traps``), with the
    kernel's name: every case faults there whatever the inputs."""
    found = []
    seen: set[tuple[int, str]] = set()  # a kernel launched at several sites (one per template value)
    for site in sites:
        for launched in site.launch.kernels:
            kernel = site.semantic.function(launched.usr)
            if kernel is not None and (id(site.semantic), launched.usr) not in seen:
                seen.add((id(site.semantic), launched.usr))
                found += [(kernel.name, trap) for trap in arch_traps(site.semantic.source, kernel)]
    return found


def _integer_typed(tensor: DraftTensor, insts: list[DraftInstantiation]) -> bool:
    dtypes = {d for i in insts for d in _bound(i.dtypes, tensor.dtype)}
    return bool(dtypes) and all(d.startswith(("int", "uint")) for d in dtypes)


def _byte_typed(tensor: DraftTensor, insts: list[DraftInstantiation]) -> bool:
    return all(d in ("int8", "uint8") for i in insts for d in _bound(i.dtypes, tensor.dtype))


def _loaded_value_uses(
    sites: Sequence[LaunchSite],
    tensors: list[DraftTensor],
    insts: list[DraftInstantiation],
    notes: list[str],
) -> dict[str, str]:
    """Index-like inputs and unordered outputs, from how the launched kernels (and the device
    functions they hand their pointers to) use the values they load (``SemanticModel.index_uses``,
    ``prefix_sums``): an integer input read inside the index of another tensor's read (a
    gather; a scatter's ids are left to ``_index_inits``: distinct) holds
    indices below that tensor's first dimension (``randint:``; ``k`` loaded values summed in
    one index each below its k-th part, so the sum stays in range), one read as ``p[e]`` and
    ``p[e + 1]`` is a prefix sum from 0 to that dimension (``cumsum:``), so random inputs are
    valid and the index profiles are the attack; an output written at an atomic's old value
    has no fixed order: compared sorted. Returns the draft's ``canonicalize``."""
    by_name = {t.name: t for t in tensors}
    canonical: dict[str, str] = {}
    for site in sites:
        semantic = site.semantic
        names = {argument: tensor for argument, field_name, tensor in site.tensors if not field_name}
        for launched in site.launch.kernels:
            kernel = semantic.function(launched.usr)
            if kernel is None:
                continue
            for function, params in _with_callees(semantic, kernel):
                sums = {names[params[p]] for p in semantic.prefix_sums(function) if params.get(p) in names}
                uses = semantic.index_uses(function)
                for use in uses:
                    target = by_name.get(names.get(params.get(use.outer.param_index, -1), ""))
                    source = by_name.get(names.get(params.get(use.inner.param_index, -1), ""))
                    if target is None:
                        continue
                    if use.inner.atomic and target.role is not Role.IN and target.name not in canonical:
                        canonical[target.name] = "sort"
                        notes.append(f"{TODO}: {target.name} is written at an atomic counter's value: compared sorted")
                        continue
                    if source is None or source.role is not Role.IN or source.init or not _integer_typed(source, insts):
                        continue
                    bound = target.shape[0] if target.shape else None
                    if not (isinstance(bound, str) and bound.isidentifier()):
                        continue
                    if source.name not in sums:
                        summed = {
                            u.inner.param_index
                            for u in uses
                            if u.outer == use.outer and u.inner.kind is AccessKind.READ
                        }
                        _bounded_ids(source, target, len(summed), insts, notes)
                        continue
                    source.init = f"cumsum:{bound}"
                    notes.append(f"{TODO}: {source.name} indexes {target.name}: a prefix sum from 0 to {bound} assumed")
                for loaded in loaded_indices(semantic, function):
                    target = by_name.get(_pointer_tensor(site, function, params, loaded.target))
                    source = by_name.get(_pointer_tensor(site, function, params, loaded.source))
                    _bounded_ids(source, target, loaded.count, insts, notes)
    return canonical


def _pointer_tensor(site: LaunchSite, function: Function, params: dict[int, int], pointer: str) -> str:
    """The launcher's tensor behind a pointer of ``function`` as the symbolic walk names it:
    a parameter (``ids``) or a field of a params struct (``params.ids``, ``p.inner.ids``);
    ``params`` maps the function's parameters to the kernel's. "" when none."""
    head, _, path = pointer.partition(".")
    position = next((i for i, p in enumerate(function.params) if p.name == head), -1)
    argument = params.get(position)
    return next((t for a, f, t in site.tensors if a == argument and f == path), "")


def _bounded_ids(
    source: DraftTensor | None,
    target: DraftTensor | None,
    count: int,
    insts: list[DraftInstantiation],
    notes: list[str],
) -> None:
    """``source`` holds ids below ``target``'s first dimension, its ``count``-th part when its
    values are one of ``count`` loaded values an index adds (so the sum stays in range)."""
    if source is None or target is None or source.role is not Role.IN or source.init:
        return
    if target.role is not Role.IN:  # a scatter's ids: distinct row ids (`_index_inits`), not any in range
        return
    bound = target.shape[0] if target.shape else None
    if not _integer_typed(source, insts) or not (isinstance(bound, str) and bound.isidentifier()):
        return
    below = f"({bound}+{count - 1})//{count}" if count > 1 else bound
    source.init = f"randint:{below}"
    part = f" (one of {count} loaded values its index adds)" if count > 1 else ""
    notes.append(f"{TODO}: {source.name} indexes {target.name}: indices below {below}{part} assumed")


def _with_callees(semantic: SemanticModel, kernel: Function) -> list[tuple[Function, dict[int, int]]]:
    """The kernel (its parameters as they are) and each device function it hands pointers to,
    with the kernel parameter each of that function's parameters carries."""
    found: list[tuple[Function, dict[int, int]]] = [(kernel, {i: i for i in range(len(kernel.params))})]
    carried: dict[str, dict[int, int]] = {}
    for handoff in semantic.facts_of(kernel.usr).pointer_passes:
        if not handoff.field:
            carried.setdefault(handoff.callee_usr, {})[handoff.argument] = handoff.param_index
    for usr, params in carried.items():
        callee = semantic.function(usr)
        if callee is not None and callee.body is not None:
            found.append((callee, params))
    return found


def hand_checks_of(model: SourceModel, launcher: Function, constants: Mapping[str, int]) -> HandChecks:
    """What the launcher's own checks say about its tensors (``hand_checks``)."""
    if launcher.body is None:
        return HandChecks()
    body = _body_text(model, launcher)
    tensors = [p.name for p in launcher.params if _is_tensor(p.type.spelling)]
    params = {p.name for p in template_params(model, launcher)}
    return read_hand_checks(body, tensors, constants, params)


def _index_inits(
    tensors: list[DraftTensor], insts: list[DraftInstantiation], notes: list[str]
) -> list[tuple[str, str]]:
    """Integer inputs are usually row ids into a written tensor: distinct ids below its row
    count (random ones would be negative or out of range), and the tensor they index is
    scattered into: the rows no id names keep their values, so a tensor only written stays
    OUT with those ids as its ``written_rows`` (the rows they name must be written, KD102).
    Returns the grid constraint's (rows, ids) pairs."""
    constraints = []
    # a tensor other ids index (``table`` of ``table[ids[i]]``) holds data, not ids
    indexed = {axis for t in tensors if t.init for axis in dim_axes(t.init.partition(":")[2])}
    for tensor in tensors:
        if tensor.role is not Role.IN or tensor.init or not _integer_typed(tensor, insts):
            continue
        if _byte_typed(tensor, insts):  # flags or bytes (spikes, masks): 256 values name no rows
            continue
        if tensor.shape and tensor.shape[0] in indexed:
            continue
        rows = next(
            (
                t.shape[0]
                for t in tensors
                if t.role is not Role.IN and t.shape and isinstance(t.shape[0], str) and t.shape[0] not in tensor.shape
            ),
            None,
        )
        ids = tensor.shape[0] if len(tensor.shape) == 1 else None
        # a derived dimension (``batch+1``) is no axis to draw ids below or to count them
        if rows is None or not isinstance(ids, str) or not (rows.isidentifier() and ids.isidentifier()):
            continue
        tensor.init = f"perm:{rows}"
        for target in tensors:
            if target.role is Role.OUT and target.shape and target.shape[0] == rows:
                target.written_rows = tensor.name
        constraints.append((rows, ids))
        notes.append(f"{TODO}: {tensor.name} assumed to hold distinct row ids of dimension {rows}")
    return constraints


def _every_instantiation_runs(
    grid: dict[str, tuple[int, ...]], insts: list[DraftInstantiation], constraint: list[tuple[str, str]]
) -> bool:
    """Whether each instantiation keeps a grid point under the drafted constraint."""
    for inst in insts:
        axes = {**grid, **{k: (v,) for k, v in inst.sizes.items()}}
        points = (dict(zip(axes, values)) for values in itertools.product(*axes.values()))
        if not any(all(p[rows] >= p[ids] for rows, ids in constraint) for p in points):
            return False
    return True


def _fewer_ids(tensors: list[DraftTensor], notes: list[str]) -> list[tuple[str, str]]:
    """Fixed sizes leave no room for distinct ids: ids in range, repeats allowed, no constraint."""
    for tensor in tensors:
        if tensor.init.startswith("perm:"):
            tensor.init = "randint:" + tensor.init.split(":", 1)[1]
            notes[:] = [n for n in notes if not n.startswith(f"{TODO}: {tensor.name} assumed to hold distinct")]
            notes.append(f"{TODO}: {tensor.name}: the fixed sizes allow no distinct ids; repeated ids may race")
    return []


# a tensor named as an output (`out`, `output`, `y_out`, `out_scale`, `dst`, `result`)
_OUTPUT_NAME = re.compile(r"(^|_)(out|output|dst|result)($|_)")


def _ensure_written(tensors: list[DraftTensor], checks: HandChecks, notes: list[str]) -> None:
    """A spec needs a written tensor; where no access says which, guess from the launcher's
    casts: a tensor whose data it casts to a non-const pointer may be written, so it is never
    an input (KD104 would blame the kernel for writing it). Those named as outputs are OUT
    (the harness poisons them, so an element never written is seen); the others INPLACE
    (compared, never poisoned); with no such cast, the last tensor is INPLACE."""
    if any(t.role is not Role.IN for t in tensors) or not tensors:
        return
    mutable = [t for t in tensors if t.name in checks.mutable] or tensors[-1:]
    named = [t for t in mutable if _OUTPUT_NAME.search(t.name)]
    for tensor in mutable:
        tensor.role = Role.OUT if tensor in named else Role.INPLACE
    if named:
        names = ", ".join(t.name for t in named)
        notes.append(f"{TODO}: no tensor is seen written; {names} assumed OUT (named as outputs)")
    if len(named) < len(mutable):
        names = ", ".join(t.name for t in mutable if t not in named)
        notes.append(f"{TODO}: no tensor is seen written; {names} assumed INPLACE")


def _spec_name(launcher: Function) -> str:
    """The function's name; a static member launcher's class name (``RowScale`` -> ``row_scale``)."""
    parts = launcher.qualified_name.split("::")
    base = parts[-2] if launcher.is_method and len(parts) > 1 else parts[-1]
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", base).lower()


def _relative(path: Path, start: Path) -> str:
    import os

    return Path(os.path.relpath(path.resolve(), start.resolve())).as_posix()


def draft_file(
    cuh: Path,
    spec_path: Path,
    launcher: str | None = None,
    wrapper: Path | None = None,
    defines: tuple[str, ...] = (),
    tree: tuple[str, Path] | None = None,
    probe: bool = False,
) -> list[Draft]:
    """Drafts for every launcher of ``cuh`` (or the one named), for a spec at ``spec_path``;
    ``defines`` (``NAME=VALUE``) are macros the wrapper passes to the build; ``tree``
    (variable, folder): paths are written relative to that variable's folder; ``probe``:
    each instantiation is compiled with nvcc and only those that build are kept."""
    includes = tree_includes(cuh, spec_path)
    model = parse_model(cuh, defines, includes)
    chosen = pick_launchers(model, launcher)
    wrapper = wrapper or find_wrapper(cuh, includes)
    calls = read_wrapper(wrapper, cuh.resolve().as_posix()) if wrapper else []
    exported = [f for f in chosen if _matching_call(calls, symbol_of(model, f))]
    # a wrapper names what is exported: the rest are internal; without one, the entry points
    chosen = exported or (entry_points(model, chosen) if launcher is None else chosen)
    constants = constants_of(cuh, includes)
    headers = HeaderModels(cuh, includes, defines)
    drafts = [draft_launcher(model, f, cuh, spec_path.parent, calls, probe, constants, headers) for f in chosen]
    base = tree[1] if tree else spec_path.parent
    for draft in drafts:
        draft.extra_cuda_cflags = tuple(f"-D{d}" for d in defines)
        draft.source = _relative(cuh, base)
        draft.include_dirs = tuple(_relative(d, base) for d in includes)
        draft.tree_variable = tree[0] if tree else ""
        if wrapper is not None and wrapper != cuh.with_suffix(".py"):
            draft.notes.insert(0, f"{TODO}: instantiations read from the wrapper {_relative(wrapper, base)}")
    names = [d.name for d in drafts]
    for draft in drafts:
        if names.count(draft.name) > 1:
            draft.name = f"{draft.name}_{draft.export}"
    _own_exports(cuh, drafts)
    if probe:
        keep_building(drafts, cuh, spec_path)
    return drafts


def keep_building(drafts: Sequence[Draft], cuh: Path, spec_path: Path) -> None:
    """Compile each draft's candidate instantiations (``compile_probe``: cached, no GPU), a
    batch at a time, and keep the first ``MAX_INSTANTIATIONS`` that build, saying how many
    did not; a draft none of whose candidates builds keeps its first ones with the first
    error, for the user to see."""
    candidates = {id(d): list(d.instantiations) for d in drafts}
    built: dict[int, list[DraftInstantiation]] = {id(d): [] for d in drafts}
    failed: dict[int, list[ProbeResult]] = {id(d): [] for d in drafts}
    probed = dict.fromkeys(candidates, 0)
    while True:
        batch = []
        for draft in drafts:
            start = probed[id(draft)]
            draft.instantiations = candidates[id(draft)][start : start + MAX_INSTANTIATIONS - len(built[id(draft)])]
            if draft.instantiations:
                batch.append(draft)
        if not batch:
            break
        for draft, outcomes in zip(batch, _probe(batch, cuh, spec_path)):
            probed[id(draft)] += len(draft.instantiations)
            built[id(draft)] += [inst for inst, r in zip(draft.instantiations, outcomes) if r.built]
            failed[id(draft)] += [r for r in outcomes if not r.built]
    for draft in drafts:
        failures, kept = failed[id(draft)], built[id(draft)]
        draft.instantiations = kept or candidates[id(draft)][:MAX_INSTANTIATIONS]
        if not failures:
            continue
        first = f"{failures[0].label}: {failures[0].error}"
        if not kept:
            draft.notes.append(f"{TODO}: no drafted instantiation compiles: {first}")
            continue
        draft.notes.append(
            f"{TODO}: {len(failures)} of {len(failures) + len(kept)} candidate instantiations do not compile (nvcc) "
            f"and were left out; the first: {first}"
        )


def _probe(drafts: Sequence[Draft], cuh: Path, spec_path: Path) -> list[list[ProbeResult]]:
    """Each draft's instantiations compiled (``check_specs``): one result each, in order."""
    import uuid

    from .compile_probe import check_specs
    from .discover import discover

    probe_file = spec_path.parent / f".kernel-check-probe-{uuid.uuid4().hex[:8]}_spec.py"
    probe_file.write_text(render(drafts, cuh), encoding="utf-8")
    try:
        found = discover([probe_file])
        if found.errors:
            raise DraftError(f"the drafted spec does not load: {found.errors[0]}")
        result = check_specs(found.specs)
    finally:
        probe_file.unlink(missing_ok=True)
    if result.environment:
        raise DraftError(f"cannot compile-probe the draft: {result.environment[0]}")
    return [[r for r in result.results if r.label.startswith(f"{spec.name}[")] for spec in found.specs]


def tree_includes(cuh: Path, spec_path: Path) -> tuple[Path, ...]:
    """The kernel tree's own ``include/`` (the one holding ``sgl_kernel/`` above ``cuh``),
    when a build from the spec's folder would not find it: a spec kept outside the tree;
    and, for each header ``cuh`` (or a file beside it that it includes) names that no such
    folder holds, the nearest ``include/`` above ``cuh`` that does (FlashInfer's
    ``csrc/norm.cu`` includes ``<flashinfer/norm.cuh>`` from the tree's ``include/``, and its
    ``csrc/tvm_ffi_utils.h`` includes ``<flashinfer/layout.cuh>``)."""
    own = find_repo_include_dir(cuh)
    dirs = [own] if own is not None and own != find_repo_include_dir(spec_path) else []
    searched = sgl_include_dirs(cuh)
    ancestors = cuh.resolve().parents
    for header in _unfound_headers(cuh.resolve(), searched):
        if any((d / header).is_file() for d in dirs):
            continue
        found = next((a / "include" for a in ancestors if (a / "include" / header).is_file()), None)
        if found is not None:
            dirs.append(found)
    return tuple(dirs)


def _unfound_headers(source: Path, searched: Sequence[Path]) -> list[str]:
    """Headers ``source`` and the files beside it that it includes (``"tvm_ffi_utils.h"``)
    name that are neither beside the file naming them nor in ``searched``."""
    walk = included_files(source, searched, MAX_LOCAL_INCLUDES, beside_only=True)
    return list(dict.fromkeys(header for _, named in walk for header, found in named if found is None))


def _own_exports(cuh: Path, drafts: Sequence[Draft]) -> None:
    """A source that exports its launcher itself (``TVM_FFI_DLL_EXPORT_TYPED_FUNC(name, name)``)
    holds that name already: the harness's module exports the launcher under another one."""
    exported = set(_OWN_EXPORT.findall(cuh.read_text(encoding="utf-8", errors="replace")))
    for draft in drafts:
        if draft.export in exported:
            renamed = f"{draft.export}_under_test"
            draft.notes.append(f"{TODO}: {cuh.name} exports {draft.export} itself; the harness exports it as {renamed}")
            draft.export = renamed


def draft_text(
    cuh: Path,
    spec_path: Path,
    launcher: str | None = None,
    wrapper: Path | None = None,
    defines: tuple[str, ...] = (),
    tree: tuple[str, Path] | None = None,
    probe: bool = False,
) -> str:
    """The spec file's text for ``cuh`` (see ``draft_render``)."""
    return render(draft_file(cuh, spec_path, launcher, wrapper, defines, tree, probe), cuh)


def default_spec_path(cuh: Path) -> Path:
    return cuh.with_name(f"{cuh.stem}_spec.py")


# ----- a whole tree -----

KERNEL_SUFFIXES = (".cuh", ".cu")


@dataclass(frozen=True)
class TreeRow:
    """One kernel source of ``spec new DIR``: what was drafted, and how much of it is a guess."""

    source: Path
    spec: Path | None  # None: nothing drafted
    launchers: tuple[str, ...] = ()
    instantiations: int = 0
    guesses: tuple[str, ...] = ()
    status: str = "drafted"  # or "exists" (kept), or why nothing was drafted
    written: bool = False

    @property
    def sure(self) -> str:
        """How much of the draft the code said, by the number of guesses left to check."""
        if not self.written:
            return "-"
        return "high" if len(self.guesses) <= 1 else "medium" if len(self.guesses) <= 4 else "low"


def draft_tree(
    root: Path,
    out_dir: Path | None,
    defines: tuple[str, ...] = (),
    tree: tuple[str, Path] | None = None,
    probe: bool = False,
) -> list[TreeRow]:
    """A draft beside (or in ``out_dir`` for) every ``.cuh``/``.cu`` under ``root`` that has a
    launcher; an existing spec file is never overwritten."""
    rows = []
    for source in sorted(p for suffix in KERNEL_SUFFIXES for p in root.rglob(f"*{suffix}") if p.is_file()):
        target = (out_dir / default_spec_path(source).name) if out_dir is not None else default_spec_path(source)
        if target.exists():
            rows.append(TreeRow(source, target, status="exists, kept"))
            continue
        try:
            drafts = draft_file(source, target, None, None, defines, tree, probe)
        except DraftError as exc:
            rows.append(TreeRow(source, None, status=str(exc).split(" (", 1)[0]))
            continue
        target.write_text(render(drafts, source), encoding="utf-8")
        notes = tuple(dict.fromkeys(n.removeprefix(f"{TODO}: ") for d in drafts for n in d.notes))
        launchers = tuple(d.export for d in drafts)
        count = sum(len(d.instantiations) for d in drafts)
        rows.append(TreeRow(source, target, launchers, count, notes, written=True))
    return rows


def render_tree_table(rows: Sequence[TreeRow]) -> str:
    """One line per kernel source: its spec, launchers, instantiations, guesses and how sure."""
    header = ("source", "spec", "launchers", "insts", "guesses", "sure", "first guess / status")
    lines = [header]
    for row in rows:
        detail = row.guesses[0] if row.guesses else row.status
        lines.append(
            (
                row.source.as_posix(),
                row.spec.name if row.spec is not None else "-",
                ", ".join(row.launchers) or "-",
                str(row.instantiations),
                str(len(row.guesses)),
                row.sure,
                detail[:80],
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header) - 1)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths)) + "  " + line[-1] for line in lines)
