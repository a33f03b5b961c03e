"""The `json` format: a list of finding objects with a stable key order.

`file_status` is the status of the finding's file (`results.FileStatus`: "checked", "parse
error", "not checked", "internal error"; null when the caller did not give it): a script
tells a file the run could not check from one that failed to parse by it, not by the
message's wording. `shard` is `"K/N"` when the harness ran one shard of the instantiations
(`kernel-check test --shard K/N`), null otherwise. `witness` is the values a static rule's
solver chose under which the defect happens (`finding.Counterexample`: the launcher's sizes,
the tensors' shapes, the ids read, the input to fill, the thread, block and block shape),
null where the finding has none; `kernel-check confirm` builds its GPU case from it."""

from __future__ import annotations

import json
from typing import Any

from ..finding import Finding, Fix, Location
from .common import Context, rule_meta


def _location(location: Location, ctx: Context) -> dict[str, Any]:
    return {
        "path": ctx.path(location.path),
        "line": location.line,
        "column": location.column,
        "end_line": location.end_line,
        "end_column": location.end_column,
    }


def _fix(fix: Fix | None) -> dict[str, Any] | None:
    if fix is None:
        return None
    edits = [{"start": e.start, "end": e.end, "replacement": e.replacement} for e in fix.edits]
    return {"description": fix.description, "edits": edits}


def _finding(finding: Finding, ctx: Context) -> dict[str, Any]:
    return {
        "code": finding.code,
        "name": rule_meta(finding).name,
        "severity": finding.severity.value,
        "message": finding.message,
        **_location(finding.location, ctx),
        "related": [{**_location(r.location, ctx), "message": r.message} for r in finding.related],
        "fix": _fix(finding.fix),
        "detail": finding.detail,
        "file_status": _status(finding, ctx),
        "shard": ctx.summary.shard or None,
        "witness": finding.witness.as_json() if finding.witness is not None else None,
    }


def _status(finding: Finding, ctx: Context) -> str | None:
    status = ctx.status(finding.path)
    return status.value if status is not None else None


def render(findings: list[Finding], ctx: Context) -> str:
    return json.dumps([_finding(f, ctx) for f in findings], indent=2, ensure_ascii=False)
