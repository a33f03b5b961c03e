"""One process's view of a run's caches: the result cache and the preamble cache.

`CacheSession` answers a file from the result cache (`result_cache.py`) when its bytes,
headers, configuration and rule set are unchanged, and otherwise checks it through the
pipeline (`pipeline.check`) against a precompiled preamble (`clang/preamble.py`, built or
loaded lazily, once per process) and stores what came out. The command line's process
has one; each pool worker (`pool.py`) has its own, over the same cache directories (their
writes are atomic: `cache.py`). A process that outlives one run (`kernel-check server`)
keeps its sessions warm from run to run (`WarmSessions`) and replaces one whose files
changed on disk.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from . import conventions
from .config import Config
from .discover import is_python
from .pipeline import CheckPlan, RunOptions, check, compile_args, options_table, parses, read_limited, selected
from .results import FileResult

BUILD_TIMEOUT_MIN_S = 300.0
# Keys that act after the cache (the filter stage, discovery, the gate) or on the cache
# itself (its size): a change of one re-uses every cached result (result_cache.py).
FILTER_KEYS = frozenset(
    {"select", "ignore", "per-file-ignores", "severity", "exclude", "strict", "baseline", "cache-max-size"}
)


def build_timeout(config: Config) -> float:
    """How long one preamble build may take: several files' worth, never under five minutes."""
    return max(BUILD_TIMEOUT_MIN_S, 6 * float(config.get("file-timeout")))


@dataclass
class ParseCounts:
    """How a session's files were parsed (`RunStats` adds every process's counts up)."""

    preambles_built: int = 0
    preamble_parses: int = 0  # files parsed against a preamble
    plain_parses: int = 0  # C++ files parsed without one
    text_only: int = 0  # C++ files not parsed: the selected rules read their text alone (`engine.py`)

    def add(self, other: ParseCounts) -> None:
        self.preambles_built += other.preambles_built
        self.preamble_parses += other.preamble_parses
        self.plain_parses += other.plain_parses
        self.text_only += other.text_only


def open_result_cache(options: RunOptions) -> Any:
    """The run's `ResultCache`, or None when results are not to be kept."""
    cache = options.cache
    if cache is None or cache.root is None or not cache.results:
        return None
    from .cache import project_dir
    from .clang.parse import PER_FILE_SETTINGS
    from .result_cache import ResultCache, run_fingerprint

    config = options.config
    table = options_table(config)
    root = str(config.root.resolve())
    fingerprint = run_fingerprint(
        {
            "config": {key: value for key, value in table.items() if key not in FILTER_KEYS},
            "root": root,
            "conventions": conventions.fingerprint(root, table),
            "settings": {key: value for key, value in asdict(options.settings).items() if key not in PER_FILE_SETTINGS},
            "preamble": cache.preamble,
        }
    )
    return ResultCache(project_dir(Path(cache.root), config.root), fingerprint)


class CacheSession:
    """The caches of one process of a run (the preamble cache lazily)."""

    def __init__(self, options: RunOptions, results: Any, bound: Any = None) -> None:
        from .clang.parse import forget_compile_args

        forget_compile_args()  # a new session: include directories are looked for again
        self.options = options
        self.results = results  # ResultCache or None
        self.bound = bound  # how each file is bounded (None: `run_bounded`, see `pipeline.check`)
        self._preamble: Any = None
        self._parses = ParseCounts()

    @property
    def preamble(self) -> Any:
        cache = self.options.cache
        if self._preamble is None and cache is not None and cache.root is not None and cache.preamble != "off":
            from .cache import preamble_store
            from .clang.preamble import PreambleCache

            hashes = self.results.hashes if self.results is not None else None
            self._preamble = PreambleCache(
                preamble_store(Path(cache.root)),
                cache.preamble,
                hashes,
                build_timeout=build_timeout(self.options.config),
                max_bytes=cache.max_bytes,
            )
        return self._preamble

    def close(self) -> None:
        """Let go of the preambles this process used (eviction may take them from now on)."""
        if self._preamble is not None:
            self._preamble.close()

    def key(self, path: Path, data: bytes, plan: CheckPlan | None = None) -> str:
        """The result's key; `plan`: what its check ran and built (this run's, by default). A
        header parsed in its includer's context (`ParseSettings.context_args`) is keyed by it too."""
        plan = plan if plan is not None else self.options.plan(path)
        settings = self.options.settings
        args = None
        if not is_python(path) and parses(plan.needs):
            args = [*compile_args(path, settings), *settings.context_args(path)]
        named = ",".join([*sorted(need.value for need in plan.needs), *plan.codes])
        return self.results.key(str(path), self.options.config.relative(path), data, args, named)

    def lookup(self, path: Path, data: bytes | None = None) -> tuple[FileResult | None, bytes | None]:
        """A cached result for `path` (its bytes `data`, read here unless given), filtered
        for this run's selection."""
        try:
            if data is None:
                data = read_limited(path, self.options.config.get("max-file-bytes"))
        except OSError:
            return None, None
        if len(data) > self.options.config.get("max-file-bytes"):
            return None, data  # refused unparsed by `pipeline.check`; nothing to look up
        if self.results is None:
            return None, data
        typed = self.results.load(self.key(path, data))
        if typed is None and self.options.plan(path) != (everything := self.options.plan(path, every_rule=True)):
            typed = self.results.load(self.key(path, data, everything))  # a full run's result serves any selection
        if typed is None:
            return None, data
        result = selected(path, typed, data.decode("utf-8", errors="replace"), self.options)
        return replace(result, cached=True), data

    def check(self, path: Path, data: bytes | None = None) -> FileResult:
        """Check one file (with the preamble, where it is parsed) and store its result."""
        parsed = not is_python(path) and parses(self.options.needs(path))
        result, outcome = check(path, self.options, self.preamble if parsed else None, data, self.bound)
        if outcome.deps is not None and parsed:
            if outcome.deps.groups:
                self._parses.preamble_parses += 1
            else:
                self._parses.plain_parses += 1
        if self.results is not None and outcome.data is not None and outcome.deps is not None:
            self.results.store(self.key(path, outcome.data), outcome.typed, outcome.deps)
        return result

    def stale(self) -> bool:
        """Whether a file this session hashed (a header, a preamble's input) changed since:
        its memoized hashes, preambles and cached verdicts no longer describe the disk."""
        hashes = [
            self.results.hashes if self.results is not None else None,
            self._preamble.hashes if self._preamble is not None else None,
        ]
        return any(h is not None and h.changed() for h in hashes)

    def counts(self) -> ParseCounts:
        """How this session parsed its files so far, with the preambles it built."""
        built = self._preamble.stats.built if self._preamble is not None else 0
        return replace(self._parses, preambles_built=built)


class WarmSessions:
    """Cache sessions kept from one run to the next by a long-lived process (`kernel-check
    server`): the next check of a file re-uses the loaded preamble and the memoized header
    hashes instead of finding them again. One session per set of run options (a project's
    configuration), the `KEEP` most recently used; a session any of whose files changed on
    disk is replaced by a fresh one."""

    KEEP = 4

    def __init__(self) -> None:
        self._sessions: dict[str, CacheSession] = {}

    def get(self, options: RunOptions) -> CacheSession:
        key = repr(options)  # plain dataclasses of strings, paths, tuples and dicts
        session = self._sessions.pop(key, None)
        if session is None or session.stale():
            if session is not None:
                session.close()
            session = CacheSession(options, open_result_cache(options))
        self._sessions[key] = session  # now the most recently used
        for oldest in list(self._sessions)[: -self.KEEP]:
            self._sessions.pop(oldest).close()  # its preambles may be evicted from now on
        return session
