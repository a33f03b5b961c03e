"""The result cache: an unchanged file with unchanged headers is not parsed again.

An entry holds one file's findings *before* the filter stage's selection, suppressions
and severities (after the parse-dependent step that drops findings in declarations clang
could not type): every run filters them again, so a change of `--select`, `--ignore`,
`--statistics` or the filter-stage keys (`cache_session.FILTER_KEYS`) re-uses the entry. Its key is
the hash of:

* the file's bytes, its path as given and its path relative to the project root;
* the run fingerprint: kernel-check's version, the sources of the static pipeline and
  every rule module (any edit to a rule, the extractor or the filter is a new rule set),
  libclang's identity, every configuration value but the filter-stage keys (defaults
  filled in), the parse settings and the preamble strategy;
* for C/C++/CUDA files, the file's full libclang argument list (include paths, defines,
  mode, the discovered `include/`).

The entry also records what the result depends on beyond the key: every header the parse
read, with its content hash -- as a shared dependency set for the preamble's headers
(one file for all entries that used that preamble) plus the file's own extra headers. A
hit re-hashes those headers (once per run each, memoized) and is used only when all of
them still match; a new header that would shadow an existing one on the include path is
not noticed (the include directories themselves are in the key).

Entries live in the project's own directory (`cache.project_dir`: `kernel-check clean`
removes one project's). Files are content-addressed and written atomically, so concurrent
runs need no lock; a corrupt, truncated or foreign entry is a miss.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import __version__
from .cache import FileHashes, atomic_write, digest, read_bytes

ENTRY_FORMAT = 2
PRUNE_AFTER_DAYS = 30.0
# Directories of the package whose sources do not change a file's findings.
_NOT_PIPELINE = {"harness", "report", "__pycache__"}


@dataclass
class Deps:
    """What a result depends on besides the file itself."""

    groups: list[tuple[str, list[list[str]]]] = field(default_factory=list)  # (id, [path, hash])
    files: list[list[str]] = field(default_factory=list)  # [path, hash]


class ResultCache:
    """One run's view of its project's `results/` and `depsets/` (`cache.project_dir`;
    picklable: root + fingerprint)."""

    def __init__(self, root: Path, fingerprint: str) -> None:
        self.root = Path(root)
        self.fingerprint = fingerprint
        self.hashes = FileHashes()
        self._groups: dict[str, bool] = {}
        self.hits = 0
        self.misses = 0

    def __getstate__(self) -> dict[str, Any]:
        return {"root": self.root, "fingerprint": self.fingerprint}

    def __setstate__(self, state: dict[str, Any]) -> None:
        ResultCache.__init__(self, state["root"], state["fingerprint"])

    # -- keys --------------------------------------------------------------------------
    def key(self, path: str, relative: str, data: bytes, args: list[str] | None, plan: str = "") -> str:
        """`plan`: what the check built and ran (`registry.Need` values and rule codes):
        `--select KC310` and a full run keep separate results."""
        return digest(self.fingerprint, path, relative, "\0".join(args or ()), plan, data)

    def _entry_path(self, key: str) -> Path:
        return self.root / "results" / key[:2] / f"{key}.json"

    def _group_path(self, group: str) -> Path:
        return self.root / "depsets" / f"{group}.json"

    # -- lookup ------------------------------------------------------------------------
    def load(self, key: str) -> list[Any] | None:
        """The (unfiltered) findings of a valid entry, else None."""
        data = read_bytes(self._entry_path(key))
        if data is None:
            self.misses += 1
            return None
        try:
            entry = json.loads(data)
            if entry.get("format") != ENTRY_FORMAT or entry.get("key") != key:
                raise ValueError("foreign entry")
            valid = all(self._group_valid(g) for g in entry["groups"]) and self.hashes.all_match(entry["files"])
            if not valid:
                self.misses += 1
                return None
            findings = [decode(f) for f in entry["findings"]]
        except (ValueError, KeyError, TypeError, AttributeError):
            self.misses += 1
            return None
        self.hits += 1
        return findings

    def _group_valid(self, group: str) -> bool:
        if group not in self._groups:
            data = read_bytes(self._group_path(group))
            try:
                pairs = json.loads(data) if data is not None else None
                self._groups[group] = (
                    isinstance(pairs, list) and digest(json.dumps(pairs)) == group and self.hashes.all_match(pairs)
                )
            except (ValueError, TypeError):
                self._groups[group] = False
        return self._groups[group]

    # -- store -------------------------------------------------------------------------
    def store(self, key: str, findings: list[Any], deps: Deps) -> bool:
        try:
            encoded = [encode(f) for f in findings]
        except TypeError:
            return False  # something this cache cannot represent: leave the file uncached
        for group, pairs in deps.groups:
            target = self._group_path(group)
            if not target.exists():
                atomic_write(target, json.dumps(pairs).encode())
        entry = {
            "format": ENTRY_FORMAT,
            "key": key,
            "groups": [g for g, _ in deps.groups],
            "files": deps.files,
            "findings": encoded,
        }
        return atomic_write(self._entry_path(key), json.dumps(entry, separators=(",", ":")).encode())


# -- housekeeping ----------------------------------------------------------------------
def prune(static: Path, max_age_days: float = PRUNE_AFTER_DAYS) -> int:
    """Delete the entries and dependency sets, of every project under the static root
    `static`, not written for `max_age_days`, and the directories that leaves empty (a
    project nobody checks any more goes entirely); at most once a day per cache (a marker
    file remembers when). Returns how many files went."""
    import time

    projects = static / "projects"
    marker = projects / ".pruned"
    now = time.time()
    try:
        if now - marker.stat().st_mtime < 86400:
            return 0
    except OSError:
        pass
    if not atomic_write(marker, b""):
        return 0
    removed = 0
    # `results/` and `depsets/` right under the static root: the layout before per-project
    # directories, whose entries age out like any
    for top in (projects, static / "results", static / "depsets"):
        for dirpath, _dirs, names in os.walk(top, topdown=False):
            for name in names:
                if not name.endswith(".json"):
                    continue
                path = os.path.join(dirpath, name)
                try:
                    if now - os.stat(path).st_mtime > max_age_days * 86400:
                        os.unlink(path)
                        removed += 1
                except OSError:
                    continue
            try:
                os.rmdir(dirpath)  # only when empty (`projects/` keeps the marker)
            except OSError:
                pass
    return removed


# -- the run fingerprint ------------------------------------------------------------------
def run_fingerprint(parts: dict[str, Any]) -> str:
    """Everything a run shares that can change a file's findings (see the module doc)."""
    from .clang.parse import libclang_identity

    base = {"version": __version__, "pipeline": pipeline_digest(), "libclang": libclang_identity()}
    return digest(json.dumps({**base, **parts}, sort_keys=True, default=str))


def pipeline_digest() -> str:
    """Hash of the static pipeline's sources: the package (less harness and reporters),
    the rule pack and the hermetic prelude. Read again for every run (a few milliseconds):
    a long-lived process must not keep a rule set that was edited since."""
    import importlib.util

    package = Path(__file__).resolve().parent
    roots = [package]
    spec = importlib.util.find_spec("kernel_check.rules")
    if spec is not None and spec.submodule_search_locations:
        roots += [Path(p) for p in spec.submodule_search_locations]
    parts: list[str | bytes] = []
    for root in roots:
        for directory, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in _NOT_PIPELINE)
            for name in sorted(files):
                if name.endswith((".pyc", ".pyo")) or name.startswith("."):
                    continue
                full = Path(directory) / name
                parts += [full.relative_to(root).as_posix(), read_bytes(full) or b""]
    return digest(*parts)


# -- findings <-> JSON --------------------------------------------------------------------
def encode(value: Any) -> Any:
    """JSON for a finding: dataclasses and enums of `kernel_check.finding`, tuples, lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        _known_type(type(value).__name__)
        return {
            "@": type(value).__name__,
            **{f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)},
        }
    if isinstance(value, enum.Enum):
        _known_type(type(value).__name__)
        return {"@enum": type(value).__name__, "value": value.value}
    if isinstance(value, tuple):
        return {"@tuple": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise TypeError("dict keys must be strings")
        return {"@dict": {k: encode(v) for k, v in value.items()}}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"cannot cache a {type(value).__name__}")


def decode(value: Any) -> Any:
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "@" in value:
        cls = _known_type(value["@"])
        return cls(**{k: decode(v) for k, v in value.items() if k != "@"})
    if "@enum" in value:
        return _known_type(value["@enum"])(value["value"])
    if "@tuple" in value:
        return tuple(decode(v) for v in value["@tuple"])
    if "@dict" in value:
        return {k: decode(v) for k, v in value["@dict"].items()}
    raise ValueError("unknown value in a cache entry")


def _known_type(name: str) -> Any:
    from . import finding

    cls = getattr(finding, name, None)
    if not isinstance(cls, type) or cls.__module__ != finding.__name__:
        raise TypeError(f"{name} is not a kernel_check.finding type")
    return cls
