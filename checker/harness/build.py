"""Build stage of the harness: one module per (spec, instantiation), plus the probe kernels.

Specs name their source relative to the spec file, so ``csrc_root`` is the spec's folder
(a fixture tree builds the same way as ``csrc/``). The same targets serve
``kernel-check build`` (resource findings) and ``kernel-check test`` (libraries to load).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..build import BuildOutcome, BuildTarget, build_all, build_findings, kernel_identifier, merge_budgets
from ..finding import Finding
from .spec import Instantiation, KernelSpec

PROBE_SOURCE = Path(__file__).with_name("probe.cuh")
PROBE_LABEL = "kernel-check probe"


def target_label(spec: KernelSpec, inst: Instantiation) -> str:
    return f"{spec.name}[{inst.id}]"


def spec_target(spec: KernelSpec, inst: Instantiation, budgets: Mapping[str, int],
                include_dirs: tuple[str, ...] = ()) -> BuildTarget:
    """`include_dirs`: the configured ones, after the spec's own."""
    root = Path(spec.spec_path).parent
    return BuildTarget(
        label=target_label(spec, inst),
        marker=(spec.name, inst.id),
        cuda_files=(spec.source,),
        wrappers=((spec.export, spec.launcher(inst)),),
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
        wrappers=(("late_write", "late_write<false>"), ("late_write_pdl", "late_write<true>"),
                  ("pdl_canary", "pdl_canary")),
        csrc_root=str(PROBE_SOURCE.parent),
        source=str(PROBE_SOURCE),
    )


@dataclass
class SpecBuilds:
    """Libraries per spec name and instantiation id, and the findings of the build."""

    libraries: dict[str, dict[str, str]] = field(default_factory=dict)
    by_spec: dict[str, list[Finding]] = field(default_factory=dict)
    probe: str = ""
    probe_error: str = ""
    # spec name -> the kernels (identifiers) its libraries hold, from ptxas's report: the
    # names sanitizer reports are attributed by (anonymous namespaces, macros and all)
    kernels: dict[str, set[str]] = field(default_factory=dict)

    @property
    def findings(self) -> list[Finding]:
        return [f for findings in self.by_spec.values() for f in findings]

    def library(self, spec: str, inst: str) -> str | None:
        return self.libraries.get(spec, {}).get(inst)


def build_specs(specs: list[KernelSpec], *, lineinfo: bool = False, with_probe: bool = False,
                register_budget: int = 64, per_kernel_budget: Mapping[str, object] | None = None,
                include_dirs: tuple[str, ...] = (), jobs: int | None = None, on_done=None) -> SpecBuilds:
    """Build every instantiation of every spec (and the probe); failures become findings."""
    keyed: list[tuple[str, Instantiation]] = []
    targets: list[BuildTarget] = []
    for spec in specs:
        budgets = merge_budgets(register_budget, per_kernel_budget or {}, spec.register_budget)
        for inst in spec.instantiations:
            keyed.append((spec.name, inst))
            targets.append(spec_target(spec, inst, budgets, include_dirs))
    if with_probe:
        targets.append(probe_target())
    outcomes = build_all(targets, lineinfo=lineinfo, jobs=jobs, on_done=on_done)
    builds = SpecBuilds()
    if with_probe:
        probe: BuildOutcome = outcomes.pop()
        if probe.ok:
            builds.probe = str(probe.result.library)
        else:
            builds.probe_error = probe.error.log or str(probe.error)
    for (spec_name, inst), outcome in zip(keyed, outcomes):
        if outcome.ok:  # one build serves every run-time dtype choice of its instantiation
            for variant in inst.variants():
                builds.libraries.setdefault(spec_name, {})[variant.id] = str(outcome.result.library)
            builds.kernels.setdefault(spec_name, set()).update(
                kernel_identifier(k.name) for k in outcome.result.resources)
        builds.by_spec.setdefault(spec_name, []).extend(build_findings([outcome]))
    return builds
