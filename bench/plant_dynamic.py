#!/usr/bin/env python3
"""Recall of the dynamic harness on real kernels: unedited drafts, one planted bug at a time.

    python bench/plant_dynamic.py PLANT_DIR --out OUT                 # on a GPU machine
    python bench/plant_dynamic.py PLANT_DIR --out OUT --dry-run       # no GPU: draft, plant, plan
    python bench/plant_dynamic.py PLANT_DIR --out OUT --compile-only  # no GPU: every variant built

PLANT_DIR holds the kernels and what to plant into them (nothing of them is in this
repository):

* `kernels/NAME/`: a copy of one real kernel with the headers of its own tree it needs;
* `kernels.json`: NAME -> {"source": the file to draft, relative to `kernels/NAME/`,
  "launcher": the launcher to draft (`spec new --launcher`), "origin": where it comes from,
  optionally "defines": the macros the kernel's own build passes (`spec new -D`, as
  FlashInfer's JIT defines `FLASHINFER_ENABLE_F16`, without which its dtype dispatch has no
  case)};
* `plantings.json`: a list of {"kernel", "class", "file", "line", "before", "after", "why"}:
  one defect, a textual edit of `file` (relative to `kernels/NAME/`) where `before` starts
  on `line` (1-based). `class` is one of `CLASSES`.

For each kernel the script drafts a spec with the installed `kernel-check spec new` (the
draft is never edited), then runs `kernel-check test` on the kernel as it is and on each
planted variant (a copy of the kernel and its draft with one planting applied), in two
modes:

* `plain`: the draft as written (no reference: KD102-KD104, KD301, KD401-KD403, the
  sanitizers and the `safe` value profiles);
* `against`: the same, plus `--against HEAD` in a git repository whose HEAD is the kernel
  without the planting, so KD101 compares with the unplanted build (a developer's change
  checked against the base branch).

A planted variant is *flagged* when its run reports a finding the unplanted run of the same
mode did not (findings compared by code and message, numbers and paths left out). It is
`unbuilt` when the unplanted kernel does not build as drafted (KC600: nothing ran), and
`no-draft` when `spec new` wrote no spec. Every finding of an unplanted run is a *false
finding* unless the kernel really has that defect, which the report leaves to a reader. A run
that stops on an environment error, a spec that does not load or the time budget is `error`,
never a verdict.

The drafts are written `--draft-parallel` at a time; as each is done, its variants join a
pool of runs (`--parallel` `kernel-check test` processes at a time, each with `--jobs`) in
the first mode, and the second mode's runs join once every kernel is drafted. No run starts
after `--deadline` seconds (counted from the start), and each gets `--max-time` so that it
ends by then. `--max-instantiations K` runs only the first K
instantiations of a draft (through a spec file that loads the draft and keeps K of them:
the draft's guesses are unchanged). The results go to OUT/plant_dynamic.json, one folder of
logs per kernel, and a table on stdout.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path

CLASSES = ("memory", "uninit", "unwritten", "nan")
MODES = ("plain", "against")
UNPLANTED = "unplanted"
NO_DRAFT = "no-draft"
BUILD_FAILED = "KC600"  # the unplanted kernel does not build as drafted: nothing was tested
# flagged: a new finding; no: none; unbuilt: the draft does not build; no-draft: `spec new`
# wrote nothing; error: a run that gave no verdict (environment, time budget, broken spec)
VERDICTS = ("yes", "no", "unbuilt", NO_DRAFT, "error")
DRAFT_TIMEOUT_S = 900
GIT_IDENTITY = ("-c", "user.name=plant-dynamic", "-c", "user.email=plant-dynamic@localhost")


class PlantError(Exception):
    """A kernels.json or plantings.json entry that cannot be used: one line."""


# -- what the plant folder declares ----------------------------------------------------------------
@dataclass(frozen=True)
class Kernel:
    name: str
    source: str  # relative to kernels/NAME/
    launcher: str
    origin: str = ""
    defines: tuple[str, ...] = ()  # NAME=VALUE, passed to `spec new -D`


@dataclass(frozen=True)
class Planting:
    kernel: str
    defect: str  # one of CLASSES
    file: str  # relative to kernels/NAME/
    line: int  # 1-based line where `before` starts
    before: str
    after: str
    why: str = ""

    @property
    def variant(self) -> str:
        return self.defect


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PlantError(f"{path}: cannot read: {exc.strerror}") from exc
    except json.JSONDecodeError as exc:
        raise PlantError(f"{path}: not JSON: {exc}") from exc


def load_kernels(plant_dir: Path) -> list[Kernel]:
    path = plant_dir / "kernels.json"
    data = _read_json(path)
    if not isinstance(data, dict):
        raise PlantError(f"{path}: expected an object NAME -> {{source, launcher}}")
    kernels = []
    for name, entry in data.items():
        if not isinstance(entry, dict) or not {"source", "launcher"} <= entry.keys():
            raise PlantError(f"{path}: {name}: needs 'source' and 'launcher'")
        if not (plant_dir / "kernels" / name / entry["source"]).is_file():
            raise PlantError(f"{path}: {name}: no file kernels/{name}/{entry['source']}")
        defines = entry.get("defines", [])
        if not isinstance(defines, list) or not all(isinstance(d, str) and d for d in defines):
            raise PlantError(f"{path}: {name}: 'defines' must be a list of NAME=VALUE strings")
        kernels.append(Kernel(name, entry["source"], entry["launcher"], entry.get("origin", ""), tuple(defines)))
    return kernels


def load_plantings(plant_dir: Path, kernels: Iterable[Kernel]) -> list[Planting]:
    path = plant_dir / "plantings.json"
    data = _read_json(path)
    if not isinstance(data, list):
        raise PlantError(f"{path}: expected a list of plantings")
    known = {k.name for k in kernels}
    plantings = []
    seen: set[tuple[str, str]] = set()
    for index, entry in enumerate(data):
        where = f"{path}: entry {index}"
        try:
            planting = Planting(
                entry["kernel"],
                entry["class"],
                entry["file"],
                int(entry["line"]),
                entry["before"],
                entry["after"],
                entry.get("why", ""),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise PlantError(f"{where}: needs kernel, class, file, line, before, after ({exc})") from exc
        if planting.kernel not in known:
            raise PlantError(f"{where}: unknown kernel {planting.kernel!r}")
        if planting.defect not in CLASSES:
            raise PlantError(f"{where}: class {planting.defect!r} is none of {', '.join(CLASSES)}")
        if (planting.kernel, planting.variant) in seen:
            raise PlantError(f"{where}: a second {planting.defect} planting for {planting.kernel}")
        seen.add((planting.kernel, planting.variant))
        plantings.append(planting)
    return plantings


# -- planting -----------------------------------------------------------------------------------------
def planted_text(text: str, planting: Planting) -> str:
    """`text` with the occurrence of `planting.before` that starts on `planting.line` replaced."""
    line_start = 0
    for _ in range(planting.line - 1):
        line_start = text.find("\n", line_start) + 1
        if line_start == 0:
            raise PlantError(f"{planting.file}: has no line {planting.line}")
    line_end = text.find("\n", line_start)
    start = text.find(planting.before, line_start)
    if start < 0 or (line_end >= 0 and start > line_end):
        raise PlantError(f"{planting.file}:{planting.line}: {planting.before!r} does not start on this line")
    return text[:start] + planting.after + text[start + len(planting.before) :]


def apply_planting(root: Path, planting: Planting) -> None:
    path = root / planting.file
    path.write_text(planted_text(path.read_text(encoding="utf-8"), planting), encoding="utf-8")


# -- running kernel-check -----------------------------------------------------------------------------
def kernel_check(args: Sequence[str]) -> list[str]:
    """The kernel-check of this interpreter's import path (PYTHONPATH: the tree being measured)."""
    return [sys.executable, "-m", "kernel_check", *args]


@dataclass
class Draft:
    kernel: str
    spec: str = ""  # relative to the kernel's folder; empty when drafting failed
    instantiations: int = 0
    guesses: list[str] = field(default_factory=list)
    error: str = ""
    seconds: float = 0.0


def spec_path_of(kernel: Kernel) -> Path:
    source = Path(kernel.source)
    return source.with_name(f"{source.stem}_spec.py")


def draft_spec(base: Path, kernel: Kernel) -> Draft:
    """`kernel-check spec new` on the kernel's copy in `base`, unedited."""
    started = time.monotonic()
    spec = spec_path_of(kernel)
    (base / spec).unlink(missing_ok=True)
    defines = [arg for define in kernel.defines for arg in ("-D", define)]
    command = kernel_check(["spec", "new", kernel.source, "--launcher", kernel.launcher, *defines])
    try:
        done = subprocess.run(command, cwd=base, capture_output=True, text=True, timeout=DRAFT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return Draft(kernel.name, error=f"spec new ran past {DRAFT_TIMEOUT_S} s", seconds=DRAFT_TIMEOUT_S)
    seconds = round(time.monotonic() - started, 1)
    if done.returncode != 0 or not (base / spec).is_file():
        last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or [""]
        return Draft(kernel.name, error=f"spec new exited {done.returncode}: {last[0]}", seconds=seconds)
    text = (base / spec).read_text(encoding="utf-8")
    guesses = re.findall(r"^- TODO\(kernel-check\): (.*)$", text, re.MULTILINE)
    instantiations = len(re.findall(r"^\s*Instantiation\(", text, re.MULTILINE))
    return Draft(kernel.name, str(spec), instantiations, guesses, seconds=seconds)


TRIM_TEXT = '''"""The unedited draft {draft} with only its first {count} instantiations (the time budget)."""
import dataclasses
import importlib.util
from pathlib import Path

_loader = importlib.util.spec_from_file_location("plant_dynamic_draft", Path(__file__).with_name("{draft}"))
_draft = importlib.util.module_from_spec(_loader)
_loader.loader.exec_module(_draft)
SPECS = [
    dataclasses.replace(spec, instantiations=spec.instantiations[:{count}])
    for spec in ([_draft.SPEC] if hasattr(_draft, "SPEC") else []) + list(getattr(_draft, "SPECS", ()))
]
'''


def trim_instantiations(spec_file: Path, count: int) -> None:
    """Make `spec_file` run only the first `count` instantiations of each of its specs: the
    draft moves to `NAME_draft.py`, and `spec_file` becomes a loader that trims it."""
    draft = spec_file.with_name(spec_file.name.replace("_spec.py", "_draft.py"))
    spec_file.rename(draft)
    spec_file.write_text(TRIM_TEXT.format(draft=draft.name, count=count), encoding="utf-8")


def git_commit_all(root: Path) -> str:
    """Make `root` a git repository whose HEAD holds its files; '' or git's error."""
    for args in (["init", "-q"], ["add", "-A"], [*GIT_IDENTITY, "commit", "-q", "-m", "unplanted"]):
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
        if done.returncode != 0:
            return f"git {args[-1]}: {(done.stderr.strip().splitlines() or [''])[-1]}"
    return ""


@dataclass(frozen=True)
class TestOptions:
    sanitize: str
    timeout_s: int
    jobs: int
    compile_only: bool = False


@dataclass
class Run:
    kernel: str
    variant: str  # UNPLANTED or a planting's class
    mode: str
    status: str = "pending"  # ok (exit 0 or 1), error, skipped (past the deadline), no-draft
    exit_code: int | None = None
    findings: list[dict] = field(default_factory=list)
    error: str = ""
    seconds: float = 0.0

    @property
    def codes(self) -> list[str]:
        return sorted({f["code"] for f in self.findings})


def test_command(spec: Path, mode: str, options: TestOptions, max_time: int, output: Path) -> list[str]:
    args = ["test", str(spec), "--format", "json", "-o", str(output), "--jobs", str(options.jobs)]
    if options.compile_only:
        return kernel_check([*args, "--compile-only"])
    args += ["--no-bandwidth", "--timeout", str(options.timeout_s), "--max-time", str(max_time)]
    args += ["--sanitize", options.sanitize] if options.sanitize else ["--no-sanitize"]
    if mode == "against":
        args += ["--against", "HEAD"]
    return kernel_check(args)


def run_test(run: Run, root: Path, spec: Path, options: TestOptions, max_time: int, logs: Path) -> Run:
    """One `kernel-check test` of the spec in `root`; the findings, or why there are none."""
    stem = f"{run.variant}-{run.mode}"
    output = logs / f"{stem}.json"
    command = test_command(spec, run.mode, options, max_time, output)
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=max_time + 120)
        exit_code, stderr = done.returncode, done.stderr
    except subprocess.TimeoutExpired:
        exit_code, stderr = None, f"killed after {max_time + 120} s"
    run.seconds = round(time.monotonic() - started, 1)
    (logs / f"{stem}.stderr").write_text(stderr)
    run.exit_code = exit_code
    if exit_code in (0, 1) and output.is_file():
        run.status = "ok"
        run.findings = json.loads(output.read_text(encoding="utf-8") or "[]")
    else:
        run.status = "error"
        lines = [line for line in str(stderr).splitlines() if line.strip()]
        run.error = f"exit {exit_code}: {lines[-1] if lines else 'no output'}"
    return run


# -- verdicts ---------------------------------------------------------------------------------------
_NUMBER = re.compile(r"\d+")


def finding_key(finding: Mapping[str, object]) -> tuple[str, str]:
    """What a finding says, without the numbers (counts, sizes, lines) that a planting shifts."""
    message = str(finding.get("message", ""))
    message = re.sub(r"\S*/", "", message)  # paths: each variant lives in its own folder
    return str(finding.get("code", "")), _NUMBER.sub("#", message)


@dataclass(frozen=True)
class Verdict:
    flagged: str  # one of VERDICTS
    new: tuple[str, ...] = ()  # the codes of the findings the planted run adds


def verdict(unplanted: Run | None, planted: Run | None) -> Verdict:
    """What the planted run says against the unplanted run of its mode."""
    if unplanted is not None and unplanted.status == NO_DRAFT:
        return Verdict(NO_DRAFT)
    if planted is None or planted.status != "ok" or unplanted is None or unplanted.status != "ok":
        return Verdict("error")
    if BUILD_FAILED in unplanted.codes:
        return Verdict("unbuilt")
    known = {finding_key(f) for f in unplanted.findings}
    new = [f for f in planted.findings if finding_key(f) not in known]
    return Verdict("yes" if new else "no", tuple(sorted({f["code"] for f in new})))


# -- the whole measurement ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Setup:
    """What every variant and run of one measurement shares."""

    plant_dir: Path
    work: Path  # one folder per kernel: base/ (the copy drafted), one folder per variant
    out: Path  # logs/KERNEL/VARIANT-MODE.json and .stderr
    modes: tuple[str, ...]
    options: TestOptions
    max_instantiations: int  # 0: all
    deadline: float  # time.monotonic() after which no run starts


@dataclass
class Job:
    run: Run
    root: Path
    spec: Path

    def in_mode(self, mode: str) -> Job:
        return Job(Run(self.run.kernel, self.run.variant, mode), self.root, self.spec)


def copy_base(setup: Setup, kernel: Kernel) -> Path:
    base = setup.work / kernel.name / "base"
    shutil.rmtree(base, ignore_errors=True)
    shutil.copytree(setup.plant_dir / "kernels" / kernel.name, base)
    return base


def make_variants(
    setup: Setup, kernel: Kernel, draft: Draft, plantings: Sequence[Planting]
) -> tuple[list[Job], dict[tuple[str, str], str]]:
    """One folder per variant of a drafted kernel (the unplanted one first): the kernel and
    its draft, a git HEAD without the planting, the planting applied. Returns a job per
    variant (its mode not yet set) and the variants that could not be made, with why."""
    jobs: list[Job] = []
    broken: dict[tuple[str, str], str] = {}
    for planting in [None, *(p for p in plantings if p.kernel == kernel.name)]:
        name = planting.variant if planting else UNPLANTED
        if draft.error:
            broken[(kernel.name, name)] = f"{NO_DRAFT}: {draft.error}"
            continue
        root = setup.work / kernel.name / name
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(setup.work / kernel.name / "base", root)
        spec = root / draft.spec
        if setup.max_instantiations and draft.instantiations > setup.max_instantiations:
            trim_instantiations(spec, setup.max_instantiations)
        try:
            error = git_commit_all(root)
            if planting is not None and not error:
                apply_planting(root, planting)
        except (OSError, PlantError) as exc:
            error = str(exc)
        if error:
            broken[(kernel.name, name)] = error
            continue
        jobs.append(Job(Run(kernel.name, name, ""), root, spec))
    return jobs, broken


def run_one(job: Job, setup: Setup) -> Run:
    """One variant in one mode, unless the deadline has passed; told to end by the deadline."""
    left = int(setup.deadline - time.monotonic())
    if left < 30:
        job.run.status, job.run.error = "skipped", "past the deadline"
        return job.run
    logs = setup.out / "logs" / job.run.kernel
    logs.mkdir(parents=True, exist_ok=True)
    try:
        run_test(job.run, job.root, job.spec, setup.options, left, logs)
    except Exception as exc:  # one kernel's failure never stops the measurement
        job.run.status, job.run.error = "error", f"{type(exc).__name__}: {exc}"
    state = f"{job.run.status} {job.run.codes} {job.run.error} ({job.run.seconds} s)"
    print(f"{job.run.kernel} {job.run.variant} {job.run.mode}: {state}", file=sys.stderr, flush=True)
    return job.run


def measure(
    setup: Setup, kernels: Sequence[Kernel], plantings: Sequence[Planting], parallel: int, drafting: int, run: bool
) -> tuple[dict[str, Draft], list[Run], dict[tuple[str, str], str]]:
    """Draft every kernel (`drafting` at a time); as each draft is done, its variants' runs in
    the first mode join the queue of `parallel` runs, and the other modes' runs join it once
    every kernel is drafted (so the first mode's runs go first). `run` False: no run."""
    bases = {kernel.name: copy_base(setup, kernel) for kernel in kernels}
    drafts: dict[str, Draft] = {}
    broken: dict[tuple[str, str], str] = {}
    queued: list[Future[Run]] = []
    later: list[Job] = []
    first, *rest = setup.modes
    with ThreadPoolExecutor(max_workers=drafting) as drafters, ThreadPoolExecutor(max_workers=parallel) as runners:
        pending = {drafters.submit(draft_spec, bases[k.name], k): k for k in kernels}
        for done in as_completed(pending):
            kernel = pending[done]
            drafts[kernel.name] = draft = done.result()
            print(f"drafted {kernel.name}: {draft.error or 'ok'} ({draft.seconds} s)", file=sys.stderr, flush=True)
            jobs, why = make_variants(setup, kernel, draft, plantings)
            broken.update(why)
            if run:
                queued += [runners.submit(run_one, job.in_mode(first), setup) for job in jobs]
                later += [job.in_mode(mode) for mode in rest for job in jobs]
        queued += [runners.submit(run_one, job, setup) for job in later]
        runs = [future.result() for future in queued]
    return {k.name: drafts[k.name] for k in kernels}, runs, broken


def summarize(
    kernels: Sequence[Kernel], plantings: Sequence[Planting], runs: Sequence[Run], modes: Sequence[str]
) -> dict:
    """Per kernel and mode: the unplanted run's codes and each planting's verdict; per mode,
    how many plantings got each verdict and how many findings the unplanted kernels had."""
    by_key = {(r.kernel, r.variant, r.mode): r for r in runs}
    rows = []
    totals = {mode: {"planted": 0, **dict.fromkeys(VERDICTS, 0), "clean": 0, "findings": 0} for mode in modes}
    for kernel in kernels:
        row: dict = {"kernel": kernel.name}
        for mode in modes:
            base = by_key.get((kernel.name, UNPLANTED, mode))
            cell: dict = {UNPLANTED: base.codes if base and base.status == "ok" else (base.status if base else "error")}
            if base is not None and base.status == "ok":
                totals[mode]["findings"] += len(base.findings)
                totals[mode]["clean"] += not base.findings
            for planting in (p for p in plantings if p.kernel == kernel.name):
                judged = verdict(base, by_key.get((kernel.name, planting.variant, mode)))
                cell[planting.variant] = asdict(judged)
                totals[mode]["planted"] += 1
                totals[mode][judged.flagged] += 1
            row[mode] = cell
        rows.append(row)
    return {"rows": rows, "totals": totals}


def _cell(judged: Mapping | None) -> str:
    if judged is None:
        return "-"
    if judged["flagged"] == "yes":
        return "Y " + ",".join(judged["new"])
    return "n" if judged["flagged"] == "no" else str(judged["flagged"])


def table(summary: Mapping, modes: Sequence[str]) -> str:
    """kernel x class: Y and the new codes, n, or why there is no verdict; then the totals."""
    lines = ["| kernel | mode | unplanted | " + " | ".join(CLASSES) + " |", "|" + "---|" * (3 + len(CLASSES))]
    for row in summary["rows"]:
        for mode in modes:
            cell = row[mode]
            unplanted = cell[UNPLANTED]
            shown = unplanted if isinstance(unplanted, str) else (",".join(unplanted) or "clean")
            classes = " | ".join(_cell(cell.get(c)) for c in CLASSES)
            lines.append(f"| {row['kernel']} | {mode} | {shown} | {classes} |")
    lines.append("")
    for mode in modes:
        t = summary["totals"][mode]
        states = ", ".join(f"{state} {t[state]}" for state in VERDICTS)
        lines.append(
            f"{mode}: flagged {t['yes']} of {t['planted']} planted ({states}); "
            f"unplanted kernels clean: {t['clean']}, their findings: {t['findings']}"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("plant_dir", type=Path, help="kernels/, kernels.json, plantings.json")
    parser.add_argument("--out", type=Path, required=True, help="results: plant_dynamic.json, logs, drafts")
    parser.add_argument("--work", type=Path, help="where the variants are made (default OUT/work)")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated: plain, against")
    parser.add_argument("--kernels", help="comma-separated kernel names (default: all)")
    parser.add_argument("--parallel", type=int, default=5, help="kernel-check test processes at a time")
    parser.add_argument("--jobs", type=int, default=2, help="--jobs of each kernel-check test")
    parser.add_argument("--draft-parallel", type=int, default=10, help="kernel-check spec new processes at a time")
    parser.add_argument("--deadline", type=int, default=420, help="seconds after which no run starts")
    parser.add_argument("--timeout", type=int, default=30, help="--timeout of each kernel-check test (per case)")
    parser.add_argument("--sanitize", default="memcheck,initcheck", help="'' for none")
    parser.add_argument("--max-instantiations", type=int, default=2, metavar="K", help="0: all of a draft's")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--dry-run", action="store_true", help="draft and plant, run nothing")
    what.add_argument("--compile-only", action="store_true", help="kernel-check test --compile-only (no GPU)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    modes = ["plain"] if args.compile_only else [m for m in args.modes.split(",") if m]
    if not modes or set(modes) - set(MODES):
        print(f"plant_dynamic: --modes: give some of {', '.join(MODES)}", file=sys.stderr)
        return 2
    try:
        kernels = load_kernels(args.plant_dir)
        plantings = load_plantings(args.plant_dir, kernels)
    except PlantError as exc:
        print(f"plant_dynamic: {exc}", file=sys.stderr)
        return 2
    if args.kernels:
        wanted = set(args.kernels.split(","))
        kernels = [k for k in kernels if k.name in wanted]
        plantings = [p for p in plantings if p.kernel in wanted]
    args.out.mkdir(parents=True, exist_ok=True)
    import kernel_check  # which tree is measured: the one this interpreter imports

    print(f"plant_dynamic: kernel-check from {Path(kernel_check.__file__).parent}", file=sys.stderr)
    setup = Setup(
        args.plant_dir.resolve(),
        (args.work or args.out / "work").resolve(),
        args.out.resolve(),
        tuple(modes),
        TestOptions(args.sanitize, args.timeout, args.jobs, args.compile_only),
        args.max_instantiations,
        started + args.deadline,
    )
    drafts, runs, broken = measure(setup, kernels, plantings, args.parallel, args.draft_parallel, not args.dry_run)
    _keep_drafts(setup.work, drafts, args.out / "drafts")
    for (kernel, variant), why in broken.items():
        print(f"plant_dynamic: {kernel} {variant}: not run: {why}", file=sys.stderr)
    runs += [
        Run(k, v, m, NO_DRAFT if why.startswith(NO_DRAFT) else "error", error=why)
        for (k, v), why in broken.items()
        for m in modes
    ]
    summary = summarize(kernels, plantings, runs, modes)
    result = {
        "kernel_check": str(Path(kernel_check.__file__).parent),
        "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "seconds": round(time.monotonic() - started, 1),
        "drafts": [asdict(d) for d in drafts.values()],
        "plantings": [asdict(p) for p in plantings],
        "runs": [asdict(r) for r in runs],
        "summary": summary,
    }
    (args.out / "plant_dynamic.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    for draft in drafts.values():
        state = draft.error or f"{draft.instantiations} instantiations, {len(draft.guesses)} guesses"
        print(f"draft {draft.kernel}: {state} ({draft.seconds} s)")
    if not args.dry_run:
        print(table(summary, modes), end="")
    return 0


def _keep_drafts(work: Path, drafts: Mapping[str, Draft], folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for draft in drafts.values():
        if draft.spec:
            shutil.copy2(work / draft.kernel / "base" / draft.spec, folder / f"{draft.kernel}_spec.py")


if __name__ == "__main__":
    sys.exit(main())
