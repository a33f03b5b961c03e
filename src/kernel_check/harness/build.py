"""Build stage of the harness: one module per spec holding every instantiation, plus the
probe kernels.

One translation unit per spec: nvcc's cost is mostly the headers, so six instantiations in
one module take about as long as one (16 s against 18 s for ``scale``'s six), and a cold
``kernel-check test csrc/`` compiles 13 modules instead of 67. Each instantiation is exported
under its own name (``export_name``); a spec whose module fails to build is built again one
instantiation at a time, so a compile error (KC600) names the instantiation it belongs to and
the others still run.

Specs name their source relative to the spec file, so ``csrc_root`` is the spec's folder
(a fixture tree builds the same way as ``csrc/``). The same targets serve
``kernel-check build`` (resource findings) and ``kernel-check test`` (libraries to load).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..build import (
    BuildOutcome,
    BuildTarget,
    build_all,
    build_findings,
    environment_failures,
    kernel_identifier,
    merge_budgets,
)
from ..finding import Finding
from ..progress import Progress
from .spec import Instantiation, KernelSpec

PROBE_SOURCE = Path(__file__).with_name("probe.cuh")
PROBE_LABEL = "kernel-check probe"


def target_label(spec: KernelSpec, inst: Instantiation) -> str:
    return f"{spec.name}[{inst.id}]"


def progress_lines(progress: Progress) -> Callable[[BuildOutcome], None]:
    """An `on_done` for `build_specs` and `build_all`: a progress line per module built."""

    def built(outcome: BuildOutcome) -> None:
        progress.finished(f"built {outcome.target.label}" + ("" if outcome.ok else " FAILED"))

    return built


def export_name(spec: KernelSpec, inst: Instantiation) -> str:
    """The name the spec's module exports this instantiation (or a run-time dtype variant of
    it) under: the spec's ``export`` when it has one instantiation, else ``export_N``."""
    if len(spec.instantiations) == 1:
        return spec.export
    index = next(i for i, built in enumerate(spec.instantiations) if built.build_id == inst.build_id)
    return f"{spec.export}_{index}"


def spec_target(
    spec: KernelSpec, inst: Instantiation, budgets: Mapping[str, int], include_dirs: tuple[str, ...] = ()
) -> BuildTarget:
    """One instantiation alone, under its ``export_name``; `include_dirs`: the configured ones,
    after the spec's own."""
    return _target(spec, (inst,), target_label(spec, inst), (spec.name, inst.id), budgets, include_dirs)


def spec_module_target(spec: KernelSpec, budgets: Mapping[str, int], include_dirs: tuple[str, ...] = ()) -> BuildTarget:
    """Every instantiation of the spec in one module, each under its ``export_name``."""
    label = spec.name if len(spec.instantiations) > 1 else target_label(spec, spec.instantiations[0])
    marker = (spec.name, *(inst.build_id for inst in spec.instantiations))
    return _target(spec, spec.instantiations, label, marker, budgets, include_dirs)


def _target(
    spec: KernelSpec,
    insts: tuple[Instantiation, ...],
    label: str,
    marker: tuple[str, ...],
    budgets: Mapping[str, int],
    include_dirs: tuple[str, ...],
) -> BuildTarget:
    root = Path(spec.spec_path).parent
    return BuildTarget(
        label=label,
        marker=marker,
        cuda_files=(spec.source,),
        wrappers=tuple((export_name(spec, inst), spec.launcher(inst)) for inst in insts),
        csrc_root=str(root),
        source=str(root / spec.source),
        extra_cuda_cflags=spec.extra_cuda_cflags,
        include_dirs=tuple(str(root / d) for d in spec.include_dirs) + include_dirs,
        register_budget=budgets,
    )


def probe_target() -> BuildTarget:
    """The producer kernel behind the PDL (KD401) and stream (KD402) cases."""
    return BuildTarget(
        label=PROBE_LABEL,
        marker=("kernel_check_probe",),
        cuda_files=(PROBE_SOURCE.name,),
        wrappers=(
            ("late_write", "late_write<false>"),
            ("late_write_pdl", "late_write<true>"),
            ("pdl_canary", "pdl_canary"),
        ),
        csrc_root=str(PROBE_SOURCE.parent),
        source=str(PROBE_SOURCE),
    )


@dataclass
class SpecBuilds:
    """Libraries per spec name and instantiation id, and the findings of the build."""

    libraries: dict[str, dict[str, str]] = field(default_factory=dict)
    # spec name -> instantiation id -> the name its library exports it under (``export_name``)
    exports: dict[str, dict[str, str]] = field(default_factory=dict)
    by_spec: dict[str, list[Finding]] = field(default_factory=dict)
    probe: str = ""
    probe_error: str = ""
    # spec name -> the kernels (identifiers) its libraries hold, from ptxas's report: the
    # names sanitizer reports are attributed by (anonymous namespaces, macros and all)
    kernels: dict[str, set[str]] = field(default_factory=dict)
    # spec name -> why its build could not run (the machine, not the source: no verdict)
    environment: dict[str, str] = field(default_factory=dict)

    @property
    def findings(self) -> list[Finding]:
        return [f for findings in self.by_spec.values() for f in findings]

    def library(self, spec: str, inst: str) -> str | None:
        return self.libraries.get(spec, {}).get(inst)

    def exports_of(self, spec: str, libraries: Mapping[str, str]) -> dict[str, str]:
        """The export names of the instantiations in ``libraries`` (what a child loads)."""
        return {inst: name for inst, name in self.exports.get(spec, {}).items() if inst in libraries}


def build_specs(
    specs: list[KernelSpec],
    *,
    lineinfo: bool = False,
    with_probe: bool = False,
    register_budget: int = 64,
    per_kernel_budget: Mapping[str, int] | None = None,
    include_dirs: tuple[str, ...] = (),
    jobs: int | None = None,
    on_done: Callable[[BuildOutcome], None] | None = None,
    builder: Callable[..., list[BuildOutcome]] = build_all,
) -> SpecBuilds:
    """Build every spec's module (and the probe); a module that fails is built again one
    instantiation at a time; failures become findings. ``builder`` compiles a list of
    targets (``build_all``'s signature): ``compile_probe.probe_all`` remembers failures too."""
    budgets = {
        spec.name: merge_budgets(register_budget, per_kernel_budget or {}, spec.register_budget) for spec in specs
    }
    targets = [spec_module_target(spec, budgets[spec.name], include_dirs) for spec in specs]
    if with_probe:
        targets.append(probe_target())
    outcomes = _build_once(targets, builder, lineinfo=lineinfo, jobs=jobs, on_done=on_done)
    builds = SpecBuilds()
    if with_probe:
        probe: BuildOutcome = outcomes.pop()
        if probe.result is not None:
            builds.probe = str(probe.result.library)
        elif probe.error is not None:
            builds.probe_error = probe.error.log or str(probe.error)
    retry = [spec for spec, outcome in zip(specs, outcomes) if not outcome.ok and len(spec.instantiations) > 1]
    alone = [(spec, inst) for spec in retry for inst in spec.instantiations]
    alone_outcomes = (
        builder(
            [spec_target(spec, inst, budgets[spec.name], include_dirs) for spec, inst in alone],
            lineinfo=lineinfo,
            jobs=jobs,
            on_done=on_done,
        )
        if alone
        else []
    )
    for spec, outcome in zip(specs, outcomes):
        if spec not in retry:
            _record(builds, spec, spec.instantiations, outcome)
    for (spec, inst), outcome in zip(alone, alone_outcomes):
        _record(builds, spec, (inst,), outcome)
    return builds


def _build_once(
    targets: list[BuildTarget], builder: Callable[..., list[BuildOutcome]], **options: Any
) -> list[BuildOutcome]:
    """``build_all``, compiling each distinct module once: two specs of one launcher (the
    same source, exports, flags and headers, a spec per value contract) share its build,
    each outcome keeping its own target for the findings' labels."""

    def key(target: BuildTarget) -> tuple:
        return (
            str(Path(target.source).resolve()),
            target.wrappers,
            target.extra_cuda_cflags,
            target.include_dirs,
            tuple(sorted(target.register_budget.items())),
        )

    first: dict[tuple, BuildTarget] = {}
    for target in targets:
        first.setdefault(key(target), target)
    built = dict(zip(first, builder(list(first.values()), **options)))
    outcomes = [dataclasses.replace(built[key(t)], target=t) for t in targets]
    on_done = options.get("on_done")
    for outcome in outcomes:
        if on_done is not None and first[key(outcome.target)] is not outcome.target:
            on_done(outcome)  # progress counts every spec's module, shared or not
    return outcomes


def _record(builds: SpecBuilds, spec: KernelSpec, insts: tuple[Instantiation, ...], outcome: BuildOutcome) -> None:
    """A module's libraries (one build serves every run-time dtype choice of an instantiation),
    export names, kernels and findings."""
    result = outcome.result
    if result is not None:
        for inst in insts:
            for variant in inst.variants():
                builds.libraries.setdefault(spec.name, {})[variant.id] = str(result.library)
                builds.exports.setdefault(spec.name, {})[variant.id] = export_name(spec, inst)
        builds.kernels.setdefault(spec.name, set()).update(kernel_identifier(k.name) for k in result.resources)
    for failure in environment_failures([outcome]):
        builds.environment[spec.name] = failure
    builds.by_spec.setdefault(spec.name, []).extend(build_findings([outcome]))
