"""The project's Python wrappers of C++ files that a run holds without their wrapper.

A JIT kernel's C++ file gets macros and include paths from its wrapper's `load_jit` call
(`jit_flags.py`). pre-commit passes only the changed files, and `kernel-check foo.cuh` names
one: the wrapper is then not among the run's files, and a kernel that needs
`-DJIT_HEAD_DIM=...` fails to parse (KC000) where a run of the whole tree parses it.
`run_wrapper_flags` gives each C++ file of a run the flags it would get were every Python
file of the project in the run: the run's own wrappers first, then, for a file none of them
builds with flags, the project's Python files that may build it (`project_wrappers`).

Finding those must cost next to nothing (pre-commit runs on every commit), so no Python
file is parsed to find them: a walk of the project root (skipping virtual environments,
build outputs, hidden folders; at most `project_walk.MAX_DIRS` folders) and a text test, a file that
names a builder (`load_jit`, `build_jit`) and the C++ file's base name. Only the files that
pass are read as wrappers (`jit_flags.wrapper_flags`, which reads builder calls alone: a
file naming the kernel in a comment, or in a string outside a builder call, builds
nothing). The text test's answer for each Python file (the C++ base names a builder file
names; none for any other file) is kept in the project's cache folder (`INDEX_NAME` in
`cache.project_dir`) under the file's size and modification time: a warm run stats the
files and reads only those that changed (sglang's 3,400 Python files: about 20 ms).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from .cache import atomic_write, project_dir, read_bytes
from .clang.parse import CPP_SUFFIXES
from .config import find_project_root, is_project_root, real_path
from .jit_flags import BUILDERS, wrapper_flags
from .project_walk import PYTHON_SUFFIXES, project_files

INDEX_NAME = "wrapper-index.json"
INDEX_FORMAT = 1
_BUILDER_NAMES = tuple(name.encode() for name in BUILDERS)
# a C++ file's base name as a Python source spells it: the last part of a path in a string
_SUFFIXES = "|".join(re.escape(suffix[1:]) for suffix in sorted(CPP_SUFFIXES, key=len, reverse=True))
_CPP_NAME = re.compile(rb"[\w.+-]+\.(?:" + _SUFFIXES.encode() + rb")(?![\w.])")

Entry = tuple[int, int, tuple[str, ...]]  # (size, mtime in ns, the C++ base names it names)


def run_wrapper_flags(
    cpp: list[Path],
    wrappers: list[Path],
    sources: Mapping[Path, bytes],
    root: Path,
    cache: Path | None,
) -> dict[str, tuple[str, ...]]:
    """Each C++ file's `-D`/`-I` arguments (by resolved path) as the wrappers of the run give
    them, and, for a file of `cpp` none of them builds with flags, as the Python files of
    the project at `root` (or of the file's own project, when it lies outside `root`) give
    them. `cache`: the static cache root, where each project's text-test index is kept (None:
    nowhere, `--no-cache`)."""
    flags = wrapper_flags(wrappers, sources) if wrappers else {}
    missing = [resolved for resolved in map(real_path, cpp) if str(resolved) not in flags]
    in_run = {real_path(path) for path in wrappers}
    for project, files in _by_project(missing, real_path(root)).items():
        index = project_dir(cache, project) / INDEX_NAME if cache is not None else None
        found = [path for path in project_wrappers(files, project, index) if path not in in_run]
        built = wrapper_flags(found) if found else {}
        flags.update({str(path): built[str(path)] for path in files if str(path) in built})
    return flags


def _by_project(files: list[Path], root: Path) -> dict[Path, list[Path]]:
    """`files` grouped by the project root whose Python files are searched for them: the
    run's root, where it is a project and holds the file; else the file's own project (a run
    from a folder that is no project, `/tmp`, of files inside a project below it)."""
    grouped: dict[Path, list[Path]] = {}
    in_root = is_project_root(root)
    for path in files:
        project = root if in_root and path.is_relative_to(root) else find_project_root(path)[0]
        grouped.setdefault(project, []).append(path)
    return grouped


def project_wrappers(files: Iterable[Path], root: Path, index_path: Path | None = None) -> list[Path]:
    """The Python files under `root` that call a builder and name the base name of one of
    `files` (candidates: `wrapper_flags` reads what they build), in path order.
    `index_path`: the file that keeps the text test's answers between runs (None: none)."""
    wanted = {path.name for path in files}
    index = _Index(index_path, root)
    found = [Path(path) for path in python_files(root) if wanted.intersection(index.names(path))]
    index.save()
    return found


def python_files(root: Path) -> list[str]:
    """The project's Python files (`project_files`)."""
    return project_files(root, PYTHON_SUFFIXES)


def named_sources(data: bytes) -> tuple[str, ...]:
    """The C++ base names a Python source spells, when it names a builder (else none)."""
    if not any(name in data for name in _BUILDER_NAMES):
        return ()
    return tuple(sorted({match.decode("utf-8", "replace") for match in _CPP_NAME.findall(data)}))


class _Index:
    """`named_sources` of each Python file of one project, kept between runs under the file's
    size and modification time (a file whose stat changed is read again)."""

    def __init__(self, path: Path | None, root: Path) -> None:
        self.path = path
        self.root = str(root)
        self.entries: dict[str, Entry] = self._load()
        self.seen: set[str] = set()
        self.changed = False

    def _load(self) -> dict[str, Entry]:
        data = read_bytes(self.path) if self.path is not None else None
        try:
            stored = json.loads(data) if data is not None else None
            if not isinstance(stored, dict) or stored.get("format") != INDEX_FORMAT or stored.get("root") != self.root:
                return {}
            return {
                name: (int(size), int(mtime), tuple(names)) for name, (size, mtime, names) in stored["files"].items()
            }
        except (ValueError, KeyError, TypeError):
            return {}  # a torn or foreign index is a miss: every file is read again

    def names(self, path: str) -> tuple[str, ...]:
        try:
            status = os.stat(path)
        except OSError:
            return ()
        self.seen.add(path)
        kept = self.entries.get(path)
        if kept is not None and kept[:2] == (status.st_size, status.st_mtime_ns):
            return kept[2]
        names = named_sources(read_bytes(Path(path)) or b"")
        self.entries[path] = (status.st_size, status.st_mtime_ns, names)
        self.changed = True
        return names

    def save(self) -> None:
        """Write the index when an entry changed or a file it knew of is gone."""
        if self.path is None or not (self.changed or self.entries.keys() - self.seen):
            return
        files = {
            name: [size, mtime, list(names)] for name, (size, mtime, names) in self.entries.items() if name in self.seen
        }
        atomic_write(self.path, json.dumps({"format": INDEX_FORMAT, "root": self.root, "files": files}).encode())
