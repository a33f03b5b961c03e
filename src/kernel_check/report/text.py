"""The human format: ruff-like `path:line:col: CODE [severity] message` with a source excerpt."""

from __future__ import annotations

from collections import Counter

from ..finding import Finding, Location, Related, Severity
from .common import Context, Summary, plural, position

_RESET = "\x1b[0m"
_BOLD = "1"
_SEVERITY_COLOR = {Severity.ERROR: "31", Severity.WARNING: "33", Severity.INFO: "36"}
_NOTE_COLOR = "36"
_GUTTER_COLOR = "34"
_FIX_COLOR = "32"


# C0 controls but the tab, DEL, and C1 controls: a terminal acts on them (an ESC starts a
# control sequence, a CR rewrites the line), so text from a checked file never reaches one raw.
_CONTROLS = {code: 0x2400 + code for code in range(0x20) if code != 0x09}  # U+2400.. Control Pictures
_CONTROLS.update({0x7F: 0x2421, **dict.fromkeys(range(128, 160), 65533)})


def printable(text: str) -> str:
    """`text` with every control character shown as one visible character (a binary file's
    excerpt, a quoted identifier); one character for one keeps the carets under their span."""
    return text.translate(_CONTROLS)


def _paint(text: str, color: bool, *codes: str) -> str:
    return f"\x1b[{';'.join(codes)}m{text}{_RESET}" if color else text


def headline(finding: Finding, path: str, color: bool = False) -> str:
    """`path:line:col: CODE [severity] message`, the first line of a finding."""
    tint = _SEVERITY_COLOR[finding.severity]
    where = _paint(position(path, finding.location), color, _BOLD)
    code = _paint(finding.code, color, _BOLD, tint)
    severity = _paint(f"[{finding.severity.value}]", color, tint)
    return f"{where}: {code} {severity} {printable(finding.message)}"


def note_line(related: Related, path: str, color: bool = False) -> str:
    """`  note: path:line:col: message` for a related location."""
    note = _paint("note", color, _BOLD, _NOTE_COLOR)
    return f"  {note}: {position(path, related.location)}: {printable(related.message)}"


def _span_width(location: Location, line_length: int) -> int:
    """Columns to underline: up to `end_column` on the same line, else to the line's end."""
    if location.end_line in (None, location.line) and location.end_column is not None:
        end = location.end_column
    elif location.end_line is not None and location.end_line > location.line:
        end = line_length + 1
    else:
        end = location.column + 1
    return max(1, min(end, line_length + 1) - location.column)


def _excerpt(finding: Finding, source: str, color: bool) -> list[str]:
    """The source line under a numbered gutter, with carets under the finding's span."""
    if not source.strip():
        return []
    source = printable(source)
    gutter = str(finding.line)
    bar = _paint(" " * len(gutter) + " |", color, _GUTTER_COLOR)
    # keep tabs so the carets line up with the source as the terminal renders it
    indent = "".join(c if c == "\t" else " " for c in source[: finding.location.column - 1])
    carets = "^" * _span_width(finding.location, len(source))
    return [
        f"  {_paint(gutter + ' |', color, _GUTTER_COLOR)} {source}",
        f"  {bar} {indent}{_paint(carets, color, _BOLD, _SEVERITY_COLOR[finding.severity])}",
    ]


def _fix_line(finding: Finding, color: bool) -> list[str]:
    if finding.fix is None:
        return []
    description = f": {finding.fix.description}" if finding.fix.description else ""
    return [f"  {_paint('[*]', color, _BOLD, _FIX_COLOR)} fixable with --fix{description}"]


def _block(finding: Finding, ctx: Context) -> str:
    lines = [headline(finding, ctx.path(finding.path), ctx.color)]
    lines += _excerpt(finding, ctx.sources.line_of(finding), ctx.color)
    lines += [note_line(r, ctx.path(r.location.path), ctx.color) for r in finding.related]
    lines += ["    " + printable(line) for line in finding.detail.rstrip().splitlines()]
    lines += _fix_line(finding, ctx.color)
    return "\n".join(lines)


def _summary_counts(summary: Summary) -> list[str]:
    s = summary
    entries = plural(s.baseline_fixed, "entry", "entries")
    counts = (
        (s.files_checked, f"{s.files_checked} {plural(s.files_checked, 'file')} checked"),
        (s.cached, f"{s.cached} cached"),
        (s.suppressed, f"{s.suppressed} suppressed"),
        (s.baseline_hidden, f"{s.baseline_hidden} hidden by the baseline"),
        (s.baseline_fixed, f"{s.baseline_fixed} baseline {entries} fixed"),
    )
    return [text for count, text in counts if count]


def summary_text(findings: list[Finding], summary: Summary) -> str:
    """`Found N findings (E errors, W warnings, I info).` or `All checks passed.`, plus counts;
    after `--fix`, `Found N findings (M fixed, K remaining).` as ruff says it."""
    if summary.fixed:
        total = len(findings) + summary.fixed
        head = f"Found {total} {plural(total, 'finding')} ({summary.fixed} fixed, {len(findings)} remaining)."
    elif findings:
        by = Counter(f.severity for f in findings)
        errors, warnings, infos = by[Severity.ERROR], by[Severity.WARNING], by[Severity.INFO]
        head = (
            f"Found {len(findings)} {plural(len(findings), 'finding')} ({errors} "
            f"{plural(errors, 'error')}, {warnings} {plural(warnings, 'warning')}, {infos} info)."
        )
    else:
        head = "All checks passed."
    counts = _summary_counts(summary)
    lines = [f"{head} {', '.join(counts)}." if counts else head]
    fixable = sum(f.fix is not None for f in findings)
    if fixable:
        lines.append(f"[*] {fixable} fixable with --fix.")
    return "\n".join(lines)


def shard_header(summary: Summary) -> list[str]:
    """The report's first line when it covers one shard of the run (`--shard K/N`)."""
    return [f"Shard {summary.shard}: only this shard's instantiations ran."] if summary.shard else []


def render(findings: list[Finding], ctx: Context) -> str:
    blocks = [_block(f, ctx) for f in findings]
    return "\n\n".join([*shard_header(ctx.summary), *blocks, summary_text(findings, ctx.summary)])
