"""Where a launcher's tensors meet its kernels, and the sizes the kernels' guards give them.

A launch site is a launch of the launcher's own body, or one of a helper it hands its tensors'
data pointers to that a header of the tree defines (FlashInfer's ``seq_chunk_cumsum`` calls
``SeqChunkCumsumLauncher(seq_idx.data_ptr(), ...)`` of ``<flashinfer/mamba/...cuh>``, which
launches): the header is parsed on its own (``HeaderModels``) and the helper found by its
clang USR, the same in every translation unit. A site maps the kernel's arguments to the
launcher's tensors and to the launcher's text of each scalar argument.

The guards a kernel puts on an access bound the tensor it reads or writes: under
``if (s <= num_seqs) out[s] = ...`` the offset stays below ``num_seqs + 1``, so ``out`` holds
``num_seqs + 1`` elements; under ``if (8 * i < n) out[i]``, ``ceil(n / 8)``. ``guarded_lengths``
asks the solver which of those forms the guards imply (``k * offset < n + c`` for no value of
the kernel's symbols is false), for each scalar argument the guards name.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..includes import find_include, include_lines, included_files
from ..model import Function, Launch, SourceModel, SymbolicAccess, SymbolKind, Term
from ..semantic import SemanticModel
from ..solver import Budget, Outcome, check, launch_constraints
from .hand_checks import call_arguments, clean
from .parsed import parse_model

# (elements per step, extra): the forms tried, the tightest first: ``k * offset < n`` says
# ceil(n / k) elements; ``offset < n + 1``, n + 1
_FORMS = ((32, 0), (16, 0), (8, 0), (4, 0), (2, 0), (1, 0), (1, 1))
_SOLVER_SECONDS = 2.0  # per kernel
MAX_HEADERS = 64  # the tree's headers read for macro definitions
MACRO_DEFINITION = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(", re.M)  # a function-like macro's name
_CAST = re.compile(r"\b(?:static_cast|reinterpret_cast)\s*<[^<>]*>\s*\(\s*(\w+)\s*\)|^\(\s*[\w\s:]+\)\s*(\w+)$")


@dataclass(frozen=True)
class LaunchSite:
    semantic: SemanticModel  # the model the launch and its kernels are in
    launch: Launch
    tensors: tuple[tuple[int, str, str], ...]  # (kernel argument, params-struct field, launcher tensor)
    scalars: dict[int, str]  # kernel argument -> its text in the launcher's scope


@dataclass(frozen=True)
class GuardedLength:
    """Tensor ``tensor`` holds ``ceil((scalar + extra) / per)`` elements, ``scalar`` being the
    launcher's text of the kernel argument that bounds its offset."""

    tensor: str
    scalar: str
    per: int = 1
    extra: int = 0

    def expression(self, name: str) -> str:
        """The length over ``name`` (the axis the scalar stands for), as a spec's shape writes it."""
        if self.per > 1:
            return f"({name}+{self.per - 1})//{self.per}"
        return f"{name}+{self.extra}" if self.extra else name


@dataclass
class HeaderModels:
    """The headers a kernel source includes from its own tree (beside it or in
    ``include_dirs``), and what its launchers find there, each worked out once per tree
    and kept for every launcher: the headers' models (parsed on the first question about a
    function they may define), the header helpers of each launcher, and the tree's
    function-like macros."""

    source: Path
    include_dirs: tuple[Path, ...] = ()
    defines: tuple[str, ...] = ()
    _models: list[SemanticModel] | None = field(default=None, repr=False)
    _helpers: dict[str, list[HeaderHelper]] = field(default_factory=dict, repr=False)  # by launcher USR

    def headers(self) -> list[Path]:
        named = include_lines(self.source.read_bytes())
        found = (find_include(header, quoted, self.source, self.include_dirs) for header, quoted in named)
        return [path for path in found if path is not None]

    def function(self, usr: str) -> tuple[SemanticModel, Function] | None:
        """The definition of ``usr`` in one of the headers, with that header's model."""
        if self._models is None:
            self._models = [SemanticModel(parse_model(h, self.defines, self.include_dirs)) for h in self.headers()]
        for semantic in self._models:
            function = semantic.function(usr)
            if function is not None and function.body is not None:
                return semantic, function
        return None

    def helpers(self, semantic: SemanticModel, launcher: Function) -> list[HeaderHelper]:
        """The helpers ``launcher`` (of ``source``, whose model ``semantic`` is) hands tensors
        to that its file leaves undefined and a header of the tree defines."""
        if launcher.usr not in self._helpers:
            self._helpers[launcher.usr] = _header_helpers(semantic, launcher, self)
        return self._helpers[launcher.usr]

    @functools.cached_property
    def macros(self) -> str:
        """The tree's function-like macros (``tree_macros`` of ``source``)."""
        return tree_macros(self.source, self.include_dirs)


def tree_macros(source: Path, include_dirs: Sequence[Path]) -> str:
    """The text of ``source`` and of the headers it includes from its own tree (beside the
    including file or in ``include_dirs``, followed transitively) that define function-like
    macros: where a dispatch macro is defined (FlashInfer's ``<flashinfer/utils.cuh>``,
    through ``cascade.cuh``)."""
    texts = [data.decode("utf-8", errors="replace") for data, _ in included_files(source, include_dirs, MAX_HEADERS)]
    return "\n".join(t for t in texts if MACRO_DEFINITION.search(t))


def launch_sites(model: SourceModel, launcher: Function, headers: HeaderModels | None) -> list[LaunchSite]:
    """The launches of ``launcher``'s body and of the host helpers of the file it hands
    tensors to (``SemanticModel.tensor_launches``; a scalar's text is known in its own body
    only), then those of the header helpers it hands tensors to."""
    semantic = SemanticModel(model)
    own = {p.name for p in launcher.params}
    carried: dict[int, list[tuple[int, str, str]]] = {}  # by id() of the launch
    launches: dict[int, Launch] = {}
    for found in semantic.tensor_launches(launcher):
        if found.tensor in own:
            carried.setdefault(id(found.launch), []).append(
                (found.argument.argument, found.argument.field, found.tensor)
            )
            launches[id(found.launch)] = found.launch
    direct = semantic.launches_in(launcher)
    launches.update((id(launch), launch) for launch in direct)
    texts = {id(launch): dict(enumerate(launch.argument_texts)) for launch in direct}
    sites = [
        LaunchSite(semantic, launch, tuple(carried.get(key, ())), texts.get(key, {}))
        for key, launch in launches.items()
    ]
    return sites + _helper_sites(semantic, launcher, headers) if headers is not None else sites


@dataclass(frozen=True)
class HeaderHelper:
    """A helper of a header that the launcher hands tensors' data pointers to."""

    semantic: SemanticModel  # the header's model
    function: Function
    tensors: dict[int, str]  # the helper's parameter -> the launcher's tensor
    passed: list[str]  # the launcher's call arguments, as written


def _header_helpers(semantic: SemanticModel, launcher: Function, headers: HeaderModels) -> list[HeaderHelper]:
    """``HeaderModels.helpers``, worked out."""
    own = {p.name for p in launcher.params}
    handed: dict[str, dict[int, str]] = {}  # helper USR -> its parameter -> the launcher's tensor
    for handoff in semantic.facts_of(launcher.usr).data_handoffs:
        known = semantic.function(handoff.callee_usr)
        if handoff.tensor in own and not handoff.field and (known is None or known.body is None):
            handed.setdefault(handoff.callee_usr, {})[handoff.argument] = handoff.tensor
    helpers = []
    for usr, tensors in handed.items():
        found = headers.function(usr)
        if found is not None:
            helpers.append(HeaderHelper(found[0], found[1], tensors, _call_texts(semantic, launcher, found[1].name)))
    return helpers


def _helper_sites(semantic: SemanticModel, launcher: Function, headers: HeaderModels) -> list[LaunchSite]:
    sites = []
    for found in headers.helpers(semantic, launcher):
        helper_model, helper, tensors, passed = found.semantic, found.function, found.tensors, found.passed
        names = {p.name: i for i, p in enumerate(helper.params)}
        for launch in helper_model.launches_in(helper):
            pointers = tuple(
                (a.argument, a.field, tensors[int(a.tensor[1:])])
                for a in launch.tensors
                if a.tensor.startswith("#") and a.tensor[1:].isdigit() and int(a.tensor[1:]) in tensors
            )
            scalars = {}
            for index, text in enumerate(launch.argument_texts):
                position = names.get(uncast(text), -1)
                if 0 <= position < len(passed):
                    scalars[index] = passed[position]
            sites.append(LaunchSite(helper_model, launch, pointers, scalars))
    return sites


def _call_texts(semantic: SemanticModel, launcher: Function, callee: str) -> list[str]:
    """The arguments of the launcher's call of ``callee`` (``callee<...>(a, b)``), as written."""
    if launcher.body is None:
        return []
    body = clean(semantic.data[launcher.body.start : launcher.body.end].decode("utf-8", errors="replace"))
    found = re.search(rf"\b{re.escape(callee)}\s*(?:<[^;{{}}]*?>)?\s*\(", body)
    return call_arguments(body, found.end())[0] if found else []


def uncast(text: str) -> str:
    """``static_cast<int>(n)`` / ``(int)n`` -> ``n``; other text as it is."""
    found = _CAST.fullmatch(text.strip())
    return (found.group(1) or found.group(2)) if found else text.strip()


def guarded_lengths(sites: Sequence[LaunchSite]) -> list[GuardedLength]:
    """What each tensor must hold for the guards of every access of it to keep it in bounds:
    per tensor, the largest length the sites' kernels need (sampled at a large size)."""
    needed: dict[str, GuardedLength] = {}
    for site in sites:
        for launched in site.launch.kernels:
            kernel = site.semantic.function(launched.usr)
            if kernel is None:
                continue
            params = {p.name: i for i, p in enumerate(kernel.params)}
            pointers = {index: tensor for index, field_name, tensor in site.tensors if not field_name}
            budget = Budget(_SOLVER_SECONDS)
            for access in site.semantic.symbolic_accesses:
                tensor = pointers.get(params.get(access.pointer, -1))
                if access.function_usr != kernel.usr or access.shared or tensor is None:
                    continue
                for length in _lengths(access, tensor, params, site.scalars, budget):
                    old = needed.get(tensor)
                    if old is None or _size(length) > _size(old):
                        needed[tensor] = length
    return list(needed.values())


def _size(length: GuardedLength, at: int = 1 << 20) -> int:
    return -(-(at + length.extra) // length.per)


def _lengths(
    access: SymbolicAccess, tensor: str, params: dict[str, int], scalars: dict[int, str], budget: Budget
) -> list[GuardedLength]:
    if not _names(access.offset):  # `*scale`: one element whatever the guards on the way
        return []
    guarded = {name for guard in access.guards for name in _names(guard)}
    found = []
    for symbol in access.symbols:
        text = scalars.get(params.get(symbol.name, -1), "")
        if symbol.kind is not SymbolKind.SCALAR or symbol.name not in guarded or not text:
            continue
        world = [*launch_constraints(access.symbols), *access.guards, Term("<=", (_const(0), access.offset))]
        bound = Term("sym", name=symbol.name)
        for per, extra in _FORMS:
            reach = Term("<=", (Term("+", (bound, _const(extra))), Term("*", (_const(per), access.offset))))
            if check([*world, reach], budget).outcome is Outcome.UNSAT:
                found.append(GuardedLength(tensor, uncast(text), per, extra))
                break
    return found


def _names(term: Term) -> set[str]:
    return {term.name} if term.op == "sym" else set().union(*(_names(a) for a in term.args)) if term.args else set()


def _const(value: int) -> Term:
    return Term("const", value=value)


@dataclass(frozen=True)
class LoadedIndex:
    """A value read from parameter ``source`` is one of ``count`` loaded values in the offset
    of an access of parameter ``target`` (``table[ids[i] * w + offs[i]]``: ids and offs, 2)."""

    target: str
    source: str
    count: int


def loaded_indices(semantic: SemanticModel, function: Function) -> list[LoadedIndex]:
    """The loaded values in the offsets of ``function``'s global accesses, followed through
    the locals the symbolic walk follows (``const auto index = ids[i] * w; table[index]``)."""
    mine = [a for a in semantic.symbolic_accesses if a.function_usr == function.usr and not a.shared]
    read_at = {(a.span.start, a.span.end): a.pointer for a in mine if not a.is_write}
    found = []
    for access in mine:
        offset = _names(access.offset)
        loads = [s for s in access.symbols if s.kind is SymbolKind.LOAD and s.name in offset and s.span is not None]
        sources = {read_at.get((s.span.start, s.span.end), "") for s in loads if s.span is not None} - {""}
        found += [LoadedIndex(access.pointer, source, len(loads)) for source in sources]
    return found
