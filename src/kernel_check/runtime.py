"""The JIT build helper that kernel wrappers import: compile ``.cuh`` kernels into tvm-ffi modules.

This is kernel-check's runtime module, what a user's code imports at run time; the checker
imports it (``build.py``, the harness), never the other way round: it imports nothing of
the checker but ``includes.py``, the header search path every stage shares. (Its former
name ``kernel_check.jit`` re-exports the same API for wrappers written against it.)

Public API (import name ``kernel_check.runtime``)::

    cache_once(fn)                      memoize a module factory (torch.compile friendly)
    make_cpp_args(*args) -> CppArgs     Python values -> C++ template argument spellings
    is_arch_support_pdl() -> bool       a CUDA device of compute capability >= 9.0 is present
    default_arch() -> str               TVM_FFI_CUDA_ARCH_LIST, else the local GPU, else "9.0"
    build_jit(*marker, cuda_files, cuda_wrappers, ...) -> BuildResult   compile only
    load_jit(*marker, **same_kwargs) -> tvm_ffi.Module                   build + load

A build generates one translation unit that includes every file of ``cuda_files``
(relative to ``csrc_root``; by default relative to the calling module's folder or its
nearest ancestor holding the first file, never to kernel-check's own files) and exports each
``(export_name, "cpp_symbol<args>")`` pair of ``cuda_wrappers`` with
``TVM_FFI_DLL_EXPORT_TYPED_FUNC`` inside ``namespace sglang``. It is compiled
through ``tvm_ffi.cpp.build`` into our own cache directory, keyed by a sha256
over the generated source, the contents of every file it includes (followed
recursively through our include directories), the flags, the arch, the nvcc
version and the tvm-ffi version. ``#include <sgl_kernel/...>`` resolves through
``kernel_check.includes.sgl_include_dirs`` (the kernel's repository's ``include/``, then
``extra_include_paths``, then the bundled header library), as in the static check.

Environment:

- ``KERNEL_CHECK_JIT_CACHE``: cache directory (default ``~/.cache/kernel-check/jit``).
- ``TVM_FFI_CUDA_ARCH_LIST``: target arch (e.g. ``9.0``); compile-only builds need no GPU.
- ``KERNEL_CHECK_LINEINFO=1``: build with ``-lineinfo`` (the sanitizer sets it).
- ``KERNEL_CHECK_RESOURCE_USAGE=1``: log per-kernel registers/spills/smem at INFO.
- ``KERNEL_CHECK_JIT_FORCE_REBUILD=1``: ignore cached builds.

Per-kernel resource usage is always parsed from ``-Xptxas -v`` and stored with
the cached build, so a cache hit reports it too.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, ParamSpec, Protocol, TypeVar, cast

from .includes import bundled_include_dir, find_include, sgl_include_dirs

logger = logging.getLogger(__name__)

__all__ = [
    "BuildError",
    "BuildResult",
    "CppArgs",
    "KernelResources",
    "build_jit",
    "cache_once",
    "compute_key",
    "default_arch",
    "default_include_dir",
    "find_csrc_root",
    "is_arch_support_pdl",
    "load_jit",
    "make_cpp_args",
    "parse_resource_usage",
]

_KEY_VERSION = "kernel-check-jit-1"
_INCLUDE_PATH_VARIABLES = ("CPATH", "CPLUS_INCLUDE_PATH", "C_INCLUDE_PATH")
_DEFAULT_ARCH = "9.0"


def default_include_dir() -> Path:
    """The bundled header library root (the folder holding ``sgl_kernel/``)."""
    return bundled_include_dir()


def find_csrc_root(start: Path, first_file: str) -> Path | None:
    """``start`` or its nearest ancestor holding ``first_file``: the folder a wrapper's relative
    ``cuda_files`` are relative to (``kernel-check build`` reads manifests the same way)."""
    for directory in (start, *start.parents):
        if (directory / first_file).is_file():
            return directory
    return None


def _caller_dir() -> Path:
    """The folder of the first module outside this one on the call stack (the wrapper that
    called ``load_jit``); the working directory when that is not a file (a REPL)."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
    caller = Path(frame.f_code.co_filename) if frame is not None else None
    return caller.resolve().parent if caller is not None and caller.is_file() else Path.cwd()


def _calling_csrc_root(cuda_files: Sequence[str | os.PathLike]) -> Path:
    """Where relative ``cuda_files`` live when no ``csrc_root`` is given: next to the calling
    wrapper or in its nearest ancestor holding the first file."""
    caller = _caller_dir()
    return (find_csrc_root(caller, str(cuda_files[0])) if cuda_files else None) or caller


# ---------------------------------------------------------------------------
# cache_once
# ---------------------------------------------------------------------------


_P = ParamSpec("_P")
_R = TypeVar("_R")


class CachedFunction(Protocol[_P, _R]):
    """What ``cache_once`` returns: the function, memoized, with ``cache_clear()``."""

    cache_clear: Callable[[], None]
    __wrapped_cache__: dict[Any, _R]

    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R: ...


def cache_once(fn: Callable[_P, _R]) -> CachedFunction[_P, _R]:
    """Memoize ``fn`` on its positional and keyword arguments.

    A plain dict lookup rather than ``functools.lru_cache``: torch.compile can
    trace through it, and there is no eviction (a module factory is called with
    a handful of distinct specialisations). Exceptions are not cached.
    ``fn.cache_clear()`` empties the cache.
    """
    cache: dict[Any, _R] = {}

    @functools.wraps(fn)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        key = (args, tuple(sorted(kwargs.items()))) if kwargs else args
        if key in cache:
            return cache[key]
        result = fn(*args, **kwargs)
        cache[key] = result
        return result

    cached = cast("CachedFunction[_P, _R]", wrapper)
    cached.cache_clear = cache.clear
    cached.__wrapped_cache__ = cache
    return cached


# ---------------------------------------------------------------------------
# make_cpp_args
# ---------------------------------------------------------------------------

_TORCH_DTYPE_TO_CPP = {
    "float16": "fp16_t",
    "bfloat16": "bf16_t",
    "float32": "fp32_t",
    "float64": "fp64_t",
    "float8_e4m3fn": "fp8_e4m3_t",
    "float8_e5m2": "fp8_e5m2_t",
    "int8": "int8_t",
    "int16": "int16_t",
    "int32": "int32_t",
    "int64": "int64_t",
    "uint8": "uint8_t",
    "uint16": "uint16_t",
    "uint32": "uint32_t",
    "uint64": "uint64_t",
    "bool": "bool",
}


class CppArgs(tuple):
    """A tuple of C++ template-argument spellings; ``str()`` joins with ``", "``."""

    def __str__(self) -> str:
        return ", ".join(self)

    def __repr__(self) -> str:
        return f"CppArgs({', '.join(repr(a) for a in self)})"


def _torch_dtype_name(arg: Any) -> str | None:
    cls = type(arg)
    if cls.__name__ == "dtype" and cls.__module__.split(".")[0] == "torch":
        return str(arg).rsplit(".", 1)[-1]
    return None


def _to_cpp_arg(arg: Any) -> str:
    if isinstance(arg, bool):
        return "true" if arg else "false"
    if isinstance(arg, int):
        return str(arg)
    if isinstance(arg, str):
        return arg
    name = _torch_dtype_name(arg)
    if name is not None:
        try:
            return _TORCH_DTYPE_TO_CPP[name]
        except KeyError:
            raise TypeError(f"make_cpp_args: torch dtype {arg} has no C++ alias") from None
    raise TypeError(f"make_cpp_args: cannot turn {arg!r} ({type(arg).__name__}) into a C++ argument")


def make_cpp_args(*args: Any) -> CppArgs:
    """Turn Python values into C++ template arguments.

    ``torch.float16`` -> ``fp16_t`` (bf16_t, fp32_t, fp8_e4m3_t, fp8_e5m2_t, int32_t, ...),
    ``True`` -> ``true``, ``3`` -> ``3``, strings pass through unchanged.
    """
    return CppArgs(_to_cpp_arg(a) for a in args)


# ---------------------------------------------------------------------------
# arch helpers
# ---------------------------------------------------------------------------


@functools.cache
def _local_gpu_cc() -> tuple[int, int] | None:
    torch = sys.modules.get("torch")
    if torch is None:
        try:
            import torch
        except Exception:  # pragma: no cover - torch missing
            torch = None
    if torch is not None:
        try:
            if torch.cuda.is_available():
                return tuple(torch.cuda.get_device_capability())
            return None
        except Exception:
            return None
    try:  # pragma: no cover - no torch
        out = (
            subprocess.run(
                ["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                check=True,
                timeout=30,
            )
            .stdout.strip()
            .splitlines()[0]
        )
        major, minor = out.split(".")
        return int(major), int(minor)
    except Exception:  # pragma: no cover
        return None


def is_arch_support_pdl() -> bool:
    """True when a CUDA device of compute capability >= 9.0 is present."""
    cc = _local_gpu_cc()
    return cc is not None and cc[0] >= 9


def default_arch() -> str:
    """``TVM_FFI_CUDA_ARCH_LIST`` if set, else the local GPU's ``"9.0"``-style arch, else ``"9.0"``."""
    env = os.environ.get("TVM_FFI_CUDA_ARCH_LIST", "").strip()
    if env:
        return env
    cc = _local_gpu_cc()
    if cc is not None:
        return f"{cc[0]}.{cc[1]}"
    return _DEFAULT_ARCH


def _arch_number(arch: str) -> int:
    """``"9.0"`` -> 900, ``"9.0a"`` -> 900, ``"10.0 12.0"`` -> 1000 (the lowest listed)."""
    values = []
    for item in arch.split():
        m = re.fullmatch(r"(\d+)\.(\d+)[a-zA-Z]*", item)
        if not m:
            raise ValueError(f"invalid CUDA arch {item!r} (expected e.g. '9.0' or '9.0a')")
        values.append(int(m.group(1)) * 100 + int(m.group(2)) * 10)
    if not values:
        raise ValueError("empty CUDA arch")
    return min(values)


# ---------------------------------------------------------------------------
# results and errors
# ---------------------------------------------------------------------------


@dataclass
class KernelResources:
    """Per-kernel resource usage reported by ptxas."""

    name: str
    registers: int
    spill_stores: int
    spill_loads: int
    shared_bytes: int
    stack_bytes: int
    mangled: str = ""
    arch: str = ""


@dataclass
class BuildResult:
    """What one ``build_jit`` call produced."""

    name: str
    key: str
    library: Path
    log: str
    resources: list[KernelResources] = field(default_factory=list)
    cached: bool = False


class BuildError(Exception):
    """A JIT build failed; ``.log`` holds the compiler's output, ``.name`` the module name.
    ``.environment``: the machine failed (the build tool could not even be started), not the
    source: no verdict on the kernel."""

    def __init__(self, message: str, *, log: str = "", name: str = "", environment: bool = False) -> None:
        super().__init__(message)
        self.log = log
        self.name = name
        self.environment = environment


# ---------------------------------------------------------------------------
# toolchain discovery
# ---------------------------------------------------------------------------

_NVCC_MISSING = (
    "nvcc not found: install the CUDA toolkit (or `pip install nvidia-cuda-nvcc`) "
    "and/or set CUDA_HOME to the CUDA install (the folder holding bin/nvcc)"
)


def _looks_like_cuda_home(home: Path) -> bool:
    return (home / "include" / "cuda_runtime.h").is_file() or (home / "targets").is_dir()


def find_nvcc() -> Path | None:
    """The nvcc to build with; prefers one that sits in a full CUDA toolkit layout."""
    candidates: list[Path] = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        home = os.environ.get(var)
        if home:
            candidates.append(Path(home) / "bin" / "nvcc")
    which = shutil.which("nvcc")
    if which:
        candidates.append(Path(which))
    candidates.append(Path("/usr/local/cuda/bin/nvcc"))
    try:  # pip wheels: nvidia-cuda-nvcc(-cuXY)
        import nvidia

        for base in getattr(nvidia, "__path__", []):
            for sub in ("cuda_nvcc", "cu13", "cu12"):
                candidates.append(Path(base) / sub / "bin" / "nvcc")
    except Exception:
        pass
    found = [c for c in candidates if c.is_file() and os.access(c, os.X_OK)]
    for c in found:  # a wrapper script on PATH is not a toolkit home
        if _looks_like_cuda_home(c.parent.parent):
            return c
    return found[0] if found else None


@functools.cache
def _nvcc_version(nvcc: str) -> str:
    try:
        return subprocess.run(
            [nvcc, "--version"], capture_output=True, text=True, check=True, timeout=120
        ).stdout.strip()
    except Exception as exc:  # pragma: no cover
        raise BuildError(f"`{nvcc} --version` failed: {exc}\n{_NVCC_MISSING}") from exc


def _find_ninja() -> str:
    found = shutil.which("ninja")
    if found:
        return found
    try:
        import ninja

        cand = Path(ninja.BIN_DIR) / "ninja"
        if cand.exists():
            return str(cand)
    except Exception:
        pass
    raise BuildError("ninja not found: `pip install ninja`")


@functools.cache
def _demangler() -> str | None:
    nvcc = find_nvcc()
    if nvcc is not None:
        cand = nvcc.parent / "cu++filt"
        if cand.exists():
            return str(cand)
    for name in ("cu++filt", "c++filt", "llvm-cxxfilt"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _demangle(names: Sequence[str]) -> list[str]:
    if not names:
        return []
    tool = _demangler()
    if tool is None:
        return list(names)
    try:
        out = subprocess.run(
            [tool], input="\n".join(names) + "\n", capture_output=True, text=True, check=True, timeout=60
        ).stdout.splitlines()
    except Exception:
        return list(names)
    if len(out) != len(names):
        return list(names)
    return [o.strip() or n for o, n in zip(out, names)]


# ---------------------------------------------------------------------------
# ptxas -v parsing
# ---------------------------------------------------------------------------

_RE_ENTRY = re.compile(r"ptxas info\s*: Compiling entry function '([^']+)' for '([^']+)'")
_RE_FUNC_PROPS = re.compile(r"ptxas info\s*: Function properties for (\S+)")
_RE_STACK = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_RE_USED = re.compile(r"ptxas info\s*: Used (\d+) registers(.*)")
_RE_SMEM = re.compile(r"(\d+) bytes smem")


def parse_resource_usage(log: str, *, demangle: bool = True) -> list[KernelResources]:
    """Parse ``-Xptxas -v`` output into one ``KernelResources`` per kernel (entry function)."""
    results: list[KernelResources] = []
    current: KernelResources | None = None
    props_for: str | None = None
    for line in log.splitlines():
        m = _RE_ENTRY.search(line)
        if m:
            current = KernelResources(
                name=m.group(1),
                registers=0,
                spill_stores=0,
                spill_loads=0,
                shared_bytes=0,
                stack_bytes=0,
                mangled=m.group(1),
                arch=m.group(2),
            )
            results.append(current)
            props_for = None
            continue
        m = _RE_FUNC_PROPS.search(line)
        if m:
            props_for = m.group(1)
            continue
        m = _RE_STACK.search(line)
        if m and current is not None and props_for == current.mangled:
            current.stack_bytes = int(m.group(1))
            current.spill_stores = int(m.group(2))
            current.spill_loads = int(m.group(3))
            props_for = None
            continue
        m = _RE_USED.search(line)
        if m and current is not None:
            current.registers = int(m.group(1))
            sm = _RE_SMEM.search(m.group(2))
            if sm:
                current.shared_bytes = int(sm.group(1))
            current = None
    if demangle and results:
        for res, pretty in zip(results, _demangle([r.mangled for r in results])):
            res.name = pretty
    return results


# ---------------------------------------------------------------------------
# cache key
# ---------------------------------------------------------------------------

_RE_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]+)[>"]', re.MULTILINE)


def _collect_sources(roots: Sequence[Path], include_dirs: Sequence[Path]) -> list[tuple[str, str]]:
    """Every file reachable from ``roots`` through includes found in ``include_dirs``.

    Returns ``(spelling, sha256)`` pairs in discovery order; headers outside our
    include directories (CUDA, tvm-ffi, the standard library) are not followed.
    """
    seen: set[Path] = set()
    out: list[tuple[str, str]] = []
    stack: list[tuple[str, Path]] = [(str(r), r.resolve()) for r in reversed(list(roots))]
    while stack:
        spelling, path = stack.pop()
        if path in seen:
            continue
        seen.add(path)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise BuildError(f"cannot read {path}: {exc}") from exc
        out.append((spelling, hashlib.sha256(data).hexdigest()))
        text = data.decode("utf-8", errors="replace")
        children = []
        for m in _RE_INCLUDE.finditer(text):
            found = find_include(m.group(2), m.group(1) == '"', path, include_dirs)
            inc = found.resolve() if found is not None else None
            if inc is not None and inc not in seen:
                children.append((m.group(2), inc))
        stack.extend(reversed(children))
    return out


# ---------------------------------------------------------------------------
# build plumbing
# ---------------------------------------------------------------------------


def _module_name(marker: Sequence[Any]) -> str:
    parts = [str(m) for m in marker] or ["jit"]
    name = re.sub(r"[^A-Za-z0-9_]+", "_", "_".join(parts)).strip("_") or "jit"
    if name[0].isdigit():
        name = "m_" + name
    if len(name) > 80:
        name = name[:64] + "_" + hashlib.sha256(name.encode()).hexdigest()[:12]
    return name


def jit_cache_root() -> Path:
    """Where built modules are kept (`KERNEL_CHECK_JIT_CACHE`), made when missing."""
    env = os.environ.get("KERNEL_CHECK_JIT_CACHE")
    root = Path(env).expanduser() if env else Path("~/.cache/kernel-check/jit").expanduser()
    root.mkdir(parents=True, exist_ok=True)
    return root


def env_flag(name: str) -> bool:
    """Whether the environment variable `name` is set to a yes (`1`, `true`, `yes`, `on`)."""
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


@dataclass
class _Plan:
    name: str
    arch: str
    source: str
    flags: list[str]
    include_dirs: list[Path]
    key: str
    nvcc: Path


def _generate_source(cuda_paths: Sequence[Path], wrappers: Sequence[tuple[str, str]], name: str) -> str:
    lines = [
        f"// Generated by kernel_check.jit for module {name}; do not edit.",
        "#include <tvm/ffi/container/tensor.h>",
        "#include <tvm/ffi/function.h>",
        "",
    ]
    for p in cuda_paths:
        lines.append(f'#include "{p.as_posix()}"')
    lines += ["", "namespace sglang {", ""]
    for export_name, symbol in wrappers:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", export_name):
            raise BuildError(f"invalid export name {export_name!r}", name=name)
        lines.append(f"TVM_FFI_DLL_EXPORT_TYPED_FUNC({export_name}, ({symbol}));")
    lines += ["", "}  // namespace sglang", ""]
    return "\n".join(lines)


def _plan(
    marker: Sequence[Any],
    *,
    cuda_files: Sequence[str | os.PathLike],
    cuda_wrappers: Sequence[tuple[str, str]],
    csrc_root: str | os.PathLike | None,
    extra_cuda_cflags: Sequence[str],
    extra_include_paths: Sequence[str | os.PathLike],
    lineinfo: bool | None,
    arch: str | None,
) -> _Plan:
    name = _module_name(marker)
    nvcc = find_nvcc()
    if nvcc is None:
        raise BuildError(_NVCC_MISSING, name=name)
    if isinstance(cuda_files, (str, os.PathLike)):
        cuda_files = [cuda_files]
    root = Path(csrc_root) if csrc_root is not None else _calling_csrc_root(cuda_files)
    cuda_paths: list[Path] = []
    for f in cuda_files:
        p = Path(f)
        p = p if p.is_absolute() else root / p
        if not p.is_file():
            raise BuildError(f"cuda file not found: {p}", name=name)
        cuda_paths.append(p.resolve())
    if not cuda_wrappers:
        raise BuildError("cuda_wrappers is empty: nothing to export", name=name)
    wrappers = [(str(e), str(s)) for e, s in cuda_wrappers]
    arch = (arch or default_arch()).strip()
    arch_num = _arch_number(arch)
    if lineinfo is None:
        lineinfo = env_flag("KERNEL_CHECK_LINEINFO")
    if not cuda_paths:
        raise BuildError("cuda_files is empty: nothing to compile", name=name)
    include_dirs = [d.resolve() for d in sgl_include_dirs(cuda_paths[0], extra_include_paths)]
    if root.is_dir():
        include_dirs.append(root.resolve())
    flags = [
        "-std=c++20",
        "--expt-relaxed-constexpr",
        f"-DSGL_CUDA_ARCH={arch_num}",
        "-Xptxas",
        "-v",
    ]
    if lineinfo:
        flags.append("-lineinfo")
    flags += [str(f) for f in extra_cuda_cflags]
    source = _generate_source(cuda_paths, wrappers, name)
    tvm_ffi = _import_tvm_ffi()
    h = hashlib.sha256()

    def feed(obj: Any) -> None:
        h.update(json.dumps(obj, sort_keys=True).encode())
        h.update(b"\0")

    feed(_KEY_VERSION)
    feed(name)
    # the generated source without its absolute include paths, so a moved checkout hits the cache
    feed([ln for ln in source.splitlines() if not ln.startswith('#include "')])
    # contents of every included file, keyed by how it was spelled (not where it lives)
    deps = _collect_sources(cuda_paths, include_dirs)
    feed([[Path(s).name if Path(s).is_absolute() else s, d] for s, d in deps])
    feed(flags)
    # the search paths the compilers read from the environment: a header found through one
    # is not among the collected sources, so a build or a remembered failure must not
    # outlive a change to them (a stand-in header on CPATH once made `spec check` say
    # "built" on a machine that cannot build the file)
    feed({name: os.environ.get(name, "") for name in _INCLUDE_PATH_VARIABLES})
    feed(arch)
    feed(_nvcc_version(str(nvcc)))
    feed(getattr(tvm_ffi, "__version__", "?"))
    feed(sys.platform)
    return _Plan(
        name=name, arch=arch, source=source, flags=flags, include_dirs=include_dirs, key=h.hexdigest(), nvcc=nvcc
    )


def compute_key(
    *marker: Any,
    cuda_files: Sequence[str | os.PathLike],
    cuda_wrappers: Sequence[tuple[str, str]],
    csrc_root: str | os.PathLike | None = None,
    extra_cuda_cflags: Sequence[str] = (),
    extra_include_paths: Sequence[str | os.PathLike] = (),
    lineinfo: bool | None = None,
    arch: str | None = None,
    collect_resources: bool = False,
) -> str:
    """The cache key ``build_jit`` would use for these arguments (no compilation)."""
    del collect_resources
    return _plan(
        marker,
        cuda_files=cuda_files,
        cuda_wrappers=cuda_wrappers,
        csrc_root=csrc_root,
        extra_cuda_cflags=extra_cuda_cflags,
        extra_include_paths=extra_include_paths,
        lineinfo=lineinfo,
        arch=arch,
    ).key


_import_lock = threading.Lock()


def _import_tvm_ffi() -> Any:
    """``tvm_ffi`` with ``tvm_ffi.cpp`` loaded. tvm-ffi imports torch first when it is
    installed, and torch without NumPy warns "Failed to initialize NumPy" on import: not the
    build's business, so that one warning is dropped (only while importing)."""
    with _import_lock, warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
        import tvm_ffi.cpp
    return tvm_ffi


def _one_std_flag(build_file: Path) -> None:
    """Keep only the last ``-std=`` of the CUDA flags in tvm-ffi's ``build.ninja``.

    tvm-ffi puts its own ``-std=c++17`` before the caller's flags, and nvcc answers two with
    "incompatible redefinition for option 'std'". The last one is ours (``_plan``'s flags),
    the one nvcc would use anyway."""
    lines = build_file.read_text().splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith("cuda_cflags = "):
            tokens = line.rstrip("\n").split(" ")
            stds = [j for j, token in enumerate(tokens) if token.startswith("-std=")]
            kept = [t for j, t in enumerate(tokens) if j not in stds[:-1]]
            lines[i] = " ".join(kept) + "\n"
    build_file.write_text("".join(lines))


# tvm-ffi's build reads the target arch from TVM_FFI_CUDA_ARCH_LIST and captures the
# compiler output, replaying it only on failure. We hold the environment override
# only until tvm-ffi has written build.ninja (it reads the variable there), and run
# ninja ourselves so that the output (ptxas -v included) is kept on success too.
_env_lock = threading.Lock()
_tls = threading.local()
_patch_lock = threading.Lock()
_patched = False


def _release_env() -> None:
    restore = getattr(_tls, "restore_env", None)
    if restore is not None:
        _tls.restore_env = None
        restore()


def _install_ninja_hook() -> None:
    global _patched
    with _patch_lock:
        if _patched:
            return
        try:
            from tvm_ffi.cpp import extension
        except Exception:  # pragma: no cover
            return
        original = getattr(extension, "build_ninja", None)
        if original is None:  # pragma: no cover - tvm-ffi changed; fall back to its output
            _patched = True
            return

        def build_ninja(build_dir: str) -> None:
            if not getattr(_tls, "capturing", False):
                return original(build_dir)
            _release_env()
            _one_std_flag(Path(build_dir) / "build.ninja")
            cmd = [_find_ninja(), "-v"]
            jobs = os.environ.get("MAX_JOBS")
            if jobs:
                cmd += ["-j", jobs]
            proc = _run_build_tool(cmd, build_dir)
            text = proc.stdout.decode("utf-8", "replace") + proc.stderr.decode("utf-8", "replace")
            _tls.log = text
            if proc.returncode != 0:
                raise RuntimeError(f"ninja exited with status {proc.returncode}\n{text}")
            return None

        # the patch names what it wraps, as functools.wraps would (mypy types no function attributes)
        build_ninja.__wrapped__ = original  # type: ignore[attr-defined]
        extension.build_ninja = build_ninja
        _patched = True


# Starting a process can fail for a moment when the machine is short of memory (fork/exec:
# EFAULT, ENOMEM, EAGAIN seen with many builds and GPU children at once): tried again after
# these pauses, then reported as an environment failure.
_SPAWN_RETRY_DELAYS = (0.5, 2.0, 5.0)


def _run_build_tool(cmd: list[str], cwd: str) -> subprocess.CompletedProcess:
    for delay in _SPAWN_RETRY_DELAYS:
        with contextlib.suppress(OSError):
            return subprocess.run(cmd, cwd=cwd, capture_output=True, check=False)
        time.sleep(delay)
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, check=False)
    except OSError as exc:
        raise BuildError(f"could not start {cmd[0]}: {exc}", log=str(exc), environment=True) from exc


def _tvm_build(plan: _Plan, build_dir: Path) -> str:
    """Run tvm_ffi.cpp.build in ``build_dir``; returns the compiler output."""
    tvm_ffi = _import_tvm_ffi()
    _install_ninja_hook()
    src = build_dir / f"{plan.name}.cu"
    src.write_text(plan.source)

    _env_lock.acquire()
    saved = {k: os.environ.get(k) for k in ("TVM_FFI_CUDA_ARCH_LIST", "CUDA_HOME")}
    os.environ["TVM_FFI_CUDA_ARCH_LIST"] = plan.arch
    if not os.environ.get("CUDA_HOME"):
        os.environ["CUDA_HOME"] = str(plan.nvcc.parent.parent)

    def restore() -> None:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        _env_lock.release()

    _tls.restore_env = restore
    _tls.capturing = True
    _tls.log = None
    try:
        tvm_ffi.cpp.build(
            plan.name,
            cuda_files=[str(src)],
            extra_cuda_cflags=plan.flags,
            extra_include_paths=[str(p) for p in plan.include_dirs],
            build_directory=str(build_dir),
            backend="cuda",
        )
    except BuildError as exc:
        exc.name = exc.name or plan.name
        raise
    except Exception as exc:
        log = _tls.log if _tls.log is not None else str(exc)
        raise BuildError(f"JIT build of {plan.name} failed:\n{_error_excerpt(log)}", log=log, name=plan.name) from None
    finally:
        _tls.capturing = False
        _release_env()
    return _tls.log if _tls.log is not None else ""


def _error_excerpt(log: str, limit: int = 60) -> str:
    lines = [
        ln
        for ln in log.splitlines()
        if not ln.startswith("ptxas info") and not re.match(r"^\s+\d+ bytes stack frame", ln)
    ]
    errs = [i for i, ln in enumerate(lines) if "error" in ln.lower()]
    if errs:
        start = max(0, errs[0] - 2)
        lines = lines[start : start + limit]
    else:
        lines = lines[-limit:]
    return "\n".join(lines)


def _library_name(name: str) -> str:
    return f"{name}.dll" if sys.platform == "win32" else f"{name}.so"


def _read_meta(final: Path, name: str) -> dict | None:
    meta_path = final / "meta.json"
    if not meta_path.is_file() or not (final / _library_name(name)).is_file():
        return None
    try:
        return json.loads(meta_path.read_text())
    except (OSError, ValueError):
        return None


def _result_from_meta(meta: dict, final: Path, *, cached: bool) -> BuildResult:
    return BuildResult(
        name=meta["name"],
        key=meta["key"],
        library=final / _library_name(meta["name"]),
        log=meta.get("log", ""),
        resources=[KernelResources(**r) for r in meta.get("resources", [])],
        cached=cached,
    )


def build_jit(
    *marker: Any,
    cuda_files: Sequence[str | os.PathLike],
    cuda_wrappers: Sequence[tuple[str, str]],
    csrc_root: str | os.PathLike | None = None,
    extra_cuda_cflags: Sequence[str] = (),
    extra_include_paths: Sequence[str | os.PathLike] = (),
    lineinfo: bool | None = None,
    arch: str | None = None,
    collect_resources: bool = False,
) -> BuildResult:
    """Compile a JIT module (no GPU needed) and return where it is and what ptxas reported.

    ``marker`` names the module (joined with ``_``). ``cuda_files`` are included
    in order, relative to ``csrc_root`` unless absolute (default: the calling module's folder,
    or its nearest ancestor that holds the first file).
    ``cuda_wrappers`` is a list of ``(export_name, "cpp_symbol<args>")``.
    Raises ``BuildError`` (with the compiler output in ``.log``) on failure.
    """
    from filelock import FileLock

    plan = _plan(
        marker,
        cuda_files=cuda_files,
        cuda_wrappers=cuda_wrappers,
        csrc_root=csrc_root,
        extra_cuda_cflags=extra_cuda_cflags,
        extra_include_paths=extra_include_paths,
        lineinfo=lineinfo,
        arch=arch,
    )
    collect = collect_resources or env_flag("KERNEL_CHECK_RESOURCE_USAGE")
    force = env_flag("KERNEL_CHECK_JIT_FORCE_REBUILD")
    root = jit_cache_root()
    dirname = f"{plan.name}_{plan.key[:20]}"
    final = root / dirname
    with FileLock(str(root / f".{dirname}.lock")):
        meta = None if force else _read_meta(final, plan.name)
        if meta is not None and meta.get("key") == plan.key:
            result = _result_from_meta(meta, final, cached=True)
        else:
            tmp = root / f".{dirname}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
            tmp.mkdir(parents=True)
            try:
                log = _tvm_build(plan, tmp)
                resources = parse_resource_usage(log)
                meta = {
                    "name": plan.name,
                    "key": plan.key,
                    "arch": plan.arch,
                    "flags": plan.flags,
                    "log": log,
                    "resources": [dataclasses.asdict(r) for r in resources],
                }
                (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
                if final.exists():
                    shutil.rmtree(final, ignore_errors=True)
                os.replace(tmp, final)
            finally:
                if tmp.exists():
                    shutil.rmtree(tmp, ignore_errors=True)
            result = _result_from_meta(meta, final, cached=False)
    if collect:
        for r in result.resources:
            logger.info(
                "%s: %s: %d registers, %d B spill stores, %d B spill loads, %d B smem, %d B stack%s",
                plan.name,
                r.name,
                r.registers,
                r.spill_stores,
                r.spill_loads,
                r.shared_bytes,
                r.stack_bytes,
                " (cached build)" if result.cached else "",
            )
    return result


_loaded: dict[str, Any] = {}
_load_lock = threading.Lock()


def load_jit(*marker: Any, **kwargs: Any) -> Any:
    """``build_jit`` then ``tvm_ffi.load_module``; same arguments as ``build_jit``."""
    tvm_ffi = _import_tvm_ffi()
    result = build_jit(*marker, **kwargs)
    path = str(result.library)
    with _load_lock:
        module = _loaded.get(path)
        if module is None:
            module = tvm_ffi.load_module(path)
            _loaded[path] = module
    return module
