"""The `github` format: workflow commands that GitHub Actions shows as annotations.

`::error file=F,line=L,col=C,endLine=L2,endColumn=C2,title=T::message`, with `warning` and
`notice` for the other severities. Data escapes `%`, CR and LF; property values also escape `:`
and `,` (the escaping of @actions/core's `issueCommand`).
"""

from __future__ import annotations

from ..finding import Finding, Severity
from .common import Context, rule_title
from .text import note_line

COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _properties(finding: Finding, ctx: Context) -> dict[str, str]:
    location = finding.location
    properties = {"file": ctx.path(location.path)}
    if location.line >= 1:
        properties["line"] = str(location.line)
        properties["col"] = str(location.column)
        if location.end_line is not None:
            properties["endLine"] = str(location.end_line)
        # GitHub takes a column range only on a single line
        if location.end_column is not None and location.end_line in (None, location.line):
            properties["endColumn"] = str(location.end_column)
    properties["title"] = rule_title(finding)
    return properties


def _message(finding: Finding, ctx: Context) -> str:
    """The message, then the related notes and the detail, one per line."""
    notes = [note_line(r, ctx.path(r.location.path)).strip() for r in finding.related]
    detail = [finding.detail.rstrip()] if finding.detail.strip() else []
    return "\n".join([finding.message, *notes, *detail])


def _command(finding: Finding, ctx: Context) -> str:
    properties = ",".join(f"{k}={escape_property(v)}" for k, v in _properties(finding, ctx).items())
    return f"::{COMMAND[finding.severity]} {properties}::{escape_data(_message(finding, ctx))}"


def render(findings: list[Finding], ctx: Context) -> str:
    return "\n".join(_command(f, ctx) for f in findings)
