"""Where `#include <sgl_kernel/...>` comes from: one search path for every stage.

The static check (`clang/parse.py`), `kernel-check build` (`build.py`, through `runtime.py`) and
the harness (`harness/build.py`, `harness/run.py`) all ask `sgl_include_dirs`, in this order:

1. the repository's own `include/` holding `sgl_kernel/`, found walking up from the file;
2. the configured directories (`[tool.kernel-check] include-dirs`, `-I`, a spec's
   `include_dirs`, `load_jit(extra_include_paths=...)`);
3. the header library bundled with kernel-check, only when neither of the above provides
   `sgl_kernel/`: a repository with its own headers never gets ours mixed in.

The bundled copy is package data in an installed wheel (`kernel_check/include/`, mapped from
the repository's `include/` by `pyproject.toml`) and the repository's `include/` itself in a
checkout (an editable install imports `kernel_check` from `checker/`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

LIBRARY = "sgl_kernel"
_PACKAGE_DIR = Path(__file__).resolve().parent


def bundled_include_dir() -> Path:
    """The folder holding kernel-check's own `sgl_kernel/` header library."""
    packaged = _PACKAGE_DIR / "include"
    return packaged if (packaged / LIBRARY).is_dir() else _PACKAGE_DIR.parent / "include"


def find_repo_include_dir(path: Path) -> Path | None:
    """The nearest ancestor `include/` directory that holds `sgl_kernel/`, walking up."""
    for ancestor in path.resolve().parents:
        candidate = ancestor / "include"
        if (candidate / LIBRARY).is_dir():
            return candidate
        if ancestor.name == LIBRARY and ancestor.parent.name == "include":
            return ancestor.parent
    return None


def sgl_include_dirs(path: Path, configured: Iterable[str | Path] = ()) -> list[Path]:
    """The include directories for `path`: its repository's, the configured ones, then the
    bundled copy when none of those holds `sgl_kernel/` (see the module docstring)."""
    dirs: list[Path] = []
    for directory in (find_repo_include_dir(path), *(Path(d) for d in configured)):
        if directory is not None and directory not in dirs:
            dirs.append(directory)
    bundled = bundled_include_dir()
    if not any((d / LIBRARY).is_dir() for d in dirs) and (bundled / LIBRARY).is_dir():
        dirs.append(bundled)
    return dirs
