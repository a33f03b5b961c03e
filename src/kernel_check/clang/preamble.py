"""Precompiled preambles: parse the shared headers once, parse every file against them.

A kernel file is a few hundred lines on top of ~400 headers (the CUDA runtime wrapper or
the hermetic prelude, libstdc++, tvm-ffi, `sgl_kernel/`): the headers are almost all of a
parse. A preamble is those headers parsed once into a precompiled header (PCH) that each
file's parse loads with `-include-pch`.

Which headers (a `Recipe`; `strategy` "union", the default):

* ``project``: every header under the `sgl_kernel/` of the first `-I` directory that
  holds one, in path order (a union: a file sees the whole header library, not only what
  it includes; see "Semantics" below). Planned for a file that includes an `sgl_kernel/`
  header, itself or through its own `"..."` headers.
* ``external``: what those headers include unconditionally (outside any `#if` block, so a
  ROCm-only header is not) from outside `sgl_kernel/` (tvm-ffi, dlpack, the standard
  library, CUDA). Used for the files that are themselves inside the project preamble --
  the `sgl_kernel/` headers -- which a PCH containing them would hide, and for files that
  include no `sgl_kernel/` header.

These tiers do not depend on which files a run checks, so a one-file run (pre-commit)
finds the preamble a full run built. Every file of a tree parses against the same
project preamble whatever subset of the headers it includes; each include of the
generated header is guarded by `__has_include`, so a header missing on this machine is
left out instead of failing the build.
* ``base``: no header at all: only what the flags force-include (the hermetic prelude or
  clang's CUDA runtime wrapper), for files inside the external preamble.

`strategy` "exact" keys the preamble by the file's own `#include <...>` list instead (one
PCH per distinct list: exact semantics, one build per list); "off" disables preambles.

Correctness:

* The PCH is built from the file's own argument list (`compile_args`), plus the
  build-only `-fpch-instantiate-templates`; the argument list is part of the key.
* Key: recipe (tier, arguments, header list) + libclang version (a device pass's
  device-mode arguments, `device_pass.py`, are another key: a PCH per architecture); a
  manifest next to the PCH lists every file it depends on (`get_includes()` of the build)
  with its content hash, and an entry is used only when all of them still hash the same.
  clang itself also rejects a PCH whose inputs changed size or time, which ends in a plain
  parse and a rebuild. Builds run under a file lock; the PCH is written to a temporary
  file and renamed, under a fresh name, so a concurrent reader keeps the old one.
* Sharing: the store (`cache.preamble_store`) is one per user. Where the recipe includes
  no `sgl_kernel/` header and the project's include directory holds `sgl_kernel/` alone,
  that directory is left out of the key (`_shared_args`): every copy of a project, and
  every project with the same flags, shares the `external` and `base` preambles. An
  entry records whether the build entered a file of that directory ("portable"); one that
  did serves only its own directory (`_lookup`).
* Size: after a build, `evict` removes the recipe directories unused for
  `RECIPE_UNUSED_DAYS`, then the least recently used until the store fits `max_bytes`
  (`cache-max-size`); each process holds a shared lock on every directory it uses
  (`cache.hold_shared`) and eviction skips a held one.
* A preamble whose build has errors is never used as is: the top-level headers whose
  include closure holds an error are left out and it is rebuilt (`BUILD_ATTEMPTS` in all:
  a fatal error hides the errors after it); still failing, the recipe is recorded as
  failed (for those header contents) and the next tier is tried.
* After a parse against a preamble, each `#include` the file (or a header it entered)
  spells must resolve to a header the PCH holds or that the parse entered itself;
  anything else (a different header whose include guard the PCH had defined) means the
  union changed what the file sees, and the file is parsed plainly. A file that `#define`s
  or `#undef`s a macro before its last `#include` is parsed plainly (the PCH was built
  without that macro). A load failure, a corrupt or stale PCH (a fatal error about it): plain
  parse; a fatal error of the file's own (a missing header) is checked like any error.
* Then (`_deviates`), with the file's include closure (forced includes, its own
  directives, the PCH's include graph) against the rest of the PCH: the file is parsed
  against the next smaller preamble (the last, `base`, holds only forced includes), else
  plainly, when it uses a declaration or macro only the rest declares (`#ifdef`/`defined()`
  of such a macro count as uses); when a header of its closure was preprocessed in the
  build with a macro of the rest (a macro-sensitive include: the union put that header
  first); when an error, or a note attached to one, lies in the rest (an ambiguous call,
  a redefinition); when an error lies in a PCH header the file entered again (one
  without an include guard, defined twice); or when a project header of its closure that
  is not self-contained (it uses declarations of headers it does not reach: the build
  records them, `_needs`) comes, in the file's own order, before what it needs. The
  references are read from the file's own code and its non-system headers: what the
  union changes inside a library header the parse entered itself (the candidates of a
  dependent call in `<mutex>`) is nobody's input. A tier whose PCH holds a header that
  made the file deviate (a declaration it used, a header it needed first) is skipped:
  it would deviate the same way.

Semantics of the union (accepted, and the reason "exact" exists): a header in the
preamble that the file does not include still declares its names, so a file that forgot
an `#include` parses where a compiler would stop (the build check, KC6xx, reports that),
and an unqualified call may see an overload from a header the file does not include.
Order within the file's own text is otherwise kept: its non-preamble headers are entered
where it includes them.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import re
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..cache import (
    IN_USE,
    PREAMBLE_STRATEGIES,
    FileHashes,
    atomic_write,
    digest,
    hold_shared,
    read_bytes,
    remove_unless_in_use,
    tree_size,
)
from ..includes import LIBRARY
from .parse import (
    PARSE_FOR_SERIALIZATION,
    PARSE_INCOMPLETE,
    PARSE_OPTIONS,
    ParsedUnit,
    cindex,
    entered_files,
    get_index,
    libclang_version,
    unit_errors,
)

HEADER_SUFFIXES = (".h", ".cuh", ".hpp", ".cuhpp", ".hh", ".inl")
BUILD_ONLY_ARGS = ("-fpch-instantiate-templates",)
MANIFEST_ENTRIES = 3
RECIPE_UNUSED_DAYS = 14.0
LOCK_TIMEOUT_S = 900.0
BUILD_TIMEOUT_S = 300.0  # one preamble build, in a bounded child (watchdog.py)
BUILD_ATTEMPTS = 3  # a build with errors leaves their headers out and tries again
_LAYOUT = "pch-v3"  # v2: `__has_include` guards, macro uses; v3: what project headers need from before
_SHARED_INCLUDE_DIR = "<the project's include directory>"  # stands for it in a shared recipe's key

_ANGLE_INCLUDE_RE = re.compile(rb"^[ \t]*#[ \t]*include[ \t]*<([^>\r\n]+)>", re.M)
_QUOTED_NAME_RE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*"([^"\r\n]+)"', re.M)
_ANY_INCLUDE_RE = re.compile(rb"^[ \t]*#[ \t]*(?:include|include_next|import)\b", re.M)
_MACRO_CHANGE_RE = re.compile(rb"^[ \t]*#[ \t]*(?:define|undef)\b", re.M)
_CONDITION_OPEN_RE = re.compile(rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|endif)\b", re.M)
_GUARD_RE = re.compile(
    rb"^[ \t]*#[ \t]*ifndef[ \t]+(\w+)[ \t]*\r?\n(?:[ \t]*(?://[^\n]*)?\r?\n)*"
    rb"(^[ \t]*#[ \t]*define[ \t]+\1\b)",
    re.M,
)


@dataclass(frozen=True)
class Recipe:
    """What one preamble holds: exactly the file's arguments plus an ordered header list."""

    tier: str  # "project", "external", "base" or "exact"
    args: tuple[str, ...]
    headers: tuple[str, ...]  # `<...>` spellings, included in this order

    @property
    def group(self) -> str:
        """Identity for scheduling (no libclang needed); files with one group share a PCH."""
        return digest(_LAYOUT, self.tier, "\0".join(self.args), "\0".join(self.headers))

    def text(self) -> str:
        """The generated header. Each include is guarded by `__has_include`, so a header
        that does not exist here (a ROCm-only one, a library nobody installed) is left out
        instead of stopping the build with a fatal error; a file that includes it gets that
        error from its own parse."""
        lines = ["// kernel-check precompiled preamble (generated; safe to delete)\n"]
        lines += [f"#if __has_include(<{header}>)\n#include <{header}>\n#endif\n" for header in self.headers]
        return "".join(lines)


@dataclass
class Preamble:
    """A usable PCH and what it depends on."""

    pch: Path
    recipe: Recipe
    headers: tuple[str, ...]  # after leaving out headers that did not build
    deps: list[list[str]]  # [path as clang spells it, content hash]
    dep_group: str = ""
    size: int = 0  # of the PCH file, to notice it was replaced or removed
    _realpaths: frozenset[str] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not self.dep_group:
            self.dep_group = digest(json.dumps(self.deps))

    _graph: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def realpaths(self) -> frozenset[str]:
        if self._realpaths is None:
            self._realpaths = frozenset(os.path.realpath(path) for path, _ in self.deps)
        return self._realpaths

    @property
    def graph(self) -> dict[str, Any] | None:
        """The build's `#include` graph: {"forced": [names], "edges": {source: [targets]},
        "files": [names], "macro_uses": {file index: [indexes of the files whose macros it expands]}}."""
        if self._graph is None:
            data = read_bytes(self.pch.with_suffix(".graph.json"))
            try:
                graph = json.loads(data) if data else None
                if (
                    not isinstance(graph, dict)
                    or not isinstance(graph.get("edges"), dict)
                    or not isinstance(graph.get("macro_uses"), dict)
                    or not isinstance(graph.get("files"), list)
                ):
                    return None
                self._graph = graph
            except ValueError:
                return None
        return self._graph

    _macro_uses: dict[str, frozenset[str]] | None = field(default=None, repr=False)

    def macro_uses(self, real: Any) -> dict[str, frozenset[str]]:
        """Real path of a PCH header -> the real paths of the other headers whose macros it
        expanded or tested (`#ifdef`, `defined()`) while the preamble was built."""
        if self._macro_uses is None:
            graph = self.graph or {"files": [], "macro_uses": {}}
            files = [real(name) for name in graph["files"]]
            self._macro_uses = {
                files[int(user)]: frozenset(files[i] for i in used) for user, used in graph["macro_uses"].items()
            }
        return self._macro_uses


@dataclass
class _ProjectHeaders:
    include_dir: str
    project: tuple[str, ...]  # spellings "sgl_kernel/..."
    external: tuple[str, ...]  # spellings included by them from elsewhere
    realpaths: frozenset[str]
    alone: bool  # `include_dir` holds `sgl_kernel/` and nothing else


@dataclass
class PreambleStats:
    built: int = 0
    build_failed: int = 0
    parsed: int = 0  # files parsed against a preamble
    plain: int = 0  # files that fell back to a plain parse
    rejected: int = 0  # PCH files clang refused (stale or corrupt)
    build_seconds: float = 0.0


class PreambleCache:
    """Plans, finds, builds and uses preambles for one process.

    `root` is a directory: the preamble store every project shares (`cache.preamble_store`)
    or a run's temporary directory. After a build the store is cut down to `max_bytes`
    (None: no cap; `evict`); the directories this process uses are held until `close`.
    Planning (`recipes`) is plain Python; only `get`/`parse` load libclang.
    """

    def __init__(
        self,
        root: Path,
        strategy: str = "union",
        hashes: FileHashes | None = None,
        check_lookup: bool = True,
        build_timeout: float = BUILD_TIMEOUT_S,
        max_bytes: int | None = None,
    ) -> None:
        if strategy not in PREAMBLE_STRATEGIES:
            raise ValueError(f"unknown preamble strategy {strategy!r}")
        self.root = Path(root)
        self.strategy = strategy
        self.check_lookup = check_lookup and strategy == "union"
        self.build_timeout = build_timeout
        self.max_bytes = max_bytes
        self.hashes = hashes or FileHashes()
        self.stats = PreambleStats()
        self._projects: dict[str, _ProjectHeaders | None] = {}
        self._loaded: dict[str, Preamble | None] = {}
        self._rebuilt: set[str] = set()
        self._realpath_memo: dict[str, str] = {}
        self._held: dict[Path, int] = {}  # recipe directory -> descriptor of its shared `IN_USE` lock

    def close(self) -> None:
        """Let go of the recipe directories this process held (`_hold`)."""
        for descriptor in self._held.values():
            try:
                os.close(descriptor)
            except OSError:
                pass
        self._held.clear()

    # -- planning -----------------------------------------------------------------------
    def recipes(self, path: Path, text: str | bytes, args: list[str]) -> list[Recipe]:
        """Preambles `path` could use, best first (empty: parse it plainly)."""
        if self.strategy == "off":
            return []
        data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
        if _changes_macros_before_includes(data):
            return []
        arguments = tuple(args)
        main = self._real(str(path))
        if self.strategy == "exact":
            exact = tuple(dict.fromkeys(m.decode("utf-8", "replace").strip() for m in _ANGLE_INCLUDE_RE.findall(data)))
            found = [Recipe("exact", arguments, exact)] if exact else []
            return found + [Recipe("base", arguments, ())]
        found = []
        project = self._project(arguments)
        if project is not None and _ANY_INCLUDE_RE.search(data):
            # A file that includes no `sgl_kernel/` header, itself or through a header of
            # its own (`"..."`), gets no `sgl_kernel/` declarations.
            if project.project and main not in project.realpaths and self._reaches_project(path, data, project):
                found.append(Recipe("project", arguments, project.project))
            if project.external:
                found.append(Recipe("external", arguments, project.external))
        found.append(Recipe("base", arguments, ()))
        return found

    def _reaches_project(self, path: Path, data: bytes, project: _ProjectHeaders) -> bool:
        """Whether `data` (the file `path`) includes an `sgl_kernel/` header, itself or through
        its own `"..."` headers, found as the preprocessor finds them (the includer's
        directory, then the project's include directory); an include this cannot follow
        (a macro, a header not found here) counts as reaching it."""
        pending = [(path, data)]
        visited = {self._real(str(path))}
        while pending:
            current, text = pending.pop()
            if any(m.startswith(b"sgl_kernel/") for m in _ANGLE_INCLUDE_RE.findall(text)):
                return True
            if len(_ANY_INCLUDE_RE.findall(text)) != len(_ANGLE_INCLUDE_RE.findall(text)) + len(
                _QUOTED_NAME_RE.findall(text)
            ):
                return True  # `#include MACRO`, `#include_next`, `#import`
            for quoted in _QUOTED_NAME_RE.findall(text):
                name = quoted.decode("utf-8", "replace")
                places = (current.parent / name, Path(project.include_dir) / name)
                found = next((place for place in places if place.is_file()), None)
                if found is None:
                    return True
                resolved = self._real(str(found))
                if resolved in project.realpaths:
                    return True
                if resolved not in visited:
                    visited.add(resolved)
                    pending.append((found, read_bytes(found) or b""))
        return False

    def _project(self, args: tuple[str, ...]) -> _ProjectHeaders | None:
        include_dir = _first_sgl_include_dir(args)
        if include_dir is None:
            return None
        if include_dir not in self._projects:
            self._projects[include_dir] = _scan_project(include_dir)
        return self._projects[include_dir]

    # -- lookup and build ----------------------------------------------------------------
    def get(self, recipe: Recipe) -> Preamble | None:
        """The current preamble for `recipe`, building it (under a lock) when there is none."""
        key = recipe.group
        if key in self._loaded:
            return self._loaded[key]
        preamble = self._find_or_build(recipe)
        self._loaded[key] = preamble
        return preamble

    def prepare(self, recipe: Recipe) -> bool:
        """Make sure `recipe`'s preamble exists (a pool worker's build task)."""
        return self.get(recipe) is not None

    def prefetch(self, path: Path, source: str | bytes, args: list[str]) -> None:
        """Resolve here -- building if need be -- the preamble `parse` would use, so that a
        parse in a forked child (watchdog.py) finds it in memory instead of looking it up
        (or building it) again, inside the file's time bound, in every child."""
        main = self._real(str(path))
        for recipe in self.recipes(path, source, args):
            known = self._loaded.get(recipe.group)
            if known is not None and not _unchanged(known):
                del self._loaded[recipe.group]  # replaced or removed by another run
            preamble = self.get(recipe)
            if preamble is not None and main not in preamble.realpaths:
                preamble.graph  # noqa: B018 - load it once, here
                return

    def _dir(self, recipe: Recipe) -> Path:
        """The recipe's directory in the store: a hash of the recipe (`_shared_args`) and
        libclang's version."""
        key = digest(
            _LAYOUT, recipe.tier, "\0".join(self._shared_args(recipe)), "\0".join(recipe.headers), libclang_version()
        )
        return self.root / key[:24]

    def _shared_args(self, recipe: Recipe) -> tuple[str, ...]:
        """`recipe.args` as the store's key spells them: the project's include directory (the
        first `-I` holding `sgl_kernel/`) becomes a placeholder when nothing of it can be in
        the preamble -- the recipe includes no `sgl_kernel/` header and the directory holds
        nothing else, so no header of it can stand in for a library's -- and every copy of
        a project, or another project with the same flags, shares the PCH (the `external`
        and `base` tiers). That the PCH built really holds nothing of it is checked on use
        (`_lookup`, "portable")."""
        project = self._project(recipe.args)
        if project is None or not project.alone or any(h.startswith(f"{LIBRARY}/") for h in recipe.headers):
            return recipe.args
        flags = ("", *recipe.args)
        return tuple(
            _SHARED_INCLUDE_DIR if flag == "-I" and value == project.include_dir else value
            for flag, value in zip(flags, recipe.args)
        )

    def _hold(self, directory: Path) -> None:
        """Hold `directory` for this process (`cache.hold_shared`): no eviction, by any
        process, removes it while this one may use it."""
        if directory not in self._held:
            descriptor = hold_shared(directory / IN_USE)
            if descriptor is not None:
                self._held[directory] = descriptor

    def _find_or_build(self, recipe: Recipe) -> Preamble | None:
        directory = self._dir(recipe)
        self._hold(directory)
        found = self._lookup(directory, recipe)
        if found is not False:
            return found  # a valid entry (or a recorded failure: None)
        from filelock import FileLock, Timeout

        try:
            directory.mkdir(parents=True, exist_ok=True)
            lock = FileLock(str(directory / "lock"), timeout=LOCK_TIMEOUT_S)
            with lock:
                found = self._lookup(directory, recipe)  # another process may have built it
                if found is not False:
                    return found
                built = self._build_bounded(directory, recipe)
                evict(self.root, keep=directory, max_bytes=self.max_bytes)
                return built
        except (Timeout, OSError):
            return None

    def _build_bounded(self, directory: Path, recipe: Recipe) -> Preamble | None:
        """Build in a killable child (a header may hang or exhaust clang as well as a file),
        then load what it recorded."""
        from ..watchdog import Stopped, run_bounded

        started = time.perf_counter()
        outcome = run_bounded(_build_in_child, (self, directory, recipe), self.build_timeout)
        self.stats.build_seconds += time.perf_counter() - started
        if isinstance(outcome, Stopped) or not outcome:
            self.stats.build_failed += 1
            return None
        self.stats.built += 1
        found = self._lookup(directory, recipe)
        return found if isinstance(found, Preamble) else None

    def _lookup(self, directory: Path, recipe: Recipe) -> Preamble | Literal[False] | None:
        """A valid manifest entry as a Preamble, None for a recorded failure, False: none.
        An entry built with another include directory of the project (another copy of it,
        another project) is valid only when it holds nothing of that directory."""
        library = _first_sgl_include_dir(recipe.args)
        for entry in _read_manifest(directory):
            try:
                deps = entry["deps"]
                if entry.get("library") != library and not entry.get("portable"):
                    continue
                if not self.hashes.all_match(deps):
                    continue
                if entry.get("failed"):
                    return None
                pch = directory / entry["pch"]
                if pch.stat().st_size != entry["size"] or not pch.with_suffix(".graph.json").is_file():
                    continue
                _touch(directory / "manifest.json")  # its last use, for `evict`
                return Preamble(pch, recipe, tuple(entry["headers"]), deps, entry.get("group", ""), entry["size"])
            except (KeyError, TypeError, ValueError, OSError):
                continue
        return False

    def _build(self, directory: Path, recipe: Recipe) -> Preamble | None:
        headers = list(recipe.headers)
        excluded: list[str] = []
        index = get_index()
        for attempt in range(BUILD_ATTEMPTS):
            text = Recipe(recipe.tier, recipe.args, tuple(headers)).text()
            main = directory / f"preamble-{digest(text)[:16]}.cuh"
            if read_bytes(main) != text.encode() and not atomic_write(main, text.encode()):
                return None
            try:
                tu = index.parse(
                    str(main),
                    args=[*recipe.args, *BUILD_ONLY_ARGS],
                    options=PARSE_OPTIONS | PARSE_INCOMPLETE | PARSE_FOR_SERIALIZATION,
                )
            except cindex().TranslationUnitLoadError:
                tu = None
            errors = unit_errors(tu, str(main)) if tu is not None else ["load"]
            if not errors:
                break
            last = attempt == BUILD_ATTEMPTS - 1
            culprits = _culprits(tu, headers, errors) if tu is not None and not last else set()
            if not culprits:
                self._record(directory, recipe, None, headers, excluded, tu)
                return None
            excluded += [h for h in headers if h in culprits]
            headers = [h for h in headers if h not in culprits]
        assert tu is not None
        pch_name = f"{uuid.uuid4().hex[:16]}.pch"
        tmp = directory / f".{pch_name}.tmp"
        try:
            tu.save(str(tmp))
            os.replace(tmp, directory / pch_name)
        except Exception:  # TranslationUnitSaveError, a full disk, a removed cache dir
            _unlink(tmp)
            return None
        project = self._project(recipe.args) if recipe.tier == "project" else None
        graph = _inclusion_graph(tu, project.realpaths if project is not None else frozenset())
        if not atomic_write((directory / pch_name).with_suffix(".graph.json"), json.dumps(graph).encode()):
            _unlink(directory / pch_name)
            return None
        return self._record(directory, recipe, pch_name, headers, excluded, tu)

    def _record(
        self, directory: Path, recipe: Recipe, pch_name: str | None, headers: list[str], excluded: list[str], tu: Any
    ) -> Preamble | None:
        hashed = [] if tu is None else [(p, self._fresh_hash(p)) for p in entered_files(tu)]
        deps = [[path, value] for path, value in hashed if value is not None]
        library = _first_sgl_include_dir(recipe.args)
        inside = None if library is None else os.path.join(os.path.realpath(library), "")
        entry: dict[str, Any] = {
            "headers": headers,
            "excluded": excluded,
            "deps": deps,
            "created": time.time(),
            "libclang": libclang_version(),
            "library": library,
            "portable": inside is None or not any(os.path.realpath(path).startswith(inside) for path, _ in deps),
        }
        preamble = None
        if pch_name is None:
            entry["failed"] = True
        else:
            pch = directory / pch_name
            preamble = Preamble(pch, recipe, tuple(headers), deps, size=pch.stat().st_size)
            entry.update(pch=pch_name, size=preamble.size, group=preamble.dep_group)
        entries = [entry, *_read_manifest(directory)][:MANIFEST_ENTRIES]
        atomic_write(directory / "manifest.json", json.dumps({"entries": entries}).encode())
        _prune(directory, {e.get("pch") for e in entries})
        return preamble

    def _fresh_hash(self, path: str) -> str | None:
        return self.hashes.refresh(path)

    def reject(self, preamble: Preamble) -> None:
        """clang refused `preamble` (inputs touched, file corrupt): forget it; rebuild once."""
        self.stats.rejected += 1
        key = preamble.recipe.group
        directory = preamble.pch.parent
        from filelock import FileLock, Timeout

        try:
            with FileLock(str(directory / "lock"), timeout=LOCK_TIMEOUT_S):
                entries = [e for e in _read_manifest(directory) if e.get("pch") != preamble.pch.name]
                atomic_write(directory / "manifest.json", json.dumps({"entries": entries}).encode())
                _unlink(preamble.pch)
        except (Timeout, OSError):
            pass
        if key in self._rebuilt:
            self._loaded[key] = None  # refused twice in this process: stop trying
        else:
            self._rebuilt.add(key)
            self._loaded.pop(key, None)

    # -- parsing -------------------------------------------------------------------------
    def parse(self, path: Path, source: str | bytes, args: list[str]) -> ParsedUnit | None:
        """Parse against the best preamble that applies; None means: parse plainly.
        `source` as for `parse_file`: the file's bytes, so clang's offsets index them."""
        name = str(path)
        main = self._real(name)
        culprits: set[str] = set()  # PCH headers outside the file's closure that it saw
        for recipe in self.recipes(path, source, args):
            for _attempt in range(2):
                preamble = self.get(recipe)
                if preamble is None or main in preamble.realpaths or not culprits.isdisjoint(preamble.realpaths):
                    break  # a smaller tier that holds a culprit too would deviate the same way
                unit, outcome = self._parse_with(preamble, name, source, args, culprits)
                if unit is not None:
                    self.stats.parsed += 1
                    return unit
                if outcome != "rejected":
                    break  # "deviates": a smaller preamble (the next tier) may not
        self.stats.plain += 1
        return None

    def _parse_with(
        self, preamble: Preamble, name: str, source: str | bytes, args: list[str], culprits: set[str] | None = None
    ) -> tuple[ParsedUnit | None, str]:
        """(unit, "ok") or (None, why): "rejected" (PCH unusable), "deviates" (then a
        header outside the file's own closure whose declaration it used is added to
        `culprits`, when the check names one).

        A fatal error of the file's own (a header it includes is missing: cutlass nobody
        installed) is no reason for a plain parse, which would stop at the same place
        after parsing every header again; it goes through the same checks as any error."""
        ci = cindex()
        used = [*args, "-include-pch", str(preamble.pch)]
        try:
            tu = get_index().parse(name, args=used, unsaved_files=[(name, source)], options=PARSE_OPTIONS)
        except ci.TranslationUnitLoadError:
            self.reject(preamble)
            return None, "rejected"
        fatal = [d for d in tu.diagnostics if d.severity >= ci.Diagnostic.Fatal]
        if any(_is_pch_problem(d, preamble.pch) for d in fatal):
            self.reject(preamble)
            return None, "rejected"
        entered = entered_files(tu)
        graph = preamble.graph
        if graph is None:
            self.reject(preamble)
            return None, "rejected"
        root = tu.cursor  # one root: the extraction walks the cursors the checks read (tree.py)
        directives = _directives(root)
        if not self._includes_agree(directives, preamble, entered):
            return None, "deviates"
        included = _closure(graph, directives, name, self._real)
        if self.check_lookup and self._deviates(
            tu, root, name, preamble, included, entered, set() if culprits is None else culprits
        ):
            return None, "deviates"
        _report_includes_as_plain(tu, name, included)
        unit = ParsedUnit(name, tu, used, unit_errors(tu, name), entered, preamble, _root=root)
        return unit, "ok"

    def _deviates(
        self,
        tu: Any,
        root: Any,
        name: str,
        preamble: Preamble,
        included: list[str],
        entered: Iterable[str],
        culprits: set[str],
    ) -> bool:
        """Whether the union may have changed what the file sees (then the next tier is tried):
        it uses a declaration or macro of a PCH header its own includes do not reach (an
        `#ifdef` or `defined()` of a defined macro counts: clang records it as a use); a
        header it does include was preprocessed with a macro of such a header (the union
        put that header first: a macro-sensitive include); or an error involves such a
        header (a redefinition, an ambiguous call) or a PCH header the file entered again
        (one without an include guard); or a header that is not self-contained comes, in
        the file's own order, before what it needs (`_needed_later`). What it needs goes
        into `culprits` (every union that holds it enters it first), and so does a header
        whose declaration the file uses (a smaller union that holds it declares it too);
        an error, or a macro seen first, names none: a smaller union may not cause it."""
        seen = {self._real(p) for p in included}
        seen.add(self._real(name))
        outside = preamble.realpaths - seen
        entered_again = preamble.realpaths.intersection(self._real(p) for p in entered)
        if entered_again and _errors_in(tu, entered_again, self._real):
            return True
        missing = self._needed_later(preamble, included)
        if missing:
            culprits.update(missing)  # a smaller union that holds them puts them first too
            return True
        if not outside:
            return False
        if _errors_in(tu, outside, self._real):
            return True
        uses = preamble.macro_uses(self._real)
        if any(not uses[header] <= seen for header in seen if header in uses):
            return True  # a smaller union may not put those macros first: no culprit
        culprit = _sees_outside(root, outside, self._real)
        if culprit is not None:
            culprits.add(culprit)
        return culprit is not None

    def _needed_later(self, preamble: Preamble, included: list[str]) -> set[str]:
        """The headers that a PCH header of the file's closure needs but is not self-contained
        for (the graph's `needs`) and that the file enters only after it, in the order a plain
        parse enters them (`included`): that parse would stop at its first use. Empty: none."""
        needs = (preamble.graph or {}).get("needs") or {}
        missing: set[str] = set()
        if not needs:
            return missing
        wanted = {self._real(header): [self._real(n) for n in needed] for header, needed in needs.items()}
        before: set[str] = set()
        for name in included:
            resolved = self._real(name)
            missing.update(n for n in wanted.get(resolved, ()) if n not in before)
            before.add(resolved)
        return missing

    def _includes_agree(
        self, directives: list[tuple[str, str | None]], preamble: Preamble, entered: Iterable[str]
    ) -> bool:
        """Every `#include` this parse saw resolved to a header it entered or the PCH holds
        (or to nothing: a missing header is missing from a plain parse too, since these
        directives are the file's and its own headers', searched from the same places)."""
        known = set(preamble.realpaths)
        known.update(self._real(p) for p in entered)
        return all(target is None or self._real(target) in known for _, target in directives)

    def _real(self, path: str) -> str:
        try:
            return self._realpath_memo[path]
        except KeyError:
            value = self._realpath_memo[path] = os.path.realpath(path)
            return value


def _build_in_child(cache: PreambleCache, directory: Path, recipe: Recipe) -> bool:
    return cache._build(directory, recipe) is not None


def _unchanged(preamble: Preamble) -> bool:
    try:
        return preamble.pch.stat().st_size == preamble.size
    except OSError:
        return False


def _directives(root: Any) -> list[tuple[str, str | None]]:
    """(file, included file) of each `#include` this parse recorded (the PCH's are not)."""
    kind = cindex().CursorKind.INCLUSION_DIRECTIVE
    found = []
    for cursor in root.get_children():
        if cursor.kind == kind:
            location = cursor.location.file
            included = _included_file(cursor)
            found.append((location.name if location else "", included.name if included else None))
    return found


def _included_file(cursor: Any) -> Any:
    """The file an inclusion directive entered; None when clang did not find it (the
    bindings' `get_included_file` asserts on a null file instead)."""
    try:
        return cursor.get_included_file()
    except AssertionError:
        return None


def _inclusion_graph(tu: Any, own_headers: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The build's `#include` edges (every directive, also those an include guard skipped)
    and the forced includes, so a file's own include closure can be told from the union;
    which headers used which other headers' macros, so a header that was preprocessed
    differently because the union put another header first can be noticed; and, for the
    project's own headers (`own_headers`, real paths), the headers whose declarations one
    uses without reaching them through its own includes (`needs`, see `_needs`)."""
    ci = cindex()
    inclusion, expansion = ci.CursorKind.INCLUSION_DIRECTIVE, ci.CursorKind.MACRO_INSTANTIATION
    main = tu.spelling
    forced = [inc.include.name for inc in tu.get_includes() if inc.depth == 1 and inc.source is None]
    edges: dict[str, list[str]] = {}
    files: dict[str, int] = {}
    uses: dict[int, set[int]] = {}
    guarded: dict[str, bool] = {}
    for cursor in tu.cursor.get_children():
        kind = cursor.kind
        if kind != inclusion and kind != expansion:
            continue
        location = cursor.location.file
        source = location.name if location else ""
        if kind == inclusion:
            target = _included_file(cursor)
            if target is not None:
                edges.setdefault(source or main, []).append(target.name)
            continue
        if not source or not _guarded(tu, location, guarded):
            continue  # a header without a guard (`stddef.h` and its `__need_size_t`) is read
            # again by every includer, which sets it up: its parse is the includer's business
        definition = cursor.referenced
        home = definition.location.file if definition is not None else None
        if home is not None and home.name != source:
            uses.setdefault(files.setdefault(source, len(files)), set()).add(files.setdefault(home.name, len(files)))
    return {
        "main": main,
        "forced": forced,
        "edges": edges,
        "files": list(files),
        "macro_uses": {str(user): sorted(used) for user, used in uses.items()},
        "needs": _needs(tu, own_headers, forced, edges) if own_headers else {},
    }


def _needs(
    tu: Any, own_headers: frozenset[str], forced: list[str], edges: dict[str, list[str]]
) -> dict[str, list[str]]:
    """Header -> the headers whose declarations it uses but neither includes (directly or
    not) nor gets from the forced includes: a header that is not self-contained
    (`scalar_type.hpp` calls `std::tuple_cat` and leaves `<tuple>` to its includer). In
    the union it compiles because the union entered those first; a file that includes it
    before them does not compile plainly, so a file whose closure does not enter them
    before it deviates (`PreambleCache._needed_later`). Only the project's own headers are read
    (the library headers are taken as self-contained): their top-level declarations and
    every reference below them. A qualified call with several candidates needs one of them
    reached; when none is, the header of the first is recorded."""
    from .capi import overloaded_decls  # (the bindings: loaded by the build already)
    from .cursors import is_implicit_instantiation

    K = cindex().CursorKind
    kinds = _reference_kinds()
    qualifiers = (K.NAMESPACE_REF, K.TYPE_REF, K.TEMPLATE_REF)
    declarations = (
        K.FUNCTION_DECL,
        K.CXX_METHOD,
        K.CONSTRUCTOR,
        K.DESTRUCTOR,
        K.CONVERSION_FUNCTION,
        K.CLASS_DECL,
        K.STRUCT_DECL,
        K.VAR_DECL,
    )
    real = functools.lru_cache(maxsize=None)(os.path.realpath)
    reach_memo: dict[str, frozenset[str]] = {}

    # by real path: one header spelled two ways (`cuda_stubs/../prelude.h`) is one node
    real_edges: dict[str, list[str]] = {}
    for source, targets in edges.items():
        real_edges.setdefault(real(source), []).extend(real(t) for t in targets)

    def reach(name: str) -> frozenset[str]:
        if name not in reach_memo:
            seen: set[str] = set()
            stack = [real(f) for f in (*forced, name)]
            while stack:
                current = stack.pop()
                if current not in seen:
                    seen.add(current)
                    stack.extend(real_edges.get(current, ()))
            reach_memo[name] = frozenset(seen)
        return reach_memo[name]

    def home(cursor: Any) -> str | None:
        if cursor is None or (cursor.kind == K.FUNCTION_DECL and _is_implicit_builtin(cursor)):
            return None
        location = cursor.location.file
        return None if location is None else location.name

    needs: dict[str, set[str]] = {}
    for top in tu.cursor.get_children():
        location = top.location.file
        if location is None or real(location.name) not in own_headers:
            continue
        source = location.name
        allowed = reach(source)
        stack = [(top, False)]  # (cursor, whether a sibling qualifies its name)
        while stack:
            cursor, qualified = stack.pop()
            kind = cursor.kind
            if kind in declarations and is_implicit_instantiation(cursor):
                continue  # a template's body instantiated for another header's types (the
                # build's `-fpch-instantiate-templates`): its references are to that header's
            if kind == K.OVERLOADED_DECL_REF:
                # unqualified, a dependent call finds more by argument-dependent lookup where
                # it is instantiated; qualified (`std::tuple_cat`, the name beside a
                # NAMESPACE_REF), it must find a candidate where it is written
                homes = [home(candidate) for candidate in overloaded_decls(cursor)] if qualified else []
            elif kind in kinds:
                homes = [home(cursor.referenced)]
            else:
                homes = []
            known = [h for h in homes if h is not None]
            if known and not any(real(h) in allowed for h in known):
                needs.setdefault(source, set()).add(known[0])
            children = list(cursor.get_children())
            names_qualified = any(child.kind in qualifiers for child in children)
            stack.extend((child, names_qualified) for child in children)
    return {header: sorted(files) for header, files in needs.items()}


def _guarded(tu: Any, file: Any, memo: dict[str, bool]) -> bool:
    """Whether clang read `file` once and skips it from then on (an include guard or
    `#pragma once`)."""
    known = memo.get(file.name)
    if known is None:
        known = memo[file.name] = bool(cindex().conf.lib.clang_isFileMultipleIncludeGuarded(tu, file))
    return known


def _closure(
    graph: dict[str, Any], directives: list[tuple[str, str | None]], main: str, real: Any = os.path.realpath
) -> list[str]:
    """The headers a plain parse of `main` would enter, in first-entry order: the forced
    includes, then depth first along the file's own directives and the PCH's graph."""
    edges: dict[str, list[str]] = {k: list(v) for k, v in graph["edges"].items() if k != graph.get("main")}
    for source, target in directives:
        if target is not None:
            edges.setdefault(source or main, []).append(target)
    order: dict[str, None] = {}
    seen = {real(main)}  # one entry per file, however a directive spells it

    def visit(name: str) -> None:
        stack = [name]
        while stack:
            current = stack.pop()
            resolved = real(current)
            if resolved in seen:
                continue
            seen.add(resolved)
            order[current] = None
            stack.extend(reversed(edges.get(current, ())))

    for name in [*graph.get("forced", ()), *edges.get(main, ())]:
        visit(name)
    return list(order)


class _NamedFile:
    """Stands in for `cindex.File` in a synthesized `FileInclusion` (only `name` is real)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"<File: {self.name}>"


def _report_includes_as_plain(tu: Any, main: str, included: list[str]) -> None:
    """Make `tu.get_includes()` list what a plain parse would: clang's own answer stops at
    the PCH, and an extractor asking "is sgl_kernel/utils.h included?" must not care."""
    FileInclusion = cindex().FileInclusion
    source = _NamedFile(main)
    entries = [FileInclusion(source, _NamedFile(name), None, 1) for name in included]
    tu.get_includes = lambda: iter(entries)


_REFERENCE_KINDS: frozenset[Any] | None = None


def _reference_kinds() -> frozenset[Any]:
    global _REFERENCE_KINDS
    if _REFERENCE_KINDS is None:
        K = cindex().CursorKind
        _REFERENCE_KINDS = frozenset(
            (
                K.TYPE_REF,
                K.TEMPLATE_REF,
                K.MEMBER_REF,
                K.VARIABLE_REF,
                K.DECL_REF_EXPR,
                K.MEMBER_REF_EXPR,
                K.CALL_EXPR,
                K.MACRO_INSTANTIATION,
                K.OVERLOADED_DECL_REF,
                K.CXX_BASE_SPECIFIER,
            )
        )
    return _REFERENCE_KINDS


def _sees_outside(root: Any, outside: frozenset[str] | set[str], real: Any) -> str | None:
    """The first header, of those its own includes do not reach, whose declaration or macro
    the file uses when parsed against the union (then a plain parse could differ: a missing
    include, an extra overload candidate, a namespace only the union declares); None: none.

    The code of system headers the parse entered itself (libstdc++'s `<mutex>` or
    `<deque>`, CUDA's, cub's) is not walked: what the union changes there is which
    overloads a template's dependent call lists as candidates (`operator>` of `std::map`
    beside `<mutex>`'s, clang's device `std::min` beside libstdc++'s), which nothing checks
    -- no rule reads a system header, and the file's own calls into it are walked -- while
    walking it cost more than the parse and sent every file that includes such a header to
    the next, slower tier."""
    from .capi import file_handle, file_name_of, overloaded_decls

    K = cindex().CursorKind
    kinds = _reference_kinds()
    # Namespaces are left out on purpose: every `sgl_kernel/` header reopens `sglang`, so a
    # namespace reference names whichever header declared it last, which says nothing about
    # what the file can see; the members it finds there are checked one by one.
    scopes = (
        K.FUNCTION_DECL,
        K.CLASS_DECL,
        K.STRUCT_DECL,
        K.FUNCTION_TEMPLATE,
        K.CLASS_TEMPLATE,
        K.VAR_DECL,
        K.CXX_METHOD,
    )
    # file handle -> its real path when outside, else None: most references go to a few
    # headers, so a declaration's file is looked up by handle, its name read once per file
    outside_files: dict[int, str | None] = {}

    def is_outside(cursor: Any) -> str | None:
        if cursor is None:
            return None
        handle = file_handle(cursor)
        if handle is None:
            return None
        known = outside_files.get(handle, "")
        if known == "":
            resolved = real(file_name_of(handle))
            known = outside_files[handle] = resolved if resolved in outside else None
        return None if known is None or (cursor.kind == K.FUNCTION_DECL and _is_implicit_builtin(cursor)) else known

    system_files: dict[str, bool] = {}

    def in_system_header(cursor: Any) -> bool:
        location = cursor.location
        file = location.file
        if file is None:
            return False
        known = system_files.get(file.name)
        if known is None:
            known = system_files[file.name] = bool(location.is_in_system_header)
        return known

    # the file's and its non-preamble headers' own (top-level: a namespace, a macro use...)
    stack = [cursor for cursor in root.get_children() if not in_system_header(cursor)]
    for cursor in stack:
        found = is_outside(cursor.canonical) if cursor.kind in scopes else None
        if found is not None:
            return found  # reopens or redeclares what only the union declares
    while stack:
        cursor = stack.pop()
        kind = cursor.kind
        if kind in kinds:
            if kind == K.OVERLOADED_DECL_REF:
                for candidate in overloaded_decls(cursor):
                    found = is_outside(candidate)
                    if found is not None:
                        return found
            else:
                found = is_outside(cursor.referenced)
                if found is not None:
                    return found
        stack.extend(cursor.get_children())
    return None


def _errors_in(tu: Any, files: frozenset[str] | set[str], real: Any) -> bool:
    """Whether an error diagnostic, or a note attached to one, lies in one of `files`."""
    error = cindex().Diagnostic.Error
    for diagnostic in tu.diagnostics:
        if diagnostic.severity < error:
            continue
        for part in (diagnostic, *diagnostic.children):
            location = part.location.file
            if location is not None and real(location.name) in files:
                return True
    return False


def _unconditional_includes(data: bytes) -> list[str]:
    """The `#include <...>` spellings of `data` outside any `#if` block (a whole-file
    include guard excepted): a header included only under a condition (`#ifdef USE_ROCM`)
    does not belong in a preamble every file loads."""
    events = sorted(
        [(m.start(), m.group(1), b"") for m in _CONDITION_OPEN_RE.finditer(data)]
        + [(m.start(), b"include", m.group(1)) for m in _ANGLE_INCLUDE_RE.finditer(data)]
    )
    guard = next(iter(_GUARD_RE.finditer(data)), None)
    depth, found = 0, []
    guard_open = False
    for position, word, spelling in events:
        if word == b"include":
            if depth == int(guard_open):
                found.append(spelling.decode("utf-8", "replace").strip())
        elif word == b"endif":
            depth = max(0, depth - 1)
            guard_open = guard_open and depth > 0
        else:
            # the include guard's `#ifndef` is the file's first directive: its body is top level
            if guard is not None and position == guard.start() and not found and depth == 0:
                guard_open = True
            depth += 1
    return found


def _is_implicit_builtin(declaration: Any) -> bool:
    """clang declares a builtin function (`__syncthreads`, `__shfl_xor_sync`) where it is
    first used, so its declaration's extent is that use's name alone; every parse has it,
    whichever header happened to use it first in the union."""
    extent = declaration.extent
    start, end = extent.start, extent.end
    return start.line == end.line and end.column - start.column == len(declaration.spelling)


def _changes_macros_before_includes(data: bytes) -> bool:
    """A `#define`/`#undef` before the file's last `#include` (an include guard's own
    `#ifndef X` / `#define X` pair excepted): the PCH was built without that macro."""
    last_include = None
    for match in _ANY_INCLUDE_RE.finditer(data):
        last_include = match.start()
    if last_include is None:
        return False
    guards = {m.start(2) for m in _GUARD_RE.finditer(data, 0, last_include)}
    return any(change.start() not in guards for change in _MACRO_CHANGE_RE.finditer(data, 0, last_include))


def _first_sgl_include_dir(args: tuple[str, ...]) -> str | None:
    for flag, value in itertools.pairwise(args):
        if flag == "-I" and os.path.isdir(os.path.join(value, "sgl_kernel")):
            return value
    return None


def _scan_project(include_dir: str) -> _ProjectHeaders:
    """The headers under `<include_dir>/sgl_kernel/` and what they include from elsewhere."""
    base = Path(include_dir)
    files = sorted(p for p in (base / "sgl_kernel").rglob("*") if p.suffix in HEADER_SUFFIXES and p.is_file())
    project = tuple(p.relative_to(base).as_posix() for p in files)
    own = set(project)
    external: dict[str, None] = {}
    for path in files:
        for spelling in _unconditional_includes(read_bytes(path) or b""):
            if spelling not in own and not spelling.startswith("sgl_kernel/"):
                external.setdefault(spelling, None)
    realpaths = frozenset(os.path.realpath(p) for p in files)
    try:
        alone = [entry.name for entry in base.iterdir()] == [LIBRARY]
    except OSError:
        alone = False
    return _ProjectHeaders(include_dir, project, tuple(external), realpaths, alone)


def _culprits(tu: Any, headers: list[str], errors: list) -> set[str]:
    """Top-level headers whose include closure holds a file with an error."""
    ci = cindex()
    graph: dict[str, set[str]] = {}
    top: dict[str, str] = {}  # realpath of a top-level header -> its spelling
    main = os.path.realpath(tu.spelling)
    spelled = dict.fromkeys(headers)
    for cursor in tu.cursor.get_children():
        if cursor.kind != ci.CursorKind.INCLUSION_DIRECTIVE or cursor.location.file is None:
            continue
        included = _included_file(cursor)
        if included is None:
            continue
        source = os.path.realpath(cursor.location.file.name)
        target = os.path.realpath(included.name)
        graph.setdefault(source, set()).add(target)
        if source == main and cursor.spelling in spelled:
            top[target] = cursor.spelling
    bad = {os.path.realpath(e.path) for e in errors}
    if main in bad:
        return set()  # an error in the generated preamble itself: nothing to leave out
    culprits = set()
    for root, spelling in top.items():
        seen, stack = {root}, [root]
        while stack:
            for nxt in graph.get(stack.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        if seen & bad:
            culprits.add(spelling)
    return culprits


_QUOTED_RE = re.compile(r"'[^']*'")
_PCH_WORDS_RE = re.compile(r"\b(?:pch|precompiled|ast file|module file)\b", re.IGNORECASE)


def _is_pch_problem(diagnostic: Any, pch: Path) -> bool:
    """Whether a fatal error is about the PCH itself (stale, corrupt, built differently): its
    text names the PCH file or speaks of a precompiled one. Having no location is no sign:
    clang's "too many errors emitted" has none, and rejecting for it rebuilt the shared PCH
    for every file with over 50 errors. Quoted names are left out of the words
    (`'my_pch_file.h' file not found` is the file's own missing include)."""
    text = diagnostic.spelling
    return str(pch) in text or _PCH_WORDS_RE.search(_QUOTED_RE.sub("", text)) is not None


def _read_manifest(directory: Path) -> list[dict[str, Any]]:
    data = read_bytes(directory / "manifest.json")
    if not data:
        return []
    try:
        entries = json.loads(data)["entries"]
    except (ValueError, KeyError, TypeError):
        return []
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def _prune(directory: Path, keep: set[Any]) -> None:
    """Delete PCH files no manifest entry names, and temporary files an hour old."""
    now = time.time()
    try:
        children = list(directory.iterdir())
    except OSError:
        return
    for child in children:
        name = child.name
        try:
            if (
                (name.endswith(".pch") and name not in keep)
                or (name.endswith(".graph.json") and name[: -len(".graph.json")] + ".pch" not in keep)
                or (name.endswith(".tmp") and now - child.stat().st_mtime > 3600)
            ):
                child.unlink()
        except OSError:
            continue


def _touch(path: Path) -> None:
    try:
        os.utime(path)
    except OSError:
        pass


def evict(root: Path, keep: Path, max_bytes: int | None, max_age_days: float = RECIPE_UNUSED_DAYS) -> list[Path]:
    """Remove recipe directories from the store `root`: each one nobody used for
    `max_age_days` (old header lists, flags or libclang versions), then the least recently
    used -- by its manifest's time, which `_lookup` touches -- until the store holds at most
    `max_bytes` (None: no cap). Never `keep` (just built) nor a directory a running process
    holds (`PreambleCache._hold`): the store stays above the cap by what is in use. Returns
    the directories removed."""
    now = time.time()
    try:
        directories = [d for d in root.iterdir() if d.is_dir() and not d.is_symlink()]
    except OSError:
        return []
    found = sorted((_last_use(d, now), tree_size(d), d) for d in directories)
    total = sum(size for _, size, _ in found)
    removed = []
    for used, size, directory in found:  # least recently used first
        over = max_bytes is not None and total > max_bytes
        if directory == keep or not (over or now - used > max_age_days * 86400):
            continue
        if remove_unless_in_use(directory):
            total -= size
            removed.append(directory)
    return removed


def _last_use(directory: Path, default: float) -> float:
    for path in (directory / "manifest.json", directory):
        try:
            return path.stat().st_mtime
        except OSError:
            continue
    return default


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass
