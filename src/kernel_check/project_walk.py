"""The walk of a project's own files, which the wrapper search (`wrapper_search.py`) and the
include roots a project keeps outside a file's ancestors (`includes.py`) read: every folder
but those no project keeps its own sources in, in a stable order, and for a root that is no
project (`config.is_project_root`) that folder alone."""

from __future__ import annotations

import os
from pathlib import Path

from .config import is_project_root

PYTHON_SUFFIXES = (".py",)
# Directories no source tree wants checked (virtualenvs, caches, build outputs, VCS).
SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        ".venv",
        "venv",
        "node_modules",
        "build",
        "dist",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".kernel-check-cache",
        ".eggs",
    }
)
MAX_DIRS = 10_000  # folders walked at most (`project_files`)
_NOT_PROJECT_DIRS = frozenset({"site-packages"})  # installed packages are not the project's files


def project_files(root: Path, suffixes: tuple[str, ...] | None = None) -> list[str]:
    """The project's files (as strings: there are thousands) whose names end in one of
    `suffixes` (None: every file), in a stable order: `os.walk` of `root` without the folders
    no project keeps its own sources in (`SKIPPED_DIRS`, hidden ones, eggs,
    site-packages), through its first `MAX_DIRS` folders. A root that is no project
    (`config.is_project_root`: the folder of a lone file, a home folder, `/tmp`) is searched
    in itself alone: the trees below such a folder are not its files' project, and reading
    every Python file of them made a one-file check from `/tmp` take minutes (16,559 files)."""
    found: list[str] = []
    folders = MAX_DIRS if is_project_root(root) else 1
    for count, (current, dirnames, filenames) in enumerate(os.walk(root), start=1):
        dirnames[:] = sorted(name for name in dirnames if _is_project_dir(name))
        found += [
            os.path.join(current, name) for name in sorted(filenames) if suffixes is None or name.endswith(suffixes)
        ]
        if count == folders:
            break
    return found


def _is_project_dir(name: str) -> bool:
    return not (name in SKIPPED_DIRS or name in _NOT_PROJECT_DIRS or name.startswith(".") or name.endswith(".egg-info"))
