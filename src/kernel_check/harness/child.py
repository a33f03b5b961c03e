"""The child process that runs one spec's cases: ``python -m kernel_check.harness.child JOB``.

JOB is a JSON file written by ``run.py`` (see ``Job``). The child reports on stdout, one
event per line after ``EVENT_PREFIX`` (other output, a kernel's printf or
compute-sanitizer's report, passes through untouched):

- ``{"event": "begin", "case": i}`` before case i;
- ``{"event": "end", "case": i, "outcomes": [...]}`` after it;
- ``{"event": "fatal", "case": i, "error": "..."}`` when the CUDA context is poisoned
  (the child then exits with FATAL_EXIT and the parent resumes after case i);
- ``{"event": "error", "error": "..."}`` when the harness itself cannot go on.
"""

from __future__ import annotations

import json
import sys
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .protocol import CASE_MARKER, EVENT_PREFIX

if TYPE_CHECKING:  # types only: the functions below import what they run
    from .cases import Case, Outcome
    from .execute import CaseContext
    from .spec import KernelSpec

FATAL_EXIT = 3
ERROR_EXIT = 4


@dataclass
class Job:
    """What one child runs: which spec, which plan, from which case, with which builds."""

    spec_path: str
    spec_name: str
    mode: str  # "cases" | "sanitize" | "bandwidth"
    libraries: dict[str, str]  # instantiation id -> built library
    probe: str = ""  # the harness's producer-kernel library ("" when not needed)
    tool: str = ""  # the compute-sanitizer tool, in sanitize mode
    start: int = 0
    skip: list[int] = field(default_factory=list)
    bandwidth_floor: float = 0.8
    # bandwidth mode only: several specs in one child, each {"spec_path", "spec_name", "libraries", "exports",
    # "instantiations"}
    batch: list[dict] = field(default_factory=list)
    # instantiation id -> the name its library exports it under (default: the spec's export)
    exports: dict[str, str] = field(default_factory=dict)
    # the keys (``Instantiation.key``) of the instantiations the parent's spec holds, which
    # may be fewer than its file declares (``--shard``): the child plans the same cases from
    # them, so that case numbers agree; None: every one
    instantiations: list[str] | None = None
    # cases planned outside the spec (`Case.to_json`: a static finding's witness, confirm.py),
    # run instead of the mode's plan
    cases: list[dict] = field(default_factory=list)

    @classmethod
    def of(cls, spec: KernelSpec, mode: str, libraries: dict[str, str], **fields: Any) -> Job:
        """A job over ``spec`` as the parent holds it."""
        return cls(spec.spec_path, spec.name, mode, libraries, instantiations=spec.instantiation_keys, **fields)

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self)))

    @classmethod
    def read(cls, path: Path) -> Job:
        return cls(**json.loads(path.read_text()))


def emit(event: str, **data: object) -> None:
    print(EVENT_PREFIX + json.dumps({"event": event, **data}), flush=True)


def plan(job: Job, spec: KernelSpec) -> list[Case]:
    from .cases import Case, plan_bandwidth, plan_cases, plan_sanitize

    if job.cases:
        return [Case.from_json(c) for c in job.cases]
    if job.mode == "sanitize":
        return plan_sanitize(spec, job.tool)
    if job.mode == "bandwidth":
        return plan_bandwidth(spec)
    return plan_cases(spec)


def _context(job: Job, spec: KernelSpec) -> CaseContext:
    import tvm_ffi

    from .execute import CaseContext

    modules = {lib: tvm_ffi.load_module(lib) for lib in set(job.libraries.values())}
    kernels = {inst: getattr(modules[lib], job.exports.get(inst, spec.export)) for inst, lib in job.libraries.items()}
    probe = tvm_ffi.load_module(job.probe) if job.probe else None
    return CaseContext(spec=spec, kernels=kernels, probe=probe, bandwidth_floor=job.bandwidth_floor)


# how an outcome of a call that raised begins (a launcher's rejection reads so too)
CALL_RAISED = "the call raised"


def raised_outcome(case: Case, exc: Exception) -> Outcome:
    from .cases import CHECK_CODE, Outcome

    text = str(exc).strip() or type(exc).__name__
    return Outcome(
        CHECK_CODE[case.kind], False, f"{CALL_RAISED}: {text.splitlines()[0][:300]}", detail=traceback.format_exc()
    )


def load_spec(spec_path: str, name: str, keys: list[str] | None) -> KernelSpec:
    """The spec the parent runs: reloaded from its file, narrowed to ``keys`` (see ``Job``)."""
    from .discover import find_spec

    spec = find_spec(spec_path, name)
    return spec if keys is None else spec.narrowed(set(keys))


def run(job: Job) -> int:
    if job.batch:
        return run_batch(job)
    spec = load_spec(job.spec_path, job.spec_name, job.instantiations)
    return run_spec(job, spec, _context(job, spec))


def run_batch(job: Job) -> int:
    """Several specs' bandwidth cases, one after the other; events name their spec."""
    from dataclasses import replace

    copy_bandwidth = None
    for item in job.batch:
        one = replace(
            job,
            spec_path=item["spec_path"],
            spec_name=item["spec_name"],
            libraries=item["libraries"],
            exports=item.get("exports", {}),
            instantiations=item.get("instantiations"),
            batch=[],
        )
        spec = load_spec(one.spec_path, one.spec_name, one.instantiations)
        ctx = _context(one, spec)
        ctx._copy_bandwidth = copy_bandwidth
        status = run_spec(one, spec, ctx, tag=spec.name)
        if status != 0:
            return status
        copy_bandwidth = ctx._copy_bandwidth
        emit("spec-done", spec=spec.name)
    return 0


def run_spec(job: Job, spec: KernelSpec, ctx: CaseContext, tag: str = "") -> int:
    from .environment import CASE_OUT_OF_MEMORY, environment_failure, is_out_of_memory
    from .execute import ContextPoisoned, run_case, synchronize

    extra = {"spec": tag} if tag else {}
    for case in plan(job, spec)[job.start :]:
        if case.index in job.skip or case.inst not in ctx.kernels:
            continue
        emit("begin", case=case.index, **extra)
        if job.mode == "sanitize":
            print(CASE_MARKER + f"{case.inst} {case.label}", flush=True)
        try:
            try:
                outcomes = run_case(ctx, case)
            except ContextPoisoned:
                raise
            except Exception as exc:  # a valid call that raised, or a reference that did
                if is_out_of_memory(exc):  # the GPU is full: the machine failed, not the kernel
                    emit("error", error=f"{CASE_OUT_OF_MEMORY} ({case.label}): {str(exc).splitlines()[0]}")
                    return ERROR_EXIT
                if environment_failure(str(exc)):  # no usable GPU or driver: no case can run here
                    emit("error", error=f"{case.label}: {str(exc).splitlines()[0]}")
                    return ERROR_EXIT
                synchronize()
                outcomes = [raised_outcome(case, exc)]
        except ContextPoisoned as exc:
            emit("fatal", case=case.index, error=str(exc), **extra)
            return FATAL_EXIT
        emit("end", case=case.index, outcomes=[o.to_json() for o in outcomes], **extra)
    return 0


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m kernel_check.harness.child JOB.json", file=sys.stderr)
        return ERROR_EXIT
    try:
        return run(Job.read(Path(argv[0])))
    except Exception:  # the parent turns this into a finding that names the spec
        emit("error", error=traceback.format_exc())
        return ERROR_EXIT


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
