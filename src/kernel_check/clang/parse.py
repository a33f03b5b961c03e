"""Parse stage: turn a CUDA/C++ source into a libclang translation unit.

Everything that knows about compiler flags, include discovery (where `sgl_kernel/` comes
from: `includes.py`, shared with the build and the harness) and the hermetic prelude lives
here. Two modes:

* ``system``: the real CUDA headers of an installation (``CUDA_HOME``, ``nvcc`` on PATH,
  ``/usr/local/cuda`` or pip's ``nvidia-cuda-*`` packages).
* ``hermetic``: no CUDA install; ``prelude/kernel_check_cuda_prelude.h`` is force-included
  and ``prelude/cuda_stubs`` answers ``#include <cuda_*.h>``.

Standard library: GCC's libstdc++ in both modes, because CUDA's own headers refuse
libc++ on x86 (``crt/host_defines.h``), and mixing the two (which the libclang-ng
bindings do by default by appending ``-isystem <wheel>/libcxx``) breaks ``<cmath>``.
The wheel's libc++ is used only in hermetic mode on a machine without libstdc++.

Speed: `parse_file` takes an optional preamble source (`clang/preamble.py`): the file is
then parsed against a precompiled header of the shared headers, with exactly the flags
`compile_args` gives, or plainly whenever that could change the result. The bindings are
imported on first use (`cindex()`), so a run answered from the result cache never loads
libclang, and tvm-ffi's include directory is found without importing `tvm_ffi` (which
imports torch).
"""

from __future__ import annotations

import atexit
import functools
import importlib.util
import itertools
import os
import re
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..includes import (
    cccl_include_dirs,
    dependency_include_dirs,
    forget_project_files,
    project_include_root,
    sgl_include_dirs,
)
from .deep_stack import use_calling_thread
from .device_pass import NEWEST_ARCH, ConditionalGroups, Range, arch_regions, pass_plan, subtract_ranges, takes_any
from .includers import content_file

if TYPE_CHECKING:
    import clang.cindex as ci
else:
    ci: Any = None  # clang.cindex, imported by `cindex()` on first use (keeps start-up light)


def cindex() -> Any:
    """The libclang bindings, imported once; a warm run that parses nothing never loads them."""
    global ci
    if ci is None:
        import clang.cindex as module

        # The bindings silently add the wheel's libc++ unless told otherwise; we choose ourselves.
        module.Config.libcxx_dir = None
        _speed_up_bindings(module)
        _decode_strings_leniently(module)
        from .tree import share_reads

        share_reads(module)  # each cursor read from libclang once, by every pass (tree.py)
        ci = module
    return ci


def _decode_strings_leniently(module: Any) -> None:
    """Decode every string libclang returns with U+FFFD for bytes that are not UTF-8.

    clang parses a file's raw bytes (`parse_file`), so a token, a name or a diagnostic that
    quotes the source can hold any byte; the bindings decode strictly and would raise
    `UnicodeDecodeError` from `spelling`. All their strings pass through this one property."""
    import ctypes

    def value(self: Any) -> str | None:
        raw = super(ctypes.c_char_p, self).value
        return None if raw is None else raw.decode("utf-8", errors="replace")

    module.c_interop_string.value = property(value)


_NULL_CURSOR_KIND = 70  # CXCursor_InvalidFile, the kind of clang_getNullCursor()


def _speed_up_bindings(module: Any) -> None:
    """Two hot paths of the bindings, answered in Python instead of a C call each.

    Every `Cursor` method first asks `is_null()`, which the bindings answer with a
    `clang_equalCursors` call against the null cursor; `kind` builds an enum member per
    call. The null cursor is {CXCursor_InvalidFile, data = {0, 0, 0}} and equality of
    non-declaration cursors is kind + data, so reading the struct gives the same answer.
    Applied only when the struct has the expected layout and the answer checks out; the
    model extraction spends about a third of its time in these two (measured)."""
    cursor = module.Cursor
    import ctypes

    expected = [("_kind_id", ctypes.c_int), ("xdata", ctypes.c_int), ("data", ctypes.c_void_p * 3)]
    layout = [(name, kind) for name, kind, *_ in getattr(cursor, "_fields_", [])]
    if len(layout) != 3 or any(a[0] != b[0] for a, b in zip(layout, expected)):
        return
    original_is_null = cursor.is_null
    original_kind = cursor.kind

    def is_null(self: Any) -> bool:
        return self._kind_id == _NULL_CURSOR_KIND and not self.data[0] and not self.data[1] and not self.data[2]

    try:
        module.conf.lib  # noqa: B018 - reading it loads libclang, which sets conf.null_cursor
        null = module.conf.null_cursor
        if not (is_null(null) and original_is_null(null)):
            return
    except Exception:  # an unexpected bindings build: keep its own answers
        return
    kinds: dict[int, Any] = {}
    from_id = module.CursorKind.from_id

    def kind(self: Any) -> Any:
        kind_id = self._kind_id
        found = kinds.get(kind_id)
        if found is None:
            if is_null(self):
                raise Exception("Tried calling method on a null-cursor.")
            found = from_id(kind_id)
            if kind_id != _NULL_CURSOR_KIND:
                kinds[kind_id] = found
        return found

    cursor.is_null = is_null
    cursor.kind = property(kind, doc=getattr(original_kind, "__doc__", None))
    cursor._kernel_check_originals = (original_is_null, original_kind)


PRELUDE_DIR = Path(__file__).resolve().parent.parent / "prelude"
PRELUDE_HEADER = PRELUDE_DIR / "kernel_check_cuda_prelude.h"
SYSTEM_PRELUDE_HEADER = PRELUDE_DIR / "kernel_check_system_prelude.h"  # nvcc's host min/max
CUDA_STUBS_DIR = PRELUDE_DIR / "cuda_stubs"
# headers a CUDA install may lack (cuRAND's), searched last (`-idirafter`) in both modes
SYSTEM_SHIMS_DIR = PRELUDE_DIR / "system_shims"

CPP_SUFFIXES = (".cuh", ".cu", ".h", ".hpp", ".cuhpp", ".cc", ".cpp", ".cxx", ".hh")

# CXTranslationUnit_Flags (stable C ABI values, spelled here so no import of the bindings
# is needed to name them): DetailedPreprocessingRecord | IncludeBriefCommentsInCodeCompletion.
PARSE_OPTIONS = 0x01 | 0x80
PARSE_INCOMPLETE = 0x02  # the TU is a prefix (a preamble to save), not a whole program
PARSE_FOR_SERIALIZATION = 0x10  # the TU will be saved with clang_saveTranslationUnit

_WARNINGS_OFF = (
    "-Wno-unknown-cuda-version",
    "-Wno-pragma-once-outside-header",
    "-Wno-unused-command-line-argument",
    "-Wno-cuda-compat",
    # a non-constant narrowed inside braces (`Desc{.bytes = n64}`): nvcc and its host compiler
    # warn and build the kernel, where clang stops and nothing of the file would be checked
    "-Wno-c++11-narrowing",
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
    # header folders of installed header-only dependencies (`includes.dependency_include_dirs`),
    # searched after everything else, as the JIT that builds the kernels finds them
    dependency_dirs: tuple[str, ...] = ()
    # CCCL folders of installed packages (`includes.cccl_include_dirs`), searched after the CUDA
    # headers and the hermetic stubs (`-idirafter`): only what neither of those has
    fallback_dirs: tuple[str, ...] = ()
    # (header, forced-include arguments): the context a header is parsed in when it fails
    # alone (`includers.py`); per file, so left out of the run's fingerprint (`context_args`
    # is part of the file's result key instead)
    include_context: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # (C++ file, -D/-I/-std= arguments): what the wrapper that builds the file passes to its
    # `load_jit` call (`jit_flags.py`); per file, so left out of the run's fingerprint too
    wrapper_flags: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def context_args(self, path: Path) -> tuple[str, ...]:
        """The forced includes of `path`'s includer context (empty: none)."""
        return _for_file(self.include_context, path)

    def wrapper_args(self, path: Path) -> tuple[str, ...]:
        """The -D/-I/-std= arguments `path`'s wrapper builds it with (empty: none known)."""
        return _for_file(self.wrapper_flags, path)


PER_FILE_SETTINGS = ("include_context", "wrapper_flags")  # in each file's arguments instead of a run's fingerprint


def _for_file(pairs: tuple[tuple[str, tuple[str, ...]], ...], path: Path) -> tuple[str, ...]:
    """`path`'s arguments in a per-file setting (empty: none)."""
    return _as_map(pairs).get(str(path.resolve()), ())


@functools.lru_cache(maxsize=4)
def _as_map(pairs: tuple[tuple[str, tuple[str, ...]], ...]) -> dict[str, tuple[str, ...]]:
    return dict(pairs)


@dataclass(frozen=True)
class ClangError:
    """One error diagnostic, located (file may be a header) and rendered."""

    path: str
    line: int
    column: int
    offset: int
    message: str
    in_main_file: bool
    fatal: bool = False  # clang stops reporting after a fatal error (missing #include, error limit)

    @property
    def missing_header(self) -> str | None:
        """The header an `#include` names that no include directory holds, for that error (also
        one that only the including file's folder holds, which angle brackets do not search:
        clang then goes on with it, not a fatal error)."""
        match = _MISSING_HEADER_RE.match(self.message)
        return match.group(1) if match and (self.fatal or match.group(2)) else None


_MISSING_HEADER_RE = re.compile(r"^'(.+)' file not found( with <angled> include; use \"quotes\" instead)?$")


@dataclass
class ParsedUnit:
    """A parsed file. `deps` are the headers clang entered for this file (as clang spells
    them); when `preamble` is set the file was parsed against that precompiled preamble and
    also depends on every header in `preamble.deps`. Declarations that come from the
    preamble are not children of `tu.cursor`: reach header declarations through references
    (`cursor.referenced`, types), never by scanning the translation unit."""

    path: str
    tu: ci.TranslationUnit
    args: list[str]
    errors: list[ClangError] = field(default_factory=list)
    deps: tuple[str, ...] = ()
    preamble: Any = None
    _root: Any = field(default=None, repr=False)
    device_passes: list[DevicePass] = field(default_factory=list)  # host units only

    @property
    def root(self) -> ci.Cursor:
        """`tu.cursor`, read once: every walk of the file starts from this object, so the
        children each one reads are kept for the next (`tree.py`)."""
        if self._root is None:
            self._root = self.tu.cursor
        return self._root


class PreambleSource(Protocol):
    """What `parse_file` asks for a faster parse (see `clang/preamble.py`)."""

    def parse(self, path: Path, source: str | bytes, args: list[str]) -> ParsedUnit | None: ...


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
        import nvidia
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
    """tvm-ffi and dlpack headers from the apache-tvm-ffi package (empty if missing).

    Located the way `tvm_ffi.libinfo` does (the wheel's `include/`, else a development
    checkout's `include/` and `3rdparty/dlpack/include`), without importing `tvm_ffi`:
    its `__init__` imports torch, which costs seconds per process."""
    try:
        spec = importlib.util.find_spec("tvm_ffi")
    except (ImportError, ValueError):
        return ()
    if spec is None or not spec.submodule_search_locations:
        return ()
    package = Path(next(iter(spec.submodule_search_locations)))
    dev = package / ".." / ".."
    found: list[str] = []
    for candidates, probe in (
        ((package / "include", dev / "include"), ""),
        ((package / "include", dev / "3rdparty" / "dlpack" / "include"), "dlpack"),
    ):
        for candidate in candidates:
            if (candidate / probe).is_dir():
                resolved = str(candidate.resolve())
                if resolved not in found:
                    found.append(resolved)
                break
    return tuple(found)


def include_dirs_for(path: Path, settings: ParseSettings) -> list[str]:
    """Search path for one file: the sgl_kernel directories (`includes.py`), then tvm-ffi's,
    then those its wrapper builds it with (`load_jit(extra_include_paths=...,
    extra_dependencies=...)`), then the installed header-only dependencies': a dependency the
    build names is found where it says, before a copy another package installs."""
    found = [*(str(d) for d in sgl_include_dirs(path, settings.include_dirs)), *tvm_ffi_include_dirs()]
    found += [d for d in _wrapper_include_dirs(settings.wrapper_args(path)) if d not in found]
    return [*found, *(d for d in settings.dependency_dirs if d not in found)]


def _wrapper_include_dirs(args: tuple[str, ...]) -> list[str]:
    """The folders of a wrapper's `-I DIR` arguments (`jit_flags.py` spells each as two)."""
    return [value for flag, value in itertools.pairwise(args) if flag == "-I"]


def _wrapper_defines(args: tuple[str, ...]) -> list[str]:
    """A wrapper's arguments but its `-I DIR` pairs (`include_dirs_for` places those): `-D`,
    `-std=` (after the run's: the last one counts), and the forced includes of a source
    `load_inline` builds (`engine.py` adds `jit_flags.inline_build_args` to them)."""
    kept: list[str] = []
    pairs = iter(args)
    for arg in pairs:
        if arg == "-I":
            next(pairs, None)  # its folder
        else:
            kept.append(arg)
    return kept


def _arch_defines(arch: str) -> list[str]:
    """The compile-time arch macro the JIT build injects, so `#if` blocks parse alike."""
    return [f"-DSGL_CUDA_ARCH={int(arch) * 10}"]


def compile_args(path: Path, settings: ParseSettings, device: bool = False) -> list[str]:
    """The full libclang argument list for one file (without the file itself); `device`: the
    device-side pass (`device_pass.py`) instead of the host side. Built once per file and
    kept (the result cache's key, the preamble's recipe, the pool's plan and the parse all
    ask): `forget_compile_args` drops what was kept, as each cache session starts."""
    return list(_compile_args(path, settings, device))


def forget_compile_args() -> None:
    """Look at the disk afresh (include directories found for a file may have changed)."""
    _compile_args.cache_clear()
    forget_project_files()


@functools.lru_cache(maxsize=4096)
def _compile_args(path: Path, settings: ParseSettings, device: bool) -> tuple[str, ...]:
    side = "--cuda-device-only" if device else "--cuda-host-only"
    args = [
        "-x",
        "cuda",
        f"-std={settings.std}",
        side,
        "-nocudalib",
        f"--cuda-gpu-arch=sm_{settings.arch}",
        "-ferror-limit=50",
        *_WARNINGS_OFF,
    ]
    if settings.mode == "system" and settings.cuda_home:
        args += system_cuda_args(Path(settings.cuda_home))
    else:
        args += [
            "-nocudainc",
            "--cuda-path=/kernel-check-hermetic-no-cuda",
            "-include",
            str(PRELUDE_HEADER),
            "-isystem",
            str(CUDA_STUBS_DIR),
            "-idirafter",
            str(SYSTEM_SHIMS_DIR),
        ]
        if not has_libstdcxx():
            args += ["-nostdinc++", "-isystem", str(_bundled_libcxx_dir())]
    for directory in include_dirs_for(path, settings):
        args += ["-I", directory]
    for directory in settings.fallback_dirs:
        args += ["-idirafter", directory]
    args += _arch_defines(settings.arch)
    args += [f"-D{d}" for d in settings.defines]
    args += _wrapper_defines(settings.wrapper_args(path))
    args += list(settings.extra_args)
    return tuple(args)


def system_cuda_args(root: Path) -> list[str]:
    """Flags that make clang use the CUDA headers under `root` (system mode).

    A toolkit (`root/bin` exists) goes to clang's driver as `--cuda-path`. Pip's header-only
    layout (`nvidia/cu13`, `nvidia/cuda_runtime`) has no `bin/`, which the driver does not
    accept as an installation: the same setup is then spelled out (clang's CUDA wrapper
    headers, the CUDA include directory, the force-included runtime wrapper)."""
    version = cuda_header_version(root)
    if (root / "bin").is_dir():
        args = [f"--cuda-path={root}"]
    else:
        args = [
            "-nocudainc",
            f"--cuda-path={root}",
            "-isystem",
            str(_clang_resource_include() / "cuda_wrappers"),
            "-isystem",
            str(root / "include"),
            "-include",
            "__clang_cuda_runtime_wrapper.h",
        ]
        if version:  # what the driver tells clang for an installation: `<<<>>>` lowers by version
            args += ["-Xclang", f"-target-sdk-version={version}"]
    if version:  # nvcc's own version macros, which clang does not define: CUTLASS declares its
        # driver entry points (`cutlass::call_cuTensorMapEncodeTiled`) only under them
        major, minor = version.split(".")
        args += [f"-D__CUDACC_VER_MAJOR__={major}", f"-D__CUDACC_VER_MINOR__={minor}", "-D__CUDACC_VER_BUILD__=0"]
    # cooperative groups declare `this_cluster()` only for nvcc or a compiler that has the
    # cluster intrinsics, which clang has (sm_90+); the host-only pass would otherwise miss it
    args += [
        "-idirafter",
        str(SYSTEM_SHIMS_DIR),
        "-D_CG_CLUSTER_INTRINSICS_AVAILABLE",
        "-include",
        str(SYSTEM_PRELUDE_HEADER),
    ]
    for directory in cuda_companion_include_dirs(root):
        args += ["-isystem", directory]
    return args


def cuda_companion_include_dirs(root: Path) -> list[str]:
    """Header directories that belong to the CUDA install at `root` but that clang does not
    search by itself: CCCL (`cuda/std/...`, `cub/`, `thrust/`), which CUDA 13 moved to
    `include/cccl` and which its own headers (cooperative groups) include; and, for pip's
    split packages, the other `nvidia/*/include` directories (`cuda_cccl`, `cuda_nvcc`'s
    `crt/`, ...) next to `root`."""
    includes = [root / "include"]
    if root.parent.name == "nvidia":
        includes += sorted(p / "include" for p in root.parent.iterdir() if p != root and (p / "include").is_dir())
    found = []
    for include in includes:
        for candidate in (include / "cccl", include):
            if candidate.is_dir() and candidate != root / "include":
                found.append(str(candidate))
    return found


def cuda_header_version(root: Path) -> str | None:
    """`major.minor` from `CUDA_VERSION` in `root/include/cuda.h`, or None."""
    try:
        header = (root / "include" / "cuda.h").read_text(errors="replace")
    except OSError:
        return None
    match = re.search(r"^#define\s+CUDA_VERSION\s+(\d+)", header, re.M)
    if match is None:
        return None
    version = int(match.group(1))
    return f"{version // 1000}.{version % 1000 // 10}"


def _clang_resource_include() -> Path:
    return _clang_package_dir() / "native" / "resource" / "include"


def _bundled_libcxx_dir() -> Path:
    return _clang_package_dir() / "native" / "libcxx"


@functools.lru_cache(maxsize=1)
def _clang_package_dir() -> Path:
    spec = importlib.util.find_spec("clang")
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations))).resolve()
    return Path(cindex().__file__).resolve().parent


@functools.lru_cache(maxsize=1)
def libclang_identity() -> str:
    """Which libclang parses, without loading it: the bindings' and the library's path,
    size and modification time (a cache key part; `libclang_version` adds the version)."""
    package = _clang_package_dir()
    parts = []
    for candidate in (package / "cindex.py", *sorted((package / "native").glob("libclang*"))):
        try:
            st = candidate.stat()
        except OSError:
            continue
        parts.append(f"{candidate}:{st.st_size}:{st.st_mtime_ns}")
    return ";".join(parts) or str(package)


@functools.lru_cache(maxsize=1)
def libclang_version() -> str:
    """`clang_getClangVersion()` of the loaded library, plus `libclang_identity()`."""
    module = cindex()
    try:
        function = module.conf.lib.clang_getClangVersion
        function.argtypes = []
        function.restype = module._CXString
        version = module._CXString.from_result(function())
    except Exception:  # an odd bindings build: the identity alone still keys the cache
        version = "unknown"
    return f"{version} ({libclang_identity()})"


def resolve_settings(
    mode: str, include_dirs: tuple[str, ...] = (), defines: tuple[str, ...] = (), arch: str = "90"
) -> ParseSettings:
    """Pick the mode: "auto" means system when a CUDA install is found, else hermetic."""
    cuda_home = find_cuda_home() if mode in ("auto", "system") else None
    if mode == "system" and cuda_home is None:
        raise ParseConfigError("system mode needs a CUDA install: set CUDA_HOME or put nvcc on PATH")
    effective = "system" if cuda_home else "hermetic"
    dependencies = tuple(directory for _, directory in dependency_include_dirs())
    cccl = tuple(directory for _, directory in cccl_include_dirs())
    return ParseSettings(
        effective, cuda_home, include_dirs, defines, arch, dependency_dirs=dependencies, fallback_dirs=cccl
    )


class ParseConfigError(Exception):
    """The parse settings cannot work on this machine (reported as a usage error)."""


_index: ci.Index | None = None


def get_index() -> ci.Index:
    """One index per process. `excludeDecls`: declarations loaded from a precompiled
    preamble are not visited as children of the translation unit (they are not the
    file's, and deserializing tens of thousands of them would cost more than the parse)."""
    global _index
    if _index is None:
        use_calling_thread()  # parses run on engine's deep-stack thread (deep_stack.py)
        _index = cindex().Index.create(excludeDecls=True)
        atexit.register(_release_index)
    return _index


def _release_index() -> None:
    """Free the index while the bindings still work: freed during interpreter shutdown, after
    their module was torn down, its `__del__` printed a traceback on the way out."""
    global _index
    _index = None


def parse_file(
    path: Path, source: str | bytes, settings: ParseSettings, preamble: PreambleSource | None = None
) -> ParsedUnit:
    """Parse `source` as the contents of `path` (unsaved, so the bytes checked are the bytes read).

    Give the file's bytes as read: clang's offsets and columns are byte positions in what it
    parsed, so they index the file only when clang parsed exactly its bytes (a `str` is
    encoded as UTF-8; decoding a non-UTF-8 file first would shift every later offset).
    With `preamble`, the file is parsed against a precompiled preamble when one applies;
    any doubt (no preamble, a stale or corrupt one, a fatal error) means a plain parse."""
    args = compile_args(path, settings)
    unit = preamble.parse(path, source, args) if preamble is not None else None
    if unit is None:
        unit = parse_plain(str(path), source, args)
    context = settings.context_args(path)
    if unit.errors and context:  # a header that fails alone: as its includer sees it (includers.py)
        in_context = parse_plain(str(path), source, [*args, *context])  # plainly: no PCH build per context
        if _badness(in_context) < _badness(unit):
            settings = replace(settings, extra_args=(*settings.extra_args, *context))
            unit, preamble, args = in_context, None, [*args, *context]
    for _ in range(_MAX_INCLUDE_ROOTS):  # a header the project holds outside the search path: its folder, last
        missing = next((e.missing_header for e in unit.errors if e.missing_header), None)
        root = project_include_root(path, missing) if missing else None
        if root is None:
            break
        rooted = parse_plain(str(path), source, [*args, "-idirafter", str(root)])  # plainly, as a context
        if any(e.missing_header == missing for e in rooted.errors):
            break  # kept once that header is found, as the build finds it, whatever comes next
        settings = replace(settings, extra_args=(*settings.extra_args, "-idirafter", str(root)))
        unit, preamble, args = rooted, None, [*args, "-idirafter", str(root)]
    renames = own_definition_args(unit, source.encode() if isinstance(source, str) else source)
    if renames:  # a file defining names of the headers clang's CUDA setup adds: its own, renamed
        renamed = parse_plain(str(path), source, [*args, *renames])  # plainly, as a context
        if _badness(renamed) < _badness(unit):
            settings = replace(settings, extra_args=(*settings.extra_args, *renames))
            unit, preamble = renamed, None
    if settings.arch != NEWEST_ARCH and unit.errors and not any(e.fatal or e.missing_header for e in unit.errors):
        # a kernel written for a newer GPU than the configured one (a 32-byte vector that a
        # `static_assert` allows from sm_100 on) fails there and builds where its JIT targets
        newer = replace(settings, arch=NEWEST_ARCH)
        on_newer = parse_plain(str(path), source, compile_args(path, newer))
        if _badness(on_newer) < _badness(unit):
            settings, unit, preamble = newer, on_newer, None
    add_device_passes(unit, path, source, settings, preamble)  # code the host pass skips under __CUDA_ARCH__
    return unit


# Code built without the CUDA headers' fixed-width and driver types in scope (NVRTC-style
# sources, or sources nvcc compiles on their own: nvcc's implicit `cuda_runtime.h` brings neither
# <stdint.h> nor cuda.h) may define them itself: `typedef unsigned long long uint64_t;`, its own
# `CUtensorMap`. clang's CUDA setup has already defined them (its runtime wrapper includes
# cuda.h, which includes <stdint.h>; so does the hermetic prelude), and the two clash.
_REDEFINED_TYPEDEF = "typedef redefinition with different types"
_IDENTIFIER = re.compile(rb"[A-Za-z_]\w*")


def own_definition_args(unit: ParsedUnit, data: bytes) -> tuple[str, ...]:
    """A forced include (after the CUDA setup's) that renames each name `unit`'s file defines
    over a definition of that setup (a system header or the prelude), so the file's own
    definition and its uses go together; empty when the file redefines no such name."""
    names: dict[str, None] = {}
    for diagnostic in unit.tu.diagnostics:
        location = diagnostic.location
        if not diagnostic.spelling.startswith(_REDEFINED_TYPEDEF) or location.file is None:
            continue
        previous = [note.location for note in diagnostic.children if note.location.file is not None]
        if location.file.name != unit.path or not previous or not all(map(_in_cuda_setup, previous)):
            continue
        name = _IDENTIFIER.match(data, location.offset)
        if name is not None:
            names[name.group().decode()] = None
    text = "".join(f"#define {name} kernel_check_own_{name}\n" for name in names).encode()
    forced = content_file(text) if text else None
    return ("-include", forced) if forced is not None else ()


def _in_cuda_setup(location: Any) -> bool:
    """Whether `location` is in a header of the compiler setup: a system header (the CUDA
    install, the hermetic stubs, the C library) or the prelude."""
    return bool(location.is_in_system_header) or Path(location.file.name).is_relative_to(PRELUDE_DIR)


_MAX_INCLUDE_ROOTS = 8  # project folders tried as include roots, one per missing header


def _badness(unit: ParsedUnit) -> tuple[bool, int]:
    """How far a parse is from clean: a fatal error (clang stopped) first, then the count."""
    return any(e.fatal for e in unit.errors), len(unit.errors)


def parse_plain(name: str, source: str | bytes, args: list[str]) -> ParsedUnit:
    tu = get_index().parse(name, args=args, unsaved_files=[(name, source)], options=PARSE_OPTIONS)
    return ParsedUnit(name, tu, args, unit_errors(tu, name), entered_files(tu))


# -- device passes: which code they parse is device_pass.py's reading of the file's `#if` groups --
@dataclass
class DevicePass:
    """One device-mode parse of the checked file and what it adds to the host pass."""

    unit: ParsedUnit
    arch: str
    regions: tuple[Range, ...]  # parsed here, skipped by the host pass and earlier device passes


def add_device_passes(
    host: ParsedUnit, path: Path, source: str | bytes, settings: ParseSettings, preamble: PreambleSource | None = None
) -> None:
    """Parse `host`'s file in device mode where its host pass skipped `__CUDA_ARCH__` code;
    the passes go to `host.device_passes` and their headers to `host.deps`. With `preamble`,
    a pass is parsed against a device-mode preamble where one applies (`parse_file`'s rules)."""
    from .capi import skipped_spans  # capi imports the bindings, which this module loads on first use

    if any(e.fatal or not e.in_main_file for e in host.errors):
        return  # the file is reported as unparsable; nothing would be checked
    data = source.encode() if isinstance(source, str) else source
    groups = ConditionalGroups(data)
    pending = arch_regions(skipped_spans(host.tu, host.path), groups, [(0, len(data) + 1)])
    for arch, unknown_counts in pass_plan(settings.arch):
        states = [groups.active(line, arch) for _, _, line in pending]
        if not takes_any(states, unknown_counts):
            continue  # no skipped region is taken for this architecture: spare the parse
        unit = _parse_device(path, source, replace(settings, arch=arch), preamble)
        if unit is None:
            continue
        skipped = skipped_spans(unit.tu, unit.path)
        regions = subtract_ranges([(start, end) for start, end, _ in pending], [(s.start, s.end) for s in skipped])
        if regions:
            host.device_passes.append(DevicePass(unit, arch, tuple(regions)))
            host.deps = tuple(dict.fromkeys([*host.deps, *unit.deps]))
        pending = arch_regions(skipped, groups, [(start, end) for start, end, _ in pending])


def device_args(path: Path, data: bytes, settings: ParseSettings) -> list[list[str]]:
    """The argument lists of the device passes `path` may get, read from its text alone (its
    `#if` groups, before any parse): what a preamble source resolves ahead of the parse
    (`PreambleCache.prefetch`, the pool's builds). A guess that errs either way costs time
    only: the pass itself asks the preamble source again."""
    groups = ConditionalGroups(data)
    lines = [line for line in groups.branches if groups.under_cuda_arch(line)]
    found = []
    for arch, unknown_counts in pass_plan(settings.arch):
        states = [groups.active(line, arch) for line in lines]
        if takes_any(states, unknown_counts):
            found.append(compile_args(path, replace(settings, arch=arch), device=True))
        lines = [line for line, state in zip(lines, states) if state is not True]  # left to the next pass
    return found


def _parse_device(
    path: Path, source: str | bytes, settings: ParseSettings, preamble: PreambleSource | None
) -> ParsedUnit | None:
    args = compile_args(path, settings, device=True)
    unit = preamble.parse(path, source, args) if preamble is not None else None
    if unit is not None:
        return unit
    try:
        return parse_plain(str(path), source, args)
    except cindex().TranslationUnitLoadError:
        return None


def entered_files(tu: ci.TranslationUnit) -> tuple[str, ...]:
    """Every header clang read for `tu` (forced includes too), as clang spells the path."""
    seen: dict[str, None] = {}
    for inclusion in tu.get_includes():
        seen.setdefault(inclusion.include.name, None)
    return tuple(seen)


def unit_errors(tu: ci.TranslationUnit, main_path: str) -> list[ClangError]:
    """`tu`'s errors (one without a place is pinned to `main_path`)."""
    errors = []
    for diag in tu.diagnostics:
        if diag.severity < cindex().Diagnostic.Error or _relaxed_constexpr_call(tu, diag) or _trailing_comma(diag):
            continue
        loc = diag.location
        file_name = loc.file.name if loc.file else main_path
        # Some errors have no location (clang's "too many errors emitted"): pin them to 1:1.
        line, column = (loc.line, loc.column) if loc.line > 0 else (1, 1)
        errors.append(
            ClangError(
                file_name,
                line,
                column,
                loc.offset,
                diag.spelling,
                bool(loc.file) and file_name == main_path,
                diag.severity >= cindex().Diagnostic.Fatal,
            )
        )
    return errors


def _trailing_comma(diag: Any) -> bool:
    """A template argument list ending in a comma (`List<A, B,>`).

    nvcc's front end accepts it, and headers built only with nvcc rely on that (cuBLASDx's
    instruction lists in nvidia-mathdx); clang expects one more argument at the `>`. The
    error is not reported (clang drops the argument list it could not finish, as for any
    error it recovers from)."""
    location = diag.location
    if diag.spelling != "expected expression" or location.file is None:
        return False
    try:
        with open(location.file.name, "rb") as handle:
            text = handle.read(location.offset + 1)
    except OSError:
        return False
    return text[location.offset :] == b">" and text[: location.offset].rstrip().endswith(b",")


_WRONG_SIDE_NOTE = "call to __device__ function from __host__ function"


def _relaxed_constexpr_call(tu: ci.TranslationUnit, diag: Any) -> bool:
    """A host call whose only candidates are `constexpr __device__` functions.

    nvcc with `--expt-relaxed-constexpr` (which JIT kernel builds pass) accepts it; clang has
    no such flag and finds no viable function. The error is not reported (the call stays
    untyped in the AST, like any call clang could not resolve)."""
    if not diag.spelling.startswith("no matching function for call to"):
        return False
    notes = [note for note in diag.children if "not viable" in note.spelling]
    return bool(notes) and all(
        _WRONG_SIDE_NOTE in note.spelling and _declared_constexpr(tu, note.location) for note in notes
    )


def _declared_constexpr(tu: ci.TranslationUnit, location: Any) -> bool:
    """Whether the function declared at `location` (its name) says `constexpr` before it.

    Read from the file's text: the declaration often starts with a macro (`SGL_DEVICE`),
    whose range libclang does not tokenize."""
    declaration = cindex().Cursor.from_location(tu, location)
    start = declaration.extent.start
    if start.file is None or start.file.name != location.file.name or start.offset > location.offset:
        return False
    try:
        with open(location.file.name, "rb") as handle:
            text = handle.read(location.offset)[start.offset :]
    except OSError:
        return False
    return re.search(rb"\bconstexpr\b", text) is not None
