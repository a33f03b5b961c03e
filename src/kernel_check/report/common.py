"""What every reporter shares: the run summary, ordering, paths, rule metadata and source text."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..finding import Finding, Location
from ..model import split_lines
from ..paths import display_path, root_relative
from ..registry import Language, RuleMeta, get_rule
from ..results import FileStatus

PROJECT_URL = "https://github.com/kernel-check/kernel-check"
"""Home of the project: SARIF `informationUri`, and the base of each rule's `helpUri`."""

_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Summary:
    """Counts the filter stage computes; the text reporter prints the non-zero ones."""

    files_checked: int = 0
    suppressed: int = 0
    baseline_hidden: int = 0
    baseline_fixed: int = 0
    fixed: int = 0
    cached: int = 0
    shard: str = ""  # `K/N` when the harness ran one shard of the instantiations (`--shard`)


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    """The one report order: `Finding.sort_key()`, then message for a total order."""
    return sorted(findings, key=lambda f: (f.sort_key(), f.message))


def repository_root(start: Path) -> Path:
    """The git work tree holding `start` (its nearest ancestor with a `.git` folder or file),
    else `start`. GitHub resolves annotation and SARIF paths against the repository root,
    which is not the project root when `pyproject.toml` sits in a subfolder (a monorepo)."""
    start = Path(os.path.abspath(start))
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return start


def position(path: str, location: Location) -> str:
    """`path:line:col`, the head of every human-readable location."""
    return f"{path}:{location.line}:{location.column}"


def rule_meta(finding: Finding) -> RuleMeta:
    """The finding's registered rule, or a stand-in named by its code for an unknown one."""
    registered = get_rule(finding.code)
    if registered is not None:
        return registered.meta
    return RuleMeta(finding.code, finding.code, finding.severity, Language.META, summary="", doc="")


def rule_title(finding: Finding) -> str:
    """`CODE name`, or just the code when the rule is unknown."""
    name = rule_meta(finding).name
    return finding.code if name == finding.code else f"{finding.code} {name}"


def plural(count: int, one: str, many: str | None = None) -> str:
    return one if count == 1 else (many or one + "s")


@dataclass
class Sources:
    """File contents, read once per report; a file that cannot be read counts as absent."""

    _data: dict[str, bytes | None] = field(default_factory=dict)
    _lines: dict[str, list[str]] = field(default_factory=dict)

    def data(self, path: str) -> bytes | None:
        if path not in self._data:
            try:
                self._data[path] = Path(path).read_bytes()
            except OSError:
                self._data[path] = None
        return self._data[path]

    def line(self, path: str, number: int) -> str:
        """Line `number` (1-based, numbered as clang does) decoded leniently; "" when unknown."""
        if path not in self._lines:
            data = self.data(path) or b""
            text = data.removeprefix(_BOM).decode("utf-8", errors="replace")
            self._lines[path] = split_lines(text)
        lines = self._lines[path]
        return lines[number - 1] if 1 <= number <= len(lines) else ""

    def line_of(self, finding: Finding) -> str:
        """The source line a finding points at: `Finding.source_line` when set, else the file's."""
        return finding.source_line or self.line(finding.path, finding.line)

    def char_offset(self, path: str, byte_offset: int) -> int | None:
        """A byte offset as a code-point offset (BOM excluded); None unless valid UTF-8 up to it."""
        data = self.data(path)
        if data is None or not 0 <= byte_offset <= len(data):
            return None
        start = len(_BOM) if data.startswith(_BOM) else 0
        try:
            return len(data[start:byte_offset].decode("utf-8"))
        except UnicodeDecodeError:
            return None


@dataclass
class Context:
    """One render call's settings, handed to each format's renderer."""

    root: Path  # what a format for tools names files relative to
    summary: Summary
    color: bool = False
    sources: Sources = field(default_factory=Sources)
    statuses: Mapping[str, FileStatus] = field(default_factory=dict)  # path -> how far its check got
    for_people: bool = False  # name files from the current directory (`display_path`), not from `root`

    def path(self, path: str) -> str:
        """How this format names a file: for people `display_path`; for tools relative to
        `root` when under it, else as the finding gives it."""
        if self.for_people:
            return display_path(path)
        relative = root_relative(path, self.root)
        return path if relative is None else relative

    def status(self, path: str) -> FileStatus | None:
        """How far the run got with the file (None: the caller did not say)."""
        return self.statuses.get(path)
