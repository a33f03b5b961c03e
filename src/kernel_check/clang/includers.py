"""A header analysed in the context of a file that includes it (clangd's approach).

Headers of real kernel trees are often not self-contained: one uses `std::tuple_cat` and
relies on its includer to have included `<tuple>` first, which every real build does. Parsed
alone it fails. `include_contexts` reads the `#include` lines of the run's files (their text
only, no parse) and gives each header that another file of the run includes the includes
that come before it there, as forced includes (`-include`); when the includer is itself a
header with a context, that context comes first. `parse.parse_file` parses a header in its
context only when it fails alone, and keeps that parse when it is better (see there): a
self-contained header is analysed exactly as before, and its preamble stays shared.

The includer chosen is the first, in path order, among the run's files that include the
header: a run of one header (pre-commit, the language server) gets no context.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from ..includes import sgl_include_dirs

_COMMENT = re.compile(rb"//[^\n]*|/\*.*?\*/", re.DOTALL)
_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.MULTILINE)
_MAX_DEPTH = 8  # includer chains longer than this are cut (a cycle is cut at once)


def include_lines(data: bytes) -> list[tuple[str, bool]]:
    """The file's `#include` directives in order: (name, quoted), comments left out."""
    code = _COMMENT.sub(lambda match: b"\n" * match.group().count(b"\n"), data)
    return [(name.decode("utf-8", "replace").strip(), kind == b'"') for kind, name in _INCLUDE.findall(code)]


def _resolve(name: str, quoted: bool, includer: Path, search: list[Path]) -> Path | None:
    """The file an include names, as the compiler would find it (quoted: the includer's
    folder first), or None for a header outside these folders (the standard library)."""
    folders = [includer.parent, *search] if quoted else search
    for folder in folders:
        candidate = folder / name
        if candidate.is_file():
            return Path(candidate.resolve())
    return None


def _resolved(file: Path) -> Path | None:
    """`file` with its links resolved; None for a symlink loop (reported where it is read)."""
    try:
        return Path(file).resolve()
    except (OSError, RuntimeError):  # RuntimeError: a loop, before Python 3.13
        return None


def include_contexts(
    files: Iterable[Path], include_dirs: Iterable[str] = (), sources: Mapping[Path, bytes] | None = None
) -> dict[str, tuple[str, ...]]:
    """For each of `files` that another of them includes: the forced-include arguments of
    its context (the includer's context, then the includer's includes before it). `sources`:
    contents to use instead of reading a file (`--stdin-filename`)."""
    given = sorted({path for path in map(_resolved, files) if path is not None})
    wanted = set(given)
    configured = list(include_dirs)
    contexts: dict[Path, tuple[Path, list[str]]] = {}  # header -> (its includer, forced includes)
    for includer in given:
        data = (sources or {}).get(includer)
        if data is None:
            try:
                data = includer.read_bytes()
            except OSError:
                continue
        search = sgl_include_dirs(includer, configured)
        preceding: list[str] = []
        for name, quoted in include_lines(data):
            target = _resolve(name, quoted, includer, search)
            if target is not None and target in wanted and target != includer and target not in contexts:
                contexts[target] = (includer, list(preceding))
            preceding.append(str(target) if target is not None else name)
    return {str(header): _chain(header, contexts) for header in contexts}


def _chain(header: Path, contexts: dict[Path, tuple[Path, list[str]]]) -> tuple[str, ...]:
    """The forced includes of `header`: its includer's own context first, up the chain."""
    names: list[str] = []
    seen = {header}
    current = header
    for _ in range(_MAX_DEPTH):
        includer, preceding = contexts[current]
        names[:0] = preceding
        if includer in seen or includer not in contexts:
            break
        seen.add(includer)
        current = includer
    args: list[str] = []
    for name in dict.fromkeys(names):
        args += ["-include", name]
    return tuple(args)
