"""Cache locations shared by the static result cache, the preamble cache and the JIT."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def cache_root(explicit: Path | None = None) -> Path:
    """`--cache-dir`, else `KERNEL_CHECK_CACHE_DIR`, else `$XDG_CACHE_HOME/kernel-check`."""
    if explicit is not None:
        return explicit
    if os.environ.get("KERNEL_CHECK_CACHE_DIR"):
        return Path(os.environ["KERNEL_CHECK_CACHE_DIR"])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "kernel-check"


def clean_cache(explicit: Path | None = None) -> str:
    root = cache_root(explicit)
    if not root.exists():
        return ""
    shutil.rmtree(root)
    return str(root)
