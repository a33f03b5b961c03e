"""The result cache and the precompiled preamble: hits, misses, invalidation, corruption.

Real libclang, small trees (hermetic mode, a two-header `sgl_kernel/`), no timing
assertions: every check compares against `check_file`, the plain parse without a cache.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from kernel_check.cache import project_dir, static_root
from kernel_check.clang.parse import parse_file, resolve_settings
from kernel_check.clang.preamble import PreambleCache
from kernel_check.config import load_config
from kernel_check.engine import CacheOptions, RunOptions, RunStats, check_file, run_static
from kernel_check.filter import Selection
from kernel_check.registry import load_rules

ALPHA = """#pragma once
#include <cstdint>
namespace sglang {
/// \\brief A value.
struct Alpha {
  int32_t v;
};
}  // namespace sglang
"""
BETA = """#pragma once
namespace sglang {
/// \\brief Another value.
struct Beta {
  float v;
};
inline float twice(float x) { return 2 * x; }
}  // namespace sglang
"""
KERNEL = """#include <sgl_kernel/alpha.h>

namespace sglang {
/// \\brief Copies.
__global__ void copy_kernel(float* __restrict__ dst, const float* src, Alpha a) {
  dst[0] = src[0] + static_cast<float>(a.v);
}
}  // namespace sglang
"""
PYTHON = "def f():\n    return 1\n"


def make_tree(root: Path, kernels: int = 3) -> list[Path]:
    (root / "pyproject.toml").write_text('[tool.kernel-check]\nmode = "hermetic"\n')
    headers = root / "include" / "sgl_kernel"
    headers.mkdir(parents=True)
    (headers / "alpha.h").write_text(ALPHA)
    (headers / "beta.h").write_text(BETA)
    files = []
    for index in range(kernels):
        path = root / "csrc" / f"k{index}.cuh"
        path.parent.mkdir(exist_ok=True)
        path.write_text(KERNEL.replace("copy_kernel", f"copy_kernel_{index}"))
        files.append(path)
    (root / "csrc" / "wrap.py").write_text(PYTHON)
    return files + [root / "csrc" / "wrap.py"]


def options(root: Path, cache: Path | None, jobs: int = 1, strategy: str = "union", **overrides) -> RunOptions:
    load_rules()
    config = load_config(root).with_overrides(**overrides)
    settings = resolve_settings("hermetic")
    cache_options = CacheOptions(static_root(cache) if cache else None, results=cache is not None, preamble=strategy)
    return RunOptions(config, settings, cache=cache_options, jobs=jobs)


def plain(paths: list[Path], root: Path, **overrides) -> list:
    opts = options(root, None, **overrides)
    return [check_file(p, RunOptions(opts.config, opts.settings)).findings for p in paths]


def findings(results) -> list:
    return [r.findings for r in results]


def results_dir(cache: Path, root: Path) -> Path:
    """Where the project at `root` keeps its result cache."""
    return project_dir(static_root(cache), root)


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, list[Path], Path]:
    root = tmp_path / "tree"
    root.mkdir()
    return root, make_tree(root), tmp_path / "cache"


def test_second_run_is_answered_from_the_cache(tree) -> None:
    root, files, cache = tree
    stats = RunStats()
    first = run_static(files, options(root, cache), stats=stats)
    assert not any(r.cached for r in first)
    assert stats.preamble_parses == 3  # every kernel parsed against the preamble
    second = run_static(files, options(root, cache))
    assert all(r.cached for r in second)
    assert findings(first) == findings(second) == plain(files, root)
    assert any(f.code == "KC101" for f in second[0].findings)


def test_changed_file_is_a_miss_and_only_it(tree) -> None:
    root, files, cache = tree
    run_static(files, options(root, cache))
    files[1].write_text(files[1].read_text().replace("const float* src", "const float* __restrict__ src"))
    results = run_static(files, options(root, cache))
    assert [r.cached for r in results] == [True, False, True, True]
    assert findings(results) == plain(files, root)
    assert not any(f.code == "KC101" for f in results[1].findings)


def test_changed_header_invalidates_results_and_rebuilds_the_preamble(tree) -> None:
    root, files, cache = tree
    run_static(files, options(root, cache))
    manifests = list((static_root(cache) / "preamble").glob("*/manifest.json"))
    before = {m: json.loads(m.read_text())["entries"][0]["pch"] for m in manifests}
    header = root / "include" / "sgl_kernel" / "alpha.h"
    header.write_text(ALPHA.replace("int32_t v;", "int32_t v;\n  int32_t w;"))
    stats = RunStats()
    results = run_static(files, options(root, cache), stats=stats)
    assert [r.cached for r in results] == [False, False, False, True]  # the Python file has no headers
    assert stats.preambles_built == 1
    after = {m: json.loads(m.read_text())["entries"][0]["pch"] for m in manifests}
    assert any(before[m] != after[m] for m in manifests)
    assert findings(results) == plain(files, root)


def test_header_with_an_error_is_left_out_of_the_preamble(tree) -> None:
    root, files, cache = tree
    (root / "include" / "sgl_kernel" / "beta.h").write_text(BETA + "\nnot_a_type broken;\n")
    stats = RunStats()
    results = run_static(files, options(root, cache), stats=stats)
    expected = plain(files, root)
    assert findings(results) == expected
    # the kernels do not include beta.h: the preamble without it still serves them
    assert stats.preamble_parses == 3
    entry = json.loads(next((static_root(cache) / "preamble").glob("*/manifest.json")).read_text())["entries"][0]
    assert entry["excluded"] == ["sgl_kernel/beta.h"]


def test_corrupt_result_entries_are_ignored(tree) -> None:
    root, files, cache = tree
    run_static(files, options(root, cache))
    entries = sorted((results_dir(cache, root) / "results").rglob("*.json"))
    entries[0].write_text("{not json")
    entries[1].write_bytes(entries[1].read_bytes()[:20])
    entries[2].write_text(json.dumps({"format": 1, "key": "someone else's"}))
    for group in (results_dir(cache, root) / "depsets").glob("*.json"):
        group.write_text("[]")  # a dependency set that no longer hashes to its name
    results = run_static(files, options(root, cache))
    assert findings(results) == plain(files, root)
    assert sum(r.cached for r in results) <= 1  # only the untouched Python entry may hit


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["garbage", "truncate", "delete", "touch-header"])
def test_damaged_preamble_falls_back_and_is_rebuilt(tree, damage: str) -> None:
    root, files, cache = tree
    run_static(files, options(root, cache))
    pch = next((static_root(cache) / "preamble").glob("*/*.pch"))
    if damage == "garbage":
        pch.write_bytes(b"not a precompiled header" * 100)
    elif damage == "truncate":
        pch.write_bytes(pch.read_bytes()[: pch.stat().st_size // 3])
    elif damage == "delete":
        pch.unlink()
    else:  # same bytes, newer time: clang refuses the PCH, the contents still match
        header = root / "include" / "sgl_kernel" / "alpha.h"
        stat = header.stat()
        os.utime(header, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    for entry in (results_dir(cache, root) / "results").rglob("*.json"):
        entry.unlink()  # force a parse
    results = run_static(files, options(root, cache))
    assert findings(results) == plain(files, root)
    stats = RunStats()
    again = run_static(files[:1], options(root, cache, register_budget=65), stats=stats)  # a new key: parses again
    assert stats.preamble_parses == 1
    assert findings(again) == plain(files[:1], root, register_budget=65)


def test_config_change_is_a_miss(tree) -> None:
    root, files, cache = tree
    run_static(files, options(root, cache))
    results = run_static(files, options(root, cache, package_root="elsewhere/"))
    assert not any(r.cached for r in results)


def test_a_rule_that_raises_marks_the_file_and_is_not_cached(tree, monkeypatch) -> None:
    """A crashing rule costs its own findings: the file's status says INTERNAL_ERROR (a
    value, whatever the KC000's wording), the other rules still report, and the result is
    not cached, so the next run looks again."""
    from kernel_check import pipeline
    from kernel_check.registry import rules_for
    from kernel_check.results import FileStatus

    root, files, cache = tree
    load_rules()

    def broken(model, context):
        raise RuntimeError("a rule bug")

    def with_a_broken_rule(language):
        return (replace(r, check=broken) if r.meta.code == "KC101" else r for r in rules_for(language))

    monkeypatch.setattr(pipeline, "rules_for", with_a_broken_rule)
    kernel = files[0]
    kernel.write_text(kernel.read_text().replace("Alpha a", "Alpha a, int n"))  # KC110 fires
    for _ in range(2):
        (result,) = run_static([kernel], options(root, cache))
        assert result.status is FileStatus.INTERNAL_ERROR and not result.cached
        codes = [(f.code, f.message.split(":")[0]) for f in result.findings]
        assert ("KC000", "internal error in rule KC101") in codes
        assert any(code == "KC110" for code, _ in codes)
    monkeypatch.undo()
    (fixed,) = run_static([kernel], options(root, cache))
    assert fixed.status is FileStatus.CHECKED and not any(f.code == "KC000" for f in fixed.findings)


@pytest.mark.slow
def test_selection_changes_reuse_the_raw_findings(tree) -> None:
    """The cache holds findings before the filter stage: `--select`/`--ignore` and the
    filter-stage keys re-filter cached entries, and agree with a plain run."""
    root, files, cache = tree
    run_static(files, options(root, cache))
    for selection in ({"select": ("KC1",)}, {"ignore": ("KC101", "KC3")}, {"select": ("KC5",)}):
        opts = options(root, cache)
        opts = replace(opts, selected=Selection.of(opts.config, **selection))
        stats = RunStats()
        results = run_static(files, opts, stats=stats)
        # answered from the cache, or not read at all when no selected rule reads the language
        assert stats.checked == 0, selection
        assert stats.cached + stats.skipped == len(files), selection
        expected = [check_file(p, replace(opts, cache=None)) for p in files]
        assert findings(results) == findings(expected), selection
        assert [r.suppressed for r in results] == [r.suppressed for r in expected]
    ignored = run_static(files, options(root, cache, ignore=["KC101"], severity={"KC301": "info"}))
    assert all(r.cached for r in ignored)
    assert not any(f.code == "KC101" for r in ignored for f in r.findings)


def test_no_cache_writes_nothing(tree, tmp_path: Path) -> None:
    root, files, _ = tree
    opts = options(root, None)
    stats = RunStats()
    results = run_static(files, opts, stats=stats)
    assert findings(results) == plain(files, root)
    assert stats.preamble_parses == 3  # a throw-away preamble for the run


def test_missing_include_still_fails_with_the_union_preamble(tree) -> None:
    """beta.h is in the union preamble, but a file that uses Beta without including it
    must get the plain parse's error, not a silent success."""
    root, _files, cache = tree
    sloppy = root / "csrc" / "sloppy.cuh"
    sloppy.write_text(KERNEL.replace("Alpha a", "Beta a").replace("a.v", "twice(a.v)"))
    results = run_static([sloppy], options(root, cache))
    expected = plain([sloppy], root)
    assert findings(results) == expected
    assert any(f.code == "KC000" for f in expected[0])


def test_macro_defined_before_an_include_parses_plainly(tree) -> None:
    root, _files, cache = tree
    path = root / "csrc" / "macro.cuh"
    path.write_text("#define SGL_SOMETHING 1\n" + KERNEL)
    cache_dir = static_root(cache) / "preamble"
    unit = parse_file(path, path.read_text(), resolve_settings("hermetic"), PreambleCache(cache_dir))
    assert unit.preamble is None


def test_include_guard_does_not_count_as_a_macro_change(tree) -> None:
    root, _files, cache = tree
    path = root / "csrc" / "guarded.cuh"
    path.write_text("#ifndef GUARDED_CUH\n#define GUARDED_CUH\n" + KERNEL + "#endif\n")
    unit = parse_file(
        path, path.read_text(), resolve_settings("hermetic"), PreambleCache(static_root(cache) / "preamble")
    )
    assert unit.preamble is not None


def test_preamble_parse_reports_the_files_own_includes(tree) -> None:
    _root, files, cache = tree
    settings = resolve_settings("hermetic")
    text = files[0].read_text()
    with_pch = parse_file(files[0], text, settings, PreambleCache(static_root(cache) / "preamble"))
    assert with_pch.preamble is not None
    without = parse_file(files[0], text, settings)
    names = {i.include.name for i in with_pch.tu.get_includes()}
    assert names == {i.include.name for i in without.tu.get_includes()}
    assert not any(name.endswith("beta.h") for name in names)


def test_header_checked_as_a_file_is_not_hidden_by_the_preamble(tree) -> None:
    """A header inside the project preamble is parsed against a preamble without it."""
    root, files, cache = tree
    header = root / "include" / "sgl_kernel" / "beta.h"
    header.write_text(BETA.replace("inline float twice", "__global__ void k(const float* p) {}\ninline float twice"))
    results = run_static([header, *files], options(root, cache))
    assert findings(results) == plain([header, *files], root)
    assert any(f.code == "KC101" for f in results[0].findings)


def test_exact_strategy_matches_plain(tree) -> None:
    root, files, cache = tree
    stats = RunStats()
    results = run_static(files, options(root, cache, strategy="exact"), stats=stats)
    assert findings(results) == plain(files, root)
    assert stats.preamble_parses == 3


def test_cli_flags(tree) -> None:
    root, _files, cache = tree
    env = {**os.environ, "KERNEL_CHECK_CACHE_DIR": str(cache / "env")}
    command = [sys.executable, "-m", "kernel_check", str(root / "csrc"), "--format", "json", "--jobs", "2"]
    first = subprocess.run([*command, "--cache-dir", str(cache / "flag")], capture_output=True, text=True, env=env)
    assert first.returncode in (0, 1), first.stderr
    assert (cache / "flag" / "static-v1" / "projects").is_dir()
    assert not (cache / "env").exists()
    second = subprocess.run([*command, "--no-cache"], capture_output=True, text=True, env=env)
    assert second.stdout == first.stdout
    assert not (cache / "env").exists()
    bad = subprocess.run([*command, "--jobs", "0"], capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and "--jobs" in bad.stderr
    clean = subprocess.run(
        [sys.executable, "-m", "kernel_check", "clean", "--all", "--cache-dir", str(cache / "flag")],
        capture_output=True,
        text=True,
    )
    assert clean.returncode == 0 and not (cache / "flag").exists()


def test_cli_import_does_not_load_libclang_or_tvm_ffi() -> None:
    code = "import sys, kernel_check.cli; print('clang.cindex' in sys.modules, 'tvm_ffi' in sys.modules)"
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.split() == ["False", "False"]


def test_bindings_speed_ups_agree_with_the_bindings(tree) -> None:
    _root, files, _cache = tree
    unit = parse_file(files[0], files[0].read_text(), resolve_settings("hermetic"))
    import clang.cindex as ci

    originals = getattr(ci.Cursor, "_kernel_check_originals", None)
    if originals is None:
        pytest.skip("this bindings build keeps its own is_null/kind")
    is_null, kind = originals
    checked = 0
    for cursor in unit.tu.cursor.walk_preorder():
        for other in (cursor, cursor.semantic_parent, cursor.referenced, cursor.canonical):
            if other is None:
                continue
            assert other.is_null() == is_null(other)
            assert other.kind == kind.fget(other)
            checked += 1
    assert ci.conf.null_cursor.is_null() and is_null(ci.conf.null_cursor)
    with pytest.raises(Exception, match="null-cursor"):
        ci.conf.null_cursor.kind  # noqa: B018 - the read is what raises
    assert checked > 100


def test_old_entries_and_unused_preambles_are_pruned(tree) -> None:
    from kernel_check.clang.preamble import evict
    from kernel_check.result_cache import prune

    root, files, cache = tree
    run_static(files, options(root, cache))
    entries = sorted((results_dir(cache, root) / "results").rglob("*.json"))
    month_ago = __import__("time").time() - 40 * 86400
    os.utime(entries[0], (month_ago, month_ago))
    (static_root(cache) / "projects" / ".pruned").unlink()  # the run itself pruned already today
    assert prune(static_root(cache)) >= 1 and not entries[0].exists() and entries[1].exists()
    assert prune(static_root(cache)) == 0  # once a day
    recipes = [d for d in (static_root(cache) / "preamble").iterdir() if d.is_dir()]
    old = recipes[0]
    os.utime(old / "manifest.json", (month_ago, month_ago))
    evict(static_root(cache) / "preamble", keep=static_root(cache) / "preamble" / "none", max_bytes=None)
    assert not old.exists()
    results = run_static(files, options(root, cache))  # whatever went is rebuilt
    assert [r.findings for r in results] == plain(files, root)
