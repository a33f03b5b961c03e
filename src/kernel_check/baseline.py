"""Baseline: accept the findings a code base already has, report only new ones.

`kernel-check --write-baseline FILE` records every current finding as an entry keyed by

* the file's POSIX path relative to the project root (the directory of the governing
  `pyproject.toml`, the same root reports and `per-file-ignores` use),
* the code, and
* the finding's source line with whitespace runs collapsed (the same normalization as the
  SARIF `partialFingerprints`), empty for a file-level finding (see `diff.is_file_level`),

with an occurrence count for identical keys. Line numbers are not part of the key, so edits
elsewhere in a file keep its entries valid; editing the flagged line itself makes its
finding new again, which is the point.

`--baseline FILE` (or config `baseline`) hides up to `count` findings per key, the first in
report order, and counts the entries left unmatched as fixed. Only entries the run could
have matched count as fixed: their file was checked (or no longer exists under a checked
path), and their code was enabled for it and is one the run's stages report (a static run
covers static codes, a `test` run build and dynamic ones: `finalize.Policy.covers`).
`--write-baseline` replaces exactly those entries and keeps the others, so writing a
baseline for `csrc/a.cuh` alone keeps every other file's entries, and a static run keeps
the build and dynamic ones.

The file is JSON with sorted entries and a trailing newline, written atomically.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import Config
from .diff import is_file_level
from .discover import SOURCE_SUFFIXES
from .finding import Finding
from .report.common import Sources, sort_findings
from .results import FileResult

BASELINE_VERSION = 1
TOOL = "kernel-check"


class BaselineError(Exception):
    """A baseline file that is missing, unreadable or not a baseline: one line, exit 2."""


@dataclass(frozen=True, order=True)
class Key:
    path: str
    code: str
    text: str


def normalize(line: str) -> str:
    """A source line with leading, trailing and repeated whitespace collapsed."""
    return " ".join(line.split())


def finding_key(finding: Finding, config: Config, sources: Sources) -> Key:
    text = "" if is_file_level(finding) else normalize(sources.line_of(finding))
    return Key(config.relative(Path(finding.path)), finding.code, text)


@dataclass
class Coverage:
    """Which entries a run could have matched (so a missing match means the finding is fixed)."""

    root: Path
    checked: set[str]
    paths: list[Path]
    enabled: Callable[[str, str], bool]

    def covers(self, key: Key) -> bool:
        if not self.enabled(key.code, key.path):
            return False
        if key.path in self.checked:
            return True
        file = self.root / key.path
        if os.path.lexists(file):
            return False  # not checked this run (not passed, excluded, outside the diff)
        absolute = Path(os.path.abspath(file))
        return any(absolute == p or absolute.is_relative_to(p) for p in self.paths)


def coverage(
    config: Config, results: Iterable[FileResult], paths: Iterable[Path], enabled: Callable[[str, str], bool]
) -> Coverage:
    """`paths`: the command-line path arguments. A file the run could not check (its
    status is not `known`: a timeout, a crash) does not count as checked."""
    checked = {config.relative(Path(r.path)) for r in results if r.status.known}
    return Coverage(config.root, checked, [Path(os.path.abspath(p)) for p in paths], enabled)


@dataclass
class Match:
    new: list[Finding]
    hidden: int
    fixed: list[Key] = field(default_factory=list)


@dataclass
class Baseline:
    entries: Counter[Key]
    source: Path | None = None

    @property
    def total(self) -> int:
        return sum(self.entries.values())

    def match(self, results: Sequence[FileResult], config: Config, cover: Coverage) -> Match:
        """Hide recorded findings; the covered entries left over are the fixed ones."""
        remaining = Counter(self.entries)
        sources = Sources()
        new = [f for r in results if not r.status.known for f in r.findings]  # a run failure, never accepted
        hidden = 0
        for finding in sort_findings(f for r in results if r.status.known for f in r.findings):
            key = finding_key(finding, config, sources)
            if remaining[key] > 0:
                remaining[key] -= 1
                hidden += 1
            else:
                new.append(finding)
        fixed = [key for key in sorted(remaining) for _ in range(remaining[key]) if cover.covers(key)]
        return Match(new, hidden, fixed)

    def to_json(self) -> str:
        entries = [
            {"path": k.path, "code": k.code, "text": k.text, "count": self.entries[k]}
            for k in sorted(self.entries)
            if self.entries[k] > 0
        ]
        document = {"tool": TOOL, "version": BASELINE_VERSION, "entries": entries}
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def from_findings(findings: Iterable[Finding], config: Config) -> Baseline:
    sources = Sources()
    return Baseline(Counter(finding_key(f, config, sources) for f in findings))


def configured_path(cli_value: Path | None, config: Config) -> Path | None:
    """`--baseline FILE` (relative to the current directory) or config `baseline` (relative
    to the project root); None when neither is set."""
    if cli_value is not None:
        return cli_value
    configured = config.get("baseline")
    return config.root / configured if configured else None


def load_baseline(path: Path) -> Baseline:
    if path.is_dir():
        raise BaselineError(f"{path}: baseline is a directory, not a file")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise BaselineError(
            f"{path}: baseline file not found (create it with `kernel-check --write-baseline {path}`)"
        ) from None
    except OSError as error:
        raise BaselineError(f"{path}: cannot read baseline: {error.strerror or error}") from None
    return Baseline(_parse(path, data), path)


def _parse(path: Path, data: bytes) -> Counter[Key]:
    def bad(problem: str) -> BaselineError:
        return BaselineError(f"{path}: not a kernel-check baseline: {problem}")

    try:
        document: Any = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise bad(f"not UTF-8 text (byte {error.start})") from None
    except json.JSONDecodeError as error:
        raise bad(f"invalid JSON at line {error.lineno} column {error.colno}: {error.msg}") from None
    if not isinstance(document, dict) or document.get("tool") != TOOL:
        raise bad(f'expected a JSON object with "tool": "{TOOL}"')
    version = document.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise bad('"version" must be an integer')
    if version > BASELINE_VERSION:
        raise BaselineError(
            f"{path}: baseline version {version} is newer than this kernel-check "
            f"reads ({BASELINE_VERSION}); upgrade kernel-check"
        )
    entries = document.get("entries")
    if not isinstance(entries, list):
        raise bad('"entries" must be a list')
    counts: Counter[Key] = Counter()
    for number, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict):
            raise bad(f"entry {number} is not an object")
        for name in ("path", "code", "text"):
            if not isinstance(entry.get(name), str):
                raise bad(f'entry {number}: "{name}" must be a string')
        count = entry.get("count", 1)
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise bad(f'entry {number}: "count" must be a positive integer')
        counts[Key(entry["path"], entry["code"].upper(), normalize(entry["text"]))] += count
    return counts


def write_baseline(path: Path, results: Sequence[FileResult], config: Config, cover: Coverage) -> tuple[Baseline, int]:
    """Record the findings of `results` in `path`; entries of an existing baseline the run
    did not cover are kept (so are those of files it could not check: their findings are unknown).
    Returns the written baseline and the number of entries kept."""
    if path.suffix in SOURCE_SUFFIXES:
        raise BaselineError(
            f"{path}: refusing to write a baseline over a source file "
            "(give a .json path, e.g. kernel-check-baseline.json)"
        )
    if path.is_dir():
        raise BaselineError(f"{path}: is a directory; give a file path for the baseline")
    if not path.parent.is_dir():
        raise BaselineError(f"{path}: directory {path.parent} does not exist")
    kept: Counter[Key] = Counter()
    if os.path.lexists(path):
        try:
            previous = load_baseline(path)
        except BaselineError as error:
            raise BaselineError(f"{error}; refusing to overwrite it") from None
        kept = Counter({k: n for k, n in previous.entries.items() if not cover.covers(k)})
    baseline = from_findings([f for r in results if r.status.known for f in r.findings], config)
    baseline.entries.update(kept)
    _write(path, baseline.to_json().encode("utf-8"))
    return baseline, sum(kept.values())


def _write(path: Path, data: bytes) -> None:
    from .fix import refuse_unwritable, write_atomically

    if not os.path.lexists(path):
        # write_atomically keeps the target's mode, so give it a target with the umask's mode
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            pass
        except OSError as error:
            raise BaselineError(f"{path}: cannot write baseline: {error.strerror or error}") from None
    try:
        refuse_unwritable(path, "cannot write baseline")
        write_atomically(path, data)
    except OSError as error:
        raise BaselineError(f"{path}: cannot write baseline: {error.strerror or error}") from None
