"""The back end every command shares: which findings a run reports, and whether it fails.

The static check, `build`, `test`, `sanitize` and the pytest plugin all end here:

1. **per file** (`filter.py`): `select`/`ignore`, `per-file-ignores`, inline suppressions
   (`// kernel-check: ignore[KD103]` works for build and dynamic codes too) and `severity`
   overrides. The static engine runs this step in its workers, where the file's text is
   at hand; `filter_results` runs it for the findings of the build and the harness.
2. **run-wide** (`finalize`): the baseline hides accepted findings (`baseline.py`), then
   `--diff` keeps the changed lines (`diff.py`).
3. **the gate** (`Verdict.fails`): errors fail; warnings too with `strict`; info never.

A `Policy` is what a run decides these by: the configuration, the command line's codes
and adoption inputs, and the stages whose codes it reports. The stages matter for the
baseline: a static run covers (and on `--write-baseline` replaces) only static entries, a
`test` run only build and dynamic ones, so one baseline file serves every command.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .baseline import Baseline, Coverage, coverage, write_baseline
from .codes import TABLE, Language
from .config import Config
from .diff import DiffScope
from .filter import Selection, filter_file_findings
from .finding import Finding, Severity
from .paths import display_path
from .report.common import Sources
from .results import FileResult, FileStatus

EXIT_CLEAN, EXIT_FINDINGS = 0, 1
BUILD_STAGES = frozenset({Language.BUILD})
TEST_STAGES = frozenset({Language.BUILD, Language.DYNAMIC})  # a test run builds first
SANITIZE_STAGES = frozenset({Language.DYNAMIC})


@dataclass(frozen=True)
class Policy:
    """What decides a run's report and its exit status."""

    config: Config
    stages: frozenset[Language]
    selection: Selection  # the codes reported: `--select`/`--ignore` over the configuration's
    strict: bool = False  # warnings fail the run too
    baseline: Baseline | None = None
    diff: DiffScope | None = None
    paths: tuple[Path, ...] = ()  # the paths the command was given (baseline coverage)
    # the run covered only part of each file's work (`test --shard K/N`): its baseline entries
    # are still matched, but none counts as fixed (another shard may be the one that hits it)
    partial: bool = False

    def covers(self, code: str, relative_path: str) -> bool:
        """Whether this run reports `code` in that file (so a baseline entry may match). A
        code no longer in the table can never match again: every run covers it."""
        if self.partial:
            return False
        entry = TABLE.get(code)
        return (entry is None or entry.language in self.stages) and self.selection.enabled(code, relative_path)

    def coverage(self, results: Sequence[FileResult]) -> Coverage:
        return coverage(self.config, results, self.paths, self.covers)


@dataclass
class Verdict:
    """What a run reports, with the counts the summary line shows."""

    findings: list[Finding]
    failing: list[Finding]  # the reported findings that fail the gate
    suppressed: int = 0
    baseline_hidden: int = 0
    baseline_fixed: int = 0
    statuses: dict[str, FileStatus] = field(default_factory=dict)  # path -> how far its check got

    @property
    def fails(self) -> bool:
        return bool(self.failing)

    def exit_status(self, exit_zero: bool = False) -> int:
        return EXIT_FINDINGS if self.fails and not exit_zero else EXIT_CLEAN


def finalize(results: Sequence[FileResult], policy: Policy) -> Verdict:
    """The run-wide filters and the gate over per-file-filtered results."""
    findings = [f for r in results for f in r.findings]
    hidden, fixed = 0, 0
    if policy.baseline is not None:
        match = policy.baseline.match(results, policy.config, policy.coverage(results))
        findings, hidden, fixed = match.new, match.hidden, len(match.fixed)
    if policy.diff is not None:
        findings = policy.diff.filter(findings)
    threshold = Severity.WARNING.rank if policy.strict else Severity.ERROR.rank
    return Verdict(
        findings,
        [f for f in findings if f.severity.rank >= threshold],
        sum(r.suppressed for r in results),
        hidden,
        fixed,
        {r.path: r.status for r in results},
    )


def filter_results(
    findings: Iterable[Finding], policy: Policy, files: Iterable[str] = (), unfinished: Iterable[str] = ()
) -> list[FileResult]:
    """The per-file filter over the findings of the build or the harness, one result per
    file. `files`: the sources the run exercised (a file without a finding is still checked,
    so its baseline entries count as fixed); `unfinished`: sources of work the run was
    stopped before finishing (its entries are kept)."""
    by_path: dict[str, list[Finding]] = {path: [] for path in files}
    for finding in findings:
        by_path.setdefault(finding.path, []).append(finding)
    stopped = set(unfinished)
    sources = Sources()
    results = []
    for path, found in by_path.items():
        data = sources.data(path)
        outcome = filter_file_findings(
            found,
            path=path,
            relative_path=policy.config.relative(Path(path)),
            text=(data or b"").decode("utf-8", errors="replace"),
            error_spans=[],
            selection=policy.selection,
            config=policy.config,
            report_unused=False,
        )
        status = FileStatus.NOT_CHECKED if path in stopped else FileStatus.CHECKED
        results.append(FileResult(path, outcome.findings, outcome.suppressed, status=status))
    return results


def record_baseline(target: Path, results: Sequence[FileResult], policy: Policy) -> int:
    """`--write-baseline FILE`: record the run's findings (entries of what the run did not
    cover are kept), say what was written, exit 0."""
    written, kept = write_baseline(target, results, policy.config, policy.coverage(results))
    unchecked = sorted({display_path(r.path) for r in results if not r.status.known})
    if unchecked:
        print(
            f"kernel-check: warning: {len(unchecked)} {'file was' if len(unchecked) == 1 else 'files were'} "
            f"not checked (timeout, crash or out of memory), so the baseline keeps their old entries: "
            f"{', '.join(unchecked)}; rerun --write-baseline (a larger file-timeout helps on a busy machine)",
            file=sys.stderr,
        )
    entries, files = len(written.entries), len({key.path for key in written.entries})
    note = f"; kept {kept} of files this run did not check" if kept else ""
    print(
        f"kernel-check: wrote {entries} baseline {'entry' if entries == 1 else 'entries'} "
        f"({written.total} {'finding' if written.total == 1 else 'findings'} in {files} "
        f"{'file' if files == 1 else 'files'}) to {target}{note}"
    )
    return EXIT_CLEAN
