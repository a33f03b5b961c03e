"""The confirmations on record: what `kernel-check confirm` found when it ran a static
finding's witness on the GPU, and how the static report says so.

One JSON file per project, next to its cached results:
`<cache>/static-v1/projects/<hash of the project root>/confirmations.json` (`store_path`).
Each record is keyed by the finding as the static check reports it -- its file's bytes, its
path from the project root, its code, position and message -- so an edit of the file (or a
finding that changed) voids it: the record is no longer found. The file is rewritten whole
and atomically (`cache.atomic_write`); a record from a newer run of the same finding
replaces the older one. `kernel-check clean` removes it with the project's results.

Only a confirmed finding changes the report: its message ends with the verdict
("; confirmed on the GPU by memcheck, NVIDIA H100 80GB HBM3, 2026-12-06"). A finding not
reproduced, or one that could not run, reads as before.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from .cache import atomic_write, digest, project_dir, read_bytes, static_root
from .finding import Finding
from .paths import root_relative

STORE_NAME = "confirmations.json"
STORE_FORMAT = 1

CONFIRMED = "confirmed"
NOT_REPRODUCED = "not reproduced"
NOT_RUN = "could not run"


@dataclass(frozen=True)
class Verdict:
    """One finding's confirmation: `outcome` (CONFIRMED, NOT_REPRODUCED, NOT_RUN), the check
    that decided it (`by`: "memcheck", ..., "the comparison"), the GPU and the day, and what
    it saw or why it did not run (`detail`), for the case it ran (`case`)."""

    outcome: str
    by: str = ""
    gpu: str = ""
    date: str = ""
    detail: str = ""
    case: str = ""

    @property
    def confirmed(self) -> bool:
        return self.outcome == CONFIRMED

    def summary(self) -> str:
        """`confirmed by memcheck on NVIDIA H100 80GB HBM3`, `not reproduced: ...`: a table's cell."""
        if self.confirmed:
            return f"confirmed by {self.by} on {self.gpu}"
        return f"{self.outcome}: {self.detail}" if self.detail else self.outcome

    def suffix(self) -> str:
        """What a confirmed finding's message gains in the static report."""
        return f"; confirmed on the GPU by {self.by}, {self.gpu}, {self.date}"


def store_path(project_root: Path, cache_dir: Path | None = None) -> Path:
    """The project's confirmations file (`--cache-dir`, else the user's cache: `cache.cache_root`)."""
    return project_dir(static_root(cache_dir), project_root) / STORE_NAME


def finding_key(finding: Finding, project_root: Path) -> str | None:
    """The record's key for `finding` as its file is now; None where the file cannot be read."""
    data = read_bytes(Path(finding.path))
    if data is None:
        return None
    relative = root_relative(finding.path, project_root) or str(Path(finding.path).resolve())
    position = f"{finding.line}:{finding.location.column}"
    return digest(relative, finding.code, position, finding.message, data)


def load(path: Path) -> dict[str, Verdict]:
    """The records of a confirmations file ({} when there is none, or it is not one)."""
    data = read_bytes(path)
    if data is None:
        return {}
    try:
        stored = json.loads(data)
        if stored.get("format") != STORE_FORMAT:
            return {}
        return {key: Verdict(**fields) for key, fields in stored["records"].items()}
    except (ValueError, TypeError, KeyError, AttributeError):
        return {}


def record(path: Path, verdicts: Iterable[tuple[Finding, Verdict]], project_root: Path) -> bool:
    """Add `verdicts` to the file (replacing earlier records of the same findings), written
    atomically; False when it could not be written."""
    records = load(path)
    for finding, verdict in verdicts:
        key = finding_key(finding, project_root)
        if key is not None:
            records[key] = verdict
    stored = {"format": STORE_FORMAT, "records": {k: dataclasses.asdict(v) for k, v in sorted(records.items())}}
    return atomic_write(path, json.dumps(stored, indent=1).encode())


def annotate(findings: Iterable[Finding], records: Mapping[str, Verdict], project_root: Path) -> list[Finding]:
    """`findings`, each confirmed one on record with its verdict at the end of its message."""
    if not records:
        return list(findings)
    annotated = []
    for finding in findings:
        key = finding_key(finding, project_root) if finding.witness is not None else None
        verdict = records.get(key) if key is not None else None
        if verdict is not None and verdict.confirmed:
            finding = dataclasses.replace(finding, message=finding.message + verdict.suffix())
        annotated.append(finding)
    return annotated
