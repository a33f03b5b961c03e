"""`--statistics`: counts per code with the rule name, like `ruff --statistics`."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from ..finding import Finding
from .common import Context, rule_meta
from .text import summary_text


@dataclass(frozen=True)
class CodeCount:
    code: str
    name: str
    count: int
    fixable: bool


def count_codes(findings: list[Finding]) -> list[CodeCount]:
    """One row per code, by count (most first), then code."""
    by_code: dict[str, list[Finding]] = {}
    for finding in findings:
        by_code.setdefault(finding.code, []).append(finding)
    rows = [
        CodeCount(code, rule_meta(group[0]).name, len(group), any(f.fix for f in group))
        for code, group in by_code.items()
    ]
    return sorted(rows, key=lambda row: (-row.count, row.code))


def _table(rows: list[CodeCount]) -> list[str]:
    count_width = max((len(str(row.count)) for row in rows), default=1)
    code_width = max((len(row.code) for row in rows), default=1)
    return [
        f"{row.count:>{count_width}}  {row.code:<{code_width}}  {'[*]' if row.fixable else '[ ]'} {row.name}"
        for row in rows
    ]


def render(findings: list[Finding], ctx: Context, *, as_json: bool) -> str:
    """The table and the summary line, or (`as_json`) a JSON list of the rows."""
    rows = count_codes(findings)
    if as_json:
        return json.dumps([asdict(row) for row in rows], indent=2, ensure_ascii=False)
    return "\n".join([*_table(rows), summary_text(findings, ctx.summary)])
