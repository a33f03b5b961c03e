"""## What it does
Flags every line of a C++/CUDA source that contains a non-ASCII byte, comments and
string literals included.

## Why is this bad?
Kernel sources are compiled by several toolchains (nvcc, hipcc, clang) and read in
terminals, diffs and code review tools with different encodings. Typographic characters
pasted from documents (dashes, arrows, curly quotes) are invisible traps: they change
byte offsets, break `grep`, and inside string literals change program behaviour.

## Example
```cpp
// Each warp handles one row — rows ≥ 128 use the CTA variant.
```

## Use instead
```cpp
// Each warp handles one row -- rows >= 128 use the CTA variant.
```

`--fix` maps the common characters (`—` to `--`, `→` to `->`, `≤` to `<=`, `≥` to `>=`,
`×` to `x`, curly quotes to straight quotes, and a few more); lines with other
characters are reported only.
"""

from __future__ import annotations

from collections.abc import Iterator

from kernel_check.finding import Finding, Fix, Location, TextEdit
from kernel_check.model import SourceModel, line_starts
from kernel_check.registry import Needs, RuleContext, rule

ASCII_REPLACEMENTS = {
    "\u2014": "--",
    "\u2013": "-",
    "\u2212": "-",
    "\u2192": "->",
    "\u2190": "<-",
    "\u21d2": "=>",
    "\u2264": "<=",
    "\u2265": ">=",
    "\u2260": "!=",
    "\u00d7": "x",
    "\u2018": "'",
    "\u2019": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u2026": "...",
    "\u00a0": " ",
    "\u2022": "*",
    "\u00b7": "*",
}


@rule("KC310", needs=Needs.TEXT)
def check(model: SourceModel, ctx: RuleContext) -> Iterator[Finding]:
    data = model.data
    starts = line_starts(data)  # lines as clang numbers them (a lone \r ends one too)
    for number, (start, end) in enumerate(zip(starts, [*starts[1:], len(data)]), start=1):
        raw = data[start:end]  # with its line break, which is ASCII
        first = next((i for i, byte in enumerate(raw) if byte > 0x7F), None)
        if first is not None:
            yield _line_finding(ctx, model.path, number, raw, start, first)


def _line_finding(ctx: RuleContext, path: str, number: int, raw: bytes, line_start: int, first: int) -> Finding:
    text = raw.decode("utf-8", errors="replace")
    characters = sorted({c for c in text if ord(c) > 0x7F})
    shown = ", ".join(f"U+{ord(c):04X}" if c != "\ufffd" else "invalid UTF-8" for c in characters)
    column = len(raw[:first].decode("utf-8", errors="replace")) + 1
    return ctx.finding(
        Location(path, number, column), f"non-ASCII character(s) in source: {shown}", fix=_ascii_fix(raw, line_start)
    )


def _ascii_fix(raw: bytes, line_start: int) -> Fix | None:
    """Edits for every mappable character, only when they make the whole line ASCII."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    edits = []
    byte_offset = line_start
    for char in text:
        width = len(char.encode("utf-8"))
        if ord(char) > 0x7F:
            if char not in ASCII_REPLACEMENTS:
                return None
            edits.append(TextEdit(byte_offset, byte_offset + width, ASCII_REPLACEMENTS[char]))
        byte_offset += width
    return Fix("replace with ASCII equivalents", tuple(edits))
