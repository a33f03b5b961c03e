"""Shared test helpers: run the real static pipeline on real files."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from kernel_check import __version__
from kernel_check.clang.parse import resolve_settings
from kernel_check.config import load_config
from kernel_check.engine import FileResult, RunOptions, check_file
from kernel_check.registry import load_rules

# Fixture trees are inputs to the checker (some hold real-looking test_*.py files), not tests.
collect_ignore = ["fixtures"]
_SESSION_CACHE: list[str] = []  # the cache directory of this session (`pytest_configure`)


def pytest_configure(config: pytest.Config) -> None:
    """The suite never writes to the user's cache: this session, and every command it starts,
    caches results and preambles in a temporary directory of its own (`KERNEL_CHECK_CACHE_DIR`,
    which a test may still point elsewhere), removed when the session ends."""
    directory = tempfile.mkdtemp(prefix="kernel-check-test-cache-")
    _SESSION_CACHE.append(directory)
    os.environ["KERNEL_CHECK_CACHE_DIR"] = os.path.join(directory, "cache")


def pytest_unconfigure(config: pytest.Config) -> None:
    while _SESSION_CACHE:
        shutil.rmtree(_SESSION_CACHE.pop(), ignore_errors=True)


REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
RELEASE_TAG = f"v{__version__}"  # the tag a user's pre-commit `rev:` names
_MARKER_RE = re.compile(r"(?://|#)\s*expect:\s*(?P<body>.+?)\s*(?:\*/)?$")
# One expected finding: a code, optionally `@COLUMN` and a quoted fragment of its message.
_ITEM_RE = re.compile(r'\s*(?P<code>[A-Z]{2}\d{3})(?:@(?P<column>\d+))?(?:\s+"(?P<fragment>[^"]*)")?\s*(?:,|$)')


@dataclass(frozen=True)
class Expectation:
    """What a `// expect:` marker says about one finding on its line."""

    line: int
    code: str
    column: int | None = None  # 1-based, where the finding starts
    fragment: str | None = None  # text its message must contain


def _marker_items(body: str) -> list[re.Match] | None:
    """The items of a marker's body, or None when it is not a marker (prose that mentions one)."""
    items, position = [], 0
    while position < len(body):
        match = _ITEM_RE.match(body, position)
        if match is None or match.end() == position:
            return None
        items.append(match)
        position = match.end()
    return items or None


def detailed_expectations(path: Path) -> list[Expectation]:
    """Every expected finding a fixture declares: `// expect: KC101, KC110@29 "typed `int`"`."""
    expected = []
    text = path.read_bytes().decode("utf-8", errors="replace")
    for number, line in enumerate(text.splitlines(), start=1):
        marker = _MARKER_RE.search(line)
        items = _marker_items(marker.group("body")) if marker else None
        for item in items or ():
            column = item.group("column")
            expected.append(
                Expectation(number, item.group("code"), int(column) if column else None, item.group("fragment"))
            )
    return expected


def expectations(path: Path) -> set[tuple[int, str]]:
    """(line, code) pairs declared by `// expect: KC101, KC130` comments."""
    return {(e.line, e.code) for e in detailed_expectations(path)}


def unmet_details(path: Path, findings) -> list[str]:
    """The markers' columns and message fragments that no finding of that line and code has."""
    unmet = []
    for expected in detailed_expectations(path):
        candidates = [f for f in findings if (f.line, f.code) == (expected.line, expected.code)]
        if not any(
            (expected.column is None or f.location.column == expected.column)
            and (expected.fragment is None or expected.fragment in f.message)
            for f in candidates
        ):
            got = "; ".join(f"column {f.location.column}: {f.message}" for f in candidates) or "nothing"
            unmet.append(
                f"line {expected.line} {expected.code} wanted column {expected.column}, "
                f"message with {expected.fragment!r}; got {got}"
            )
    return unmet


# A checked-in fixture's run with no overrides, by (path, mode, content hash): several modules
# check the same fixtures (test_fixtures, test_semantic's full runs, test_confirm...), and
# within one process that run is the same real parse each time.
_FIXTURE_RUNS: dict[tuple[Path, str, str], FileResult] = {}


def run_one(path: Path, mode: str = "hermetic", **overrides) -> FileResult:
    resolved = path.resolve()
    key = None
    if not overrides and resolved.is_relative_to(FIXTURES):
        key = (resolved, mode, hashlib.sha256(resolved.read_bytes()).hexdigest())
        if key in _FIXTURE_RUNS:
            kept = _FIXTURE_RUNS[key]
            return replace(kept, findings=list(kept.findings))  # a test may sort or filter its list
    load_rules()
    config = load_config(path).with_overrides(**overrides)
    settings = resolve_settings(mode)
    result = check_file(path, RunOptions(config, settings))
    if key is not None:
        _FIXTURE_RUNS[key] = replace(result, findings=list(result.findings))
    return result


def drafted_specs(source: Path, folder: Path, launcher: str | None = None) -> list:
    """The specs of ``spec new``'s draft of ``source`` (one ``launcher``, or every one),
    written into ``folder`` as a ``*_spec.py`` named after the launcher or the source, and
    loaded as ``kernel-check test`` loads them: a draft that does not load fails the test."""
    from kernel_check.harness.discover import discover
    from kernel_check.harness.draft import draft_text

    out = folder / f"{launcher or source.stem}_spec.py"
    out.write_text(draft_text(source, out, launcher=launcher))
    found = discover([out])
    assert not found.errors, found.errors
    return found.specs


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


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A hermetic project, the working directory (test_cli, test_cli_conventions)."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text('[tool.kernel-check]\nmode = "hermetic"\n', encoding="utf-8")
    monkeypatch.chdir(root)
    return root


# ----- pre-commit from a tagged commit of this checkout (test_precommit, test_wheel) -----


@pytest.fixture
def tail_overrun_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The planted tail overrun of tests/fixtures/harness and its spec in a project of their
    own (an empty `[tool.kernel-check]`); the working directory."""
    root = tmp_path / "project"
    (root / "kernels").mkdir(parents=True)
    for name in ("tail_overrun.cuh", "tail_overrun_spec.py"):
        shutil.copy(FIXTURES / "harness" / name, root / "kernels" / name)
    (root / "pyproject.toml").write_text('[project]\nname = "p"\n\n[tool.kernel-check]\n')
    monkeypatch.chdir(root)
    return root


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=repo, check=True, capture_output=True
    )


@pytest.fixture(scope="session")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository of this checkout's files with the release tag on its one commit: what
    a user's `repo:` + `rev:` entry names (pre-commit installs hooks from a git revision)."""
    snapshot = tmp_path_factory.mktemp("hook-repo")
    ignore = shutil.ignore_patterns(
        ".git",
        "__pycache__",
        "*.egg-info",
        ".pytest_cache",
        "build",
        "dist",
        ".whl",
        ".venv",
        ".kernel-check-cache",
        ".wt-*",
    )
    shutil.copytree(REPO_ROOT, snapshot, ignore=ignore, dirs_exist_ok=True)
    git(snapshot, "init", "-q")
    git(snapshot, "add", "-A")
    git(snapshot, "commit", "-qm", "snapshot")
    git(snapshot, "tag", RELEASE_TAG)
    return snapshot


@pytest.fixture(scope="session")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One pre-commit cache for the session: the hook environment is installed once."""
    return tmp_path_factory.mktemp("pre-commit-home")


def user_repo(path: Path, hook_repo: Path) -> Path:
    """A fresh git repository whose `.pre-commit-config.yaml` is the README's entry."""
    path.mkdir()
    git(path, "init", "-q")
    (path / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hook_repo}\n    rev: {RELEASE_TAG}\n    hooks:\n      - id: kernel-check\n"
    )
    return path


def pre_commit_env(home: Path) -> dict[str, str]:
    """No PYTHONPATH: the hook must run the kernel-check pre-commit installed, not a source tree."""
    environ = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return {**environ, "PRE_COMMIT_HOME": str(home), "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PRE_COMMIT_COLOR": "never"}


@pytest.fixture
def functions_of(tmp_path: Path):
    """`functions_of(source)`: the checked file's functions as tier 1 sees them
    (`src/kernel_check/clang/program.py`), by name, from a real hermetic libclang parse; the
    `Program` is the `program` entry. The parse must be clean."""
    import clang.cindex as ci

    from kernel_check.clang.cursors import FUNCTION_KINDS, SCOPE_KINDS, in_file, walk
    from kernel_check.clang.parse import parse_file
    from kernel_check.clang.program import Program
    from kernel_check.clang.tree import share_reads

    units = []  # the translation units live as long as the test: their cursors are read lazily

    def build(source: str) -> dict:
        share_reads(ci)
        path = tmp_path / "probe.cu"
        path.write_text(source)
        unit = parse_file(path, source, resolve_settings("hermetic"))
        assert not unit.errors, [e.message for e in unit.errors]
        units.append(unit)
        program = Program(str(path))
        found: dict = {"program": program}
        for cursor in walk(unit.root, lambda c: c.kind in SCOPE_KINDS and in_file(c, str(path))):
            if cursor.kind in FUNCTION_KINDS and in_file(cursor, str(path)):
                found[cursor.spelling] = program.function(cursor)
        return found

    return build


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that compiles with nvcc or runs on a GPU is slow by nature: the fast target
    (`pytest -m "not slow"`) leaves it out without each test having to say so."""
    for item in items:
        if item.get_closest_marker("nvcc") or item.get_closest_marker("gpu"):
            item.add_marker(pytest.mark.slow)
