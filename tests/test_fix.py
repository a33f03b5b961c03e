"""`--fix`: each safe fix leaves a file that still parses and re-checks clean for its rule."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, run_one
from kernel_check.cli import main
from kernel_check.registry import all_rules

FIXABLE = sorted(r.meta.code for r in all_rules() if r.meta.fixable and r.check is not None)


def _fixture_for(code: str) -> Path:
    matches = sorted((FIXTURES / "cpp").glob(f"{code.lower()}_*.cuh"))
    assert matches, f"no fixture for fixable rule {code}"
    return matches[0]


@pytest.mark.parametrize("code", FIXABLE)
def test_fix_clears_the_rule_and_keeps_the_file_parsing(code: str, tmp_path: Path) -> None:
    target = tmp_path / _fixture_for(code).name
    shutil.copy(_fixture_for(code), target)
    before = run_one(target)
    fixable_before = [f for f in before.findings if f.code == code and f.fix is not None]
    assert fixable_before, f"the {code} fixture has no fixable finding"

    assert main([str(target), "--fix", "--select", code, "--mode", "hermetic", "--quiet"]) in (0, 1)

    after = run_one(target)
    assert not [f for f in after.findings if f.code == "KC000"], "the fixed file no longer parses"
    remaining = [f for f in after.findings if f.code == code and f.fix is not None]
    assert remaining == [], f"fixable {code} findings remain: {remaining}"


def test_fix_never_touches_a_file_with_parse_errors(tmp_path: Path) -> None:
    broken = tmp_path / "broken.cuh"
    source = "// bad dash \u2014 here\nnamespace sglang { int x = undeclared_name; }\n"
    broken.write_text(source, encoding="utf-8")
    main([str(broken), "--fix", "--mode", "hermetic", "--quiet"])
    assert broken.read_text(encoding="utf-8") == source
