"""Failure kinds the fuzz suite has already reported, each pinned by a strict-xfail reproducer
in `test_regressions.py`.

A fuzz failure that matches an entry is *known* while that reproducer still carries its
xfail marker; once the owner fixes the bug and removes the marker, the entry stops
excusing anything and the quick profile enforces the fix from then on.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Known:
    pattern: re.Pattern[str]
    test: str  # the reproducer in test_regressions.py
    where: str  # module and owner
    upstream: bool = False  # contained by design (the test passes): explained for good


# Empty: the last entry, libclang overflowing its stack on deep nesting (SIGSEGV, contained as one
# KC000), was fixed by parsing on a deep stack (clang/deep_stack.py); any crash is a failure again.
KNOWN: tuple[Known, ...] = ()


def _still_open(test_name: str) -> bool:
    """Whether the reproducer still carries an xfail marker. Read from the test file's text:
    importing it would import kernel_check into the fuzz runner's parent, and every worker
    forked from it would then mix those (old) modules with the tree's current ones."""
    return test_name in _xfailed_tests()


@functools.lru_cache(maxsize=1)
def _xfailed_tests() -> frozenset[str]:
    tree = ast.parse((Path(__file__).parent / "test_regressions.py").read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and any("xfail" in ast.unparse(d) for d in node.decorator_list):
            names.add(node.name)
    return frozenset(names)


def explain(problem: str) -> Known | None:
    """The open known bug this problem is an instance of, if any."""
    for known in KNOWN:
        if known.pattern.search(problem) and (known.upstream or _still_open(known.test)):
            return known
    return None


def unexplained(problems: list[str]) -> list[str]:
    return [p for p in problems if explain(p) is None]
