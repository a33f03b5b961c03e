"""The confirm stage: a static finding's witness run on the GPU (``kernel-check confirm``).

A static KC4xx finding (and KC112, KC170) carries the values its solver chose
(``finding.Counterexample``). For each one whose kernel has a spec, this stage makes the case
the witness names and runs it under the check that shows that class of defect:

- the case: the spec's instantiation whose fixed sizes agree with the witness, at its
  smallest grid point (``cases.base_sizes``) with every axis the witness's tensor shapes
  decide set to the witness's value; KC401's id tensor filled with the witness's id
  everywhere (``Case.fills``); KC405's input given NaN (or values past the target's range)
  by the value profile of that name, judged against the spec's reference; a tensor the
  witness lays out at strides of its own (KC406-KC408's padded views) at those
  (``Case.strides``);
- the check (``CHECKS``): memcheck for KC401, KC112, KC406 and KC408, racecheck for KC402
  and KC404, initcheck for KC403, synccheck for KC170, the comparison with the reference
  (and the harness's NaN check) for KC405 and KC407;
- the verdict (``confirmations.Verdict``): confirmed when the check reports on the
  finding's kernel (or, for KC405, a check of the case fails), not reproduced when it runs
  clean (or the launcher rejects the witness's inputs), could not run with the reason
  otherwise (no witness, no spec, a witness the spec cannot state, tensors too large, a
  build that failed, a machine that failed).

It adds no pipeline of its own: the build is the harness's (``build.py``), the child is
``child.py`` with the witness's case in its job (``Job.cases``), the sanitizer run and its
reports are ``sanitize.py``'s. The verdicts go to the project's confirmations file
(``kernel_check.confirmations``), which the static report reads.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import codes
from ..confirmations import CONFIRMED, NOT_REPRODUCED, NOT_RUN, Verdict
from ..finding import Counterexample, Finding
from .build import SpecBuilds
from .cases import Case, CaseKind, Outcome, base_sizes, numel, shape_of
from .child import CALL_RAISED, Job
from .environment import child_failure, sanitizer_failure
from .process import run_child
from .profiles import ValueProfile
from .run import STARTUP_TIMEOUT, child_command, child_env
from .sanitize import SanitizerReport, run_tool
from .spec import KernelSpec, dim_axes, itemsize

COMPARISON = "the comparison"
# the check that shows each class of defect
CHECKS = {
    codes.UNBOUNDED_LOADED_INDEX: "memcheck",
    codes.INDEX_OVERFLOW_32BIT: "memcheck",
    codes.ACCESS_PAST_TENSOR_EXTENT: "memcheck",
    codes.VECTOR_ACCESS_MISALIGNED_FOR_ALLOWED_SHAPE: "memcheck",
    codes.INDEX_IGNORES_ALLOWED_STRIDE: COMPARISON,
    codes.SHARED_WRITE_RACE: "racecheck",
    codes.SHARED_READ_WRITE_RACE: "racecheck",
    codes.UNINITIALISED_SHARED_READ: "initcheck",
    codes.BARRIER_IN_DIVERGENT_BRANCH: "synccheck",
    codes.UNGUARDED_NARROWING_CONVERSION: COMPARISON,
}
# a witness whose tensors take more than this is not run (KC112's sizes past 2^31 elements can)
MAX_CASE_BYTES = 8 << 30
# what a failed check of a KC405 case confirms it by
_BY_OUTCOME = {codes.RESULT_MISMATCH: COMPARISON, codes.NAN_FROM_FINITE: "the NaN check"}


@dataclass(frozen=True)
class Plan:
    """One finding's confirmation: the spec and the case its witness names, or why none."""

    finding: Finding
    spec: KernelSpec | None = None
    case: Case | None = None
    why: str = ""


def specs_for(finding: Finding, specs: Sequence[KernelSpec]) -> list[KernelSpec]:
    """The specs of the finding's source file that can run its witness: where the witness
    comes from a launch's contract, those of that launcher (`K<>::run` is `ns::K<T>::run`)."""
    source = Path(finding.path).resolve()
    matching = [s for s in specs if (Path(s.spec_path).parent / s.source).resolve() == source]
    launcher = _untemplated(finding.witness.launcher) if finding.witness is not None else ""
    if not launcher:
        return matching
    return [s for s in matching if f"::{launcher}".endswith(f"::{_untemplated(s.symbol)}")]


def _untemplated(name: str) -> str:
    """`ns::K<T, 8>::run` -> `ns::K::run`: a name without its template arguments."""
    depth, kept = 0, []
    for char in name:
        depth += char == "<"
        if depth == 0:
            kept.append(char)
        depth -= char == ">" and depth > 0
    return "".join(kept)


def plan(finding: Finding, specs: Sequence[KernelSpec]) -> Plan:
    """The case of the first spec of the finding's file that can state its witness."""
    if finding.code not in CHECKS:
        return Plan(finding, why=f"{finding.code} has no check that confirms it on the GPU")
    if finding.witness is None:
        return Plan(finding, why="the finding has no witness (the solver named no values)")
    candidates = specs_for(finding, specs)
    if not candidates:
        launcher = f" and its launcher `{finding.witness.launcher}`" if finding.witness.launcher else ""
        return Plan(finding, why=f"no spec of its file{launcher}")
    whys = []
    for spec in candidates:
        case = witness_case(spec, finding.code, finding.witness)
        if isinstance(case, Case):
            return Plan(finding, spec, case)
        whys.append(f"{spec.name}: {case}")
    return Plan(finding, why="; ".join(whys))


def witness_case(spec: KernelSpec, code: str, witness: Counterexample) -> Case | str:
    """The case `witness` names in `spec`'s terms, or why the spec cannot state it."""
    axes = witness_axes(spec, witness)
    if isinstance(axes, str):
        return axes
    inst = next((i for i in spec.variants if all(axes.get(k, int(v)) == int(v) for k, v in i.sizes.items())), None)
    if inst is None:
        return f"the witness's sizes {axes} are none of its instantiations'"
    sizes = {**base_sizes(spec, inst), **axes}
    inputs = {t.name for t in spec.tensors if t.read}
    missing = [name for name, _ in (*witness.values, *witness.fill) if name not in inputs]
    if missing:
        return f"no input tensor named {', '.join(f'`{m}`' for m in missing)}"
    strides = _laid_out(spec, witness)
    if isinstance(strides, str):
        return strides
    tensors = spec.tensors
    size = sum(numel(shape_of(t, sizes)) * itemsize(spec.tensor_dtype(t, inst)) for t in tensors)
    if size > MAX_CASE_BYTES:
        return f"its tensors take {size / (1 << 30):.1f} GiB, more than the {MAX_CASE_BYTES >> 30} GiB a case may"
    check = CHECKS[code]
    profile = None
    if witness.fill:
        tensor, values = witness.fill[0]
        profile = ValueProfile(tensor, values, "match" if spec.reference is not None else "safe")
    kind = CaseKind.PROFILE if check == COMPARISON else CaseKind.SANITIZE
    return Case(
        0,
        inst.id,
        kind,
        tuple(sizes.items()),
        profile=profile,
        fills=tuple(witness.values),
        strides=strides,
        scalars=_scalars(spec, witness),
    )


def _scalars(spec: KernelSpec, witness: Counterexample) -> tuple[tuple[str, int], ...]:
    """The spec's integer and boolean scalars the witness's sizes name (`ne_n = 4`,
    `stride_checked = 0`), at its values."""
    given = dict(witness.sizes)
    named = {s.name for s in spec.scalars if type(s.value) in (int, bool)}
    return tuple((name, given[name]) for name in sorted(named & set(given)))


def _laid_out(spec: KernelSpec, witness: Counterexample) -> tuple[tuple[str, tuple[int, ...]], ...] | str:
    """The witness's padded views (`strides`) as the case lays out the spec's tensors, or
    why the spec cannot: a tensor it does not pass, or passes at another rank."""
    tensors = {t.name: t for t in spec.passed_tensors}
    for name, strides in witness.strides:
        tensor = tensors.get(name)
        if tensor is None:
            return f"the witness lays out `{name}` with strides {list(strides)}, and the spec passes no such tensor"
        if len(tensor.shape) != len(strides):
            return f"the witness gives `{name}` {len(strides)} strides, the spec a rank-{len(tensor.shape)} tensor"
    return witness.strides


def witness_axes(spec: KernelSpec, witness: Counterexample) -> dict[str, int] | str:
    """The spec's grid axes the witness's tensor shapes decide (a dim that is an axis's name),
    or where a shape contradicts the spec (a fixed dim, an axis given two values)."""
    tensors = {t.name: t for t in spec.tensors}
    stated = [(tensors[name], dims) for name, dims in witness.shapes if name in tensors]
    if witness.shapes and not stated:
        return f"it has none of the witness's tensors ({', '.join(f'`{name}`' for name, _ in witness.shapes)})"
    axes: dict[str, int] = {}
    for tensor, dims in stated:
        name = tensor.name
        if len(tensor.shape) != len(dims):
            continue  # a view at another rank: the spec's sizes for it
        for position, (dim, value) in enumerate(zip(tensor.shape, dims)):
            if isinstance(dim, int):
                if dim != value:
                    return f"`{name}` dim {position} is {dim} in the spec, {value} in the witness"
            elif dim_axes(dim) == {dim} and axes.setdefault(dim, value) != value:
                return f"the witness gives axis `{dim}` both {axes[dim]} and {value}"
    for name, value in witness.sizes:  # a launcher size the spec's grid names (`batch_size`)
        if name in spec.grid and axes.setdefault(name, value) != value:
            return f"the witness gives axis `{name}` both {axes[name]} and {value}"
    return axes


def today() -> str:
    return datetime.datetime.now(datetime.timezone.utc).date().isoformat()


# ----- running -----


@dataclass(frozen=True)
class Machine:
    """Where the cases run: a CUDA_VISIBLE_DEVICES value, its name, a scratch folder, the
    seconds one run may take."""

    gpu: str
    name: str
    workdir: Path
    timeout: float


def run_plan(plan: Plan, builds: SpecBuilds, machine: Machine) -> Verdict:
    """The verdict on one planned finding (a plan without a case: could not run)."""
    if plan.spec is None or plan.case is None:
        return Verdict(NOT_RUN, detail=plan.why)
    spec, case = plan.spec, plan.case
    library = builds.library(spec.name, case.inst)
    if library is None:
        why = builds.environment.get(spec.name) or "; ".join(f.message for f in builds.by_spec.get(spec.name, []))
        return Verdict(NOT_RUN, detail=f"{spec.name}[{case.inst}] did not build: {why or 'no library'}"[:300])
    libraries = {case.inst: library}
    check = CHECKS[plan.finding.code]
    job = Job.of(
        spec,
        "cases" if check == COMPARISON else "sanitize",
        libraries,
        tool="" if check == COMPARISON else check,
        exports=builds.exports_of(spec.name, libraries),
        cases=[case.to_json()],
    )
    command = child_command(job, machine.workdir, f"{spec.name}-{plan.finding.code}-{plan.finding.line}")
    judge = _compared if check == COMPARISON else _sanitized
    verdict = judge(plan, command, check, machine)
    return Verdict(verdict.outcome, verdict.by, machine.name, today(), verdict.detail, f"{spec.name}[{case.label}]")


def _sanitized(plan: Plan, command: list[str], tool: str, machine: Machine) -> Verdict:
    """Under `tool`: confirmed by a report on the finding's kernel."""
    assert plan.finding.witness is not None
    kernel = plan.finding.witness.kernel
    # racecheck (~2000x slower) instruments the finding's kernel alone
    kernels = [kernel] if tool == "racecheck" and kernel else []
    run = run_tool(
        tool, command, timeout=machine.timeout, kernels=kernels, api_errors=False, env=child_env(machine.gpu)
    )
    on_kernel = [r for r in run.reports if not kernel or r.kernel == kernel]
    if on_kernel:
        return Verdict(CONFIRMED, tool, detail=_report_line(on_kernel[0]))
    failure = sanitizer_failure(run, reported=bool(run.reports))
    if failure is not None or run.stopped:
        return Verdict(NOT_RUN, detail=failure or "stopped")
    if run.timed_out:
        return Verdict(NOT_RUN, detail=f"{tool} did not finish within {machine.timeout:g} s")
    rejected = _raised(run.events)
    if rejected:
        return Verdict(NOT_REPRODUCED, tool, detail=f"the launcher rejects the witness's inputs: {rejected}")
    others = f" ({len(run.reports)} report(s) on other kernels)" if run.reports else ""
    fault = f"; the kernel faulted: {run.fault}" if run.fault else ""
    return Verdict(NOT_REPRODUCED, tool, detail=f"{tool} reported nothing on `{kernel}`{others}{fault}")


def _compared(plan: Plan, command: list[str], check: str, machine: Machine) -> Verdict:
    """The case judged by the harness's own checks (the comparison with the reference, the
    NaN check): confirmed by one that fails, or by a fault."""
    exit_ = run_child(command, child_env(machine.gpu), startup_timeout=STARTUP_TIMEOUT, case_timeout=machine.timeout)
    failure = child_failure(exit_)
    if failure is not None:
        return Verdict(NOT_RUN, detail=failure)
    fatal = next((e for e in exit_.events if e["event"] == "fatal"), None)
    if fatal is not None:
        return Verdict(CONFIRMED, "a kernel fault", detail=str(fatal.get("error", "")).splitlines()[0][:300])
    outcomes = _outcomes(exit_.events)
    failed = [o for o in outcomes if not o.passed]
    if failed:
        first = failed[0]
        if first.message.startswith(CALL_RAISED):
            return Verdict(NOT_REPRODUCED, check, detail=f"the launcher rejects the witness's inputs: {first.message}")
        return Verdict(CONFIRMED, _BY_OUTCOME.get(first.code, f"the {first.code} check"), detail=first.message[:300])
    if not outcomes:
        return Verdict(NOT_RUN, detail=exit_.output_tail[-300:] or f"the child ended with status {exit_.returncode}")
    assert plan.spec is not None
    unseen = "" if plan.spec.reference is not None else " (the spec has no reference to compare with)"
    return Verdict(NOT_REPRODUCED, check, detail=f"every check of the case passed{unseen}")


def _outcomes(events: list[dict]) -> list[Outcome]:
    """The outcomes a child's "end" events carry."""
    return [Outcome.from_json(o) for e in events if e["event"] == "end" for o in e["outcomes"]]


def _raised(events: list[dict]) -> str:
    """The first error the call raised in a sanitizer child's case ("" when none did)."""
    return next((o.message for o in _outcomes(events) if o.message.startswith(CALL_RAISED)), "")


def _report_line(report: SanitizerReport) -> str:
    where = f" at {Path(report.path).name}:{report.line}" if report.path and report.line else ""
    return f"{report.kind} in {report.kernel}{where}"[:300]


def confirm_all(
    plans: Sequence[Plan],
    builds: SpecBuilds,
    machine: Machine,
    on_verdict: Callable[[Plan, Verdict], None] = lambda plan, verdict: None,
) -> list[tuple[Plan, Verdict]]:
    """Each plan's verdict, in order, one child at a time (each alone on the GPU)."""
    verdicts = []
    for each in plans:
        verdict = run_plan(each, builds, machine)
        on_verdict(each, verdict)
        verdicts.append((each, verdict))
    return verdicts


def needed_specs(plans: Sequence[Plan]) -> list[KernelSpec]:
    """Each spec a plan runs, narrowed to the instantiations its plans run (one build each)."""
    keys: dict[str, set[str]] = {}
    by_name: dict[str, KernelSpec] = {}
    for each in plans:
        if each.spec is not None and each.case is not None:
            by_name[each.spec.name] = each.spec
            build = each.spec.variant(each.case.inst).build_id
            declared = next(i for i in each.spec.instantiations if i.build_id == build)
            keys.setdefault(each.spec.name, set()).add(declared.key)
    return [spec.narrowed(keys[name]) for name, spec in by_name.items()]


def render_table(rows: Sequence[tuple[Plan, Verdict]]) -> str:
    """finding | witness | verdict, one line each."""
    lines = ["finding | witness | verdict", "--- | --- | ---"]
    for each, verdict in rows:
        finding = each.finding
        witness = finding.witness.describe() if finding.witness is not None else "-"
        where = f"{finding.code} {finding.path}:{finding.line}"
        case = f" [{verdict.case}]" if verdict.case else ""
        lines.append(f"{where} | {witness} | {verdict.summary()}{case}")
    return "\n".join(lines)
