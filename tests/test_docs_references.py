"""Every Python module the prose names exists: the README, CHANGELOG, docs/ and bench/ pages,
and the comments and docstrings of the Python files of src/, tests/, scripts/ and bench/.

A reference is a name ending in `.py`, bare (`parse.py`) or with a path
(`src/kernel_check/clang/parse.py`, `clang/launches.py`, `harness/draft.py`). It resolves
when it is a path from the repository root, or the end of the path of a module of this
repository (src/kernel_check and its subpackages, tests/, scripts/, bench/, docs/, csrc/):
`clang/launches.py` is src/kernel_check/clang/launches.py. A `*` and a run of capitals
(`FILE.py`, `kcNNN_*.py`) stand for any name and resolve when some module matches. A module
that is renamed or removed leaves its old name in the prose; this test names the place.

Files of other repositories that the docs name on purpose are listed in `ELSEWHERE`."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import REPO_ROOT

# References to files that are not this repository's, each with where they live.
ELSEWHERE = {
    "python/sglang/": "sglang's package tree (the default `package-root`)",
    "test/registered/": "sglang's registered tests (the default `registered-tests-root`)",
    "test/run_suite.py": "sglang's CI runner, which KC503-KC506 are about",
    "ops/elementwise/add3.py": "sglang's wrapper of add3.cuh, the example of a wrapper in its own package",
    "kernel/store.py": "mini-sglang's wrapper of store.cu, the example of a wrapper found by bare file name",
    "pkg/copy_rows.py": "the wrapper in the fixture tree tests/fixtures/draft/matcher_tree/ (copied out to run)",
    "setup.py": "a file test_no_side_effects plants in the tree it checks",
    "against_spec.py": "the spec file `kernel-check test --against` writes into a temporary directory",
}
MODULE_ROOTS = ("src/kernel_check", "tests", "scripts", "bench", "docs", "csrc")
SKIPPED_PARTS = {"fixtures", "data", "__pycache__"}  # checker inputs, not this repository's modules
# A name ending in .py that does not continue a longer name, path or URL (nothing before it
# that could be part of one: an absolute path or a URL never matches).
REFERENCE = re.compile(r"(?<![\w./*~$-])([\w*][\w.*/-]*\.py)(?!\w)")
PLACEHOLDER = re.compile(r"\*+|[A-Z]{2,}")


def _python_files(top: str) -> list[Path]:
    return sorted(p for p in (REPO_ROOT / top).rglob("*.py") if not SKIPPED_PARTS & set(p.parts))


def _pages() -> list[Path]:
    pages = [REPO_ROOT / "README.md", REPO_ROOT / "CHANGELOG.md"]
    return pages + sorted((REPO_ROOT / "docs").rglob("*.md")) + sorted((REPO_ROOT / "bench").rglob("*.md"))


MODULES = [p.relative_to(REPO_ROOT).as_posix() for top in MODULE_ROOTS for p in _python_files(top)]


def resolves(reference: str) -> bool:
    reference = reference.removeprefix("./")
    if any(reference == name or (name.endswith("/") and reference.startswith(name)) for name in ELSEWHERE):
        return True
    if PLACEHOLDER.search(reference):
        wildcards = re.escape(PLACEHOLDER.sub("\0", reference)).replace("\0", "[^/]*")
        pattern = re.compile(rf"(^|/){wildcards}$")
        return any(pattern.search(module) for module in MODULES)
    return (REPO_ROOT / reference).is_file() or any(m == reference or m.endswith(f"/{reference}") for m in MODULES)


def _comments_and_docstrings(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of each comment and docstring of a Python file."""
    source = path.read_text(encoding="utf-8")
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            docstring = ast.get_docstring(node, clean=False)
            if docstring is not None:
                for offset, line in enumerate(docstring.splitlines()):
                    yield node.body[0].lineno + offset, line


def _texts() -> Iterator[tuple[Path, int, str]]:
    for page in _pages():
        if page.is_file():
            for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
                yield page, number, line
    for top in ("src", "tests", "scripts", "bench"):
        for path in _python_files(top):
            for number, text in _comments_and_docstrings(path):
                yield path, number, text


def references() -> list[tuple[str, str]]:
    """(`path:line`, reference) of every module reference."""
    return [
        (f"{path.relative_to(REPO_ROOT).as_posix()}:{number}", match.group(1))
        for path, number, text in _texts()
        for match in REFERENCE.finditer(text)
    ]


def test_every_module_the_prose_names_exists():
    found = references()
    assert len(found) > 100  # the scan reads what it should
    missing = [f"{where}: {reference}" for where, reference in found if not resolves(reference)]
    assert not missing, "modules named but not in the repository:\n" + "\n".join(missing)


@pytest.mark.parametrize(
    "reference, expected",
    [
        ("src/kernel_check/clang/parse.py", True),
        ("clang/launches.py", True),
        ("harness/draft.py", True),
        ("kernel_check/pipeline.py", True),
        ("parse.py", True),
        ("./scripts/gen_docs.py", True),
        ("src/kernel_check/rules/kcNNN_*.py", True),
        ("FILE_spec.py", True),
        ("test_*.py", True),
        ("python/sglang/kernels/ops/elementwise/test_scale.py", True),
        ("launcher_facts.py", False),
        ("clang/session.py", False),
        ("checker/clang/launches.py", False),
        ("kcNNN_*_facts.py", False),
        ("harness/parse.py", False),
    ],
)
def test_resolution(reference: str, expected: bool) -> None:
    assert resolves(reference) is expected


def test_extraction() -> None:
    text = "see `parse.py`, clang/launches.py and (launcher_facts.py); not /tmp/x.py, https://h/a/b.py or x.pyc"
    assert [m.group(1) for m in REFERENCE.finditer(text)] == ["parse.py", "clang/launches.py", "launcher_facts.py"]
