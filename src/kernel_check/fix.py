"""Fix stage: apply the safe fixes findings carry, one atomic write per file (`--fix`), or
show them as a unified diff and write nothing (`--fix-diff`).

A file with a KC000 finding is never touched: its AST was not fully typed, so a fix
computed from it could be wrong. Nor is a file the user made read-only, one the current
user cannot write, or one whose owner the rewrite would change (`write_refusal`): every
planned file is checked before the first is written, so a refusal leaves all of them as
they were.
"""

from __future__ import annotations

import difflib
import os
import stat
import tempfile
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .filter import PARSE_ERROR
from .finding import Finding, Fix, TextEdit
from .paths import display_path


@dataclass(frozen=True)
class FileFix:
    """The fixes planned for one file: its bytes before and after, and how many fixes."""

    before: bytes
    after: bytes
    count: int


def plan_fixes(findings: list[Finding], buffers: dict[str, bytes] | None = None) -> dict[str, FileFix]:
    """The fixes of `findings` per path, computed on each file's bytes (or on `buffers[path]`),
    written nowhere."""
    by_path: dict[str, list[Fix]] = defaultdict(list)
    unparsable = {f.path for f in findings if f.code == PARSE_ERROR}
    for finding in findings:
        if finding.fix is not None and finding.path not in unparsable:
            by_path[finding.path].append(finding.fix)
    planned = {}
    for path, fixable in by_path.items():
        data = (buffers or {}).get(path)
        before = Path(path).read_bytes() if data is None else data
        after, count = _fixed(before, fixable)
        if count:
            planned[path] = FileFix(before, after, count)
    return planned


class WriteRefused(Exception):
    """A file kernel-check must not rewrite (one line naming it and why, exit 2)."""


def apply_fixes(findings: list[Finding]) -> dict[str, int]:
    """Apply every fix to its file; returns the number of fixes applied per path. Raises
    WriteRefused, having written nothing, when any planned file must not be rewritten."""
    planned = plan_fixes(findings)
    for path in planned:
        refuse_unwritable(Path(path), "cannot apply fixes")
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


def _fixed(data: bytes, fixes: list[Fix]) -> tuple[bytes, int]:
    edits: list[TextEdit] = []
    count = 0
    for fix in fixes:
        candidate = list(fix.edits)
        if any(_overlaps(e, taken) for e in candidate for taken in edits):
            continue  # a later run picks it up once the first fix has landed
        edits.extend(candidate)
        count += 1
    for edit in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        data = data[: edit.start] + edit.replacement.encode("utf-8") + data[edit.end :]
    return data, count


def _overlaps(a: TextEdit, b: TextEdit) -> bool:
    if a.start == a.end == b.start == b.end:
        return True
    return a.start < b.end and b.start < a.end


def write_refusal(path: Path) -> str | None:
    """Why replacing the existing file `path` with a new one would be wrong, or None.

    The rewrite renames a new file over the old one, so the new file must end up as the old
    one was: a file without its owner's write bit was made read-only on purpose (root too
    is refused, although it could write it); the current user must be able to write it and
    its folder; and a user other than root cannot give a file away, so it must own the
    file and be in its group, or the rewrite would change them."""
    info = path.stat()
    if not info.st_mode & stat.S_IWUSR:
        return f"the file is read-only (mode {stat.S_IMODE(info.st_mode):04o})"
    effective = os.access in os.supports_effective_ids
    if not os.access(path, os.W_OK, effective_ids=effective):
        return "the current user may not write it"
    if not os.access(path.parent, os.W_OK | os.X_OK, effective_ids=effective):
        return f"the current user may not create files in {path.parent} (the rewrite renames a new file over it)"
    user = os.geteuid()
    if user != 0 and info.st_uid != user:
        return f"it is owned by uid {info.st_uid}, and rewriting it would make uid {user} its owner"
    if user != 0 and info.st_gid not in {os.getegid(), *os.getgroups()}:
        return f"its group is gid {info.st_gid}, which uid {user} is not in, so rewriting it would change its group"
    return None


def refuse_unwritable(path: Path, action: str) -> None:
    """Raise WriteRefused (`PATH: ACTION: REASON`) when `write_refusal` names a reason."""
    reason = write_refusal(Path(os.path.realpath(path)))
    if reason is not None:
        raise WriteRefused(f"{display_path(path)}: {action}: {reason}")


def write_atomically(path: Path, data: bytes) -> None:
    """Write a sibling temp file, fsync it, give it the target's owner, group and mode, then
    rename it over the target, so a crash leaves either the old or the new file, never a
    truncated one. A symlink is followed: the file it points to is rewritten, the link stays.
    The caller checks `refuse_unwritable` first."""
    path = Path(os.path.realpath(path))
    info = path.stat()
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".kc-tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        created = os.stat(temporary)
        if (created.st_uid, created.st_gid) != (info.st_uid, info.st_gid):
            os.chown(temporary, info.st_uid, info.st_gid)  # before chmod: chown clears set-id bits
        os.chmod(temporary, stat.S_IMODE(info.st_mode))
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
