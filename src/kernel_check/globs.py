"""Glob matching on POSIX relative paths, with `**` spanning directories.

One home for the matcher used by `exclude`, `per-file-ignores` and discovery.
"""

from __future__ import annotations

import functools
import re


@functools.lru_cache(maxsize=256)
def _compile(pattern: str) -> re.Pattern[str]:
    out = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if pattern.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
            continue
        if pattern.startswith("**", index):
            out.append(".*")
            index += 2
            continue
        out.append({"*": "[^/]*", "?": "[^/]"}.get(char, re.escape(char)))
        index += 1
    return re.compile("".join(out) + r"(?:/.*)?\Z")


def matches(relative_path: str, pattern: str) -> bool:
    """Whether `relative_path` (or a directory above it) matches `pattern`.

    A pattern without a slash matches a file or directory name at any depth, like
    `.gitignore`; `dir/` style trailing slashes are accepted.
    """
    pattern = pattern.strip().rstrip("/")
    if not pattern:
        return False
    if "/" not in pattern:
        pattern = "**/" + pattern
    return bool(_compile(pattern).match(relative_path))


def matches_any(relative_path: str, patterns: list[str] | tuple[str, ...]) -> bool:
    return any(matches(relative_path, p) for p in patterns)
