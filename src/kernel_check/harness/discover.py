"""Find kernel specs: ``*_spec.py`` files under the given paths, loaded by file path."""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
import importlib.util
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from .spec import KernelSpec, SpecError

SPEC_GLOB = "*_spec.py"
SKIPPED_DIRS = {"__pycache__", ".git", ".kernel-check-cache", "build", "dist"}


@dataclass
class Discovery:
    """The specs found, in path order, and one message per file that could not be used."""

    specs: list[KernelSpec] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def spec_files(paths: Iterable[str | Path]) -> list[Path]:
    """Spec files named directly or found below the given directories, sorted, deduplicated.
    A csrc wrapper named directly is not one: `kernel-check build` reads its manifest
    without importing it (a wrapper imports torch, which only running a kernel needs)."""
    found: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            if fnmatch.fnmatch(path.name, SPEC_GLOB) or not _is_wrapper(path):
                found.add(path.resolve())
        elif path.is_dir():
            found.update(
                p.resolve()
                for p in path.rglob(SPEC_GLOB)
                if not SKIPPED_DIRS.intersection(p.relative_to(path).parts[:-1])
            )
    return sorted(found)


def _is_wrapper(path: Path) -> bool:
    # imported here: the pytest plugin and every child import this module, and need no build
    from ..build import read_manifest

    return read_manifest(path) is not None


def load_module(path: Path) -> ModuleType:
    """Import a spec file under a name unique to its path (two dirs may share a file name)."""
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    name = f"kernel_check_spec_{path.stem}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    loader_spec = importlib.util.spec_from_file_location(name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[name] = module
    # Importing a spec must not leave a __pycache__ in the user's tree.
    writes_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        loader_spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    finally:
        sys.dont_write_bytecode = writes_bytecode
    return module


def specs_in_module(module: ModuleType, path: Path) -> list[KernelSpec]:
    """``SPEC`` and the items of ``SPECS``, each stamped with the file that defined it."""
    declared: list[object] = []
    if hasattr(module, "SPEC"):
        declared.append(module.SPEC)
    declared.extend(getattr(module, "SPECS", ()))
    specs = []
    for item in declared:
        if not isinstance(item, KernelSpec):
            raise SpecError(f"{path}: SPEC/SPECS must hold KernelSpec objects, got {type(item).__name__}")
        specs.append(dataclasses.replace(item, spec_path=str(path)))
    if not specs:
        raise SpecError(f"{path}: defines neither SPEC nor SPECS")
    return specs


def discover(paths: Sequence[str | Path]) -> Discovery:
    """Load and validate every spec under ``paths``; a broken file is an error, not a crash."""
    result = Discovery()
    seen: dict[str, Path] = {}
    for path in spec_files(paths):
        try:
            specs = specs_in_module(load_module(path), path)
            for spec in specs:
                spec.validate()
        except Exception as exc:  # a spec file is user code: report whatever it raised
            result.errors.append(f"{path}: {type(exc).__name__}: {exc}")
            continue
        for spec in specs:
            if spec.name in seen:
                result.errors.append(f"{path}: spec name {spec.name!r} is also used in {seen[spec.name]}")
                continue
            seen[spec.name] = path
            result.specs.append(spec)
    return result


def find_spec(path: str | Path, name: str) -> KernelSpec:
    """The spec called ``name`` in one file (what a child process reloads)."""
    path = Path(path)
    for spec in specs_in_module(load_module(path), path):
        if spec.name == name:
            return spec
    raise SpecError(f"{path}: no spec named {name!r}")
