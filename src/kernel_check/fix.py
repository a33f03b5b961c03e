"""Fix stage: apply the safe fixes findings carry, one atomic write per file (`--fix`), or
show them as a unified diff and write nothing (`--fix-diff`).

A file with a KC000 finding is never touched: its AST was not fully typed, so a fix
computed from it could be wrong.
"""

from __future__ import annotations

import difflib
import os
import tempfile
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .filter import PARSE_ERROR
from .finding import Finding, TextEdit


@dataclass(frozen=True)
class FileFix:
    """The fixes planned for one file: its bytes before and after, and how many fixes."""

    before: bytes
    after: bytes
    count: int


def plan_fixes(findings: list[Finding], buffers: dict[str, bytes] | None = None) -> dict[str, FileFix]:
    """The fixes of `findings` per path, computed on each file's bytes (or on `buffers[path]`),
    written nowhere."""
    by_path: dict[str, list[Finding]] = defaultdict(list)
    unparsable = {f.path for f in findings if f.code == PARSE_ERROR}
    for finding in findings:
        if finding.fix is not None and finding.path not in unparsable:
            by_path[finding.path].append(finding)
    planned = {}
    for path, fixable in by_path.items():
        data = (buffers or {}).get(path)
        before = Path(path).read_bytes() if data is None else data
        after, count = _fixed(before, fixable)
        if count:
            planned[path] = FileFix(before, after, count)
    return planned


def apply_fixes(findings: list[Finding]) -> dict[str, int]:
    """Apply every fix to its file; returns the number of fixes applied per path."""
    planned = plan_fixes(findings)
    for path, fix in planned.items():
        write_atomically(Path(path), fix.after)
    return {path: fix.count for path, fix in planned.items()}


def unified_diff(planned: dict[str, FileFix], name: Callable[[str], str]) -> str:
    """The planned fixes as one unified diff, `a/NAME` -> `b/NAME` (what `git apply` takes)."""
    chunks = []
    for path in sorted(planned):
        fix = planned[path]
        before = fix.before.decode("utf-8", errors="replace").splitlines(keepends=True)
        after = fix.after.decode("utf-8", errors="replace").splitlines(keepends=True)
        for line in difflib.unified_diff(before, after, f"a/{name(path)}", f"b/{name(path)}"):
            chunks.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(chunks)


def _fixed(data: bytes, findings: list[Finding]) -> tuple[bytes, int]:
    edits: list[TextEdit] = []
    count = 0
    for finding in findings:
        candidate = list(finding.fix.edits)
        if any(_overlaps(e, taken) for e in candidate for taken in edits):
            continue  # a later run picks it up once the first fix has landed
        edits.extend(candidate)
        count += 1
    for edit in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        data = data[:edit.start] + edit.replacement.encode("utf-8") + data[edit.end:]
    return data, count


def _overlaps(a: TextEdit, b: TextEdit) -> bool:
    if a.start == a.end == b.start == b.end:
        return True
    return a.start < b.end and b.start < a.end


def write_atomically(path: Path, data: bytes) -> None:
    """Write a sibling temp file, fsync it, keep the mode, then rename over the target,
    so a crash leaves either the old or the new file, never a truncated one."""
    mode = path.stat().st_mode
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".kc-tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode & 0o7777)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
