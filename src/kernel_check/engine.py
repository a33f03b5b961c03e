"""The static check of a set of files, the way the command line runs it.

`run_static` ties the stages together:

1. files whose language no selected rule reads are skipped;
2. the result cache (`cache_session.py`, `result_cache.py`) answers every file whose
   bytes, headers, config and rule set are unchanged -- in this process, without loading
   libclang;
3. one or two remaining files are checked in this process (process start-up dominates a
   pre-commit run), each through the per-file pipeline (`pipeline.py`) under its time and
   memory bounds; more go to a pool of worker processes (`pool.py`, `jobs` of them), each
   importing libclang once and parsing against precompiled preambles
   (`clang/preamble.py`);
4. results come back in the order of `paths`, whatever order the workers finish in.

`check_file` (`pipeline.py`) runs the pipeline on one file without any cache: what the
tests and library callers use.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .cache_session import CacheSession, ParseCounts, WarmSessions, open_result_cache
from .config import real_path
from .discover import is_python
from .paths import display_path
from .pipeline import CacheOptions, RunOptions, check_file, reads_text_alone_of
from .pool import Pool
from .progress import Progress
from .registry import Language, rules_for
from .results import FileResult

__all__ = ["CacheOptions", "FileResult", "RunOptions", "RunStats", "check_file", "run_static"]

IN_PROCESS_MAX = 2  # this many files or fewer to check: no pool
TEMP_PREAMBLE_MIN = 3  # --no-cache: a throw-away preamble pays off from this many C++ files


@dataclass
class RunStats(ParseCounts):
    """What a `run_static` did (the benchmark reads it from `KERNEL_CHECK_STATS`): how its
    files were parsed (`ParseCounts`, added up over every process) and these counts."""

    files: int = 0
    skipped: int = 0  # no selected rule reads the file's language
    cached: int = 0
    checked: int = 0
    workers: int = 0
    seconds: float = 0.0


def _with_file_contexts(options: RunOptions, paths: list[Path], buffers: dict[Path, bytes]) -> RunOptions:
    """`options` whose parse settings hold what the run's files say about each other: for
    each header another C++ file includes, the context it is parsed in should it fail alone
    (`clang/includers.py`); for each C++ file a Python wrapper of the run builds, the -D/-I
    arguments of its `load_jit` call (a file no wrapper of the run builds with flags: of the
    project's wrapper that does, `wrapper_search.py`), and for each source `load_inline`
    builds, the headers it puts first (`jit_flags.py`)."""
    cpp = [path for path in paths if not is_python(path)]
    wrappers = [path for path in paths if is_python(path)]
    sources = {real_path(path): data for path, data in buffers.items()}
    settings = options.settings
    if len(cpp) >= 2:
        from .clang.includers import include_contexts

        contexts = include_contexts(cpp, settings.include_dirs, sources)
        settings = replace(settings, include_context=tuple(sorted(contexts.items())))
    if cpp:
        from .jit_flags import inline_build_args
        from .wrapper_search import run_wrapper_flags

        cache = options.cache.root if options.cache is not None else None
        flags = run_wrapper_flags(cpp, wrappers, sources, options.config.root, cache)
        for path in cpp:
            resolved = real_path(path)
            inline = inline_build_args(path, _bytes_of(resolved, sources))
            if inline:
                flags[str(resolved)] = (*inline, *flags.get(str(resolved), ()))
        settings = replace(settings, wrapper_flags=tuple(sorted(flags.items())))
    return replace(options, settings=settings)


def _bytes_of(path: Path, sources: dict[Path, bytes]) -> bytes:
    """`path`'s contents: the buffer given for it, else the file (empty when unreadable)."""
    if path in sources:
        return sources[path]
    try:
        return path.read_bytes()
    except OSError:
        return b""


def run_static(
    paths: list[Path],
    options: RunOptions,
    progress: Progress | None = None,
    buffers: dict[Path, bytes] | None = None,
    stats: RunStats | None = None,
    sessions: WarmSessions | None = None,
) -> list[FileResult]:
    """Check `paths`; results in the order of `paths` (see the module doc). `progress` hears
    of each file started and finished; `buffers` holds the contents of paths that are to be
    checked as these bytes rather than as read from disk (`--stdin-filename`); `stats`, when
    given, is filled in with what the run did; `sessions`, when given, supplies this
    process's cache session kept warm from earlier runs (`kernel-check server`)."""
    started = time.perf_counter()
    stats = stats if stats is not None else RunStats()
    stats.files = len(paths)
    progress = progress or Progress(enabled=False)
    progress.add(len(paths))
    buffers = buffers or {}
    options = _with_file_contexts(options, paths, buffers)
    warm = sessions.get(options) if sessions is not None else None
    session = warm if warm is not None else CacheSession(options, open_result_cache(options))
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
        # files whose selected rules read the text alone: each takes less than a worker's start
        text_alone = [(index, data) for index, data in pending if reads_text_alone_of(paths[index], options)]
        for index, data in text_alone:
            results[index] = session.check(paths[index], data)
            progress.finished()
        stats.text_only = len(text_alone)
        pending = [(index, data) for index, data in pending if results[index] is None]
        cache = options.cache
        cpp = sum(1 for index, _ in pending if not is_python(paths[index]))
        if cache is not None and cache.root is None and cache.preamble != "off" and cpp >= TEMP_PREAMBLE_MIN:
            temporary = tempfile.mkdtemp(prefix="kernel-check-preamble-")
            options = replace(options, cache=replace(cache, root=Path(temporary), results=False))
            session = CacheSession(options, None)
        jobs = max(1, min(options.jobs, len(pending)))
        if jobs == 1 or len(pending) <= IN_PROCESS_MAX or buffers:
            for index, data in pending:
                progress.status(display_path(paths[index]))
                results[index] = session.check(paths[index], data)
                progress.finished()
            stats.add(session.counts())
        else:
            stats.workers = jobs
            pool = Pool(session, jobs, progress)
            for index, result in pool.run(paths, [i for i, _ in pending]):
                results[index] = result
                progress.finished()
            stats.add(pool.counts)
        if session.results is not None and pending and cache is not None and cache.root is not None:
            from .result_cache import prune

            prune(Path(cache.root))  # at most once a day: entries unused for a month go
    finally:
        if session is not warm:
            session.close()  # a warm session holds its preambles for the next run
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
        stats.seconds = time.perf_counter() - started
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

    selection = options.selection
    codes = {language: [r.meta.code for r in rules_for(language)] for language in Language}
    if selection.parses:
        return lambda relative: tuple(Language)
    return lambda relative: tuple(
        language
        for language in Language
        if any(selection.enabled(code, relative) for code in [*codes[language], UNUSED_SUPPRESSION])
    )
