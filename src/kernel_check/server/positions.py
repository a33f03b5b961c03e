"""Positions in a document as the Language Server Protocol counts them.

The checker speaks 1-based lines and 1-based character (code point) columns
(`finding.Location`), and byte offsets into the UTF-8 file for edits (`finding.TextEdit`).
LSP speaks 0-based lines and 0-based columns in the code units of the encoding the client
and server agreed on at `initialize`: UTF-16 unless the client offered another (Neovim
offers UTF-8 first). Lines break where clang and every editor break them (`\\r\\n`, `\\r`,
`\\n`: `model.split_lines`), never at the other characters `str.splitlines` breaks at.
"""

from __future__ import annotations

from bisect import bisect_right

from lsprotocol import types

from ..model import line_starts, split_lines

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"


def encode(text: str) -> bytes:
    """The document's bytes as the checker reads them (a lone surrogate kept as is, so that
    every offset maps back)."""
    return text.encode("utf-8", "surrogatepass")


class LineIndex:
    """One version of a document's text, for turning checker positions into LSP ones."""

    def __init__(self, text: str, encoding: str = UTF16) -> None:
        self.lines = split_lines(text)
        self.data = encode(text)
        self._starts = line_starts(self.data)
        self.encoding = encoding

    def units(self, text: str) -> int:
        """`text`'s length in the agreed code units."""
        if self.encoding == UTF32:
            return len(text)
        if self.encoding == UTF8:
            return len(encode(text))
        return len(text.encode("utf-16-le", "surrogatepass")) // 2

    def line(self, number: int) -> str:
        """Line `number` (0-based), "" past the end."""
        return self.lines[number] if 0 <= number < len(self.lines) else ""

    def position(self, line: int, column: int) -> types.Position:
        """A 1-based line and character column, clamped into the document."""
        row = min(max(line, 1), len(self.lines)) - 1
        text = self.lines[row]
        return types.Position(row, self.units(text[: min(max(column, 1) - 1, len(text))]))

    def at_byte(self, offset: int) -> types.Position:
        """A byte offset into `data` (an edit's start or end)."""
        offset = min(max(offset, 0), len(self.data))
        row = bisect_right(self._starts, offset) - 1
        raw = self.data[self._starts[row] : offset]
        try:
            before = raw.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:  # inside a character: count the whole ones before it
            before = raw.decode("utf-8", "ignore")
        return types.Position(row, self.units(before))

    def end_of_line(self, row: int) -> types.Position:
        """Just after the last character of 0-based line `row` (before its line break)."""
        return types.Position(row, self.units(self.line(row)))
