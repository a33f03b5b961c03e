"""Cache locations and the small file primitives every on-disk cache here shares.

Layout under the cache root (`--cache-dir`, else `KERNEL_CHECK_CACHE_DIR`, else
`$XDG_CACHE_HOME/kernel-check`)::

    CACHEDIR.TAG                        written when the root is created: `clean` deletes
                                        only a directory that carries it
    static-v1/results/<ab>/<key>.json   one file's findings before selection (result_cache.py)
    static-v1/depsets/<id>.json         a shared list of (header, content hash) pairs
    static-v1/preamble/<recipe>/...     precompiled preambles (clang/preamble.py)
    jit/...                             the JIT build cache (jit.py)

Concurrency: every write goes to a temporary file in the same directory and is renamed
over the target (atomic on POSIX), so a reader sees the old or the new file, never a torn
one. Content-addressed files need no lock; the preamble build takes a `filelock`.
Every reader treats a missing, truncated or foreign file as a miss.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

STATIC_LAYOUT = "static-v1"
CACHE_TAG = "CACHEDIR.TAG"
_TAG_TEXT = ("Signature: 8a477f597d28d172789f06886806bc55\n"  # the Cache Directory Tagging spec
             "# This directory is a cache created by kernel-check; `kernel-check clean` removes it.\n")
_LAYOUT = frozenset({STATIC_LAYOUT, "jit", CACHE_TAG})  # what kernel-check itself puts in a cache root


def cache_root(explicit: Path | None = None) -> Path:
    """`--cache-dir`, else `KERNEL_CHECK_CACHE_DIR`, else `$XDG_CACHE_HOME/kernel-check`."""
    if explicit is not None:
        return explicit
    if os.environ.get("KERNEL_CHECK_CACHE_DIR"):
        return Path(os.environ["KERNEL_CHECK_CACHE_DIR"])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "kernel-check"


def static_root(explicit: Path | None = None) -> Path:
    """Where the static pipeline keeps its results and preambles."""
    return cache_root(explicit) / STATIC_LAYOUT


class NotACache(Exception):
    """`clean` was pointed at a directory that kernel-check did not create (one line, exit 2)."""


def mark_cache_root(root: Path) -> None:
    """Tag `root` as a kernel-check cache (`CACHEDIR.TAG`, which backup tools also honour) when
    this run creates it, or finds it empty or holding only kernel-check's own layout (a cache
    of an older version). A directory with anything else in it is used but never tagged, so
    `clean` cannot be talked into deleting it. Best effort: a read-only place costs nothing."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        if (root / CACHE_TAG).exists() or any(entry.name not in _LAYOUT for entry in root.iterdir()):
            return
    except OSError:
        return
    atomic_write(root / CACHE_TAG, _TAG_TEXT.encode())


def is_marked_cache(root: Path) -> bool:
    """Whether `root` holds the tag `mark_cache_root` writes."""
    data = read_bytes(root / CACHE_TAG)
    return data is not None and data.startswith(_TAG_TEXT.splitlines()[0].encode()) and b"kernel-check" in data


def clean_cache(explicit: Path | None = None) -> str:
    """Remove the cache root; "" when there is none. Raises `NotACache` for a directory that
    does not carry kernel-check's tag (or is a symbolic link): nothing is deleted then."""
    root = cache_root(explicit)
    if root.is_symlink():
        raise NotACache(f"{root}: is a symbolic link, not a kernel-check cache directory; nothing removed")
    if not root.exists():
        return ""
    if not root.is_dir() or not is_marked_cache(root):
        raise NotACache(f"{root}: not a kernel-check cache (no {CACHE_TAG} written by kernel-check); "
                        "nothing removed")
    shutil.rmtree(root, ignore_errors=True)
    return str(root)


def digest(*parts: bytes | str) -> str:
    """A short, stable content hash of `parts` (each length-prefixed, so no two splits collide)."""
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        data = part.encode("utf-8", "surrogateescape") if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def file_digest(path: str | os.PathLike[str]) -> str | None:
    """Content hash of a file, or None when it cannot be read (missing, a directory...)."""
    try:
        with open(path, "rb") as handle:
            return digest(handle.read())
    except OSError:
        return None


Signature = tuple[int, int, int]  # (inode, size, mtime in ns): what `FileHashes.changed` compares


def _signature(path: str) -> Signature | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_ino, status.st_size, status.st_mtime_ns


class FileHashes:
    """Memoized `file_digest` for one run: a header shared by every file is read once. Each
    hash keeps the file's stat signature from when it was read, so that a process that
    outlives one run (`kernel-check server`) can ask whether any of them went stale."""

    def __init__(self) -> None:
        self._known: dict[str, str | None] = {}
        self._signatures: dict[str, Signature | None] = {}

    def get(self, path: str) -> str | None:
        try:
            return self._known[path]
        except KeyError:
            return self.refresh(path)

    def refresh(self, path: str) -> str | None:
        """Hash `path` again, whatever is memoized."""
        signature = _signature(path)  # before the read: a write in between shows as a change later
        value = self._known[path] = file_digest(path)
        self._signatures[path] = signature
        return value

    def changed(self) -> bool:
        """Whether a file hashed so far has been written, replaced or removed since (one
        `stat` per file, not a read)."""
        return any(_signature(path) != signature for path, signature in self._signatures.items())

    def all_match(self, pairs: list[list[str]] | list[tuple[str, str]]) -> bool:
        """Whether every (path, hash) pair still holds."""
        get = self.get
        return all(get(path) == expected for path, expected in pairs)


def atomic_write(path: Path, data: bytes) -> bool:
    """Write `data` to `path` through a temporary file and a rename; False on any OS error
    (a full disk or a read-only cache must cost speed, never the run)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError:
        return False
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
        return True
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False


def read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None
