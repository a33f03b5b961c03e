"""The static pipeline for one file and for a run: read -> parse -> model -> rules -> filter.

`check_file` runs the whole pipeline on one file (a plain parse, no cache: what the tests
and library callers get). `run_static` runs a set of files the way the command line does:

1. the result cache (`result_cache.py`) answers every file whose bytes, headers, config
   and rule set are unchanged -- in this process, without loading libclang;
2. one or two remaining files are checked in this process (process start-up dominates a
   pre-commit run); more go to a pool of worker processes (`jobs`), each importing
   libclang once and parsing against precompiled preambles (`clang/preamble.py`);
3. results come back in the order of `paths`, whatever order the workers finish in.

Each file's pipeline runs under `file-timeout` (CPU time, with a wall-clock backstop:
`watchdog.Clock`) and a memory cap: in this process under `watchdog.run_bounded` (a child
per file); in a pool worker the worker itself is the bounded unit (`watchdog.BoundHere`, no
fork per file) and this process kills it when the file's clock runs out. A worker past
a time bound (or a backstop one, outside a file's pipeline), or dead, is replaced, that
file gets a KC000 and the run continues.
"""

from __future__ import annotations

import gc
import os
import re
import shutil
import sys
import tempfile
import time
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterator

from .clang.parse import ParseSettings
from .config import Config
from .discover import is_python
from .filter import PARSE_ERROR, Selection, filter_file_findings, typed_findings
from .finding import Finding, Location, Severity
from .model import Span
from .progress import Progress
from .registry import Language, RuleContext, rules_for
from .results import FileResult, FileStatus, status_of
from .watchdog import Clock, TimedOut, timed_out_message

MAX_QUOTED_ERRORS = 3
IN_PROCESS_MAX = 2  # this many files or fewer to check: no pool
PROGRESS_TICK_S = 0.5  # how often a live progress line redraws while workers are busy
TEMP_PREAMBLE_MIN = 3  # --no-cache: a throw-away preamble pays off from this many C++ files
BUILD_TIMEOUT_MIN_S = 300.0
# Keys that act after the cache (the filter stage, discovery, the gate): a change of one
# re-uses every cached result (result_cache.py).
FILTER_KEYS = frozenset({"select", "ignore", "per-file-ignores", "severity", "exclude", "strict", "baseline"})


@dataclass(frozen=True)
class CacheOptions:
    """Where the run may keep state. `root` None: nothing persists (`--no-cache`); a run of
    several C++ files then still builds a preamble, in a temporary directory."""

    root: Path | None = None  # the static cache root, `cache.static_root(...)`
    results: bool = True
    preamble: str = "union"  # "union", "exact" or "off" (see clang/preamble.py)


@dataclass(frozen=True)
class RunOptions:
    """Everything a worker needs besides the path (sent once per worker)."""

    config: Config
    settings: ParseSettings
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    cache: CacheOptions | None = None  # None: plain parses, no result cache (library default)
    jobs: int = 1


@dataclass
class RunStats:
    """What the last `run_static` did (the benchmark and `KERNEL_CHECK_STATS` read it)."""

    files: int = 0
    skipped: int = 0  # no selected rule reads the file's language
    cached: int = 0
    checked: int = 0
    workers: int = 0
    preambles_built: int = 0
    preamble_parses: int = 0
    plain_parses: int = 0
    seconds: float = 0.0


last_stats = RunStats()


def _options_table(config: Config) -> dict[str, Any]:
    from .config import OPTIONS

    return {option.key: config.get(option.key) for option in OPTIONS}


# -- one file ---------------------------------------------------------------------------------
def check_file(path: Path, options: RunOptions, preamble: Any = None) -> FileResult:
    """Run the whole static pipeline on one file; never raises for a bad input file."""
    return _check(path, options, preamble)[0]


@dataclass
class _Outcome:
    """Extra facts about one check, for the result cache."""

    data: bytes | None = None  # the bytes checked (None: unreadable, never cached)
    deps: Any = None  # result_cache.Deps, None when the result must not be cached
    typed: list[Finding] = field(default_factory=list)  # before selection and suppressions


def _check(path: Path, options: RunOptions, preamble: Any = None, data: bytes | None = None,
           bound: Any = None) -> tuple[FileResult, _Outcome]:
    """`bound` runs the file's pipeline under its limits: `watchdog.run_bounded` (a child
    per file) unless given (a pool worker's `watchdog.BoundHere`)."""
    config = options.config
    relative = config.relative(path)
    if data is None:
        try:
            data = read_limited(path, config.get("max-file-bytes"))
        except OSError as error:
            return _single(path, f"cannot read file: {error.strerror or error}"), _Outcome()
    if len(data) > config.get("max-file-bytes"):  # not read to the end: not cached either
        return _single(path, _unparsable_reason(data, config, path)), _Outcome()
    problem = _unparsable_reason(data, config)
    if problem:  # found again from the bytes at once: not worth a cache entry
        return _single(path, problem), _Outcome(data)
    text = data.decode("utf-8", errors="replace")
    from .watchdog import Stopped, run_bounded  # file-timeout and a memory cap (watchdog.py)

    if not is_python(path):  # here, not in each bounded child: libclang, the extractors and the
        from .clang.extract import extract  # noqa: F401  (shared) preamble, built or loaded once
        from .clang.parse import _get_index

        _get_index()
        if preamble is not None:
            preamble.prefetch(path, data, _compile_args(path, options.settings))
    bounded = (bound or run_bounded)(_raw_findings, (path, relative, text, data, options, preamble),
                                     float(config.get("file-timeout")))
    if isinstance(bounded, Stopped):  # too slow, out of memory, crashed or raised: one KC000
        return FileResult(str(path), [parse_error(str(path), 1, 1, bounded.message, bounded.detail)],
                          status=status_of(bounded)), _Outcome(data, None)
    raw, error_spans, deps = bounded
    typed = typed_findings(raw, error_spans)
    if any(f.code == PARSE_ERROR and f.message.startswith("internal error") for f in raw):
        deps = None  # a crashing rule is worth a second look on the next run
    return _selected(path, typed, text, options), _Outcome(data, deps, typed)


def _selected(path: Path, typed: list[Finding], text: str, options: RunOptions) -> FileResult:
    """The filter stage on a file's typed findings: selection, suppressions, severities (run
    on every result, fresh or cached, so that the cache holds findings before it)."""
    config = options.config
    selection = Selection(config, list(options.select), list(options.ignore))
    outcome = filter_file_findings(typed, path=str(path), relative_path=config.relative(path), text=text,
                                   error_spans=[], selection=selection, config=config)
    status = FileStatus.PARSE_ERROR if any(f.code == PARSE_ERROR for f in typed) else FileStatus.CHECKED
    return FileResult(str(path), sorted(outcome.findings, key=Finding.sort_key), outcome.suppressed, status=status)


def read_limited(path: Path, limit: int) -> bytes:
    """The file's bytes, but never more than `limit` + 1 of them (a huge generated file is
    not read into memory only to be refused); `os.stat` gives the size for the message."""
    with open(path, "rb") as handle:
        return handle.read(limit + 1)


def _unparsable_reason(data: bytes, config: Config, path: Path | None = None) -> str:
    limit = config.get("max-file-bytes")
    if len(data) > limit:
        size = len(data)
        if path is not None:
            try:
                size = max(size, os.stat(path).st_size)
            except OSError:
                pass
        return f"file is {size} bytes, over the max-file-bytes limit of {limit}; not parsed"
    if b"\x00" in data:
        return "binary file (contains NUL bytes); not parsed"
    return ""


def _single(path: Path, message: str) -> FileResult:
    return FileResult(str(path), [parse_error(str(path), 1, 1, message)], status=FileStatus.PARSE_ERROR)


def parse_error(path: str, line: int, column: int, message: str, detail: str = "") -> Finding:
    return Finding(PARSE_ERROR, message, Location(path, line, column), Severity.ERROR, detail=detail)


def _no_deps() -> Any:
    from .result_cache import Deps

    return Deps()


def _raw_findings(path: Path, relative: str, text: str, data: bytes, options: RunOptions,
                  preamble: Any) -> tuple[list[Finding], list[Span], Any]:
    with _no_cycle_collection():
        if is_python(path):
            return _python_findings(path, relative, text, options), [], _no_deps()
        return _cpp_findings(path, relative, text, data, options, preamble)


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector paused while one file is checked. The pipeline allocates
    hundreds of thousands of short-lived objects (cursors, spans, facts), and each burst
    makes the collector rescan every long-lived object of the process (modules, bindings,
    rules): a quarter of the model extraction's time, measured. Reference counting still
    frees what the pipeline drops; the few cycles it leaves (~60 objects per file) are
    collected once the collector runs again."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _python_findings(path: Path, relative: str, text: str, options: RunOptions) -> list[Finding]:
    from .pymodel import build_python_model

    try:
        model = build_python_model(str(path), text)
    except SyntaxError as error:
        return [parse_error(str(path), error.lineno or 1, error.offset or 1,
                            f"python syntax error: {error.msg}")]
    except (ValueError, RecursionError) as error:
        return [parse_error(str(path), 1, 1, f"python source cannot be parsed: {error}")]
    return _run_rules(Language.PYTHON, model, path, relative, options)


def _cpp_findings(path: Path, relative: str, text: str, data: bytes, options: RunOptions,
                  preamble: Any) -> tuple[list[Finding], list[Span], Any]:
    from .clang.deep_stack import on_deep_stack

    # deeply nested sources make clang recurse past a default stack (deep_stack.py)
    return on_deep_stack(_cpp_findings_here, path, relative, text, data, options, preamble)


def _cpp_findings_here(path: Path, relative: str, text: str, data: bytes, options: RunOptions,
                       preamble: Any) -> tuple[list[Finding], list[Span], Any]:
    from .clang.cursors import NestedTooDeeply
    from .clang.extract import extract
    from .clang.parse import parse_file

    # clang parses the raw bytes: its offsets and columns then index the file itself, as
    # the model, the rules and `--fix` expect (decoded text shifts them after a bad byte)
    unit = parse_file(path, data, options.settings, preamble)
    try:
        model = extract(unit, text, data)
    except NestedTooDeeply as error:  # the model would be cut off: no rule runs on the file
        return [parse_error(str(path), error.line, error.column, str(error))], [], _unit_deps(unit, preamble)
    findings = _run_rules(Language.CPP, model, path, relative, options)
    if unit.errors:
        findings.append(_clang_error_finding(str(path), unit.errors))
    return findings, model.error_spans, _unit_deps(unit, preamble)


def _unit_deps(unit: Any, preamble: Any) -> Any:
    from .result_cache import Deps

    hashes = getattr(preamble, "hashes", None)
    if hashes is None:
        from .cache import FileHashes

        hashes = FileHashes()
    files = []
    for header in unit.deps:
        value = hashes.get(header)
        if value is None:
            return None  # a header that cannot be read back: do not cache
        files.append([header, value])
    groups = []
    if unit.preamble is not None:
        groups.append((unit.preamble.dep_group, unit.preamble.deps))
    return Deps(groups, files)


def _clang_error_finding(path: str, errors: list) -> Finding:
    first_main = next((e for e in errors if e.in_main_file), errors[0])
    quoted = [f"{e.path}:{e.line}:{e.column}: error: {e.message}" for e in errors[:MAX_QUOTED_ERRORS]]
    missing = next((e for e in errors if e.missing_header), None)
    if missing is not None:  # a dependency nobody provided: say which, and which setting provides it
        line, column = (missing.line, missing.column) if missing.in_main_file else (1, 1)
        where = "" if missing.in_main_file else f" (included from {Path(missing.path).name}:{missing.line})"
        return parse_error(path, line, column,
                           f"clang could not parse this file: header '{missing.missing_header}' not found{where}; "
                           "add the directory that holds it to `include-dirs` (or pass -I DIR)",
                           detail="\n".join(quoted))
    line, column = (first_main.line, first_main.column) if first_main.in_main_file else (1, 1)
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    hint = _undeclared_hint(first_main) if first_main.in_main_file else ""
    return parse_error(path, line, column, f"clang could not parse this file: {first_main.message}{more}{hint}",
                       detail="\n".join(quoted))


SELF_CONTAINED_HINT = "; each file is checked on its own, so it must include what it uses"
MACRO_HINT = "; if the build defines it, add it to `defines` (or pass -D NAME=VALUE)"
_UNDECLARED_RE = re.compile(r"(?:use of undeclared identifier|unknown type name|no template named) '([^']+)'|"
                            r"no (?:type|member) named '([^']+)' in namespace")


def _undeclared_hint(error: Any) -> str:
    """Why a name the file uses could be undeclared: a macro its build passes with -D
    (an upper-case name), else an include it relies on others to make."""
    match = _UNDECLARED_RE.match(error.message)
    if match is None:
        return ""
    name = match.group(1) or match.group(2)
    return MACRO_HINT if re.fullmatch(r"[A-Z][A-Z0-9_]*", name) else SELF_CONTAINED_HINT


def _run_rules(language: Language, model: Any, path: Path, relative: str,
               options: RunOptions) -> list[Finding]:
    table = _options_table(options.config)
    findings: list[Finding] = []
    for registered in rules_for(language):
        context = RuleContext(registered.meta, str(path), relative, table)
        try:
            findings.extend(registered.check(model, context))
        except Exception as error:  # a rule bug must not take the whole run down
            last = traceback.format_exception_only(type(error), error)[-1].strip()
            findings.append(parse_error(str(path), 1, 1,
                                        f"internal error in rule {registered.meta.code}: {last}",
                                        detail=traceback.format_exc(limit=4)))
    return findings


# -- a run's shared state -----------------------------------------------------------------------
class _Session:
    """One process's view of a run: the result cache and the preamble cache (lazily)."""

    def __init__(self, options: RunOptions, results: Any, bound: Any = None) -> None:
        self.options = options
        self.results = results  # ResultCache or None
        self.bound = bound  # how each file is bounded (None: `run_bounded`, see `_check`)
        self._preamble: Any = None
        self.preamble_parses = 0
        self.plain_parses = 0

    @property
    def preamble(self) -> Any:
        cache = self.options.cache
        if self._preamble is None and cache is not None and cache.root is not None and cache.preamble != "off":
            from .clang.preamble import PreambleCache

            hashes = self.results.hashes if self.results is not None else None
            limit = max(BUILD_TIMEOUT_MIN_S, 6 * float(self.options.config.get("file-timeout")))
            self._preamble = PreambleCache(Path(cache.root) / "preamble", cache.preamble, hashes,
                                           build_timeout=limit)
        return self._preamble

    def key(self, path: Path, data: bytes) -> str:
        args = None if is_python(path) else _compile_args(path, self.options.settings)
        return self.results.key(str(path), self.options.config.relative(path), data, args)

    def lookup(self, path: Path, data: bytes | None = None) -> tuple[FileResult | None, bytes | None]:
        """A cached result for `path` (its bytes `data`, read here unless given), filtered
        for this run's selection."""
        try:
            if data is None:
                data = read_limited(path, self.options.config.get("max-file-bytes"))
        except OSError:
            return None, None
        if len(data) > self.options.config.get("max-file-bytes"):
            return None, data  # refused unparsed by _check; nothing to look up
        if self.results is None:
            return None, data
        typed = self.results.load(self.key(path, data))
        if typed is None:
            return None, data
        result = _selected(path, typed, data.decode("utf-8", errors="replace"), self.options)
        return replace(result, cached=True), data

    def check(self, path: Path, data: bytes | None = None) -> FileResult:
        """Check one file (with the preamble) and store its result."""
        result, outcome = _check(path, self.options, self.preamble, data, self.bound)
        if outcome.deps is not None and not is_python(path):
            if outcome.deps.groups:
                self.preamble_parses += 1
            else:
                self.plain_parses += 1
        if self.results is not None and outcome.data is not None and outcome.deps is not None:
            self.results.store(self.key(path, outcome.data), outcome.typed, outcome.deps)
        return result

    def counters(self) -> tuple[int, int, int]:
        """(preambles built, files parsed against one, files parsed plainly) so far."""
        built = self._preamble.stats.built if self._preamble is not None else 0
        return built, self.preamble_parses, self.plain_parses


def _compile_args(path: Path, settings: ParseSettings) -> list[str]:
    from .clang.parse import compile_args

    return compile_args(path, settings)


def _result_cache(options: RunOptions) -> Any:
    cache = options.cache
    if cache is None or cache.root is None or not cache.results:
        return None
    from dataclasses import asdict

    from .result_cache import ResultCache, run_fingerprint

    config = options.config
    fingerprint = run_fingerprint({
        "config": {key: value for key, value in _options_table(config).items() if key not in FILTER_KEYS},
        "root": str(config.root.resolve()),
        "settings": asdict(options.settings),
        "preamble": cache.preamble,
    })
    return ResultCache(Path(cache.root), fingerprint)


# -- a run ------------------------------------------------------------------------------------
def run_static(paths: list[Path], options: RunOptions, progress: Progress | None = None,
               buffers: dict[Path, bytes] | None = None) -> list[FileResult]:
    """Check `paths`; results in the order of `paths` (see the module doc). `progress` hears
    of each file started and finished; `buffers` holds the contents of paths that are to be
    checked as these bytes rather than as read from disk (`--stdin-filename`)."""
    global last_stats
    started = time.perf_counter()
    stats = RunStats(files=len(paths))
    progress = progress or Progress(enabled=False)
    progress.add(len(paths))
    buffers = buffers or {}
    session = _Session(options, _result_cache(options))
    results: list[FileResult | None] = [None] * len(paths)
    pending: list[tuple[int, bytes | None]] = []
    wanted = _languages_wanted(options)
    for index, path in enumerate(paths):
        relative = options.config.relative(path)
        if _language(path) not in wanted(relative):
            results[index] = FileResult(str(path))  # no selected rule reads this language
            stats.skipped += 1
            progress.finished(relative)
            continue
        given = buffers.get(path)
        hit, data = session.lookup(path, given) if session.results is not None else (None, given)
        if hit is not None:
            results[index] = hit
            progress.finished(relative)
        else:
            pending.append((index, data))
    stats.cached = len(paths) - len(pending) - stats.skipped
    stats.checked = len(pending)
    temporary = None
    try:
        cache = options.cache
        cpp = sum(1 for index, _ in pending if not is_python(paths[index]))
        if (cache is not None and cache.root is None and cache.preamble != "off"
                and cpp >= TEMP_PREAMBLE_MIN):
            temporary = tempfile.mkdtemp(prefix="kernel-check-preamble-")
            options = replace(options, cache=replace(cache, root=Path(temporary), results=False))
            session = _Session(options, None)
        jobs = max(1, min(options.jobs, len(pending)))
        if jobs == 1 or len(pending) <= IN_PROCESS_MAX or buffers:
            for index, data in pending:
                progress.status(options.config.relative(paths[index]))
                results[index] = session.check(paths[index], data)
                progress.finished()
            _collect(stats, session.counters())
        else:
            stats.workers = jobs
            for index, result in _run_pool(paths, [i for i, _ in pending], session, jobs, stats, progress):
                results[index] = result
                progress.finished()
        if session.results is not None and pending:
            session.results.prune()  # at most once a day: entries unused for a month go
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
        stats.seconds = time.perf_counter() - started
        last_stats = stats
        if os.environ.get("KERNEL_CHECK_STATS"):
            print(f"kernel-check: stats: {stats}", file=sys.stderr)
    return [r for r in results if r is not None]


def _language(path: Path) -> Language:
    return Language.PYTHON if is_python(path) else Language.CPP


def _languages_wanted(options: RunOptions) -> Any:
    """relative path -> the languages a check of that file must read. A language none of
    whose rules the selection (`select`, `ignore`, `per-file-ignores`) leaves enabled is
    not parsed at all: `--select KC5` reads Python files only. Selecting `KC000` (or a
    prefix of it) or `KC001` keeps every language: both come from the parse itself."""
    from .filter import UNUSED_SUPPRESSION

    selection = Selection(options.config, list(options.select), list(options.ignore))
    codes = {language: [r.meta.code for r in rules_for(language)] for language in Language}
    if not selection.select or any(PARSE_ERROR.startswith(s) for s in selection.select):
        return lambda relative: tuple(Language)
    return lambda relative: tuple(language for language in Language if any(
        selection.enabled(code, relative) for code in [*codes[language], UNUSED_SUPPRESSION]))


def _collect(stats: RunStats, counters: tuple[int, int, int]) -> None:
    stats.preambles_built += counters[0]
    stats.preamble_parses += counters[1]
    stats.plain_parses += counters[2]


# -- the pool ---------------------------------------------------------------------------------
def _mp_context() -> Any:
    import multiprocessing

    # fork starts a worker in milliseconds and nothing here runs threads; elsewhere spawn.
    method = "fork" if sys.platform.startswith("linux") else "spawn"
    return multiprocessing.get_context(method)


def _worker_main(conn: Any, options: RunOptions, results: Any, errors_fd: int | None) -> None:
    """A pool worker: answers ("build", group, recipe) and ("file", index, path) tasks with
    (kind, ident, payload, retiring) messages until it reads None (or retires).

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
    session = _Session(options, results, bound)
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
            result = FileResult(str(path), [parse_error(str(path), 1, 1, f"internal error: {last}",
                                                        detail=traceback.format_exc(limit=6))],
                                status=FileStatus.INTERNAL_ERROR)
        retiring = bound is not None and bound.retire
        conn.send(("file", ident, result, retiring))
        if retiring:
            break
    try:
        conn.send(("stats", 0, session.counters(), False))
    except OSError:
        pass


class _Worker:
    def __init__(self, ctx: Any, session: _Session) -> None:
        parent, child = ctx.Pipe(duplex=True)
        self.conn = parent
        # A forked worker is its files' bounded unit; its stderr during a file goes into
        # this (unlinked) file, which this process can still read once the worker is dead.
        self.errors = tempfile.TemporaryFile(prefix="kernel-check-worker-") \
            if ctx.get_start_method() == "fork" else None
        errors_fd = self.errors.fileno() if self.errors is not None else None
        self.process = ctx.Process(target=_worker_main, daemon=True,
                                   args=(child, session.options, session.results, errors_fd))
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
            return (stopped.message if stopped is not None
                    else "the worker process died while checking this file"), ""
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


def _plan(paths: list[Path], pending: list[int], session: _Session) -> tuple[dict[str, Any], dict[int, str]]:
    """(recipes to build, index -> the recipe group that index waits for)."""
    planner = session.preamble
    recipes: dict[str, Any] = {}
    waits: dict[int, str] = {}
    if planner is None:
        return recipes, waits
    for index in pending:
        path = paths[index]
        if is_python(path):
            continue
        try:
            data = read_limited(path, session.options.config.get("max-file-bytes"))
        except OSError:
            continue
        candidates = planner.recipes(path, data, _compile_args(path, session.options.settings))
        if candidates:
            recipe = candidates[0]
            recipes.setdefault(recipe.group, recipe)
            waits[index] = recipe.group
    return recipes, waits


def _cost(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _run_pool(paths: list[Path], pending: list[int], session: _Session, jobs: int,
              stats: RunStats, progress: Progress) -> Iterator[tuple[int, FileResult]]:
    from multiprocessing.connection import wait

    options = session.options
    # A file's pipeline is bounded by its worker's clock from the worker's "begin" on (or,
    # in a spawned worker, by a child of the worker: watchdog.py); until then, and for a
    # preamble build, the pool's deadline is a backstop.
    file_limit = float(options.config.get("file-timeout"))
    build_limit = max(BUILD_TIMEOUT_MIN_S, 6 * file_limit)
    backstop = build_limit + 2 * file_limit
    recipes, waits = _plan(paths, pending, session)
    # Builds first (the most wanted first), then files: the largest first, so the last
    # files to finish are short ones and both workers end together.
    builds = sorted(recipes, key=lambda g: -sum(1 for v in waits.values() if v == g))
    blocked: dict[str, list[int]] = {g: [] for g in recipes}
    ready: list[int] = []
    for index in sorted(pending, key=lambda i: -_cost(paths[i])):
        (blocked[waits[index]] if index in waits else ready).append(index)
    ctx = _mp_context()
    workers = [_Worker(ctx, session) for _ in range(jobs)]
    remaining = len(pending)

    def release(group: str) -> None:
        ready.extend(blocked.pop(group, []))
        ready.sort(key=lambda i: -_cost(paths[i]))

    try:
        while remaining:
            for worker in workers:
                if worker.task is not None:
                    continue
                if builds:
                    group = builds.pop(0)
                    worker.send("build", group, recipes[group], build_limit)
                elif ready:
                    index = ready.pop(0)
                    worker.send("file", index, str(paths[index]), backstop)
                    progress.status(options.config.relative(paths[index]))
            busy = [w for w in workers if w.task is not None]
            if not busy:  # everything left waits on a build that no worker holds
                for group in list(blocked):
                    release(group)
                continue
            now = time.monotonic()
            timeout = min(w.wait_time(now) for w in busy)
            if progress.live:
                timeout = min(timeout, PROGRESS_TICK_S)
            for conn in wait([w.conn for w in busy], timeout):
                worker = next(w for w in busy if w.conn is conn)
                try:
                    kind, ident, payload, retiring = conn.recv()
                except (EOFError, OSError):
                    remaining -= worker.task is not None and worker.task[0] == "file"
                    yield from _lost(worker, workers, paths, release, ctx, session, None)
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
                    _retire(worker, workers, ctx, session, stats)
            progress.tick()
            now = time.monotonic()
            for worker in [w for w in workers if w.task is not None]:
                stopped = worker.over_time(now)
                if stopped is not None:
                    remaining -= worker.task[0] == "file"
                    yield from _lost(worker, workers, paths, release, ctx, session, stopped)
    finally:
        for worker in workers:
            try:
                worker.conn.send(None)
            except OSError:
                pass
        for worker in workers:
            _drain_stats(worker, stats)
            worker.process.join(2)
            if worker.process.is_alive():
                worker.kill()
            worker.close()


def _lost(worker: _Worker, workers: list[_Worker], paths: list[Path], release: Any, ctx: Any,
          session: _Session, stopped: TimedOut | None) -> Iterator[tuple[int, FileResult]]:
    """A worker past a time bound (`stopped`), or dead (None): its file gets a KC000, a
    fresh worker takes its place."""
    kind, ident = worker.task or ("", None)
    message, detail = worker.end(stopped)
    worker.close()
    workers[workers.index(worker)] = _Worker(ctx, session)
    if kind == "build":
        release(ident)  # the files parse plainly (or build it themselves) in the other workers
    elif kind == "file":
        path = str(paths[ident])
        yield ident, FileResult(path, [parse_error(path, 1, 1, message, detail)], status=FileStatus.NOT_CHECKED)


def _retire(worker: _Worker, workers: list[_Worker], ctx: Any, session: _Session, stats: RunStats) -> None:
    """A worker that asked to be replaced after its result (its heap grew to the limit)."""
    _drain_stats(worker, stats)
    worker.process.join(5)
    worker.kill()
    worker.close()
    workers[workers.index(worker)] = _Worker(ctx, session)


def _drain_stats(worker: _Worker, stats: RunStats) -> None:
    try:
        while worker.conn.poll(2):
            kind, _, payload, _ = worker.conn.recv()
            if kind == "stats" and payload is not None:
                _collect(stats, payload)
                return
    except (EOFError, OSError):
        return
