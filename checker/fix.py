"""Fix stage: apply the safe fixes findings carry, one atomic write per file.

A file with a KC000 finding is never touched: its AST was not fully typed, so a fix
computed from it could be wrong.
"""

from __future__ import annotations

import os
import tempfile
from collections import defaultdict
from pathlib import Path

from .filter import PARSE_ERROR
from .finding import Finding, TextEdit


def apply_fixes(findings: list[Finding]) -> dict[str, int]:
    """Apply every fix to its file; returns the number of fixes applied per path."""
    by_path: dict[str, list[Finding]] = defaultdict(list)
    unparsable = {f.path for f in findings if f.code == PARSE_ERROR}
    for finding in findings:
        if finding.fix is not None and finding.path not in unparsable:
            by_path[finding.path].append(finding)
    applied = {}
    for path, fixable in by_path.items():
        count = _fix_file(Path(path), fixable)
        if count:
            applied[path] = count
    return applied


def _fix_file(path: Path, findings: list[Finding]) -> int:
    data = path.read_bytes()
    edits: list[TextEdit] = []
    count = 0
    for finding in findings:
        candidate = list(finding.fix.edits)
        if any(_overlaps(e, taken) for e in candidate for taken in edits):
            continue  # a later run picks it up once the first fix has landed
        edits.extend(candidate)
        count += 1
    if not edits:
        return 0
    for edit in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        data = data[:edit.start] + edit.replacement.encode("utf-8") + data[edit.end:]
    write_atomically(path, data)
    return count


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
