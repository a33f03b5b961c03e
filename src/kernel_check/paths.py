"""How kernel-check names a file, to a person and to a tool.

A person reads `display_path`: relative to the current directory when the file is under it,
else absolute (what ruff prints), so a terminal or an editor opens the path as printed
wherever the command ran. A tool that needs the same name in every run reads `root_relative`
(the `json`, `junit`, `sarif` and `github` formats; baselines and cache keys use
`Config.relative`, the project-relative name the configuration's globs match).
"""

from __future__ import annotations

import os
from pathlib import Path


def root_relative(path: str | Path, root: Path) -> str | None:
    """`path` relative to `root` in POSIX form, or None when the file is not under `root`
    (tried as written, then with symlinks resolved)."""
    candidates = (
        (Path(os.path.abspath(path)), Path(os.path.abspath(root))),
        (Path(os.path.realpath(path)), Path(os.path.realpath(root))),
    )
    for file, base in candidates:
        if file.is_relative_to(base):
            return file.relative_to(base).as_posix()
    return None


def display_path(path: str | Path) -> str:
    """`path` as a person should see it: relative to the current directory when under it,
    else absolute."""
    relative = root_relative(path, Path.cwd())
    return Path(os.path.abspath(path)).as_posix() if relative is None else relative
