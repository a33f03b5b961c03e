"""The dynamic pipeline: build, run each spec's cases in child processes, sanitize, report.

Isolation: a spec's cases run in a child process (``child.py``) with a per-case timeout.
A fault poisons the child's CUDA context: the child reports it (or dies), and a new child
resumes after the faulting case. A hang is killed; the rest of that instantiation is
skipped. Either way the run goes on with the other kernels, and the fault or hang is a
finding (KD001 / KD002; a bad input that faults is KD301).

Scheduling: a spec's cases are one unit of work; as soon as they end, each of its
compute-sanitizer tools becomes a unit of its own, so the tools of one spec run side by side
(a single spec, as a pytest item runs it, is not four tools in a row).

Stopping: a signal or ``RunOptions.max_time`` calls ``process.stop_all()``; running
children are killed, nothing new starts, and the result holds what finished, with the
unfinished specs named in ``HarnessResult.stopped`` (a stop is never a hang or a fault).

Several GPUs: work units take a GPU slot (``CUDA_VISIBLE_DEVICES`` for the child);
bandwidth runs (KD501) come last, one child per GPU measuring its share of the specs in turn,
so nothing else shares the GPU.
"""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import codes
from ..finding import Finding, Location, Related
from ..paths import display_path
from ..registry import get_rule
from .build import SpecBuilds, build_specs, progress_lines, target_label
from .cases import (
    CHECK_CODE,
    Case,
    CaseKind,
    Outcome,
    plan_bandwidth,
    plan_cases,
    plan_sanitize,
)
from .child import Job
from .environment import child_failure, kernel_fault, running_case, sanitizer_failure
from .process import ChildExit, run_child, stop_all, stopping
from .report import NO_REFERENCE, Cell, Progress, SummaryRow
from .sanitize import report_findings, run_tool
from .spec import KernelSpec

STARTUP_TIMEOUT = 180.0
DEFAULT_PER_GPU = 8
# GPU memory one child may need (a CUDA context, torch, compute-sanitizer's shadow memory):
# no more children share a GPU than its free memory holds
CHILD_MEMORY_MIB = 6144
# a child that failed for an environment reason runs again this much later, once
ENVIRONMENT_RETRY_DELAY = 5.0


@dataclass
class RunOptions:
    timeout: float = 60.0  # seconds one case may run
    sanitize: tuple[str, ...] = ("memcheck", "racecheck", "initcheck", "synccheck")
    sanitize_timeout: float = 600.0  # seconds one tool's run of one spec may take
    bandwidth: bool = True
    bandwidth_floor: float = 0.8
    register_budget: int = 64
    per_kernel_budget: dict[str, int] = field(default_factory=dict)
    include_dirs: tuple[str, ...] = ()  # configured include directories (`include-dirs`)
    jobs: int = 0  # parallel children; 0: DEFAULT_PER_GPU per GPU (fewer on small machines)
    gpus: tuple[str, ...] = ()  # CUDA_VISIBLE_DEVICES values; () : detect
    sanitizer_log_dir: Path | None = None  # keep each tool's raw output here
    max_time: float | None = None  # seconds for the whole run; then stop and report what finished


@dataclass
class SpecRun:
    """Everything one spec produced."""

    spec: KernelSpec
    results: list[tuple[Case, Outcome]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # faults, hangs, sanitizer reports
    notes: dict[tuple[str, str], str] = field(default_factory=dict)  # (inst, column) -> "crash"...
    sanitizer: dict[str, int] = field(default_factory=dict)  # tool -> findings (or -1: did not run)
    hung: set[str] = field(default_factory=set)
    environment: list[str] = field(default_factory=list)  # what failed around the kernel (exit 2)
    complete: bool = True  # False: stopped before its cases or a sanitizer run ended
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)  # sanitizer tools run side by side


@dataclass
class HarnessResult:
    findings: list[Finding]
    rows: list[SummaryRow]
    by_spec: dict[str, list[Finding]] = field(default_factory=dict)
    stopped: list[str] = field(default_factory=list)  # specs the run was stopped before finishing
    environment: list[str] = field(default_factory=list)  # "spec: what failed" (no verdict; exit 2)
    # "spec: why" for the specs this GPU cannot run (``min_arch`` above its architecture)
    not_run: list[str] = field(default_factory=list)


# ----- GPUs -----


def visible_gpus() -> tuple[str, ...]:
    """The GPUs a child may use, as CUDA_VISIBLE_DEVICES values (never initializes CUDA here)."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return tuple(d.strip() for d in env.split(",") if d.strip())
    try:
        listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    return tuple(str(i) for i, line in enumerate(listing.splitlines()) if line.startswith("GPU "))


def _query_gpus(fields: str) -> str | None:
    """nvidia-smi's ``index,FIELDS`` lines, one per GPU (numbers without units); None when
    it cannot be run."""
    try:
        return subprocess.run(
            ["nvidia-smi", f"--query-gpu=index,{fields}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None


def card_arch(gpus: tuple[str, ...]) -> int | None:
    """The oldest architecture among ``gpus`` as in sm_NN (90 for an H100); None when
    nvidia-smi cannot say (then every spec runs)."""
    listing = _query_gpus("compute_cap")
    return None if listing is None else arch_of(listing, gpus)


def gpu_name(gpu: str) -> str:
    """The card's name as nvidia-smi gives it (`NVIDIA H100 80GB HBM3`) for a
    CUDA_VISIBLE_DEVICES value; "a GPU" when nvidia-smi cannot say."""
    for line in (_query_gpus("name") or "").splitlines():
        index, _, name = line.partition(",")
        if index.strip() == gpu and name.strip():
            return name.strip()
    return "a GPU"


def arch_of(listing: str, gpus: tuple[str, ...]) -> int | None:
    """The oldest architecture of ``gpus`` in nvidia-smi's ``index, compute_cap`` lines."""
    found = []
    for line in listing.splitlines():
        index, _, capability = (part.strip() for part in line.partition(","))
        major, _, minor = capability.partition(".")
        if index in gpus and major.isdigit() and minor.isdigit():
            found.append(int(major) * 10 + int(minor))
    return min(found) if found else None


def unsupported(spec: KernelSpec, arch: int | None) -> str | None:
    """Why ``spec`` does not run on a card of ``arch`` (None: it runs)."""
    if spec.min_arch is None or arch is None or arch >= spec.min_arch:
        return None
    return f"{spec.name}: not run: it needs sm_{spec.min_arch} or newer, the GPU is sm_{arch}"


def children_fitting(gpus: tuple[str, ...]) -> int:
    """How many children the emptiest of ``gpus`` holds (CHILD_MEMORY_MIB each); a large
    number when nvidia-smi cannot say."""
    listing = _query_gpus("memory.free")
    if listing is None:
        return 1 << 10
    free = {}
    for line in listing.splitlines():
        index, _, mib = line.partition(",")
        if mib.strip().isdigit():
            free[index.strip()] = int(mib)
    known = [free[g] for g in gpus if g in free]
    return max(1, min(known) // CHILD_MEMORY_MIB) if known else 1 << 10


class GpuSlots:
    """A pool of (GPU, slot) tokens: at most ``per_gpu`` children on each GPU."""

    def __init__(self, gpus: tuple[str, ...], per_gpu: int):
        self._free: queue.Queue[str] = queue.Queue()
        for _ in range(per_gpu):
            for gpu in gpus:
                self._free.put(gpu)

    @contextmanager
    def take(self) -> Iterator[str]:
        gpu = self._free.get()
        try:
            yield gpu
        finally:
            self._free.put(gpu)


# ----- findings -----


def launcher_location(spec: KernelSpec) -> Location:
    """The kernel source at the launcher's definition (``void symbol(``), else line 1."""
    source = Path(spec.spec_path).parent / spec.source
    return Location(display_path(source), _line_of(source, f" {spec.launcher_name}("))


def spec_related(spec: KernelSpec) -> tuple[Related, ...]:
    path = Path(spec.spec_path)
    return (Related(Location(display_path(path), _line_of(path, f'"{spec.name}"')), "the kernel's spec"),)


def _line_of(path: Path, marker: str) -> int:
    """The line where `marker` first appears in `path`; 1 where it does not (or no file)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return 1
    return text.count("\n", 0, max(text.find(marker), 0)) + 1


def make_finding(spec: KernelSpec, code: str, message: str, detail: str = "") -> Finding:
    rule = get_rule(code)
    assert rule is not None, f"{code} is not declared in src/kernel_check/rules/"
    return Finding(code, message, launcher_location(spec), rule.meta.severity, spec_related(spec), None, detail)


def case_findings(spec: KernelSpec, results: list[tuple[Case, Outcome]]) -> list[Finding]:
    """One finding per (instantiation, code) that failed, naming its worst case."""
    failed: dict[tuple[str, str], list[tuple[Case, Outcome]]] = {}
    for case, outcome in results:
        if not outcome.passed:
            failed.setdefault((case.inst, outcome.code), []).append((case, outcome))
    findings = []
    for (inst, code), items in failed.items():
        worst_case, worst = max(items, key=lambda item: item[1].metric or 0.0)
        more = f" (and {len(items) - 1} more cases)" if len(items) > 1 else ""
        message = f"{spec.name}[{inst}] {worst_case.label}: {worst.message}{more}"
        detail = "\n".join(f"{c.label}: {o.message}" + (f"\n{o.detail}" if o.detail else "") for c, o in items)
        findings.append(make_finding(spec, code, message, detail))
    return findings


# ----- one spec's cases -----


def child_command(job: Job, directory: Path, name: str) -> list[str]:
    path = directory / f"{name}.json"
    job.write(path)
    return [sys.executable, "-m", "kernel_check.harness.child", str(path)]


def child_env(gpu: str) -> dict[str, str]:
    env = dict(os.environ)
    env["CUDA_VISIBLE_DEVICES"] = gpu
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _collect(exit_: ChildExit, by_index: dict[int, Case], run: SpecRun) -> None:
    for event in exit_.events:
        if event["event"] == "end":
            case = by_index[event["case"]]
            run.results.extend((case, Outcome.from_json(o)) for o in event["outcomes"])


def _fault_message(exit_: ChildExit) -> str:
    fatal = next((e for e in exit_.events if e["event"] == "fatal"), None)
    if fatal is not None:
        return fatal["error"].strip().splitlines()[0][:300]
    lines = [ln for ln in exit_.output if ln.strip()]
    return f"the process died (exit status {exit_.returncode})" + (f": {lines[-1][:300]}" if lines else "")


def _record_stop(run: SpecRun, case: Case, exit_: ChildExit, plan: list[Case], skip: set[int], timeout: float) -> None:
    """Turn a hang or a fault at ``case`` into results/findings; mark what to skip after it."""
    spec = run.spec
    if exit_.timed_out:
        run.hung.add(case.inst)
        run.notes[(case.inst, CHECK_CODE[case.kind])] = "hang"
        run.findings.append(
            make_finding(
                spec,
                codes.KERNEL_HANG,
                f"{spec.name}[{case.inst}] {case.label}: no progress for {timeout:g} s; "
                f"killed, the rest of this instantiation skipped",
                exit_.output_tail,
            )
        )
        skip.update(c.index for c in plan if c.inst == case.inst)
        return
    message = _fault_message(exit_)
    if case.kind is CaseKind.BAD_INPUT:
        run.results.append((case, Outcome(codes.BAD_INPUT_NOT_REJECTED, False, message, detail=exit_.output_tail)))
        return
    run.notes[(case.inst, CHECK_CODE[case.kind])] = "crash"
    run.findings.append(
        make_finding(
            spec,
            codes.KERNEL_FAULT,
            f"{spec.name}[{case.inst}] {case.label}: the kernel faulted: {message}",
            exit_.output_tail,
        )
    )
    # the kernel faults on valid input: only the bad-input checks still say something
    skip.update(c.index for c in plan if c.inst == case.inst and c.kind is not CaseKind.BAD_INPUT)


def run_child_retrying(command: list[str], env: dict[str, str], **kwargs: Any) -> tuple[ChildExit, str | None]:
    """``run_child``, once more after a pause when the environment failed (a GPU busy with
    other children); the exit and what still failed in the environment (None: nothing)."""
    exit_ = run_child(command, env, **kwargs)
    if child_failure(exit_) is None or stopping():
        return exit_, None
    time.sleep(ENVIRONMENT_RETRY_DELAY)
    exit_ = run_child(command, env, **kwargs)
    return exit_, child_failure(exit_)


def run_cases(
    run: SpecRun, builds: SpecBuilds, options: RunOptions, gpu: str, workdir: Path, progress: Progress
) -> None:
    spec = run.spec
    plan = plan_cases(spec)
    by_index = {c.index: c for c in plan}
    libraries = builds.libraries.get(spec.name, {})
    skip: set[int] = {c.index for c in plan if c.inst not in libraries}

    def on_event(event: dict) -> None:
        if event["event"] == "begin":
            progress.status(f"{spec.name}: {by_index[event['case']].label}")

    start, attempt = 0, 0
    while start < len(plan):
        job = Job.of(
            spec,
            "cases",
            libraries,
            probe=builds.probe,
            start=start,
            skip=sorted(skip),
            bandwidth_floor=options.bandwidth_floor,
            exports=builds.exports_of(spec.name, libraries),
        )
        command = child_command(job, workdir, f"{spec.name}-cases-{attempt}")
        exit_, failure = run_child_retrying(
            command, child_env(gpu), startup_timeout=STARTUP_TIMEOUT, case_timeout=options.timeout, on_event=on_event
        )
        if failure is not None:
            run.environment.append(f"{spec.name}: cases: {failure}")
            run.complete = False
            return
        _collect(exit_, by_index, run)
        attempt += 1
        if exit_.stopped:
            run.complete = False
            return
        if exit_.returncode == 0 and not exit_.timed_out:
            return
        if exit_.running_case is None:  # the harness itself failed (spec, import, tvm-ffi)
            error = next((e["error"] for e in exit_.events if e["event"] == "error"), exit_.output_tail)
            run.findings.append(
                make_finding(
                    spec,
                    codes.KERNEL_FAULT,
                    f"{spec.name}: the harness child failed before its cases ran (exit {exit_.returncode})",
                    error,
                )
            )
            return
        _record_stop(run, by_index[exit_.running_case], exit_, plan, skip, options.timeout)
        start = exit_.running_case + 1


# ----- sanitizers and bandwidth -----


def global_kernel_names(spec: KernelSpec) -> list[str]:
    """``__global__`` functions defined in the spec's source, also through a macro that
    expands to ``__global__`` (``#define KERNEL __global__ __launch_bounds__(256)``)."""
    source = Path(spec.spec_path).parent / spec.source
    try:
        text = source.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    macros = re.findall(r"^\s*#\s*define\s+(\w+)\b[^\n]*\b__global__\b", text, re.MULTILINE)
    qualifier = "|".join(["__global__", *map(re.escape, macros)])
    pattern = re.compile(rf"\b(?:{qualifier})\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(?:[\w:<>]+\s+)*?(\w+)\s*\(")
    code = re.sub(r"^\s*#\s*define\b[^\n]*$", "", text, flags=re.MULTILINE)  # the macros' own lines
    return sorted(set(pattern.findall(code)))


def spec_kernel_names(spec: KernelSpec, builds: SpecBuilds | None) -> list[str]:
    """The kernels a sanitizer report may belong to: what the spec's builds hold (ptxas
    names every entry), plus what its source declares (a build from an older cache)."""
    built = builds.kernels.get(spec.name, set()) if builds is not None else set()
    return sorted(built | set(global_kernel_names(spec)))


def source_dirs(spec: KernelSpec) -> list[Path]:
    """Where a sanitizer report's bare file name may live: the kernel's folder, the headers."""
    from ..includes import LIBRARY, sgl_include_dirs

    root = Path(spec.spec_path).parent
    source = root / spec.source
    headers = sgl_include_dirs(source, [root / d for d in spec.include_dirs])
    return [source.parent, root, *(d / LIBRARY for d in headers)]


def sanitizer_tools(run: SpecRun, libraries: dict[str, str], options: RunOptions) -> list[str]:
    """The tools that have something to run for this spec (none for a hung instantiation)."""
    live = {i for i in libraries if i not in run.hung}
    return [t for t in options.sanitize if live and plan_sanitize(run.spec, t)]


def run_sanitizer(
    run: SpecRun, tool: str, lineinfo: SpecBuilds, options: RunOptions, gpu: str, workdir: Path, progress: Progress
) -> None:
    """One compute-sanitizer tool over one spec's small cases, in its own child process."""
    spec = run.spec
    kernels = spec_kernel_names(spec, lineinfo)
    libraries = lineinfo.libraries.get(spec.name, {})
    live = {i: lib for i, lib in libraries.items() if i not in run.hung}
    if not live or not plan_sanitize(spec, tool):
        return
    # racecheck (~2000x slower) instruments only this spec's kernels; initcheck must see
    # every kernel, or the writes of torch's fill kernels go unseen and inputs look uninitialized
    filters = kernels if tool == "racecheck" else []
    job = Job.of(spec, "sanitize", live, tool=tool, exports=lineinfo.exports_of(spec.name, live))
    command = child_command(job, workdir, f"{spec.name}-{tool}")
    progress.status(f"{spec.name}: {tool}")
    for attempt in range(2):  # once more when the environment failed (a busy GPU, a sanitizer that did not run)
        if attempt:
            time.sleep(ENVIRONMENT_RETRY_DELAY)
        tool_run = run_tool(
            tool, command, timeout=options.sanitize_timeout, kernels=filters, api_errors=False, env=child_env(gpu)
        )
        found = report_findings(
            tool_run.reports,
            fallback=launcher_location(spec),
            context=spec.name,
            kernels=kernels,
            search=source_dirs(spec),
        )
        failure = sanitizer_failure(tool_run, reported=bool(found))
        if failure is None or tool_run.stopped:
            break
    if tool_run.stopped or failure is not None:
        run.complete = False
        if failure is not None:
            with run.lock:
                run.environment.append(f"{spec.name}: {tool}: {failure}")
        return
    if options.sanitizer_log_dir is not None:
        options.sanitizer_log_dir.mkdir(parents=True, exist_ok=True)
        (options.sanitizer_log_dir / f"{spec.name}-{tool}.txt").write_text(tool_run.output)
    fault = kernel_fault(tool_run)
    if fault and not found:
        found.append(
            make_finding(
                spec,
                codes.KERNEL_FAULT,
                f"{spec.name}: the kernel faulted under {tool} while running {running_case(tool_run.output)}: "
                f"{fault}; the rest of its {tool} cases did not run",
                tool_run.output[-4000:],
            )
        )
    if tool_run.timed_out:
        found.append(
            make_finding(
                spec,
                codes.KERNEL_HANG,
                f"{spec.name}: {tool} run did not finish within {options.sanitize_timeout:g} s",
                tool_run.output[-4000:],
            )
        )
    with run.lock:
        run.findings.extend(found)
        run.sanitizer[tool] = len(found)
    progress.finished(f"{spec.name}: {tool} " + (f"{len(found)} finding(s)" if found else "clean"))


def run_bandwidth(run: SpecRun, builds: SpecBuilds, options: RunOptions, gpu: str, workdir: Path) -> None:
    spec = run.spec
    plan = plan_bandwidth(spec)
    live = {i: lib for i, lib in builds.libraries.get(spec.name, {}).items() if i not in run.hung}
    if not plan or not live:
        return
    job = Job.of(
        spec, "bandwidth", live, bandwidth_floor=options.bandwidth_floor, exports=builds.exports_of(spec.name, live)
    )
    exit_ = run_child(
        child_command(job, workdir, f"{spec.name}-bandwidth"),
        child_env(gpu),
        startup_timeout=STARTUP_TIMEOUT,
        case_timeout=options.timeout,
    )
    _collect(exit_, {c.index: c for c in plan}, run)


def run_bandwidth_batch(runs: list[SpecRun], builds: SpecBuilds, options: RunOptions, gpu: str, workdir: Path) -> None:
    """KD501 for several specs in one child (one start-up, one copy-bandwidth measurement);
    the specs that child did not finish are measured again one by one."""
    batch = []
    for run in runs:
        live = {i: lib for i, lib in builds.libraries.get(run.spec.name, {}).items() if i not in run.hung}
        if plan_bandwidth(run.spec) and live:
            batch.append((run, live))
    if not batch:
        return
    job = Job.of(
        batch[0][0].spec,
        "bandwidth",
        batch[0][1],
        bandwidth_floor=options.bandwidth_floor,
        batch=[
            {
                "spec_path": r.spec.spec_path,
                "spec_name": r.spec.name,
                "libraries": live,
                "exports": builds.exports_of(r.spec.name, live),
                "instantiations": r.spec.instantiation_keys,
            }
            for r, live in batch
        ],
    )
    exit_ = run_child(
        child_command(job, workdir, "bandwidth-batch"),
        child_env(gpu),
        startup_timeout=STARTUP_TIMEOUT,
        case_timeout=options.timeout,
    )
    by_name = {r.spec.name: r for r, _ in batch}
    done: set[str] = set()
    if exit_.stopped:
        for run, _ in batch:
            run.complete = False
    for event in exit_.events:
        owner = by_name.get(event.get("spec", ""))
        if event["event"] == "end" and owner is not None:
            case = {c.index: c for c in plan_bandwidth(owner.spec)}[event["case"]]
            owner.results.extend((case, Outcome.from_json(o)) for o in event["outcomes"])
        elif event["event"] == "spec-done" and owner is not None:
            done.add(owner.spec.name)
    for run, _ in batch:
        if run.spec.name not in done and not exit_.stopped:
            run.results[:] = [(c, o) for c, o in run.results if c.kind is not CaseKind.BANDWIDTH]
            run_bandwidth(run, builds, options, gpu, workdir)


# ----- the whole run -----


def summary_rows(runs: list[SpecRun], builds: SpecBuilds, tools: tuple[str, ...]) -> list[SummaryRow]:
    rows = []
    for run in runs:
        for inst in run.spec.variants:
            row = SummaryRow(target_label(run.spec, inst) + ("" if run.complete else " (stopped)"))
            if run.spec.reference is None:
                row.cell(codes.RESULT_MISMATCH).note = NO_REFERENCE
            built = builds.library(run.spec.name, inst.id) is not None
            row.cell("build").merge(built, None)
            for case, outcome in run.results:
                if case.inst == inst.id:
                    row.cell(outcome.code).merge(outcome.passed, outcome.metric)
                    if outcome.passed and outcome.message.startswith("inconclusive"):
                        row.cell(outcome.code).note = "n/a"
                    elif outcome.code == codes.BANDWIDTH_BELOW_FLOOR and outcome.metric is not None:
                        row.cell(codes.BANDWIDTH_BELOW_FLOOR).note = f"{outcome.metric:.0%}" + (
                            "" if outcome.passed else " low"
                        )
            for (note_inst, column), note in run.notes.items():
                if note_inst == inst.id:
                    row.cell(column).note = note
            for tool in tools:
                if built and tool in run.sanitizer:
                    row.cells[tool] = Cell(
                        passed=run.sanitizer[tool] == 0,
                        note="" if run.sanitizer[tool] == 0 else f"FAIL {run.sanitizer[tool]}",
                    )
            rows.append(row)
    return rows


def _cases_task(
    run: SpecRun, builds: SpecBuilds, options: RunOptions, slots: GpuSlots, workdir: Path, progress: Progress
) -> None:
    with slots.take() as gpu:
        run_cases(run, builds, options, gpu, workdir, progress)
    failed = sum(1 for _, o in run.results if not o.passed) + len(run.findings)
    verdict = f"{failed} failure(s)" if failed else "passed"
    progress.finished(f"{run.spec.name}: cases " + (verdict if run.complete else f"stopped ({verdict} so far)"))


def _sanitizer_task(
    run: SpecRun,
    tool: str,
    lineinfo: SpecBuilds,
    options: RunOptions,
    slots: GpuSlots,
    workdir: Path,
    progress: Progress,
) -> None:
    with slots.take() as gpu:
        run_sanitizer(run, tool, lineinfo, options, gpu, workdir, progress)


def _run_all(
    runs: list[SpecRun],
    builds: SpecBuilds,
    lineinfo: SpecBuilds | None,
    options: RunOptions,
    slots: GpuSlots,
    workers: int,
    workdir: Path,
    progress: Progress,
) -> None:
    """Each spec's cases, then (as soon as they end) each of its sanitizer tools, all as
    separate units on the GPU slots: a spec's tools run side by side, next to other specs."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending: dict[Future, tuple[SpecRun, bool]] = {
            pool.submit(_cases_task, run, builds, options, slots, workdir, progress): (run, True) for run in runs
        }
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                run, was_cases = pending.pop(future)
                future.result()
                if not was_cases or lineinfo is None:
                    continue
                libraries = lineinfo.libraries.get(run.spec.name, {})
                tools = sanitizer_tools(run, libraries, options)
                if tools and stopping():
                    run.complete = False
                    continue
                for tool in options.sanitize:
                    if tool not in tools:
                        progress.finished(f"{run.spec.name}: {tool} skipped")
                for tool in tools:
                    task = pool.submit(_sanitizer_task, run, tool, lineinfo, options, slots, workdir, progress)
                    pending[task] = (run, False)


def run_specs(
    specs: list[KernelSpec],
    options: RunOptions,
    progress: Progress,
    on_builds: Callable[[SpecBuilds], None] | None = None,
) -> HarnessResult:
    """Build, run, sanitize and measure every spec; the findings of all of it."""
    progress.add(len(specs) + 1)  # one module per spec, and the probe
    # one build serves the cases and the sanitizers: -lineinfo adds line tables, not code
    # (the same SASS, the same registers), and building twice was half of a cold run
    builds = build_specs(
        specs,
        lineinfo=bool(options.sanitize),
        with_probe=True,
        on_done=progress_lines(progress),
        register_budget=options.register_budget,
        per_kernel_budget=options.per_kernel_budget,
        include_dirs=options.include_dirs,
    )
    if on_builds is not None:
        on_builds(builds)
    lineinfo = builds if options.sanitize else None
    gpus = options.gpus or visible_gpus() or ("0",)
    default_jobs = len(gpus) * min(DEFAULT_PER_GPU, max(2, (os.cpu_count() or 2) // 2))
    per_gpu = max(1, min((options.jobs or default_jobs) // len(gpus), children_fitting(gpus)))
    slots = GpuSlots(gpus, per_gpu)
    arch = card_arch(gpus)
    why_not = {spec.name: unsupported(spec, arch) for spec in specs}
    not_run = [why for why in why_not.values() if why is not None]
    runs = [SpecRun(spec) for spec in specs if why_not[spec.name] is None]
    for run in runs:
        if run.spec.name in builds.environment:
            run.environment.append(f"{run.spec.name}: build: {builds.environment[run.spec.name]}")
    progress.add(len(runs) * (1 + len(options.sanitize)))
    with tempfile.TemporaryDirectory(prefix="kernel-check-") as tmp, _time_limit(options.max_time):
        workdir = Path(tmp)
        _run_all(runs, builds, lineinfo, options, slots, per_gpu * len(gpus), workdir, progress)
        if options.bandwidth and not stopping():
            measured = [r for r in runs if r.spec.memory_bound]
            # one child per GPU measures its share of the specs, alone on that GPU
            shares = [measured[i :: len(gpus)] for i in range(len(gpus))]

            def measure(gpu: str, share: list[SpecRun]) -> None:
                run_bandwidth_batch(share, builds, options, gpu, workdir)

            with ThreadPoolExecutor(max_workers=len(gpus)) as pool:
                list(pool.map(measure, gpus, shares))
    # a spec this GPU cannot run still reports its build (a compile error, registers, spills)
    by_spec = {spec.name: list(builds.by_spec.get(spec.name, [])) for spec in specs}
    for run in runs:
        by_spec[run.spec.name] += case_findings(run.spec, run.results) + run.findings
    findings = sorted((f for fs in by_spec.values() for f in fs), key=Finding.sort_key)
    environment = [line for run in runs for line in run.environment]
    stopped = [run.spec.name for run in runs if not run.complete and not run.environment]
    rows = summary_rows(runs, builds, options.sanitize)
    return HarnessResult(findings, rows, by_spec, stopped, environment, not_run)


@contextmanager
def _time_limit(seconds: float | None) -> Iterator[None]:
    """Stop the run (as a signal would) once ``seconds`` have passed."""
    if seconds is None:
        yield
        return
    timer = threading.Timer(seconds, stop_all)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
