"""The build check stage (``kernel-check build``): compile every declared instantiation.

Each ``BuildTarget`` is one module ``kernel_check.runtime.build_jit`` compiles. A target that
fails becomes a KC600 finding whose detail is the compiler's own message; the others
still build (a thread pool: nvcc runs out of process). ptxas's per-kernel report turns
into KC601 (more registers per thread than the budget) and KC602 (spills).
No GPU is needed: ``TVM_FFI_CUDA_ARCH_LIST`` (default 9.0) names the target.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import codes, runtime
from .finding import Finding, Location, Related
from .paths import display_path
from .registry import get_rule

DEFAULT_REGISTER_BUDGET = 64
DEFAULT_ARCH = "9.0"
NVCC_MISSING = (
    "kernel-check: nvcc not found; install the CUDA toolkit and set CUDA_HOME to it "
    "(the folder holding bin/nvcc), or `pip install nvidia-cuda-nvcc`"
)
# One line each: a path never spans lines, so a match cannot swallow the log up to a later '('.
_COMPILER_ERROR = re.compile(r"^(?P<path>[^\s(][^(\n]*)\((?P<line>\d+)\): (?:catastrophic )?error", re.MULTILINE)
_GCC_ERROR = re.compile(r"^(?P<path>[^\s:][^:\n]*):(?P<line>\d+):(?:\d+:)? (?:fatal )?error", re.MULTILINE)
_MANGLED_NAME_PART = re.compile(r"(\d+)")


@dataclass(frozen=True)
class BuildTarget:
    """One module to compile: what ``build_jit`` needs plus where findings point."""

    label: str  # "scale[float16-pdl]": how findings and the summary name it
    marker: tuple[str, ...]
    cuda_files: tuple[str, ...]
    wrappers: tuple[tuple[str, str], ...]
    csrc_root: str
    source: str  # the kernel source findings point at
    extra_cuda_cflags: tuple[str, ...] = ()
    # configured include directories (includes.sgl_include_dirs puts them after the
    # repository's own include/ and before the bundled one)
    include_dirs: tuple[str, ...] = ()
    # per-kernel register budgets (kernel identifier -> registers); "default" for the rest
    register_budget: Mapping[str, int] = field(default_factory=dict)


@dataclass
class BuildOutcome:
    target: BuildTarget
    result: runtime.BuildResult | None = None
    error: runtime.BuildError | None = None

    @property
    def ok(self) -> bool:
        return self.result is not None


def nvcc_available() -> bool:
    return runtime.find_nvcc() is not None


def ensure_arch_for_compile_only(arch: str | None = None) -> None:
    """Without a GPU the target arch must be named: ``TVM_FFI_CUDA_ARCH_LIST`` when set, else
    the configured ``arch`` (``"90"``, as the parse names it), else H200's sm_90."""
    os.environ.setdefault("TVM_FFI_CUDA_ARCH_LIST", f"{arch[:-1]}.{arch[-1]}" if arch else DEFAULT_ARCH)


def build_one(target: BuildTarget, *, lineinfo: bool = False) -> BuildOutcome:
    try:
        result = runtime.build_jit(
            *target.marker,
            cuda_files=list(target.cuda_files),
            cuda_wrappers=list(target.wrappers),
            csrc_root=target.csrc_root,
            extra_cuda_cflags=list(target.extra_cuda_cflags),
            extra_include_paths=list(target.include_dirs),
            lineinfo=lineinfo,
            collect_resources=True,
        )
    except runtime.BuildError as exc:
        return BuildOutcome(target, error=exc)
    return BuildOutcome(target, result=result)


def build_all(
    targets: Iterable[BuildTarget],
    *,
    lineinfo: bool = False,
    jobs: int | None = None,
    on_done: Callable[[BuildOutcome], None] | None = None,
) -> list[BuildOutcome]:
    """Build every target (in parallel); the result list follows the input order."""
    targets = list(targets)
    workers = max(1, min(jobs or os.cpu_count() or 1, len(targets) or 1))

    def build(target: BuildTarget) -> BuildOutcome:
        outcome = build_one(target, lineinfo=lineinfo)
        if on_done is not None:
            on_done(outcome)
        return outcome

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(build, targets))


# ----- findings -----


def _finding(
    code: str, message: str, location: Location, detail: str = "", related: tuple[Related, ...] = ()
) -> Finding:
    rule = get_rule(code)
    assert rule is not None, f"{code} is not declared in src/kernel_check/rules/"
    return Finding(code, message, location, rule.meta.severity, related, None, detail)


def _compiler_error_location(log: str, fallback: str) -> Location:
    """The first ``file(line): error`` of nvcc (or ``file:line: error`` of the host compiler)."""
    for pattern in (_COMPILER_ERROR, _GCC_ERROR):
        for match in pattern.finditer(log):
            if Path(match["path"].strip()).exists():
                return Location(display_path(match["path"].strip()), int(match["line"]))
    return Location(display_path(fallback), 1)


def compile_error_finding(outcome: BuildOutcome) -> Finding:
    assert outcome.error is not None
    log = outcome.error.log or str(outcome.error)
    location = _compiler_error_location(log, outcome.target.source)
    first = next((ln.strip() for ln in log.splitlines() if "error" in ln.lower()), str(outcome.error))
    return _finding(
        codes.COMPILE_ERROR, f"{outcome.target.label} does not compile: {first[:300]}", location, detail=log.strip()
    )


def kernel_identifier(name: str) -> str:
    """The kernel's own name: ``void sglang::scale_kernel<__half, 8>(...)`` -> ``scale_kernel``.

    Template argument lists and the parameter list are dropped first (they hold parentheses
    and names of their own), and ``(anonymous namespace)`` with them (compute-sanitizer
    spells it ``<unnamed>``, which goes with the template brackets), so a kernel in an
    anonymous namespace keeps its name. A mangled name (no demangler found) is read as
    Itanium length-prefixed parts, the last before the template arguments or the end of
    the nested name.
    """
    if name.startswith("_Z"):
        return _last_mangled_part(name)
    bare = _strip_bracketed(name, "<", ">").replace("(anonymous namespace)", "")
    words = re.findall(r"\w+", _without_parameters(bare.strip()))
    return words[-1] if words else name


def _without_parameters(signature: str) -> str:
    """``void f(float (*)[4])`` -> ``void f``: the trailing balanced parenthesis group removed."""
    if not signature.endswith(")"):
        return signature
    depth = 0
    for pos in range(len(signature) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(signature[pos], 0)
        if depth == 0:
            return signature[:pos]
    return signature


def _strip_bracketed(text: str, opening: str, closing: str) -> str:
    """``text`` without its (nested) ``opening ... closing`` groups."""
    kept, depth = [], 0
    for char in text:
        if char == opening:
            depth += 1
        elif char == closing and depth:
            depth -= 1
        elif not depth:
            kept.append(char)
    return "".join(kept)


def _last_mangled_part(mangled: str) -> str:
    pos, last = 2 + (mangled[2:3] == "N"), mangled
    while pos < len(mangled):
        match = _MANGLED_NAME_PART.match(mangled, pos)
        if not match:
            break
        start = match.end()
        last = mangled[start : start + int(match.group(1))]
        pos = start + int(match.group(1))
    return last


def kernel_definition_line(source: str, identifier: str) -> int:
    """The line of ``__global__ ... identifier(`` in the kernel source (1 if not found)."""
    try:
        text = Path(source).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return 1
    match = re.search(rf"__global__[^;{{]*?\b{re.escape(identifier)}\s*\(", text)
    return text.count("\n", 0, match.start()) + 1 if match else 1


def budget_for(budget: Mapping[str, int], identifier: str) -> int:
    return int(budget.get(identifier, budget.get("default", DEFAULT_REGISTER_BUDGET)))


def resource_findings(outcome: BuildOutcome) -> list[Finding]:
    """KC601 per kernel over its register budget, KC602 per kernel that spills."""
    assert outcome.result is not None
    findings = []
    for kernel in outcome.result.resources:
        identifier = kernel_identifier(kernel.name)
        location = Location(
            display_path(outcome.target.source), kernel_definition_line(outcome.target.source, identifier)
        )
        budget = budget_for(outcome.target.register_budget, identifier)
        where = f"{outcome.target.label}: {identifier}"
        if kernel.registers > budget:
            findings.append(
                _finding(
                    codes.REGISTER_BUDGET,
                    f"{where} uses {kernel.registers} registers per thread (budget {budget})",
                    location,
                    detail=kernel.name,
                )
            )
        if kernel.spill_stores or kernel.spill_loads:
            findings.append(
                _finding(
                    codes.REGISTER_SPILL,
                    f"{where} spills: {kernel.spill_stores} bytes stored, "
                    f"{kernel.spill_loads} bytes loaded ({kernel.registers} registers)",
                    location,
                    detail=kernel.name,
                )
            )
    return findings


def build_findings(outcomes: Iterable[BuildOutcome]) -> list[Finding]:
    """KC601/KC602 of each module built, KC600 of each that did not compile (a build the
    machine could not run is no finding: see `environment_failures`)."""
    findings: list[Finding] = []
    for outcome in outcomes:
        if outcome.ok:
            findings.extend(resource_findings(outcome))
        elif outcome.error is not None and not outcome.error.environment:
            findings.append(compile_error_finding(outcome))
    return findings


def environment_failures(outcomes: Iterable[BuildOutcome]) -> list[str]:
    """One line per build the machine could not run (the compiler or ninja did not start)."""
    return [
        f"{outcome.target.label}: {outcome.error}"
        for outcome in outcomes
        if outcome.error is not None and outcome.error.environment
    ]


def merge_budgets(
    config_default: int, per_kernel: Mapping[str, int], spec_budget: int | Mapping[str, int] | None
) -> dict[str, int]:
    """Config budgets, overridden by the spec's (a number, or per kernel)."""
    merged = {"default": int(config_default), **{k: int(v) for k, v in per_kernel.items()}}
    if isinstance(spec_budget, int):
        merged["default"] = spec_budget
    elif spec_budget:
        merged.update({k: int(v) for k, v in spec_budget.items()})
    return merged


# ----- wrapper manifests -----

MANIFEST_FIELDS = ("CUDA_FILES", "INSTANTIATIONS")


def read_manifest(path: Path) -> dict[str, Any] | None:
    """A csrc wrapper's module-level literals (CUDA_FILES, INSTANTIATIONS, EXTRA_CUDA_CFLAGS),
    read with ``ast`` (the wrapper is never imported); None for other Python files."""
    import ast

    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return None
    values: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name):
            try:
                values[target.id] = ast.literal_eval(value)
            except ValueError:
                continue
    return values if all(f in values for f in MANIFEST_FIELDS) else None


def wrapper_targets(path: Path, budgets: Mapping[str, int], include_dirs: tuple[str, ...] = ()) -> list[BuildTarget]:
    """One target per INSTANTIATIONS pair of a wrapper manifest (`include_dirs`: configured)."""
    manifest = read_manifest(path)
    if manifest is None:
        return []
    files = tuple(str(f) for f in manifest["CUDA_FILES"])
    root = runtime.find_csrc_root(path.parent, files[0]) or path.parent
    flags = tuple(str(f) for f in manifest.get("EXTRA_CUDA_CFLAGS", ()))
    return [
        BuildTarget(
            label=f"{path.stem}:{symbol}",
            marker=("wrapper", path.stem, str(i)),
            cuda_files=files,
            wrappers=((export, symbol),),
            csrc_root=str(root),
            source=str(root / files[0]),
            extra_cuda_cflags=flags,
            include_dirs=include_dirs,
            register_budget=budgets,
        )
        for i, (export, symbol) in enumerate(manifest["INSTANTIATIONS"])
    ]
