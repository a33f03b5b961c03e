"""A header analysed in the context of a file that includes it (clangd's approach).

Headers of real kernel trees are often not self-contained: one uses `std::tuple_cat` and
relies on its includer to have included `<tuple>` first, which every real build does; another
relies on its includer's `using namespace cute;` written between two includes. Parsed alone
it fails. `include_contexts` reads the run's files (their text only, no parse) and gives each
header that another file of the run includes what comes before it there, as a forced include
(`-include`): the includer's code up to that `#include` line (its own includes spelled by
full path, so they resolve from anywhere), written to a content-named file
(`context_folder()`, the `#if` groups it opens closed); when the `#include` is inside a
namespace, which a file of its own could not leave open, only the includes before it. When
the includer is itself a header with a context, that context comes first. `parse.parse_file`
parses a header in its context only when it fails alone, and keeps that parse when it is
better (see there): a self-contained header is analysed exactly as before, and its preamble
stays shared.

The includer chosen is the first, in path order, among the run's files that include the
header: a run of one header (pre-commit, the language server) gets no context.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from ..config import real_path
from ..includes import INCLUDE_DIRECTIVE, find_include, sgl_include_dirs, without_comments

_MAX_DEPTH = 8  # includer chains longer than this are cut (a cycle is cut at once)
_STRING_OR_CHAR = re.compile(rb'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'')
_OPENS_CONDITIONAL = re.compile(rb"^[ \t]*#[ \t]*if", re.MULTILINE)  # #if, #ifdef, #ifndef
_CLOSES_CONDITIONAL = re.compile(rb"^[ \t]*#[ \t]*endif\b", re.MULTILINE)


def _standalone(prefix: bytes) -> bytes | None:
    """`prefix` as a file of its own: its open `#if` groups (an include guard) closed after it,
    as they hold the `#include` that follows it; None when it ends inside braces (a namespace),
    which no file of its own could leave open."""
    code = _STRING_OR_CHAR.sub(b"", prefix)
    if code.count(b"{") != code.count(b"}"):
        return None
    unclosed = len(_OPENS_CONDITIONAL.findall(code)) - len(_CLOSES_CONDITIONAL.findall(code))
    return prefix + b"\n#endif" * max(unclosed, 0) + b"\n"


def context_folder() -> Path:
    """Where the includer prefixes used as forced includes are written (per user)."""
    return Path(tempfile.gettempdir()) / f"kernel-check-contexts-{os.getuid()}"


def content_file(text: bytes) -> str | None:
    """A file holding `text`, named by its content (written once); None when it cannot be.
    What a forced include of generated text is (`parse.py` renames a file's own definitions)."""
    path = context_folder() / f"{hashlib.sha256(text).hexdigest()[:32]}.h"
    try:
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_suffix(f".{os.getpid()}.tmp")
            temporary.write_bytes(text)
            temporary.replace(path)  # whole or not at all, whoever else writes it
    except OSError:
        return None
    return str(path)


def _resolved(file: Path) -> Path | None:
    """`file` with its links resolved; None for a symlink loop (reported where it is read)."""
    try:
        return real_path(Path(file))
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
    contexts: dict[Path, tuple[Path, list[str]]] = {}  # header -> (its includer, its own forced includes)
    for includer in given:
        data = (sources or {}).get(includer)
        if data is None:
            try:
                data = includer.read_bytes()
            except OSError:
                continue
        for target, standalone, preceding in _contexts_in(includer, data, sgl_include_dirs(includer, configured)):
            if target in wanted and target != includer and target not in contexts:
                whole = content_file(standalone) if standalone is not None else None
                contexts[target] = (includer, [whole] if whole is not None else preceding)
    return {str(header): _chain(header, contexts) for header in contexts}


def _contexts_in(includer: Path, data: bytes, search: list[Path]) -> Iterable[tuple[Path, bytes | None, list[str]]]:
    """(header, what precedes it as a file of its own or None inside a namespace, the includes
    before it) for each `#include` of `includer` that names a file found in `search`."""
    code = without_comments(data)
    rewritten: list[bytes] = []  # the code so far, its resolved includes spelled by full path
    preceding: list[str] = []
    start = 0
    for match in INCLUDE_DIRECTIVE.finditer(code):
        rewritten.append(code[start : match.start()])
        start = match.end()
        name, quoted = match.group(2).decode("utf-8", "replace").strip(), match.group(1) == b'"'
        found = find_include(name, quoted, includer, search)
        target = real_path(found) if found is not None else None
        if target is not None:
            yield target, _standalone(b"".join(rewritten)), list(preceding)
        preceding.append(str(target) if target is not None else name)
        spelled = f'#include "{target}"'.encode() if target is not None else match.group(0)
        rewritten.append(spelled)


def _chain(header: Path, contexts: dict[Path, tuple[Path, list[str]]]) -> tuple[str, ...]:
    """The forced includes of `header`: its includer's own context first, up the chain."""
    names: list[str] = []
    seen = {header}
    current = header
    for _ in range(_MAX_DEPTH):
        includer, forced = contexts[current]
        names[:0] = forced
        if includer in seen or includer not in contexts:
            break
        seen.add(includer)
        current = includer
    args: list[str] = []
    for name in dict.fromkeys(names):
        args += ["-include", name]
    return tuple(args)
