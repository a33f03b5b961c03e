"""Filter stage, per file: which of a file's findings survive.

Order: drop findings inside declarations clang could not type, then rule selection
(`select`/`ignore`/`per-file-ignores`), then inline suppressions, then severity overrides.
The same for static, build and dynamic codes; baselines, `--diff` and the gate apply
afterwards, across files (`finalize.py`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from .codes import PARSE_ERROR, STATIC, TABLE, UNUSED_SUPPRESSION
from .config import Config
from .finding import Finding, Location, Severity
from .globs import matches_any
from .model import Span, split_lines

# `// kernel-check: ignore[KC101, KC130]` or `# kernel-check: ignore-file[KC301]`; also the
# bare `kernel-check: ignore` (no bracket: no codes), which suppresses nothing and is reported
_SUPPRESSION_RE = re.compile(r"(?://|#|/\*)\s*kernel-check:\s*(ignore-file|ignore)(?:\[([^\]]*)\]|(?![\w\[-]))")
_CODE_RE = re.compile(r"^K[CD]\d{3}$")


@dataclass(frozen=True)
class Suppression:
    line: int
    column: int
    scope: str  # "ignore" (this line and the next) or "ignore-file"
    codes: tuple[str, ...]

    def covers(self, finding: Finding) -> bool:
        if finding.code not in self.codes:
            return False
        return self.scope == "ignore-file" or finding.line in (self.line, self.line + 1)


def parse_suppressions(text: str) -> list[Suppression]:
    found = []
    for number, line in enumerate(split_lines(text), start=1):
        for match in _SUPPRESSION_RE.finditer(line):
            codes = tuple(c.strip().upper() for c in (match.group(2) or "").split(",") if c.strip())
            found.append(Suppression(number, match.start() + 1, match.group(1), codes))
    return found


def unknown_selector(code: str) -> bool:
    """Whether no code of the table starts with `code`: a select/ignore entry that selects
    nothing is a typo, reported as an error (as ruff does) rather than silently ignored."""
    return not any(known.startswith(code.upper()) for known in TABLE)


@dataclass(frozen=True)
class Selection:
    """Which codes a run reports: `select`/`ignore` prefixes plus `per-file-ignores`, the
    command line's over the configuration's. Read once per run (`Selection.of`) and handed to
    everything that asks: the filter stage, the baseline's coverage (`finalize.Policy`) and
    what each file's check builds and runs (`pipeline.RunOptions`)."""

    select: tuple[str, ...] = ()  # empty: every code
    ignore: tuple[str, ...] = ()
    per_file: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (glob, codes ignored in its files)

    @classmethod
    def of(cls, config: Config, select: Iterable[str] = (), ignore: Iterable[str] = ()) -> Selection:
        """`select` replaces the configuration's `select`; `ignore` adds to its `ignore`."""
        chosen = list(select) or list(config.get("select"))
        return cls(
            tuple(s.upper() for s in chosen),
            tuple(s.upper() for s in [*ignore, *config.get("ignore")]),
            tuple((glob, tuple(c.upper() for c in codes)) for glob, codes in config.get("per-file-ignores").items()),
        )

    def enabled(self, code: str, relative_path: str | None = None) -> bool:
        if code in (PARSE_ERROR,):
            return not any(code.startswith(i) for i in self.ignore if len(i) == 5)
        if self.select and not any(code.startswith(s) for s in self.select):
            return False
        if any(code.startswith(i) for i in self.ignore):
            return False
        if relative_path is not None:
            for pattern, codes in self.per_file:
                if matches_any(relative_path, [pattern]) and any(code.startswith(c) for c in codes):
                    return False
        return True

    @property
    def parses(self) -> bool:
        """Whether every C++ file is parsed whatever its rules read: KC000, which the parse
        itself reports, is selected by name or prefix (or nothing is selected)."""
        return not self.select or any(PARSE_ERROR.startswith(s) for s in self.select)


@dataclass
class FilterOutcome:
    findings: list[Finding]
    suppressed: int


def filter_file_findings(
    findings: Iterable[Finding],
    *,
    path: str,
    relative_path: str,
    text: str,
    error_spans: list[Span],
    selection: Selection,
    config: Config,
    report_unused: bool = True,
) -> FilterOutcome:
    """Apply the per-file filters to the raw findings of one file."""
    selected = [f for f in typed_findings(findings, error_spans) if selection.enabled(f.code, relative_path)]
    suppressions = parse_suppressions(text)
    kept, used = _apply_suppressions(selected, suppressions)
    suppressed = len(selected) - len(kept)
    if report_unused:
        kept.extend(_unused(suppressions, used, path, selection, relative_path))
    return FilterOutcome([_with_severity(f, config) for f in kept], suppressed)


def typed_findings(findings: Iterable[Finding], error_spans: list[Span]) -> list[Finding]:
    """The findings outside the declarations clang could not type: the first filter, the
    one that depends on the parse alone (what the result cache keeps, so that a change of
    `select`/`ignore`/suppressions re-uses it)."""
    return [f for f in findings if f.code == PARSE_ERROR or not _inside(f.location, error_spans)]


def _inside(location: Location, spans: list[Span]) -> bool:
    return any(s.line <= location.line <= s.end_line for s in spans)


def _apply_suppressions(
    findings: list[Finding], suppressions: list[Suppression]
) -> tuple[list[Finding], set[tuple[Suppression, str]]]:
    kept, used = [], set()
    for finding in findings:
        covering = [s for s in suppressions if s.covers(finding)]
        for suppression in covering:
            used.add((suppression, finding.code))
        if not covering:
            kept.append(finding)
    return kept, used


def _unused(
    suppressions: list[Suppression],
    used: set[tuple[Suppression, str]],
    path: str,
    selection: Selection,
    relative_path: str,
) -> list[Finding]:
    unused = []
    for suppression in suppressions:
        if not suppression.codes and selection.enabled(UNUSED_SUPPRESSION, relative_path):
            unused.append(
                Finding(
                    UNUSED_SUPPRESSION,
                    _names_no_code(suppression.scope),
                    Location(path, suppression.line, suppression.column),
                    Severity.WARNING,
                )
            )
        for code in suppression.codes:
            if (suppression, code) in used:
                continue
            entry = TABLE.get(code) if _CODE_RE.match(code) else None
            if entry is not None and (entry.language not in STATIC or not selection.enabled(code, relative_path)):
                # a deselected rule has no use for its suppression this run, and a build or
                # dynamic code's is used by `kernel-check build` or `test`, not by this run
                continue
            message = (
                f"unused suppression for {code}" if entry is not None else f"suppression names an unknown code '{code}'"
            )
            if selection.enabled(UNUSED_SUPPRESSION, relative_path):
                unused.append(
                    Finding(
                        UNUSED_SUPPRESSION,
                        message,
                        Location(path, suppression.line, suppression.column),
                        Severity.WARNING,
                    )
                )
    return unused


def _names_no_code(scope: str) -> str:
    """A suppression without codes suppresses nothing (kernel-check has no blanket form)."""
    return (
        f"`kernel-check: {scope}` names no code, so it suppresses nothing; "
        f"write the codes to suppress, e.g. `kernel-check: {scope}[KC101]`"
    )


def _with_severity(finding: Finding, config: Config) -> Finding:
    severity = config.severity_of(finding.code, finding.severity)
    return finding if severity is finding.severity else replace(finding, severity=severity)
