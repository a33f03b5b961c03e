"""Shared test helpers: run the real static pipeline on real files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernel_check.clang.parse import resolve_settings
from kernel_check.config import load_config
from kernel_check.engine import FileResult, RunOptions, check_file
from kernel_check.registry import load_rules

# Fixture trees are inputs to the checker (some hold real-looking test_*.py files), not tests.
collect_ignore = ["fixtures"]

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
_EXPECT_RE = re.compile(r"(?://|#)\s*expect:\s*([A-Z0-9,\s]+?)\s*(?:\*/)?$")


def expectations(path: Path) -> set[tuple[int, str]]:
    """(line, code) pairs declared by `// expect: KC101, KC130` comments."""
    expected = set()
    text = path.read_bytes().decode("utf-8", errors="replace")
    for number, line in enumerate(text.splitlines(), start=1):
        match = _EXPECT_RE.search(line)
        if match:
            expected.update((number, code.strip()) for code in match.group(1).split(",") if code.strip())
    return expected


def run_one(path: Path, mode: str = "hermetic", **overrides) -> FileResult:
    load_rules()
    config = load_config(path).with_overrides(**overrides)
    settings = resolve_settings(mode)
    return check_file(path, RunOptions(config, settings))


def describe_mismatch(path: Path, expected: set, actual_findings) -> str:
    actual = {(f.line, f.code) for f in actual_findings}
    lines = [f"{path}:"]
    lines += [f"  missed    {code} at line {line}" for line, code in sorted(expected - actual)]
    for finding in actual_findings:
        if (finding.line, finding.code) not in expected:
            lines.append(f"  unexpected {finding.code} at line {finding.line}: {finding.message}")
    return "\n".join(lines)


@pytest.fixture
def check_path():
    return run_one
