"""Discover stage: command-line paths -> the source files to check, in a stable order.

A directory below a checked path that cannot be listed (no read or search permission) is
one warning line on stderr and is left out: its files are neither checked nor counted. As
in ruff, the warning does not change the exit status; a path given on the command line
that has no readable source at all is still an error.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .clang.parse import CPP_SUFFIXES
from .config import Config
from .globs import matches_any
from .project_walk import PYTHON_SUFFIXES, SKIPPED_DIRS

SOURCE_SUFFIXES = CPP_SUFFIXES + PYTHON_SUFFIXES


class DiscoveryError(Exception):
    """A path argument that cannot be checked (reported as one line, exit code 2)."""


def is_source(path: Path) -> bool:
    return path.suffix in SOURCE_SUFFIXES


def is_python(path: Path) -> bool:
    return path.suffix in PYTHON_SUFFIXES


def discover(paths: list[Path], config: Config, *, force_exclude: bool = False) -> list[Path]:
    """Expand directories, validate explicit files, apply `exclude` globs."""
    excludes = config.get("exclude")
    found: dict[Path, None] = {}
    for path in paths:
        if not path.exists():
            if path.is_symlink() and is_source(path):  # broken or a loop: a KC000 for it,
                found[path] = None  # not an error that loses the other files' report
                continue
            raise DiscoveryError(f"{path}: no such file or directory")
        if path.is_dir():
            files = list(_walk(path, config, excludes))
            if not files and not _any_excluded_source(path):
                raise DiscoveryError(f"{path}: no C++/CUDA or Python sources found")
            found.update(dict.fromkeys(files))
        else:
            if not path.is_file():  # a FIFO or device would block the read forever
                raise DiscoveryError(f"{path}: not a regular file")
            if not is_source(path):
                raise DiscoveryError(
                    f"{path}: not a C++/CUDA or Python source (expected one of {', '.join(SOURCE_SUFFIXES)})"
                )
            if force_exclude and matches_any(config.relative(path), excludes):
                continue
            found[path] = None
    return list(found)


def _walk(directory: Path, config: Config, excludes: list[str]) -> list[Path]:
    files = []
    for current, dirnames, filenames in os.walk(directory, onerror=_warn_unreadable):
        base = Path(current)
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d not in SKIPPED_DIRS
            and not d.endswith(".egg-info")
            and not matches_any(config.relative(base / d), excludes)
        )
        for name in sorted(filenames):
            candidate = base / name
            if _is_checkable(candidate) and not matches_any(config.relative(candidate), excludes):
                files.append(candidate)
    return files


def _warn_unreadable(error: OSError) -> None:
    """`os.walk` skips a directory it cannot list; say which, and why."""
    print(
        f"kernel-check: warning: failed to read directory {error.filename}: {error.strerror or error}", file=sys.stderr
    )


def _is_checkable(candidate: Path) -> bool:
    """A source by name that is a regular file; broken symlinks stay (reported unreadable)."""
    if not is_source(candidate):
        return False
    return candidate.is_file() or not candidate.exists()


def _any_excluded_source(directory: Path) -> bool:
    """True when the directory has sources that config excluded (not an error then)."""
    return any(is_source(Path(name)) for _, _, names in os.walk(directory) for name in names)
