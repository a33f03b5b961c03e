"""The report stage: findings -> text, concise, json, sarif, github or junit output.

`render` sorts the findings (one order for every format) and returns the output without a
trailing newline. Paths: `text` and `concise`, which people read, name a file relative to the
current directory when it is under it, else absolutely (`paths.display_path`, as ruff does), so
that a terminal or an editor opens it from where the command ran; `json` and `junit` name it
relative to `root` (the project root, the same in every run, as baselines do); `sarif` and
`github`, which GitHub reads, relative to the git repository holding `root`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from ..finding import Finding
from ..results import FileStatus
from . import concise, github, json_format, junit, sarif, text
from . import statistics as stats
from .common import Context, Summary, repository_root, sort_findings

__all__ = ["FORMATS", "HUMAN_FORMATS", "STATISTICS_FORMATS", "Summary", "render"]

_RENDERERS: dict[str, Callable[[list[Finding], Context], str]] = {
    "text": text.render,
    "concise": concise.render,
    "json": json_format.render,
    "sarif": sarif.render,
    "github": github.render,
    "junit": junit.render,
}

FORMATS = tuple(_RENDERERS)
HUMAN_FORMATS = ("text", "concise")  # what a person reads: paths from the current directory, colors, progress
# `--statistics` is a table (text, concise) or a JSON list; the other formats are documents
# with a schema of findings that counts do not fit (ruff refuses them too)
STATISTICS_FORMATS = ("text", "concise", "json")
REPOSITORY_RELATIVE = ("sarif", "github")


def render(
    findings: list[Finding],
    fmt: str,
    *,
    root: Path,
    statistics: bool = False,
    summary: Summary | None = None,
    color: bool = False,
    statuses: Mapping[str, FileStatus] | None = None,
) -> str:
    """Render `findings` in `fmt` (one of FORMATS).

    `statistics` replaces the findings with counts per code: a JSON list for `json`, the
    `ruff --statistics`-like table for `text` and `concise` (`STATISTICS_FORMATS`; the
    others raise ValueError). `color` adds ANSI colors to text.
    `statuses` (path -> `FileStatus`, `Verdict.statuses`) gives each `json` finding its
    file's status.
    """
    if fmt not in _RENDERERS:
        raise ValueError(f"unknown output format {fmt!r} (choose from {', '.join(FORMATS)})")
    if statistics and fmt not in STATISTICS_FORMATS:
        raise ValueError(f"no statistics in {fmt!r} (choose from {', '.join(STATISTICS_FORMATS)})")
    base = repository_root(Path(root)) if fmt in REPOSITORY_RELATIVE else Path(root)
    ctx = Context(
        root=base, summary=summary or Summary(), color=color, statuses=statuses or {}, for_people=fmt in HUMAN_FORMATS
    )
    ordered = sort_findings(findings)
    if statistics:
        return stats.render(ordered, ctx, as_json=fmt == "json")
    return _RENDERERS[fmt](ordered, ctx)
