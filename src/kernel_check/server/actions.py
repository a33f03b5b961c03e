"""Findings as LSP diagnostics, and the code actions the server offers for them: the
finding's safe fix (`Finding.fix`, what `--fix` applies), every safe fix of the document at
once (`source.fixAll`), and a suppression comment for the finding's line (`filter.py`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from lsprotocol import types

from ..codes import PARSE_ERROR, UNUSED_SUPPRESSION
from ..filter import parse_suppressions
from ..finding import Finding, Location, Severity
from ..fix import plan_fixes
from ..report.sarif import rule_help_uri
from .positions import LineIndex

SOURCE = "kernel-check"
FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.kernel-check"
_SEVERITIES = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
}
_CONTINUED = re.compile(r"\\\s*$")  # a line that goes on in the next (a macro body, a Python `\`)


class Document:
    """The text one check ran on, with its findings: what diagnostics and actions are built from."""

    def __init__(self, uri: str, path: Path, text: str, findings: list[Finding], encoding: str) -> None:
        self.uri = uri
        self.path = path
        self.text = text
        self.findings = findings
        self.index = LineIndex(text, encoding)

    @property
    def python(self) -> bool:
        return self.path.suffix == ".py"

    @property
    def newline(self) -> str:
        """The line break the document uses (for a line the server adds)."""
        return "\r\n" if "\r\n" in self.text else "\n"

    def range(self, location: Location) -> types.Range:
        """The location's range in this document (a point when its end is unknown or before it)."""
        start = self.index.position(location.line, location.column)
        if location.end_line is None or location.end_column is None:
            return types.Range(start, start)
        end = self.index.position(location.end_line, location.end_column)
        return types.Range(start, end if (end.line, end.character) >= (start.line, start.character) else start)

    def diagnostics(self) -> list[types.Diagnostic]:
        return [self.diagnostic(f) for f in self.findings]

    def diagnostic(self, finding: Finding) -> types.Diagnostic:
        return types.Diagnostic(
            range=self.range(finding.location),
            message=finding.message,
            severity=_SEVERITIES[finding.severity],
            code=finding.code,
            code_description=types.CodeDescription(href=rule_help_uri(finding.code)),
            source=SOURCE,
            related_information=[self._related(r.location, r.message) for r in finding.related] or None,
            tags=[types.DiagnosticTag.Unnecessary] if finding.code == UNUSED_SUPPRESSION else None,
        )

    def _related(self, location: Location, message: str) -> types.DiagnosticRelatedInformation:
        path = Path(location.path)
        if path == self.path:
            uri, where = self.uri, self.range(location)
        else:  # another file (a header): positioned on its text on disk
            try:
                text = path.read_bytes().decode("utf-8", errors="replace")
            except OSError:
                text = ""
            other = Document(path.absolute().as_uri(), path, text, [], self.index.encoding)
            uri, where = other.uri, other.range(location)
        return types.DiagnosticRelatedInformation(types.Location(uri, where), message)

    # -- code actions -------------------------------------------------------------------------
    def actions(self, wanted: types.Range, only: Sequence[str] | None) -> list[types.CodeAction]:
        """The quick fixes for the findings on the lines of `wanted`, and the fix-all action
        (when `only` allows each kind)."""
        actions: list[types.CodeAction] = []
        # as `--fix`: no fix in a file that did not fully parse (its AST was not fully typed)
        fixable = not any(f.code == PARSE_ERROR for f in self.findings)
        if _allowed(types.CodeActionKind.QuickFix, only):
            for finding in self.findings:
                diagnostic = self.diagnostic(finding)
                if diagnostic.range.start.line > wanted.end.line or diagnostic.range.end.line < wanted.start.line:
                    continue
                if finding.fix is not None and fixable:
                    actions.append(self.fix_action(finding, diagnostic))
                if finding.code != UNUSED_SUPPRESSION:  # a stale suppression wants deleting, not another one
                    actions.append(self.suppress_action(finding, diagnostic))
        if _allowed(FIX_ALL, only) and (fix_all := self.fix_all_action()) is not None:
            actions.append(fix_all)
        return actions

    def fix_action(self, finding: Finding, diagnostic: types.Diagnostic) -> types.CodeAction:
        assert finding.fix is not None
        edits = [
            types.TextEdit(types.Range(self.index.at_byte(e.start), self.index.at_byte(e.end)), e.replacement)
            for e in finding.fix.edits
        ]
        return types.CodeAction(
            f"{finding.fix.description} ({finding.code})",
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
            is_preferred=True,
            edit=self._edit(edits),
        )

    def fix_all_action(self) -> types.CodeAction | None:
        """Every safe fix at once, as `--fix` would apply them (overlapping ones wait for the
        next round); None when there is none."""
        planned = plan_fixes(self.findings, {str(self.path): self.index.data}).get(str(self.path))
        if planned is None:
            return None
        whole = types.Range(types.Position(0, 0), self.index.at_byte(len(self.index.data)))
        after = planned.after.decode("utf-8", "surrogatepass")
        noun = "fix" if planned.count == 1 else "fixes"
        return types.CodeAction(
            f"Apply {planned.count} safe kernel-check {noun}",
            kind=FIX_ALL,
            edit=self._edit([types.TextEdit(whole, after)]),
        )

    def suppress_action(self, finding: Finding, diagnostic: types.Diagnostic) -> types.CodeAction:
        edit, also = self.suppression(finding)
        title = f"Suppress {finding.code} on this line" + (f" (and on line {also + 1})" if also is not None else "")
        return types.CodeAction(
            title, kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic], edit=self._edit([edit])
        )

    def suppression(self, finding: Finding) -> tuple[types.TextEdit, int | None]:
        """The edit that makes `filter.py` suppress `finding`, and the other line (0-based)
        whose finding of that code it suppresses too, if any: a suppression covers its own
        line and the next, so each place it can go also covers a neighbour -- the end of the
        finding's line (and the next line), or a comment line above (and the line above).
        The first place whose neighbour has no such finding wins: a suppression already on
        the line or above it (the code is added to its list), else a new comment at the end
        of the line, else one on a line of its own above. A line continued with a backslash
        (a macro body, a Python continuation) must stay continued: there a C++ comment is a
        `/* */` before the backslash, and Python gets only the line above."""
        code, row = finding.code, self.diagnostic(finding).range.start.line
        flagged = {self.diagnostic(f).range.start.line for f in self.findings if f.code == code}
        places = [*self._joined(row, code), *self._new(row, code)]
        edit, covered = next(((e, c) for e, c in places if c not in flagged), places[0])
        return edit, covered if covered in flagged else None

    def _joined(self, row: int, code: str) -> list[tuple[types.TextEdit, int]]:
        """Adding `code` to a suppression on the line or the line above."""
        places = []
        for existing in parse_suppressions(self.text):
            at_row = existing.line - 1
            if existing.scope == "ignore" and at_row in (row, row - 1):
                line = self.index.line(at_row)
                close = types.Position(at_row, self.index.units(line[: line.index("]", existing.column - 1)]))
                text = f", {code}" if existing.codes else code
                places.append((types.TextEdit(types.Range(close, close), text), row + 1 if at_row == row else row - 1))
        return places

    def _new(self, row: int, code: str) -> list[tuple[types.TextEdit, int]]:
        """A new suppression comment at the end of the line or on a line above it."""
        line = self.index.line(row)
        continued = _CONTINUED.search(line)
        above_allowed = row == 0 or not _CONTINUED.search(self.index.line(row - 1))
        indent = line[: len(line) - len(line.lstrip())]
        start, end = types.Position(row, 0), self.index.end_of_line(row)
        places = []
        if self.python:
            if not continued:
                places.append((types.TextEdit(types.Range(end, end), f"  # kernel-check: ignore[{code}]"), row + 1))
            if above_allowed or not places:
                above = f"{indent}# kernel-check: ignore[{code}]{self.newline}"
                places.append((types.TextEdit(types.Range(start, start), above), row - 1))
            return places
        if continued:
            before = types.Position(row, self.index.units(line[: continued.start()]))
            return [(types.TextEdit(types.Range(before, before), f"/* kernel-check: ignore[{code}] */ "), row + 1)]
        places.append((types.TextEdit(types.Range(end, end), f"  // kernel-check: ignore[{code}]"), row + 1))
        if above_allowed:
            above = f"{indent}// kernel-check: ignore[{code}]{self.newline}"
            places.append((types.TextEdit(types.Range(start, start), above), row - 1))
        return places

    def _edit(self, edits: list[types.TextEdit]) -> types.WorkspaceEdit:
        return types.WorkspaceEdit(changes={self.uri: edits})


def _allowed(kind: str, only: Sequence[str] | None) -> bool:
    """Whether the client's `only` filter (kinds or their prefixes) admits `kind`."""
    return not only or any(kind == wanted or kind.startswith(f"{wanted}.") for wanted in only)
