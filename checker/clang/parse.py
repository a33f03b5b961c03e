"""Parse stage: turn a CUDA/C++ source into a libclang translation unit.

Everything that knows about compiler flags, include discovery and the hermetic prelude
lives here. Two modes:

* ``system``: the real CUDA headers of an installation (``CUDA_HOME``, ``nvcc`` on PATH,
  ``/usr/local/cuda`` or pip's ``nvidia-cuda-*`` packages).
* ``hermetic``: no CUDA install; ``prelude/kernel_check_cuda_prelude.h`` is force-included
  and ``prelude/cuda_stubs`` answers ``#include <cuda_*.h>``.

Standard library: GCC's libstdc++ in both modes, because CUDA's own headers refuse
libc++ on x86 (``crt/host_defines.h``), and mixing the two (which the libclang-ng
bindings do by default by appending ``-isystem <wheel>/libcxx``) breaks ``<cmath>``.
The wheel's libc++ is used only in hermetic mode on a machine without libstdc++.
"""

from __future__ import annotations

import functools
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import clang.cindex as ci

# The bindings silently add the wheel's libc++ unless told otherwise; we choose ourselves.
ci.Config.libcxx_dir = None

PRELUDE_DIR = Path(__file__).resolve().parent.parent / "prelude"
PRELUDE_HEADER = PRELUDE_DIR / "kernel_check_cuda_prelude.h"
CUDA_STUBS_DIR = PRELUDE_DIR / "cuda_stubs"
SYSTEM_SHIMS_DIR = PRELUDE_DIR / "system_shims"
BUNDLED_INCLUDE_DIR = Path(__file__).resolve().parents[2] / "include"

CPP_SUFFIXES = (".cuh", ".cu", ".h", ".hpp", ".cuhpp", ".cc", ".cpp", ".cxx", ".hh")

PARSE_OPTIONS = (
    ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD
    | ci.TranslationUnit.PARSE_INCLUDE_BRIEF_COMMENTS_IN_CODE_COMPLETION
)

_WARNINGS_OFF = (
    "-Wno-unknown-cuda-version",
    "-Wno-pragma-once-outside-header",
    "-Wno-unused-command-line-argument",
    "-Wno-cuda-compat",
)


@dataclass(frozen=True)
class ParseSettings:
    """The knobs that decide a translation unit's flags (all part of the cache key)."""

    mode: str = "hermetic"  # "hermetic" or "system"
    cuda_home: str | None = None
    include_dirs: tuple[str, ...] = ()
    defines: tuple[str, ...] = ()
    arch: str = "90"
    std: str = "c++20"
    extra_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClangError:
    """One error diagnostic, located (file may be a header) and rendered."""

    path: str
    line: int
    column: int
    offset: int
    message: str
    in_main_file: bool


@dataclass
class ParsedUnit:
    path: str
    tu: ci.TranslationUnit
    args: list[str]
    errors: list[ClangError] = field(default_factory=list)


def find_cuda_home() -> str | None:
    """The CUDA installation whose headers the system mode uses, or None."""
    candidates: list[Path] = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            candidates.append(Path(os.environ[var]))
    nvcc = shutil.which("nvcc")
    if nvcc:
        candidates.append(Path(nvcc).resolve().parent.parent)
    candidates.append(Path("/usr/local/cuda"))
    candidates.extend(_pip_cuda_roots())
    for root in candidates:
        if (root / "include" / "cuda_runtime.h").is_file():
            return str(root)
    return None


def _pip_cuda_roots() -> list[Path]:
    """Roots of pip's nvidia-cuda-* wheels (site-packages/nvidia/cuda_runtime...)."""
    try:
        import nvidia  # type: ignore[import-not-found]
    except ImportError:
        return []
    roots = []
    for base in getattr(nvidia, "__path__", []):
        for sub in ("cu13", "cuda_runtime", "cuda_nvcc"):
            roots.append(Path(base) / sub)
    return roots


@functools.lru_cache(maxsize=1)
def has_libstdcxx() -> bool:
    """Whether GCC's C++ headers exist, which clang's driver then finds by itself."""
    return any(Path(p).is_dir() for p in ("/usr/include/c++", "/usr/local/include/c++")) or any(
        Path("/usr/lib/gcc").glob("*/*/include/c++")
    )


@functools.lru_cache(maxsize=1)
def tvm_ffi_include_dirs() -> tuple[str, ...]:
    """tvm-ffi and dlpack headers from the apache-tvm-ffi package (empty if missing)."""
    try:
        from tvm_ffi import libinfo
    except ImportError:
        return ()
    dirs = []
    for finder in ("find_include_path", "find_dlpack_include_path"):
        try:
            dirs.append(str(getattr(libinfo, finder)()))
        except (AttributeError, RuntimeError, OSError):
            continue
    return tuple(dirs)


def find_sgl_include_dir(path: Path) -> Path | None:
    """The nearest ancestor `include/` directory that holds `sgl_kernel/`, walking up."""
    for ancestor in path.resolve().parents:
        candidate = ancestor / "include"
        if (candidate / "sgl_kernel").is_dir():
            return candidate
        if ancestor.name == "sgl_kernel" and ancestor.parent.name == "include":
            return ancestor.parent
    return None


def include_dirs_for(path: Path, settings: ParseSettings) -> list[str]:
    """Search path for one file: discovered sgl_kernel dir, configured dirs, bundled copy."""
    dirs: list[str] = []
    discovered = find_sgl_include_dir(path)
    if discovered is not None:
        dirs.append(str(discovered))
    dirs.extend(settings.include_dirs)
    if discovered is None and not settings.include_dirs and BUNDLED_INCLUDE_DIR.is_dir():
        dirs.append(str(BUNDLED_INCLUDE_DIR))
    dirs.extend(tvm_ffi_include_dirs())
    return dirs


def _arch_defines(arch: str) -> list[str]:
    """The compile-time arch macro the JIT build injects, so `#if` blocks parse alike."""
    return [f"-DSGL_CUDA_ARCH={int(arch) * 10}"]


def compile_args(path: Path, settings: ParseSettings) -> list[str]:
    """The full libclang argument list for one file (without the file itself)."""
    args = ["-x", "cuda", f"-std={settings.std}", "--cuda-host-only", "-nocudalib",
            f"--cuda-gpu-arch=sm_{settings.arch}", "-ferror-limit=50", *_WARNINGS_OFF]
    if settings.mode == "system" and settings.cuda_home:
        args += [f"--cuda-path={settings.cuda_home}", "-idirafter", str(SYSTEM_SHIMS_DIR)]
    else:
        args += ["-nocudainc", "--cuda-path=/kernel-check-hermetic-no-cuda",
                 "-include", str(PRELUDE_HEADER), "-isystem", str(CUDA_STUBS_DIR)]
        if not has_libstdcxx():
            args += ["-nostdinc++", "-isystem", str(_bundled_libcxx_dir())]
    for directory in include_dirs_for(path, settings):
        args += ["-I", directory]
    args += _arch_defines(settings.arch)
    args += [f"-D{d}" for d in settings.defines]
    args += list(settings.extra_args)
    return args


def _bundled_libcxx_dir() -> Path:
    return Path(ci.__file__).resolve().parent / "native" / "libcxx"


def resolve_settings(mode: str, include_dirs: tuple[str, ...] = (), defines: tuple[str, ...] = (),
                     arch: str = "90") -> ParseSettings:
    """Pick the mode: "auto" means system when a CUDA install is found, else hermetic."""
    cuda_home = find_cuda_home() if mode in ("auto", "system") else None
    if mode == "system" and cuda_home is None:
        raise ParseConfigError("system mode needs a CUDA install: set CUDA_HOME or put nvcc on PATH")
    effective = "system" if cuda_home else "hermetic"
    return ParseSettings(effective, cuda_home, include_dirs, defines, arch)


class ParseConfigError(Exception):
    """The parse settings cannot work on this machine (reported as a usage error)."""


_index: ci.Index | None = None


def _get_index() -> ci.Index:
    global _index
    if _index is None:
        _index = ci.Index.create()
    return _index


def parse_file(path: Path, text: str, settings: ParseSettings) -> ParsedUnit:
    """Parse `text` as the contents of `path` (unsaved, so the bytes checked are the bytes read)."""
    args = compile_args(path, settings)
    name = str(path)
    tu = _get_index().parse(name, args=args, unsaved_files=[(name, text)], options=PARSE_OPTIONS)
    return ParsedUnit(name, tu, args, _errors(tu, name))


def _errors(tu: ci.TranslationUnit, main_path: str) -> list[ClangError]:
    errors = []
    for diag in tu.diagnostics:
        if diag.severity < ci.Diagnostic.Error:
            continue
        loc = diag.location
        file_name = loc.file.name if loc.file else main_path
        errors.append(ClangError(file_name, loc.line, loc.column, loc.offset, diag.spelling,
                                 file_name == main_path))
    return errors
