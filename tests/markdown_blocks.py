"""The fenced code blocks of markdown text: what the docs tests run or parse as written."""

from __future__ import annotations

import re
from pathlib import Path

_FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```", re.S | re.M)


def fenced_blocks(markdown: str, languages: tuple[str, ...]) -> list[str]:
    """The bodies of the blocks whose info string names one of `languages`, in order."""
    return [m.group(2) for m in _FENCE.finditer(markdown) if m.group(1) in languages]


def file_blocks(path: Path, languages: tuple[str, ...]) -> list[str]:
    """`fenced_blocks` of a markdown file."""
    return fenced_blocks(path.read_text(encoding="utf-8"), languages)
