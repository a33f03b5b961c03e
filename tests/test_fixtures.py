"""Every C++/CUDA fixture: the findings equal the `// expect:` markers, line for line.

A line without a marker must not fire, so near misses in the fixtures are precision tests. A
marker may also pin the column and a fragment of the message (`// expect: KC110@29 "int"`),
and a fixture `NAME.cuh` with a sibling `NAME.fixed.cuh` states what `--fix` must make of it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, describe_mismatch, expectations, run_one, unmet_details
from kernel_check.cli import main

FIXED_SUFFIX = ".fixed"  # `NAME.fixed.cuh`: the text `--fix` makes of `NAME.cuh`
CPP_FIXTURES = sorted(
    p for p in (FIXTURES / "cpp").rglob("*") if p.suffix in (".cuh", ".cu", ".h") and not p.stem.endswith(FIXED_SUFFIX)
)
FIX_FIXTURES = [p for p in CPP_FIXTURES if p.with_name(p.stem + FIXED_SUFFIX + p.suffix).is_file()]


@pytest.mark.parametrize("path", CPP_FIXTURES, ids=lambda p: p.relative_to(FIXTURES).as_posix())
def test_cpp_fixture(path: Path) -> None:
    result = run_one(path)
    expected = expectations(path)
    actual = {(f.line, f.code) for f in result.findings}
    assert actual == expected, describe_mismatch(path, expected, result.findings)
    assert not (unmet := unmet_details(path, result.findings)), f"{path}:\n  " + "\n  ".join(unmet)


@pytest.mark.parametrize("path", FIX_FIXTURES, ids=lambda p: p.relative_to(FIXTURES).as_posix())
def test_fix_turns_the_fixture_into_its_fixed_twin(path: Path, tmp_path: Path) -> None:
    target = tmp_path / path.name
    shutil.copy(path, target)
    assert main([str(target), "--fix", "--mode", "hermetic", "--quiet", "--exit-zero"]) == 0
    expected = path.with_name(path.stem + FIXED_SUFFIX + path.suffix).read_text(encoding="utf-8")
    assert target.read_text(encoding="utf-8") == expected


@pytest.mark.slow
def test_kc203_reports_a_launch_once_per_kernel() -> None:
    """A launch that picks among instantiations of one kernel that never waits is one finding,
    not one per instantiation (the markers above compare sets, so this counts)."""
    result = run_one(FIXTURES / "cpp" / "kc203_pdl_launch_without_wait.cuh")
    keys = [(f.line, f.code, f.message) for f in result.findings]
    assert len(keys) == len(set(keys)), sorted(k for k in keys if keys.count(k) > 1)


def test_every_cpp_rule_has_a_firing_fixture() -> None:
    from kernel_check.registry import Language, rules_for

    fired = {code for path in CPP_FIXTURES for _, code in expectations(path)}
    missing = sorted(r.meta.code for r in rules_for(Language.CPP) if r.meta.code not in fired)
    assert not missing, f"rules without a fixture line that must fire: {missing}"


@pytest.mark.slow
def test_device_pass_reports_each_finding_once() -> None:
    """Code seen by the host pass and by a device pass is described by one of them only, so a
    finding there is reported once (the markers above compare sets, so this counts)."""
    result = run_one(FIXTURES / "cpp" / "device_pass" / "device_only_branches.cuh")
    keys = [(f.line, f.location.column, f.code, f.message) for f in result.findings]
    assert keys and len(keys) == len(set(keys)), sorted(k for k in keys if keys.count(k) > 1)
