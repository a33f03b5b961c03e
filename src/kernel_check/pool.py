"""The process pool: files checked by worker processes, each importing libclang once.

Each worker has its own `CacheSession` over the run's cache directories and answers two
kinds of task: build a preamble recipe, check a file. The pool builds the recipes first
(the most wanted first; `plan`), holding back the files that wait for one, then hands
out the files, the largest first, so that the last to finish are short ones and the
workers end together. Results come back as they finish, with the index of their path.

Bounds: a forked worker is its files' bounded unit (`watchdog.BoundHere`, no fork per
file). It says when a file's pipeline begins ("begin", with the file's `watchdog.Clock`),
and the pool kills it when that clock runs out; until then, and for a preamble build, the
pool's own deadline is a backstop. A spawned worker runs each file in a child of its own
(`watchdog.run_bounded`). A worker past a bound, or dead, is replaced and its file gets
one KC000 (status NOT_CHECKED): a crashed worker costs one file, never the run. A worker
whose heap grew to the memory limit asks to retire after its result and is replaced.
"""

from __future__ import annotations

import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .cache_session import CacheSession, ParseCounts, build_timeout
from .discover import is_python
from .paths import display_path
from .pipeline import RunOptions, compile_args, device_compile_args, load_clang, parse_error, parses, read_limited
from .progress import Progress
from .results import FileResult, FileStatus
from .watchdog import Clock, TimedOut, timed_out_message

PROGRESS_TICK_S = 0.5  # how often a live progress line redraws while workers are busy


def _mp_context() -> Any:
    import multiprocessing

    # fork starts a worker in milliseconds and nothing here runs threads; elsewhere spawn.
    method = "fork" if sys.platform.startswith("linux") else "spawn"
    return multiprocessing.get_context(method)


def _worker_main(conn: Any, options: RunOptions, results: Any, errors_fd: int | None) -> None:
    """A pool worker: answers ("build", group, recipe) and ("file", index, path) tasks with
    (kind, ident, payload, retiring) messages until it reads None (or retires), then sends
    ("counts", 0, its `ParseCounts`, False).

    With `errors_fd` the worker itself is each file's bounded unit (`watchdog.BoundHere`:
    no fork per file); it sends ("begin", 0, the file's `watchdog.Clock`, False) when a
    file's pipeline starts, so that the parent can kill it at the file's time bounds.
    Without, every file runs in a child of the worker (`watchdog.run_bounded`)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles ^C and ends us
    bound = None
    if errors_fd is not None:
        from .watchdog import BoundHere

        bound = BoundHere(errors_fd, lambda clock: conn.send(("begin", 0, clock, False)))
    session = CacheSession(options, results, bound)
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            break
        kind, ident, payload = message
        if kind == "build":
            preamble = session.preamble
            ok = preamble.prepare(payload) if preamble is not None else False
            conn.send(("built", ident, ok, False))
            continue
        path = Path(payload)
        try:
            result = session.check(path)
        except Exception as error:  # an internal error must cost one file, not the run
            last = traceback.format_exception_only(type(error), error)[-1].strip()
            result = FileResult(
                str(path),
                [parse_error(str(path), 1, 1, f"internal error: {last}", detail=traceback.format_exc(limit=6))],
                status=FileStatus.INTERNAL_ERROR,
            )
        retiring = bound is not None and bound.retire
        conn.send(("file", ident, result, retiring))
        if retiring:
            break
    try:
        conn.send(("counts", 0, session.counts(), False))
    except OSError:
        pass


class _Worker:
    def __init__(self, ctx: Any, session: CacheSession) -> None:
        parent, child = ctx.Pipe(duplex=True)
        self.conn = parent
        # A forked worker is its files' bounded unit; its stderr during a file goes into
        # this (unlinked) file, which this process can still read once the worker is dead.
        forked = ctx.get_start_method() == "fork"
        # open for the worker's life; close() closes it
        self.errors = tempfile.TemporaryFile(prefix="kernel-check-worker-") if forked else None  # noqa: SIM115
        errors_fd = self.errors.fileno() if self.errors is not None else None
        self.process = ctx.Process(
            target=_worker_main, daemon=True, args=(child, session.options, session.results, errors_fd)
        )
        self.process.start()
        child.close()
        self.task: tuple[str, Any] | None = None  # ("file", index) or ("build", group)
        self.deadline = 0.0
        self.limit = 0.0  # the backstop for the task, until its file's clock starts
        self.clock: Clock | None = None  # the task's file pipeline began ("begin")

    def send(self, kind: str, ident: Any, payload: Any, limit: float) -> None:
        self.task = (kind, ident)
        self.deadline = time.monotonic() + limit
        self.limit = limit
        self.clock = None
        self.conn.send((kind, ident, payload))

    def begin(self, clock: Clock) -> None:
        """The file's bounded pipeline began: from now on its own clock applies."""
        self.clock = clock
        self.deadline = clock.deadline

    def over_time(self, now: float) -> TimedOut | None:
        """Why the task must stop now (its file's clock, else the backstop), or None."""
        if self.clock is not None:
            return self.clock.exceeded(self.process.pid)
        return TimedOut(timed_out_message(self.limit), limit=self.limit, bound="wall") if self.deadline <= now else None

    def wait_time(self, now: float) -> float:
        return self.clock.next_check() if self.clock is not None else max(0.0, self.deadline - now)

    def end(self, stopped: TimedOut | None) -> tuple[str, str]:
        """Stop the worker; (message, detail) for its task: past a time bound (`stopped`),
        or (None) it died by itself."""
        self.kill()
        if self.errors is None or self.clock is None:  # not inside a file's pipeline
            return (stopped.message if stopped is not None else "the worker process died while checking this file"), ""
        from .watchdog import killed, lost

        fd = self.errors.fileno()
        outcome = killed(stopped, fd) if stopped is not None else lost(self.process.exitcode, fd)
        return outcome.message, outcome.detail

    def kill(self) -> None:
        try:
            self.process.kill()
        except (OSError, AttributeError):
            pass
        self.process.join(5)
        self.conn.close()

    def close(self) -> None:
        if self.errors is not None:
            self.errors.close()

    def counts(self) -> ParseCounts | None:
        """The counts a finishing worker sends last (None when it died first)."""
        try:
            while self.conn.poll(2):
                kind, _, payload, _ = self.conn.recv()
                if kind == "counts":
                    return payload
        except (EOFError, OSError):
            pass
        return None


def plan(paths: list[Path], pending: list[int], session: CacheSession) -> tuple[dict[str, Any], dict[int, str]]:
    """(preamble recipes to build, index -> the recipe group that index waits for): a file
    waits for its host pass's; its device passes' are built too."""
    planner = session.preamble
    recipes: dict[str, Any] = {}
    waits: dict[int, str] = {}
    if planner is None:
        return recipes, waits
    for index in pending:
        path = paths[index]
        if is_python(path) or not parses(session.options.needs(path)):
            continue  # nothing to parse, no preamble to wait for
        try:
            data = read_limited(path, session.options.config.get("max-file-bytes"))
        except OSError:
            continue
        settings = session.options.settings
        candidates = planner.recipes(path, data, compile_args(path, settings))
        if candidates:
            recipe = candidates[0]
            recipes.setdefault(recipe.group, recipe)
            waits[index] = recipe.group
        for args in device_compile_args(path, data, settings):  # its device passes' (none wait for them)
            found = planner.recipes(path, data, args)
            if found:
                recipes.setdefault(found[0].group, found[0])
    return recipes, waits


def _cost(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


class Pool:
    """`jobs` workers over `session`'s options and result cache; `counts` adds up how the
    workers parsed (complete once `run` has finished)."""

    def __init__(self, session: CacheSession, jobs: int, progress: Progress) -> None:
        self.session = session
        self.jobs = jobs
        self.progress = progress
        self.counts = ParseCounts()
        self._ctx = _mp_context()
        self._workers: list[_Worker] = []

    def run(self, paths: list[Path], pending: list[int]) -> Iterator[tuple[int, FileResult]]:
        """Check `paths[i]` for every i in `pending`: (i, result) pairs as they finish."""
        from multiprocessing.connection import wait

        config = self.session.options.config
        # A file's pipeline is bounded by its worker's clock from the worker's "begin" on
        # (or, in a spawned worker, by a child of the worker: watchdog.py); until then,
        # and for a preamble build, the pool's deadline is a backstop.
        file_limit = float(config.get("file-timeout"))
        build_limit = build_timeout(config)
        backstop = build_limit + 2 * file_limit
        recipes, waits = plan(paths, pending, self.session)
        builds = sorted(recipes, key=lambda g: -sum(1 for v in waits.values() if v == g))
        blocked: dict[str, list[int]] = {g: [] for g in recipes}
        ready: list[int] = []
        for index in sorted(pending, key=lambda i: -_cost(paths[i])):
            (blocked[waits[index]] if index in waits else ready).append(index)
        if self._ctx.get_start_method() == "fork" and any(not is_python(paths[i]) for i in pending):
            load_clang()  # once here, not once per worker: a forked worker starts with it
        self._workers = [_Worker(self._ctx, self.session) for _ in range(self.jobs)]
        remaining = len(pending)

        def release(group: str) -> None:
            ready.extend(blocked.pop(group, []))
            ready.sort(key=lambda i: -_cost(paths[i]))

        try:
            while remaining:
                for worker in self._workers:
                    if worker.task is not None:
                        continue
                    if builds:
                        group = builds.pop(0)
                        worker.send("build", group, recipes[group], build_limit)
                    elif ready:
                        index = ready.pop(0)
                        worker.send("file", index, str(paths[index]), backstop)
                        self.progress.status(display_path(paths[index]))
                busy = [w for w in self._workers if w.task is not None]
                if not busy:  # everything left waits on a build that no worker holds
                    for group in list(blocked):
                        release(group)
                    continue
                now = time.monotonic()
                timeout = min(w.wait_time(now) for w in busy)
                if self.progress.live:
                    timeout = min(timeout, PROGRESS_TICK_S)
                for conn in wait([w.conn for w in busy], timeout):
                    worker = next(w for w in busy if w.conn is conn)
                    try:
                        kind, ident, payload, retiring = worker.conn.recv()
                    except (EOFError, OSError):
                        remaining -= worker.task is not None and worker.task[0] == "file"
                        yield from self._lost(worker, paths, release, None)
                        continue
                    if kind == "begin":
                        worker.begin(payload)
                        continue
                    worker.task = None
                    if kind == "built":
                        release(ident)
                    elif kind == "file":
                        remaining -= 1
                        yield ident, payload
                    if retiring:
                        self._retire(worker)
                self.progress.tick()
                now = time.monotonic()
                for worker in [w for w in self._workers if w.task is not None]:
                    stopped = worker.over_time(now)
                    if stopped is not None:
                        remaining -= worker.task is not None and worker.task[0] == "file"
                        yield from self._lost(worker, paths, release, stopped)
        finally:
            self._shut_down()

    def _lost(
        self, worker: _Worker, paths: list[Path], release: Any, stopped: TimedOut | None
    ) -> Iterator[tuple[int, FileResult]]:
        """A worker past a time bound (`stopped`), or dead (None): its file gets a KC000, a
        fresh worker takes its place."""
        task: tuple[str, Any] = worker.task or ("", None)
        kind, ident = task
        message, detail = worker.end(stopped)
        worker.close()
        self._replace(worker)
        if kind == "build":
            release(ident)  # the files parse plainly (or build it themselves) in the other workers
        elif kind == "file":
            path = str(paths[ident])
            yield ident, FileResult(path, [parse_error(path, 1, 1, message, detail)], status=FileStatus.NOT_CHECKED)

    def _retire(self, worker: _Worker) -> None:
        """A worker that asked to be replaced after its result (its heap grew to the limit)."""
        self._collect(worker)
        worker.process.join(5)
        worker.kill()
        worker.close()
        self._replace(worker)

    def _replace(self, worker: _Worker) -> None:
        self._workers[self._workers.index(worker)] = _Worker(self._ctx, self.session)

    def _collect(self, worker: _Worker) -> None:
        counts = worker.counts()
        if counts is not None:
            self.counts.add(counts)

    def _shut_down(self) -> None:
        for worker in self._workers:
            try:
                worker.conn.send(None)
            except OSError:
                pass
        for worker in self._workers:
            self._collect(worker)
            worker.process.join(2)
            if worker.process.is_alive():
                worker.kill()
            worker.close()
