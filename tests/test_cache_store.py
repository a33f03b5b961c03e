"""The preamble store every project shares: sharing by recipe, the size cap, `clean`.

Real libclang parses of small hermetic trees (`test_cache.make_tree`), real files; the
store is looked at through its directories, manifests and the runs' own counters
(`RunStats`), never through timing. Every cache lives under the test's `tmp_path`.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from kernel_check.cache import format_size, project_dir, static_root, tree_size
from kernel_check.clang.parse import resolve_settings
from kernel_check.clang.preamble import evict
from kernel_check.engine import CacheOptions, RunOptions, RunStats, check_file, run_static
from test_cache import findings, make_tree, options, plain

pytestmark = pytest.mark.slow  # several projects, processes and preamble builds per test


def project(root: Path, extra_include: bool = False) -> list[Path]:
    """A tree (`make_tree`) and the files a run checks: its kernels, which parse against the
    project preamble, and its two headers, which parse against the external one (`alpha.h`:
    `<cstdint>`) and the base one (`beta.h` includes nothing)."""
    root.mkdir(parents=True)
    files = make_tree(root)
    if extra_include:  # the include directory holds more than `sgl_kernel/`
        (root / "include" / "vendor.h").write_text("#pragma once\n")
    headers = sorted((root / "include" / "sgl_kernel").glob("*.h"))
    return [*files, *headers]


def store_of(cache: Path) -> Path:
    return static_root(cache) / "preamble"


def recipes(cache: Path) -> set[Path]:
    store = store_of(cache)
    return {d for d in store.iterdir() if d.is_dir()} if store.is_dir() else set()


def pch_files(directory: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in directory.glob("*.pch")}


def test_two_projects_share_the_preambles_that_hold_nothing_of_their_own(tmp_path: Path) -> None:
    """Two copies of one project: the external and base preambles (the standard library,
    the prelude) are built once and the second run parses against those same PCH files;
    each copy has its own project preamble (it holds the project's headers, by path).
    Findings are the plain parse's."""
    cache = tmp_path / "cache"
    one, two = tmp_path / "one", tmp_path / "two"
    first, second = RunStats(), RunStats()
    files_one = project(one)
    assert findings(run_static(files_one, options(one, cache), stats=first)) == plain(files_one, one)
    after_one = {d: pch_files(d) for d in recipes(cache)}
    files_two = project(two)
    assert findings(run_static(files_two, options(two, cache), stats=second)) == plain(files_two, two)
    assert (first.preambles_built, first.preamble_parses) == (3, 5)
    assert (second.preambles_built, second.preamble_parses) == (1, 5)  # only its project preamble
    shared = set(after_one) & recipes(cache)
    assert len(after_one) == 3 and len(recipes(cache)) == 4 and len(shared) == 3
    assert all(pch_files(d) == after_one[d] for d in shared)  # no PCH rebuilt, replaced or added
    portable = {d: [e["portable"] for e in json.loads((d / "manifest.json").read_text())["entries"]] for d in shared}
    assert sorted(portable.values()) == [[False], [True], [True]]  # the first project's own is not


def test_an_include_directory_holding_more_than_the_library_is_not_shared(tmp_path: Path) -> None:
    """A header there could stand in for a library's: such a project gets preambles of its own."""
    cache = tmp_path / "cache"
    one, two = tmp_path / "one", tmp_path / "two"
    run_static(project(one), options(one, cache))
    files = project(two, extra_include=True)
    stats = RunStats()
    assert findings(run_static(files, options(two, cache), stats=stats)) == plain(files, two)
    assert stats.preambles_built == 3 and len(recipes(cache)) == 6  # none shared


def _run_and_dump(root: str, cache: str, out: str) -> None:
    files = [Path(root) / name for name in json.loads(Path(out).read_text())]
    results = run_static(files, options(Path(root), Path(cache)))
    Path(out).write_text(json.dumps([[str(f) for f in r.findings] for r in results]))


def test_two_projects_building_one_recipe_at_once(tmp_path: Path) -> None:
    """Two processes, two projects, one store, started together: each shared recipe is built
    once (the other process waits on its lock and loads it), and each run's findings are
    the plain parse's."""
    cache = tmp_path / "cache"
    roots = [tmp_path / "one", tmp_path / "two"]
    outs = [tmp_path / "one.json", tmp_path / "two.json"]
    expected = []
    for root, out in zip(roots, outs):
        files = project(root)
        out.write_text(json.dumps([str(f.relative_to(root)) for f in files]))
        expected.append([[str(f) for f in found] for found in plain(files, root)])
    ctx = multiprocessing.get_context("spawn")
    runs = [ctx.Process(target=_run_and_dump, args=(str(root), str(cache), str(out))) for root, out in zip(roots, outs)]
    for run in runs:
        run.start()
    for run in runs:
        run.join(600)
        assert run.exitcode == 0
    assert [json.loads(out.read_text()) for out in outs] == expected
    directories = recipes(cache)
    assert len(directories) == 4  # a project preamble each, the external and base ones shared
    entries = [json.loads((d / "manifest.json").read_text())["entries"] for d in directories]
    assert all(len(listed) == 1 for listed in entries)  # one build each, none repeated
    assert sum(len(pch_files(d)) for d in directories) == 4


def _defined(root: Path, cache: Path, define: str, max_bytes: int | None = None) -> RunOptions:
    """A run whose files parse again each time (no result cache) with `-D<define>`: a recipe
    of its own."""
    base = options(root, cache)
    settings = resolve_settings("hermetic", (), (define,))
    return replace(base, settings=settings, cache=CacheOptions(base.cache.root, results=False, max_bytes=max_bytes))


def _run_defined(root: Path, files: list[Path], cache: Path, define: str, max_bytes: int | None = None) -> Path:
    """Run the kernels `files` with `define`; the recipe directory it used (one: the project
    preamble's), the one whose last use -- its manifest's time -- is the latest."""
    opts = _defined(root, cache, define, max_bytes)
    results = run_static(files, opts)
    assert findings(results) == [check_file(f, replace(opts, cache=None)).findings for f in files]
    return max(recipes(cache), key=lambda d: (d / "manifest.json").stat().st_mtime_ns)


def test_the_cap_evicts_the_least_recently_used(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    root = tmp_path / "tree"
    kernels = project(root)[:3]
    a = _run_defined(root, kernels, cache, "KC_VARIANT=1")
    b = _run_defined(root, kernels, cache, "KC_VARIANT=2")
    assert a != b and recipes(cache) == {a, b}
    assert _run_defined(root, kernels, cache, "KC_VARIANT=1") == a  # used again: b is now the oldest
    cap = int(2.5 * max(tree_size(a), tree_size(b)))
    c = _run_defined(root, kernels, cache, "KC_VARIANT=3", max_bytes=cap)
    assert recipes(cache) == {a, c}
    assert tree_size(store_of(cache)) <= cap
    # b comes back (rebuilt), and a, now the least recently used, goes
    b_again = _run_defined(root, kernels, cache, "KC_VARIANT=2", max_bytes=cap)
    assert b_again.name == b.name and recipes(cache) == {b_again, c}


_HOLDER = """
import sys
from pathlib import Path
from kernel_check.clang.parse import parse_file, resolve_settings
from kernel_check.clang.preamble import PreambleCache

store, path, define = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
cache = PreambleCache(store)
unit = parse_file(path, path.read_bytes(), resolve_settings("hermetic", (), (define,)), cache)
print("parsed against a preamble" if unit.preamble is not None else "parsed plainly", flush=True)
sys.stdin.read()  # hold the preamble until the test closes this pipe
"""


def test_eviction_never_takes_a_preamble_a_running_process_uses(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    root = tmp_path / "tree"
    kernels = project(root)[:3]
    held = _run_defined(root, kernels, cache, "KC_VARIANT=1")
    other = _run_defined(root, kernels, cache, "KC_VARIANT=2")
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(store_of(cache)), str(kernels[0]), "KC_VARIANT=1"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "parsed against a preamble"
        assert evict(store_of(cache), keep=store_of(cache) / "none", max_bytes=0) == [other]
        assert recipes(cache) == {held} and pch_files(held)
    finally:
        holder.communicate("", timeout=60)
    assert evict(store_of(cache), keep=store_of(cache) / "none", max_bytes=0) == [held]
    assert recipes(cache) == set()


def kernel_check(*argv: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kernel_check", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=600,
    )


def test_clean_reports_what_it_freed(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    one, two = tmp_path / "one", tmp_path / "two"
    for root in (one, two):
        project(root)
        assert kernel_check(".", "--format", "json", "--cache-dir", str(cache), cwd=root).returncode in (0, 1)
    results_one = project_dir(static_root(cache), one)
    results_two = project_dir(static_root(cache), two)
    store = tree_size(store_of(cache))
    assert results_one.is_dir() and results_two.is_dir() and store > 0
    freed = tree_size(results_one)
    cleaned = kernel_check("clean", "--cache-dir", str(cache), cwd=one)
    assert cleaned.returncode == 0, cleaned.stderr
    assert cleaned.stdout.splitlines() == [
        f"freed {format_size(freed)}: removed the cached results of {one} ({results_one})",
        f"kept {format_size(store)}: the preamble store all projects share (`kernel-check clean --all` removes it)",
    ]
    assert not results_one.exists() and results_two.is_dir() and tree_size(store_of(cache)) == store
    again = kernel_check("clean", "--cache-dir", str(cache), cwd=one)
    assert again.stdout.splitlines()[0] == f"nothing to remove: no cached results of {one}"
    total, results = tree_size(cache), tree_size(static_root(cache)) - store
    everything = kernel_check("clean", "--all", "--cache-dir", str(cache), cwd=one)
    assert everything.returncode == 0, everything.stderr
    assert everything.stdout.strip() == (
        f"freed {format_size(total)}: removed {cache} (precompiled preambles "
        f"{format_size(store)}, results {format_size(results)})"
    )
    assert not cache.exists()
    assert kernel_check("clean", "--all", "--cache-dir", str(cache), cwd=one).stdout.strip() == "nothing to remove"


def one_line_error(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    return result.stderr.strip()


def test_a_bad_cache_max_size_is_one_line_naming_the_file_and_key(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    (root / "ok.py").write_text("def f():\n    return 1\n")
    config = root / "pyproject.toml"
    config.write_text('[tool.kernel-check]\ncache-max-size = "lots"\n')
    error = one_line_error(kernel_check(".", "--cache-dir", str(tmp_path / "cache"), cwd=root))
    assert str(config) in error and "'cache-max-size'" in error and "lots" in error
    config.write_text("[tool.kernel-check]\ncache-max-size = 1000\n")
    assert "'cache-max-size' must be str" in one_line_error(kernel_check(".", cwd=root))
    config.write_text('[tool.kernel-check]\ncache-max-size = "2 GiB"\n')
    bad_env = kernel_check(
        ".", "--cache-dir", str(tmp_path / "cache"), cwd=root, env={"KERNEL_CHECK_CACHE_MAX_SIZE": "huge"}
    )
    assert one_line_error(bad_env).startswith("kernel-check: error: KERNEL_CHECK_CACHE_MAX_SIZE: ")
    assert kernel_check(".", "--cache-dir", str(tmp_path / "cache"), cwd=root).returncode == 0


def test_the_configured_cap_and_the_environment_variable_that_overrides_it(tmp_path: Path) -> None:
    """`cache-max-size = "0"`: the store keeps only what the last run used; the variable,
    when set, wins. A change of the cap re-uses every cached result."""
    cache = tmp_path / "cache"
    root = tmp_path / "tree"
    kernels = project(root)[:3]
    (root / "pyproject.toml").write_text('[tool.kernel-check]\nmode = "hermetic"\ncache-max-size = "0"\n')
    paths = [str(k.relative_to(root)) for k in kernels]
    for variant in ("1", "2"):
        run = kernel_check(*paths, "-D", f"KC_VARIANT={variant}", "--cache-dir", str(cache), "--jobs", "1", cwd=root)
        assert run.returncode in (0, 1), run.stderr
        assert len(recipes(cache)) == 1
    run = kernel_check(
        *paths,
        "-D",
        "KC_VARIANT=3",
        "--cache-dir",
        str(cache),
        "--jobs",
        "1",
        cwd=root,
        env={"KERNEL_CHECK_CACHE_MAX_SIZE": "1GiB", "KERNEL_CHECK_STATS": "1"},
    )
    assert run.returncode in (0, 1), run.stderr
    assert len(recipes(cache)) == 2
    (root / "pyproject.toml").write_text('[tool.kernel-check]\nmode = "hermetic"\ncache-max-size = "5GiB"\n')
    run = kernel_check(
        *paths,
        "-D",
        "KC_VARIANT=3",
        "--cache-dir",
        str(cache),
        "--jobs",
        "1",
        cwd=root,
        env={"KERNEL_CHECK_STATS": "1"},
    )
    assert "cached=3" in run.stderr, run.stderr


def test_a_warm_session_holds_its_preambles_until_it_is_dropped(tmp_path: Path) -> None:
    """`kernel-check server` keeps a session from one run to the next (`WarmSessions`): what
    it loaded stays held between runs, and is let go when the session is dropped."""
    from kernel_check.cache_session import WarmSessions

    cache = tmp_path / "cache"
    root = tmp_path / "tree"
    kernels = project(root)[:3]
    sessions = WarmSessions()
    run_static(kernels, _defined(root, cache, "KC_VARIANT=1"), sessions=sessions)
    used = recipes(cache)
    assert len(used) == 1
    nowhere = store_of(cache) / "none"
    assert evict(store_of(cache), keep=nowhere, max_bytes=0) == [] and recipes(cache) == used
    for variant in range(2, 2 + WarmSessions.KEEP):  # newer sessions push the first one out
        sessions.get(_defined(root, cache, f"KC_VARIANT={variant}"))
    assert evict(store_of(cache), keep=nowhere, max_bytes=0) == list(used)
