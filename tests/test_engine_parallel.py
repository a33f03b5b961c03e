"""The process pool: the same results in the same order as a serial run, safe when runs
overlap, and a file that takes too long costs that file only."""

from __future__ import annotations

import ctypes
import functools
import json
import multiprocessing
import os
from pathlib import Path

import pytest

from kernel_check import pipeline, watchdog
from kernel_check.cache import static_root
from kernel_check.engine import RunStats, run_static
from test_cache import KERNEL, PYTHON, make_tree, options, plain

pytestmark = pytest.mark.slow  # process pools, crashing and memory-hogging workers


def varied_tree(root: Path) -> list[Path]:
    """Kernels of different sizes (so workers finish out of order), Python files, a broken file."""
    files = make_tree(root, kernels=4)
    for index in range(3):
        body = "".join(f"__global__ void pad_{index}_{n}(const float* p) {{}}\n" for n in range(index * 20))
        path = root / "csrc" / "more" / f"big{index}.cuh"
        path.parent.mkdir(exist_ok=True)
        path.write_text(KERNEL.replace("copy_kernel", f"big_{index}") + f"namespace sglang {{\n{body}}}\n")
        files.append(path)
    broken = root / "csrc" / "broken.cuh"
    broken.write_text("#include <sgl_kernel/alpha.h>\nnamespace sglang { struct { int x; } }\n")
    python = root / "csrc" / "other.py"
    python.write_text(PYTHON + "def g(:\n")
    return [*files, broken, python]


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, list[Path], Path]:
    root = tmp_path / "tree"
    root.mkdir()
    return root, varied_tree(root), tmp_path / "cache"


def test_parallel_equals_serial(tree) -> None:
    root, files, cache = tree
    serial = run_static(files, options(root, None, jobs=1, strategy="off"))
    stats = RunStats()
    parallel = run_static(files, options(root, cache, jobs=2), stats=stats)
    assert stats.workers == 2
    assert [r.path for r in parallel] == [str(p) for p in files]
    assert [r.findings for r in parallel] == [r.findings for r in serial] == plain(files, root)
    stats = RunStats()
    warm = run_static(files, options(root, cache, jobs=2), stats=stats)
    assert all(r.cached for r in warm) and stats.workers == 0
    assert [r.findings for r in warm] == [r.findings for r in serial]


def test_parallel_without_cache_equals_serial(tree) -> None:
    root, files, _ = tree
    serial = run_static(files, options(root, None, jobs=1))
    parallel = run_static(files, options(root, None, jobs=3))
    assert [r.findings for r in parallel] == [r.findings for r in serial]


def test_small_runs_stay_in_process(tree) -> None:
    root, files, cache = tree
    stats = RunStats()
    run_static(files[:2], options(root, cache, jobs=4), stats=stats)
    assert stats.workers == 0


def test_a_slow_file_becomes_kc000_and_the_run_goes_on(tree) -> None:
    root, files, cache = tree
    results = run_static(files, options(root, cache, jobs=2, file_timeout=0.000001))
    assert [r.path for r in results] == [str(p) for p in files]
    for result in results:
        assert [f.code for f in result.findings] == ["KC000"]
        assert "file-timeout" in result.findings[0].message
    again = run_static(files, options(root, cache, jobs=2))  # a timeout is never cached
    assert not any(r.cached for r in again)
    assert [r.findings for r in again] == plain(files, root)


def _run_and_dump(root: str, cache: str, out: str, stats: RunStats | None = None) -> None:
    from kernel_check.result_cache import encode

    files = sorted(Path(root).rglob("*.cuh")) + sorted(Path(root).rglob("*.py"))
    results = run_static(files, options(Path(root), Path(cache), jobs=2), stats=stats)
    Path(out).write_text(json.dumps([[r.path, [encode(f) for f in r.findings]] for r in results]))


def test_concurrent_runs_share_the_cache_safely(tree, tmp_path: Path) -> None:
    root, files, cache = tree
    ctx = multiprocessing.get_context("spawn")
    outs = [tmp_path / f"out{i}.json" for i in range(3)]
    runs = [ctx.Process(target=_run_and_dump, args=(str(root), str(cache), str(out))) for out in outs]
    for run in runs:
        run.start()
    for run in runs:
        run.join(600)
        assert run.exitcode == 0
    dumps = [json.loads(out.read_text()) for out in outs]
    assert dumps[0] == dumps[1] == dumps[2]
    stats = RunStats()
    _run_and_dump(str(root), str(cache), str(tmp_path / "after.json"), stats)
    assert json.loads((tmp_path / "after.json").read_text()) == dumps[0]
    assert stats.cached == len(files)
    manifests = list((static_root(cache) / "preamble").glob("*/manifest.json"))
    for manifest in manifests:
        assert len(json.loads(manifest.read_text())["entries"]) == 1  # built once, not per run


# -- a pool worker is its files' bounded unit (watchdog.BoundHere) ---------------------------
def _misbehaving(victim: str, how: str):
    """`pipeline._raw_findings`, except on `victim`: the forked workers inherit the patch."""
    real = pipeline._raw_findings

    def raw_findings(path, *args):
        if str(path) == victim:
            os.write(2, b"a last word from the worker\n")
            if how == "segfault":
                ctypes.string_at(0)
            blocks = []
            while True:  # to the worker's address-space limit
                blocks.append(bytearray(64 << 20))
        return real(path, *args)

    return raw_findings


@pytest.mark.parametrize("how", ["segfault", "memory"])
def test_a_crash_or_memory_hog_in_a_worker_costs_one_file(tree, monkeypatch, how: str) -> None:
    root, files, cache = tree
    victim = files[1]
    monkeypatch.setattr(pipeline, "_raw_findings", _misbehaving(str(victim), how))
    if how == "memory":  # a smaller headroom than the default 4 GiB: the test stays quick
        monkeypatch.setattr(
            watchdog.BoundHere,
            "__init__",
            functools.partialmethod(watchdog.BoundHere.__init__, memory_headroom=512 << 20),
        )
    results = run_static(files, options(root, cache, jobs=2))
    assert [r.path for r in results] == [str(p) for p in files]
    expected = plain(files, root)
    for index, (result, wanted) in enumerate(zip(results, expected)):
        if index != files.index(victim):
            assert result.findings == wanted
    (finding,) = results[files.index(victim)].findings
    assert finding.code == "KC000"
    if how == "segfault":
        assert "crashed on this file (SIGSEGV)" in finding.message
        assert "a last word from the worker" in finding.detail  # the worker's stderr, kept
    else:
        assert "out of memory" in finding.message
    again = run_static(files, options(root, cache, jobs=2))  # never cached
    assert not again[files.index(victim)].cached


def test_pool_workers_do_not_fork_per_file(tree, monkeypatch) -> None:
    root, files, cache = tree
    forks = multiprocessing.get_context("fork").Value("i", 0)
    real_fork = os.fork

    def counting_fork() -> int:
        pid = real_fork()
        if pid:
            with forks.get_lock():
                forks.value += 1
        return pid

    monkeypatch.setattr(os, "fork", counting_fork)
    stats = RunStats()
    run_static(files, options(root, cache, jobs=2, strategy="off"), stats=stats)
    assert stats.workers == 2
    assert forks.value == 2  # the two workers; no child per file inside them
