"""Run fuzz cases in worker processes and summarize them.

Each worker keeps one `Environment` (rules loaded, libclang loaded, one preamble cache)
and runs the cases it is sent. A worker that dies (a crash that escaped every bound) or
outlives a case's hard limit is replaced and the case is recorded as a crash; the case's
files are kept under `crash_dir` so it can be replayed. Case generation is deterministic
(`cases.make_case(profile, index)`), so a worker is sent only an index.
"""

from __future__ import annotations

import collections
import multiprocessing
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

from .cases import Environment, Outcome, Profile, make_case, materialize, run_case

FILE_CASE_LIMIT_S = 180.0  # file-timeout (20 s) plus the invariant's own second parse, generously
CLI_CASE_LIMIT_S = 900.0
WORKER_MEMORY_LIMIT = 3 << 30  # RLIMIT_AS of a worker (and so of the checker's children and CLI runs)
# A worker imports the whole pipeline when it starts and is replaced after this many cases: in a
# tree others are editing, a long-lived worker would otherwise mix module versions for hours.
RECYCLE_EVERY = 150
_PIPELINE_MODULES = (
    "kernel_check.engine",
    "kernel_check.clang.extract",
    "kernel_check.clang.kernel_interface",
    "kernel_check.clang.pointer_accesses",
    "kernel_check.clang.index_values",
    "kernel_check.clang.launches",
    "kernel_check.clang.consteval",
    "kernel_check.clang.scope_facts",
    "kernel_check.clang.preamble",
    "kernel_check.pymodel",
    "kernel_check.filter",
    "kernel_check.watchdog",
)


@dataclass
class Report:
    profile: str
    cases: int = 0
    seconds: float = 0.0
    failures: list[Outcome] = field(default_factory=list)  # every case with a problem
    new_failures: list[Outcome] = field(default_factory=list)  # ... not explained by a known open bug
    timeouts: list[Outcome] = field(default_factory=list)
    slowest: Outcome | None = None
    cpu: float = 0.0
    signatures: collections.Counter = field(default_factory=collections.Counter)
    first_of: dict = field(default_factory=dict)  # signature -> the first case that showed it
    known_of: dict = field(default_factory=dict)  # signature -> the known open bug it is, or None
    kinds: collections.Counter = field(default_factory=collections.Counter)
    codes: collections.Counter = field(default_factory=collections.Counter)
    notes: collections.Counter = field(default_factory=collections.Counter)
    crash_dir: Path | None = None

    def add(self, outcome: Outcome) -> None:
        self.cases += 1
        self.kinds[outcome.label.split()[1]] += 1
        self.codes.update(outcome.codes)
        if outcome.note and not outcome.note.startswith("cli"):
            self.notes[outcome.note] += 1
        self.cpu += outcome.cpu
        if outcome.problems:
            from .cases import _signature
            from .known import explain

            self.failures.append(outcome)
            explained = [explain(problem) for problem in outcome.problems]
            if any(known is None for known in explained):
                self.new_failures.append(outcome)
            for problem, known in zip(outcome.problems, explained):
                signature = _signature(problem)
                self.signatures[signature] += 1
                self.first_of.setdefault(signature, outcome.label)
                self.known_of.setdefault(signature, known)
        if outcome.timed_out:
            self.timeouts.append(outcome)
        if self.slowest is None or outcome.seconds > self.slowest.seconds:
            self.slowest = outcome

    def summary(self) -> str:
        lines = [
            f"fuzz profile {self.profile}: {self.cases} cases in {self.seconds:.1f} s "
            f"({', '.join(f'{k} {v}' for k, v in sorted(self.kinds.items()))})",
            f"CPU {self.cpu:.1f} s (workers and their children)",
            f"crashes/invariant failures: {len(self.failures)} "
            f"({len(self.new_failures)} not explained by a known open bug, see known.py)",
            f"timed out (KC000 naming file-timeout): {len(self.timeouts)}",
        ]
        if self.slowest is not None:
            lines.append(
                f"slowest case: {self.slowest.label} {self.slowest.seconds:.2f} s "
                f"({self.slowest.cpu:.2f} s CPU) {self.slowest.note}"
            )
        if self.notes:
            lines.append("notes: " + ", ".join(f"{k} x{v}" for k, v in self.notes.most_common()))
        lines.append("codes seen: " + ", ".join(f"{k} {v}" for k, v in sorted(self.codes.items())))
        if self.signatures:
            lines.append("failure kinds:")
            for signature, count in self.signatures.most_common():
                known = self.known_of.get(signature)
                tag = f"known: {known.where}" if known else "NEW"
                lines.append(f"  {count:5d} x {signature}   [{tag}] (first: {self.first_of[signature]})")
        shown = self.new_failures or self.failures
        for outcome in shown[:20]:
            lines.append(f"FAIL {outcome.label} ({outcome.seconds:.2f} s)")
            lines.extend("    " + line for problem in outcome.problems for line in problem.splitlines()[:12])
        if len(shown) > 20:
            lines.append(f"... and {len(shown) - 20} more")
        if self.failures and self.crash_dir is not None:
            lines.append(f"reproducers: {self.crash_dir}")
        return "\n".join(lines)


def _worker_main(conn: Any, profile: Profile, workdir: str, cache_dir: str) -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:  # a case may legitimately exhaust memory (an include of /dev/zero): never the machine's
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY_LIMIT, resource.getrlimit(resource.RLIMIT_AS)[1]))
    except (ImportError, ValueError, OSError):
        pass
    import importlib

    for module in _PIPELINE_MODULES:
        try:
            importlib.import_module(module)
        except Exception:  # a module that does not import shows up in the cases
            pass
    env = Environment(Path(workdir), Path(cache_dir))
    while True:
        try:
            index = conn.recv()
        except (EOFError, OSError):
            return
        if index is None:
            return
        conn.send(run_case(make_case(profile, index), env))


class _Worker:
    def __init__(self, ctx: Any, profile: Profile, workdir: Path, cache_dir: Path, number: int) -> None:
        home = workdir / f"worker-{number}"
        home.mkdir(parents=True, exist_ok=True)
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker_main, args=(child, profile, str(home), str(cache_dir)), daemon=True)
        self.process.start()
        child.close()
        self.index: int | None = None
        self.deadline = 0.0
        self.started = 0.0
        self.done = 0

    def send(self, index: int, limit: float) -> None:
        self.index = index
        self.done += 1
        self.started = time.monotonic()
        self.deadline = self.started + limit
        self.conn.send(index)

    def kill(self) -> None:
        self.process.kill()
        self.process.join(10)
        self.conn.close()


def _save(profile: Profile, outcome: Outcome, crash_dir: Path) -> None:
    case = make_case(profile, outcome.index)
    target = crash_dir / f"case-{outcome.index}"
    materialize(case, target / "tree")
    (target / "README.txt").write_text(
        f"{outcome.label}\nprofile {profile.name} seed {profile.seed}\n\n" + "\n\n".join(outcome.problems) + "\n",
        encoding="utf-8",
    )


def run(
    profile: Profile,
    indices: Iterable[int],
    jobs: int = 2,
    *,
    workdir: Path | None = None,
    cache_dir: Path | None = None,
    crash_dir: Path | None = None,
    progress: Callable[[Report, Outcome], None] | None = None,
) -> Report:
    """Run the cases `indices` of `profile` in `jobs` worker processes."""
    started = time.perf_counter()
    own_workdir = workdir is None
    workdir = Path(workdir or tempfile.mkdtemp(prefix="kernel-check-fuzz-"))
    cache_dir = Path(cache_dir or workdir / "cache")
    report = Report(profile.name, crash_dir=crash_dir)
    queue = list(indices)
    queue.reverse()
    ctx = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    numbers = iter(range(1_000_000))
    workers = [_Worker(ctx, profile, workdir, cache_dir, next(numbers)) for _ in range(max(1, jobs))]

    def finish(outcome: Outcome) -> None:
        report.add(outcome)
        if outcome.problems and crash_dir is not None:
            _save(profile, outcome, crash_dir)
        if progress is not None:
            progress(report, outcome)

    def replace(worker: _Worker, why: str) -> None:
        index = worker.index
        seconds = time.monotonic() - worker.started
        worker.kill()
        workers[workers.index(worker)] = _Worker(ctx, profile, workdir, cache_dir, next(numbers))
        if index is not None:
            finish(Outcome(index, make_case(profile, index).label, seconds, problems=[why]))

    try:
        while queue or any(w.index is not None for w in workers):
            for worker in workers:
                if worker.index is None and queue:
                    index = queue.pop()
                    limit = CLI_CASE_LIMIT_S if make_case(profile, index).kind == "cli" else FILE_CASE_LIMIT_S
                    worker.send(index, limit)
            busy = [w for w in workers if w.index is not None]
            timeout = max(0.0, min(w.deadline for w in busy) - time.monotonic())
            for conn in wait([w.conn for w in busy], timeout):
                worker = next(w for w in busy if w.conn is conn)
                try:
                    outcome = conn.recv()
                except (EOFError, OSError):
                    worker.process.join(5)
                    replace(worker, f"the worker process died (exit code {worker.process.exitcode})")
                    continue
                worker.index = None
                finish(outcome)
                if worker.done >= RECYCLE_EVERY:
                    worker.conn.send(None)
                    worker.process.join(30)
                    worker.kill()
                    workers[workers.index(worker)] = _Worker(ctx, profile, workdir, cache_dir, next(numbers))
            now = time.monotonic()
            for worker in [w for w in workers if w.index is not None and w.deadline <= now]:
                replace(worker, f"hang: no result after {now - worker.started:.0f} s (case hard limit)")
    finally:
        for worker in workers:
            try:
                worker.conn.send(None)
            except OSError:
                pass
        for worker in workers:
            worker.process.join(5)
            if worker.process.is_alive():
                worker.kill()
        if own_workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    report.seconds = time.perf_counter() - started
    return report
