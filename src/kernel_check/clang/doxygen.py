"""Locate and read the Doxygen comment that precedes a declaration.

libclang's `raw_comment` only attaches `///` and `/** */` comments, and loses positions,
so we read the source text ourselves: the contiguous comment block directly above the
declaration (blank lines break it; attributes/template headers are part of the decl).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..model import DocComment, DocParamName, Span, line_starts

_PARAM_RE = re.compile(r"[\\@]param(?:\s*\[[^\]]*\])?\s+([A-Za-z_][A-Za-z0-9_]*(?:\s*,\s*[A-Za-z_]\w*)*)")
_TPARAM_RE = re.compile(r"[\\@]tparam\s+([A-Za-z_][A-Za-z0-9_]*)")
_RETURN_RE = re.compile(r"[\\@](?:return|returns|retval)\b")
_BRIEF_RE = re.compile(r"[\\@]brief\b")
_COMMAND_RE = re.compile(r"^\s*[\\@][A-Za-z]+")
_COPIES_DOC_RE = re.compile(r"[\\@](?:copydoc|copydetails|overload|inheritdoc)\b")
_NAME_RE = re.compile(r"[A-Za-z_]\w*")


class Comments:
    """The comments of one file's bytes, read on demand; the line starts are found once
    per file, not once per declaration (a Python pass over every byte)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.starts = line_starts(data)  # as clang numbers lines: a lone \r ends one too

    def preceding(self, decl_start: int) -> DocComment | None:
        """The comment block ending on the line(s) right above byte offset `decl_start`."""
        return _preceding_comment(self.data, self.starts, decl_start)


def _preceding_comment(data: bytes, starts: list[int], decl_start: int) -> DocComment | None:
    line_index = _line_of(starts, decl_start)
    lines: list[tuple[int, str]] = []
    in_block = False
    index = line_index - 1
    while index >= 0:
        raw = _line(data, starts, index)
        stripped = raw.strip()
        if in_block:
            lines.append((index, raw))
            if stripped.startswith("/*"):
                in_block = False
                if not _continues_upward(data, starts, index):
                    break
            index -= 1
            continue
        if stripped.startswith("//"):
            lines.append((index, raw))
        elif stripped.endswith("*/"):
            lines.append((index, raw))
            if not stripped.startswith("/*"):
                in_block = True
            elif not _continues_upward(data, starts, index):
                break
        else:
            break
        index -= 1
    if not lines:
        return None
    lines.reverse()
    first, last = lines[0][0], lines[-1][0]
    text = "\n".join(raw for _, raw in lines)
    span = Span(first + 1, 1, last + 1, len(lines[-1][1]) + 1, starts[first], starts[last] + len(lines[-1][1].encode()))
    return _read(text, span)


def _continues_upward(data: bytes, starts: list[int], index: int) -> bool:
    if index == 0:
        return False
    above = _line(data, starts, index - 1).strip()
    return above.startswith("//") or above.endswith("*/")


def _line_of(starts: list[int], offset: int) -> int:
    low, high = 0, len(starts) - 1
    while low < high:
        mid = (low + high + 1) // 2
        if starts[mid] <= offset:
            low = mid
        else:
            high = mid - 1
    return low


def _line(data: bytes, starts: list[int], index: int) -> str:
    end = starts[index + 1] if index + 1 < len(starts) else len(data)
    return data[starts[index] : end].decode("utf-8", errors="replace").rstrip("\r\n")


def _read(text: str, span: Span) -> DocComment:
    stripped = text.lstrip()
    is_doxygen = stripped.startswith(("///", "//!", "/**", "/*!"))
    params: list[str] = []
    param_names: list[DocParamName] = []
    for offset, line in enumerate(text.split("\n")):  # as joined (splitlines also breaks at \f)
        for command, pattern in (("param", _PARAM_RE), ("tparam", _TPARAM_RE)):
            for match in pattern.finditer(line):
                names = list(_documented_names(span.line + offset, command, match))
                param_names.extend(names)
                if command == "param":
                    params.extend(name.name for name in names)
    tparams = tuple(_TPARAM_RE.findall(text))
    return DocComment(
        text=text,
        span=span,
        is_doxygen=is_doxygen,
        has_brief=bool(_BRIEF_RE.search(text)) or _has_leading_sentence(text),
        params=tuple(params),
        tparams=tparams,
        has_return=bool(_RETURN_RE.search(text)),
        param_spans=tuple(param_names),
        copies_doc=bool(_COPIES_DOC_RE.search(text)),
    )


def _documented_names(line: int, command: str, match: re.Match[str]) -> Iterator[DocParamName]:
    """Each name of one `\\param a, b` command; a name's text runs from the command on, as
    the reader sees the command and the name together."""
    for name in _NAME_RE.finditer(match.group(1)):
        yield DocParamName(command, name.group(), line, match.start() + 1, match.start(1) + name.end() + 1)


def _has_leading_sentence(text: str) -> bool:
    """Doxygen's autobrief: the first non-command line of prose counts as the brief."""
    for line in text.splitlines():
        body = re.sub(r"^\s*(///?<?|//!|/\*\*?!?|\*/|\*)", "", line).strip().rstrip("*/").strip()
        if not body:
            continue
        return not _COMMAND_RE.match(body)
    return False
