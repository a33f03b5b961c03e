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
checkout (an editable install imports `kernel_check` from `src/kernel_check/`).

Reading a file's includes is here too, for every stage: `include_lines` (its `#include`
directives, comments left out), `find_include` (the file one names, as the compiler finds
it) and `included_files` (the walk through the files it includes, on down).
"""

from __future__ import annotations

import functools
import itertools
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

LIBRARY = "sgl_kernel"
INCLUDE_FOLDER = "include"  # where a tree keeps the headers it builds with `-I`
_PACKAGE_DIR = Path(__file__).resolve().parent


def bundled_include_dir() -> Path:
    """The folder holding kernel-check's own `sgl_kernel/` header library."""
    packaged = _PACKAGE_DIR / INCLUDE_FOLDER
    return packaged if (packaged / LIBRARY).is_dir() else _PACKAGE_DIR.parents[1] / INCLUDE_FOLDER


def find_repo_include_dir(path: Path) -> Path | None:
    """The nearest ancestor `include/` directory that holds `sgl_kernel/`, walking up."""
    for ancestor in path.resolve().parents:
        candidate = ancestor / INCLUDE_FOLDER
        if (candidate / LIBRARY).is_dir():
            return candidate
        if ancestor.name == LIBRARY and ancestor.parent.name == INCLUDE_FOLDER:
            return ancestor.parent
    return None


def sgl_include_dirs(path: Path, configured: Iterable[str | os.PathLike[str]] = ()) -> list[Path]:
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


def find_include(name: str, quoted: bool, includer: Path, search: Iterable[Path]) -> Path | None:
    """The file an `#include` of `includer` names, as the compiler finds it: a quoted name
    (`#include "x.h"`) beside the includer first, then each folder of `search` in order; None
    for a header outside them (the standard library, CUDA). The path as found, links kept."""
    folders = [includer.parent, *search] if quoted else search
    return next((folder / name for folder in folders if (folder / name).is_file()), None)


_COMMENT = re.compile(rb"//[^\n]*|/\*.*?\*/", re.DOTALL)
INCLUDE_DIRECTIVE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.MULTILINE)


def without_comments(data: bytes) -> bytes:
    """`data` with its comments blanked, line breaks kept (so lines and offsets still match)."""
    return _COMMENT.sub(lambda match: b"\n" * match.group().count(b"\n"), data)


def include_lines(data: bytes) -> list[tuple[str, bool]]:
    """The file's `#include` directives in order: (name, quoted), comments left out."""
    found = INCLUDE_DIRECTIVE.findall(without_comments(data))
    return [(name.decode("utf-8", "replace").strip(), kind == b'"') for kind, name in found]


def included_files(
    source: Path, search: Sequence[Path], limit: int, *, beside_only: bool = False
) -> Iterator[tuple[bytes, list[tuple[str, Path | None]]]]:
    """`source`, the files it includes that `find_include` finds in `search`, the files
    those include and so on, each once and `limit` at most (with `beside_only`, only a
    quoted include beside its includer is followed): each file's bytes, and its includes
    with the file each names (None for one not found)."""
    seen: set[Path] = set()
    stack = [source.resolve()]
    while stack and len(seen) < limit:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        data = current.read_bytes()
        named = [(name, quoted, find_include(name, quoted, current, search)) for name, quoted in include_lines(data)]
        yield data, [(name, found) for name, _, found in named]
        for name, quoted, found in named:
            if found is not None and (not beside_only or (quoted and found == current.parent / name)):
                stack.append(found.resolve())


_HEADER_SUFFIXES = (".h", ".cuh", ".hpp", ".cuhpp", ".inl")
_COMMENT_OR_STRING = re.compile(rb'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', re.DOTALL)
_IDENTIFIER = re.compile(rb"[A-Za-z_]\w*")
_SGLANG_NAMESPACE = re.compile(rb"\bnamespace\s+sglang\b")


def library_root(args: Sequence[str]) -> Path | None:
    """The first `-I` directory of a compile command that holds `sgl_kernel/`: the header
    library the file is checked (and built) against."""
    for flag, value in itertools.pairwise(args):
        if flag == "-I" and (Path(value) / LIBRARY).is_dir():
            return Path(value)
    return None


def library_names(root: Path) -> frozenset[str]:
    """Every identifier the code of `root/sgl_kernel/` spells (comments and string literals
    left out): the functions, members, types and macros the user's header library has.
    Read once per run for each library, and again when one of its headers changes."""
    return read_library(root)[0]


def read_library(root: Path) -> tuple[frozenset[str], str]:
    """`library_names(root)`, and the first header of `root/sgl_kernel/` (by path) whose code
    opens `namespace sglang` ("" when none does): where the library establishes the namespace
    its users write their code in (KC320). One read of the headers for both."""
    headers = sorted(p for p in (root / LIBRARY).rglob("*") if p.suffix in _HEADER_SUFFIXES and p.is_file())
    return _read(tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in headers))


@functools.lru_cache(maxsize=8)
def _read(signature: tuple[tuple[str, int, int], ...]) -> tuple[frozenset[str], str]:
    names: set[str] = set()
    namespace_home = ""
    for path, _, _ in signature:
        code = _COMMENT_OR_STRING.sub(b" ", Path(path).read_bytes())
        names.update(match.decode("ascii") for match in _IDENTIFIER.findall(code))
        if not namespace_home and _SGLANG_NAMESPACE.search(code):
            namespace_home = path
    return frozenset(names), namespace_home


# -- header-only dependencies of installed distributions --------------------------------------
# Where JIT kernel trees' own dependency registries find CUTLASS, CuTe, cuBLASDx...: folders
# inside installed Python distributions, relative to the package directory (`package`).
# Each is (top-level module, folders under it); only folders that exist are used.
DEPENDENCY_FOLDERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "flashinfer",  # flashinfer-python: its headers and the CUTLASS/CuTe and spdlog it bundles
        ("data/include", "data/cutlass/include", "data/cutlass/tools/util/include", "data/spdlog/include"),
    ),
    ("cutlass_library", ("source/include", "source/tools/util/include")),  # nvidia-cutlass
    ("nvidia.mathdx", ("include", "external/cutlass/include")),  # nvidia-mathdx: cuBLASDx & co.
    ("deep_gemm", ("include",)),
    # torch's C++ API, where `torch.utils.cpp_extension` (the JIT of torch extensions) finds it
    ("torch", ("include", "include/torch/csrc/api/include")),
)


# What a JIT tree's dependency registry names a header-only dependency (`load_jit(...,
# extra_dependencies=["mathdx"])`), and the modules of `DEPENDENCY_FOLDERS` it stands for: a
# build that names one searches its folders first (cuBLASDx with the CUTLASS nvidia-mathdx
# bundles, which flashinfer-python's newer copy does not build with).
JIT_DEPENDENCIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("mathdx", ("MATHDX_HOME", "nvidia.mathdx")),
    ("cutlass", ("flashinfer", "cutlass_library", "deep_gemm")),
    ("flashinfer", ("flashinfer",)),
    ("deep_gemm", ("deep_gemm",)),
    ("torch", ("torch",)),
)


# CCCL (libcu++ `cuda/std/...`, CUB, Thrust) as installed packages carry it: flashinfer-python's
# copy (what its JIT puts first), pip's nvidia-cuda-cccl for CUDA 12 and for CUDA 13 (which keeps
# it in `include/cccl`, spelled `<cccl/cuda/std/...>` by CUTLASS 4.2 too). CUTLASS 4 and CuTe
# include `cuda/std/utility`. A CUDA install has CCCL too, so these are searched after the CUDA
# headers and the hermetic stubs (`-idirafter`) and give a file only what neither of those has.
CCCL_FOLDERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("flashinfer", ("data/cccl/libcudacxx/include", "data/cccl/cub", "data/cccl/thrust")),
    ("nvidia.cuda_cccl", ("include",)),
    ("nvidia.cu13", ("include/cccl", "include")),
)


# Which package provides a header that no include directory holds, by how its name starts:
# what a KC000 for a missing header names (`header_provider`). The first match wins.
HEADER_PROVIDERS: tuple[tuple[str, str], ...] = (
    ("cute/", "flashinfer-python or nvidia-cutlass"),
    ("cutlass/", "flashinfer-python or nvidia-cutlass"),
    ("cccl/", "nvidia-cuda-cccl or a CUDA 13 install"),
    ("cuda/", "nvidia-cuda-cccl or a CUDA install"),
    ("cub/", "nvidia-cuda-cccl or a CUDA install"),
    ("thrust/", "nvidia-cuda-cccl or a CUDA install"),
    ("cublasdx", "nvidia-mathdx"),
    ("cufftdx", "nvidia-mathdx"),
    ("cusolverdx", "nvidia-mathdx"),
    ("curanddx", "nvidia-mathdx"),
    ("commondx", "nvidia-mathdx"),
    ("deep_gemm/", "deep_gemm"),
    ("tvm/ffi/", "apache-tvm-ffi"),
    ("dlpack/", "apache-tvm-ffi"),
    ("ATen/", "torch (its `include/`)"),
    ("c10/", "torch (its `include/`)"),
    ("torch/", "torch (its `include/`)"),
    ("spdlog/", "flashinfer-python (bundles spdlog) or spdlog"),
)
_TOOLKIT_HEADER = re.compile(r"^(?:cu|nv|cuda|curand|cufft|cusparse|cusolver|cublas|nccl)\w*\.h$")
# The CUDA libraries a toolkit install may lack (a runtime-only install, a container), by how
# their headers' names start, with the pip package that installs each alone. The first match wins.
TOOLKIT_LIBRARIES: tuple[tuple[str, str], ...] = (
    ("cublas", "nvidia-cublas"),
    ("cusparse", "nvidia-cusparse"),
    ("curand", "nvidia-curand"),
    ("cufft", "nvidia-cufft"),
    ("cusolver", "nvidia-cusolver"),
    ("nvrtc", "nvidia-cuda-nvrtc"),
    ("nccl", "nvidia-nccl"),
    ("nvshmem", "nvidia-nvshmem"),
)


def header_provider(name: str) -> str | None:
    """The package (or install) that provides the header `#include` names as `name`, if known."""
    found = next((provider for prefix, provider in HEADER_PROVIDERS if name.startswith(prefix)), None)
    if found is None and _TOOLKIT_HEADER.match(name):
        library = next((package for prefix, package in TOOLKIT_LIBRARIES if name.startswith(prefix)), None)
        return f"{library} or a CUDA toolkit that has it (system mode)" if library else "a CUDA toolkit (system mode)"
    return found


def project_include_root(path: Path, name: str) -> Path | None:
    """The include root a build passes with `-I` for the header `name` that `path` includes,
    looked for in `path`'s project: the nearest folder from `path`'s own up to the project
    root under which `name` exists (`<attn/traits.h>` in `kernels/attn/`, built with
    `-I kernels`, or its own folder named with angle brackets), or the `include/` folder
    beside one of those, the layout JIT trees give their header library (`csrc/jit/store.cu`
    including `<lib/tensor.h>` from `csrc/include/lib/`, built with `-I csrc/include`); else
    any folder of the project that holds `name` (a library the tree keeps elsewhere, which its
    JIT adds to every build that needs it: `<cutlass_extensions/gemm_configs.h>` from
    `csrc/nv_internal/tensorrt_llm/cutlass_extensions/include/`), the one sharing the longest
    path with `path` where several do."""
    from .config import find_project_root, real_path

    start = real_path(path).parent
    root, _ = find_project_root(start)
    if start != root and root not in start.parents:
        return None
    for folder in (start, *start.parents):
        for candidate in (folder, folder / INCLUDE_FOLDER):
            if (candidate / name).is_file():
                return candidate
        if folder == root:
            break
    return _project_folder_holding(root, start, name)


def _project_folder_holding(root: Path, start: Path, name: str) -> Path | None:
    """The folder of `root`'s project under which `name` exists, nearest `start` (see
    `project_include_root`); None for a name that climbs (`../x.h`) or that no folder holds."""
    parts = Path(name).parts
    if not parts or ".." in parts or Path(name).is_absolute():
        return None
    holders = [
        Path(found).parents[len(parts) - 1]
        for found in _project_headers(root).get(parts[-1], ())
        if Path(found).parts[-len(parts) :] == parts
    ]
    return max(holders, key=lambda folder: (_shared_parts(folder, start), -len(folder.parts)), default=None)


def _shared_parts(a: Path, b: Path) -> int:
    """How many leading path parts `a` and `b` share."""
    return len(os.path.commonpath([a, b]).split(os.sep)) if a.anchor == b.anchor else 0


@functools.lru_cache(maxsize=4)
def _project_headers(root: Path) -> dict[str, tuple[str, ...]]:
    """Every file of `root`'s project by base name, in path order: read once per run and project."""
    from .project_walk import project_files  # not at the top: a wrapper's import of the runtime loads this module

    found: dict[str, list[str]] = {}
    for path in project_files(root):
        found.setdefault(os.path.basename(path), []).append(path)
    return {base: tuple(paths) for base, paths in found.items()}


def forget_project_files() -> None:
    """Walk the projects afresh on the next missing header (files may have come or gone)."""
    _project_headers.cache_clear()
    _python_named_headers.cache_clear()


# a header's base name at the end of a Python string: `"attn_config.inc"`, `f"{out}/Enums.h"`
_NAMED_HEADER = re.compile(rb"([\w.+-]+\.(?:h|hh|hpp|hxx|cuh|inc|inl|def))[\"']")


def build_made_header(path: Path, name: str) -> Path | None:
    """The Python file of `path`'s project that names the header `name` (its base name, in a
    string), when no folder of the project holds it: a header the project's build makes
    before it compiles (a JIT writing `gen_dir / "attn_config.inc"` from a template, or
    downloading `include/Enums.h` with its kernels). None when no Python file names it."""
    from .config import find_project_root

    root, _ = find_project_root(path)
    return _python_named_headers(root).get(Path(name).name)


@functools.lru_cache(maxsize=4)
def _python_named_headers(root: Path) -> dict[str, Path]:
    """Each header base name the Python files of `root`'s project spell, with the first file."""
    from .project_walk import PYTHON_SUFFIXES, project_files

    found: dict[str, Path] = {}
    for python in project_files(root, PYTHON_SUFFIXES):
        try:
            data = Path(python).read_bytes()
        except OSError:
            continue
        for match in _NAMED_HEADER.finditer(data):
            found.setdefault(match.group(1).decode("utf-8", "replace"), Path(python))
    return found


def dependency_include_dirs() -> tuple[tuple[str, str], ...]:
    """(module, directory) for every header folder of an installed header-only dependency
    (`DEPENDENCY_FOLDERS`, and `$MATHDX_HOME/include` as JIT trees read it), in that order.

    Found with `importlib.util.find_spec`, which locates a package without running it
    (flashinfer imports torch); read again on each call, as `sys.path` may change."""
    found: list[tuple[str, str]] = []
    mathdx_home = os.environ.get("MATHDX_HOME")
    if mathdx_home and (Path(mathdx_home) / "include").is_dir():
        found.append(("MATHDX_HOME", str((Path(mathdx_home) / "include").resolve())))
    return _first_provider([*found, *_installed_folders(DEPENDENCY_FOLDERS)])


def jit_dependency_dirs(names: Iterable[str]) -> list[str]:
    """The installed header folders of the dependencies a build names (`JIT_DEPENDENCIES`),
    in the order named; a name the table does not know gives nothing."""
    known = dict(JIT_DEPENDENCIES)
    installed = dependency_include_dirs()
    found = [directory for name in names for module in known.get(name, ()) for m, directory in installed if m == module]
    return list(dict.fromkeys(found))


def cccl_include_dirs() -> tuple[tuple[str, str], ...]:
    """(module, directory) for every CCCL header folder of an installed package (`CCCL_FOLDERS`)."""
    return _first_provider(_installed_folders(CCCL_FOLDERS))


def _installed_folders(table: tuple[tuple[str, tuple[str, ...]], ...]) -> list[tuple[str, str]]:
    """(module, directory) for each folder of `table` that an installed package has."""
    return [
        (module, str((package / folder).resolve()))
        for module, folders in table
        for package in _package_dirs(module)
        for folder in folders
        if _readable_dir(package / folder)
    ]


def _readable_dir(path: Path) -> bool:
    """Whether `path` is a folder this user may look into (a package installed by root may
    not be: `is_dir` raises there rather than answer False)."""
    try:
        return path.is_dir() and os.access(path, os.R_OK | os.X_OK)
    except OSError:
        return False


def _first_provider(found: list[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """`found` without repeated directories, each kept with the first module that provides it."""
    first: dict[str, str] = {}  # directory -> module
    for module, directory in found:
        first.setdefault(directory, module)
    return tuple((module, directory) for directory, module in first.items())


def _package_dirs(module: str) -> list[Path]:
    """The directories of an installed package (several for a namespace package), unimported."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):  # a parent that is not a package, a broken install
        return []
    if spec is None:
        return []
    return [Path(location) for location in (spec.submodule_search_locations or ())]
