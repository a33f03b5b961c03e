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


KNOWN = (
    Known(re.compile(r"the static pipeline crashed on this file \(SIGSEGV\)"),
          "test_a_libclang_segfault_is_one_kc000_and_the_run_goes_on",
          "libclang (upstream): stack overflow on ~3000-deep nesting or huge expressions; contained by the "
          "watchdog as one KC000", upstream=True),
    Known(re.compile(r"KC001 at an impossible position"),
          "test_a_suppression_after_a_form_feed_covers_its_line", "filter.py parse_suppressions (foundation)"),
    Known(re.compile(r"KC000 at an impossible position 0:0"),
          "test_kc000_has_a_real_position_when_clang_hits_its_error_limit", "clang/parse.py _errors (speed)"),
    Known(re.compile(r"inside a declaration clang marked invalid"),
          "test_no_rule_fires_inside_a_declaration_clang_marked_invalid", "clang/extract.py _error_spans (C++ model)"),
    Known(re.compile(r"inside a declaration clang marked invalid"),
          "test_no_rule_fires_on_a_repeated_redefinition", "clang/extract.py _error_spans (C++ model)"),
    Known(re.compile(r"rules fired although a header had an error"),
          "test_a_header_error_silences_rules_in_a_file_with_cr_line_endings",
          "clang/extract.py _error_spans (C++ model)"),
    Known(re.compile(r"--fix (?:broke a file that parsed cleanly|applied .* remain).*not valid UTF-8"
                     r"|internal error: IndexError: index out of range"),
          "test_a_fix_in_a_file_with_non_utf8_bytes_lands_where_clang_saw_it",
          "engine.py _check / clang/parse.py: clang parses U+FFFD-replaced text, offsets index raw bytes (speed)"),
    Known(re.compile(r"internal error: UnicodeDecodeError"),
          "test_a_non_utf8_byte_in_a_template_header_is_not_an_internal_error",
          "clang/extract.py _specifiers (C++ model)"),
    Known(re.compile(r"(?:wrote '(?:Traceback \(most recent call last\)|Exception ignored|RecursionError)' to "
                     r"stderr|internal error)(?s:.*)RecursionError"),
          "test_a_deep_expression_prints_no_traceback", "clang/cursors.py walk, launcher_facts._visit (C++ model)"),
)


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
