"""Cache locations and the small file primitives every on-disk cache here shares.

One cache root per user, shared by every project (`--cache-dir`, else
`KERNEL_CHECK_CACHE_DIR`, else `$XDG_CACHE_HOME/kernel-check`, else
`~/.cache/kernel-check`)::

    CACHEDIR.TAG                        written when the root is created: `clean` deletes
                                        only in a directory that carries it
    static-v1/projects/<project>/       one project's result cache (`result_cache.py`),
        results/<ab>/<key>.json         <project> a hash of the project root; `clean` removes
        depsets/<id>.json               it, `clean --all` the whole root
    static-v1/preamble/<recipe>/...     the preamble store: precompiled preambles, one
                                        directory per recipe, shared by every project whose
                                        runs ask for that recipe (clang/preamble.py); capped
                                        at `cache-max-size`, least recently used out first
    jit/...                             the JIT build cache (runtime.py)

Concurrency: every write goes to a temporary file in the same directory and is renamed
over the target (atomic on POSIX), so a reader sees the old or the new file, never a torn
one. Content-addressed files need no lock; the preamble build takes a `filelock`, and a
process holds a shared lock (`hold_shared`) on each preamble directory it uses, which
eviction (`remove_unless_in_use`) respects.
Every reader treats a missing, truncated or foreign file as a miss.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX: no shared locks, so eviction never knows a directory is unused
    fcntl = None  # type: ignore[assignment]

STATIC_LAYOUT = "static-v1"
CACHE_TAG = "CACHEDIR.TAG"
IN_USE = "in-use"  # the lock file a process holds shared while it uses a preamble directory
MAX_SIZE_ENV = "KERNEL_CHECK_CACHE_MAX_SIZE"  # overrides the `cache-max-size` key
PREAMBLE_ENV = "KERNEL_CHECK_PREAMBLE"  # the preamble strategy (`preamble_strategy`)
# how a parse uses precompiled preambles (`clang/preamble.py` says what each does)
PREAMBLE_STRATEGIES = ("union", "exact", "off")
_TAG_TEXT = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"  # the Cache Directory Tagging spec
    "# This directory is a cache created by kernel-check; `kernel-check clean` removes it.\n"
)
_LAYOUT = frozenset({STATIC_LAYOUT, "jit", CACHE_TAG})  # what kernel-check itself puts in a cache root


def cache_root(explicit: Path | None = None) -> Path:
    """`--cache-dir`, else `KERNEL_CHECK_CACHE_DIR`, else `$XDG_CACHE_HOME/kernel-check`."""
    if explicit is not None:
        return explicit
    if os.environ.get("KERNEL_CHECK_CACHE_DIR"):
        return Path(os.environ["KERNEL_CHECK_CACHE_DIR"])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "kernel-check"


def preamble_strategy() -> str:
    """`KERNEL_CHECK_PREAMBLE`: the preamble strategy of every parse (`PREAMBLE_STRATEGIES`),
    "union" when unset; ValueError, naming the variable, for anything else."""
    strategy = os.environ.get(PREAMBLE_ENV, "union")
    if strategy not in PREAMBLE_STRATEGIES:
        choices = f"{', '.join(PREAMBLE_STRATEGIES[:-1])} or {PREAMBLE_STRATEGIES[-1]}"
        raise ValueError(f"{PREAMBLE_ENV} must be {choices}, got {strategy!r}")
    return strategy


def static_root(explicit: Path | None = None) -> Path:
    """Where the static pipeline keeps its results and preambles."""
    return cache_root(explicit) / STATIC_LAYOUT


def project_dir(static: Path, project_root: Path) -> Path:
    """The result cache of the project at `project_root` under the static root `static`."""
    return static / "projects" / digest(os.path.realpath(project_root))[:16]


def preamble_store(static: Path) -> Path:
    """The preamble store under the static root `static`, shared by every project."""
    return static / "preamble"


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


@dataclass(frozen=True)
class Removed:
    """What `clean` removed: a directory, the bytes its files held, and the main kinds."""

    path: Path
    size: int
    parts: dict[str, int]  # what ("results", "precompiled preambles", ...) -> bytes


def clean_project(project_root: Path, explicit: Path | None = None) -> Removed | None:
    """Remove the result cache of the project at `project_root` (the shared preamble store
    stays); None when it has none. Raises `NotACache` as `clean_cache` does."""
    root = _cleanable_root(explicit)
    directory = project_dir(root / STATIC_LAYOUT, project_root) if root is not None else None
    if directory is None or not directory.is_dir() or directory.is_symlink():
        return None
    size = tree_size(directory)
    removed = Removed(directory, size, {"results": size})
    shutil.rmtree(directory, ignore_errors=True)
    return removed


def clean_cache(explicit: Path | None = None) -> Removed | None:
    """Remove the whole cache root (every project's results, the preamble store, the JIT
    builds); None when there is none. Raises `NotACache` for a directory that does not
    carry kernel-check's tag (or is a symbolic link): nothing is deleted then."""
    root = _cleanable_root(explicit)
    if root is None:
        return None
    removed = Removed(root, tree_size(root), cache_usage(root))
    shutil.rmtree(root, ignore_errors=True)
    return removed


def _cleanable_root(explicit: Path | None) -> Path | None:
    """The cache root when kernel-check made it, None when there is none, else `NotACache`."""
    root = cache_root(explicit)
    if root.is_symlink():
        raise NotACache(f"{root}: is a symbolic link, not a kernel-check cache directory; nothing removed")
    if not root.exists():
        return None
    if not root.is_dir() or not is_marked_cache(root):
        raise NotACache(f"{root}: not a kernel-check cache (no {CACHE_TAG} written by kernel-check); nothing removed")
    return root


def cache_usage(root: Path) -> dict[str, int]:
    """Bytes under the cache root `root`, by kind."""
    static = root / STATIC_LAYOUT
    preambles = tree_size(preamble_store(static))
    return {
        "precompiled preambles": preambles,
        "results": tree_size(static) - preambles,
        "JIT builds": tree_size(root / "jit"),
    }


def tree_size(path: Path) -> int:
    """Bytes in the regular files under `path` (symbolic links not followed); 0 when absent."""
    total = 0
    for directory, _dirs, names in os.walk(path):
        for name in names:
            try:
                total += os.lstat(os.path.join(directory, name)).st_size
            except OSError:
                continue
    return total


_SIZE_RE = re.compile(r"\s*(\d+(?:\.\d*)?)\s*(?:([kmgt])(i)?)?(b)?\s*", re.IGNORECASE)
_SIZE_POWERS = {"k": 1, "m": 2, "g": 3, "t": 4}


def parse_size(text: str) -> int:
    """Bytes from "1GiB", "500MB", "2G", "1.5 GiB" or "1048576": `KiB`, `MiB`... and `K`,
    `M`... (as `du -h` prints them) count in 1024s, `KB`, `MB`... in 1000s. ValueError
    (saying what would do) for anything else."""
    match = _SIZE_RE.fullmatch(text)
    if match is None:
        raise ValueError(f'expected a size such as "1GiB", "500MB" or "0", got {text!r}')
    number, prefix, binary, unit = match.groups()
    base = 1000 if prefix and unit and not binary else 1024
    return int(float(number) * base ** _SIZE_POWERS.get((prefix or "").lower(), 0))


def format_size(size: int) -> str:
    """`size` bytes for people: "812 B", "68.9 MiB", "1.2 GiB"."""
    value, unit = float(size), "B"
    for larger in ("KiB", "MiB", "GiB", "TiB"):
        if value < 1024:
            break
        value, unit = value / 1024, larger
    return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"


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


def hold_shared(path: Path) -> int | None:
    """Hold a shared lock on the file `path` (created, with its directory, if need be) for
    as long as the returned descriptor stays open: it tells `remove_unless_in_use`, in any
    process, that this directory is in use. None when no lock could be taken."""
    if fcntl is None:
        return None
    for _attempt in range(3):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)  # waits only while an eviction removes the directory
            held, there = os.fstat(fd), os.stat(path)
            if (held.st_dev, held.st_ino) == (there.st_dev, there.st_ino):
                return fd
        except OSError:
            pass  # the directory went meanwhile: lock the file that is there now
        os.close(fd)
    return None


def remove_unless_in_use(directory: Path) -> bool:
    """Delete `directory` unless a process holds its `IN_USE` file (`hold_shared`); whether
    it went. The exclusive lock is held while the files go, so a process about to use the
    directory waits and then finds it gone (and builds it again) instead of half of it."""
    if fcntl is None:
        return False
    try:
        fd = os.open(directory / IN_USE, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        shutil.rmtree(directory, ignore_errors=True)
    except OSError:
        return False  # in use
    finally:
        os.close(fd)
    return not directory.exists()


def read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None
