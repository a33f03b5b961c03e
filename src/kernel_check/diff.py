"""`--diff BASE`: keep only the findings a change introduced since a git revision.

What counts as changed is `git diff -U0 --find-renames BASE` against the working tree
(staged and unstaged edits alike), plus every untracked, not ignored file, whose lines all
count as added. `BASE...` (three dots) means the merge base of BASE and HEAD, what a pull
request review shows when the base branch has moved on.

A finding survives the diff when

* its file is in the diff (added, modified, renamed, copied or untracked), and
* its primary line (`Location.line`, the line reports point at) was added or changed, or
  the finding is *file-level*.

A file-level finding is one about the file as a whole, not about a line in it:

* `KC000` (the file could not be fully parsed, so its rules saw only part of it: a change
  anywhere in the file can cause it, and the diff cannot tell which line is to blame), and
* any finding located at line 1, column 1 with no end position, the location a rule gives
  a whole-file verdict (KC506 "no `register_cuda_ci(...)` in this test file", an
  unreadable, binary or oversized file).

Related locations do not count: a change to a kernel's definition does not resurface old
findings at its launch sites. A renamed file keeps its old findings hidden except the
file-level ones (a rename can move a file under a path-dependent rule such as KC506).

Only changed files need checking at all, so `discover` output is narrowed with
`DiffScope.touches` before the static run.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .codes import PARSE_ERROR
from .finding import Finding

_HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_GIT_TIMEOUT_S = 120


class DiffError(Exception):
    """`--diff` cannot be computed (not a repository, unknown revision, no git): exit 2."""


def is_file_level(finding: Finding) -> bool:
    """Whether a finding is about its whole file (see the module docstring)."""
    location = finding.location
    if finding.code == PARSE_ERROR:
        return True
    return (location.line, location.column) == (1, 1) and location.end_line is None and location.end_column is None


@dataclass(frozen=True)
class ChangedFile:
    """One file of the diff, by its working-tree path relative to the repository root."""

    path: str
    lines: frozenset[int] | None  # None: every line is new (added or untracked file)
    old_path: str | None = None  # the rename or copy source

    def has_line(self, line: int) -> bool:
        return self.lines is None or line in self.lines


@dataclass
class DiffScope:
    """The changed lines between a revision and the working tree of one repository."""

    base: str
    commit: str
    toplevel: Path
    files: dict[str, ChangedFile] = field(default_factory=dict)

    def repo_path(self, path: str | Path) -> str | None:
        """`path` (as the checker names it) relative to the repository root, or None."""
        absolute = Path(os.path.abspath(path))
        # resolve the directory, not the file: git tracks a symlink as itself
        real = Path(os.path.realpath(absolute.parent)) / absolute.name
        try:
            return real.relative_to(self.toplevel).as_posix()
        except ValueError:
            return None

    def changed(self, path: str | Path) -> ChangedFile | None:
        relative = self.repo_path(path)
        return None if relative is None else self.files.get(relative)

    def touches(self, path: str | Path) -> bool:
        """Whether the file is part of the change (so it needs checking at all)."""
        return self.changed(path) is not None

    def keeps(self, finding: Finding) -> bool:
        changed = self.changed(finding.path)
        if changed is None:
            return False
        return is_file_level(finding) or changed.has_line(finding.line)

    def filter(self, findings: Iterable[Finding]) -> list[Finding]:
        return [f for f in findings if self.keeps(f)]


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    command = ["git", "-c", "core.quotePath=false", *args]
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    try:
        return subprocess.run(command, cwd=cwd, capture_output=True, timeout=_GIT_TIMEOUT_S, env=env, check=False)
    except FileNotFoundError:
        raise DiffError("--diff needs git, and no `git` executable is on PATH") from None
    except subprocess.TimeoutExpired:
        raise DiffError(f"--diff: `git {' '.join(args[:2])}` took over {_GIT_TIMEOUT_S} s") from None


def _first_line(data: bytes) -> str:
    text = data.decode("utf-8", errors="replace").strip()
    return text.splitlines()[0] if text else ""


def git_toplevel(start: Path) -> Path | None:
    """The top of the git work tree holding `start` (a file or folder), or None outside one."""
    result = _git(["rev-parse", "--show-toplevel"], start if start.is_dir() else start.parent)
    if result.returncode != 0:
        return None
    return Path(os.path.realpath(result.stdout.decode("utf-8", errors="surrogateescape").strip()))


def _toplevel(start: Path) -> Path:
    toplevel = git_toplevel(start)
    if toplevel is None:
        directory = start if start.is_dir() else start.parent
        raise DiffError(f"--diff needs a git repository: {os.path.abspath(directory)} is not inside one")
    return toplevel


def _resolve(base: str, toplevel: Path) -> str:
    if not base or base.startswith("-"):
        raise DiffError(f"--diff: '{base}' is not a git revision")
    merge_base = base.endswith("...") and len(base) > 3
    revision = base[:-3] if merge_base else base
    result = _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}"], toplevel)
    if result.returncode != 0:
        raise DiffError(f"--diff: unknown git revision '{revision}' in {toplevel}{_fetch_hint(toplevel, revision)}")
    commit = result.stdout.decode().strip()
    if not merge_base:
        return commit
    result = _git(["merge-base", commit, "HEAD"], toplevel)
    if result.returncode != 0:
        shallow = _is_shallow(toplevel)
        hint = " (this is a shallow clone: fetch more history, or pass the base without '...')" if shallow else ""
        raise DiffError(f"--diff: no merge base of '{revision}' and HEAD{hint}")
    return result.stdout.decode().strip()


def _is_shallow(toplevel: Path) -> bool:
    result = _git(["rev-parse", "--is-shallow-repository"], toplevel)
    return result.stdout.decode().strip() == "true"


def _fetch_hint(toplevel: Path, revision: str) -> str:
    if _is_shallow(toplevel):
        branch = revision.removeprefix("origin/")
        return (
            f" (this is a shallow clone: fetch it first, e.g. "
            f"`git fetch --depth=1 origin {branch}:refs/remotes/origin/{branch}`)"
        )
    return ""


def load_diff(base: str, start: Path) -> DiffScope:
    """The changed lines of the repository that holds `start`, since revision `base`."""
    toplevel = _toplevel(start)
    commit = _resolve(base, toplevel)
    result = _git(
        [
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--text",
            "--no-relative",
            "-U0",
            "--find-renames",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            commit,
            "--",
        ],
        toplevel,
    )
    if result.returncode != 0:
        raise DiffError(f"--diff: git diff {base} failed: {_first_line(result.stderr)}")
    files = {changed.path: changed for changed in parse_unified_diff(result.stdout)}
    untracked = _git(["ls-files", "-z", "--others", "--exclude-standard"], toplevel)
    if untracked.returncode != 0:
        raise DiffError(f"--diff: git ls-files failed: {_first_line(untracked.stderr)}")
    for raw in untracked.stdout.split(b"\0"):
        if raw:
            path = raw.decode("utf-8", errors="surrogateescape")
            files[path] = ChangedFile(path, None)
    return DiffScope(base, commit, toplevel, files)


# ---------------------------------------------------------------------------- parsing


def _unquote(text: str) -> str:
    """A path as git prints it: plain, or C-quoted ("a/t\\tb", octal UTF-8 bytes)."""
    if not (len(text) >= 2 and text.startswith('"') and text.endswith('"')):
        return text
    body, out, index = text[1:-1], bytearray(), 0
    simple = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
    while index < len(body):
        char = body[index]
        if char != "\\":
            out += char.encode("utf-8", errors="surrogateescape")
            index += 1
            continue
        following = body[index + 1 : index + 2]
        if following in simple:
            out.append(simple[following])
            index += 2
        elif re.match(r"[0-7]{3}", body[index + 1 : index + 4]):
            out.append(int(body[index + 1 : index + 4], 8))
            index += 4
        else:  # not an escape git writes; keep it as is
            out += b"\\"
            index += 1
    return out.decode("utf-8", errors="surrogateescape")


def _strip_prefix(path: str, prefix: str) -> str | None:
    # `--- a/x y` lines end with a TAB when the name has a space (GNU diff's convention)
    path = path[:-1] if path.endswith("\t") and not path.startswith('"') else path
    if path == "/dev/null":
        return None
    path = _unquote(path)
    return path[len(prefix) :] if path.startswith(prefix) else path


def _header_paths(rest: str) -> tuple[str | None, str | None]:
    """`a/X b/Y` of a `diff --git` line; exact when both are quoted or X == Y."""
    if rest.startswith('"'):
        match = re.match(r'("(?:[^"\\]|\\.)*") (.*)$', rest)
        if match:
            return _strip_prefix(match.group(1), "a/"), _strip_prefix(match.group(2), "b/")
        return None, None
    if (len(rest) - 5) % 2 == 0 and rest.startswith("a/"):
        half = (len(rest) - 5) // 2
        old, new = rest[2 : 2 + half], rest[2 + half + 1 :]
        if new == "b/" + old:
            return old, old
    match = re.match(r"a/(.*) (\"?b/.*)$", rest)
    if match:
        return match.group(1), _strip_prefix(match.group(2), "b/")
    return None, None


@dataclass
class _Pending:
    old: str | None = None
    new: str | None = None
    added: bool = False
    deleted: bool = False
    renamed_or_copied: bool = False
    lines: set[int] = field(default_factory=set)

    def done(self) -> ChangedFile | None:
        if self.deleted or self.new is None:
            return None
        if self.added:
            return ChangedFile(self.new, None)
        if not self.lines and not self.renamed_or_copied:
            return None  # a mode change only: no line and no path changed
        old = self.old if self.renamed_or_copied else None
        return ChangedFile(self.new, frozenset(self.lines), old)


def parse_unified_diff(data: bytes) -> list[ChangedFile]:
    """The files and added line numbers of `git diff -U0 --find-renames` output."""
    files: list[ChangedFile] = []
    current: _Pending | None = None
    lines = data.decode("utf-8", errors="surrogateescape").split("\n")
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if line.startswith("diff --git "):
            if current is not None and (changed := current.done()):
                files.append(changed)
            current = _Pending()
            current.old, current.new = _header_paths(line[len("diff --git ") :])
            continue
        if current is None:
            continue
        if line.startswith("new file mode"):
            current.added = True
        elif line.startswith("deleted file mode"):
            current.deleted = True
        elif line.startswith(("rename from ", "copy from ")):
            current.old = _unquote(line.split(" ", 2)[2])
            current.renamed_or_copied = True
        elif line.startswith(("rename to ", "copy to ")):
            current.new = _unquote(line.split(" ", 2)[2])
            current.renamed_or_copied = True
        elif line.startswith("--- "):
            current.old = _strip_prefix(line[4:], "a/") or current.old
        elif line.startswith("+++ "):
            target = line[4:]
            if target == "/dev/null":
                current.deleted = True
            else:
                current.new = _strip_prefix(target, "b/")
        elif match := _HUNK_RE.match(line):
            removed = 1 if match.group(2) is None else int(match.group(2))
            start = int(match.group(3))
            added = 1 if match.group(4) is None else int(match.group(4))
            current.lines.update(range(start, start + added))
            # skip the hunk body by count, so a body line like "--- x" is never a header
            remaining = removed + added
            while remaining and index < len(lines):
                if not lines[index].startswith("\\"):
                    remaining -= 1
                index += 1
    if current is not None and (changed := current.done()):
        files.append(changed)
    return files
