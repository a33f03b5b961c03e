"""The one-line format (`--output-format concise`): `path:line:col: CODE [severity] message`
per finding, no excerpt, then the summary: for editors, grep and a quick look."""

from __future__ import annotations

from ..finding import Finding
from .common import Context
from .text import headline, shard_header, summary_text


def render(findings: list[Finding], ctx: Context) -> str:
    lines = [headline(finding, ctx.path(finding.path), ctx.color) for finding in findings]
    return "\n".join([*shard_header(ctx.summary), *lines, summary_text(findings, ctx.summary)])
